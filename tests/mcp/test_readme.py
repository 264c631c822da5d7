"""The README's quick start, run the way a new user would: a fresh HOME, the
binary installed to a prefix with `make install`, every command of the
README's runnable blocks in order, and then the `mcp-config` snippet started
from `/` by the official Python SDK's stdio client with its default (minimal)
environment.

A renamed flag or a changed output breaks this test, not the reader.
"""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- the commands below run in `make test`"
APPROVAL = re.compile(r"approvals approve ([A-Za-z0-9_-]+)")


# The pages whose marked blocks run, in this order, in one shell: each goes
# on from where the one before left (the README's project, its approvals).
RUNNABLE_PAGES = ["README.md", "docs/approvals.md", "docs/policy.md", "docs/authoring.md"]


def runnable_blocks(text: str) -> list[list[str]]:
    """The blocks that follow the marker: a ```sh block's commands, one per
    line; a ```toml block is what a person adds to ./toolwarden.toml."""
    blocks = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith(MARKER):
            continue
        fence = lines[i + 1]
        assert fence in ("```sh", "```toml"), f"the marker on line {i + 1} is not followed by a sh or toml block"
        body = []
        for command in lines[i + 2 :]:
            if command == "```":
                break
            body.append(command)
        if fence == "```toml":
            body = ["cat >> toolwarden.toml <<'TOML'\n" + "\n".join(body) + "\nTOML"]
        blocks.append(body)
    return blocks


def expected_exit(command: str) -> int:
    """`# exit 3: ...` in a command's comment says how it ends; else 0."""
    comment = command.split("  #", 1)[1] if "  #" in command else ""
    found = re.search(r"exit (\d)", comment)
    return int(found.group(1)) if found else 0


@pytest.fixture
def person(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    prefix = home / ".local"
    env = {
        "HOME": str(home),
        "PATH": f"{prefix / 'bin'}:{os.environ['PATH']}",
        "CARGO_HOME": os.environ.get("CARGO_HOME", str(Path.home() / ".cargo")),
        "RUSTUP_HOME": os.environ.get("RUSTUP_HOME", str(Path.home() / ".rustup")),
        # Where cargo puts what it builds: the scaffold's dependencies are
        # compiled once per run, here or by tests/all/authoring.rs (the
        # same scaffold, built by the same commands); the commands are the
        # docs' own.
        "CARGO_TARGET_DIR": str(ROOT / "target" / "scaffold"),
    }
    # `-o build`: the tests already built target/release/toolwarden (with
    # the test features); `make install` alone would build it once more.
    installed = subprocess.run(
        ["make", "-o", "build", "install", f"PREFIX={prefix}"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert (prefix / "bin" / "toolwarden").exists()
    assert (prefix / "share" / "man" / "man1" / "toolwarden.1").exists()
    monkeypatch.setenv("HOME", str(home))
    return env


def test_the_readme_is_a_door(person):
    """The README's quick start, then the runnable examples of the docs (an
    approval by hand, the trust commands, a plugin written, built, checked,
    installed and called) in a fresh HOME, as a person would type them."""
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= 15 * 1024, f"README.md is {len(text.encode())} bytes"
    blocks = runnable_blocks(text)
    assert len(blocks) >= 2, "the quick start and the approval walk-through"
    for page in RUNNABLE_PAGES[1:]:
        found = runnable_blocks((ROOT / page).read_text())
        assert found, f"{page} has no runnable block"
        blocks += found
    marked = [p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md") if MARKER in p.read_text()]
    assert sorted(marked) == sorted(RUNNABLE_PAGES[1:]), "a marked page is missing from RUNNABLE_PAGES"
    shell = subprocess.Popen(
        ["bash", "--norc", "--noprofile"],
        cwd=ROOT,
        env=person,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    approval = None
    transcript = []

    def run(command: str) -> tuple[int, str]:
        # One shell for the whole walk-through, as a person's terminal: `cd`
        # and variables carry over. Each command's output ends at a marker
        # line carrying its exit code.
        shell.stdin.write(f"{command}\necho \"@@exit $?\"\n")
        shell.stdin.flush()
        out = []
        for line in shell.stdout:
            if line.startswith("@@exit "):
                return int(line.split()[1]), "".join(out)
            out.append(line)
        raise AssertionError("the shell ended:\n" + "".join(out))

    for block in blocks:
        for command in block:
            if command.strip() == "" or command.lstrip().startswith("#"):
                continue
            if "APPROVAL_ID" in command:
                assert approval, f"no approval id was printed before `{command}`"
                command = command.replace("APPROVAL_ID", approval)
            code, out = run(command)
            transcript.append(f"$ {command}\n{out}(exit {code})")
            assert code == expected_exit(command), "\n".join(transcript)
            found = APPROVAL.findall(out)
            if found:
                approval = found[-1]
    shell.stdin.close()
    shell.wait()
    whole = "\n".join(transcript)
    assert "42" in whole, whole
    assert "first draft" in whole, whole
    assert (Path(person["HOME"]) / "demo" / "notes.txt").read_text() == "reviewed", whole
    assert '"words": 3' in whole or '"words":3' in whole, whole


@pytest.mark.anyio
async def test_the_mcp_config_starts_from_the_root_with_a_minimal_environment(person):
    home = Path(person["HOME"])
    project = home / "project"
    project.mkdir()
    binary = home / ".local" / "bin" / "toolwarden"
    wasm = ROOT / "target" / "wasm" / "wasm32-wasip2" / "guest" / "calc.wasm"

    def tw(*args, cwd=project):
        done = subprocess.run([binary, *args], cwd=cwd, env=person, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    tw("init")
    tw("install", str(wasm))
    snippet = json.loads(
        tw("--workspace", str(project), "mcp-config", "--client", "claude-desktop", "--json", cwd="/")
    )
    server = snippet["mcpServers"]["toolwarden"]
    params = StdioServerParameters(
        command=server["command"], args=server["args"], env=server["env"], cwd="/"
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            assert "calc" in [t.name for t in tools.tools]
            result = await session.call_tool("calc", {"op": "mul", "a": 6, "b": 7})
            assert not result.is_error, result
            assert "42" in json.dumps(result.model_dump(mode="json"))


def anchors(markdown: str) -> set[str]:
    """GitHub's anchors for a page's headings (code blocks skipped)."""
    found, in_code = set(), False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def test_every_link_between_the_pages_leads_somewhere():
    pages = [ROOT / "README.md", ROOT / "SECURITY.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text()):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


BINARY = ROOT / "target" / "release" / "toolwarden"


def shown_commands(text: str):
    """Every `toolwarden ...` command line inside a ```sh block, as words."""
    import shlex

    in_sh = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_sh = line.strip() in ("```sh", "```bash", "```console")
            continue
        if not in_sh:
            continue
        for part in re.split(r"&&|\|", line):
            part = part.strip().removeprefix("$ ")
            if part.startswith("toolwarden "):
                try:
                    yield shlex.split(part, comments=True)
                except ValueError:
                    yield part.split()


def parses(words: list[str]) -> str | None:
    """Asks the real CLI whether it takes `words`: with `--help` added, clap
    checks the command and subcommand names and every flag before the help,
    and prints the help (exit 0) only when all of them exist. Returns what
    it said otherwise, or None."""
    done = subprocess.run([BINARY, *words[1:], "--help"], capture_output=True, text=True)
    if done.returncode == 0:
        return None
    return (done.stderr or done.stdout).strip().splitlines()[0]


def test_every_command_the_docs_show_is_one_the_cli_takes():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    wrong, seen = [], 0
    for page in pages:
        for words in shown_commands(page.read_text()):
            seen += 1
            problem = parses(words)
            if problem:
                wrong.append(f"{page.relative_to(ROOT)}: {' '.join(words)}: {problem}")
    assert seen > 40, f"only {seen} commands found: is the parser still reading the docs?"
    assert not wrong, "\n".join(wrong)


@pytest.mark.anyio
async def test_a_client_that_starts_it_without_a_workspace_is_told_why(person):
    """Started from `/` with no workspace (a client configured by hand), the
    server answers the client's initialize with the reason and the fix,
    instead of a closed connection."""
    from mcp.shared.exceptions import MCPError

    binary = Path(person["HOME"]) / ".local" / "bin" / "toolwarden"
    params = StdioServerParameters(command=str(binary), args=["serve"], cwd="/")
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            with pytest.raises(MCPError) as refused:
                await session.initialize()
    message = str(refused.value)
    assert "not a project folder" in message and "--workspace" in message, message
