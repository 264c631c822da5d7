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

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

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


# The plugins every test host may load; their optimized code is compiled once
# per test process (`compiled_cache`) rather than once per host.
FIXTURE_PLUGINS = ("calc", "fs", "hostile", "conformance")

_compiled = None


def compiled_cache() -> Path:
    """A state directory whose compile cache holds every fixture plugin's
    optimized (Cranelift) code, made once per test process: each fresh host
    otherwise compiles them again, 2-3 CPU-seconds a host (seeding took the
    Python suite from 545 to 372 CPU-seconds, 297 to 210 s on two cores).
    A host seeded from it starts as it would after its first run; the
    cache's own tests, cold and with hostile entries, are in tests/all."""
    global _compiled
    if _compiled is not None:
        return _compiled
    import atexit
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="toolwarden-compiled-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    plugins, state, workspace = root / "plugins", root / "state", root / "workspace"
    plugins.mkdir()
    workspace.mkdir()
    # The hosts' own policy: the engine's settings (its limits) key the cache.
    (workspace / "toolwarden.toml").write_text(POLICY)
    for name in FIXTURE_PLUGINS:
        shutil.copy(WASM / f"{name}.wasm", plugins)
    env = {"PATH": os.environ.get("PATH", ""), "TOOLWARDEN_PLUGINS": str(plugins),
           "TOOLWARDEN_WORKSPACE": str(workspace), "TOOLWARDEN_STATE": str(state),
           "TOOLWARDEN_TRUST_CONFIG": "1"}
    # `list` compiles with the baseline compiler only; a server compiles the
    # optimized code in the background and, entry by entry, removes the
    # baseline's: done when none of those is left.
    subprocess.run([str(BINARY), "list"], env=env, capture_output=True, check=True, timeout=120)
    baseline = set(os.listdir(state / "cache"))
    server = subprocess.Popen([str(BINARY), "serve"], env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while baseline & set(os.listdir(state / "cache")):
            assert time.monotonic() < deadline, "the optimized compile of the fixture plugins did not finish"
            time.sleep(0.05)
    finally:
        server.kill()
        server.wait()
    _compiled = state
    return state


def seed_compiled(state: Path):
    """Gives `state` the fixture plugins' compiled code (hard links: an entry
    is replaced by a rename, never rewritten, so the links never change)."""
    compiled = compiled_cache()
    (state / "cache").mkdir(mode=0o700)
    for entry in os.listdir(compiled / "cache"):
        os.link(compiled / "cache" / entry, state / "cache" / entry)
    shutil.copy2(compiled / "cache.key", state / "cache.key")


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
        seed_compiled(self.state)

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


@contextlib.asynccontextmanager
async def listening_session(url: str, **options):
    """A 2025-11-25 `ClientSession` over streamable HTTP, initialized, once its
    GET stream is open. What no request of a session asked for (another
    session's change announced) reaches it only on that stream, and the SDK
    opens it in the background after `initialize`: a notification sent before
    it is open is not delivered, so a test that waits for one waits for this
    first (a loaded CI machine opened it too late once)."""
    opened = anyio.Event()

    async def on_response(response):
        if response.request.method == "GET" and response.status_code == 200:
            opened.set()

    http = create_mcp_http_client()
    http.event_hooks = {"request": [], "response": [on_response]}
    async with http, streamable_http_client(url, http_client=http) as (r, w), \
            ClientSession(r, w, **options) as session:
        await session.initialize()
        with anyio.fail_after(10):
            await opened.wait()
        yield session
