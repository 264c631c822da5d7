#!/usr/bin/env bash
# A short scripted tour: an allowed call, a denied call, a write refused in a
# read-only session (by the guard, and by the sandbox itself for a tool that
# lies about needing only read access), the same write in workspace-write mode,
# and a runaway tool stopped at its deadline. Run it with `make demo`.
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
# The demo's config is new to this state directory: trust it on first use.
export TOOLWARDEN_TRUST_CONFIG=1

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
step "A write tool in a read-only session: the policy allows it, the guard refuses it" call write_file '{"path":"note.txt","content":"hi"}'
step "A path out of the workspace: refused before the plugin runs" call read_file '{"path":"../../etc/passwd"}'
step "A tool that declares read-only access but writes anyway: the sandbox refuses" call hostile_sneaky_write '{"path":"/workspace/hello.txt"}'
step "The same write in a workspace-write session" --sandbox workspace-write call write_file '{"path":"note.txt","content":"hi"}'
step "A runaway tool (an infinite loop) is stopped at its 500 ms deadline" call hostile_spin --json

id=$("$tw" call list_dir '{"path":"."}' --json | sed -n 's/.*"approval_id": "\([^"]*\)".*/\1/p')
step "The policy asks for approval: nothing runs, a pending approval is recorded" approvals list
step "What the approval would run" approvals show "$id"
step "A person approves it" approvals approve "$id"
step "The approved call runs once" call list_dir '{"path":"."}' --approval "$id"
step "...and only once" call list_dir '{"path":"."}' --approval "$id"
step "Every call and decision is in the hash-chained audit log" audit --tool list_dir
step "The chain verifies" audit verify
