"""Keyed tools over MCP: a client that repeats a keyed call (say, after a
lost answer) gets the recorded result, marked in `_meta`, and the tool does
not run twice."""

import shutil

import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from conftest import WASM

pytestmark = pytest.mark.anyio


def meta(result) -> dict:
    return (result.meta or {}).get("toolwarden", {})


@pytest.fixture
def ledger(host):
    shutil.copy(WASM / "ledger.wasm", host.plugins)
    with open(host.workspace / "toolwarden.toml", "a") as config:
        config.write('\n[[rule]]\ntools = ["ledger_append"]\ndecision = "allow"\nreason = "a test ledger"\n')
    return host


async def test_a_repeated_keyed_call_is_answered_once_and_marked(ledger):
    async with stdio_client(ledger.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        first = await s.call_tool("ledger_append", {"entry": "invoice 7 paid"})
        assert first.is_error is False, first
        assert "replayed_from" not in meta(first)
        again = await s.call_tool("ledger_append", {"entry": "invoice 7 paid"})
        assert again.is_error is False, again
        assert meta(again)["replayed_from"] == meta(first)["call_id"]
        assert again.structured_content == first.structured_content == {"lines": 1}
        other = await s.call_tool("ledger_append", {"entry": "invoice 8 paid"})
        assert other.structured_content == {"lines": 2}
    assert (ledger.workspace / "ledger.txt").read_text() == "invoice 7 paid\ninvoice 8 paid\n"
    kinds = [r["kind"] for r in ledger.audit("ledger_append")]
    assert kinds.count("replayed") == 1, kinds
