# Shared by demo.sh and bench.sh: a certmaster (--autosign) and minions that
# enroll with it, each with its own root below DIR and an ephemeral port; all
# ended (by pid) when the calling shell exits.
# Usage: source scripts/fleet.sh; fleet_init DIR BIN_DIR; fleet_minion NAME; ...

fleet_init() {
	FLEET_DIR=$1
	FLEET_BIN=$2
	FLEET_PIDS=()
	rm -rf "$FLEET_DIR"
	mkdir -p "$FLEET_DIR/certmaster/etc/certmaster"
	# Every minion of a local fleet connects from 127.0.0.1: the certmaster's
	# per-address cap (16, meant for real fleets) would throttle enrollment.
	printf '[main]\nmax_connections_per_address = 4096\n' >"$FLEET_DIR/certmaster/etc/certmaster/certmaster.conf"
	trap fleet_stop EXIT
	RUST_LOG=warn "$FLEET_BIN/certmaster" --root "$FLEET_DIR/certmaster" --listen 127.0.0.1:0 --autosign \
		>"$FLEET_DIR/certmaster.out" 2>"$FLEET_DIR/certmaster.log" &
	FLEET_PIDS+=($!)
	fleet_wait_for "listening on" "$FLEET_DIR/certmaster.out" certmaster || return 1
	FLEET_CM=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\) .*/\1/p' "$FLEET_DIR/certmaster.out")
}

# Restarts the certmaster on the same address without --autosign: requests
# from now on wait to be signed by hand (the demo's new1).
fleet_certmaster_signing_by_hand() {
	kill -TERM "${FLEET_PIDS[0]}" 2>/dev/null || true
	wait "${FLEET_PIDS[0]}" 2>/dev/null || true
	RUST_LOG=warn "$FLEET_BIN/certmaster" --root "$FLEET_DIR/certmaster" --listen "$FLEET_CM" \
		>"$FLEET_DIR/certmaster.out" 2>"$FLEET_DIR/certmaster.log" &
	FLEET_PIDS[0]=$!
	fleet_wait_for "listening on" "$FLEET_DIR/certmaster.out" certmaster
}

fleet_stop() {
	for pid in "${FLEET_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${FLEET_PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
}

# fleet_wait_for TEXT FILE WHAT: polls until FILE contains TEXT (10 s at most).
fleet_wait_for() {
	local i
	for i in $(seq 1 200); do
		grep -q "$1" "$2" 2>/dev/null && return 0
		kill -0 "${FLEET_PIDS[-1]}" 2>/dev/null || break
		sleep 0.05
	done
	echo "$3 did not start:" >&2
	cat "${2%.out}.log" >&2
	return 1
}

# Starts minion NAME enrolling with the certmaster, in the background
# (FLEET_LOG: its RUST_LOG, warn by default).
fleet_start() {
	RUST_LOG=${FLEET_LOG:-warn} "$FLEET_BIN/funcd" --root "$FLEET_DIR/$1" --name "$1" --listen 127.0.0.1:0 \
		--certmaster "$FLEET_CM" --foreground >"$FLEET_DIR/$1.out" 2>"$FLEET_DIR/$1.log" &
	FLEET_PIDS+=($!)
	echo $! >>"$FLEET_DIR/minion.pids"
}

# Waits (60 s at most) until minion NAME listens and has its certificate;
# sets FLEET_ADDR to NAME:PORT.
fleet_await() {
	local name=$1 tries=0
	until [ -f "$FLEET_DIR/$name/etc/pki/certmaster/$name.cert" ] && grep -q "listening on" "$FLEET_DIR/$name.out"; do
		tries=$((tries + 1))
		if [ "$tries" -gt 1200 ]; then
			echo "funcd $name did not enroll:" >&2
			cat "$FLEET_DIR/$name.log" >&2
			return 1
		fi
		sleep 0.05
	done
	FLEET_ADDR="$name:$(sed -n 's/.*listening on .*:\([0-9]*\)$/\1/p' "$FLEET_DIR/$name.out")"
}

# Starts minion NAME and waits for it; sets FLEET_ADDR. (Not meant for
# $(...): the pid must be recorded in this shell to be ended on exit.)
fleet_minion() {
	fleet_start "$1"
	fleet_await "$1"
}

# Starts minions PREFIX1..PREFIXN at once, then waits until all have their
# certificates (handles N = 200 here). Sets FLEET_ADDRS to their NAME:PORTs.
fleet_minions() {
	local prefix=$1 n=$2 i
	for i in $(seq 1 "$n"); do
		fleet_start "$prefix$i"
	done
	FLEET_ADDRS=()
	for i in $(seq 1 "$n"); do
		fleet_await "$prefix$i" || return 1
		FLEET_ADDRS+=("$FLEET_ADDR")
	done
}

# Starts func-api on the certmaster's root (loopback, ephemeral port) and
# sets FLEET_API to its https://localhost:PORT URL.
fleet_api() {
	RUST_LOG=warn "$FLEET_BIN/func-api" --root "$FLEET_DIR/certmaster" --listen 127.0.0.1:0 \
		>"$FLEET_DIR/func-api.out" 2>"$FLEET_DIR/func-api.log" &
	FLEET_PIDS+=($!)
	fleet_wait_for "func-api listening on" "$FLEET_DIR/func-api.out" func-api || return 1
	FLEET_API="https://localhost:$(sed -n 's/.*listening on .*:\([0-9]*\)$/\1/p' "$FLEET_DIR/func-api.out")"
	echo "$FLEET_API" >"$FLEET_DIR/api-url"
}
