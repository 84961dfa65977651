#!/usr/bin/env bash
# `make bench-scale`: SCALE_K (default 1000) real funcd processes on loopback
# (one certmaster, each minion with its own root and an ephemeral port on
# 127.0.0.1), then scripts/bench_fleet.py on them (RUNS, default 3): async
# dispatch + collapse, sync ping, the batch rows, memory of the fleet and the
# overlord's peak RSS. Written as a Markdown report under bench/results/.
#
# Before starting it checks that K minions fit (memory, kernel.pid_max); if
# not, it runs the largest K that fits, and the report says so and which
# limit decided.
set -euo pipefail
cd "$(dirname "$0")/.."
K=${SCALE_K:-1000}
export RUNS=${RUNS:-3}
export BENCH_SECTIONS=${BENCH_SECTIONS:-sync async batch}
# Open files are not per minion: every process keeps its connections in
# flight bounded (func drives 1,000 minions with `ulimit -n 600`), so the
# soft limit is only raised to the hard one.
ulimit -n "$(ulimit -Hn)"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
raw=$(pwd)/target/bench/scale-$stamp
mkdir -p "$raw"
# What K fits on this machine, and what limits it:
# - memory: MemAvailable minus 2 GiB, at SCALE_MIB_PER_MINION each (default
#   2 MiB: an idle funcd measured 0.65 MiB PSS at K=1000, plus its kernel
#   side: page tables, stacks, sockets);
# - tasks: kernel.pid_max counts threads; a minion has 1-2 threads idle and
#   up to 5 tasks while it runs an async job (blocking threads, the zygote,
#   its child, the job), and the rest of the machine keeps what it uses now.
per_minion=${SCALE_MIB_PER_MINION:-2}
avail_mib=$(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) / 1024))
by_memory=$(((avail_mib - 2048) / per_minion))
tasks_now=$(ps -eLf --no-headers | wc -l)
by_tasks=$((($(cat /proc/sys/kernel/pid_max) - tasks_now - 1000) / 5))
fits=$by_memory why="MemAvailable ${avail_mib} MiB at ${per_minion} MiB per minion (2 GiB kept free)"
# kernel.pid_max is raised (as root, SCALE_RAISE_PID_MAX=1, the default) to
# what K needs, and put back at exit (also on Ctrl-C; the fleet runs in a
# subshell below, whose own exit trap ends it).
pid_max=$(cat /proc/sys/kernel/pid_max)
need_pids=$((tasks_now + 1000 + 5 * K))
if [ "$by_tasks" -lt "$K" ] && [ "${SCALE_RAISE_PID_MAX:-1}" = 1 ] && [ "$(id -u)" = 0 ] &&
	[ "$need_pids" -le 4194304 ] && echo "$need_pids" 2>/dev/null >/proc/sys/kernel/pid_max; then
	trap 'echo "$pid_max" >/proc/sys/kernel/pid_max' EXIT
	trap 'exit 130' INT TERM
	echo "kernel.pid_max raised from $pid_max to $need_pids for this run (put back at exit)" |
		tee "$raw/pid-max.txt"
	by_tasks=$((($(cat /proc/sys/kernel/pid_max) - tasks_now - 1000) / 5))
fi
if [ "$by_tasks" -lt "$fits" ]; then
	fits=$by_tasks why="kernel.pid_max $(cat /proc/sys/kernel/pid_max) (threads count; ${tasks_now} tasks already running, 5 per minion during an async job)"
fi
if [ "$fits" -lt "$K" ]; then
	echo "$K minions do not fit: the largest K here is $fits, limited by $why; running $fits" |
		tee "$raw/scaled-down.txt"
	K=$fits
fi
(
	source scripts/fleet.sh
	source scripts/bench_ours.sh
	bench_ours "$K" "$raw/fleet" "$raw/ours-K$K.tsv"
)
python3 scripts/bench_report.py "$raw" "$K" scale
# Then simulated minions (func-swarm) through relays: SWARM_N (100,000),
# RELAYS (4); BENCH_NO_SWARM=1 skips it. Report: bench/results/LATEST-swarm.md.
if [ "${BENCH_NO_SWARM:-0}" != 1 ]; then
	python3 scripts/bench_swarm.py
fi
