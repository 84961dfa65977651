# Shared by bench.sh and bench_scale.sh: one measured fleet.
# Usage: source scripts/fleet.sh scripts/bench_ours.sh; bench_ours K DIR TSV
# Starts a certmaster and K minions below DIR (scripts/fleet.sh), records
# their start-up time in TSV, runs scripts/bench_fleet.py and (unless
# BENCH_NO_API is set) scripts/bench_api.py on them, and ends
# and removes the fleet.

bench_ours() {
	local k=$1 dir=$2 tsv=$3 bin=${BENCH_BIN:-target/release} t0 t1 t2
	echo "== $k local minions (one certmaster, each funcd with its own root)"
	fleet_init "$dir" $bin
	t0=$(bench_now_ms)
	fleet_minions m "$k"
	t1=$(bench_now_ms)
	$bin/func --root "$FLEET_DIR/certmaster" "*" ping >/dev/null
	t2=$(bench_now_ms)
	printf 'startup_all_enrolled\t%s\tms\t1\tlaunch of %s funcd until all have certificates and listen\n' $((t1 - t0)) "$k" >"$tsv"
	printf 'startup_all_answer_ping\t%s\tms\t1\tuntil a func ping of all answered\n' $((t2 - t0)) >>"$tsv"
	python3 scripts/bench_fleet.py $bin/func "$FLEET_DIR/certmaster" "$k" "$FLEET_DIR" "$tsv"
	[ -n "${BENCH_NO_API:-}" ] || python3 scripts/bench_api.py $bin "$FLEET_DIR/certmaster" "$k" "$FLEET_DIR" "$tsv"
	fleet_stop
	FLEET_PIDS=()
	rm -rf "$FLEET_DIR"
}

bench_now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }
