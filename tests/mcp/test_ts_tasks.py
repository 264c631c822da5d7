"""2025-11-25 tasks as the official TypeScript SDK runs them
(`client.experimental.tasks.callToolStream`), over HTTP and stdio: the SDK
sees the capability and each tool's task support, creates tasks, polls them,
answers the approval and the tool's question the task stops for (through
`tasks/result`), cancels one and lists them; every run is governed and
audited like any other call. The official Python SDK, which has typed models
for that revision's tasks but no client for them, reads what the host
declares into those models."""

import json
import shutil
import subprocess

import pytest

from conftest import BINARY, WASM, Host, http_serve
from test_conformance import NODE, SUITE
from test_tasks import POLICY

# Beside the suite, so that Node finds the SDK pinned with it.
CLIENT = SUITE / "clients" / "ts_tasks.mjs"


def run_client(host: Host, target: str) -> dict:
    done = subprocess.run([str(NODE), str(CLIENT), target, str(BINARY)], env=host.env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("over", ["http", "stdio"])
def test_the_typescript_sdk_runs_calls_as_2025_11_25_tasks(tmp_path, over):
    host = Host(tmp_path)
    shutil.copy(WASM / "conformance.wasm", host.plugins)
    (host.workspace / "toolwarden.toml").write_text(POLICY.format(timeout_ms=30000, ttl=3600))
    if over == "http":
        with http_serve(host.env()) as (_, url):
            seen = run_client(host, url)
    else:
        seen = run_client(host, "stdio")
    assert seen["capabilities"]["tasks"]["requests"]["tools"]["call"] == {}
    assert seen["support"]["greet"] == "required" and seen["support"]["slow_compute"] == "optional"
    assert "callToolStream" in seen["plainCallOfRequired"], "the SDK refused a plain call of a task-only tool"

    long = seen["long"]
    assert long["kinds"][0] == "taskCreated" and long["kinds"][-1] == "result", long
    assert "working" in long["statuses"] and long["statuses"][-1] == "completed", long
    assert long["result"]["content"][0]["text"] == "computed ts in 1s"

    asking = seen["asking"]
    assert asking["error"] is None, asking
    assert asking["result"]["content"][0]["text"] == "plan.txt deleted", asking
    assert "input_required" in asking["statuses"], asking
    # The policy asks first, then the tool asks; its run used the approval
    # up, so the next run is asked about again, as at the CLI.
    assert [a["fields"] for a in seen["asked"]] == [["toolwarden_decision"], ["confirm"], ["toolwarden_decision"]], seen["asked"]
    assert {a["task"] for a in seen["asked"]} == {asking["taskId"]}, "a question was not tied to its task"

    assert seen["cancelAnswer"]["status"] == "cancelled", seen["cancelAnswer"]
    assert seen["cancelled"]["error"] and "cancelled" in seen["cancelled"]["error"], seen["cancelled"]
    listed = dict(seen["listed"])
    assert listed[long["taskId"]] == "completed" and listed[seen["cancelled"]["taskId"]] == "cancelled"
    assert len(listed) == 3, listed
    assert seen["plain"]["content"][0]["text"] == "computed plain in 0s", "a plain call is still plain"

    by_tool = {tool: [r["data"].get("code") for r in host.audit(tool) if r["kind"] == "outcome"]
               for tool in ["slow_compute", "confirm_delete", "greet"]}
    assert by_tool["slow_compute"].count("CANCELLED") == 1 and by_tool["slow_compute"].count(None) == 2, by_tool
    assert by_tool["confirm_delete"][-1] is None and by_tool["confirm_delete"].count(None) == 1, by_tool
    assert by_tool["greet"] == [], "the refused plain call of a task-only tool ran"


def test_the_python_sdk_reads_the_2025_11_25_task_capability_and_support(tmp_path):
    """The official Python SDK has typed models for that revision's tasks:
    what the host declares parses into them, not into leftovers."""
    import asyncio

    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    host = Host(tmp_path)
    shutil.copy(WASM / "conformance.wasm", host.plugins)
    (host.workspace / "toolwarden.toml").write_text(POLICY.format(timeout_ms=30000, ttl=3600))

    async def session():
        async with stdio_client(host.server()) as (r, w), ClientSession(r, w) as s:
            init = await s.initialize()
            return init, (await s.list_tools()).tools

    init, tools = asyncio.run(session())
    assert init.protocol_version == "2025-11-25"
    tasks = init.capabilities.tasks
    assert tasks.list is not None and tasks.cancel is not None and tasks.requests.tools.call is not None
    support = {t.name: t.execution.task_support for t in tools}
    assert support["greet"] == "required" and support["slow_compute"] == "optional", support
