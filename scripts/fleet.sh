# Shared by demo.sh and bench.sh: start minions below a directory, each with
# its own root and an ephemeral port, and end them (by pid) on exit.
# Usage: source scripts/fleet.sh; fleet_init DIR BIN_DIR; fleet_minion NAME; ...

fleet_init() {
	FLEET_DIR=$1
	FLEET_BIN=$2
	FLEET_PIDS=()
	rm -rf "$FLEET_DIR"
	mkdir -p "$FLEET_DIR"
	"$FLEET_BIN/func-testpki" ca "$FLEET_DIR/certmaster" >/dev/null
	trap fleet_stop EXIT
}

fleet_stop() {
	for pid in "${FLEET_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${FLEET_PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
}

# Enrolls and starts minion NAME; sets FLEET_ADDR to NAME:PORT. (Not meant
# for $(...): the pid must be recorded in this shell to be ended on exit.)
fleet_minion() {
	local name=$1 root="$FLEET_DIR/$1"
	"$FLEET_BIN/func-testpki" minion "$FLEET_DIR/certmaster" "$root" "$name" >/dev/null
	RUST_LOG=warn "$FLEET_BIN/funcd" --root "$root" --name "$name" --listen 127.0.0.1:0 --foreground \
		>"$FLEET_DIR/$name.out" 2>"$FLEET_DIR/$name.log" &
	FLEET_PIDS+=($!)
	local i
	for i in $(seq 1 200); do
		if grep -q "listening on" "$FLEET_DIR/$name.out" 2>/dev/null; then
			FLEET_ADDR="$name:$(sed -n 's/.*listening on .*:\([0-9]*\)$/\1/p' "$FLEET_DIR/$name.out")"
			return 0
		fi
		kill -0 "${FLEET_PIDS[-1]}" 2>/dev/null || break
		sleep 0.05
	done
	echo "funcd $name did not start:" >&2
	cat "$FLEET_DIR/$name.log" >&2
	return 1
}
