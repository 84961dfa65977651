#!/usr/bin/env bash
# Benchmarks (numbers, never pass/fail), release build:
# 1. test.ping calls per second against one funcd, from a Rust client and
#    from Python's xmlrpc.client, over keep-alive;
# 2. `func "*" ping` and `func "*" call test add 1 2` on 50 and 200 local
#    minions, --forks 1 and the default: wall time and peak RSS of func;
# 3. async jobs on the same fleets: time to JOB_ID, until FINISHED, lookup of
#    a finished job, funcd RSS idle and with 100 running jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
B=target/release
echo "== one minion: Rust client (common::rpc::client)"
$B/func-bench-ping "${BENCH_CALLS:-20000}" "${BENCH_CONNS:-8}"
source scripts/fleet.sh
work=$(mktemp -d)
fleet_init "$work/one" $B
fleet_minion bench1
echo "== one minion: Python xmlrpc.client, one keep-alive connection"
python3 scripts/bench_python.py "$FLEET_DIR/certmaster" "$FLEET_ADDR" "${BENCH_PY_CALLS:-3000}"
fleet_stop
for n in ${BENCH_FLEETS:-50 200}; do
	echo "== $n local minions (one certmaster, each funcd with its own root)"
	fleet_init "$work/fleet$n" $B
	fleet_minions m "$n"
	python3 scripts/bench_func.py $B/func "$FLEET_DIR/certmaster" "$n"
	python3 scripts/bench_async.py $B/func "$FLEET_DIR/certmaster" "$n" "$FLEET_DIR"
	fleet_stop
	FLEET_PIDS=()
done
rm -rf "$work"
