#!/usr/bin/env bash
# `make package`: two Debian packages below target/debian/, built with
# dpkg-deb from the `make install` layout (PREFIX=/usr), and the same two as
# RPMs beside them (rpmbuild; NO_RPM=1 builds only the .debs):
#   funcd  — the minion: funcd, its unit, man page, completions, the
#            drop-in module directories with the example modules, and its
#            configuration (/etc/func/minion.conf, /etc/certmaster/minion.conf,
#            the ACL example) as conffiles;
#   func   — the overlord side: func, func-transmit, func-inventory, func-build-map, func-api, certmaster, certmaster-ca, the
#            certmaster unit, man pages, completions, and their configuration.
# Each carries maintainer scripts (dist/debian/*.in) for its daemon: started
# on install and restarted on upgrade where systemd runs, stopped on removal
# (also one started by hand with --daemon, by its pid file).
# PROFILE=debug packages the debug build (the tests do, to stay quick).
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=${PROFILE:-release}
OUT=${OUT:-target/debian}
RPM_OUT=${RPM_OUT:-$(dirname "$OUT")/rpm}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(dpkg --print-architecture)
# Who builds the packages: DEBFULLNAME/DEBEMAIL (Debian's convention), else
# the git identity of this checkout.
maintainer="${DEBFULLNAME:-$(git config user.name 2>/dev/null || echo 'Func in Rust')} <${DEBEMAIL:-$(git config user.email 2>/dev/null || echo "$(id -un)@$(hostname -f 2>/dev/null || hostname)")}>"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
PREFIX=/usr DESTDIR="$stage/all" PROFILE=$PROFILE bash scripts/install.sh >/dev/null
mkdir -p "$OUT"

# package NAME DESCRIPTION FILE... (paths below the staged root; DIR/ for a
# directory, which may be empty)
package() {
	local name=$1 summary=$2
	shift 2
	local root="$stage/$name"
	mkdir -p "$root/DEBIAN"
	for f in "$@"; do
		case $f in
		*/) install -d -m 0755 "$root/$f" ;;
		*) install -D -m "$(stat -c %a "$stage/all/$f")" "$stage/all/$f" "$root/$f" ;;
		esac
	done
	# Stripped binaries and compressed man pages, as Debian policy wants.
	find "$root/usr/bin" "$root/usr/sbin" -type f -exec strip --strip-unneeded {} + 2>/dev/null || true
	find "$root/usr/share/man" -type f -exec gzip -9n {} +
	install -d "$root/usr/share/doc/$name"
	# The project's README, as /usr/share/doc/NAME/README.md.gz, and the
	# pages it links, below docs/ beside it.
	gzip -9n <README.md >"$root/usr/share/doc/$name/README.md.gz"
	install -d "$root/usr/share/doc/$name/docs"
	for page in docs/*.md; do
		gzip -9n <"$page" >"$root/usr/share/doc/$name/docs/$(basename "$page").gz"
	done
	cat >"$root/usr/share/doc/$name/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: func-rs
Source: the func-rs repository

Files: *
Copyright: 2026 the func-rs authors
License: GPL-2+
 On Debian systems the full text of the GNU General Public License version 2
 can be found in /usr/share/common-licenses/GPL-2.
COPYRIGHT
	printf '%s (%s) unstable; urgency=medium\n\n  * Built from the func-rs repository.\n\n -- %s  %s\n' \
		"$name" "$version" "$maintainer" "$(date -R -u -d @0)" | gzip -9n >"$root/usr/share/doc/$name/changelog.gz"
	for script in postinst prerm postrm; do
		sed -e "s|@PACKAGE@|$name|g" -e "s|@UNIT@|$DAEMON.service|g" -e "s|@DAEMON@|$DAEMON|g" \
			-e "s|@BINARY@|/usr/sbin/$DAEMON|g" "dist/debian/$script.in" >"$root/DEBIAN/$script"
		chmod 0755 "$root/DEBIAN/$script"
	done
	# What lintian warns of on purpose: the postinst starts the unit with
	# systemctl --no-block (deb-systemd-invoke waits until it is ready, and
	# funcd is ready only once signed); the overlord's and certmaster's
	# configuration may hold the store's password, so it is 0600;
	# the YAML reader of func-transmit, func, func-api, func-build-map
	# (the delegation map) and func-inventory (linked with the doors), and funcd's (overlord.map_minions reads that
	# map) is unsafe-libyaml, a Rust translation of libyaml, not a copy of
	# the C library lintian looks for.
	install -d "$root/usr/share/lintian/overrides"
	{
		printf '%s: maintainer-script-calls-systemctl\n' "$name"
		if [ -e "$root/usr/bin/func-transmit" ]; then
			for b in usr/bin/func-transmit usr/bin/func usr/sbin/func-api usr/bin/func-build-map usr/bin/func-inventory; do
				printf '%s: embedded-library libyaml [%s]\n' "$name" "$b"
			done
			printf '%s: non-standard-file-perm 0600 != 0644 [etc/func/overlord.conf]\n' "$name"
			printf '%s: non-standard-file-perm 0600 != 0644 [etc/certmaster/certmaster.conf]\n' "$name"
		fi
		if [ -e "$root/usr/sbin/funcd" ]; then
			printf '%s: embedded-library libyaml [usr/sbin/funcd]\n' "$name"
		fi
	} >"$root/usr/share/lintian/overrides/$name"
	find "$root/etc" -type f 2>/dev/null | sed "s|^$root||" >"$root/DEBIAN/conffiles"
	[ -s "$root/DEBIAN/conffiles" ] || rm -f "$root/DEBIAN/conffiles"
	local size
	size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
	cat >"$root/DEBIAN/control" <<CONTROL
Package: $name
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Section: admin
Priority: optional
Depends: ${DEPENDS:-libc6}
Description: $summary
 Func in Rust: run a method on many machines at once, now or as a
 background job, over XML-RPC on HTTPS with mutual TLS.
$extra
CONTROL
	dpkg-deb --root-owner-group --build "$root" "$OUT/${name}_${version}_${arch}.deb" >/dev/null
	echo "$OUT/${name}_${version}_${arch}.deb"
	[ -z "${NO_RPM:-}" ] || return 0
	rpm_package "$name" "${RPM_SUMMARY:-$summary}" "$root"
}

# rpm_package NAME SUMMARY ROOT: the same files as the .deb staged in ROOT
# (without dpkg's control files and lintian's overrides), built into
# $RPM_OUT/NAME-VERSION-1.ARCH.rpm (target/rpm/ by default) by rpmbuild from a generated spec: the same
# systemd unit and scriptlets (dist/rpm/*.in, the .deb's maintainer scripts
# in RPM's terms), /etc as %config(noreplace). Python's modules, which
# Debian's python3 reads from /usr/lib/python3/dist-packages, go to
# /usr/share/func/python: Fedora's python3 has a site directory per version,
# so %post names the directory in a func-rs.pth there and %preun removes it.
rpm_package() {
	local name=$1 summary=$2 root=$3 top="$stage/rpm-$1"
	local rpm_root="$top/root" spec="$top/$1.spec" requires
	mkdir -p "$rpm_root" "$top/RPMS"
	(cd "$root" && tar --exclude=./DEBIAN --exclude=./usr/share/lintian -cf - .) | (cd "$rpm_root" && tar -xf -)
	local python_post="" python_preun=""
	if [ -d "$rpm_root/usr/lib/python3/dist-packages" ]; then
		mkdir -p "$rpm_root/usr/share/func/python"
		mv "$rpm_root/usr/lib/python3/dist-packages"/* "$rpm_root/usr/share/func/python/"
		rm -rf "$rpm_root/usr/lib/python3"
		python_post=$(cat dist/rpm/python-post.sh)
		python_preun=$(cat dist/rpm/python-preun.sh)
	fi
	# Debian's changelog and copyright stay Debian's; the README stays.
	rm -f "$rpm_root/usr/share/doc/$name/changelog.gz" "$rpm_root/usr/share/doc/$name/copyright"
	requires=${RPM_REQUIRES:-}
	scriptlet() {
		sed -e "s|@PACKAGE@|$name|g" -e "s|@UNIT@|$DAEMON.service|g" -e "s|@DAEMON@|$DAEMON|g" \
			-e "s|@BINARY@|/usr/sbin/$DAEMON|g" "dist/rpm/$1.in" |
			awk -v post="$python_post" -v preun="$python_preun" \
				'/^@PYTHON_POST@$/ { print post; next } /^@PYTHON_PREUN@$/ { print preun; next } { print }'
	}
	{
		printf 'Name: %s\nVersion: %s\nRelease: 1\nSummary: %s\n' "$name" "$version" "$summary"
		printf 'License: GPL-2.0-or-later\nGroup: System/Management\nBuildArch: %s\n' "$(uname -m)"
		printf 'Packager: %s\n' "$maintainer"
		[ -z "$requires" ] || printf 'Requires: %s\n' "$requires"
		printf '%%define debug_package %%{nil}\n%%define __strip /bin/true\n%%define _build_id_links none\n'
		printf '%%define __os_install_post %%{nil}\n\n'
		printf '%%description\nFunc in Rust: run a method on many machines at once, now or as a\n'
		printf 'background job, over XML-RPC on HTTPS with mutual TLS.\n%s\n\n' "$(echo "$extra" | sed 's/^ //')"
		printf '%%install\ncp -a %q/. %%{buildroot}/\n\n' "$rpm_root"
		printf '%%changelog\n* %s %s - %s-1\n- Built from the func-rs repository.\n\n' \
			"$(LC_ALL=C date -u -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)" '+%a %b %d %Y')" "$maintainer" "$version"
		printf '%%post\n%s\n\n%%preun\n%s\n\n%%postun\n%s\n\n' "$(scriptlet post)" "$(scriptlet preun)" "$(scriptlet postun)"
		printf '%%files\n'
		# Every file, the directories only this package makes (not /usr,
		# /etc, ...), the configuration as %config(noreplace).
		(cd "$rpm_root" && find . -mindepth 1 | sed 's|^\.||' | sort) | while read -r f; do
			if [ -d "$rpm_root$f" ] && [ ! -L "$rpm_root$f" ]; then
				case $f in
				/etc/func | /etc/func/* | /etc/certmaster | /usr/libexec/func | /usr/libexec/func/* | /usr/share/func | /usr/share/func/* | /usr/share/doc/"$name" | /usr/share/doc/"$name"/*)
					printf '%%dir %s\n' "$f" ;;
				esac
			else
				case $f in
				/etc/*) printf '%%config(noreplace) %s\n' "$f" ;;
				*) printf '%s\n' "$f" ;;
				esac
			fi
		done
	} >"$spec"
	rpmbuild -bb --quiet --define "_topdir $top" --define "_rpmdir $top/RPMS" \
		--define "_build_name_fmt %{NAME}-%{VERSION}-%{RELEASE}.%{ARCH}.rpm" "$spec" >"$top/build.log" 2>&1 ||
		{ cat "$top/build.log" >&2; return 1; }
	mkdir -p "$RPM_OUT"
	cp "$top/RPMS/$name-$version-1.$(uname -m).rpm" "$RPM_OUT/"
	echo "$RPM_OUT/$name-$version-1.$(uname -m).rpm"
}

extra=" This package is the minion: funcd serves module methods (built-in and
 drop-in modules in any language) to the overlord." DAEMON=funcd RPM_SUMMARY="Minion daemon (funcd) of the Func remote execution system" package funcd "minion daemon (funcd) of Func in Rust" \
	usr/sbin/funcd usr/share/man/man8/funcd.8 usr/lib/systemd/system/funcd.service \
	usr/share/bash-completion/completions/funcd usr/share/zsh/site-functions/_funcd \
	usr/share/fish/vendor_completions.d/funcd.fish \
	usr/libexec/func/modules/ etc/func/modules.d/ \
	usr/share/doc/funcd/examples/modules/example_py usr/share/doc/funcd/examples/modules/example_sh \
	etc/func/minion.conf etc/certmaster/minion.conf etc/func/minion-acl.d/example.acl.sample

overlord_files=(usr/bin/func usr/bin/func-transmit usr/bin/func-inventory usr/bin/func-build-map usr/bin/certmaster-ca usr/sbin/certmaster usr/lib/systemd/system/certmaster.service
	usr/sbin/func-api usr/lib/systemd/system/func-api.service
	usr/share/man/man8/certmaster.8 usr/share/man/man8/certmaster-ca.8 usr/share/man/man8/func-api.8 usr/share/man/man8/func-api-token.8
	etc/func/overlord.conf etc/func/async_methods.conf etc/func/groups etc/certmaster/certmaster.conf)
for f in "$stage"/all/usr/share/man/man1/*.1; do overlord_files+=("usr/share/man/man1/$(basename "$f")"); done
for f in $(cd "$stage/all" && find usr/lib/python3/dist-packages -name '*.py'); do overlord_files+=("$f"); done
for n in func func-transmit func-inventory func-build-map func-api certmaster certmaster-ca; do
	overlord_files+=("usr/share/bash-completion/completions/$n" "usr/share/zsh/site-functions/_$n" "usr/share/fish/vendor_completions.d/$n.fish")
done
extra=" This package is the overlord side: func (the command line), func-transmit
 (Func's JSON/YAML program interface), func-inventory (Func's inventory in a
 git tree), func-build-map (the map of relays for --delegate),
 func-api (REST API, live events and
 a web UI), Func's Python overlord API (func.overlord.client), and the
 certmaster with certmaster-ca (the CA that enrolls minions)." DAEMON=certmaster DEPENDS="libc6, python3, git" RPM_REQUIRES="python3, git" RPM_SUMMARY="Overlord (func), certmaster and certmaster-ca of a remote execution system" package func "overlord (func), certmaster and certmaster-ca of Func in Rust" "${overlord_files[@]}"
