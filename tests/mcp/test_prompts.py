"""Prompts from a plugin (contract toolwarden:tool@0.3.0) reach an MCP
client only as the policy decides: `prompts/list` shows what a session may
get, `prompts/get` of a denied prompt is refused with POLICY_DENIED before
the plugin runs, arguments are checked against the declaration, completion
comes from the plugin, and every `prompts/get` is in the audit log. The
official Python SDK is the client; the conformance suite's prompt scenarios
run in test_conformance.py."""

import pytest
from mcp import Client, ClientSession, types
from mcp.shared.exceptions import MCPError
from mcp.client.stdio import stdio_client
from mcp.types import PromptReference


pytestmark = pytest.mark.anyio

PROMPTS = """
[[rule]]
prompts = ["test_*"]
decision = "allow"
reason = "the fixture's prompts render fixed text"

[[rule]]
prompts = ["test_prompt_with_image"]
decision = "deny"
reason = "no images in this project's prompts"
"""


@pytest.fixture
def prompt_host(host):
    return host.with_conformance(PROMPTS)


async def test_the_policy_decides_which_prompts_a_client_lists_and_gets(prompt_host):
    async with stdio_client(prompt_host.server()) as (r, w), ClientSession(r, w) as s:
        initialized = await s.initialize()
        assert initialized.capabilities.prompts is not None
        listed = {p.name: p for p in (await s.list_prompts()).prompts}
        assert set(listed) == {"test_simple_prompt", "test_prompt_with_arguments",
                               "test_prompt_with_embedded_resource",
                               "test_input_required_result_prompt"}, listed
        args = listed["test_prompt_with_arguments"].arguments
        assert [(a.name, a.required) for a in args] == [("arg1", True), ("arg2", True)]

        got = await s.get_prompt("test_prompt_with_arguments", {"arg1": "α", "arg2": "β"})
        assert got.messages[0].role == "user"
        assert got.messages[0].content.text == "Prompt with arguments: arg1='α', arg2='β'"

        embedded = await s.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://x"})
        assert embedded.messages[0].content.type == "resource"
        assert embedded.messages[0].content.resource.uri == "test://x"

        with pytest.raises(MCPError) as denied:
            await s.get_prompt("test_prompt_with_image")
        assert denied.value.error.code == -32602
        assert denied.value.error.message.startswith("POLICY_DENIED"), denied.value.error
        assert "no images" in denied.value.error.message
        assert denied.value.error.data == {"toolwarden": {"code": "POLICY_DENIED"}}

        with pytest.raises(MCPError) as missing:
            await s.get_prompt("test_prompt_with_arguments", {"arg1": "only one"})
        assert missing.value.error.message.startswith("INVALID_ARGS"), missing.value.error
        assert "arg2" in missing.value.error.message

        with pytest.raises(MCPError) as unknown:
            await s.get_prompt("test_no_such_prompt")
        assert "test_simple_prompt" in unknown.value.error.message, "it names what exists"

        done = await s.complete(PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
                                {"name": "arg2", "value": "gr"})
        assert done.completion.values == ["green"]
        refused = await s.complete(PromptReference(type="ref/prompt", name="test_prompt_with_image"),
                                   {"name": "x", "value": ""})
        assert refused.completion.values == []

    records = prompt_host.audit("prompt:test_prompt_with_image",
                                until=lambda rs: any(r["kind"] == "refused" for r in rs))
    assert [r["kind"] for r in records] == ["call", "policy", "refused"], records
    assert records[2]["data"]["code"] == "POLICY_DENIED"
    ran = prompt_host.audit("prompt:test_prompt_with_arguments",
                            until=lambda rs: sum(r["kind"] == "outcome" for r in rs) == 1)
    assert [r["kind"] for r in ran][:3] == ["call", "policy", "outcome"], ran
    assert ran[0]["data"]["args"] == {"arg1": "α", "arg2": "β"}


async def test_a_host_whose_policy_allows_no_prompt_lists_none(host):
    host.with_conformance()
    async with stdio_client(host.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        assert (await s.list_prompts()).prompts == []
        with pytest.raises(MCPError) as denied:
            await s.get_prompt("test_simple_prompt")
        assert denied.value.error.message.startswith("POLICY_DENIED")
        assert 'prompts = ["test_simple_prompt"]' in denied.value.error.message, "it says how to allow it"


ASKS = "test_input_required_result_prompt"


async def tell_context(context, params):
    assert params.message.startswith("Question from the tool `test_input_required_result_prompt` (plugin `conformance.wasm`)")
    return types.ElicitResult(action="accept", content={"context": "a release note"})


async def test_a_prompt_that_asks_is_rendered_with_the_answer_at_2026_07_28(prompt_host):
    async with Client(prompt_host.server(), elicitation_callback=tell_context) as client:
        got = await client.get_prompt(ASKS)
    assert got.messages[0].content.text == "Answer with this context in mind: a release note"


async def test_a_prompt_that_asks_elicits_a_legacy_client_and_refuses_one_that_cannot_ask(prompt_host):
    async with stdio_client(prompt_host.server()) as (r, w), ClientSession(r, w, elicitation_callback=tell_context) as s:
        await s.initialize()
        got = await s.get_prompt(ASKS)
        assert got.messages[0].content.text == "Answer with this context in mind: a release note"
    async with stdio_client(prompt_host.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        with pytest.raises(MCPError) as refused:
            await s.get_prompt(ASKS)
        assert "INPUT_REQUIRED" in refused.value.error.message and "user_context" in refused.value.error.message
