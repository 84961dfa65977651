#!/usr/bin/env bash
# The demo fleet: a CA and three minions (web1, web2, db1) on loopback, each
# funcd with its own --root below .demo/ and an ephemeral port; a Python
# xmlrpc.client (the overlord's certificate, names checked) calls them all.
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
echo "started ${#targets[@]} minions: ${targets[*]} (roots below .demo/)"
python3 scripts/demo_call.py .demo/certmaster "${targets[@]}"
