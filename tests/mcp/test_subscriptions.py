"""The tool list changes, and clients are told: 2026-07-28
`subscriptions/listen` streams, on the stream, when hot reload changes the
tool list or a plugin's tool withdraws or offers its plugin's tools; and
only what they asked for. A 2025-11-25 session hears
`notifications/tools/list_changed` on its connection. Driven by the official
Python SDK (`Client.listen`, `ClientSession`)."""

import anyio
import pytest
from mcp import Client, types
from mcp.shared.subscriptions import ToolsListChanged

from conftest import http_serve, listening_session


pytestmark = pytest.mark.anyio

OFFERS = """
[[rule]]
tools = ["test_trigger_tool_change", "test_dynamic_tool"]
decision = "allow"
reason = "the trigger only offers or withdraws a tool of its own plugin"
"""


@pytest.fixture
def offering_host(host):
    return host.with_conformance(OFFERS)


async def test_a_listen_stream_is_told_when_a_plugin_withdraws_a_tool(offering_host):
    async with Client(offering_host.server()) as client:
        before = {t.name for t in (await client.list_tools()).tools}
        assert "test_dynamic_tool" in before
        async with client.listen(tools_list_changed=True) as sub:
            done = await client.call_tool("test_trigger_tool_change", {})
            assert not done.is_error and done.content[0].text == "withdrew test_dynamic_tool", done
            with anyio.fail_after(5):
                event = await sub.__anext__()
            assert isinstance(event, ToolsListChanged)
        after = {t.name for t in (await client.list_tools()).tools}
        assert after == before - {"test_dynamic_tool"}, after
        refused = await client.call_tool("test_dynamic_tool", {})
        assert refused.is_error and "withdrawn by its plugin" in refused.content[0].text, refused


class ListChanged:
    """How many `notifications/tools/list_changed` a session heard."""

    def __init__(self):
        self.count = 0
        self.heard = anyio.Event()

    async def __call__(self, message):
        if isinstance(message, types.ToolListChangedNotification):
            self.count += 1
            self.heard.set()


async def test_every_2025_session_hears_when_a_plugin_offers_a_tool_again(offering_host):
    calling, other = ListChanged(), ListChanged()
    with http_serve(offering_host.env()) as (_, url):
        async with listening_session(url, message_handler=calling) as a, \
                listening_session(url, message_handler=other) as b:
            # Each session calls once: a session's second identical call
            # would be refused as a duplicate.
            for verb, caller in [("withdrew", a), ("offered", b)]:
                calling.heard, other.heard = anyio.Event(), anyio.Event()
                done = await caller.call_tool("test_trigger_tool_change", {})
                assert done.content[0].text == f"{verb} test_dynamic_tool", done
                with anyio.fail_after(5):
                    await calling.heard.wait()
                    await other.heard.wait()
                names = {t.name for t in (await b.list_tools()).tools}
                assert ("test_dynamic_tool" in names) == (verb == "offered"), names
            assert (calling.count, other.count) == (2, 2)


async def test_a_listen_stream_is_told_when_hot_reload_changes_the_tools(host):
    async with Client(host.server()) as client:
        assert client.protocol_version == "2026-07-28"
        before = {t.name for t in (await client.list_tools()).tools}
        assert "hostile_spin" in before
        async with client.listen(tools_list_changed=True) as sub:
            assert sub.honored.tools_list_changed is True
            (host.plugins / "hostile.wasm").unlink()
            with anyio.fail_after(15):
                event = await sub.__anext__()
            assert isinstance(event, ToolsListChanged)
        # The SDK dropped its cached tools/list on the event: this refetches.
        after = {t.name for t in (await client.list_tools()).tools}
        assert "hostile_spin" not in after and after < before


async def test_a_listen_stream_gets_only_what_it_asked_for(host):
    async with Client(host.server()) as client:
        async with client.listen(prompts_list_changed=True) as sub:
            # toolwarden has no prompts: nothing of the request is honoured.
            assert not sub.honored.prompts_list_changed and not sub.honored.tools_list_changed
            (host.plugins / "hostile.wasm").unlink()
            with anyio.move_on_after(3) as waited:
                await sub.__anext__()
            assert waited.cancelled_caught, "a tools/list_changed reached a stream that did not ask for it"
        tools = await client.list_tools(cache_mode="bypass")
        assert "hostile_spin" not in {t.name for t in tools.tools}, "the reload did not happen"
