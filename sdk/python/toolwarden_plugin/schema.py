"""JSON Schemas from Python type hints, and JSON values back into those types.

A tool's input schema is derived from its function's parameters, its output
schema from its return type, fitted to the subset of JSON Schema the host
enforces (a keyword outside it is a load error there): every object is
closed with ``additionalProperties: false`` so a model learns that unknown
keys are refused, and the only ``format`` values are ``path`` and ``uri``,
which the host gives meaning to.

Understood: ``str``, ``int``, ``float``, ``bool``, ``None``, ``Literal``,
``Optional``/``X | None``, unions, ``list[X]``, ``tuple[X, ...]``,
``dict[str, X]``, dataclasses, ``TypedDict``, ``Enum``, :class:`WorkspacePath`,
:class:`WebUrl`, ``Any`` and ``Annotated[X, Field(...)]`` for descriptions and
bounds. Anything else is a :class:`SchemaError` naming the parameter, raised
when the module is imported, so a build fails instead of a call.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
import types
import typing
from typing import Any, Literal, Union

__all__ = ["Field", "SchemaError", "WorkspacePath", "WebUrl"]


class SchemaError(TypeError):
    """A type hint the SDK cannot turn into a schema the host enforces."""


class WorkspacePath(str):
    """A path relative to the workspace root.

    Its schema carries ``format: path``: the host's path guard checks it
    before the call runs, and the sandbox keeps every access inside the
    workspace regardless. ``ctx.path(p)`` joins it onto the granted workspace.
    """

    SCHEMA = {"type": "string", "format": "path", "minLength": 1, "maxLength": 4096}


class WebUrl(str):
    """An ``http(s)`` URL. Its schema carries ``format: uri``: the host reads
    it as browsers do, hands the tool that canonical form, and refuses a URL
    whose origin the call was not granted before the tool runs."""

    SCHEMA = {"type": "string", "format": "uri", "minLength": 1, "maxLength": 8192}


@dataclasses.dataclass(frozen=True)
class Field:
    """What a type hint cannot say: ``Annotated[int, Field(minimum=1)]``.

    Every bound becomes the JSON Schema keyword of the same meaning, which
    the host enforces before the tool runs.
    """

    description: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    examples: list | None = None

    def keywords(self) -> dict:
        names = {
            "description": "description",
            "minimum": "minimum",
            "maximum": "maximum",
            "min_length": "minLength",
            "max_length": "maxLength",
            "pattern": "pattern",
            "min_items": "minItems",
            "max_items": "maxItems",
            "examples": "examples",
        }
        return {
            keyword: getattr(self, attr)
            for attr, keyword in names.items()
            if getattr(self, attr) is not None
        }


_NONE = type(None)


def _hints(owner: Any) -> dict:
    try:
        return typing.get_type_hints(owner, include_extras=True)
    except Exception as e:  # a forward reference that names nothing
        raise SchemaError(f"cannot read the type hints of {owner!r}: {e}") from e


def _is_typeddict(hint: Any) -> bool:
    return isinstance(hint, type) and typing.is_typeddict(hint)


def _documented(obj: Any) -> tuple[str, dict[str, str]]:
    """A docstring's text before its first section (lines of a paragraph
    joined), and the entries of its ``Args:`` (or ``Attributes:``) section,
    Google style. A class's own docstring only: not one it inherits."""
    own = obj.__dict__.get("__doc__") if isinstance(obj, type) else obj.__doc__
    doc = inspect.cleandoc(own or "")
    summary: list[str] = []
    fields: dict[str, str] = {}
    section = None
    entry_indent = None
    current = None
    for line in doc.splitlines():
        if re.fullmatch(r"[A-Z][A-Za-z ]*:", line):
            section = line[:-1]
            entry_indent = current = None
            continue
        if section is None:
            summary.append(line)
            continue
        if section not in ("Args", "Arguments", "Parameters", "Attributes", "Fields"):
            continue
        stripped = line.strip()
        if not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        if entry_indent is None:
            entry_indent = indent
        entry = re.match(r"(\w+)(?:\s*\([^)]*\))?\s*:\s*(.*)$", stripped)
        if indent == entry_indent and entry:
            current = entry.group(1)
            fields[current] = entry.group(2)
        elif current:
            fields[current] = f"{fields[current]} {stripped}".strip()
    paragraphs = "\n".join(summary).strip().split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip()), fields


def _class_doc(cls: type) -> tuple[str, dict[str, str]]:
    summary, fields = _documented(cls)
    # A dataclass without a docstring gets one made of its signature.
    if dataclasses.is_dataclass(cls) and summary.startswith(f"{cls.__name__}("):
        summary = ""
    return summary, fields


def schema_of(hint: Any, where: str) -> dict:
    """The JSON Schema of values of type ``hint``; ``where`` names it in errors."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        schema = dict(schema_of(args[0], where))
        for extra in args[1:]:
            if isinstance(extra, Field):
                schema.update(extra.keywords())
            elif isinstance(extra, str):
                schema["description"] = extra
        return schema
    if hint is Any or hint is object:
        return {}
    if hint is _NONE or hint is None:
        return {"type": "null"}
    if isinstance(hint, type) and issubclass(hint, (WorkspacePath, WebUrl)):
        return dict(hint.SCHEMA)
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is str:
        return {"type": "string"}
    if origin is Literal:
        values = list(args)
        kinds = {_json_type(v, where) for v in values}
        schema: dict = {"enum": values}
        if len(kinds) == 1:
            schema = {"type": kinds.pop(), "enum": values}
        return schema
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [member.value for member in hint]
        for v in values:
            _json_type(v, where)
        summary, _ = _documented(hint)
        schema = {"enum": values}
        if summary and hint.__doc__ != enum.Enum.__doc__:
            schema["description"] = summary
        return schema
    if origin in (Union, types.UnionType):
        options = [schema_of(a, where) for a in args]
        if len(options) == 2 and {"type": "null"} in options:
            # `X | None` of a plain type reads best as one schema, and is what
            # the Rust SDK (schemars) publishes for an `Option`.
            other = options[0] if options[1] == {"type": "null"} else options[1]
            if isinstance(other.get("type"), str) and set(other) <= {"type", "description", "enum"}:
                nullable = {**other, "type": [other["type"], "null"]}
                if "enum" in other:
                    nullable["enum"] = [*other["enum"], None]
                return nullable
        return {"anyOf": options}
    if origin in (list, typing.List, set, frozenset) or hint in (list, set, frozenset):
        item = args[0] if args else Any
        schema = {"type": "array", "items": schema_of(item, f"{where}[]")}
        if origin in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": schema_of(args[0], f"{where}[]")}
        parts = [schema_of(a, f"{where}[{i}]") for i, a in enumerate(args)]
        return {
            "type": "array",
            "prefixItems": parts,
            "items": False,
            "minItems": len(parts),
        }
    if origin is dict or hint is dict:
        if args and args[0] is not str:
            raise SchemaError(f"{where}: JSON object keys are strings; use dict[str, ...]")
        value = args[1] if args else Any
        schema = {"type": "object"}
        if value is not Any:
            schema["additionalProperties"] = schema_of(value, f"{where}{{}}")
        return schema
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = _hints(hint)
        summary, docs = _class_doc(hint)
        properties = {}
        required = []
        for f in dataclasses.fields(hint):
            prop = dict(schema_of(hints[f.name], f"{where}.{f.name}"))
            if f.metadata.get("description"):
                prop["description"] = f.metadata["description"]
            elif f.name in docs and "description" not in prop:
                prop["description"] = docs[f.name]
            if f.default is not dataclasses.MISSING:
                if _json_safe(f.default):
                    prop["default"] = f.default
            elif f.default_factory is dataclasses.MISSING:
                required.append(f.name)
            properties[f.name] = prop
        return _object(properties, required, summary)
    if _is_typeddict(hint):
        hints = _hints(hint)
        summary, docs = _class_doc(hint)
        properties = {}
        for name, field_hint in hints.items():
            bare = field_hint
            if typing.get_origin(bare) in (typing.Required, typing.NotRequired):
                bare = typing.get_args(bare)[0]
            prop = dict(schema_of(bare, f"{where}.{name}"))
            if name in docs and "description" not in prop:
                prop["description"] = docs[name]
            properties[name] = prop
        required = [n for n in properties if n in hint.__required_keys__]
        return _object(properties, required, summary)
    raise SchemaError(
        f"{where}: the type {hint!r} has no JSON Schema here; use str, int, float, bool, "
        "Literal, Optional, list, tuple, dict[str, ...], a dataclass, a TypedDict or an Enum"
    )


def _object(properties: dict, required: list, description: str) -> dict:
    schema: dict = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    if description:
        schema["description"] = description
    return schema


def _json_type(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    raise SchemaError(f"{where}: {value!r} cannot be a JSON value")


def _json_safe(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_json_safe(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_safe(v) for k, v in value.items())
    return False


def parameters_schema(signature: inspect.Signature, hints: dict, docs: dict, where: str,
                      skip: set) -> dict:
    """The input schema of a function: one property per parameter."""
    properties = {}
    required = []
    for name, param in signature.parameters.items():
        if name in skip:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise SchemaError(f"{where}: *{name} has no schema; name every argument")
        if name not in hints:
            raise SchemaError(f"{where}: the parameter `{name}` needs a type hint")
        prop = dict(schema_of(hints[name], f"{where}({name})"))
        if name in docs and "description" not in prop:
            prop["description"] = docs[name]
        if param.default is inspect.Parameter.empty:
            required.append(name)
        elif param.default is not None and _json_safe(param.default):
            prop["default"] = param.default
        properties[name] = prop
    return _object(properties, required, "")


def from_json(value: Any, hint: Any) -> Any:
    """``value`` (already valid against ``schema_of(hint)``) as a ``hint``."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return from_json(value, args[0])
    if value is None:
        return None
    if isinstance(hint, type):
        if issubclass(hint, (WorkspacePath, WebUrl)):
            return hint(value)
        if issubclass(hint, enum.Enum):
            return hint(value)
        if hint is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if dataclasses.is_dataclass(hint):
            hints = _hints(hint)
            return hint(**{k: from_json(v, hints[k]) for k, v in value.items()})
        if _is_typeddict(hint):
            hints = _hints(hint)
            return {k: from_json(v, hints.get(k, Any)) for k, v in value.items()}
    if origin in (Union, types.UnionType):
        for option in args:
            if _fits(value, option):
                return from_json(value, option)
        return value
    if origin in (list, typing.List):
        return [from_json(v, args[0] if args else Any) for v in value]
    if origin in (set, frozenset):
        return origin(from_json(v, args[0] if args else Any) for v in value)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_json(v, args[0]) for v in value)
        return tuple(from_json(v, a) for v, a in zip(value, args))
    if origin is dict and args:
        return {k: from_json(v, args[1]) for k, v in value.items()}
    return value


def _fits(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return _fits(value, typing.get_args(hint)[0])
    if hint is _NONE:
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(hint, type) and issubclass(hint, str):
        return isinstance(value, str)
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple):
        return isinstance(value, list)
    if origin is Literal:
        return value in typing.get_args(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return value in [m.value for m in hint]
    if origin is dict or hint is dict or _is_typeddict(hint) or dataclasses.is_dataclass(hint):
        return isinstance(value, dict)
    return True


def to_json(value: Any) -> Any:
    """A tool's result as plain JSON values: dataclasses, enums and tuples unpacked."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return to_json(value.value)
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_json(v) for v in value]
    return value
