"""The Python SDK in plain CPython: schemas from type hints, calls, errors.

The same module's tools run inside a component in
tests/python_plugin/test_sdks.py; here is what the SDK derives and does
before any WebAssembly is involved.
"""

import dataclasses
import enum
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Annotated, Literal, Optional, TypedDict

import pytest

SDK = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(SDK))

import toolwarden_plugin as sdk  # noqa: E402
from toolwarden_plugin import (  # noqa: E402
    Answer, Context, Field, InvalidArgs, Presentation, Reply, SchemaError, WebUrl,
    WorkspacePath, tool,
)
from toolwarden_plugin.http import HttpError, split  # noqa: E402
from toolwarden_plugin.schema import schema_of  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_registry():
    saved = dict(sdk._DEFINITIONS)
    sdk._DEFINITIONS.clear()
    yield
    sdk._DEFINITIONS.clear()
    sdk._DEFINITIONS.update(saved)


def test_scalars_optionals_and_literals():
    assert schema_of(str, "x") == {"type": "string"}
    assert schema_of(int, "x") == {"type": "integer"}
    assert schema_of(float, "x") == {"type": "number"}
    assert schema_of(bool, "x") == {"type": "boolean"}
    assert schema_of(Optional[int], "x") == {"type": ["integer", "null"]}
    assert schema_of(Literal["a", "b"], "x") == {"type": "string", "enum": ["a", "b"]}
    assert schema_of(Optional[Literal["a", "b"]], "x") == {
        "type": ["string", "null"], "enum": ["a", "b", None]}
    assert schema_of(Optional[list[int]], "x") == {
        "anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]}
    assert schema_of(Literal[1, "a"], "x") == {"enum": [1, "a"]}
    assert schema_of(list[str], "x") == {"type": "array", "items": {"type": "string"}}
    assert schema_of(dict[str, int], "x") == {
        "type": "object", "additionalProperties": {"type": "integer"}}
    assert schema_of(tuple[int, str], "x")["prefixItems"] == [
        {"type": "integer"}, {"type": "string"}]
    assert schema_of(Annotated[int, Field(minimum=1, maximum=9, description="n")], "x") == {
        "type": "integer", "minimum": 1, "maximum": 9, "description": "n"}


def test_classes_become_closed_objects_with_their_docs():
    @dataclasses.dataclass
    class Point:
        """A point.

        Attributes:
            x: Across.
            y: Down.
        """

        x: int
        y: int = 0

    class Colour(enum.Enum):
        RED = "red"
        BLUE = "blue"

    class Row(TypedDict, total=False):
        point: Point
        colour: Colour

    row = schema_of(Row, "x")
    assert row["additionalProperties"] is False and "required" not in row
    point = row["properties"]["point"]
    assert point == {
        "type": "object",
        "properties": {
            "x": {"type": "integer", "description": "Across."},
            "y": {"type": "integer", "description": "Down.", "default": 0},
        },
        "required": ["x"],
        "additionalProperties": False,
        "description": "A point.",
    }
    assert row["properties"]["colour"] == {"enum": ["red", "blue"]}
    assert "dict()" not in json.dumps(row), "an inherited docstring leaked in"


def test_a_hint_without_a_schema_is_refused_by_name():
    with pytest.raises(SchemaError, match=r"tool `bad`\(when\)"):
        @tool
        def bad(when: complex) -> str:
            """Bad."""
    with pytest.raises(SchemaError, match="needs a type hint"):
        @tool
        def untyped(x) -> str:
            """Untyped."""
    with pytest.raises(ValueError, match="docstring"):
        @tool
        def silent() -> str:
            pass
    with pytest.raises(ValueError, match="effect `writes`"):
        @tool(effects=["writes"])
        def wrong() -> str:
            """Wrong."""


def test_a_tool_is_its_function_with_a_schema_and_a_spec():
    @tool(effects=["read-only", "idempotent"], risk="safe", timeout_ms=500)
    def greet(name: str = "world", times: Annotated[int, Field(minimum=1)] = 1,
              ctx: Context = None) -> dict:
        """Greets someone.

        Args:
            name: Who to greet.
            times: How often.
        """
        return {"greeting": " ".join([f"Hello, {name}!"] * times)}

    spec = greet.spec()
    assert spec["name"] == "greet" and spec["description"] == "Greets someone."
    assert spec["input_schema"] == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Who to greet.", "default": "world"},
            "times": {"type": "integer", "minimum": 1, "description": "How often.",
                      "default": 1},
        },
        "additionalProperties": False,
    }
    assert spec["effects"] == ["read-only", "idempotent"] and spec["risk"] == "safe"
    assert greet(name="Ada") == {"greeting": "Hello, Ada!"}
    assert json.loads(greet.call().value) == {"greeting": "Hello, world!"}
    assert json.loads(greet.call('{"times": 2}').value)["greeting"].count("Hello") == 2
    assert [d.name for d in sdk.definitions()] == ["greet"]


def test_arguments_arrive_as_their_types_and_results_leave_as_json():
    @dataclasses.dataclass
    class Box:
        size: float
        tags: list[str]

    @tool
    def pack(box: Box, where: WorkspacePath, url: Optional[WebUrl] = None) -> Box:
        """Packs."""
        assert isinstance(box, Box) and isinstance(box.size, float)
        assert isinstance(where, WorkspacePath)
        return Reply(Box(box.size * 2, box.tags), text="packed")

    out = pack.call('{"box": {"size": 2, "tags": ["a"]}, "where": "x/y"}')
    assert json.loads(out.value) == {"size": 4.0, "tags": ["a"]}
    assert out.text == "packed"
    assert pack.input_schema["properties"]["where"]["format"] == "path"
    assert pack.input_schema["properties"]["url"]["anyOf"][0]["format"] == "uri"
    assert pack.output_schema["required"] == ["size", "tags"]


def test_questions_previews_and_views_outside_the_host():
    @tool(filesystem="workspace-write", effects=["mutates-workspace"])
    def save(path: WorkspacePath, text: str, ctx: Context) -> dict:
        """Saves."""
        answer = ctx.ask("sure", f"Save {path}?", {"type": "object", "properties": {}})
        if not answer.accepted:
            raise InvalidArgs("not confirmed")
        return {"saved": ctx.path(path)}

    @save.preview
    def _(path, text):
        return Presentation("diff", f"write {path}", text, path=str(path))

    @save.show
    def _(args, value):
        return Presentation("generic", f"saved {args['path']}", value["saved"])

    with pytest.raises(InvalidArgs, match="not confirmed"):
        save.call('{"path": "a.txt", "text": "hi"}')
    yes = Context.for_test("/workspace", answers={"sure": Answer("accepted", {})})
    out = save.call('{"path": "a.txt", "text": "hi"}', yes)
    assert json.loads(out.value) == {"saved": "/workspace/a.txt"}
    preview = save.presentation('{"path": "a.txt", "text": "hi"}')
    assert (preview.view, preview.path, preview.body) == ("diff", "a.txt", "hi")
    assert save.result_view('{"path": "a.txt", "text": "hi"}', out.value).body == \
        "/workspace/a.txt"
    with pytest.raises(sdk.Failed, match="no workspace"):
        Context.for_test().path("a.txt")
    with pytest.raises(ValueError, match="view"):
        Presentation("movie", "t", "b")


def test_network_claims_and_urls():
    @tool(origins=["https://api.github.com"], credentials=["github"],
          effects=["open-world"])
    def zen() -> str:
        """Zen."""
        return "ok"

    assert zen.spec()["network"] == {"origins": ["https://api.github.com"],
                                     "credentials": ["github"]}
    with pytest.raises(ValueError, match="origins"):
        @tool(credentials=["github"])
        def lost() -> str:
            """Lost."""
    assert split("https://API.github.com/repos?q=1#frag") == (
        "https", "API.github.com", "/repos?q=1")
    assert split("http://127.0.0.1:8080") == ("http", "127.0.0.1:8080", "/")
    for bad in ("ftp://x/", "https:///x", "no-scheme"):
        with pytest.raises(HttpError):
            split(bad)


def test_a_mistake_inside_the_tool_is_not_blamed_on_the_arguments():
    @tool
    def buggy(n: int = 1) -> int:
        """Buggy."""
        return len(n)

    with pytest.raises(TypeError, match="len"):
        buggy.call("{}")
    with pytest.raises(InvalidArgs, match="unexpected keyword"):
        buggy.call('{"m": 2}')


def test_two_tools_with_one_name_are_refused():
    @tool
    def twice() -> str:
        """One."""

    with pytest.raises(ValueError, match="two tools are named `twice`"):
        @tool(name="twice")
        def other() -> str:
            """Two."""


def test_the_package_builds_into_a_wheel_that_holds_every_module(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(SDK, source, ignore=shutil.ignore_patterns("tests", "example", "__pycache__"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (tmp_path / "dist").glob("toolwarden_plugin-0.2.0-py3-none-any.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {f"toolwarden_plugin/{p.name}" for p in (SDK / "toolwarden_plugin").glob("*.py")}
    assert modules and modules <= names, modules - names
