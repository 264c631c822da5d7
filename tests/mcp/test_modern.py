"""2026-07-28 clients: `ask` becomes an `input_required` result whose request
state is good for exactly one retry."""

import json

import pytest
from mcp import Client, types
from mcp.shared.exceptions import MCPError
from mcp_types import InputRequiredResult

from conftest import APPROVE

pytestmark = pytest.mark.anyio

ARGS = {"path": "modern.txt", "content": "asked the modern way"}


def meta(result) -> dict:
    return (result.meta or {}).get("toolwarden", {})


async def test_modern_client_speaks_2026_07_28(host):
    async with Client(host.server()) as client:
        assert client.protocol_version == "2026-07-28"
        res = await client.call_tool("calc", {"op": "add", "a": 2, "b": 3})
        assert res.structured_content == {"result": 5}


async def test_ask_accepted_through_input_required_runs_once(host):
    asked = []

    async def approve(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content=APPROVE)

    async with Client(host.server(), elicitation_callback=approve) as client:
        res = await client.call_tool("write_file", ARGS)
        assert res.is_error is False, res.content
    assert (host.workspace / "modern.txt").read_text() == ARGS["content"]
    assert len(asked) == 1 and "write_file" in asked[0] and "writes need a person" in asked[0]
    kinds = [r["kind"] for r in host.audit("write_file")]
    assert kinds.count("approval_consumed") == 1 and kinds.count("outcome") == 1


async def test_ask_declined_through_input_required_does_not_run(host):
    async def decline(context, params):
        return types.ElicitResult(action="decline")

    async with Client(host.server(), elicitation_callback=decline) as client:
        res = await client.call_tool("write_file", ARGS)
        assert res.is_error is True
        assert meta(res)["code"] == "APPROVAL_DENIED"
    assert not (host.workspace / "modern.txt").exists()


async def test_a_request_state_serves_one_retry_only(host):
    async def approve(context, params):
        return types.ElicitResult(action="accept", content=APPROVE)

    async with Client(host.server(), elicitation_callback=approve) as client:
        first = await client.session.call_tool("write_file", ARGS, allow_input_required=True)
        assert isinstance(first, InputRequiredResult)
        [key] = list(first.input_requests)
        answer = {key: {"action": "accept", "content": APPROVE}}
        ran = await client.session.call_tool(
            "write_file", ARGS, input_responses=answer, request_state=first.request_state,
            allow_input_required=True,
        )
        assert ran.is_error is False, ran.content
        for state in (first.request_state, "forged"):
            with pytest.raises(MCPError) as refused:
                await client.session.call_tool(
                    "write_file", ARGS, input_responses=answer, request_state=state,
                    allow_input_required=True,
                )
            assert refused.value.error.code == -32602
            assert "already used" in refused.value.error.message
    outcomes = [r for r in host.audit("write_file") if r["kind"] == "outcome"]
    assert len(outcomes) == 1, "the call ran exactly once"


async def test_questions_asked_at_once_come_in_one_input_required_result(host):
    form = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    args = {"key": "step", "form": json.dumps(form), "count": 3, "batch": True}
    yes = {"action": "accept", "content": {"ok": True}}
    async with Client(host.server(), elicitation_callback=lambda c, p: None) as client:
        first = await client.session.call_tool("hostile_ask", args, allow_input_required=True)
        assert isinstance(first, InputRequiredResult), first
        assert sorted(first.input_requests) == ["step0", "step1", "step2"]
        # One answered: the retry is asked the other two, with the answer kept.
        second = await client.session.call_tool(
            "hostile_ask", args, input_responses={"step1": yes},
            request_state=first.request_state, allow_input_required=True,
        )
        assert isinstance(second, InputRequiredResult), second
        assert sorted(second.input_requests) == ["step0", "step2"]
        done = await client.session.call_tool(
            "hostile_ask", args, input_responses={"step0": yes, "step2": {"action": "decline"}},
            request_state=second.request_state, allow_input_required=True,
        )
        assert done.is_error is False, done.content
        assert done.structured_content == {"result": 2}
    outcomes = [r for r in host.audit("hostile_ask") if r["kind"] == "outcome"]
    assert len(outcomes) == 3
