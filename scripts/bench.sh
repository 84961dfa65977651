#!/usr/bin/env bash
# Benchmarks (numbers, never pass/fail): test.ping calls per second against a
# real funcd (release build) from a Rust client and from Python's xmlrpc.client.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== Rust client (overlord library), release build"
target/release/func-bench-ping "${BENCH_CALLS:-20000}" "${BENCH_CONNS:-8}"
echo "== Python xmlrpc.client, one keep-alive connection"
source scripts/fleet.sh
fleet_init "$(mktemp -d)/bench" target/release
fleet_minion bench1
python3 scripts/bench_python.py "$FLEET_DIR/certmaster" "$FLEET_ADDR" "${BENCH_PY_CALLS:-3000}"
