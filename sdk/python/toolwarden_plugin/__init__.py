"""Write toolwarden tools in Python: a tool is a typed function.

    from toolwarden_plugin import tool

    @tool(effects=["read-only", "idempotent"], risk="safe")
    def greet(name: str = "world") -> dict:
        \"\"\"Greets someone by name.

        Args:
            name: Who to greet.
        \"\"\"
        return {"greeting": f"Hello, {name}!"}

    from toolwarden_plugin.component import Tool, Keyed, Present, Show  # the exports

The input schema comes from the parameters' type hints (descriptions from the
docstring's ``Args:``), the output schema from the return type; the host
checks every call's arguments against it before the function runs, and its
result after. ``toolwarden build`` turns the module into a component with
componentize-py; ``python -m toolwarden_plugin.describe app`` prints what the
host will read. Everything here runs in plain CPython too, so tools are
tested with pytest: ``greet.call('{"name": "Ada"}')``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
from typing import Any, Callable, Iterable, Literal, Optional

from . import schema as _schema
from .schema import Field, SchemaError, WebUrl, WorkspacePath

# The host's services, imported when this module is, so that
# componentize-py's build (which runs the module and keeps what it imported)
# holds them: a component cannot import a module later. Absent in CPython.
try:
    from componentize_py_types import Err as _Err
    from wit_world.imports import ask as _ask
    from wit_world.imports import host as _host
except ImportError:
    _Err = _ask = _host = None
# Only in a plugin one of whose tools declares `calls_tools=True`.
try:
    from wit_world.imports import compose as _compose
except ImportError:
    _compose = None

__all__ = [
    "Answer", "ChildError", "ChildOutput", "Content", "Context", "Definition", "Failed",
    "Field", "InvalidArgs", "NotFound", "Output", "Presentation", "Reply", "SchemaError",
    "ToolError", "WebUrl", "WorkspacePath", "audio", "definitions", "embedded", "image",
    "resource_link", "tool",
]

EFFECTS = ("read-only", "mutates-workspace", "exclusive", "stateful", "idempotent", "open-world")
RISKS = ("safe", "normal", "dangerous")
FILESYSTEMS = ("none", "read-only", "workspace-write")
LEVELS = ("trace", "debug", "info", "warn", "error")
VIEWS = ("terminal", "diff", "search", "read", "web", "generic")


class ToolError(Exception):
    """An expected failure the model reads and may act on. Any other
    exception is a defect in the tool: the host reports it as a crash."""

    kind = "failed"


class InvalidArgs(ToolError):
    """The arguments were well-formed but cannot be used (say why)."""

    kind = "invalid-args"


class NotFound(ToolError):
    """Something the arguments name does not exist."""

    kind = "not-found"


class Failed(ToolError):
    """The tool tried and failed (say what happened)."""

    kind = "failed"


@dataclasses.dataclass(frozen=True)
class Content:
    """One content block after the text: see :func:`image`, :func:`audio`,
    :func:`resource_link` and :func:`embedded`."""

    kind: Literal["text", "image", "audio", "resource-link", "embedded"]
    mime_type: Optional[str] = None
    data: Optional[bytes] = None
    text: Optional[str] = None
    uri: Optional[str] = None
    name: Optional[str] = None
    description: Optional[str] = None


def image(mime_type: str, data: bytes) -> Content:
    """An image (``image/png``, ``image/jpeg``, ...) for the model."""
    return Content("image", mime_type=mime_type, data=bytes(data))


def audio(mime_type: str, data: bytes) -> Content:
    """Audio (``audio/wav``, ...) for the model."""
    return Content("audio", mime_type=mime_type, data=bytes(data))


def resource_link(uri: str, name: str, mime_type: str | None = None,
                  description: str | None = None) -> Content:
    """A resource the result points to (an absolute URI), without its content."""
    return Content("resource-link", uri=uri, name=name, mime_type=mime_type,
                   description=description)


def embedded(uri: str, *, text: str | None = None, blob: bytes | None = None,
             mime_type: str | None = None) -> Content:
    """A resource with its content: ``text`` or ``blob``."""
    if (text is None) == (blob is None):
        raise ValueError("embedded() takes exactly one of `text` and `blob`")
    return Content("embedded", uri=uri, text=text, data=None if blob is None else bytes(blob),
                   mime_type=mime_type)


@dataclasses.dataclass
class Reply:
    """A result with a sentence for the model beside the JSON value, and
    content blocks after it. Return a plain value when its JSON says it all."""

    value: Any
    text: Optional[str] = None
    content: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Output:
    """What a call returned, as the host receives it."""

    value: str
    text: Optional[str]
    content: list


@dataclasses.dataclass(frozen=True)
class Presentation:
    """How a call looks to the person asked to approve it (a preview) or
    reading it back (a result view). ``view`` is one of ``terminal``,
    ``diff`` (``path`` the file, ``body`` the whole file as the call leaves
    it), ``search``, ``read``, ``web``, ``generic``."""

    view: str
    title: str
    body: str
    path: Optional[str] = None

    def __post_init__(self) -> None:
        if self.view not in VIEWS:
            raise ValueError(f"view `{self.view}` is not one of {', '.join(VIEWS)}")


@dataclasses.dataclass(frozen=True)
class Answer:
    """What the person did with a question: ``accepted`` with ``content``
    (already checked against the form), ``declined`` or ``cancelled``."""

    action: Literal["accepted", "declined", "cancelled"]
    content: Optional[dict] = None

    @property
    def accepted(self) -> bool:
        return self.action == "accepted"


@dataclasses.dataclass(frozen=True)
class ChildOutput:
    """What a child call returned: its audit id, value (parsed) and text."""

    call_id: str
    value: Any
    text: str


class ChildError(Exception):
    """Why a child call did not succeed: the host's stable ``code``
    (``POLICY_DENIED``, ``APPROVAL_REQUIRED``, ...) and a message."""

    def __init__(self, call_id: str, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.call_id = call_id
        self.code = code
        self.message = message


class Context:
    """Facts about the current call and the host's services. A tool gets
    one by taking a parameter annotated ``Context`` (it is not part of the
    schema). Outside the host (:meth:`for_test`) logging and progress go
    nowhere, nothing is cancelled, questions get the answers given, and
    child calls fail with ``HOST_ERROR``."""

    def __init__(self, call_id: str, session_id: str, workspace: str | None, *,
                 attached: bool, answers: dict | None = None) -> None:
        self.call_id = call_id
        self.session_id = session_id
        self.workspace = workspace
        self._attached = attached and _host is not None
        self._answers = dict(answers or {})

    @classmethod
    def for_test(cls, workspace: str | None = None,
                 answers: dict[str, Answer] | None = None) -> "Context":
        """A context for tests run in plain CPython: ``workspace`` stands in
        for the granted one; ``answers`` answers questions by key (others
        are ``cancelled``)."""
        return cls("test-call", "test-session", workspace, attached=False, answers=answers)

    def path(self, relative: str) -> str:
        """``relative`` (a :class:`WorkspacePath` argument) joined onto the
        workspace this call was granted. The sandbox keeps every access
        inside the workspace whatever the path says."""
        if self.workspace is None:
            raise Failed("no workspace was granted to this call; the tool must declare "
                         "a filesystem need")
        return f"{self.workspace.rstrip('/')}/{relative}"

    def log(self, level: str, message: str) -> None:
        """Writes a line to the host's log, tagged with the plugin and call."""
        if level not in LEVELS:
            raise ValueError(f"log level `{level}` is not one of {', '.join(LEVELS)}")
        if self._attached:
            _host.log(getattr(_host.Level, level.upper()), message)

    def progress(self, done: int, total: int | None = None, message: str | None = None) -> None:
        """Reports progress: ``done`` out of ``total`` (if known)."""
        if self._attached:
            _host.progress(done, total, message)

    def cancelled(self) -> bool:
        """True once the caller cancelled this call: return early."""
        return self._attached and _host.cancelled()

    def ask(self, key: str, message: str, form: dict) -> Answer:
        """Asks the person ``message`` with ``form``, the JSON Schema of a
        flat object (the MCP elicitation subset). The first time, the call
        stops here; once answered it runs again from the start with the
        answer at hand, so ask with the same key each run, before changing
        anything."""
        if not self._attached:
            return self._answers.get(key, Answer("cancelled"))
        return _answer(_ask.question(key, message, json.dumps(form)))

    def ask_all(self, questions: Iterable[tuple[str, str, dict]]) -> list[Answer]:
        """Several questions at once, each ``(key, message, form)``; the
        answers in the order asked."""
        questions = list(questions)
        if not self._attached:
            return [self._answers.get(key, Answer("cancelled")) for key, _, _ in questions]
        queries = [_ask.Query(key=k, message=m, form=json.dumps(f)) for k, m, f in questions]
        return [_answer(a) for a in _ask.questions(queries)]

    def call_tool(self, name: str, args: dict) -> ChildOutput:
        """Calls another tool through the host, governed as a call of its
        own (policy, approval, its own sandbox, audit). Raises
        :class:`ChildError` when it does not succeed. The tool must declare
        ``calls_tools=True``."""
        if not self._attached:
            raise ChildError("", "HOST_ERROR", "no host to call tools through: this context "
                             "is for tests")
        if _compose is None:
            raise ChildError("", "HOST_ERROR", "this plugin was built without calling other "
                             "tools: declare `calls_tools=True` on the tool, then build again")
        try:
            out = _compose.call_tool(name, json.dumps(args))
        except _Err as e:
            raise ChildError(e.value.call_id, e.value.code, e.value.message) from None
        return ChildOutput(out.call_id, json.loads(out.value), out.text)


def _answer(answer: Any) -> Answer:
    kind = type(answer).__name__.removeprefix("Answer_").lower()
    if kind == "accepted":
        return Answer("accepted", json.loads(answer.value))
    return Answer(kind)


def _names(values: Iterable[str], allowed: tuple, what: str, where: str) -> tuple:
    chosen = tuple(v.replace("_", "-") for v in values)
    for v in chosen:
        if v not in allowed:
            raise ValueError(f"{where}: {what} `{v}` is not one of {', '.join(allowed)}")
    return chosen


class Definition:
    """A tool: the function, what the host reads about it, and its
    optional preview and result view. Calling it calls the function."""

    def __init__(self, fn: Callable, *, name: str | None, title: str | None,
                 description: str | None, effects: Iterable[str], risk: str,
                 filesystem: str, timeout_ms: int | None, origins: Iterable[str],
                 credentials: Iterable[str], keyed: bool, calls_tools: bool) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        where = f"tool `{self.name}`"
        summary, docs = _schema._documented(fn)
        self.description = description or summary
        if not self.description:
            raise ValueError(f"{where}: give it a docstring or `description=`: it is what "
                             "the model reads to choose a tool")
        self.title = title or self.name
        self.effects = _names(effects, EFFECTS, "effect", where)
        (self.risk,) = _names([risk], RISKS, "risk", where)
        (self.filesystem,) = _names([filesystem], FILESYSTEMS, "filesystem", where)
        self.timeout_ms = timeout_ms
        self.origins = tuple(origins)
        self.credentials = tuple(credentials)
        if self.credentials and not self.origins:
            raise ValueError(f"{where}: credentials are sent to origins; declare `origins=`")
        self.keyed = keyed
        self.calls_tools = calls_tools
        signature = inspect.signature(fn)
        self._signature = signature
        hints = _schema._hints(fn)
        self._context_param = next(
            (n for n in signature.parameters if hints.get(n) in (Context, Optional[Context])),
            None)
        skip = {self._context_param} if self._context_param else set()
        self._hints = {n: hints[n] for n in signature.parameters if n in hints}
        self.input_schema = _schema.parameters_schema(signature, hints, docs, where, skip)
        returns = hints.get("return", inspect.Signature.empty)
        self.output_schema = (
            None if returns in (inspect.Signature.empty, Any, Reply)
            else _schema.schema_of(returns, f"{where} -> return")
        )
        self._preview: Callable | None = None
        self._show: Callable | None = None
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def preview(self, fn: Callable) -> Callable:
        """Decorates how a call looks before it runs: called like the tool
        (same arguments, ``ctx`` if it takes one), returns a
        :class:`Presentation` or None. It runs where nothing can be written."""
        self._preview = fn
        return fn

    def show(self, fn: Callable) -> Callable:
        """Decorates how a finished call looks: ``fn(args, value)`` with the
        arguments as a dict and the value as JSON data; returns a
        :class:`Presentation` or None. No filesystem, no network."""
        self._show = fn
        return fn

    def _arguments(self, args_json: str, ctx: Context) -> dict:
        try:
            raw = json.loads(args_json)
        except ValueError as e:
            raise InvalidArgs(f"arguments of `{self.name}` are not JSON: {e}") from None
        if not isinstance(raw, dict):
            raise InvalidArgs(f"arguments of `{self.name}` must be a JSON object")
        kwargs = {k: _schema.from_json(v, self._hints.get(k, Any)) for k, v in raw.items()}
        if self._context_param:
            kwargs[self._context_param] = ctx
        return kwargs

    def call(self, args_json: str = "{}", ctx: Context | None = None) -> Output:
        """Runs the tool as the host would, with ``args_json`` (assumed valid
        against the input schema, as the host guarantees)."""
        ctx = ctx or Context.for_test()
        try:
            bound = self._signature.bind(**self._arguments(args_json, ctx))
        except TypeError as e:
            raise InvalidArgs(f"invalid arguments for `{self.name}`: {e}") from None
        # A TypeError from inside the function is its defect, not the caller's.
        result = self.fn(*bound.args, **bound.kwargs)
        reply = result if isinstance(result, Reply) else Reply(result)
        # Compact, as serde_json and JSON.stringify write it: the host shows
        # this text to a model when the tool gives no sentence of its own.
        value = json.dumps(_schema.to_json(reply.value), separators=(",", ":"), ensure_ascii=False)
        return Output(value, reply.text, list(reply.content))

    def presentation(self, args_json: str, ctx: Context | None = None) -> Presentation | None:
        if self._preview is None:
            return None
        kwargs = self._arguments(args_json, ctx or Context.for_test())
        accepted = inspect.signature(self._preview).parameters
        return self._preview(**{k: v for k, v in kwargs.items() if k in accepted})

    def result_view(self, args_json: str, value_json: str) -> Presentation | None:
        if self._show is None:
            return None
        kwargs = self._arguments(args_json, Context.for_test())
        kwargs.pop(self._context_param or "", None)
        return self._show(kwargs, json.loads(value_json))

    def spec(self) -> dict:
        """What the host reads about this tool, as JSON data."""
        network = None
        if self.origins:
            network = {"origins": list(self.origins), "credentials": list(self.credentials)}
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "input_schema": self.input_schema,
            "output_schema": self.output_schema,
            "effects": list(self.effects),
            "risk": self.risk,
            "filesystem": self.filesystem,
            "timeout_ms": self.timeout_ms,
            "network": network,
            "keyed": self.keyed,
            "calls_tools": self.calls_tools,
        }


_DEFINITIONS: dict[str, Definition] = {}


def definitions() -> list[Definition]:
    """Every tool defined so far, in the order defined."""
    return list(_DEFINITIONS.values())


def tool(fn: Callable | None = None, *, name: str | None = None, title: str | None = None,
         description: str | None = None, effects: Iterable[str] = (), risk: str = "normal",
         filesystem: str = "none", timeout_ms: int | None = None,
         origins: Iterable[str] = (), credentials: Iterable[str] = (),
         keyed: bool = False, calls_tools: bool = False) -> Any:
    """Makes a typed function a tool.

    ``name`` defaults to the function's, ``description`` to its docstring
    (what the model reads to choose: say when to use it and when not).
    ``effects`` lists what it does to the world (``read-only``,
    ``mutates-workspace``, ``exclusive``, ``stateful``, ``idempotent``,
    ``open-world``); ``risk`` is ``safe``, ``normal`` or ``dangerous``;
    ``filesystem`` is ``none``, ``read-only`` or ``workspace-write``;
    ``origins`` the ``scheme://host[:port]`` it sends requests to and
    ``credentials`` the operator-held secrets those requests need;
    ``keyed`` makes a repeated call take effect once; ``calls_tools`` lets
    it call other tools (``ctx.call_tool``), which builds the plugin with
    the ``compose`` import: the host then cannot rehearse the writes of any
    of its tools for an approval. Leaving a claim out
    is the conservative default: no effects, ``normal`` risk, no
    filesystem, no network.
    """

    def define(fn: Callable) -> Definition:
        definition = Definition(fn, name=name, title=title, description=description,
                                effects=effects, risk=risk, filesystem=filesystem,
                                timeout_ms=timeout_ms, origins=origins,
                                credentials=credentials, keyed=keyed,
                                calls_tools=calls_tools)
        if definition.name in _DEFINITIONS:
            raise ValueError(f"two tools are named `{definition.name}`: names must be unique")
        _DEFINITIONS[definition.name] = definition
        return definition

    return define(fn) if fn is not None else define
