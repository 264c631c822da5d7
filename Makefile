# toolwarden: `make demo` to see it work, `make test` to check everything.

CARGO ?= cargo
EXAMPLES := calc fs
WASM_DIR := target/wasm/wasm32-wasip2/guest

.PHONY: demo test plugins build setup lint

# Installs what a fresh machine lacks: the wasm32-wasip2 target.
setup:
	@rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

# Builds every example plugin into target/plugins/*.wasm.
plugins: setup
	$(CARGO) build --profile guest --target wasm32-wasip2 --target-dir target/wasm $(addprefix -p ,$(EXAMPLES) hostile)
	mkdir -p target/plugins
	cp $(foreach p,$(EXAMPLES),$(WASM_DIR)/$(p).wasm) target/plugins/

build: setup
	$(CARGO) build --release -p toolwarden

demo: plugins build
	bash tests/demo/demo.sh

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings

# Tests run in release: wasmtime's compiler is too slow unoptimized.
test: setup build lint
	$(CARGO) test --release --workspace
