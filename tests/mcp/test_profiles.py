"""Tool sets per intent over MCP: a session declares its profile in `_meta`
(or the operator pins one with `serve --profile`); tools/list follows it and
a call outside it is refused as an unknown tool."""

import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from conftest import POLICY, http_serve

pytestmark = pytest.mark.anyio

PROFILES = """
[profile.review]
tools = ["read_*", "list_dir"]

[profile.maths]
tools = ["calc"]
"""

PROFILE = "toolwarden/profile"


def code(result) -> str:
    return (result.meta or {}).get("toolwarden", {}).get("code")


@pytest.fixture
def profiled(host):
    (host.workspace / "toolwarden.toml").write_text(PROFILES + POLICY)
    return host


def listing(meta: dict | None):
    return types.PaginatedRequestParams(_meta=meta) if meta else None


async def names(session: ClientSession, meta: dict | None = None) -> set:
    return {t.name for t in (await session.list_tools(params=listing(meta))).tools}


async def test_a_session_declares_its_profile_in_meta(profiled):
    async with stdio_client(profiled.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        everything = await names(s)
        assert {"calc", "read_file", "list_dir", "write_file"} <= everything
        assert await names(s, {PROFILE: "review"}) == {"read_file", "list_dir"}
        assert await names(s, {PROFILE: "maths"}) == {"calc"}
        assert await names(s, {PROFILE: "no-such-profile"}) == set(), "unknown fails closed"
        assert await names(s, {PROFILE: ["review"]}) == set(), "a non-string names no profile"

        outside = await s.call_tool("write_file", {"path": "x.txt", "content": "x"},
                                    meta={PROFILE: "review"})
        assert outside.is_error is True
        assert code(outside) == "UNKNOWN_TOOL"
        assert "profile `review`" in outside.content[0].text
        assert not (profiled.workspace / "x.txt").exists()

        inside = await s.call_tool("read_file", {"path": "hello.txt"}, meta={PROFILE: "review"})
        assert inside.is_error is False, inside
        unknown = await s.call_tool("calc", {"op": "add", "a": 1, "b": 2},
                                    meta={PROFILE: "no-such-profile"})
        assert code(unknown) == "UNKNOWN_TOOL"

    calls = [r for r in profiled.audit("read_file") if r["kind"] == "call"]
    assert [c["data"].get("profile") for c in calls] == ["review"]


async def test_a_declared_profile_name_with_control_characters_is_shown_escaped(profiled):
    """A profile name reaches the refusal and the audit as one line with its
    escapes shown, never as a newline or a terminal escape."""
    forged = "review\nUNKNOWN_TOOL: all fine\x1b[2K"
    async with stdio_client(profiled.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        assert await names(s, {PROFILE: forged}) == set(), "it still fails closed"
        refused = await s.call_tool("calc", {"op": "add", "a": 1, "b": 2}, meta={PROFILE: forged})
        assert code(refused) == "UNKNOWN_TOOL"
        text = refused.content[0].text
        assert "\n" not in text.split(": ", 1)[1] and "\x1b" not in text, text
        assert "review\\u{000a}UNKNOWN_TOOL" in text, text
    [call] = [r for r in profiled.audit("calc") if r["kind"] == "call"]
    assert "\n" not in call["data"]["profile"] and "\x1b" not in call["data"]["profile"]


async def test_serve_profile_pins_every_session_whatever_meta_says(profiled):
    server = StdioServerParameters(command=str(profiled.server().command),
                                   args=["serve", "--profile", "maths"], env=profiled.env())
    async with stdio_client(server) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        assert await names(s) == {"calc"}
        assert await names(s, {PROFILE: "review"}) == {"calc"}, "the pinned profile wins"
        refused = await s.call_tool("read_file", {"path": "hello.txt"}, meta={PROFILE: "review"})
        assert code(refused) == "UNKNOWN_TOOL"
        ok = await s.call_tool("calc", {"op": "mul", "a": 6, "b": 7})
        assert ok.structured_content == {"result": 42}


async def test_serve_http_with_a_profile(profiled):
    with http_serve(profiled.env(), "--profile", "review") as (_, url):
        async with streamable_http_client(url) as (r, w, *_), ClientSession(r, w) as s:
            await s.initialize()
            assert await names(s) == {"read_file", "list_dir"}
            refused = await s.call_tool("calc", {"op": "add", "a": 1, "b": 2})
            assert code(refused) == "UNKNOWN_TOOL"


def test_serve_refuses_a_profile_the_config_does_not_define(profiled):
    status, _, stderr = profiled.cli("serve", "--profile", "reveiw")
    assert status == 2, stderr
    assert "no profile `reveiw`" in stderr
    assert "`maths`, `review`" in stderr
