"""The component's exports: import them into the module componentize-py builds.

    from toolwarden_plugin.component import Keyed, Present, Show, Tool

componentize-py looks for one class per exported interface in that module.
Only a build has the bindings they are made of (``wit_world``); in plain
CPython (pytest, ``python -m toolwarden_plugin.describe``) the names are
None, so the same module runs in both.
"""

try:
    from ._exports import Keyed, Present, Show, Tool
except ModuleNotFoundError as missing:
    if (missing.name or "").partition(".")[0] not in ("wit_world", "componentize_py_types"):
        raise
    Keyed = Present = Show = Tool = None

__all__ = ["Keyed", "Present", "Show", "Tool"]
