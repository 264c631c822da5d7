"""A small blocking HTTP client for tools that declare ``origins``.

Requests go out through ``wasi:http/outgoing-handler``; the host checks each
one against what the call was granted (origin, the address the name
resolves to, the per-call limits) and adds the credentials the tool
declared, which the plugin never sees. A request the host refuses raises
:class:`HttpError` with ``denied`` true. Redirects are not followed: a tool
that follows one sends a new request, which the host checks anew.

    from toolwarden_plugin.http import fetch
    response = fetch("https://api.github.com/zen", max_bytes=64 << 10)

Only a component built for the ``http-plugin`` world has these imports;
``toolwarden build`` picks that world when a tool declares ``origins``.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional

# Imported when the module is, so that componentize-py's build (which runs
# the module and keeps what it imported) holds them: a component cannot
# import a module later. Absent in plain CPython and in a component built
# without `wasi:http`.
try:
    from componentize_py_types import Err
    from wit_world.imports import outgoing_handler, streams, types
except ImportError:
    outgoing_handler = None

__all__ = ["HttpError", "Response", "fetch"]

WRITE_CHUNK = 4096
READ_CHUNK = 64 << 10


class HttpError(Exception):
    """Why a request failed. ``denied``: the host refused it (origin or
    address not granted to this call, or its network limits used up)."""

    def __init__(self, message: str, *, denied: bool = False) -> None:
        super().__init__(message)
        self.denied = denied


@dataclasses.dataclass(frozen=True)
class Response:
    status: int
    headers: list[tuple[str, bytes]]
    body: bytes
    truncated: bool

    def header(self, name: str) -> Optional[str]:
        """The first value of header ``name`` (any case), as text."""
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value.decode("latin-1")
        return None

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def split(url: str) -> tuple[str, str, str]:
    """``scheme://authority/path?query`` as the request needs it; the
    fragment is not sent."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise HttpError(f"invalid URL: `{url}` has no scheme")
    scheme = scheme.lower()
    if scheme not in ("http", "https"):
        raise HttpError(f"invalid URL: unsupported scheme `{scheme}`")
    rest = rest.split("#", 1)[0]
    end = min([i for i in (rest.find("/"), rest.find("?")) if i >= 0], default=len(rest))
    authority, path = rest[:end], rest[end:]
    if not authority:
        raise HttpError(f"invalid URL: `{url}` has no host")
    return scheme, authority, path or "/"


def _failure(code) -> HttpError:
    name = type(code).__name__.removeprefix("ErrorCode_")
    if name == "HttpRequestDenied":
        return HttpError(
            "the host denied the request (HTTP-request-denied): its origin or address is not "
            "granted to this call, or the call's network limits are used up", denied=True)
    detail = getattr(code, "value", None)
    return HttpError(f"request failed: {name}" + (f" ({detail})" if detail else ""))


def fetch(url: str, *, method: str = "GET", headers: Mapping[str, str] | None = None,
          body: bytes = b"", max_bytes: int = 1 << 20) -> Response:
    """Sends one request and reads at most ``max_bytes`` of the response body
    (``truncated`` says whether there was more)."""
    if outgoing_handler is None:
        raise HttpError("no outgoing HTTP here: declare `origins=` on the tool (then "
                        "`toolwarden build` builds the component with it); in plain Python "
                        "there is none")
    scheme, authority, path = split(url)
    pairs = [(k, v.encode()) for k, v in (headers or {}).items()]
    if body and not any(k.lower() == "content-length" for k, _ in pairs):
        pairs.append(("content-length", str(len(body)).encode()))
    try:
        fields = types.Fields.from_list(pairs)
    except Err as e:
        raise HttpError(f"invalid header: {e.value}") from None
    request = types.OutgoingRequest(fields)
    verbs = {"GET": types.Method_Get(), "HEAD": types.Method_Head(), "POST": types.Method_Post(),
             "PUT": types.Method_Put(), "DELETE": types.Method_Delete(),
             "PATCH": types.Method_Patch(), "OPTIONS": types.Method_Options()}
    request.set_method(verbs.get(method.upper(), types.Method_Other(method)))
    request.set_scheme(types.Scheme_Https() if scheme == "https" else types.Scheme_Http())
    request.set_authority(authority)
    request.set_path_with_query(path)
    outgoing = request.body()
    try:
        pending = outgoing_handler.handle(request, None)
    except Err as e:
        raise _failure(e.value) from None
    written: HttpError | None = None
    try:
        with outgoing.write() as stream:
            for start in range(0, len(body), WRITE_CHUNK):
                stream.blocking_write_and_flush(body[start:start + WRITE_CHUNK])
        types.OutgoingBody.finish(outgoing, None)
    except Err as e:
        written = HttpError(f"writing the body: {e.value}")
    # The host's answer first: a refused request has its body closed, and
    # the refusal, not the closed body, is what the tool should see.
    while (answer := pending.get()) is None:
        with pending.subscribe() as ready:
            ready.block()
    if isinstance(answer, Err) or isinstance(answer.value, Err):
        raise _failure(answer.value.value)
    if written is not None:
        raise written
    response = answer.value.value
    status = response.status()
    received = response.headers().entries()
    incoming = response.consume()
    data = bytearray()
    truncated = False
    with incoming.stream() as stream:
        while True:
            try:
                chunk = stream.blocking_read(READ_CHUNK)
            except Err as e:
                if isinstance(e.value, streams.StreamError_Closed):
                    break
                raise HttpError(f"reading the response: {e.value}") from None
            room = max_bytes - len(data)
            if len(chunk) > room:
                data += chunk[:room]
                truncated = True
                break
            data += chunk
    return Response(status, received, bytes(data), truncated)
