"""The three SDKs hold to one contract, and each author workflow works.

The example tools (a greeting, a workspace file reader, an HTTP fetch with a
declared origin and credential, a tool that asks a question) are written in
Rust (tests/fixtures/sdk_examples), Python (sdk/python/example) and
JavaScript (sdk/js/example). The Python and JavaScript ones are built here
with `toolwarden build` (componentize-py; esbuild and componentize-js, both
pinned in tests/sdk); each is loaded by the release binary and called through
the whole pipeline, over the CLI and over MCP with the official Python SDK.
Their schemas must be equal and their results the same.

Then the workflow a new author follows: `toolwarden new --lang python|js`,
`build`, `check`, `install`, `call '{}'`; `build` without the toolchain;
and `dev` rebuilding on save into a running server. (Components built with
the toolchains straight against wit/, without an SDK, are tested too:
componentize-py in test_text_stats.py, plain wit-bindgen in the Rust
fixtures `dangerous`, `hostile` and others.)
"""

import contextlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BINARY = ROOT / "target" / "release" / "toolwarden"
RUST_EXAMPLES = ROOT / "target" / "wasm" / "wasm32-wasip2" / "guest" / "sdk_examples.wasm"
KEPT = ROOT / "tests" / "kept" / "contract-0.1.0.wasm"
NODE_BIN = ROOT / "tests" / "sdk" / "node_modules" / ".bin"
VENV_BIN = Path(sys.executable).parent
LANGS = ("rust", "python", "js")
SECRET = "s3cret-token-for-the-sdk-tests"

POLICY = """
[limits]
timeout_ms = 60000

[network]
allow = ["https://api.github.com", { origin = "http://127.0.0.1:*", private = true }]

[credential.github]
env = "SDK_TEST_TOKEN"
origins = ["http://127.0.0.1:*"]
header = "Authorization"
prefix = "Bearer "

[[rule]]
tools = ["*"]
decision = "allow"
reason = "the SDK examples"
"""


def toolchain_env(home: Path, path: str | None = None) -> dict:
    return {
        "HOME": str(home),
        "PATH": path if path is not None else f"{VENV_BIN}:{NODE_BIN}:{os.environ['PATH']}",
        "SDK_TEST_TOKEN": SECRET,
        "CARGO_HOME": os.environ.get("CARGO_HOME", str(Path.home() / ".cargo")),
        "RUSTUP_HOME": os.environ.get("RUSTUP_HOME", str(Path.home() / ".rustup")),
    }


def tw(env: dict, *args: str, cwd: Path | None = None, timeout: int = 600):
    return subprocess.run([str(BINARY), *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


class Host:
    """A workspace, plugins and state directory with one plugin in it."""

    def __init__(self, root: Path, wasm: Path, env: dict):
        self.root = root
        self.workspace, self.plugins, self.state = (root / n for n in ("workspace", "plugins", "state"))
        for d in (self.workspace, self.plugins, self.state):
            d.mkdir(parents=True)
        shutil.copy(wasm, self.plugins / "sdk_examples.wasm")
        (self.workspace / "toolwarden.toml").write_text(POLICY)
        (self.workspace / "notes.txt").write_text("first line\nsecond line\n")
        self.env = {**env, "TOOLWARDEN_PLUGINS": str(self.plugins),
                    "TOOLWARDEN_WORKSPACE": str(self.workspace), "TOOLWARDEN_STATE": str(self.state),
                    "TOOLWARDEN_TRUST_CONFIG": "1", "TOOLWARDEN_SANDBOX": "workspace-write"}

    def cli(self, *args: str):
        return tw(self.env, *args)

    def turn(self, calls: list) -> list:
        """The calls as one model turn (`toolwarden turn`): each result in full."""
        uses = [{"type": "tool_use", "id": f"t{i}", "name": tool, "input": args}
                for i, (tool, args) in enumerate(calls)]
        out = subprocess.run([str(BINARY), "turn", "-", "--json"], input=json.dumps(uses), env=self.env,
                             capture_output=True, text=True, timeout=600)
        results = {r["id"]: r["result"] for r in json.loads(out.stdout)}
        return [results[f"t{i}"] for i in range(len(calls))]


def built_with_toolwarden(example: Path, into: Path, env: dict) -> Path:
    project = into / example.name
    shutil.copytree(example, project, ignore=shutil.ignore_patterns("node_modules", "__pycache__", "*.wasm"))
    done = tw(env, "build", "--json", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["plugin"] == "sdk_examples" and report["bytes"] > 1_000_000
    return Path(report["file"])


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    assert BINARY.exists(), f"{BINARY} is missing: run `make test-build`"
    assert RUST_EXAMPLES.exists(), f"{RUST_EXAMPLES} is missing: run `cargo test --release` first"
    root = tmp_path_factory.mktemp("sdks")
    env = toolchain_env(root / "home")
    wasm = {
        "rust": RUST_EXAMPLES,
        "python": built_with_toolwarden(ROOT / "sdk" / "python" / "example", root / "py", env),
        "js": built_with_toolwarden(ROOT / "sdk" / "js" / "example", root / "js", env),
    }
    return {lang: Host(root / lang, wasm[lang], env) for lang in LANGS}


def listed(host: Host) -> dict:
    out = host.cli("list", "--json")
    assert out.returncode == 0, out.stderr
    return {t["name"]: t for t in json.loads(out.stdout)}


def published(host: Host) -> dict:
    """Every tool as the host sees it (claims, policy, network) and as an
    MCP client gets it (schemas, annotations); not the plugin's digest."""
    out = host.cli("schemas", "--format", "mcp")
    assert out.returncode == 0, out.stderr
    mcp = {t["name"]: t for t in json.loads(out.stdout)}
    return {name: {**{k: v for k, v in t.items() if k != "plugin_sha256"}, "mcp": mcp[name]}
            for name, t in listed(host).items()}


def differences(ours, theirs, at="") -> list[str]:
    """Where two JSON documents differ, as paths with both values."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return [d for k in sorted(ours.keys() | theirs.keys())
                for d in differences(ours.get(k), theirs.get(k), f"{at}/{k}")]
    return [] if ours == theirs else [f"{at}: {ours!r} != {theirs!r}"]


def test_the_three_sdks_publish_the_same_tools(hosts):
    tools = {lang: published(host) for lang, host in hosts.items()}
    assert sorted(tools["rust"]) == ["ask_greeting", "fetch_text", "greet", "greet_twice", "read_text",
                                     "save_note"]
    assert tools["rust"]["save_note"]["keyed"] is True
    assert tools["rust"]["read_text"]["mcp"]["inputSchema"]["properties"]["max_bytes"] == {
        "type": "integer", "minimum": 1, "maximum": 1048576, "default": 65536,
        "description": "Most bytes to return; `truncated` says when there was more."}
    for lang in ("python", "js"):
        assert tools[lang].keys() == tools["rust"].keys(), lang
        for name, rust in tools["rust"].items():
            assert differences(tools[lang][name], rust) == [], f"{lang} `{name}` differs from rust"
    checked = hosts["python"].cli("check")
    assert checked.returncode == 0, checked.stdout + checked.stderr


class Recorder(http.server.BaseHTTPRequestHandler):
    seen: list = []

    def do_GET(self):
        Recorder.seen.append(self.headers.get("Authorization"))
        body = b"pong from " + self.path.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def web_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_the_same_calls_give_the_same_results(hosts):
    Recorder.seen.clear()
    with web_server() as base:
        calls = [
            ("greet", {}),
            ("greet", {"name": "Ada", "excited": True}),
            ("read_text", {"path": "notes.txt", "max_bytes": 5}),
            ("read_text", {"path": "notes.txt"}),
            ("read_text", {"path": "missing.txt"}),
            ("read_text", {"path": "../escape.txt"}),
            ("greet", {"name": 5}),
            ("fetch_text", {"url": f"{base}/ping"}),
            ("ask_greeting", {"name": "Ada"}),
            ("save_note", {"path": "saved.txt", "text": "h\u00e9llo"}),
            ("greet_twice", {"name": "Ada"}),
        ]
        results = {lang: host.turn(calls) for lang, host in hosts.items()}
    rust = results["rust"]
    assert rust[0]["value"] == {"greeting": "Hello, world."}
    assert rust[1]["value"] == {"greeting": "Hello, Ada!"}
    assert rust[2]["value"] == {"path": "notes.txt", "text": "first", "truncated": True}
    assert rust[4]["error"]["code"] == "TOOL_FAILED" and rust[4]["error"]["message"].startswith("not found:")
    assert rust[5]["error"]["code"] == "GUARD_DENIED"
    assert rust[6]["error"]["code"] == "INVALID_ARGS"
    assert rust[7]["value"] == {"status": 200, "content_type": "text/plain", "text": "pong from /ping"}
    assert rust[8]["error"]["code"] == "INPUT_REQUIRED"
    assert rust[9]["value"] == {"path": "saved.txt", "bytes": 6}
    assert rust[10]["value"] == {"greetings": ["Hello, Ada.", "Hello, Ada!"]}
    for lang in ("python", "js"):
        for (tool, args), ours, theirs in zip(calls, results[lang], rust):
            if "value" in theirs:
                assert ours.get("value") == theirs["value"], f"{lang} {tool} {args}: {ours}"
                assert ours.get("content") == theirs["content"], f"{lang} {tool} {args}"
            else:
                assert ours.get("error", {}).get("code") == theirs["error"]["code"], f"{lang} {tool} {args}: {ours}"
    for lang, host in hosts.items():
        assert (host.workspace / "saved.txt").read_text() == "h\u00e9llo", lang
        # The result view the plugin gives of the call it ran (`show`).
        shown = host.cli("audit", "show", results[lang][9]["call_id"], "--json")
        assert shown.returncode == 0, shown.stderr
        view = json.loads(shown.stdout)["result"]
        assert (view["state"], view["title"], view["text"]) == ("shown", "saved saved.txt", "6 bytes"), (
            lang, view)
    missing = {lang: r[4]["error"]["message"] for lang, r in results.items()}
    assert all("missing.txt" in m and "No such file or directory" in m for m in missing.values()), missing
    # The host added the credential the tools declared; none of them held it.
    assert Recorder.seen == [f"Bearer {SECRET}"] * 3


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_over_mcp_each_sdk_asks_and_answers_alike(hosts, anyio_backend):
    from mcp import Client, StdioServerParameters, types

    answers = {}
    for lang, host in hosts.items():
        asked = []

        async def formal(context, params, asked=asked):
            asked.append(params.message)
            return types.ElicitResult(action="accept", content={"style": "formal"})

        server = StdioServerParameters(command=str(BINARY), args=["serve"], env=host.env)
        async with Client(server, elicitation_callback=formal) as client:
            greeted = await client.call_tool("ask_greeting", {"name": "Ada"})
            assert greeted.is_error is False, (lang, greeted.content)
            plain = await client.call_tool("greet", {"name": "Bo"})
            answers[lang] = (greeted.structured_content, plain.structured_content, len(asked))
            # A keyed tool's repeat in the session is answered from the record.
            note = {"path": "keyed.txt", "text": lang}
            first = await client.call_tool("save_note", note)
            again = await client.call_tool("save_note", note)
            assert first.is_error is False and again.is_error is False, (lang, first.content)
            replayed = (again.meta or {}).get("toolwarden", {}).get("replayed_from")
            assert replayed and replayed == (first.meta or {}).get("toolwarden", {}).get("call_id"), (
                lang, again.meta, first.meta)
        assert asked and asked[0].endswith("How should I greet Ada?"), (lang, asked)
    assert answers["rust"] == ({"greeting": "Good day, Ada.", "style": "formal"}, {"greeting": "Hello, Bo."}, 1)
    assert answers["python"] == answers["rust"] and answers["js"] == answers["rust"]


ASK_POLICY = """
[[rule]]
tools = ["save_note"]
decision = "ask"
reason = "writes need a person"
"""


def test_the_approval_shows_each_plugins_preview_alike(hosts, tmp_path):
    previews = {}
    for lang, host in hosts.items():
        # Another project on the same host: its state (and compiled code) shared.
        workspace = tmp_path / lang
        workspace.mkdir()
        (workspace / "toolwarden.toml").write_text(ASK_POLICY)
        env = {**host.env, "TOOLWARDEN_WORKSPACE": str(workspace)}
        asked = tw(env, "call", "save_note", json.dumps({"path": "a.txt", "text": "hi"}), "--json")
        pending = json.loads(asked.stdout)
        assert pending["status"] == "pending_approval", (lang, pending)
        shown = tw(env, "approvals", "show", pending["approval_id"], "--json")
        preview = json.loads(shown.stdout)["preview"]
        previews[lang] = (preview["view"], preview["title"], preview["text"])
        assert not (workspace / "a.txt").exists(), lang
    # Each plugin calls other tools (`greet_twice`), so the host cannot
    # rehearse its writes and shows the plugin's own preview, saying so.
    view, title, text = previews["rust"]
    assert view == "diff" and title.endswith("the plugin's own account: write a.txt"), title
    assert "+hi" in text
    assert previews["python"] == previews["rust"] and previews["js"] == previews["rust"], previews


def test_the_kept_0_1_0_plugin_loads_beside_an_sdk_plugin(hosts):
    host = hosts["python"]
    shutil.copy(KEPT, host.plugins / "contract_v0_1.wasm")
    try:
        names = listed(host)
        assert "greet" in names and any(n not in ("greet", "read_text", "fetch_text", "ask_greeting") for n in names)
    finally:
        (host.plugins / "contract_v0_1.wasm").unlink()


def scaffolded(tmp_path: Path, lang: str) -> tuple[Path, dict]:
    """`toolwarden new --lang LANG word_count`, its own tests run, then
    `build` and `check`: the project and the environment of a host whose
    workspace allows the tool."""
    env = toolchain_env(tmp_path / "home")
    created = tw(env, "new", "word_count", "--lang", lang, cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    assert "toolwarden build" in created.stdout
    project = tmp_path / "word_count"
    if lang == "js":
        # What `npm install` gives the project: the SDK it names, by path.
        sdk = json.loads((project / "package.json").read_text())["dependencies"]["toolwarden-plugin"]
        (project / "node_modules").mkdir()
        (project / "node_modules" / "toolwarden-plugin").symlink_to(sdk.removeprefix("file:"))
        tests = subprocess.run(["node", "--test"], cwd=project, capture_output=True, text=True)
    else:
        sdk = next((tmp_path / "home" / ".local" / "share" / "toolwarden" / "sdk").glob("python-*"))
        tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project,
                               env={**os.environ, "PYTHONPATH": str(sdk)}, capture_output=True, text=True)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    built = tw(env, "build", cwd=project)
    assert built.returncode == 0, built.stdout + built.stderr
    wasm = project / "word_count.wasm"
    assert wasm.exists() and f"built {wasm}" in built.stdout
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "toolwarden.toml").write_text(
        '[[rule]]\ntools = ["word_count"]\ndecision = "allow"\nreason = "pure word counting"\n')
    env = {**env, "TOOLWARDEN_WORKSPACE": str(workspace), "TOOLWARDEN_TRUST_CONFIG": "1",
           "TOOLWARDEN_PLUGINS": str(tmp_path / "plugins")}
    checked = tw(env, "check", str(wasm))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # Built against the world its tools need: no network, no child calls
    # (a plugin importing `compose` could not have its writes rehearsed).
    inspected = tw(env, "inspect", str(wasm), "--json")
    imports = json.loads(inspected.stdout)["imports"]
    assert not [i for i in imports if "compose" in i or i.startswith("wasi:http")], imports
    return project, env


def counted(env: dict, args: str) -> dict:
    called = tw(env, "call", "word_count", args, "--json")
    assert called.returncode == 0, called.stdout + called.stderr
    return json.loads(called.stdout)["value"]


def test_new_build_check_install_call_in_js(tmp_path):
    project, env = scaffolded(tmp_path, "js")
    installed = tw(env, "install", str(project / "word_count.wasm"))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert counted(env, "{}") == {"words": 0}
    assert counted(env, '{"text": "one two three"}') == {"words": 3}


@pytest.mark.parametrize("lang,missing,install", [
    ("python", "componentize-py", "pip install componentize-py==0.25.1"),
    ("js", "esbuild", "npm install"),
])
def test_build_without_the_toolchain_says_what_to_install(tmp_path, lang, missing, install):
    env = toolchain_env(tmp_path / "home", path="/usr/bin:/bin")
    assert tw(env, "new", "word_count", "--lang", lang, cwd=tmp_path).returncode == 0
    built = tw(env, "build", "--json", cwd=tmp_path / "word_count")
    assert built.returncode != 0
    error = json.loads(built.stdout)["error"]
    assert error["code"] == "BUILD" and missing in error["message"], error
    assert install in error["hint"], error
    assert not (tmp_path / "word_count" / "word_count.wasm").exists()


def test_build_outside_a_project_names_the_manifests(tmp_path):
    built = tw(toolchain_env(tmp_path / "home"), "build", "--json", cwd=tmp_path)
    error = json.loads(built.stdout)["error"]
    assert error["code"] == "BUILD" and "pyproject.toml" in error["message"]
    assert "toolwarden new" in error["hint"]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_new_build_check_then_dev_in_python_into_a_running_server(tmp_path, anyio_backend):
    import anyio
    from mcp import ClientSession, StdioServerParameters, types
    from mcp.client.stdio import stdio_client

    project, env = scaffolded(tmp_path, "python")
    installed = Path(env["TOOLWARDEN_PLUGINS"]) / "word_count.wasm"
    dev = subprocess.Popen([str(BINARY), "dev"], cwd=project, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    changed = anyio.Event()

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    try:
        await until(lambda: installed.exists(), 300, dev)
        first = installed.stat().st_mtime_ns
        assert counted(env, "{}") == {"words": 0}
        assert counted(env, '{"text": "one two three"}') == {"words": 3}
        server = StdioServerParameters(command=str(BINARY), args=["serve"], env=env)
        async with stdio_client(server) as (r, w), ClientSession(r, w, message_handler=on_message) as session:
            await session.initialize()
            (before,) = (await session.list_tools()).tools
            assert before.description.startswith("Counts the words in a text.")
            app = project / "app.py"
            app.write_text(app.read_text().replace("Counts the words in a text.", "Counts words, edited."))
            await until(lambda: installed.stat().st_mtime_ns != first, 300, dev)
            with anyio.fail_after(60):
                await changed.wait()
            (after,) = (await session.list_tools()).tools
            assert after.description.startswith("Counts words, edited."), after.description
            done = await session.call_tool("word_count", {"text": "a b"})
            assert done.structured_content == {"words": 2}
    finally:
        dev.terminate()
        output = dev.communicate(timeout=10)[0]
    assert output.count("installed word_count.wasm") == 2, output


async def until(condition, seconds: float, process) -> None:
    import anyio

    with anyio.fail_after(seconds):
        while not condition():
            assert process.poll() is None, process.communicate()[0]
            await anyio.sleep(0.2)
