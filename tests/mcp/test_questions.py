"""A tool that asks the person (the `ask` import), seen from the official
Python SDK: a client that can elicit is asked each question in turn and the
call runs to the end; one that cannot gets INPUT_REQUIRED naming the question."""

import json

import pytest
from mcp import Client, types

pytestmark = pytest.mark.anyio

FORM = {"type": "object", "properties": {"ok": {"type": "boolean", "title": "Go on?"}}, "required": ["ok"]}
ARGS = {"key": "step", "form": json.dumps(FORM), "count": 3}


def meta(result) -> dict:
    return (result.meta or {}).get("toolwarden", {})


async def test_each_question_is_elicited_and_the_call_completes(host):
    asked = []

    async def answer(context, params):
        asked.append(params)
        ok = len(asked) != 2
        return types.ElicitResult(action="accept", content={"ok": ok})

    async with Client(host.server(), elicitation_callback=answer) as client:
        res = await client.call_tool("hostile_ask", ARGS)
        assert res.is_error is False, res.content
        assert res.structured_content == {"result": 3}
    assert [p.message for p in asked] == ["hostile question"] * 3
    schema = asked[0].requested_schema
    assert schema["properties"]["ok"] == {"type": "boolean", "title": "Go on?"}
    assert schema["required"] == ["ok"]
    records = host.audit("hostile_ask")
    questions = [r for r in records if r["kind"] == "question"]
    # Runs 1-3 each stop at the next question, the fourth has every answer.
    assert [q["data"]["key"] for q in questions] == ["step0", "step0", "step1"] + ["step0", "step1", "step2"] * 2
    assert [("answer" in q["data"]) for q in questions[:6]] == [False, True, False, True, True, False]
    assert sum(1 for r in records if r["kind"] == "outcome") == 4


async def test_a_declined_question_is_the_tools_to_handle(host):
    async def decline(context, params):
        return types.ElicitResult(action="decline")

    async with Client(host.server(), elicitation_callback=decline) as client:
        res = await client.call_tool("hostile_ask", ARGS)
        assert res.is_error is False, res.content
        assert res.structured_content == {"result": 0}


async def test_a_client_that_cannot_ask_gets_input_required(host):
    async with Client(host.server()) as client:
        res = await client.call_tool("hostile_ask", ARGS)
        assert res.is_error is True
        assert meta(res)["code"] == "INPUT_REQUIRED"
        assert "step0" in res.content[0].text and "hostile question" in res.content[0].text


async def test_questions_asked_at_once_are_each_elicited_and_run_again_once(host):
    asked = []

    async def answer(context, params):
        asked.append(params)
        return types.ElicitResult(action="accept", content={"ok": True})

    async with Client(host.server(), elicitation_callback=answer) as client:
        res = await client.call_tool("hostile_ask", {**ARGS, "batch": True})
        assert res.is_error is False, res.content
        assert res.structured_content == {"result": 3}
    assert len(asked) == 3
    records = host.audit("hostile_ask")
    questions = [r["data"] for r in records if r["kind"] == "question"]
    # The first run stops at all three, the second has every answer.
    assert [q["key"] for q in questions] == ["step0", "step1", "step2"] * 2
    assert [("answer" in q) for q in questions] == [False] * 3 + [True] * 3
    assert sum(1 for r in records if r["kind"] == "outcome") == 2


async def test_a_legacy_client_is_asked_the_approval_again_after_a_question(host):
    """A tool the policy asks about, which asks a question itself: the run
    that asked used up its approval, so a client of the `initialize` era is
    asked for it again (as the CLI would ask), and the call then completes."""
    import shutil

    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    from conftest import WASM

    shutil.copy(WASM / "conformance.wasm", host.plugins)
    policy = host.workspace / "toolwarden.toml"
    policy.write_text(policy.read_text() + '\n[[rule]]\ntools = ["confirm_delete"]\ndecision = "ask"\n'
                      'reason = "deleting needs a person"\n')
    asked = []

    async def answer(context, params):
        asked.append(params.message)
        if "Delete" in params.message:
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action="accept", content={"approve": True})

    async with stdio_client(host.server()) as (r, w), ClientSession(r, w, elicitation_callback=answer) as s:
        initialized = await s.initialize()
        assert initialized.protocol_version != "2026-07-28"
        res = await s.call_tool("confirm_delete", {"filename": "a.txt"})
        assert res.is_error is False, res.content
        assert res.content[0].text == "a.txt deleted"
    assert ["Delete" in m for m in asked] == [False, True, False], asked
    kinds = [r["kind"] for r in host.audit("confirm_delete")]
    # Two runs stopped for the approval, one at the question, one ran to its end.
    assert kinds.count("refused") == 2 and kinds.count("approval_consumed") == 2, kinds
    assert kinds.count("outcome") == 2, kinds
