"""Regression for issue #17: a plugin whose schema's `$ref`s form a chain
100,000 links long overflowed the host's stack, and a running server died as
soon as such a file landed in its watched plugins directory. Here it is
refused at load on every entry point, and the server keeps serving."""

import shutil

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from conftest import WASM, http_serve

pytestmark = pytest.mark.anyio

CHAIN = WASM / "ref_chain.wasm"
# Past the schema size limit, so that the chain itself is what is refused.
BIG_SCHEMAS = "[limits]\nmax_schema_kb = 16384\n"


@pytest.fixture
def chained(host):
    assert CHAIN.exists(), f"{CHAIN} is missing: run `cargo test --release` first"
    text = (host.workspace / "toolwarden.toml").read_text()
    (host.workspace / "toolwarden.toml").write_text(text.replace("[limits]\n", BIG_SCHEMAS, 1))
    return host


def test_check_names_the_chain_in_one_file(chained):
    shutil.copy(CHAIN, chained.plugins)
    code, stdout, stderr = chained.cli("check", str(chained.plugins / "ref_chain.wasm"))
    assert code == 1, stdout + stderr
    assert "more than 32 `$ref`s" in stdout + stderr


async def test_serve_over_stdio_refuses_it_at_start_and_on_hot_reload(chained):
    shutil.copy(CHAIN, chained.plugins)
    async with stdio_client(chained.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        names = {t.name for t in (await s.list_tools()).tools}
        assert "calc" in names and "chained" not in names
        shutil.copy(CHAIN, chained.plugins / "ref_chain_again.wasm")
        await anyio.sleep(1.5)  # past the watcher's 500 ms poll and a load
        res = await s.call_tool("calc", {"op": "add", "a": 1, "b": 2})
        assert res.structured_content == {"result": 3}


async def test_serve_over_http_refuses_it_on_hot_reload(chained):
    with http_serve(chained.env()) as (proc, url):
        async with streamable_http_client(url) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            shutil.copy(CHAIN, chained.plugins)
            await anyio.sleep(1.5)
            assert proc.poll() is None, "the server died"
            res = await s.call_tool("calc", {"op": "mul", "a": 6, "b": 7})
            assert res.structured_content == {"result": 42}
            names = {t.name for t in (await s.list_tools()).tools}
            assert "chained" not in names
