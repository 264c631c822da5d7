"""A stdio server started with no workspace takes it from the client's roots.

MCP clients start their servers in the home folder or in `/`. A client that
offers roots (`roots/list`) names the folder itself: the server answers the
handshake, asks for the roots, and governs the first root that holds a
`toolwarden.toml` (else the first project folder). Driven here by the
official Python SDK's stdio client, started from `/` with the workspace left
out of the server's environment.
"""

import json
from pathlib import Path

import pytest
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from conftest import BINARY


def rootless(host, home):
    """The host's server, started from `/` with no workspace named."""
    env = host.env()
    del env["TOOLWARDEN_WORKSPACE"]
    env["HOME"] = str(home)
    return StdioServerParameters(command=str(BINARY), args=["serve"], env=env, cwd="/")


def offering(*uris):
    asked = []

    async def list_roots(_context):
        asked.append(True)
        return types.ListRootsResult(roots=[types.Root(uri=uri) for uri in uris])

    return list_roots, asked


def text(result) -> str:
    return json.dumps(result.model_dump(mode="json"))


@pytest.mark.anyio
async def test_the_workspace_is_the_root_that_holds_the_config(host, tmp_path):
    home = tmp_path / "home"
    other = tmp_path / "other-project"
    for folder in (home, other):
        folder.mkdir()
    # A project without a config comes first: it is not the one chosen.
    (other / "hello.txt").write_text("the wrong folder")
    list_roots, asked = offering(
        home.as_uri(),
        other.as_uri(),
        host.workspace.as_uri(),
    )
    async with stdio_client(rootless(host, home)) as (read, write):
        async with ClientSession(read, write, list_roots_callback=list_roots) as s:
            init = await s.initialize()
            assert init.server_info.name == "toolwarden"
            assert init.capabilities.tools is not None
            # Sent right after the handshake, while the server still asks
            # for the roots: held, then answered by the real server.
            tools = {t.name for t in (await s.list_tools()).tools}
            assert {"calc", "read_file"} <= tools
            read_back = await s.call_tool("read_file", {"path": "hello.txt"})
            assert not read_back.is_error, read_back
            assert "hello" in text(read_back) and "wrong folder" not in text(read_back)
            await s.send_ping()
    assert asked == [True]
    # The calls were governed by the chosen folder's state and audit.
    assert "call" in [r["kind"] for r in host.audit("read_file")]


@pytest.mark.anyio
async def test_without_a_config_the_first_project_folder_is_taken(host, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (host.workspace / "toolwarden.toml").unlink()
    list_roots, _ = offering(home.as_uri(), host.workspace.as_uri())
    async with stdio_client(rootless(host, home)) as (read, write):
        async with ClientSession(read, write, list_roots_callback=list_roots) as s:
            await s.initialize()
            # No config: default deny, so the tool is refused, by this host.
            refused = await s.call_tool("read_file", {"path": "hello.txt"})
            assert refused.is_error and "POLICY_DENIED" in text(refused), refused


@pytest.mark.anyio
@pytest.mark.parametrize(
    "roots", [["home"], ["/"], ["link"], ["missing"], []],
    ids=["home", "slash", "link-to-home", "missing", "none"],
)
async def test_roots_that_are_no_project_are_refused_with_why(host, tmp_path, roots):
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "link").symlink_to(home)
    folders = {"home": home, "/": Path("/"), "link": tmp_path / "link", "missing": tmp_path / "gone"}
    uris = [folders[r].as_uri() for r in roots]
    list_roots, asked = offering(*uris)
    async with stdio_client(rootless(host, home)) as (read, write):
        async with ClientSession(read, write, list_roots_callback=list_roots) as s:
            await s.initialize()
            with pytest.raises(MCPError) as refused:
                await s.list_tools()
    message = str(refused.value)
    assert "none of the folders the MCP client offers" in message, message
    assert "--workspace" in message, message
    assert refused.value.error.data == {"code": "NO_WORKSPACE"}
    assert asked == [True]
