"""Resources from a plugin (contract toolwarden:tool@0.3.0) reach an MCP
client only as the policy decides: `resources/list` and
`resources/templates/list` show what a session may read, a `resources/read`
outside the rules is refused with POLICY_DENIED before the plugin runs, a
URI nobody serves is -32602 with the URI in `data`, a subscription is taken
only for a readable URI, and every read is in the audit log. A plugin's
tool announces that its resources changed, and only the sessions subscribed
to such a URI hear it (`resources/subscribe`, or a 2026-07-28 listen
stream), and only of a URI they may read. The official Python SDK is the
client; the conformance suite's resource scenarios run in
test_conformance.py."""

import anyio
import pytest
from mcp import Client, ClientSession, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated

from conftest import http_serve, listening_session

pytestmark = pytest.mark.anyio

RESOURCES = """
[[rule]]
resources = ["test://static-*", "test://template/*"]
decision = "allow"
reason = "static and templated fixture data"

[[rule]]
tools = ["touch_resource"]
decision = "allow"
reason = "announces changes, changes nothing"
"""

TOUCHED = ["test://static-text", "test://watched-resource", "test://static-binary"]


@pytest.fixture
def resource_host(host):
    return host.with_conformance(RESOURCES)


async def test_the_policy_decides_which_resources_a_client_lists_and_reads(resource_host):
    async with stdio_client(resource_host.server()) as (r, w), ClientSession(r, w) as s:
        initialized = await s.initialize()
        assert initialized.capabilities.resources is not None
        listed = [str(r.uri) for r in (await s.list_resources()).resources]
        assert listed == ["test://static-text", "test://static-binary"], listed
        templates = [t.uri_template for t in (await s.list_resource_templates()).resource_templates]
        assert templates == ["test://template/{id}/data"]

        text = await s.read_resource("test://static-text")
        assert text.contents[0].text == "This is the content of the static text resource."
        filled = await s.read_resource("test://template/7/data")
        assert '"id":"7"' in filled.contents[0].text

        with pytest.raises(MCPError) as denied:
            await s.read_resource("test://watched-resource")
        assert denied.value.error.code == -32602
        assert denied.value.error.message.startswith("POLICY_DENIED"), denied.value.error
        with pytest.raises(MCPError) as missing:
            await s.read_resource("test://template/1/2/nothing")
        assert missing.value.error.code == -32602
        assert missing.value.error.data["uri"] == "test://template/1/2/nothing"

        await s.subscribe_resource("test://static-text")
        with pytest.raises(MCPError) as refused:
            await s.subscribe_resource("test://watched-resource")
        assert refused.value.error.message.startswith("POLICY_DENIED")

    records = resource_host.audit("resource:test://watched-resource",
                                  until=lambda rs: any(r["kind"] == "refused" for r in rs))
    assert [r["kind"] for r in records] == ["call", "policy", "refused"], records
    read = resource_host.audit("resource:test://static-text",
                               until=lambda rs: any(r["kind"] == "outcome" for r in rs))
    assert [r["kind"] for r in read] == ["call", "policy", "outcome"], read


class Updates:
    """The `notifications/resources/updated` a session hears, in order."""

    def __init__(self):
        self.uris = []
        self.heard = anyio.Event()

    async def __call__(self, message):
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
            self.heard.set()

    async def quiet(self, seconds=1.0):
        await anyio.sleep(seconds)
        return self.uris


async def test_only_a_subscribed_session_hears_that_a_resource_changed(resource_host):
    watching, idle = Updates(), Updates()
    with http_serve(resource_host.env()) as (_, url):
        async with listening_session(url, message_handler=watching) as a, \
                listening_session(url, message_handler=idle) as b:
            await a.subscribe_resource("test://static-text")
            # Another session's call announces three changes: the watching
            # session hears of the one it subscribed to, the other of none.
            result = await b.call_tool("touch_resource", {"uris": TOUCHED})
            assert not result.is_error, result
            with anyio.fail_after(10):
                await watching.heard.wait()
            assert await watching.quiet() == ["test://static-text"]
            assert idle.uris == [], "a session that subscribed to nothing heard a change"

            await a.unsubscribe_resource("test://static-text")
            await a.call_tool("touch_resource", {"uris": TOUCHED})
            assert await watching.quiet() == ["test://static-text"], "heard after unsubscribing"


async def test_a_listen_stream_hears_changes_only_to_resources_it_may_read(resource_host):
    async with Client(resource_host.server()) as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(resource_subscriptions=TOUCHED[:2]) as sub:
            result = await client.call_tool("touch_resource", {"uris": list(reversed(TOUCHED))})
            assert not result.is_error, result
            with anyio.fail_after(10):
                event = await sub.__anext__()
            assert event == ResourceUpdated(uri="test://static-text")
            # The watched resource was asked for and announced, but the
            # policy does not let this session read it: never told.
            with anyio.move_on_after(1.5) as waited:
                await sub.__anext__()
            assert waited.cancelled_caught, "told of a resource the session may not read"


WORKSPACE_FILES = """
[resources]
workspace = true

[[rule]]
resources = ["file:///*"]
decision = "allow"
reason = "the workspace is for reading"

[[rule]]
resources = ["file:///*/private/*"]
decision = "deny"
reason = "private stays private"
"""


async def test_the_workspaces_files_are_resources_under_the_same_rules_as_a_read(host):
    policy = host.workspace / "toolwarden.toml"
    policy.write_text(policy.read_text() + WORKSPACE_FILES)
    (host.workspace / "private").mkdir()
    (host.workspace / "private" / "key.txt").write_text("s3cret")
    (host.workspace / "notes.md").symlink_to("private/key.txt")
    base = host.workspace.resolve().as_uri() + "/"
    async with stdio_client(host.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        listed = {str(r.uri): r.name for r in (await s.list_resources()).resources}
        # The host's own config file is in the workspace but never a resource;
        # the private file is denied; the link is not listed.
        assert listed == {base + "hello.txt": "hello.txt"}, listed
        hello = await s.read_resource(base + "hello.txt")
        assert hello.contents[0].text == "hello"
        assert hello.contents[0].mime_type == "text/plain"
        for refused in ["notes.md", "private/key.txt"]:
            with pytest.raises(MCPError) as denied:
                await s.read_resource(base + refused)
            assert denied.value.error.message.startswith("POLICY_DENIED"), denied.value.error
        for nowhere in ["toolwarden.toml", "../../../../etc/passwd", "missing.txt"]:
            with pytest.raises(MCPError) as missing:
                await s.read_resource(base + nowhere)
            assert missing.value.error.code == -32602, missing.value.error
            assert not missing.value.error.message.startswith("POLICY"), missing.value.error
    read = host.audit(f"resource:{base}hello.txt", until=lambda rs: any(r["kind"] == "outcome" for r in rs))
    assert [r["kind"] for r in read] == ["call", "policy", "outcome"], read
