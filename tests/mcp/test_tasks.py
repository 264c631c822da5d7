"""Long calls as tasks (the `io.modelcontextprotocol/tasks` extension,
SEP-2663) over `serve --http`, spoken raw at 2026-07-28: a call still running
after `[mcp] task_after_ms` becomes a task; a task stops for a person (an
approval, a tool's question) through `tasks/get` and `tasks/update`, obeys the
host's limits, is stopped by `tasks/cancel` and by its TTL, and every run is
governed and audited like any other call. The official suite's scenarios run in
test_conformance.py; these check what it cannot see."""

import json
import shutil
import time
import urllib.request

import pytest

from conftest import APPROVE, WASM, Host, http_serve

TASKS = "io.modelcontextprotocol/tasks"

POLICY = """
[limits]
timeout_ms = {timeout_ms}

[[rule]]
tools = ["slow_compute", "greet"]
decision = "allow"
reason = "harmless"

[[rule]]
tools = ["confirm_delete"]
decision = "ask"
reason = "deleting needs a person"

[mcp]
task_ttl_seconds = {ttl}
task_only = ["greet"]
"""


class Tasks:
    def __init__(self, url: str, host: Host):
        self.url, self.host, self.ids = url, host, 0

    def rpc(self, method: str, params: dict, *, tasks: bool = True, name: str | None = None) -> dict:
        """One 2026-07-28 request on a connection of its own; its JSON-RPC answer."""
        self.ids += 1
        caps = {"elicitation": {}, **({"extensions": {TASKS: {}}} if tasks else {})}
        params = {**params, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                      "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
                                      "io.modelcontextprotocol/clientCapabilities": caps}}
        body = json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
        key = name or params.get("name") or params.get("taskId")
        if key:
            headers["Mcp-Name"] = key
        request = urllib.request.Request(self.url, data=body, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as e:
            text = e.read().decode()
        for line in text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                message = json.loads(line[5:])
                if message.get("id") == self.ids:
                    return message
        return json.loads(text)

    def call(self, name: str, arguments: dict, tasks: bool = True, **params) -> dict:
        return self.rpc("tools/call", {"name": name, "arguments": arguments, **params}, tasks=tasks)

    def get(self, task_id: str) -> dict:
        return self.rpc("tasks/get", {"taskId": task_id})["result"]

    def until(self, task_id: str, *statuses: str, within: float = 20) -> dict:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            task = self.get(task_id)
            if task["status"] in statuses:
                return task
            time.sleep(0.1)
        raise AssertionError(f"task {task_id} never reached {statuses}: {task}")

    def outcomes(self, tool: str, at_least: int = 0) -> list:
        def of(records: list) -> list:
            return [r["data"] for r in records if r["kind"] == "outcome"]
        return of(self.host.audit(tool, until=lambda records: len(of(records)) >= at_least))


@pytest.fixture
def tasks(tmp_path, request):
    timeout_ms, ttl = getattr(request, "param", (30000, 3600))
    host = Host(tmp_path)
    shutil.copy(WASM / "conformance.wasm", host.plugins)
    (host.workspace / "toolwarden.toml").write_text(POLICY.format(timeout_ms=timeout_ms, ttl=ttl))
    with http_serve(host.env()) as (_, url):
        yield Tasks(url, host)


def accept(content: dict) -> dict:
    return {"action": "accept", "content": content}


def test_a_quick_call_is_answered_at_once_and_a_long_one_becomes_a_task(tasks):
    # The plugin's first call may wait for its code to be compiled.
    tasks.call("slow_compute", {"seconds": 0}, tasks=False)
    quick = tasks.call("slow_compute", {"seconds": 0, "label": "quick"})["result"]
    assert quick["resultType"] == "complete" and "taskId" not in quick
    created = tasks.call("slow_compute", {"seconds": 1, "label": "long"})["result"]
    assert created["resultType"] == "task" and created["status"] == "working"
    assert created["ttlMs"] == 3600 * 1000
    done = tasks.until(created["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "computed long in 1s"
    assert done["result"]["_meta"]["toolwarden"]["status"] == "ok"
    assert [o.get("code") for o in tasks.outcomes("slow_compute", at_least=3)] == [None, None, None]


def test_without_the_extension_there_are_no_tasks(tasks):
    plain = tasks.call("slow_compute", {"seconds": 1}, tasks=False)["result"]
    assert "taskId" not in plain and plain["content"][0]["text"] == "computed a result in 1s"
    refused = tasks.call("greet", {"name": "x"}, tasks=False)["error"]
    assert refused["code"] == -32021, refused
    assert TASKS in refused["data"]["requiredCapabilities"]["extensions"]
    assert tasks.rpc("tasks/get", {"taskId": "x"}, tasks=False)["error"]["code"] == -32021
    assert tasks.outcomes("greet") == [], "a refused task-only call ran"
    # A task-only tool runs as a task even when it is quick.
    created = tasks.call("greet", {"name": "Ada"})["result"]
    assert created["resultType"] == "task"
    assert tasks.until(created["taskId"], "completed")["result"]["content"][0]["text"] == "Hello, Ada!"


def test_unknown_and_guessed_task_ids_are_refused(tasks):
    for task_id in ["nope", "00000000-0000-4000-8000-000000000000"]:
        for method, extra in [("tasks/get", {}), ("tasks/cancel", {}), ("tasks/update", {"inputResponses": {}})]:
            error = tasks.rpc(method, {"taskId": task_id, **extra})["error"]
            assert error["code"] == -32602, (method, error)


def test_cancel_stops_the_running_call(tasks):
    created = tasks.call("slow_compute", {"seconds": 60})["result"]
    ack = tasks.rpc("tasks/cancel", {"taskId": created["taskId"]})["result"]
    assert ack == {"resultType": "complete"}
    started = time.monotonic()
    assert tasks.until(created["taskId"], "cancelled", "completed", "failed")["status"] == "cancelled"
    assert time.monotonic() - started < 10
    # The task reads cancelled once the cancel is taken; the sandbox stops
    # and its outcome reaches the audit log a moment later (the writer
    # commits in batches), well before the 60 s the call asked for.
    outcomes = []
    while not outcomes and time.monotonic() - started < 10:
        outcomes = tasks.outcomes("slow_compute")
        time.sleep(0.05)
    [outcome] = outcomes
    assert outcome.get("code") == "CANCELLED", "the sandbox went on after the task was cancelled"


@pytest.mark.parametrize("tasks", [(1500, 3600)], indirect=True)
def test_a_task_obeys_the_hosts_limits(tasks):
    created = tasks.call("slow_compute", {"seconds": 20})["result"]
    done = tasks.until(created["taskId"], "completed", "failed", within=15)
    assert done["status"] == "completed" and done["result"]["isError"] is True
    assert done["result"]["_meta"]["toolwarden"]["code"] == "TIMEOUT"


@pytest.mark.parametrize("tasks", [(30000, 1)], indirect=True)
def test_a_task_past_its_ttl_fails_and_its_call_stops(tasks):
    created = tasks.call("slow_compute", {"seconds": 30})["result"]
    assert created["ttlMs"] == 1000
    time.sleep(1.5)
    expired = tasks.get(created["taskId"])
    assert expired["status"] == "failed" and "expired" in expired["error"]["message"]
    deadline = time.monotonic() + 10
    while not tasks.outcomes("slow_compute") and time.monotonic() < deadline:
        time.sleep(0.2)
    [outcome] = tasks.outcomes("slow_compute")
    assert outcome.get("code") == "CANCELLED"


def approve_next(tasks, task_id):
    """Approves the approval the task waits for, which names the call."""
    waiting = tasks.until(task_id, "input_required")
    [approval] = waiting["inputRequests"]
    assert approval.startswith("approval-") and "confirm_delete" in json.dumps(waiting["inputRequests"])
    tasks.rpc("tasks/update", {"taskId": task_id, "inputResponses": {approval: accept(APPROVE)}})


def test_a_task_asks_for_answers_and_approvals_through_tasks_update(tasks):
    args = {"filename": "plan.txt"}
    # The policy asks first: quick, so handed back as input_required.
    first = tasks.call("confirm_delete", args)["result"]
    assert first["resultType"] == "input_required" and "taskId" not in first
    [key] = first["inputRequests"]
    created = tasks.call("confirm_delete", args, inputResponses={key: accept(APPROVE)},
                         requestState=first["requestState"])["result"]
    # Approved, it works a moment, then becomes a task that asks its question.
    assert created["resultType"] == "task", created
    task_id = created["taskId"]
    parked = tasks.until(task_id, "input_required")
    [question] = parked["inputRequests"]
    assert "Delete plan.txt?" in json.dumps(parked["inputRequests"][question])
    # An answer that does not fit the form never reaches the tool: the call
    # runs again (its approval went to the run that asked, so the policy asks
    # again) and asks again, under a new key.
    assert tasks.rpc("tasks/update", {"taskId": task_id, "inputResponses": {
        question: accept({"confirm": "yes"})}})["result"] == {"resultType": "complete"}
    approve_next(tasks, task_id)
    [retry] = tasks.until(task_id, "input_required")["inputRequests"]
    assert retry != question and retry.startswith("question-confirm"), retry
    tasks.rpc("tasks/update", {"taskId": task_id, "inputResponses": {retry: accept({"confirm": True})}})
    approve_next(tasks, task_id)
    done = tasks.until(task_id, "completed")
    assert done["result"]["content"][0]["text"] == "plan.txt deleted", done
    kinds = [r["kind"] for r in tasks.host.audit(
        "confirm_delete", until=lambda records: any(r["kind"] == "outcome" and not r["data"].get("code")
                                                    for r in records))]
    assert kinds.count("approval_consumed") == 3
    codes = [o.get("code") for o in tasks.outcomes("confirm_delete")]
    assert codes[-1] is None and codes.count(None) == 1, codes


def test_a_declined_approval_in_a_task_runs_nothing(tasks):
    args = {"filename": "keep.txt"}
    first = tasks.call("confirm_delete", args)["result"]
    [key] = first["inputRequests"]
    created = tasks.call("confirm_delete", args, inputResponses={key: accept(APPROVE)},
                         requestState=first["requestState"])["result"]
    task_id = created["taskId"]
    [question] = tasks.until(task_id, "input_required")["inputRequests"]
    tasks.rpc("tasks/update", {"taskId": task_id, "inputResponses": {question: accept({"confirm": True})}})
    [approval] = tasks.until(task_id, "input_required")["inputRequests"]
    tasks.rpc("tasks/update", {"taskId": task_id, "inputResponses": {approval: {"action": "decline"}}})
    done = tasks.until(task_id, "completed", "failed")
    assert done["status"] == "completed" and done["result"]["isError"] is True
    assert done["result"]["_meta"]["toolwarden"]["code"] == "APPROVAL_DENIED"


class Legacy:
    """A 2025-11-25 client over stdio, spoken raw: `initialize`, then requests
    one at a time, skipping notifications."""

    def __init__(self, host: Host):
        import subprocess
        from conftest import BINARY
        self.proc = subprocess.Popen([str(BINARY), "serve"], env=host.env(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.ids = 0
        self.initialized = self.rpc("initialize", {"protocolVersion": "2025-11-25",
                                                   "capabilities": {"elicitation": {"form": {}}},
                                                   "clientInfo": {"name": "v1", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def rpc(self, method: str, params: dict, answer=None) -> dict:
        """One request's answer; the server's own requests on the way (an
        elicitation) are answered with `answer(request)`, a result or an
        error object."""
        self.ids += 1
        self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        while True:
            message = json.loads(self.proc.stdout.readline())
            if "method" in message and "id" in message:
                assert answer, f"the server asked, unexpectedly: {message}"
                self.send({"jsonrpc": "2.0", "id": message["id"], **answer(message)})
            elif message.get("id") == self.ids:
                return message

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def recorded(host: Host, tool: str, until=bool) -> list:
    """The outcomes recorded for `tool`, once `until(outcomes)` holds (by
    default, once there are any): the host commits its records in batches,
    a moment after it answers."""
    deadline = time.monotonic() + 10
    while not until(outcomes := Tasks(None, host).outcomes(tool)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return outcomes


@pytest.fixture
def legacy(tmp_path):
    host = Host(tmp_path)
    shutil.copy(WASM / "conformance.wasm", host.plugins)
    (host.workspace / "toolwarden.toml").write_text(POLICY.format(timeout_ms=30000, ttl=3600))
    client = Legacy(host)
    client.host = host
    yield client
    client.close()


def test_a_2025_11_25_client_runs_a_long_call_as_a_task(legacy):
    """That revision's tasks, spoken raw over stdio: declared at initialize,
    offered per tool, created on request, polled, fetched, listed."""
    initialized = legacy.initialized["result"]
    assert initialized["protocolVersion"] == "2025-11-25"
    assert initialized["capabilities"]["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    support = {t["name"]: t["execution"]["taskSupport"] for t in legacy.rpc("tools/list", {})["result"]["tools"]}
    assert support["greet"] == "required" and support["slow_compute"] == "optional", support
    started = time.monotonic()
    created = legacy.rpc("tools/call", {"name": "slow_compute", "arguments": {"seconds": 2, "label": "v1"},
                                        "task": {"ttl": 60000}})["result"]
    assert time.monotonic() - started < 1.5, "the task was answered before the call ended"
    task = created["task"]
    assert task["status"] == "working" and task["ttl"] == 60000 and task["pollInterval"] > 0, task
    assert set(task) >= {"taskId", "createdAt", "lastUpdatedAt"} and "ttlMs" not in task, task
    polled = legacy.rpc("tasks/get", {"taskId": task["taskId"]})["result"]
    assert polled["taskId"] == task["taskId"] and polled["status"] == "working", polled
    result = legacy.rpc("tasks/result", {"taskId": task["taskId"]})["result"]
    assert time.monotonic() - started >= 2, "tasks/result waited for the call"
    assert result["content"][0]["text"] == "computed v1 in 2s" and result["isError"] is False, result
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
    assert "resultType" not in result, result
    assert legacy.rpc("tasks/get", {"taskId": task["taskId"]})["result"]["status"] == "completed"
    [listed] = legacy.rpc("tasks/list", {})["result"]["tasks"]
    assert listed["taskId"] == task["taskId"] and listed["status"] == "completed"
    assert len(recorded(legacy.host, "slow_compute")) == 1


def test_a_2025_11_25_task_is_cancelled_and_its_limits_hold(legacy):
    created = legacy.rpc("tools/call", {"name": "slow_compute", "arguments": {"seconds": 60},
                                        "task": {"ttl": 10 ** 12}})["result"]["task"]
    assert created["ttl"] == 3600 * 1000, "the host's TTL caps the one asked for"
    cancelled = legacy.rpc("tasks/cancel", {"taskId": created["taskId"]})["result"]
    assert cancelled["status"] == "cancelled", cancelled
    again = legacy.rpc("tasks/cancel", {"taskId": created["taskId"]})["error"]
    assert again["code"] == -32602 and "already ended" in again["message"], again
    [outcome] = recorded(legacy.host, "slow_compute")
    assert outcome.get("code") == "CANCELLED"
    for method in ["tasks/get", "tasks/result", "tasks/cancel"]:
        assert legacy.rpc(method, {"taskId": "nope"})["error"]["code"] == -32602, method
    # A task-only tool without a task is refused as the revision says; with
    # one, quick as it is, it is a task.
    refused = legacy.rpc("tools/call", {"name": "greet", "arguments": {"name": "Ada"}})["error"]
    assert refused["code"] == -32601 and "only as a task" in refused["message"], refused
    quick = legacy.rpc("tools/call", {"name": "greet", "arguments": {"name": "Ada"}, "task": {}})["result"]["task"]
    assert legacy.rpc("tasks/result", {"taskId": quick["taskId"]})["result"]["content"][0]["text"] == "Hello, Ada!"
    bad = legacy.rpc("tools/call", {"name": "greet", "arguments": {"name": "x"}, "task": {"ttl": "soon"}})["error"]
    assert bad["code"] == -32602 and "`task`" in bad["message"], bad
    assert len(recorded(legacy.host, "greet")) == 1, "the refused or the malformed call ran"


class V1Http:
    """A 2025-11-25 client over Streamable HTTP, spoken raw: its own session."""

    def __init__(self, url: str, elicitation: bool):
        self.url, self.ids, self.session = url, 0, None
        caps = {"elicitation": {"form": {}}} if elicitation else {}
        self.initialized = self.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": caps,
                                                   "clientInfo": {"name": "v1-http", "version": "0"}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, message: dict) -> str:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.session:
            headers |= {"Mcp-Session-Id": self.session, "MCP-Protocol-Version": "2025-11-25"}
        request = urllib.request.Request(self.url, data=json.dumps(message).encode(), method="POST",
                                         headers=headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            self.session = self.session or response.headers.get("Mcp-Session-Id")
            return response.read().decode()

    def rpc(self, method: str, params: dict) -> dict:
        self.ids += 1
        text = self.post({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        for line in text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                message = json.loads(line[5:])
                if message.get("id") == self.ids:
                    return message
        raise AssertionError(f"no answer to {method}: {text}")


def test_a_2025_11_25_task_outlives_its_session_and_is_listed_only_to_it(tasks):
    """Over HTTP: another session may fetch a task by its id (the id is the
    key), but `tasks/list` shows each session only the tasks it started; a
    client that cannot show forms gets what its task stopped for."""
    first, second = V1Http(tasks.url, elicitation=True), V1Http(tasks.url, elicitation=False)
    assert first.initialized["result"]["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    created = first.rpc("tools/call", {"name": "slow_compute", "arguments": {"seconds": 1, "label": "h"},
                                       "task": {}})["result"]["task"]
    assert [t["taskId"] for t in first.rpc("tasks/list", {})["result"]["tasks"]] == [created["taskId"]]
    assert second.rpc("tasks/list", {})["result"]["tasks"] == [], "a session saw another's task"
    result = second.rpc("tasks/result", {"taskId": created["taskId"]})["result"]
    assert result["content"][0]["text"] == "computed h in 1s"
    stopped = second.rpc("tools/call", {"name": "confirm_delete", "arguments": {"filename": "x.txt"},
                                        "task": {}})["result"]["task"]
    answer = second.rpc("tasks/result", {"taskId": stopped["taskId"]})["result"]
    assert answer["isError"] is True and answer["_meta"]["toolwarden"]["code"] == "APPROVAL_REQUIRED", answer
    assert answer["_meta"]["toolwarden"]["approval_id"], answer
    deadline = time.monotonic() + 10
    while not (records := tasks.host.audit("confirm_delete")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert any(r["kind"] == "refused" and "APPROVAL_REQUIRED" in json.dumps(r["data"]) for r in records), records
    assert not any(r["kind"] == "outcome" for r in records), "the call ran without its approval"


def test_a_person_not_reached_about_a_2025_11_25_task_decides_nothing(legacy):
    """The client fails the elicitation `tasks/result` sends: the task still
    waits for the person, and a later `tasks/result` asks again."""
    created = legacy.rpc("tools/call", {"name": "confirm_delete", "arguments": {"filename": "a.txt"},
                                        "task": {}})["result"]["task"]
    task_id = created["taskId"]
    asked = []

    def fail(request):
        asked.append(request["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"])
        return {"error": {"code": -32603, "message": "the window was closed"}}

    failed = legacy.rpc("tasks/result", {"taskId": task_id}, answer=fail)["error"]
    assert "not reached" in failed["message"] and asked == [task_id], failed
    assert legacy.rpc("tasks/get", {"taskId": task_id})["result"]["status"] == "input_required"

    def accept_all(request):
        fields = request["params"]["requestedSchema"]["properties"]
        return {"result": {"action": "accept", "content": {f: APPROVE.get(f, True) for f in fields}}}

    done = legacy.rpc("tasks/result", {"taskId": task_id}, answer=accept_all)["result"]
    assert done["content"][0]["text"] == "a.txt deleted", done
    finished = recorded(legacy.host, "confirm_delete", until=lambda outcomes: outcomes and outcomes[-1].get("code") is None)
    codes = [o.get("code") for o in finished]
    assert "APPROVAL_DENIED" not in codes and codes[-1] is None, codes
