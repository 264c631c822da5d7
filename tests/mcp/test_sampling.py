"""Tools that ask the client's model or its roots (the `client` import of
contract 0.3.0), seen from the official Python SDK, over stdio: at
2026-07-28 (`Client`, which answers `input_required` results through its
callbacks) and at 2025-11-25 (`ClientSession` after `initialize`, which the
server sends `sampling/createMessage` and `roots/list`). The policy decides:
no rule, no request leaves; a cap holds before anything is sent; a client
that cannot sample gets a clear error, never a hang."""

import pytest
from mcp import Client, ClientSession, types
from mcp.client.stdio import stdio_client


pytestmark = pytest.mark.anyio

TOOLS_RULE = """
[[rule]]
tools = ["test_*"]
decision = "allow"
reason = "the conformance tools return fixed results"
"""


def sampling_rule(caps: str = "") -> str:
    return f"""
[[rule]]
sampling = ["test_*"]
decision = "allow"
{caps}
reason = "the tests' model answers short questions"
"""


def with_policy(host, extra: str):
    host.with_conformance(TOOLS_RULE + extra)


def text(result) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


class Model:
    """A client's model: answers every request with `answer`, and keeps the
    requests it got."""

    def __init__(self, answer: str = "Paris"):
        self.answer = answer
        self.requests = []

    async def __call__(self, context, params):
        self.requests.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=self.answer),
            model="test-model", stop_reason="endTurn")


async def test_without_a_rule_the_model_is_never_asked(host):
    with_policy(host, "")
    model = Model()
    async with Client(host.server(), sampling_callback=model) as client:
        res = await client.call_tool("test_sampling", {"prompt": "What is 2+2?"})
    assert model.requests == []
    assert res.is_error is True
    assert "sampling refused" in text(res) and 'sampling = ["test_sampling"]' in text(res), text(res)


async def test_an_allowed_request_reaches_the_model_and_its_answer_the_tool(host):
    with_policy(host, sampling_rule())
    model = Model("Four, said the model")
    async with Client(host.server(), sampling_callback=model) as client:
        res = await client.call_tool("test_sampling", {"prompt": "What is 2+2?"})
    assert res.is_error is False, text(res)
    assert text(res) == "LLM response: Four, said the model"
    [request] = model.requests
    assert request.max_tokens == 100
    assert request.messages[0].role == "user"
    assert request.messages[0].content.text == "What is 2+2?"
    records = host.audit("test_sampling", until=lambda rs: any(r["kind"] == "outcome" for r in rs))
    asked = [r["data"] for r in records if r["kind"] == "question"]
    assert asked and asked[0]["kind"] == "sampling", asked
    assert asked[0]["request"]["messages"][0]["content"]["text"] == "What is 2+2?"
    assert "said the model" not in str(asked), "the audit keeps the answer's digest, not its text"
    answered = [a for a in asked if "answer" in a]
    assert answered and len(answered[0]["answer"]["content"]["sha256"]) == 64, answered


async def test_a_legacy_client_is_sent_the_request_and_the_call_completes(host):
    with_policy(host, sampling_rule())
    model = Model("Paris")
    async with stdio_client(host.server()) as (r, w), ClientSession(r, w, sampling_callback=model) as s:
        initialized = await s.initialize()
        assert initialized.protocol_version != "2026-07-28"
        res = await s.call_tool("test_input_required_result_sampling", {})
    assert res.is_error is False, text(res)
    assert text(res) == "The model says: Paris"
    assert [m.content.text for m in model.requests[0].messages] == ["What is the capital of France?"]


async def test_a_legacy_client_without_sampling_gets_a_clear_error(host):
    with_policy(host, sampling_rule())
    async with stdio_client(host.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        res = await s.call_tool("test_sampling", {"prompt": "hi"})
    assert res.is_error is True
    assert "did not declare the `sampling` capability" in text(res), text(res)


async def test_a_cap_holds_before_anything_is_sent(host):
    with_policy(host, sampling_rule("max_tokens = 50"))
    model = Model()
    async with Client(host.server(), sampling_callback=model) as client:
        res = await client.call_tool("test_sampling", {"prompt": "hi"})
    assert model.requests == []
    assert res.is_error is True and "max_tokens" in text(res), text(res)


async def test_a_modern_client_without_sampling_is_refused_with_the_capability_named(host):
    with_policy(host, sampling_rule())
    async with Client(host.server()) as client:
        with pytest.raises(Exception) as refused:
            await client.call_tool("test_sampling", {"prompt": "hi"})
    assert "-32021" in str(refused.value) or "capability" in str(refused.value).lower(), refused.value


async def test_the_clients_roots_reach_the_tool(host):
    with_policy(host, "")

    async def roots(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///home/ada/project", name="project")])

    async with Client(host.server(), list_roots_callback=roots) as client:
        res = await client.call_tool("test_input_required_result_list_roots", {})
    assert res.is_error is False, text(res)
    assert text(res) == "The client's roots: file:///home/ada/project"


async def test_under_an_ask_rule_the_person_allows_each_request_first(host):
    with_policy(host, sampling_rule().replace('decision = "allow"', 'decision = "ask"'))
    model = Model("Paris")
    asked = []

    async def person(context, params):
        asked.append(params.message)
        form = params.requested_schema
        assert form["title"] == "toolwarden approval: send this one request to your model?", form
        choices = form["properties"]["toolwarden_decision"]["oneOf"]
        assert choices[0] == {"const": "approve_once", "title": "Approve this one request"}, choices
        return types.ElicitResult(action="accept", content={"toolwarden_decision": "approve_once"})

    async with stdio_client(host.server()) as (r, w), ClientSession(
            r, w, sampling_callback=model, elicitation_callback=person) as s:
        await s.initialize()
        res = await s.call_tool("test_input_required_result_sampling", {})
    assert res.is_error is False, text(res)
    assert text(res) == "The model says: Paris"
    assert len(asked) == 1 and asked[0].startswith("toolwarden approval: the tool `test_input_required_result_sampling`")
    assert "What is the capital of France?" in asked[0]
    assert len(model.requests) == 1, "the model is asked only after the person's yes"


async def test_under_an_ask_rule_a_no_keeps_the_request_from_the_model(host):
    with_policy(host, sampling_rule().replace('decision = "allow"', 'decision = "ask"'))
    model = Model()

    async def person(context, params):
        return types.ElicitResult(action="decline")

    async with Client(host.server(), sampling_callback=model, elicitation_callback=person) as client:
        res = await client.call_tool("test_sampling", {"prompt": "hi"})
    assert model.requests == []
    assert res.is_error is True and "did not allow" in text(res), text(res)
