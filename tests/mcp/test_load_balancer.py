"""Three `serve --http` hosts sharing one PostgreSQL, behind a real HAProxy
(round robin, no stickiness for /mcp), driven by the official Python SDK's
client at 2026-07-28 (stateless requests): its calls spread over the hosts;
an approval asked through one host is approved in the console of another;
a task is polled across hosts; a session's budget is exact across them; and
when a host is killed mid-run the client carries on through the others."""

import contextlib
import json
import threading
import time

import urllib.request

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import free_port, http_serve
from haproxy import haproxy
from test_console import CHROMIUM, TOKEN, browser  # noqa: F401 (fixture)
from test_shared_store import env, hosts, server  # noqa: F401 (fixtures)
from test_shared_tasks import deployed
from test_tasks import TASKS

pytestmark = pytest.mark.anyio

SESSION = "lb-agent"
MAX_CALLS = 14


class Served:
    """Which host answered each of a client's requests (`X-Served-By`)."""

    def __init__(self):
        self.by = []

    async def record(self, response):
        if served := response.headers.get("x-served-by"):
            self.by.append(served)


@contextlib.contextmanager
def balanced(hosts, tmp_path):
    """Hosts a, b, c behind HAProxy: (the LB's base URL, name -> process)."""
    deployment, states = deployed(hosts)
    config = deployment.workspace / "toolwarden.toml"
    config.write_text(config.read_text() + f"\n[budget]\nmax_calls = {MAX_CALLS}\n")
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    # The console's pages come from the LB's origin: the hosts are told so.
    front = free_port()
    with contextlib.ExitStack() as stack:
        ports, processes = {}, {}
        for name, state in zip("abc", states):
            ports[name] = free_port()
            processes[name], _ = stack.enter_context(http_serve(
                env(deployment, state), "--token-file", str(token),
                "--allow-origin", f"http://127.0.0.1:{front}", port=ports[name]))
        base = stack.enter_context(haproxy(tmp_path, ports, front))
        yield base, processes


def sdk_client(base: str, served: Served, **options) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    http.event_hooks = {"request": [], "response": [served.record]}
    return Client(streamable_http_client(f"{base}/mcp", http_client=http), **options)


def toolwarden(result) -> dict:
    return (result.meta or {}).get("toolwarden", {})


async def test_three_hosts_behind_haproxy_serve_one_client(hosts, tmp_path, browser):
    with balanced(hosts, tmp_path) as (base, processes):
        served = Served()
        async with sdk_client(base, served) as client:
            assert client.protocol_version == "2026-07-28"
            # Spread: consecutive calls land on every host.
            served.by.clear()
            for i in range(6):
                result = await client.call_tool("calc", {"op": "add", "a": i, "b": 1})
                assert result.structured_content == {"result": i + 1}
            assert set(served.by) == {"a", "b", "c"}, served.by

            # The budget of a named session is exact across the hosts.
            session = {"toolwarden/session": SESSION}
            ran = stopped = 0
            for i in range(MAX_CALLS + 4):
                result = await client.call_tool("calc", {"op": "add", "a": 100 + i, "b": 0}, meta=session)
                if result.is_error:
                    assert toolwarden(result)["code"] == "BUDGET_EXCEEDED", result.content
                    stopped += 1
                else:
                    ran += 1
            assert (ran, stopped) == (MAX_CALLS, 4)

            # An approval asked through one host, approved in another's console.
            args = {"path": "balanced.txt", "content": "approved elsewhere"}
            writer = {"toolwarden/session": "lb-writer"}
            served.by.clear()
            asked = await client.call_tool("write_file", args, meta=writer)
            assert toolwarden(asked)["code"] == "APPROVAL_REQUIRED", asked.content
            asked_on = served.by[-1]
            approval = toolwarden(asked)["approval_id"]
            other = next(name for name in "abc" if name != asked_on)
            await approve_in_console(browser, base, other, approval)
            ran = await client.call_tool("write_file", args, meta=writer)
            assert ran.is_error is False, ran.content
            assert toolwarden(ran)["status"] == "ok"
            again = await client.call_tool("write_file", args, meta=writer)
            assert toolwarden(again)["code"] == "DUPLICATE_CALL", "the approved call ran once"

        # A task is polled across hosts.
        mcp = f"{base}/mcp"
        task_rpc(mcp, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}})
        created, started_on = task_rpc(mcp, "tools/call", {
            "name": "slow_compute", "arguments": {"seconds": 2, "label": "balanced"}})
        assert created["result"]["resultType"] == "task", created
        polled_by = set()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            task, by = task_rpc(mcp, "tasks/get", {"taskId": created["result"]["taskId"]})
            polled_by.add(by)
            if task["result"]["status"] == "completed":
                break
            time.sleep(0.1)
        assert task["result"]["result"]["content"][0]["text"] == "computed balanced in 2s", task
        assert polled_by - {started_on}, f"polled only where it ran ({started_on})"

        # A host killed mid-run: the client carries on through the others.
        served = Served()
        failures, answered = [], []
        killed = threading.Event()

        def kill_b_soon():
            time.sleep(0.5)
            processes["b"].kill()
            processes["b"].wait()
            killed.set()

        killer = threading.Thread(target=kill_b_soon)
        killer.start()
        began = time.monotonic()
        while time.monotonic() - began < 3:
            # The one call in flight on the killed host may fail in the
            # call, or in the SDK's transport task, which ends the whole
            # client: either way the caller opens a new one and goes on.
            try:
                async with sdk_client(base, served) as client:
                    while time.monotonic() - began < 3:
                        result = await client.call_tool("calc", {"op": "mul", "a": 6, "b": 7})
                        answered.append((killed.is_set(), result.structured_content))
            except Exception as e:
                failures.append(repr(e))
        killer.join()
        after = [content for was_killed, content in answered if was_killed]
        assert len(after) >= 10 and all(c == {"result": 42} for c in after), answered[-5:]
        assert len(failures) <= 1, failures
        assert set(served.by[-5:]) <= {"a", "c"}, served.by[-10:]


def task_rpc(url: str, method: str, params: dict) -> tuple:
    """One raw 2026-07-28 request with the tasks extension (the SDK has no
    client for it), through the LB: its answer and the host that gave it."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}}}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method, "Mcp-Name": params.get("name") or params.get("taskId")})
    with urllib.request.urlopen(request, timeout=30) as response:
        text, served_by = response.read().decode(), response.headers.get("X-Served-By")
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            text = line[5:]
            break
    return json.loads(text), served_by


async def approve_in_console(browser, base: str, host: str, approval: str):
    """Signs in to the console of `host` through the LB (its cookie pins
    the browser to that host) and approves `approval` there."""
    context = await browser.new_context()
    await context.add_cookies([{"name": "TOOLWARDEN_HOST", "value": host, "url": base}])
    page = await context.new_page()
    served = []
    page.on("response", lambda r: served.append(r.headers.get("x-served-by")))
    await page.goto(f"{base}/console")
    await page.fill("input[name=token]", TOKEN)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{base}/console")
    card = f"#approval-{approval}"
    await page.wait_for_selector(card, timeout=5000)
    await page.click(f"{card} button.approve")
    await page.wait_for_url(f"**/approvals/{approval}?done=approve")
    assert "now runs once" in await page.inner_text("main")
    assert set(filter(None, served)) == {host}, served
    await context.close()
