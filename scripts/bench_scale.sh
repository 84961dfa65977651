#!/usr/bin/env bash
# `make bench-scale`: SCALE_K (default 1000) real funcd processes on loopback
# (one certmaster, each minion with its own root and an ephemeral port on
# 127.0.0.1), then scripts/bench_fleet.py on them (RUNS, default 3): async
# dispatch + collapse, sync ping, the batch rows, memory of the fleet and the
# overlord's peak RSS. Written as a Markdown report under bench/results/.
#
# Before starting it checks that K minions fit: the file-descriptor limit is
# raised to the hard limit (func holds one connection per minion), and if
# MemAvailable cannot hold K minions plus a running job each (measured per
# process, SCALE_MIB_PER_MINION, default 16 MiB RSS to be safe) K is lowered
# to what fits, and the report says so.
set -euo pipefail
cd "$(dirname "$0")/.."
K=${SCALE_K:-1000}
export RUNS=${RUNS:-3}
export BENCH_SECTIONS=${BENCH_SECTIONS:-sync async batch}
ulimit -n "$(ulimit -Hn)"
need_fds=$((K * 2 + 256))
if [ "$(ulimit -n)" -lt "$need_fds" ]; then
	echo "open-file limit $(ulimit -n) < $need_fds needed for $K minions; lower SCALE_K or raise the hard limit" >&2
	exit 2
fi
per_minion=${SCALE_MIB_PER_MINION:-16}
avail_mib=$(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) / 1024))
fits=$(((avail_mib - 2048) / per_minion))
stamp=$(date -u +%Y%m%dT%H%M%SZ)
raw=$(pwd)/target/bench/scale-$stamp
mkdir -p "$raw"
if [ "$fits" -lt "$K" ]; then
	echo "MemAvailable ${avail_mib} MiB holds about $fits minions at ${per_minion} MiB each (2 GiB kept free): running $fits instead of $K" |
		tee "$raw/scaled-down.txt"
	K=$fits
fi
source scripts/fleet.sh
source scripts/bench_ours.sh
bench_ours "$K" "$raw/fleet" "$raw/ours-K$K.tsv"
python3 scripts/bench_report.py "$raw" "$K" scale
