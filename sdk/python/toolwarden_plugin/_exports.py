"""The component's exports, made only inside a componentize-py build
(see ``component``): they turn the host's calls into calls of the tools
defined with ``@tool``, and the SDK's values into the contract's."""

import json
import traceback

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import present as wit_present
from wit_world.exports import tool as wit
from wit_world.imports import host

from . import Content, Context, Definition, Presentation, ToolError, definitions

__all__ = ["Keyed", "Present", "Show", "Tool"]

_EFFECTS = {
    "read-only": wit.Effects.READ_ONLY,
    "mutates-workspace": wit.Effects.MUTATES_WORKSPACE,
    "exclusive": wit.Effects.EXCLUSIVE,
    "stateful": wit.Effects.STATEFUL,
    "idempotent": wit.Effects.IDEMPOTENT,
    "open-world": wit.Effects.OPEN_WORLD,
}


def _enum(kind, value: str):
    return getattr(kind, value.replace("-", "_").upper())


def _spec(d: Definition) -> wit.ToolSpec:
    effects = wit.Effects(0)
    for effect in d.effects:
        effects |= _EFFECTS[effect]
    network = None
    if d.origins:
        network = wit.NetworkNeed(origins=list(d.origins), credentials=list(d.credentials))
    return wit.ToolSpec(
        name=d.name,
        title=d.title,
        description=d.description,
        input_schema=json.dumps(d.input_schema),
        output_schema=None if d.output_schema is None else json.dumps(d.output_schema),
        effects=effects,
        risk=_enum(wit.Risk, d.risk),
        filesystem=_enum(wit.Filesystem, d.filesystem),
        timeout_ms=d.timeout_ms,
        network=network,
    )


def _block(c: Content):
    if c.kind == "text":
        return wit.ContentBlock_Text(c.text or "")
    if c.kind == "image":
        return wit.ContentBlock_Image(wit.Media(mime_type=c.mime_type, data=c.data))
    if c.kind == "audio":
        return wit.ContentBlock_Audio(wit.Media(mime_type=c.mime_type, data=c.data))
    if c.kind == "resource-link":
        return wit.ContentBlock_ResourceLink(wit.ResourceLink(
            uri=c.uri, name=c.name, mime_type=c.mime_type, description=c.description))
    contents = (wit.ResourceContents_Text(c.text) if c.text is not None
                else wit.ResourceContents_Blob(c.data))
    return wit.ContentBlock_Embedded(wit.EmbeddedResource(
        uri=c.uri, mime_type=c.mime_type, contents=contents))


def _error(e: ToolError):
    message = str(e)
    if e.kind == "invalid-args":
        return wit.ToolError_InvalidArgs(message)
    if e.kind == "not-found":
        return wit.ToolError_NotFound(message)
    return wit.ToolError_Failed(message)


def _presentation(p: Presentation | None):
    if p is None:
        return None
    return wit_present.Presentation(view=_enum(wit_present.View, p.view), title=p.title,
                                    path=p.path, body=p.body)


def _named(name: str) -> Definition | None:
    return next((d for d in definitions() if d.name == name), None)


def _context(ctx: wit.CallContext) -> Context:
    return Context(ctx.call_id, ctx.session_id, ctx.workspace, attached=True)


def _logged(run):
    """Runs ``run``; an exception that is not a tool error is a defect: its
    traceback goes to the host's log before the call traps, so the author
    sees where."""
    try:
        return run()
    except (Err, ToolError):
        raise
    except BaseException:
        host.log(host.Level.ERROR, traceback.format_exc())
        raise


class Tool(exports.Tool):
    def tools(self):
        return [_spec(d) for d in definitions()]

    def invoke(self, name, args_json, ctx):
        d = _named(name)
        if d is None:
            raise Err(wit.ToolError_NotFound(f"this plugin has no tool `{name}`"))
        try:
            out = _logged(lambda: d.call(args_json, _context(ctx)))
        except ToolError as e:
            raise Err(_error(e)) from None
        return wit.ToolOutput(value=out.value, text=out.text,
                              content=[_block(c) for c in out.content])


class Keyed(exports.Keyed):
    def keyed_tools(self):
        return [d.name for d in definitions() if d.keyed]


class Present(exports.Present):
    def preview(self, name, args_json, ctx):
        d = _named(name)
        if d is None:
            return None
        return _presentation(_logged(lambda: d.presentation(args_json, _context(ctx))))


class Show(exports.Show):
    def show_result(self, name, args_json, value_json):
        d = _named(name)
        if d is None:
            return None
        return _presentation(_logged(lambda: d.result_view(args_json, value_json)))
