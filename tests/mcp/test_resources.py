"""Resources from a plugin (contract toolwarden:tool@0.3.0) reach an MCP
client only as the policy decides: `resources/list` and
`resources/templates/list` show what a session may read, a `resources/read`
outside the rules is refused with POLICY_DENIED before the plugin runs, a
URI nobody serves is -32602 with the URI in `data`, a subscription is taken
only for a readable URI, and every read is in the audit log. The official
Python SDK is the client; the conformance suite's resource scenarios run in
test_conformance.py."""

import shutil

import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from conftest import WASM

pytestmark = pytest.mark.anyio

RESOURCES = """
[[rule]]
resources = ["test://static-*", "test://template/*"]
decision = "allow"
reason = "static and templated fixture data"
"""


@pytest.fixture
def resource_host(host):
    shutil.copy(WASM / "conformance.wasm", host.plugins)
    policy = host.workspace / "toolwarden.toml"
    policy.write_text(policy.read_text() + RESOURCES)
    return host


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
