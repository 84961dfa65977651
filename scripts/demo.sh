#!/usr/bin/env bash
# The demo fleet: a certmaster (--autosign) and three minions (web1, web2,
# db1) that enroll with it, then a fourth (new1) that asks to join once
# autosigning is off and waits, pending, for the user to sign it; on loopback, each with its own --root below .demo/
# and an ephemeral port. Runs a few `func` commands, shows Python's
# xmlrpc.client talking to the same minions, func-api and curl, then (in a terminal) keeps the
# fleet up for another shell until Enter or Ctrl-C. Everything started is
# stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fleet.sh
fleet_init .demo target/debug
targets=()
for name in web1 web2 db1; do
	fleet_minion "$name"
	targets+=("$FLEET_ADDR")
done
# A role for each, as a local fact (etc/func/facts.d, read at every call),
# so the fact filters of the README's tour and docs/USING.md work on the demo fleet.
for name in web1 web2 db1; do
	role=web
	[ "$name" = db1 ] && role=db
	mkdir -p ".demo/$name/etc/func/facts.d"
	chmod go-w ".demo/$name" ".demo/$name/etc" ".demo/$name/etc/func"
	chmod 0700 ".demo/$name/etc/func/facts.d"
	printf '{"role": "%s"}\n' "$role" >".demo/$name/etc/func/facts.d/role.json"
	chmod 0644 ".demo/$name/etc/func/facts.d/role.json"
done
export FUNC_ROOT=$PWD/.demo/certmaster
# Two groups, so the @group examples (README, docs/USING.md) work on the demo fleet.
mkdir -p "$FUNC_ROOT/etc/func"
printf '[web]\nhost = web1, web2\n\n[db]\nhost = db1\n' >"$FUNC_ROOT/etc/func/groups"
echo "certmaster on $FLEET_CM; enrolled: ${targets[*]}; groups @web (web1, web2), @db (db1); fact role=web|db"
echo

# new1 asks to join a certmaster that no longer autosigns: its request waits
# for you (certmaster-ca --sign, func-api's /keys, the web UI's Keys page).
# It asks again every 5 s at most (enroll_retry_max), so a signature is
# picked up at once.
fleet_certmaster_signing_by_hand
mkdir -p .demo/new1/etc/certmaster
printf '[main]\nenroll_retry_max = 5\n' >.demo/new1/etc/certmaster/minion.conf
FLEET_LOG=info fleet_start new1
for _ in $(seq 1 600); do
	[ -f "$FUNC_ROOT/var/lib/certmaster/certmaster/csrs/new1.csr" ] && break
	sleep 0.05
done
new1_fp=$(sed -n 's/.*certificate request for new1.* fingerprint=\([0-9A-F:]*\).*/\1/p' .demo/new1.log | head -1)

run() {
	printf '$'; printf ' %q' "$@"; echo
	local rc=0
	"$@" || rc=$?
	echo "(exit status $rc)"
	echo
}
run target/debug/certmaster-ca --list-signed
run target/debug/certmaster-ca --list
echo "new1 waits to be signed. Compare the fingerprint above with the one new1 logged (${new1_fp:-see .demo/new1.log}),"
echo "then sign it here (certmaster-ca --sign new1 --fingerprint FP), with curl (POST /api/v1/keys/new1/sign) or on the web UI's Keys page."
echo
run target/debug/func "*" ping
run target/debug/func "web*" call test add 1 2
run target/debug/func "*" call command run "uname -sr"
run target/debug/func "db1" call test explode
run target/debug/func "web1" show hardware numCpus systemMemory os
run target/debug/func "*" call --filter 'role=web,num_cpus>=1' test ping
run target/debug/func --json "*" call test ping
# The main job: an async call returns a job id at once; job_status collects.
printf '$ func "*" call --async --nopoll test sleep 2\n'
out=$(target/debug/func "*" call --async --nopoll test sleep 2)
echo "$out"
# The id is printed shell-quoted (it holds '*'); let the shell unquote it.
eval "job=${out#JOB_ID: }"
echo
run target/debug/func job_status "$job"
run target/debug/func -t 30 job_status "$job" --wait
run target/debug/func "*" call --async test add 2 3
echo "\$ python3 scripts/demo_call.py .demo/certmaster ${targets[0]}   # Python's xmlrpc.client, overlord certificate"
python3 scripts/demo_call.py .demo/certmaster "${targets[0]}"
echo

# func-api: the same engine over HTTPS, for programs and browsers.
fleet_api
echo "func-api on $FLEET_API (its URL is in .demo/api-url)"
printf '$ func-api token create demo --admin | tail -1\n'
token=$(target/debug/func-api token create demo --admin | tail -1)
echo "${token:0:9}... (printed once, stored only as a hash)"
(umask 077; echo "$token" >.demo/api-token; echo "Authorization: Bearer $token" >.demo/api-header)
ca=$FUNC_ROOT/etc/pki/certmaster/ca/certmaster.crt
api() { # the token stays in a private file, out of `ps`
	echo "\$ curl --cacert \$CA -H @.demo/api-header ${2:+--json '$2' }$FLEET_API$1"
	if command -v curl >/dev/null; then
		curl -sS -w '\n' --cacert "$ca" -H @.demo/api-header ${2:+--json "$2"} "$FLEET_API$1"
	else # the demo needs nothing beyond the Rust toolchain and python3
		python3 - "$ca" "$FLEET_API$1" "${2:-}" <<'PY'
import ssl, sys, urllib.request
ca, url, body = sys.argv[1:4]
header = open(".demo/api-header").read().strip().split(": ", 1)
req = urllib.request.Request(url, data=body.encode() or None, headers={header[0]: header[1], "Content-Type": "application/json"})
try:
    print(urllib.request.urlopen(req, context=ssl.create_default_context(cafile=ca)).read().decode())
except urllib.error.HTTPError as e:
    print(e.read().decode())
PY
	fi
	echo
}
api /api/v1/minions
api /api/v1/calls '{"spec": "web*", "module": "test", "method": "add", "args": [1, 2]}'
api /api/v1/jobs?limit=2

if [ -t 0 ]; then
	echo "The fleet is running. From another shell:"
	echo "  export FUNC_ROOT=$FUNC_ROOT"
	echo "  $PWD/target/debug/func '*' call test add 1 2"
	echo "  curl --cacert \$FUNC_ROOT/etc/pki/certmaster/ca/certmaster.crt -H @.demo/api-header \$(cat .demo/api-url)/api/v1/jobs"
	echo "Press Enter or Ctrl-C to stop it."
	read -r _ || true
else
	echo "To use a fleet from another shell, run 'make demo' in a terminal: it stays up until Enter or Ctrl-C."
fi
