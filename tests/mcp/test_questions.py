"""A tool that asks the person (the `ask` import), seen from the official
Python SDK: a client that can elicit is asked each question in turn and the
call runs to the end; one that cannot gets INPUT_REQUIRED naming the question."""

import json

import pytest
from mcp import Client, ClientSession, types
from mcp.client.stdio import stdio_client

from conftest import APPROVE

pytestmark = pytest.mark.anyio

FORM = {"type": "object", "properties": {"ok": {"type": "boolean", "title": "Go on?"}}, "required": ["ok"]}
ARGS = {"key": "step", "form": json.dumps(FORM), "count": 3}
# How the host names who asks, before the plugin's own text.
PROMPT = "Question from the tool `hostile_ask` (plugin `hostile.wasm`), not from toolwarden:\n\n"
# The host's own approval form, as a hostile plugin would copy it.
HOST_FORM = {
    "type": "object",
    "title": "toolwarden approval: run this one call?",
    "properties": {"toolwarden_decision": {
        "type": "string", "title": "toolwarden: your decision",
        "oneOf": [{"const": "approve_once", "title": "Approve this one call"}, {"const": "deny", "title": "Deny"}]}},
    "required": ["toolwarden_decision"],
}


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
    assert [p.message for p in asked] == [PROMPT + "hostile question"] * 3
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

    host.with_conformance('\n[[rule]]\ntools = ["confirm_delete"]\ndecision = "ask"\n'
                          'reason = "deleting needs a person"\n')
    asked = []

    async def answer(context, params):
        asked.append(params.message)
        if "Delete" in params.message:
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action="accept", content=APPROVE)

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


async def test_a_plugin_cannot_ask_with_the_hosts_approval_form(host):
    """A form that copies the host's approval prompt, or any part that marks
    it as the host's (a reserved field name or title), is the plugin's
    defect: nobody is asked, the call ends TOOL_CRASHED."""
    field = {"type": "string", "title": "Decision", "enum": ["approve_once", "deny"]}
    forms = [
        HOST_FORM,
        {"type": "object", "properties": {"Toolwarden_Decision": field}},
        {"type": "object", "title": "  ToolWarden approval", "properties": {"ok": {"type": "boolean"}}},
        {"type": "object", "properties": {"ok": {"type": "boolean", "title": "toolwarden: your decision"}}},
        {"type": "object", "properties": {"ok": {"type": "boolean", "title": "Go on?\u001b[2J"}}},
    ]
    asked = []

    async def answer(context, params):
        asked.append(params)
        return types.ElicitResult(action="accept", content=APPROVE)

    async with Client(host.server(), elicitation_callback=answer) as client:
        for form in forms:
            res = await client.call_tool("hostile_ask", {
                "key": "k", "form": json.dumps(form), "count": 1,
                "message": "toolwarden asks you to approve one call (approval 1)."})
            assert res.is_error is True, form
            assert meta(res)["code"] == "TOOL_CRASHED", (form, res.content)
    assert asked == []


async def test_a_plugins_question_is_marked_as_the_plugins_and_shows_its_escapes(host):
    """The host names the tool and plugin that ask, outside the plugin's
    text, and shows terminal escapes and direction overrides as escapes; its
    own approval prompt has a form no plugin can produce."""
    asked = []

    async def answer(context, params):
        asked.append(params)
        if "toolwarden_decision" in params.requested_schema.get("properties", {}):
            return types.ElicitResult(action="accept", content=APPROVE)
        return types.ElicitResult(action="accept", content={"ok": True})

    message = "toolwarden asks you to approve one call.\x1b[2J\x1b]0;pwned\x07 \u202eevil"
    async with Client(host.server(), elicitation_callback=answer) as client:
        res = await client.call_tool("hostile_ask", {**ARGS, "count": 1, "message": message})
        assert res.is_error is False, res.content
        res = await client.call_tool("write_file", {"path": "w.txt", "content": "x"})
        assert res.is_error is False, res.content
    question, approval = asked
    assert question.message.startswith(PROMPT), question.message
    assert "\x1b" not in question.message and "\x07" not in question.message
    assert "\u202e" not in question.message
    assert "\\u{001b}[2J" in question.message and "\\u{202e}evil" in question.message
    assert approval.message.startswith("toolwarden asks you to approve one call"), approval.message
    assert approval.requested_schema["required"] == ["toolwarden_decision"]
    assert "toolwarden_decision" not in question.requested_schema["properties"]


async def test_an_approval_form_accepted_without_a_choice_is_no_answer(host):
    """Accepting the approval form without choosing decides nothing: the
    call does not run, and the approval stays pending (not denied). A
    legacy client's call ends APPROVAL_REQUIRED; a 2026-07-28 client is
    asked again, until it gives up."""
    async def accept_empty(context, params):
        return types.ElicitResult(action="accept", content={})

    async with stdio_client(host.server()) as (r, w), ClientSession(r, w, elicitation_callback=accept_empty) as s:
        await s.initialize()
        res = await s.call_tool("write_file", {"path": "n.txt", "content": "x"})
        assert res.is_error is True
        assert meta(res)["code"] == "APPROVAL_REQUIRED", res.content
    async with Client(host.server(), elicitation_callback=accept_empty) as client:
        with pytest.raises(Exception, match="InputRequired|input_required|rounds"):
            await client.call_tool("write_file", {"path": "n.txt", "content": "x"})
    assert not (host.workspace / "n.txt").exists()
    code, stdout, stderr = host.cli("approvals", "list", "--json")
    assert code == 0, stderr
    assert {a["state"] for a in json.loads(stdout)} == {"pending"}


async def test_an_answer_counted_towards_a_quorum_is_asked_once_and_the_call_waits(host):
    """`approvers = 2`: the stdio client's answer counts as one approver (the
    OS user who started the server); the call waits for a second person
    instead of asking the same one again, and the same OS user approving at
    the CLI is still one approver."""
    (host.workspace / "toolwarden.toml").write_text(
        '[[rule]]\ntools = ["calc"]\ndecision = "ask"\napprovers = 2\nreason = "two people"\n')
    asked = []

    async def approve(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content=APPROVE)

    async with Client(host.server(), elicitation_callback=approve) as client:
        res = await client.call_tool("calc", {"op": "add", "a": 1, "b": 2})
        assert res.is_error is True, res.content
        assert meta(res)["code"] == "APPROVAL_REQUIRED"
        assert len(asked) == 1, "a counted answer is not asked for again"
        approval = meta(res)["approval_id"]
    code, out, err = host.cli("approvals", "approve", approval)
    assert code == 0, err
    assert "you had already approved" in out and "waits for 1 more" in out, out
    code, out, err = host.cli("approvals", "show", approval, "--json")
    shown = json.loads(out)
    assert shown["state"] == "pending"
    assert [(d["proof"], d["channel"]) for d in shown["decisions"]] == [("os user", "mcp")]
