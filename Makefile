# Func in Rust. `make demo` runs a local demo fleet, `make test` the tests,
# `make bench` the benchmarks. Everything the project needs is installed by
# `make deps` (run by the other targets).

CARGO ?= cargo
PYTHON ?= python3

.PHONY: all deps build release demo test bench bench-salt bench-scale clean

all: build

# Tools the tests and modules use besides cargo and python3: the openssl CLI
# (cross-checks of certificate hashes) and ps (process.info). Installed from
# Debian's packages only when missing.
deps:
	@missing=""; \
	command -v $(CARGO) >/dev/null || { echo "cargo is required (rustup)"; exit 1; }; \
	command -v $(PYTHON) >/dev/null || missing="$$missing python3"; \
	command -v openssl >/dev/null || missing="$$missing openssl"; \
	command -v ps >/dev/null || missing="$$missing procps"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

build: deps
	$(CARGO) build --workspace --bins

release: deps
	$(CARGO) build --workspace --bins --release

demo: build
	bash scripts/demo.sh

# Integration tests run the binaries built by `build` (cargo test does not
# rebuild other packages' binaries), then the Python wire suite.
test: build
	$(CARGO) test --workspace
	$(PYTHON) tests/python/run.py

# Benchmarks print tables and write them to bench/results/ (see README).
# BENCH_SIZES="10 50 200" and RUNS=5 by default; PEER=salt adds Salt.
bench: release
	bash scripts/bench.sh

bench-salt: release
	PEER=salt bash scripts/bench.sh

bench-scale: release
	bash scripts/bench_scale.sh

clean:
	$(CARGO) clean
	rm -rf .demo
