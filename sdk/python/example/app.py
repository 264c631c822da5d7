"""The SDK examples in Python: the same tools as the Rust
(tests/fixtures/sdk_examples) and JavaScript (sdk/js/example) ones.

    toolwarden build            # in this folder: example.wasm
"""

from typing import Annotated, Literal, Optional, TypedDict

from toolwarden_plugin import (
    Context, Failed, Field, NotFound, Presentation, Reply, WebUrl, WorkspacePath, tool,
)
from toolwarden_plugin.http import HttpError, fetch


class Greeting(TypedDict):
    greeting: str


@tool(effects=["read-only", "idempotent"], risk="safe", timeout_ms=1000)
def greet(name: str = "world", excited: bool = False) -> Greeting:
    """Greets someone by name. Use it to say hello; it knows nobody.

    Args:
        name: Who to greet.
        excited: End with an exclamation mark.
    """
    return {"greeting": f"Hello, {name}{'!' if excited else '.'}"}


class FileText(TypedDict):
    path: str
    text: str
    truncated: bool


@tool(effects=["read-only", "idempotent"], filesystem="read-only", timeout_ms=2000)
def read_text(path: WorkspacePath,
              max_bytes: Annotated[int, Field(minimum=1, maximum=1048576)] = 65536,
              ctx: Context = None) -> FileText:
    """Reads a UTF-8 text file in the workspace. Not for directories.

    Args:
        path: The file, relative to the workspace root.
        max_bytes: Most bytes to return; `truncated` says when there was more.
    """
    try:
        with open(ctx.path(path), "rb") as f:
            data = f.read(max_bytes + 1)
    except (FileNotFoundError, IsADirectoryError) as e:
        raise NotFound(f"`{path}`: {e.strerror}") from None
    text = data[:max_bytes].decode("utf-8", errors="replace")
    return {"path": str(path), "text": text, "truncated": len(data) > max_bytes}


class Fetched(TypedDict):
    status: Annotated[int, Field(minimum=0, maximum=65535)]
    content_type: Optional[str]
    text: str


@tool(effects=["read-only", "idempotent", "open-world"], timeout_ms=10000,
      origins=["https://api.github.com", "http://127.0.0.1:*"], credentials=["github"])
def fetch_text(url: WebUrl) -> Fetched:
    """Fetches a URL with GET (the host adds the `github` credential where
    the operator bound it) and returns its status, content type and the
    first 4096 bytes of its body as text.

    Args:
        url: The http(s) URL to fetch.
    """
    try:
        response = fetch(url, max_bytes=4096)
    except HttpError as e:
        raise NotFound(f"fetching {url}: {e}") from None
    return {"status": response.status, "content_type": response.header("content-type"),
            "text": response.text()}


FORM = {
    "type": "object",
    "properties": {"style": {"type": "string", "enum": ["formal", "casual"],
                             "title": "Style"}},
    "required": ["style"],
}


class Styled(TypedDict):
    greeting: Optional[str]
    style: Optional[Literal["formal", "casual"]]


@tool(effects=["read-only"], risk="safe", timeout_ms=2000)
def ask_greeting(name: str = "world", ctx: Context = None) -> Styled:
    """Asks the person how formal to be, then greets someone in that style.

    Args:
        name: Who to greet.
    """
    answer = ctx.ask("style", f"How should I greet {name}?", FORM)
    if not answer.accepted:
        return Reply({"greeting": None, "style": None}, text="Not greeted: no style chosen.")
    style = answer.content["style"]
    greeting = f"Good day, {name}." if style == "formal" else f"Hi {name}!"
    return {"greeting": greeting, "style": style}


class Saved(TypedDict):
    path: str
    bytes: Annotated[int, Field(minimum=0, maximum=4294967295)]


@tool(effects=["mutates-workspace", "idempotent"], filesystem="workspace-write", keyed=True,
      timeout_ms=2000)
def save_note(path: WorkspacePath, text: str, ctx: Context) -> Saved:
    """Writes a text file in the workspace, replacing it. Repeating a call changes nothing more.

    Args:
        path: The file to write, relative to the workspace root.
        text: What the file will hold.
    """
    data = text.encode()
    with open(ctx.path(path), "wb") as f:
        f.write(data)
    return {"path": str(path), "bytes": len(data)}


@save_note.preview
def _(path, text):
    return Presentation("diff", f"write {path}", text, path=str(path))


@save_note.show
def _(args, saved):
    return Presentation("generic", f"saved {saved['path']}", f"{saved['bytes']} bytes")


class Greetings(TypedDict):
    greetings: list[str]


@tool(effects=["read-only"], risk="safe", timeout_ms=5000, calls_tools=True)
def greet_twice(name: str = "world", ctx: Context = None) -> Greetings:
    """Greets someone twice, calmly then excitedly, by calling `greet`.

    Args:
        name: Who to greet.
    """
    greetings = []
    for done, excited in enumerate((False, True)):
        ctx.progress(done, 2, "greeting")
        try:
            child = ctx.call_tool("greet", {"name": name, "excited": excited})
        except Exception as e:
            raise Failed(str(e)) from None
        greetings.append(child.value["greeting"])
    ctx.log("info", "greeted twice")
    return {"greetings": greetings}


from toolwarden_plugin.component import Keyed, Present, Show, Tool  # noqa: E402,F401
