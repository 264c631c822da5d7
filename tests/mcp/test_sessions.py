"""Regression for issue #17: idle MCP sessions over HTTP are capped and
expire, so a client that opens thousands and never closes them cannot
exhaust the server's memory."""

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import POLICY, http_serve
from test_http import post

pytestmark = pytest.mark.anyio

CAP = 16
IDLE_SECONDS = 3


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.fixture
def capped_server(host):
    (host.workspace / "toolwarden.toml").write_text(
        f"[mcp]\nmax_sessions = {CAP}\nsession_idle_seconds = {IDLE_SECONDS}\n{POLICY}")
    with http_serve(host.env()) as served:
        yield served


async def test_sessions_over_the_cap_are_refused_and_idle_ones_expire(capped_server):
    proc, url = capped_server
    async with streamable_http_client(url) as (r, w), ClientSession(r, w) as live:
        await live.initialize()
        before = rss_kib(proc.pid)
        statuses = [post(url, {}) for _ in range(CAP * 20)]
        assert statuses.count(200) == CAP - 1, statuses
        assert set(statuses) == {200, 503}, statuses
        grown = rss_kib(proc.pid) - before
        assert grown < 64 * 1024, f"{CAP * 20} initialize requests grew the server by {grown} KiB"
        res = await live.call_tool("calc", {"op": "add", "a": 1, "b": 2})
        assert res.structured_content == {"result": 3}
        # The live session stays busy while the others sit idle past their
        # time: they are closed, it is not.
        for n in range(IDLE_SECONDS + 2):
            await anyio.sleep(1)
            res = await live.call_tool("calc", {"op": "add", "a": n, "b": 2})
            assert res.structured_content == {"result": n + 2}
        assert post(url, {}) == 200, "the idle sessions were released"
