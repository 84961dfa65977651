# Func in Rust. `make demo` runs a local demo fleet (the Rust toolchain and
# python3 are all it needs), `make test` the tests, `make bench` the
# benchmarks. What the tests and benchmarks need is installed by `make deps`
# (run by those targets).

SHELL := /bin/bash
CARGO ?= cargo
PYTHON ?= python3

.PHONY: all deps build release demo demo-shared test docs install package bench bench-salt bench-scale clean

all: build

# What each target needs. `make demo` needs only the Rust toolchain and
# python3 (curl is used when present). `make test` and `make bench` need
# more, installed by `make deps` from Debian's packages when missing: the
# openssl CLI (cross-checks of certificate hashes), ps (process.info), groff
# (the man page test), setpriv (tests acting as an unprivileged user), curl,
# lintian (the .debs), rpm and rpmlint (the RPMs), iproute2 (the multi-host test), Chromium and
# ChromeDriver (the web UI's browser tests), PostgreSQL's server (the shared
# store's tests start a private one), Perl's RPC::XML and Frontier::RPC
# clients with LWP's https (XML-RPC clients other than Python's); and from
# PyPI when the python3 in use lacks them: yaml (func-transmit --yaml from
# Func's own test), setuptools and wheel (pip install ./python),
# schemathesis (runs func-api's OpenAPI document), aiosmtpd (the SMTP
# server of the mail notifications' test); Node.js and npm, and
# from the npm registry (`npm ci` in tests/oidc, pinned by its lock file)
# oauth2-mock-server, the OpenID provider the single sign-on tests run. Installing needs root:
# anyone else is told which packages are missing and how to install them.
deps:
	@missing=""; \
	command -v $(CARGO) >/dev/null || { echo "cargo is required (rustup)"; exit 1; }; \
	for c in clippy rustfmt; do \
		$(CARGO) $${c#rust} --version >/dev/null 2>&1 || rustup component add $$c || { echo "make test needs $$c: rustup component add $$c"; exit 1; }; \
	done; \
	command -v $(PYTHON) >/dev/null || missing="$$missing python3"; \
	command -v openssl >/dev/null || missing="$$missing openssl"; \
	command -v ps >/dev/null || missing="$$missing procps"; \
	command -v groff >/dev/null || missing="$$missing groff-base"; \
	command -v setpriv >/dev/null || missing="$$missing util-linux"; \
	command -v curl >/dev/null || missing="$$missing curl"; \
	command -v lintian >/dev/null || missing="$$missing lintian"; \
	command -v rpmbuild >/dev/null || missing="$$missing rpm"; \
	command -v rpmlint >/dev/null || missing="$$missing rpmlint"; \
	command -v ip >/dev/null || missing="$$missing iproute2"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v chromedriver >/dev/null || missing="$$missing chromium-driver"; \
	perl -MRPC::XML::Client -e1 2>/dev/null || missing="$$missing librpc-xml-perl"; \
	perl -MFrontier::Client -e1 2>/dev/null || missing="$$missing libfrontier-rpc-perl"; \
	perl -MLWP::Protocol::https -e1 2>/dev/null || missing="$$missing liblwp-protocol-https-perl"; \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "make deps: the tests need Debian packages that are missing:$$missing"; \
			echo "  install them as root: sudo apt-get install$$missing   (or: sudo make deps)"; \
			echo "  (make demo needs none of them)"; \
			exit 1; \
		fi; \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi; \
	$(PYTHON) -c 'import yaml, setuptools, wheel' 2>/dev/null || { \
		echo "installing Python modules: pyyaml setuptools wheel"; \
		$(PYTHON) -m pip install -q pyyaml setuptools wheel; }; \
	$(PYTHON) -c 'import schemathesis' 2>/dev/null || { \
		echo "installing Python module: schemathesis (func-api's OpenAPI test)"; \
		$(PYTHON) -m pip install -q schemathesis; }; \
	$(PYTHON) -c 'import aiosmtpd' 2>/dev/null || { \
		echo "installing Python module: aiosmtpd (the mail notifications' SMTP server)"; \
		$(PYTHON) -m pip install -q aiosmtpd; }; \
	[ -d tests/oidc/node_modules/oauth2-mock-server ] || { \
		echo "installing the single sign-on tests' OpenID provider (npm ci in tests/oidc)"; \
		npm ci --prefix tests/oidc --no-audit --no-fund --loglevel=error; }

build:
	@command -v $(CARGO) >/dev/null || { echo "cargo is required (rustup)"; exit 1; }
	$(CARGO) build --workspace --bins

release:
	@command -v $(CARGO) >/dev/null || { echo "cargo is required (rustup)"; exit 1; }
	$(CARGO) build --workspace --bins --release

# The Rust toolchain and python3 only.
demo: build
	bash scripts/demo.sh

# "Several overlords" on the running demo fleet (docs/SCALING.md): PostgreSQL's server.
demo-shared: build
	bash scripts/demo_shared.sh

# No import cycle between the files of any crate (the layers stay layers),
# rustfmt's layout and no clippy warning (the [workspace.lints] of
# Cargo.toml among them), then integration tests run the binaries built by `build` (cargo test does
# not rebuild other packages' binaries), then the Python wire suite. A
# failure does not stop the run: every part runs, every failing test is
# listed (cargo's --no-fail-fast, the Python summary), and the last line
# names the parts that failed.
test: deps build
	@failed=""; tmp=$${TMPDIR:-/tmp}; \
	left() { ls -d $$tmp/func-test-* $$tmp/func-fleet-* $$tmp/func-py-* $$tmp/func-pg-* 2>/dev/null | sort; }; \
	before=$$(left); \
	$(PYTHON) scripts/import_cycles.py . || failed="$$failed import-cycles"; \
	$(CARGO) fmt --all --check || failed="$$failed fmt"; \
	$(CARGO) clippy --workspace --all-targets -- -D warnings || failed="$$failed clippy"; \
	$(CARGO) test --workspace --no-fail-fast 2>&1 | tee target/test-cargo.log; \
	[ $${PIPESTATUS[0]} = 0 ] || failed="$$failed cargo"; \
	$(PYTHON) tests/python/run.py || failed="$$failed python"; \
	leftovers=$$(comm -13 <(echo "$$before") <(left)); \
	if [ -n "$$leftovers" ]; then \
		echo "make test: test fixtures left temp dirs behind (they may hold keys):"; echo "$$leftovers"; \
		failed="$$failed leftovers"; \
	fi; \
	if [ -n "$$failed" ]; then \
		echo "make test: FAILED:$$failed"; \
		grep -E '^    [a-z_:]+$$|^test .* FAILED$$' target/test-cargo.log | sed 's/^/  cargo: /' | sort -u; \
		exit 1; \
	fi; \
	echo "make test: all passed"

# Man pages and shell completions (bash, zsh, fish) of the four binaries,
# generated from their clap definitions, below target/docs.
docs: build
	target/debug/func-gendocs target/docs

# Binaries, man pages, completions, systemd units and commented sample
# configuration (scripts/install.sh): PREFIX (default /usr/local), DESTDIR.
PREFIX ?= /usr/local
install: release
	PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) PROFILE=release bash scripts/install.sh

# Two Debian packages, funcd (minion) and func (overlord + certmaster), in
# target/debian/, and the same two as RPMs in target/rpm/ (scripts/package.sh).
package: deps release
	PROFILE=release bash scripts/package.sh

# Benchmarks print tables and write them to bench/results/ (see docs/BENCHMARKS.md).
# BENCH_SIZES="10 50 200" and RUNS=5 by default; PEER=salt adds Salt.
bench: deps release
	bash scripts/bench.sh

bench-salt: deps release
	PEER=salt bash scripts/bench.sh

bench-scale: deps release
	bash scripts/bench_scale.sh

clean:
	$(CARGO) clean
	rm -rf .demo
