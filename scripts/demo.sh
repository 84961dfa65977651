#!/usr/bin/env bash
# The demo fleet: a certmaster (--autosign) and three minions (web1, web2,
# db1) that enroll with it, on loopback, each with its own --root below .demo/
# and an ephemeral port; a Python xmlrpc.client holding the overlord's
# certificate (names checked) calls them all.
# Until the `func` CLI exists this stands in for `func "*" call ...`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/fleet.sh
fleet_init .demo target/debug
targets=()
for name in web1 web2 db1; do
	fleet_minion "$name"
	targets+=("$FLEET_ADDR")
done
echo "certmaster on $FLEET_CM; enrolled ${#targets[@]} minions: ${targets[*]} (roots below .demo/)"
target/debug/certmaster-ca --root .demo/certmaster --list-cert-hash
python3 scripts/demo_call.py .demo/certmaster "${targets[@]}"
