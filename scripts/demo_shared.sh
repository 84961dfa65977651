#!/usr/bin/env bash
# `make demo-shared`: "Several overlords (PostgreSQL)" from docs/SCALING.md, on
# the demo fleet. Needs `make demo` running in another terminal (it keeps
# the fleet up until Enter) and PostgreSQL's server (`make deps` installs
# it). Starts a private PostgreSQL (socket only, in .demo/pg), points the
# demo's overlord (A) and certmaster at it, makes a second overlord root
# (B, .demo/ov2: only the CA certificate and the overlord key), then shows
# B resolving SPECs from the store, a job started on A collapsed on B, and
# `store status`. At the end it puts A's configuration back, stops the
# server and removes what it made.
set -euo pipefail
cd "$(dirname "$0")/.."
B=target/debug
A=$PWD/.demo/certmaster
OV2=$PWD/.demo/ov2
PG=$PWD/.demo/pg
if [ ! -e "$A/etc/pki/certmaster/ca/overlord.pem" ] || ! $B/func --root "$A" '*' ping >/dev/null 2>&1; then
	echo "The demo fleet is not running: run 'make demo' in another terminal first (it stays up until Enter)."
	exit 1
fi
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$bin" ]; then
	echo "PostgreSQL's server is not installed: sudo apt-get install postgresql (or sudo make deps)"
	exit 1
fi
as=()
if [ "$(id -u)" = 0 ]; then
	as=(setpriv --reuid="$(id -u postgres)" --regid="$(id -g postgres)" --clear-groups --)
fi
mkdir -p "$A/etc/func" "$A/etc/certmaster"
for f in etc/func/overlord.conf etc/certmaster/certmaster.conf; do
	[ -e "$A/$f" ] && cp -p "$A/$f" "$A/$f.before-demo-shared"
done
cleanup() {
	"${as[@]}" "$bin/pg_ctl" -D "$PG/data" -m fast -w stop >/dev/null 2>&1 || true
	for f in etc/func/overlord.conf etc/certmaster/certmaster.conf; do
		if [ -e "$A/$f.before-demo-shared" ]; then mv "$A/$f.before-demo-shared" "$A/$f"; else rm -f "$A/$f"; fi
	done
	rm -rf "$PG" "$OV2"
}
trap cleanup EXIT
rm -rf "$PG" "$OV2"
mkdir -p "$PG/sock"
[ "$(id -u)" = 0 ] && chown -R postgres:postgres "$PG"
chmod 755 "$PG"
echo "== a private PostgreSQL in .demo/pg (Unix socket only)"
"${as[@]}" "$bin/initdb" -D "$PG/data" -U func -A trust --no-sync -E UTF8 --locale=C >/dev/null
"${as[@]}" "$bin/pg_ctl" -D "$PG/data" -o "-k $PG/sock -c listen_addresses=''" -l "$PG/server.log" -w start >/dev/null
url="postgresql:///postgres?host=$PG/sock&user=func"

run() {
	printf '$'; printf ' %q' "$@"; echo
	"$@" || echo "(exit status $?)"
	echo
}
echo "== A (the demo's overlord) and its certmaster: [store] url"
printf '\n[store]\nurl = %s\n' "$url" >>"$A/etc/func/overlord.conf"
printf '\n[store]\nurl = %s\n' "$url" >>"$A/etc/certmaster/certmaster.conf"
# The certmaster shares its signed minions when it starts (a restart, on a
# real host: sudo systemctl restart certmaster); here a second one, briefly.
$B/certmaster --root "$A" --listen 127.0.0.1:0 --foreground >/dev/null 2>&1 &
cm=$!
for _ in $(seq 1 100); do
	[ "$(psql -X -A -t -h "$PG/sock" -U func -d postgres -c 'SELECT count(*) FROM func_minions' 2>/dev/null || echo 0)" -ge 3 ] && break
	sleep 0.1
done
kill "$cm" 2>/dev/null || true
wait "$cm" 2>/dev/null || true
run $B/func --root "$A" store import
run $B/func --root "$A" store status

echo "== B: another overlord root with only the CA certificate and the overlord key"
mkdir -p "$OV2/etc/pki/certmaster/ca" "$OV2/etc/func"
chmod 700 "$OV2/etc/pki/certmaster/ca"
for f in certmaster.crt overlord.pem overlord.cert; do
	cp -p "$A/etc/pki/certmaster/ca/$f" "$OV2/etc/pki/certmaster/ca/$f"
done
printf '[store]\nurl = %s\n' "$url" >"$OV2/etc/func/overlord.conf"
chmod 600 "$OV2/etc/func/overlord.conf"
run $B/func --root "$OV2" '*' ping
job=$($B/func --root "$A" '*' call --async --nopoll test sleep 2 | sed -n 's/^JOB_ID: //p' | tr -d "'")
echo "\$ func --root A '*' call --async --nopoll test sleep 2      # JOB_ID: $job"
echo
run $B/func --root "$OV2" -t 30 job_status "$job" --wait
run $B/func --root "$OV2" jobs list --limit 3
echo "The demo's func-api still uses A's own job file: func-api reads [store] when it starts"
echo "(its jobs and scheduled runs go on there: the drivers it starts use its store), so restart"
echo "it to share the store: Enter in the 'make demo' terminal, then 'make demo' again (on a real"
echo "host: sudo systemctl restart func-api)."
echo "Press Enter (or Ctrl-C) to stop PostgreSQL and put A's configuration back."
if [ -t 0 ]; then read -r _ || true; fi
