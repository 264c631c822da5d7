"""Arguments mirrored into HTTP headers (`x-mcp-header`, SEP-2243) over
`serve --http`, spoken raw at 2026-07-28: a tool's schema names the headers,
and a call whose `Mcp-Param-*` header is missing, malformed or differs from
its argument is refused with HTTP 400 / -32020 before anything runs, so a
proxy that routes on the header sees the call that is governed."""

import base64
import json
import shutil
import urllib.request

import pytest

from conftest import WASM, Host, http_serve

POLICY = """
[[rule]]
tools = ["route_query"]
decision = "allow"
reason = "answers from fixed text"
"""

ARGS = {"region": "eu-west", "priority": 3, "query": "status"}
GOOD = {"Mcp-Param-Region": "eu-west", "Mcp-Param-Priority": "3"}


@pytest.fixture
def served(tmp_path):
    host = Host(tmp_path)
    shutil.copy(WASM / "conformance.wasm", host.plugins)
    (host.workspace / "toolwarden.toml").write_text(POLICY)
    with http_serve(host.env()) as (_, url):
        yield url, host


def post(url: str, method: str, params: dict, extra: dict | None = None) -> tuple[int, dict]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {
        **params, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
                            "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method})
    if "name" in params:
        request.add_header("Mcp-Name", params["name"])
    for name, value in (extra or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            return status, json.loads(line[5:])
    return status, json.loads(text)


def call(url: str, arguments: dict, headers: dict) -> tuple[int, dict]:
    return post(url, "tools/call", {"name": "route_query", "arguments": arguments}, headers)


def ran(host: Host, expected: int = 0) -> int:
    def outcomes(records: list) -> int:
        return sum(1 for r in records if r["kind"] == "outcome")
    return outcomes(host.audit("route_query", until=lambda records: outcomes(records) >= expected))


def b64(text: str) -> str:
    return f"=?base64?{base64.b64encode(text.encode()).decode()}?="


def test_the_schema_lists_its_header_annotations(served):
    url, _ = served
    status, listed = post(url, "tools/list", {})
    assert status == 200
    [tool] = [t for t in listed["result"]["tools"] if t["name"] == "route_query"]
    props = tool["inputSchema"]["properties"]
    assert props["region"]["x-mcp-header"] == "Region"
    assert props["priority"]["x-mcp-header"] == "Priority"
    assert "x-mcp-header" not in props["query"]


def test_matching_headers_in_every_encoding_run_the_call(served):
    url, host = served
    status, answer = call(url, ARGS, GOOD)
    assert status == 200 and answer["result"]["content"][0]["text"] == "status answered in eu-west at priority 3"
    # Header names ignore case; a value may come Base64-wrapped, and must
    # when it has edge whitespace or non-ASCII characters.
    spaced = {**ARGS, "region": "  Zürich "}
    status, answer = call(url, spaced, {"mcp-param-region": b64("  Zürich "), "MCP-PARAM-PRIORITY": "3"})
    assert status == 200, answer
    assert answer["result"]["content"][0]["text"] == "status answered in   Zürich  at priority 3"
    assert ran(host, expected=2) == 2


@pytest.mark.parametrize("headers, why", [
    ({"Mcp-Param-Priority": "3"}, "missing Mcp-Param-Region"),
    ({**GOOD, "Mcp-Param-Region": "us-east"}, "does not match"),
    ({**GOOD, "Mcp-Param-Priority": "03"}, "does not match"),
    ({**GOOD, "Mcp-Param-Region": "=?base64?ZXUtd2VzdA?="}, "not valid Base64"),
    ({**GOOD, "Mcp-Param-Region": "=?base64?ZXUt!!d2VzdA==?="}, "not valid Base64"),
    ({**GOOD, "Mcp-Param-Region": b64("eu-east")}, "does not match"),
])
def test_a_header_that_differs_from_its_argument_is_refused_before_anything_runs(served, headers, why):
    url, host = served
    status, answer = call(url, ARGS, headers)
    assert status == 400, answer
    assert answer["error"]["code"] == -32020 and why in answer["error"]["message"], answer
    assert ran(host) == 0


def test_a_header_for_an_absent_argument_is_refused(served):
    url, host = served
    status, answer = call(url, {"region": "eu-west", "query": "q"}, GOOD)
    assert status == 400 and answer["error"]["code"] == -32020, answer
    assert "absent" in answer["error"]["message"]
    assert ran(host) == 0
