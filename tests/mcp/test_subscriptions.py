"""2026-07-28 `subscriptions/listen`: a client that opens a stream is told,
on that stream, when hot reload changes the tool list; and only what it asked
for. Driven by the official Python SDK's `Client.listen`."""

import anyio
import pytest
from mcp import Client
from mcp.shared.subscriptions import ToolsListChanged

pytestmark = pytest.mark.anyio


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
