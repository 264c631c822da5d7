"""`text_stats`: a toolwarden plugin written in Python.

Built into a WebAssembly component with componentize-py, against the same
WIT contract as the Rust plugins (`wit/tool.wit`):

    componentize-py -d ../../wit -w plugin componentize app -o text_stats.wasm

The component embeds a Python interpreter, so it is large (about 18 MB) and
its first load compiles for several seconds; the host's compile cache makes
every later start fast.
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import tool

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "text": {
            "type": "string",
            "maxLength": 100000,
            "description": "The text to measure.",
        },
    },
    "required": ["text"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "lines": {"type": "integer", "minimum": 0},
        "words": {"type": "integer", "minimum": 0},
        "chars": {"type": "integer", "minimum": 0},
    },
    "required": ["lines", "words", "chars"],
    "additionalProperties": False,
}


class Tool(exports.Tool):
    def tools(self):
        return [
            tool.ToolSpec(
                name="text_stats",
                title="Count lines, words and characters",
                description=(
                    "Counts the lines, words (whitespace-separated) and characters "
                    "(Unicode code points) of a text. Use it when exact counts matter; "
                    "not for files (read them first)."
                ),
                input_schema=json.dumps(INPUT_SCHEMA),
                output_schema=json.dumps(OUTPUT_SCHEMA),
                effects=tool.Effects.READ_ONLY | tool.Effects.IDEMPOTENT,
                risk=tool.Risk.SAFE,
                filesystem=tool.Filesystem.NONE,
                timeout_ms=2000,
                network=None,
            )
        ]

    def invoke(self, name, args_json, ctx):
        if name != "text_stats":
            raise Err(tool.ToolError_NotFound(f"this plugin has no tool `{name}`"))
        # The host already checked the arguments against INPUT_SCHEMA.
        text = json.loads(args_json)["text"]
        stats = {
            "lines": len(text.splitlines()),
            "words": len(text.split()),
            "chars": len(text),
        }
        summary = f"{stats['lines']} lines, {stats['words']} words, {stats['chars']} characters"
        return tool.ToolOutput(value=json.dumps(stats), text=summary, content=[])
