"""`{{name}}`: a toolwarden plugin in Python.

Change the function, its type hints and its docstring, then `toolwarden
build`. The host reads the schema derived from the type hints, checks every
call's arguments against it, and governs the call before the function runs.
"""

from typing import TypedDict

from toolwarden_plugin import Context, tool


class Counted(TypedDict):
    words: int


@tool(effects=["read-only", "idempotent"], risk="safe", timeout_ms=1000)
def {{name}}(text: str = "", ctx: Context = None) -> Counted:
    """Counts the words in a text. Use it when an exact word count matters;
    not for characters or lines.

    Args:
        text: The text whose words to count.
    """
    ctx.log("debug", "counting words")
    return {"words": len(text.split())}


# The component's exports: componentize-py finds them here.
from toolwarden_plugin.component import Keyed, Present, Show, Tool  # noqa: E402,F401
