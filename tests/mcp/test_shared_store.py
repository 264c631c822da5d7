"""Several hosts, one state in PostgreSQL (`[store] url`): an approval
asked through one host is decided from another and consumed exactly once
when two more race to run it; an `input_required` retry runs once on
whichever host it lands; every host appends to one audit chain that
verifies, shows an edit, and loses no committed record when a host is
killed; a session's budget, duplicate guard and keyed calls hold across
hosts, however its calls are spread; losing the database fails closed and the host recovers by itself
when it is back. Each host has a
state directory of its own (its own SQLite file, as on its own machine);
they share the workspace and plugins, as replicas behind a load balancer
share one deployment. A real PostgreSQL 15 server runs for these tests
(tests/mcp/postgres.py)."""

import concurrent.futures
import contextlib
import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import APPROVE, BINARY, WASM, Host, http_serve
from postgres import postgres

ARGS = {"path": "shared.txt", "content": "written once"}


@pytest.fixture(scope="module")
def server():
    with postgres() as pg:
        yield pg


@pytest.fixture
def hosts(tmp_path, server, request):
    """One deployment (workspace, plugins, policy) and four state
    directories, all pointed at a fresh database of `server`."""
    database = request.node.name.replace("[", "_").replace("]", "").replace("-", "_").lower()[:60]
    server.sql(f"CREATE DATABASE {database}")
    deployment = Host(tmp_path / "deployment")
    password = server.password_file(tmp_path)
    config = deployment.workspace / "toolwarden.toml"
    config.write_text(config.read_text() + f"""
[store]
url = "postgres://toolwarden@127.0.0.1:{server.port}/{database}"
password_file = "{password}"
""")
    states = []
    for name in "abcd":
        state = tmp_path / f"state-{name}"
        state.mkdir(mode=0o700)
        states.append(state)
    return deployment, states


def env(deployment: Host, state) -> dict:
    return {**deployment.env(), "TOOLWARDEN_STATE": str(state)}


def cli(deployment: Host, state, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BINARY), *args], env=env(deployment, state),
                          capture_output=True, text=True, timeout=60)


def rpc(url: str, name: str, arguments: dict, caps: dict | None = None, session=None, **params) -> dict:
    """One 2026-07-28 `tools/call` on a connection of its own, in the
    session it names if any; its JSON-RPC answer."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": caps or {}}
    if session is not None:
        meta["toolwarden/session"] = session
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": arguments, **params, "_meta": meta}}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read().decode()
    except urllib.error.HTTPError as e:
        text = e.read().decode()
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            return json.loads(line[5:])
    return json.loads(text)


def call(url: str, name: str, arguments: dict, session=None) -> dict:
    return rpc(url, name, arguments, session=session)["result"]


def code(result: dict):
    return result.get("_meta", {}).get("toolwarden", {}).get("code")


def outcomes(deployment: Host, state, tool: str) -> list:
    return [r["data"] for r in cli_json(deployment, state, "audit", "--json", "--tool", tool)
            if r["kind"] == "outcome"]


def verify(deployment: Host, state) -> subprocess.CompletedProcess:
    return cli(deployment, state, "audit", "verify", "--json")


def assert_trail_holds(deployment: Host, state, call_ids: list):
    """The shared trail, read through `state`'s host, has an outcome for
    each of `call_ids` and verifies."""
    ended = {r["call_id"] for r in cli_json(deployment, state, "audit", "--json", "--tool", "calc")
             if r["kind"] == "outcome"}
    assert set(call_ids) <= ended, "every call that ran is in the trail"
    checked = verify(deployment, state)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def cli_json(deployment: Host, state, *args: str):
    out = cli(deployment, state, *args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def database(deployment: Host) -> str:
    """The database the deployment's `[store] url` names."""
    text = (deployment.workspace / "toolwarden.toml").read_text()
    return text.split("127.0.0.1:")[1].split("/")[1].split('"')[0]


def test_an_approval_asked_on_one_host_is_decided_on_another_and_consumed_once(hosts):
    deployment, (a, b, c, d) = hosts
    # Repeats allowed, so that the approval alone stands between the racers
    # (otherwise the duplicate guard, shared too, stops the second first).
    config = deployment.workspace / "toolwarden.toml"
    config.write_text(config.read_text() + "\n[budget]\nallow_duplicate_calls = true\n")
    with http_serve(env(deployment, a)) as (_, url):
        asked = call(url, "write_file", ARGS)
        assert code(asked) == "APPROVAL_REQUIRED", asked
        approval = asked["_meta"]["toolwarden"]["approval_id"]
    # Host D, which never saw the call, finds it and decides it.
    listed = cli(deployment, d, "approvals", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert approval in listed.stdout
    decided = cli(deployment, d, "approvals", "approve", approval)
    assert decided.returncode == 0, decided.stderr
    # Hosts B and C race to run the approved call: exactly one does.
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda state: cli(deployment, state, "call", "write_file", json.dumps(ARGS),
                                               "--approval", approval, "--json"), (b, c)))
    ran = [r for r in runs if r.returncode == 0]
    refused = [r for r in runs if r.returncode != 0]
    assert len(ran) == 1 and len(refused) == 1, [(r.returncode, r.stdout, r.stderr) for r in runs]
    assert "APPROVAL" in refused[0].stdout + refused[0].stderr
    assert (deployment.workspace / "shared.txt").read_text() == ARGS["content"]
    # One trail: any host reads the one run.
    for state in (a, d):
        oks = [o for o in outcomes(deployment, state, "write_file") if o.get("status") == "ok"]
        assert len(oks) == 1
    # Every host sees it consumed.
    shown = cli(deployment, a, "approvals", "show", approval)
    assert shown.returncode == 0 and "consumed" in shown.stdout, shown.stdout + shown.stderr


@pytest.mark.parametrize("repeats,first_check", [
    (True, ("APPROVAL_UNAVAILABLE", "approval")),
    (False, ("HOST_ERROR", "budget could not be checked")),
], ids=["approval", "budget"])
def test_losing_the_database_fails_closed(hosts, server, repeats, first_check):
    """... and the host recovers by itself. The first step a call of a named
    session takes in the database is the budget's duplicate check (a
    write's repeats are refused by default), else the approval book. (A
    session the host made is counted in its memory: no other host knows it.)"""
    deployment, (a, *_, d) = hosts
    if repeats:
        config = deployment.workspace / "toolwarden.toml"
        config.write_text(config.read_text() + "\n[budget]\nallow_duplicate_calls = true\n")
    answered = []
    with http_serve(env(deployment, a)) as (proc, url):
        assert code(call(url, "write_file", ARGS)) == "APPROVAL_REQUIRED"
        first = call(url, "calc", {"op": "add", "a": 1, "b": 1})
        answered.append(first["_meta"]["toolwarden"]["call_id"])
        server.stop()
        try:
            down = call(url, "write_file", {**ARGS, "content": "while down"}, session="agent-down")
            assert code(down) == first_check[0], down
            assert first_check[1] in down["content"][0]["text"] and "did not run" in down["content"][0]["text"]
            # The audit log is in the database too: the calls of the moment
            # the writer finds it gone may run (their records are kept and
            # committed once the database is back); from the first refusal
            # on, nothing runs unaudited.
            during = [call(url, "calc", {"op": "add", "a": i, "b": 2}) for i in range(20)]
            first_refused = next((i for i, r in enumerate(during) if r.get("isError")), None)
            assert first_refused is not None, "calls kept running with no audit log"
            ran, refused = during[:first_refused], during[first_refused:]
            assert all(r.get("isError") for r in refused), during
            for r in refused:
                assert code(r) == "HOST_ERROR" and "audit log could not be written" in r["content"][0]["text"], r
            answered += [r["_meta"]["toolwarden"]["call_id"] for r in ran]
        finally:
            server.start()
        back = call(url, "write_file", {**ARGS, "content": "after"})
        assert code(back) == "APPROVAL_REQUIRED", back
        again = call(url, "calc", {"op": "add", "a": 2, "b": 2})
        assert again["structuredContent"] == {"result": 4}, again
        answered.append(again["_meta"]["toolwarden"]["call_id"])
        assert proc.poll() is None
    assert not (deployment.workspace / "shared.txt").exists()
    assert_trail_holds(deployment, d, answered)


def test_a_newer_schema_or_a_password_in_the_url_is_refused(hosts, server):
    deployment, (a, *_) = hosts
    assert cli(deployment, a, "approvals", "list").returncode == 0
    config = deployment.workspace / "toolwarden.toml"
    server.sql("UPDATE toolwarden_schema SET version = 99", database=database(deployment))
    newer = cli(deployment, a, "approvals", "list")
    assert newer.returncode != 0 and "newer than this host" in newer.stderr, newer.stderr
    leaked = config.read_text().replace("toolwarden@", f"toolwarden:{server.password}@")
    config.write_text(leaked)
    refused = cli(deployment, a, "approvals", "list")
    assert refused.returncode != 0 and "holds a password" in refused.stderr
    assert server.password not in refused.stderr


def test_the_environment_names_the_store_over_the_file(hosts, server, tmp_path):
    deployment, (a, b, *_) = hosts
    with http_serve(env(deployment, a)) as (_, url):
        approval = call(url, "write_file", ARGS)["_meta"]["toolwarden"]["approval_id"]
    server.sql("CREATE DATABASE elsewhere")
    elsewhere = {**env(deployment, b),
                 "TOOLWARDEN_STORE_URL": f"postgres://toolwarden@127.0.0.1:{server.port}/elsewhere",
                 "TOOLWARDEN_STORE_PASSWORD": server.password}
    config = deployment.workspace / "toolwarden.toml"
    config.write_text(config.read_text().split("[store]")[0])
    listed = subprocess.run([str(BINARY), "approvals", "list", "--json"], env=elsewhere,
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert approval not in listed.stdout
    assert server.sql("SELECT count(*) FROM approvals", database="elsewhere") == "0"


def test_an_input_required_retry_runs_once_on_whichever_host_it_lands(hosts):
    deployment, (a, b, c, _) = hosts
    with contextlib.ExitStack() as replicas:
        urls = [replicas.enter_context(http_serve(env(deployment, state)))[1] for state in (a, b, c)]
        asked = rpc(urls[0], "write_file", ARGS, caps={"elicitation": {}})["result"]
        assert asked["resultType"] == "input_required", asked
        state = asked["requestState"]
        [key] = asked["inputRequests"]
        answer = {key: {"action": "accept", "content": APPROVE}}
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            retries = list(pool.map(
                lambda url: rpc(url, "write_file", ARGS, caps={"elicitation": {}},
                                inputResponses=answer, requestState=state),
                urls[1:]))
        ran = [r for r in retries if "result" in r]
        refused = [r for r in retries if "error" in r]
        assert len(ran) == 1 and len(refused) == 1, retries
        assert ran[0]["result"].get("isError") is False, ran[0]
        assert refused[0]["error"]["code"] == -32602 and "already used" in refused[0]["error"]["message"]
        # The state is gone everywhere, the host that issued it included.
        again = rpc(urls[0], "write_file", ARGS, caps={"elicitation": {}},
                    inputResponses=answer, requestState=state)
        assert again["error"]["code"] == -32602
    assert (deployment.workspace / "shared.txt").read_text() == ARGS["content"]
    oks = [o for o in outcomes(deployment, a, "write_file") if o.get("status") == "ok"]
    assert len(oks) == 1


def test_every_host_appends_to_one_chain_that_verifies_and_shows_an_edit(hosts, server):
    deployment, (a, b, c, d) = hosts
    with contextlib.ExitStack() as replicas:
        urls = [replicas.enter_context(http_serve(env(deployment, state)))[1] for state in (a, b, c)]
        jobs = [(urls[i % 3], i) for i in range(48)]
        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(lambda job: call(job[0], "calc", {"op": "add", "a": job[1], "b": 1}), jobs))
    assert [r["structuredContent"]["result"] for r in answers] == [i + 1 for i in range(48)]
    calls = {r["_meta"]["toolwarden"]["call_id"] for r in answers}
    # Host D never served a call, yet reads every host's records in one trail.
    records = cli_json(deployment, d, "audit", "--json", "--tool", "calc")
    assert {r["call_id"] for r in records if r["kind"] == "outcome"} == calls
    seqs = [r["seq"] for r in records]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    checked = verify(deployment, d)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    stored = int(server.sql("SELECT count(*) FROM audit", database=database(deployment)))
    assert json.loads(checked.stdout)["records"] == stored >= len(records)
    # Editing one record in the database is found, from any host.
    victim = seqs[len(seqs) // 2]
    server.sql(f"UPDATE audit SET data = data || ' ' WHERE seq = {victim}", database=database(deployment))
    broken = verify(deployment, a)
    assert broken.returncode == 1, broken.stdout
    found = json.loads(broken.stdout)
    assert found["status"] == "broken" and found["seq"] == victim, found


def test_a_tail_cut_from_the_shared_chain_is_seen_by_every_host(hosts, server):
    """Host A writes the last records; they are deleted from the table. Host
    B's own head file never counted them, but the store's head, moved in
    every append's transaction, did: `audit verify` on B (and on D, which
    never served a call) names the cut, and B's next call chains after the
    head, so the cut stays a gap rather than being written over."""
    deployment, (a, b, c, d) = hosts
    db = database(deployment)
    tail = lambda: int(server.sql("SELECT max(seq) FROM audit", database=db))  # noqa: E731
    for state in (b, a):
        ran = cli(deployment, state, "call", "calc", '{"op": "add", "a": 1, "b": 1}')
        assert ran.returncode == 0, ran.stderr
        if state == b:
            after_b = tail()
    last = tail()
    assert last > after_b
    server.sql(f"DELETE FROM audit WHERE seq > {after_b}", database=db)
    for state in (b, d):
        broken = verify(deployment, state)
        assert broken.returncode == 1, broken.stdout + broken.stderr
        found = json.loads(broken.stdout)
        assert found["status"] == "broken" and found["seq"] == after_b + 1, found
        assert "store's head" in found["problem"] and "cut off the end" in found["problem"], found
    ran = cli(deployment, b, "call", "calc", '{"op": "add", "a": 2, "b": 2}')
    assert ran.returncode == 0, ran.stderr
    assert int(server.sql(f"SELECT min(seq) FROM audit WHERE seq > {after_b}", database=db)) == last + 1, \
        "the next record chains after the head"
    still = json.loads(verify(deployment, d).stdout)
    assert still["status"] == "broken" and "were removed" in still["problem"], still
    assert still["problem"].startswith(f"expected record {after_b + 1} here"), still


def test_killing_a_host_mid_stream_loses_no_committed_record(hosts, server):
    deployment, (a, b, c, d) = hosts
    config = deployment.workspace / "toolwarden.toml"
    config.write_text(config.read_text() + '\n[audit]\ndurability = "sync"\n')
    answered = []
    with http_serve(env(deployment, a)) as (_, url_a), http_serve(env(deployment, b)) as (victim, url_b):
        def stream(url):
            for i in range(40):
                try:
                    answered.append(call(url, "calc", {"op": "mul", "a": i, "b": 2})["_meta"]["toolwarden"]["call_id"])
                except (OSError, urllib.error.URLError, KeyError, json.JSONDecodeError):
                    return
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            streams = [pool.submit(stream, url_a), pool.submit(stream, url_b)]
            while len(answered) < 20:
                pass
            victim.kill()
            for s in streams:
                s.result()
    assert len(answered) >= 40, "host A went on after B was killed"
    assert_trail_holds(deployment, d, answered)


def test_store_migrate_copies_a_hosts_sqlite_state_with_its_chain_intact(hosts):
    deployment, (a, *_) = hosts
    config = deployment.workspace / "toolwarden.toml"
    shared = config.read_text()
    config.write_text(shared.split("[store]")[0])
    # A host that ran alone: calls, an approval, a budgeted session.
    for i in range(5):
        assert cli(deployment, a, "call", "calc", json.dumps({"op": "add", "a": i, "b": i}),
                   "--session", "s1").returncode == 0
    asked = cli(deployment, a, "call", "write_file", json.dumps(ARGS), "--json")
    approval = json.loads(asked.stdout)["approval_id"]
    local = cli_json(deployment, a, "audit", "verify", "--json")
    assert local["status"] == "intact" and local["head"] == "matches"
    unconfigured = cli(deployment, a, "store", "migrate")
    assert unconfigured.returncode == 1 and "no shared store is configured" in unconfigured.stderr
    config.write_text(shared)
    copied = cli_json(deployment, a, "store", "migrate", "--json")
    assert copied["approvals"] == 1 and copied["executions"] == 5
    assert copied["records"] == local["records"], copied
    # Now read from PostgreSQL: the same chain, matching the host's own head.
    moved = cli_json(deployment, a, "audit", "verify", "--json")
    assert moved == local, moved
    assert approval in cli(deployment, a, "approvals", "list").stdout
    again = cli(deployment, a, "store", "migrate")
    assert again.returncode != 0 and "already holds" in again.stderr, again.stderr
    assert cli_json(deployment, a, "audit", "verify", "--json")["records"] == local["records"]


def replicas(deployment: Host, states, stack: contextlib.ExitStack) -> list:
    return [stack.enter_context(http_serve(env(deployment, state)))[1] for state in states]


def spread(urls: list, jobs: list, session: str) -> list:
    """Runs every (tool, arguments) of `jobs` at once, the i-th through
    `urls[i % len(urls)]`, all in `session`; the results in order."""
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        return list(pool.map(lambda i: call(urls[i % len(urls)], *jobs[i], session=session),
                             range(len(jobs))))


def settled(server, deployment: Host, sql: str, want: str) -> str:
    """`sql`'s answer once it is `want` (the batched writer commits a moment
    after a call answers), or the last one after 5 seconds."""
    deadline = time.monotonic() + 5
    while (got := server.sql(sql, database=database(deployment))) != want and time.monotonic() < deadline:
        time.sleep(0.05)
    return got


def test_a_session_budget_holds_across_hosts_with_32_calls_racing_for_the_last_units(hosts, server):
    deployment, (a, b, c, _) = hosts
    config = deployment.workspace / "toolwarden.toml"
    config.write_text(config.read_text() + "\n[budget]\nmax_calls = 12\n")
    with contextlib.ExitStack() as stack:
        urls = replicas(deployment, (a, b, c), stack)
        # Nine calls, one after another, each on the next host.
        for i in range(9):
            first = call(urls[i % 3], "calc", {"op": "add", "a": i, "b": 0}, session="agent-7")
            assert first["isError"] is False, first
        # 32 calls race for the session's last three units over three hosts.
        raced = spread(urls, [("calc", {"op": "add", "a": 100 + i, "b": 0}) for i in range(32)], "agent-7")
        ran = [r for r in raced if r["isError"] is False]
        stopped = [r for r in raced if code(r) == "BUDGET_EXCEEDED"]
        assert len(ran) == 3 and len(stopped) == 29, [code(r) for r in raced]
        assert "max_calls" in stopped[0]["content"][0]["text"]
        # The budget is the session's: another session, or a call without
        # one (its connection's own), still runs, on any host.
        assert call(urls[1], "calc", {"op": "add", "a": 1, "b": 1}, session="agent-8")["isError"] is False
        assert call(urls[2], "calc", {"op": "add", "a": 1, "b": 1})["isError"] is False
        # A replica started after the race counts the same twelve.
        late = replicas(deployment, (_,), stack)[0]
        assert code(call(late, "calc", {"op": "add", "a": 0, "b": 0}, session="agent-7")) == "BUDGET_EXCEEDED"
    executed = "SELECT count(*) FROM executions WHERE session = 'agent-7'"
    assert settled(server, deployment, executed, "12") == "12"
    assert settled(server, deployment, "SELECT count(*) FROM budget_reservations", "0") == "0", \
        "every unit is either executed or given back"


def test_a_repeated_call_runs_once_across_hosts_and_a_keyed_one_is_answered_again(hosts, server):
    deployment, (a, b, c, _) = hosts
    shutil.copy(WASM / "ledger.wasm", deployment.plugins)
    config = deployment.workspace / "toolwarden.toml"
    config.write_text(config.read_text().replace('decision = "ask"', 'decision = "allow"') +
                      '\n[[rule]]\ntools = ["ledger_append"]\ndecision = "allow"\nreason = "a test ledger"\n')
    with contextlib.ExitStack() as stack:
        urls = replicas(deployment, (a, b, c), stack)
        # The same write, 32 times at once over three hosts: it runs once.
        writes = spread(urls, [("write_file", ARGS)] * 32, "agent-9")
        assert sum(r["isError"] is False for r in writes) == 1, [code(r) for r in writes]
        assert {code(r) for r in writes if r["isError"]} == {"DUPLICATE_CALL"}
        # A keyed append, 32 times at once: it runs once; the repeats that
        # come after it are answered with its recorded result.
        appends = spread(urls, [("ledger_append", {"entry": "invoice 7 paid"})] * 32, "agent-9")
        answered = [r for r in appends if r["isError"] is False]
        assert answered and all(code(r) == "DUPLICATE_CALL" for r in appends if r["isError"]), appends
        first = [r for r in answered if "replayed_from" not in r["_meta"]["toolwarden"]]
        assert len(first) == 1, answered
        replayed = {r["_meta"]["toolwarden"]["replayed_from"] for r in answered if r not in first}
        assert replayed <= {first[0]["_meta"]["toolwarden"]["call_id"]}
        again = call(urls[2], "ledger_append", {"entry": "invoice 7 paid"}, session="agent-9")
        assert again["_meta"]["toolwarden"]["replayed_from"] == first[0]["_meta"]["toolwarden"]["call_id"]
    assert (deployment.workspace / "ledger.txt").read_text() == "invoice 7 paid\n"
    assert (deployment.workspace / "shared.txt").read_text() == ARGS["content"]


@pytest.mark.parametrize("session", ["", "a b", "x" * 129, 7, "semi;colon", "new\nline"],
                         ids=["empty", "space", "long", "number", "semicolon", "newline"])
def test_a_malformed_session_is_refused(hosts, session):
    deployment, (a, *_) = hosts
    with http_serve(env(deployment, a)) as (_, url):
        refused = rpc(url, "calc", {"op": "add", "a": 1, "b": 1}, session=session)
        assert refused["error"]["code"] == -32602, refused
        assert "toolwarden/session" in refused["error"]["message"]
        assert "of 1 to 128 letters" in refused["error"]["message"], refused
        assert call(url, "calc", {"op": "add", "a": 1, "b": 1}, session="ok-" + "x" * 125)["isError"] is False
    assert [o["status"] for o in outcomes(deployment, a, "calc")] == ["ok"]


def test_a_nul_in_what_is_recorded_does_not_stop_the_shared_trail(hosts):
    """PostgreSQL's text holds no NUL character, SQLite's does: a client that
    puts one in a tool's name, an argument or its session must not make the
    audit writer's commit fail for good (it would then refuse every call,
    everyone's)."""
    deployment, states = hosts
    with http_serve(env(deployment, states[0])) as (_, url):
        assert code(call(url, "calc", {"op": "add", "a": 1, "b": 2, "x\u0000": "\u0000"})) == "INVALID_ARGS"
        assert code(call(url, "read_file", {"path": "hello\u0000.txt"})) is not None
        # The name travels in a header too over HTTP; a stdio client needs none.
        stdio = subprocess.Popen([str(BINARY), "serve"], env=env(deployment, states[1]), text=True,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

        def over_stdio(message: dict) -> dict:
            stdio.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
            stdio.stdin.flush()
            while "id" in message:
                answer = json.loads(stdio.stdout.readline())
                if answer.get("id") == message["id"]:
                    return answer
            return {}

        over_stdio({"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        over_stdio({"method": "notifications/initialized"})
        refused = over_stdio({"id": 2, "method": "tools/call", "params": {"name": "no\u0000such", "arguments": {}}})
        assert refused["result"]["isError"] is True, refused
        time.sleep(0.5)  # its records' commit has come and gone
        for i in range(3, 5):
            ran = over_stdio({"id": i, "method": "tools/call", "params": {
                "name": "calc", "arguments": {"op": "add", "a": i, "b": 0}}})
            assert ran["result"].get("structuredContent") == {"result": i}, ran
        stdio.stdin.close()
        assert stdio.wait(timeout=10) == 0
        assert call(url, "calc", {"op": "add", "a": 1, "b": 2})["structuredContent"] == {"result": 3}
        time.sleep(0.5)
        assert call(url, "calc", {"op": "add", "a": 2, "b": 2})["structuredContent"] == {"result": 4}
    checked = verify(deployment, states[0])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert len(outcomes(deployment, states[0], "calc")) == 4
    assert any("such" in r["tool"] for r in cli_json(deployment, states[0], "audit", "--json")), \
        "the refused call is in the trail"


def test_a_record_the_database_refuses_for_good_is_replaced_and_the_host_goes_on(hosts, server):
    """A record PostgreSQL will never take (here a trigger's data exception;
    a NUL in text was the one found in the wild) fails its batch's commit:
    retried as it was, every later commit failed and the host refused every
    call. Its batch goes in record by record, the refused one replaced by an
    `unrecordable` record that says what it was, never what it held."""
    deployment, states = hosts
    with http_serve(env(deployment, states[0])) as (_, url):
        assert call(url, "calc", {"op": "add", "a": 1, "b": 1})["structuredContent"] == {"result": 2}
        server.sql("""
            CREATE FUNCTION refuse_it() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.data LIKE '%"a":666%' THEN
                    RAISE EXCEPTION 'this record is not wanted' USING ERRCODE = '22023';
                END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER refuse_it BEFORE INSERT ON audit FOR EACH ROW EXECUTE FUNCTION refuse_it();
        """, database(deployment))
        assert call(url, "calc", {"op": "add", "a": 666, "b": 1})["structuredContent"] == {"result": 667}
        time.sleep(0.5)  # its batch's commit has come and gone
        for i in range(3):
            assert call(url, "calc", {"op": "add", "a": i, "b": 0})["structuredContent"] == {"result": i}
    checked = verify(deployment, states[0])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    records = cli_json(deployment, states[0], "audit", "--json")
    [stand_in] = [r for r in records if r["kind"] == "unrecordable"]
    assert stand_in["data"]["kind"] == "call" and "not wanted" in stand_in["data"]["refused"], stand_in
    assert set(stand_in["data"]) == {"kind", "bytes", "refused"}, stand_in
    assert len(outcomes(deployment, states[0], "calc")) == 5
