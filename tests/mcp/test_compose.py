"""Composite tools over MCP: a tool that calls others through the host
gives the client one result for the whole tree, with what each child that
succeeded would have shown the model after the tool's own content, in the
order it made them, and the children listed in `_meta`."""

import json
import shutil

import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from conftest import WASM

pytestmark = pytest.mark.anyio


@pytest.fixture
def composer(host):
    shutil.copy(WASM / "composer.wasm", host.plugins)
    with open(host.workspace / "toolwarden.toml", "a") as config:
        config.write('\n[[rule]]\ntools = ["compose_run"]\ndecision = "allow"\nreason = "composition"\n')
    return host


def call(tool: str, args: dict) -> dict:
    return {"tool": tool, "args": json.dumps(args)}


async def test_one_result_for_the_tree_with_each_childs_content_in_order(composer):
    async with stdio_client(composer.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        result = await s.call_tool(
            "compose_run",
            {
                "calls": [
                    call("calc", {"op": "mul", "a": 6, "b": 7}),
                    call("delete_everything", {}),
                    call("calc", {"op": "sub", "a": 10, "b": 3}),
                ]
            },
        )
    assert result.is_error is False, result
    children = result.meta["toolwarden"]["children"]
    assert [(c["tool"], c["status"], c.get("code")) for c in children] == [
        ("calc", "ok", None),
        ("delete_everything", "error", "UNKNOWN_TOOL"),
        ("calc", "ok", None),
    ]
    texts = [block.text for block in result.content]
    # The tool's own text first, then each child that succeeded, headed by
    # its tool and call id.
    assert texts[1].startswith(f"[calc ({children[0]['call_id']})]"), texts
    assert "42" in texts[1], texts
    assert texts[2].startswith(f"[calc ({children[2]['call_id']})]"), texts
    assert "7" in texts[2], texts
    assert len(texts) == 3, texts
    reported = result.structured_content["results"]
    assert [r["code"] for r in reported] == [None, "UNKNOWN_TOOL", None]
    calls = [r for r in composer.audit("calc") if r["kind"] == "call"]
    assert {r["data"]["parent"] for r in calls} == {result.meta["toolwarden"]["call_id"]}
