"""MCP tasks across hosts that share a store: a task started through one host
is polled, answered and cancelled through others, as a client behind a load
balancer without stickiness does it, and a task whose host died is failed
within the lease the README states, never left working. Spoken raw at
2026-07-28 (the tasks extension), against a real PostgreSQL 15."""

import contextlib
import json
import shutil
import time

import pytest

from conftest import APPROVE, WASM, Host, http_serve
from test_shared_store import env, hosts, outcomes, replicas, server  # noqa: F401 (fixtures)
from test_tasks import Tasks, accept

LEASE_S = 10

RULES = """
[[rule]]
tools = ["slow_compute"]
decision = "allow"
reason = "harmless"

[[rule]]
tools = ["confirm_delete"]
decision = "ask"
reason = "deleting needs a person"
"""


def deployed(hosts) -> tuple:
    deployment, states = hosts
    shutil.copy(WASM / "conformance.wasm", deployment.plugins)
    config = deployment.workspace / "toolwarden.toml"
    config.write_text(config.read_text() + RULES)
    return deployment, states


def through(deployment: Host, urls: list) -> list:
    return [Tasks(url, deployment) for url in urls]


def test_a_task_is_polled_answered_and_cancelled_through_other_hosts(hosts):
    deployment, (a, b, c, _) = deployed(hosts)
    with contextlib.ExitStack() as stack:
        on_a, on_b, on_c = through(deployment, replicas(deployment, (a, b, c), stack))
        for host in (on_a, on_b, on_c):
            host.call("slow_compute", {"seconds": 0}, tasks=False)
        # Started on A, its result is read on B.
        created = on_a.call("slow_compute", {"seconds": 2, "label": "spread"})["result"]
        assert created["resultType"] == "task", created
        task_id = created["taskId"]
        assert on_b.get(task_id)["status"] == "working", "B finds the task before it ends"
        done = on_b.until(task_id, "completed")
        assert done["result"]["content"][0]["text"] == "computed spread in 2s"
        assert on_c.get(task_id)["status"] == "completed"

        # Started on A, cancelled through C: the call on A stops.
        long = on_a.call("slow_compute", {"seconds": 60, "label": "stopped"})["result"]["taskId"]
        assert on_c.rpc("tasks/cancel", {"taskId": long})["result"] == {"resultType": "complete"}
        began = time.monotonic()
        assert on_b.until(long, "cancelled", within=5)["status"] == "cancelled"
        assert time.monotonic() - began < 5
        stopped = []
        while not stopped and time.monotonic() - began < 10:
            stopped = [o for o in outcomes(deployment, c, "slow_compute") if o.get("code") == "CANCELLED"]
            time.sleep(0.1)
        assert len(stopped) == 1, "the call on A stopped, and the shared trail says so"
        assert on_b.rpc("tasks/update", {"taskId": long, "inputResponses": {}})["result"]["resultType"] \
            == "complete", "an update of an ended task is taken and ignored, on any host"

        # A task that waits for a person is answered through other hosts: the
        # approval through C, the tool's question through A, polled on B.
        args = {"filename": "plan.txt"}
        first = on_a.call("confirm_delete", args)["result"]
        [key] = first["inputRequests"]
        created = on_b.call("confirm_delete", args, inputResponses={key: accept(APPROVE)},
                            requestState=first["requestState"])["result"]
        assert created["resultType"] == "task", created
        asking = created["taskId"]
        parked = on_c.until(asking, "input_required")
        [question] = parked["inputRequests"]
        assert "Delete plan.txt?" in json.dumps(parked["inputRequests"][question])
        on_a.rpc("tasks/update", {"taskId": asking, "inputResponses": {question: accept({"confirm": True})}})
        # The run that asked used up its approval: the policy asks again
        # (C shows the question until A has taken the answer).
        waiting = on_c.until(asking, "input_required")
        deadline = time.monotonic() + 5
        while question in waiting["inputRequests"] and time.monotonic() < deadline:
            time.sleep(0.05)
            waiting = on_c.until(asking, "input_required")
        [approval] = waiting["inputRequests"]
        assert approval.startswith("approval-"), waiting
        on_c.rpc("tasks/update", {"taskId": asking, "inputResponses": {approval: accept(APPROVE)}})
        finished = on_a.until(asking, "completed")
        assert finished["result"]["content"][0]["text"] == "plan.txt deleted", finished
        for method, extra in [("tasks/get", {}), ("tasks/cancel", {}), ("tasks/update", {"inputResponses": {}})]:
            unknown = on_b.rpc(method, {"taskId": "0" * 32, **extra})["error"]
            assert unknown["code"] == -32602, ("a task no host ran is unknown", method, unknown)


def test_a_task_whose_host_died_is_failed_within_the_lease(hosts):
    deployment, (a, b, _, _) = deployed(hosts)
    with contextlib.ExitStack() as stack:
        running, url_a = stack.enter_context(http_serve(env(deployment, a)))
        [on_b] = through(deployment, replicas(deployment, (b,), stack))
        on_a = Tasks(url_a, deployment)
        on_a.call("slow_compute", {"seconds": 0}, tasks=False)
        task_id = on_a.call("slow_compute", {"seconds": 120, "label": "orphan"})["result"]["taskId"]
        time.sleep(1)
        assert on_b.get(task_id)["status"] == "working", "A renews its lease while it lives"
        running.kill()
        running.wait()
        died = time.monotonic()
        failed = on_b.until(task_id, "failed", "completed", "cancelled", within=LEASE_S + 5)
        waited = time.monotonic() - died
        assert failed["status"] == "failed", failed
        assert waited <= LEASE_S + 1, f"failed {waited:.1f} s after its host died"
        assert "stopped answering" in failed["error"]["message"], failed
        assert failed["error"]["data"]["code"] == "TASK_HOST_LOST"
        # It stays failed, and a cancel or an answer for it changes nothing.
        assert on_b.rpc("tasks/cancel", {"taskId": task_id})["result"]["resultType"] == "complete"
        assert on_b.get(task_id)["status"] == "failed"
