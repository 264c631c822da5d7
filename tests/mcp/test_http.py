"""`toolwarden serve --http` (Streamable HTTP at /mcp), driven by the official SDK."""

import json
import time
import urllib.error
import urllib.request

import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import APPROVE, http_serve

pytestmark = pytest.mark.anyio

TOKEN = "test-token-0123456789abcdef"


@pytest.fixture
def http_server(host, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with http_serve(host.env(), "--token-file", str(token_file)) as (_, url):
        yield url


def stateless_call(url: str, name: str, arguments: dict):
    """Sends a 2026-07-28 `tools/call` on a connection of its own and returns
    the connection, its answer unread."""
    import http.client
    from urllib.parse import urlparse

    parsed = urlparse(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10)
    body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": name, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
                  "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    connection.putrequest("POST", "/mcp")
    for header, value in {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                          "Authorization": f"Bearer {TOKEN}", "MCP-Protocol-Version": "2026-07-28",
                          "Mcp-Method": "tools/call", "Mcp-Name": name,
                          "Content-Length": str(len(body))}.items():
        connection.putheader(header, value)
    connection.endheaders(body)
    return connection


def post(url: str, headers: dict) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "raw", "version": "0"}}}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


async def test_calls_over_http_with_the_token(host, http_server):
    async def approve(context, params):
        return types.ElicitResult(action="accept", content=APPROVE)

    client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    async with client, streamable_http_client(http_server, http_client=client) as (r, w), \
            ClientSession(r, w, elicitation_callback=approve) as s:
        await s.initialize()
        names = {t.name for t in (await s.list_tools()).tools}
        assert {"calc", "read_file", "write_file"} <= names
        res = await s.call_tool("calc", {"op": "sub", "a": 50, "b": 8})
        assert res.structured_content == {"result": 42}
        wrote = await s.call_tool("write_file", {"path": "via-http.txt", "content": "ok"})
        assert wrote.is_error is False, wrote.content
    assert (host.workspace / "via-http.txt").read_text() == "ok"


async def test_http_without_the_token_or_with_a_foreign_host_is_refused(http_server):
    assert post(http_server, {}) == 401
    assert post(http_server, {"Authorization": "Bearer wrong"}) == 401
    assert post(http_server, {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"}) == 403
    assert post(http_server, {"Authorization": f"Bearer {TOKEN}"}) == 200


def get(url: str, headers: dict) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


async def test_a_request_from_a_foreign_web_origin_is_refused_everywhere(http_server):
    """A browser page elsewhere (or an opaque origin) reaches neither /mcp nor
    the console, token or not: 403 as the MCP transport spec says. The
    server's own origins, and requests without one, go on."""
    own = http_server.removesuffix("/mcp")
    console = own + "/console/login"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for origin in ["http://evil.example", "null", "http://127.0.0.1:1", own + ".evil.example"]:
        assert post(http_server, {**auth, "Origin": origin}) == 403, origin
        assert get(console, {"Origin": origin}) == 403, origin
    port = own.rsplit(":", 1)[1]
    for origin in [own, f"http://localhost:{port}"]:
        assert post(http_server, {**auth, "Origin": origin}) == 200, origin
        assert get(console, {"Origin": origin}) == 200, origin
    assert get(console, {}) == 200



def test_a_dropped_http_request_stops_the_running_component(host, http_server):
    """A 2026-07-28 request is self-contained: when its client goes away, the
    call is cancelled (a legacy session's stream may be resumed, so there a
    disconnect is not a cancellation; `notifications/cancelled` is)."""
    # The plugin's first call compiles its optimized code; the one dropped
    # below must be running by then, not waiting for it.
    stateless_call(http_server, "hostile_progress", {"steps": 1}).getresponse().read()
    started = time.monotonic()
    calling = stateless_call(http_server, "hostile_spin", {})
    time.sleep(0.5)
    calling.sock.close()  # the client goes away mid-call
    dropped = time.monotonic()
    outcome = None
    while time.monotonic() < dropped + 10 and outcome is None:
        outcome = next((r for r in host.audit("hostile_spin") if r["kind"] == "outcome"), None)
        time.sleep(0.1)
    assert outcome is not None, "the spinning call never ended"
    assert outcome["data"]["code"] == "CANCELLED", outcome
    assert "did not run" not in outcome["data"]["message"], "it was running"
    # It ended about when the request was dropped, not at its 30 s deadline.
    assert outcome["data"]["duration_us"] < (dropped - started + 2) * 1e6
