#!/usr/bin/env bash
# A short scripted tour: an allowed call, a denied call, a write refused by the
# sandbox in read-only mode, the same write in workspace-write mode, and a
# runaway tool stopped at its deadline. Run it with `make demo`.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
tw="$root/target/release/toolwarden"
demo=$(mktemp -d)
trap 'rm -rf "$demo"' EXIT
mkdir -p "$demo/workspace" "$demo/plugins" "$demo/state"
cp "$root"/target/plugins/*.wasm "$demo/plugins/"
cp "$root/target/wasm/wasm32-wasip2/guest/hostile.wasm" "$demo/plugins/"
cp "$root/tests/demo/toolwarden.toml" "$demo/workspace/"
printf 'Hello from the workspace.\n' > "$demo/workspace/hello.txt"
export TOOLWARDEN_PLUGINS="$demo/plugins" TOOLWARDEN_WORKSPACE="$demo/workspace" TOOLWARDEN_STATE="$demo/state"

step() {
    printf '\n\033[1m# %s\033[0m\n$ toolwarden %s\n' "$1" "${*:2}"
    "$tw" "${@:2}"
    printf '(exit code %s)\n' "$?"
}

step "Every tool the plugins declare, and what the policy decides" list
step "An allowed call" call calc '{"op":"mul","a":123456789,"b":1000}'
step "An allowed read of the workspace" call read_file '{"path":"hello.txt"}'
step "A denied call: no rule allows it (default deny)" call hostile_read_raw '{"path":"/workspace/hello.txt"}'
step "Arguments that break the tool's schema" call calc '{"op":"mul","a":"12"}'
step "A write in a read-only session: the policy allows it, the sandbox refuses it" call write_file '{"path":"note.txt","content":"hi"}'
step "The same write in a workspace-write session" --sandbox workspace-write call write_file '{"path":"note.txt","content":"hi"}'
step "A runaway tool (an infinite loop) is stopped at its 500 ms deadline" call hostile_spin --json
