"""A plugin written in Python goes through the same pipeline as a Rust one.

Builds plugins/python-text-stats with componentize-py against wit/tool.wit,
then checks it and calls it with the release `toolwarden` binary.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BINARY = ROOT / "target" / "release" / "toolwarden"
SOURCE = ROOT / "plugins" / "python-text-stats"
COMPONENTIZE = Path(sys.executable).parent / "componentize-py"

POLICY = """
[[rule]]
tools = ["text_stats"]
decision = "allow"
reason = "pure counting"
"""


@pytest.fixture(scope="module")
def component(tmp_path_factory):
    out = tmp_path_factory.mktemp("build") / "text_stats.wasm"
    subprocess.run(
        [str(COMPONENTIZE), "-d", str(ROOT / "wit"), "-w", "plugin",
         "componentize", "-p", str(SOURCE), "app", "-o", str(out)],
        check=True,
        cwd=SOURCE,
    )
    return out


@pytest.fixture
def host(tmp_path, component):
    dirs = {name: tmp_path / name for name in ("workspace", "plugins", "state")}
    for d in dirs.values():
        d.mkdir()
    shutil.copy(component, dirs["plugins"] / "text_stats.wasm")
    (dirs["workspace"] / "toolwarden.toml").write_text(POLICY)

    def run(*args):
        return subprocess.run(
            [str(BINARY), "--plugins", str(dirs["plugins"]), "--state", str(dirs["state"]),
             "--workspace", str(dirs["workspace"]), "--trust-config", *args],
            capture_output=True, text=True, timeout=300,
        )

    return run


def test_python_plugin_loads_and_checks_clean(host):
    listed = host("list", "--json")
    assert listed.returncode == 0, listed.stderr
    tools = json.loads(listed.stdout)
    assert [t["name"] for t in tools] == ["text_stats"]
    checked = host("check")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_python_plugin_runs_governed(host):
    ok = host("call", "text_stats", '{"text": "one two\\nthree"}', "--json")
    assert ok.returncode == 0, ok.stderr
    result = json.loads(ok.stdout)
    assert result["value"] == {"lines": 2, "words": 3, "chars": 13}
    assert result["content"] == "2 lines, 3 words, 13 characters"
    bad = host("call", "text_stats", '{"text": 5}', "--json")
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["error"]["code"] == "INVALID_ARGS"
