# Shared by demo.sh and bench.sh: a certmaster (--autosign) and minions that
# enroll with it, each with its own root below DIR and an ephemeral port; all
# ended (by pid) when the calling shell exits.
# Usage: source scripts/fleet.sh; fleet_init DIR BIN_DIR; fleet_minion NAME; ...

fleet_init() {
	FLEET_DIR=$1
	FLEET_BIN=$2
	FLEET_PIDS=()
	rm -rf "$FLEET_DIR"
	mkdir -p "$FLEET_DIR"
	trap fleet_stop EXIT
	RUST_LOG=warn "$FLEET_BIN/certmaster" --root "$FLEET_DIR/certmaster" --listen 127.0.0.1:0 --autosign \
		>"$FLEET_DIR/certmaster.out" 2>"$FLEET_DIR/certmaster.log" &
	FLEET_PIDS+=($!)
	fleet_wait_for "listening on" "$FLEET_DIR/certmaster.out" certmaster || return 1
	FLEET_CM=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\) .*/\1/p' "$FLEET_DIR/certmaster.out")
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

# Starts minion NAME enrolling with the certmaster; sets FLEET_ADDR to
# NAME:PORT once it has its certificate. (Not meant for $(...): the pid must
# be recorded in this shell to be ended on exit.)
fleet_minion() {
	local name=$1 root="$FLEET_DIR/$1"
	RUST_LOG=warn "$FLEET_BIN/funcd" --root "$root" --name "$name" --listen 127.0.0.1:0 \
		--certmaster "$FLEET_CM" --foreground >"$FLEET_DIR/$name.out" 2>"$FLEET_DIR/$name.log" &
	FLEET_PIDS+=($!)
	fleet_wait_for "listening on" "$FLEET_DIR/$name.out" "funcd $name" || return 1
	local i
	for i in $(seq 1 200); do
		[ -f "$root/etc/pki/certmaster/$name.cert" ] && break
		sleep 0.05
	done
	FLEET_ADDR="$name:$(sed -n 's/.*listening on .*:\([0-9]*\)$/\1/p' "$FLEET_DIR/$name.out")"
}

# Starts minions PREFIX1..PREFIXN at once, then waits until all have their
# certificates (handles N = 200 here). Sets FLEET_ADDRS to their NAME:PORTs.
fleet_minions() {
	local prefix=$1 n=$2 i name
	for i in $(seq 1 "$n"); do
		name="$prefix$i"
		RUST_LOG=warn "$FLEET_BIN/funcd" --root "$FLEET_DIR/$name" --name "$name" --listen 127.0.0.1:0 \
			--certmaster "$FLEET_CM" --foreground >"$FLEET_DIR/$name.out" 2>"$FLEET_DIR/$name.log" &
		FLEET_PIDS+=($!)
	done
	FLEET_ADDRS=()
	for i in $(seq 1 "$n"); do
		name="$prefix$i"
		local tries=0
		until [ -f "$FLEET_DIR/$name/etc/pki/certmaster/$name.cert" ] && grep -q "listening on" "$FLEET_DIR/$name.out"; do
			tries=$((tries + 1))
			if [ "$tries" -gt 1200 ]; then
				echo "funcd $name did not enroll:" >&2
				cat "$FLEET_DIR/$name.log" >&2
				return 1
			fi
			sleep 0.05
		done
		FLEET_ADDRS+=("$name:$(sed -n 's/.*listening on .*:\([0-9]*\)$/\1/p' "$FLEET_DIR/$name.out")")
	done
}
