"""A plugin's log lines reach an MCP client as `notifications/message` only
at the level the client asked for: a 2025-11-25 session by
`logging/setLevel`, a 2026-07-28 request by its `_meta` log level; a client
that asked for neither gets none. Masking and the per-call cap are shown on
the library's log sink (tests/all/credential_leaks.rs, tests/all/hostile.rs).
The conformance suite's logging scenarios run in test_conformance.py."""

import shutil

import anyio
import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from conftest import WASM, http_serve

pytestmark = pytest.mark.anyio

TOOL = "test_logging_tool"
EVERY_LEVEL = [
    ("debug", "a line at trace"),
    ("debug", "a line at debug"),
    ("info", "a line at info"),
    ("warning", "a line at warn"),
    ("error", "a line at error"),
]


@pytest.fixture
def logging_host(host):
    return host.with_conformance(f'\n[[rule]]\ntools = ["{TOOL}"]\ndecision = "allow"\n'
                                 'reason = "logs, nothing else"\n')


class Lines:
    def __init__(self):
        self.seen = []

    async def __call__(self, params):
        self.seen.append((params.level, params.logger, params.data))

    async def after_call(self, call):
        """What arrived with a call: notifications come before its answer,
        and a moment is left for any that would come late."""
        res = await call
        assert res.is_error is False, res.content
        await anyio.sleep(0.1)
        seen, self.seen = self.seen, []
        return [(level, text) for level, logger, text in seen if logger == TOOL], seen


async def test_a_session_gets_log_lines_at_and_above_the_level_it_set(logging_host):
    lines = Lines()
    async with stdio_client(logging_host.server()) as (r, w), ClientSession(r, w, logging_callback=lines) as s:
        initialized = await s.initialize()
        assert initialized.protocol_version != "2026-07-28"
        assert initialized.capabilities.logging is not None
        mine, everything = await lines.after_call(s.call_tool(TOOL, {}))
        assert everything == [], "no level set: no lines"
        await s.set_logging_level("warning")
        mine, everything = await lines.after_call(s.call_tool(TOOL, {}))
        assert mine == EVERY_LEVEL[3:] and len(everything) == 2, everything
        await s.set_logging_level("debug")
        mine, _ = await lines.after_call(s.call_tool(TOOL, {}))
        assert mine == EVERY_LEVEL
        await s.set_logging_level("critical")
        mine, everything = await lines.after_call(s.call_tool(TOOL, {}))
        assert everything == [], "no plugin line is that severe"


async def test_a_level_set_by_one_http_session_is_not_another_sessions(logging_host):
    loud, quiet = Lines(), Lines()
    with http_serve(logging_host.env()) as (_, url):
        async with streamable_http_client(url) as (r, w), ClientSession(r, w, logging_callback=loud) as a, \
                streamable_http_client(url) as (r2, w2), ClientSession(r2, w2, logging_callback=quiet) as b:
            await a.initialize()
            await b.initialize()
            await a.set_logging_level("info")
            _, heard = await quiet.after_call(b.call_tool(TOOL, {}))
            assert heard == [], "the other session set no level"
            mine, _ = await loud.after_call(a.call_tool(TOOL, {}))
            assert mine == EVERY_LEVEL[2:]


async def test_a_modern_request_gets_log_lines_at_its_own_level_only(logging_host):
    lines = Lines()
    async with Client(logging_host.server(), logging_callback=lines) as client:
        assert client.protocol_version == "2026-07-28"
        _, everything = await lines.after_call(client.call_tool(TOOL, {}))
        assert everything == [], "a request without a log level gets no lines"
    async with Client(logging_host.server(), logging_callback=lines, log_level="error") as client:
        mine, everything = await lines.after_call(client.call_tool(TOOL, {}))
        assert mine == EVERY_LEVEL[4:] and len(everything) == 1, everything


async def test_a_composed_calls_lines_come_under_the_childs_name(logging_host):
    shutil.copy(WASM / "composer.wasm", logging_host.plugins)
    policy = logging_host.workspace / "toolwarden.toml"
    policy.write_text(policy.read_text() + '\n[[rule]]\ntools = ["compose_run", "hostile_log_flood"]\n'
                      'decision = "allow"\nreason = "composes and logs"\n')
    lines = Lines()
    calls = [{"tool": "hostile_log_flood", "args": '{"n": 2}'}]
    async with stdio_client(logging_host.server()) as (r, w), ClientSession(r, w, logging_callback=lines) as s:
        await s.initialize()
        await s.set_logging_level("error")
        _, everything = await lines.after_call(s.call_tool("compose_run", {"calls": calls}))
        assert everything == [("error", "hostile_log_flood", "")] * 2, everything
