#!/usr/bin/env bash
# `make install`: the built binaries, man pages, shell completions, systemd
# units and commented sample configuration, below $DESTDIR$PREFIX (and
# $DESTDIR/etc for the configuration, which is never overwritten).
#   PREFIX (default /usr/local), DESTDIR (default empty), PROFILE (release|debug).
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
PROFILE=${PROFILE:-release}
B=target/$PROFILE
for bin in func func-transmit func-inventory func-build-map func-api funcd certmaster certmaster-ca func-gendocs; do
	[ -x "$B/$bin" ] || { echo "install: $B/$bin is not built (make ${PROFILE/debug/build})" >&2; exit 1; }
done
root="$DESTDIR$PREFIX"
install -d "$root/bin" "$root/sbin"
install -m 0755 "$B/func" "$B/func-transmit" "$B/func-inventory" "$B/func-build-map" "$B/certmaster-ca" "$root/bin/"
# Func's Python overlord API (python/func) for the system Python.
for f in $(cd python && find func -name '*.py'); do
	install -D -m 0644 "python/$f" "$root/lib/python3/dist-packages/$f"
done
install -m 0755 "$B/funcd" "$B/certmaster" "$B/func-api" "$root/sbin/"
docs=$(mktemp -d)
trap 'rm -rf "$docs"' EXIT
"$B/func-gendocs" "$docs" >/dev/null
install -d "$root/share/man/man1" "$root/share/man/man8"
install -m 0644 "$docs"/man/*.1 "$root/share/man/man1/"
install -m 0644 "$docs"/man/*.8 "$root/share/man/man8/"
install -d "$root/share/bash-completion/completions" "$root/share/zsh/site-functions" "$root/share/fish/vendor_completions.d"
for f in "$docs"/completions/bash/*.bash; do
	install -m 0644 "$f" "$root/share/bash-completion/completions/$(basename "$f" .bash)"
done
install -m 0644 "$docs"/completions/zsh/_* "$root/share/zsh/site-functions/"
install -m 0644 "$docs"/completions/fish/*.fish "$root/share/fish/vendor_completions.d/"
install -d "$root/lib/systemd/system"
for unit in dist/systemd/*.service.in; do
	sed "s|@PREFIX@|$PREFIX|g" "$unit" >"$root/lib/systemd/system/$(basename "$unit" .in)"
	chmod 0644 "$root/lib/systemd/system/$(basename "$unit" .in)"
done
# Drop-in module directories (fixed paths below the root, like /etc/func,
# whatever the PREFIX: funcd looks there) and the two example modules, as
# documentation (copy one into /etc/func/modules.d with mode 0755 to use it).
install -d -m 0755 "$DESTDIR/usr/libexec/func/modules" "$DESTDIR/etc/func/modules.d"
install -d "$root/share/doc/funcd/examples/modules"
install -m 0644 dist/modules/example_py dist/modules/example_sh "$root/share/doc/funcd/examples/modules/"
# Configuration: commented samples, each key with its default; an existing
# file is the administrator's and is left alone. The overlord's and the
# certmaster's may hold the store's password ([store] url): 0600.
conf() {
	local from=$1 to=$DESTDIR$2 mode=${3:-0644}
	install -d "$(dirname "$to")"
	[ -e "$to" ] || install -m "$mode" "dist/config/$from" "$to"
}
conf minion.conf /etc/func/minion.conf
conf overlord.conf /etc/func/overlord.conf 0600
conf async_methods.conf /etc/func/async_methods.conf
conf groups /etc/func/groups
conf example.acl /etc/func/minion-acl.d/example.acl.sample
conf certmaster.conf /etc/certmaster/certmaster.conf 0600
conf certmaster-minion.conf /etc/certmaster/minion.conf
echo "installed below ${DESTDIR:-/} (PREFIX=$PREFIX)"
