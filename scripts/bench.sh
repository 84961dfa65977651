#!/usr/bin/env bash
# `make bench` / `make bench-salt`: benchmarks (numbers, never pass/fail) on
# the release build, written as a Markdown report under bench/results/.
#
# 1. one minion: test.ping calls/s over one keep-alive connection, over 8,
#    with a new TLS connection per call (func-bench-ping, Rust), and from
#    Python's xmlrpc.client;
# 2. for each fleet size K in BENCH_SIZES (default "10 50 200"): a local
#    fleet (scripts/fleet.sh), its start-up time, then scripts/bench_fleet.py
#    (RUNS samples of every metric, default 5);
# 3. (unless BENCH_NO_STORE is set) scripts/bench_store.py: the job store
#    in redb and in PostgreSQL at 100 and 100,000 jobs; then
#    scripts/bench_schedules.py: func-api's scheduler idle with SCHED_N
#    (1,000) schedules, and a run's delay from its due time to its job;
# 4. with PEER=salt: the Salt peer (bench/peers/salt, SALT_PEER_DIR) for
#    the same K right after ours, installed first if needed; if it cannot be
#    installed or run, the report says so and still prints ours.
set -euo pipefail
cd "$(dirname "$0")/.."
# BENCH_BIN: the binaries (the release build; make test's short run uses
# the debug one); BENCH_RESULTS: where the report goes.
B=${BENCH_BIN:-target/release}
export BENCH_RESULTS=${BENCH_RESULTS:-bench/results}
SIZES=${BENCH_SIZES:-10 50 200}
PEER=${PEER:-}
SALT_PEER_DIR=${SALT_PEER_DIR:-$(pwd)/bench/peers/salt}
SALT_WORK=${SALT_WORK:-/tmp/peers}
export RUNS=${RUNS:-5}
stamp=$(date -u +%Y%m%dT%H%M%SZ)
raw=$(pwd)/target/bench/$stamp
mkdir -p "$raw"
source scripts/fleet.sh
source scripts/bench_ours.sh

echo "== one minion: Rust client (common::rpc::client)"
$B/func-bench-ping "${BENCH_CALLS:-20000}" "${BENCH_CONNS:-8}" "$raw/one.tsv"
fleet_init "$raw/one" $B
fleet_minion bench1
echo "== one minion: Python xmlrpc.client, one keep-alive connection"
python3 scripts/bench_python.py "$FLEET_DIR/certmaster" "$FLEET_ADDR" "${BENCH_PY_CALLS:-3000}" "$raw/one.tsv"
echo "== one minion: what the once-per-host record costs (async calls with and without a request identity)"
python3 scripts/bench_once.py "$FLEET_DIR/certmaster" "$FLEET_ADDR" "$FLEET_DIR/bench1" "${BENCH_ONCE_CALLS:-1000}" "$raw/once.md" ||
	echo "once-per-host bench failed" | tee "$raw/once.md"
fleet_stop

salt_ready=""
if [ "$PEER" = salt ]; then
	if [ ! -x "$SALT_PEER_DIR/bench.sh" ]; then
		echo "Salt peer scripts not found at $SALT_PEER_DIR" | tee "$raw/salt-unavailable.txt"
	elif [ -x "$SALT_WORK/salt-venv/bin/salt-master" ] || WORK=$SALT_WORK "$SALT_PEER_DIR/install.sh"; then
		salt_ready=1
	else
		echo "Salt could not be installed (see $SALT_WORK/salt-pip-install.log)" | tee "$raw/salt-unavailable.txt"
	fi
fi

for k in $SIZES; do
	bench_ours "$k" "$raw/fleet$k" "$raw/ours-K$k.tsv"
	if [ -n "$salt_ready" ]; then
		echo "== Salt, $k minions ($SALT_PEER_DIR/bench.sh $k)"
		mkdir -p "$raw/salt-K$k"
		rc=0
		WORK=$SALT_WORK RESULTS_DIR="$raw/salt-K$k" "$SALT_PEER_DIR/bench.sh" "$k" \
			>"$raw/salt-K$k/stdout.txt" 2>"$raw/salt-K$k/stderr.txt" || rc=$?
		if [ "$rc" = 5 ] && [ "$k" -le 50 ]; then
			# Its minions never all came up (an unpaced start of K <= 50 can
			# collapse on 2 cores): once more with the pacing it uses above 50.
			echo "Salt $k: not all minions came up; retrying with a paced start" | tee "$raw/salt-K$k/retried.txt"
			rm -f "$raw/salt-K$k"/salt-K"$k"-*.tsv
			rc=0
			STAGGER=0.5 UP_TIMEOUT=20 UP_POLL_SLEEP=15 WORK=$SALT_WORK RESULTS_DIR="$raw/salt-K$k" \
				"$SALT_PEER_DIR/bench.sh" "$k" >"$raw/salt-K$k/stdout.txt" 2>>"$raw/salt-K$k/stderr.txt" || rc=$?
		fi
		if [ "$rc" != 0 ]; then
			echo "Salt bench.sh $k failed (exit $rc): $(tail -n 3 "$raw/salt-K$k/stderr.txt" | tr '\n' ' ')" |
				tee "$raw/salt-K$k/failed.txt"
		fi
	fi
done

if [ -z "${BENCH_NO_STORE:-}" ]; then
	echo "== job stores: redb and PostgreSQL, 100 and 100,000 jobs, 10 minions"
	fleet_init "$raw/store" $B
	fleet_minions s 10
	python3 scripts/bench_store.py $B "$FLEET_DIR/certmaster" "$raw/store.md" || echo "job store bench failed" | tee "$raw/store.md"
	# What signing a job request costs (accepted: sign; driver start: verify).
	{ printf '\n### Signed job requests (per job)\n\n'; $B/func-bench-seal "$FLEET_DIR/certmaster" "${SEAL_ROUNDS:-200}"; } |
		tee -a "$raw/store.md" || echo "seal bench failed"
	# func-api's scheduler: idle cost with SCHED_N schedules, due -> start delay.
	if python3 scripts/bench_schedules.py $B "$FLEET_DIR/certmaster" "$raw/schedules.md"; then
		cat "$raw/schedules.md" >>"$raw/store.md"
	else
		echo "schedules bench failed" | tee -a "$raw/store.md"
	fi
	if [ -n "${STORE_SCALE_K:-}" ]; then
		# The async collapse on a large fleet with each store (e.g. STORE_SCALE_K=1000).
		fleet_minions b "$STORE_SCALE_K"
		STORE_SIZES=100 STORE_K="$STORE_SCALE_K + 10" RUNS=3 python3 scripts/bench_store.py $B "$FLEET_DIR/certmaster" "$raw/store-scale.md" ||
			echo "job store scale bench failed" | tee "$raw/store-scale.md"
		cat "$raw/store-scale.md" >>"$raw/store.md"
	fi
	fleet_stop
	FLEET_PIDS=()
fi

python3 scripts/bench_report.py "$raw" "$SIZES" "${PEER:-none}"
