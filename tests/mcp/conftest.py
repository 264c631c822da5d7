"""Fixtures for driving `toolwarden serve` with the official MCP Python SDK.

Each test gets a fresh workspace, plugins directory and state directory, the
plugins built by `cargo test` (target/wasm/...), and the release binary.
"""

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BINARY = ROOT / "target" / "release" / "toolwarden"
WASM = ROOT / "target" / "wasm" / "wasm32-wasip2" / "guest"

POLICY = """
[limits]
timeout_ms = 30000
fuel = 1000000000000

[[rule]]
tools = ["calc", "read_file", "list_dir", "hostile_spin", "hostile_progress", "hostile_ask"]
decision = "allow"
reason = "harmless"

[[rule]]
tools = ["write_file"]
decision = "ask"
reason = "writes need a person"
"""


# What a person answers on the host's approval form to let the call run once.
APPROVE = {"toolwarden_decision": "approve_once"}


@pytest.fixture
def anyio_backend():
    return "asyncio"


class Host:
    def __init__(self, root: Path):
        self.workspace = root / "workspace"
        self.plugins = root / "plugins"
        self.state = root / "state"
        for d in (self.workspace, self.plugins, self.state):
            d.mkdir(parents=True)
        for name in ("calc", "fs", "hostile"):
            wasm = WASM / f"{name}.wasm"
            assert wasm.exists(), f"{wasm} is missing: run `cargo test --release` (make test does) first"
            shutil.copy(wasm, self.plugins)
        (self.workspace / "toolwarden.toml").write_text(POLICY)
        (self.workspace / "hello.txt").write_text("hello")

    def with_conformance(self, rules: str = "") -> "Host":
        """Adds the conformance fixture plugin (the MCP scenarios' tools,
        prompts and resources) and appends `rules` to the policy."""
        shutil.copy(WASM / "conformance.wasm", self.plugins)
        policy = self.workspace / "toolwarden.toml"
        policy.write_text(policy.read_text() + rules)
        return self

    def env(self) -> dict:
        return {
            "PATH": os.environ.get("PATH", ""),
            "TOOLWARDEN_PLUGINS": str(self.plugins),
            "TOOLWARDEN_WORKSPACE": str(self.workspace),
            "TOOLWARDEN_STATE": str(self.state),
            "TOOLWARDEN_TRUST_CONFIG": "1",
            "TOOLWARDEN_SANDBOX": "workspace-write",
        }

    def server(self):
        from mcp import StdioServerParameters

        assert BINARY.exists(), f"{BINARY} is missing: run `make test-build`"
        return StdioServerParameters(command=str(BINARY), args=["serve"], env=self.env())

    def cli(self, *args: str):
        out = subprocess.run([str(BINARY), *args], env=self.env(), capture_output=True, text=True, timeout=60)
        return out.returncode, out.stdout, out.stderr

    def audit(self, tool: str, until=None, within: float = 10) -> list:
        """The tool's audit records. A running host commits them in batches a
        few milliseconds after the call answers (`durability = "batched"`),
        so a test that reads while it serves names what it waits for
        (`until(records)`) and gets the records once that holds, or as they
        are after `within` seconds."""
        deadline = time.monotonic() + within
        while True:
            code, stdout, stderr = self.cli("audit", "--json", "--tool", tool)
            assert code == 0, stderr
            records = json.loads(stdout)
            if until is None or until(records) or time.monotonic() > deadline:
                return records
            time.sleep(0.05)


@pytest.fixture
def host(tmp_path) -> Host:
    return Host(tmp_path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def http_serve(env: dict, *args: str, port: int | None = None):
    """`toolwarden serve --http` on a free loopback port (or `port`), until the
    block ends: yields the process and the `/mcp` URL once it accepts
    connections."""
    port = port or free_port()
    proc = subprocess.Popen([str(BINARY), "serve", "--http", f"127.0.0.1:{port}", *args],
                            env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()
                time.sleep(0.05)
        yield proc, f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
