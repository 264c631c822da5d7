"""`toolwarden serve` over stdio, driven by the official MCP Python SDK."""

import time
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, types
from mcp.client.stdio import stdio_client

from conftest import APPROVE

pytestmark = pytest.mark.anyio


def meta(result) -> dict:
    return (result.meta or {}).get("toolwarden", {})


async def test_lists_tools_with_annotations_and_hides_denied_ones(host):
    async with stdio_client(host.server()) as (r, w), ClientSession(r, w) as s:
        info = await s.initialize()
        assert info.server_info.name == "toolwarden"
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert {"calc", "read_file", "write_file", "hostile_spin"} <= set(tools)
        assert "hostile_panic" not in tools, "tools the policy always denies are left out"
        read = tools["read_file"]
        assert read.annotations.read_only_hint is True
        assert read.annotations.destructive_hint is False
        assert read.annotations.idempotent_hint is True
        write = tools["write_file"]
        assert write.annotations.read_only_hint is False
        assert write.annotations.destructive_hint is True
        assert write.input_schema["required"] == ["path", "content"]
        assert write.output_schema["properties"]["bytes"]["type"] == "integer"


async def test_an_allowed_call_returns_structured_content(host):
    async with stdio_client(host.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        res = await s.call_tool("calc", {"op": "mul", "a": 6, "b": 7})
        assert res.is_error is False
        assert res.structured_content == {"result": 42}
        assert res.content[0].text == "42"
        assert meta(res)["status"] == "ok"


async def test_invalid_arguments_and_denials_are_error_results_with_codes(host):
    async with stdio_client(host.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        bad = await s.call_tool("calc", {"op": "mul", "a": "six"})
        assert bad.is_error is True
        assert meta(bad)["code"] == "INVALID_ARGS"
        assert bad.content[0].text.startswith("INVALID_ARGS: ")
        assert "`/a` must be integer" in bad.content[0].text
        denied = await s.call_tool("hostile_panic", {})
        assert denied.is_error is True
        assert meta(denied)["code"] == "POLICY_DENIED"
        assert "add to toolwarden.toml" in denied.content[0].text
        unknown = await s.call_tool("no_such_tool", {})
        assert meta(unknown)["code"] == "UNKNOWN_TOOL"


async def test_ask_accepted_through_elicitation_runs_exactly_once(host):
    asked = []

    async def approve(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content=APPROVE)

    async with stdio_client(host.server()) as (r, w), ClientSession(r, w, elicitation_callback=approve) as s:
        await s.initialize()
        res = await s.call_tool("write_file", {"path": "out.txt", "content": "approved"})
        assert res.is_error is False, res.content
        assert res.structured_content == {"path": "out.txt", "bytes": 8}
    assert (host.workspace / "out.txt").read_text() == "approved"
    assert len(asked) == 1 and "write_file" in asked[0] and "writes need a person" in asked[0]
    kinds = [r["kind"] for r in host.audit("write_file")]
    assert kinds.count("approval_consumed") == 1
    assert kinds.count("outcome") == 1


async def test_ask_declined_through_elicitation_does_not_run(host):
    async def decline(context, params):
        return types.ElicitResult(action="decline")

    async with stdio_client(host.server()) as (r, w), ClientSession(r, w, elicitation_callback=decline) as s:
        await s.initialize()
        res = await s.call_tool("write_file", {"path": "out.txt", "content": "no"})
        assert res.is_error is True
        assert meta(res)["code"] == "APPROVAL_DENIED"
    assert not (host.workspace / "out.txt").exists()
    assert "outcome" not in [r["kind"] for r in host.audit("write_file")]


async def test_without_elicitation_a_person_approves_then_the_same_call_runs_once(host):
    args = {"path": "later.txt", "content": "approved later"}
    async with stdio_client(host.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        first = await s.call_tool("write_file", args)
        assert first.is_error is True
        assert meta(first)["code"] == "APPROVAL_REQUIRED"
        approval = meta(first)["approval_id"]
        assert approval in first.content[0].text
        again = await s.call_tool("write_file", args)
        assert meta(again)["approval_id"] == approval, "a retry reuses the pending approval"
        assert not (host.workspace / "later.txt").exists()

        code, stdout, stderr = host.cli("approvals", "approve", approval)
        assert code == 0, stderr

        ran = await s.call_tool("write_file", args)
        assert ran.is_error is False, ran.content
        assert (host.workspace / "later.txt").read_text() == "approved later"
        once_more = await s.call_tool("write_file", args)
        assert once_more.is_error is True
        assert meta(once_more)["code"] in ("APPROVAL_REQUIRED", "DUPLICATE_CALL")


async def test_progress_notifications_arrive(host):
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    async with stdio_client(host.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        res = await s.call_tool("hostile_progress", {"steps": 5}, progress_callback=on_progress)
        assert res.is_error is False
        await anyio.sleep(0.2)
    assert [p for p, _, _ in seen] == [1, 2, 3, 4, 5], seen
    assert seen[-1][1] == 5 and seen[-1][2] == "step 5 of 5"


async def test_cancelling_a_busy_loop_stops_it_quickly(host):
    async with stdio_client(host.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        # The plugin's first call compiles its optimized code; the spin
        # below must be running when it is cancelled, not waiting for it.
        await s.call_tool("hostile_progress", {"steps": 1})
        started = time.monotonic()
        with anyio.move_on_after(0.3):
            await s.call_tool("hostile_spin", {})
        assert time.monotonic() - started < 5
        # The server keeps serving, and the busy loop was stopped, not left running.
        res = await s.call_tool("calc", {"op": "add", "a": 1, "b": 1})
        assert res.structured_content == {"result": 2}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        outcomes = [r["data"] for r in host.audit("hostile_spin") if r["kind"] == "outcome"]
        if outcomes:
            break
        time.sleep(0.1)
    assert outcomes and outcomes[0]["code"] == "CANCELLED", outcomes
    assert "did not run" not in outcomes[0]["message"], "it was running"
    assert outcomes[0]["duration_us"] < 2_000_000, "stopped well before its 30 s deadline"


async def test_busy_calls_do_not_hold_up_the_connection(host):
    # A call that does not finish at once goes on off the connection's
    # thread: two busy loops run while other calls are answered.
    async with stdio_client(host.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        async with anyio.create_task_group() as busy:
            for _ in range(2):
                busy.start_soon(s.call_tool, "hostile_spin", {})
            await anyio.sleep(0.3)
            with anyio.fail_after(10):
                for n in range(5):
                    res = await s.call_tool("calc", {"op": "add", "a": n, "b": 1})
                    assert res.structured_content == {"result": n + 1}
            spins = [r for r in host.audit("hostile_spin") if r["kind"] == "outcome"]
            assert spins == [], "the busy loops were still running"
            busy.cancel_scope.cancel()


async def test_a_plugin_copied_into_the_plugins_dir_appears_after_list_changed(host):
    fs = host.plugins / "fs.wasm"
    parked = host.workspace.parent / "fs.wasm.parked"
    fs.rename(parked)
    changed = anyio.Event()

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with stdio_client(host.server()) as (r, w), ClientSession(r, w, message_handler=on_message) as s:
        await s.initialize()
        names = {t.name for t in (await s.list_tools()).tools}
        assert "read_file" not in names
        import shutil

        shutil.copy(parked, fs)
        with anyio.fail_after(10):
            await changed.wait()
        names = {t.name for t in (await s.list_tools()).tools}
        assert "read_file" in names
        res = await s.call_tool("read_file", {"path": "hello.txt"})
        assert res.structured_content["content"] == "hello"


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
def test_a_signal_ends_the_server_with_its_calls_recorded(host, signal_name):
    """How a client stops a stdio server that outlives its closed stdin:
    the server cancels the call still running, records it, commits the
    audit it has queued and exits 0, instead of dying with its last batch."""
    import json
    import signal
    import subprocess

    from conftest import BINARY

    proc = subprocess.Popen([str(BINARY), "serve"], env=host.env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def send(message: dict):
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        proc.stdin.flush()

    def answer(id_: int) -> dict:
        while True:
            message = json.loads(proc.stdout.readline())
            if message.get("id") == id_:
                return message

    send({"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                                      "clientInfo": {"name": "raw", "version": "0"}}})
    answer(1)
    send({"method": "notifications/initialized"})
    send({"id": 2, "method": "tools/call", "params": {"name": "hostile_spin", "arguments": {}}})
    time.sleep(0.5)  # it is spinning now
    send({"id": 3, "method": "tools/call", "params": {"name": "calc",
                                                      "arguments": {"op": "add", "a": 1, "b": 2}}})
    assert answer(3)["result"]["structuredContent"] == {"result": 3}
    proc.send_signal(getattr(signal, signal_name))
    assert proc.wait(timeout=10) == 0
    calc = [r["data"] for r in host.audit("calc") if r["kind"] == "outcome"]
    assert len(calc) == 1 and calc[0]["status"] == "ok", calc
    spin = [r["data"] for r in host.audit("hostile_spin") if r["kind"] == "outcome"]
    assert len(spin) == 1 and spin[0]["code"] == "CANCELLED", spin
    code, out, err = host.cli("audit", "verify")
    assert code == 0, out + err


SCHED_IDLE = 5


def writer_policy(pid: int) -> int:
    """The scheduling policy of the host's audit writer thread."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        if (task / "comm").read_text().strip() == "toolwarden-audi":
            stat = (task / "stat").read_text()
            return int(stat[stat.rindex(")") + 2:].split()[38])
    raise AssertionError("no audit writer thread")


def test_the_stdio_audit_writer_yields_every_cpu_and_the_http_one_does_not(host):
    """Over stdio, one client's calls come one at a time and an answer must
    never wait for a commit: the writer runs in Linux's SCHED_IDLE class.
    Over HTTP many callers can fill every core, and there it must not
    starve."""
    import json
    import subprocess

    from conftest import BINARY, http_serve

    proc = subprocess.Popen([str(BINARY), "serve"], env=host.env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        def rpc(id_: int, method: str, params: dict) -> dict:
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n")
            proc.stdin.flush()
            while (message := json.loads(proc.stdout.readline())).get("id") != id_:
                pass
            return message

        rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "0"}})
        proc.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        answer = rpc(2, "tools/call", {"name": "calc", "arguments": {"op": "add", "a": 1, "b": 2}})
        assert answer["result"]["structuredContent"] == {"result": 3}, answer
        # The writer switches when it takes the call's records, which may
        # be a moment after the answer went out.
        deadline = time.monotonic() + 10
        while writer_policy(proc.pid) != SCHED_IDLE and time.monotonic() < deadline:
            time.sleep(0.02)
        assert writer_policy(proc.pid) == SCHED_IDLE
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
    with http_serve(host.env()) as (served, _):
        assert writer_policy(served.pid) != SCHED_IDLE
