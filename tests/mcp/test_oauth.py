"""`serve --http` as an OAuth 2.1 resource server (`[auth]`), against a real
OpenID provider (oidc-provider, started on loopback by tests/oauth/provider.mjs)
and the official Python SDK's own OAuth client.

Tokens the provider issues are accepted and refused as the provider made them
(another audience, too few scopes); tokens no provider would issue (expired,
not yet valid, from another issuer, forged, unsigned, HMAC'd with the public
key) are signed here, with the provider's own key where that is the point.
"""

import base64
import hashlib
import hmac
import json
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import ClientSession
from mcp.client.auth import TokenStorage
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import POLICY, free_port, http_serve
from test_console import browser  # noqa: F401 (a fixture)
from test_conformance import NODE

pytestmark = pytest.mark.anyio

PROVIDER = Path(__file__).resolve().parents[1] / "oauth"
SHARED = "shared-token-0123456789abcdef"
# `calc` runs once two people approve it, neither the one who asked.
TWO_OTHERS = """
[[rule]]
tools = ["calc"]
decision = "ask"
approvers = 2
self_approval = false
reason = "two others sign off"
"""


@pytest.fixture
def provider():
    """The OpenID provider: its issuer URL and signing key (private half too)."""
    assert (PROVIDER / "node_modules" / "oidc-provider").exists(), \
        "the OpenID provider is missing: run `make tests/oauth/node_modules/.installed`"
    proc = subprocess.Popen([str(NODE), str(PROVIDER / "provider.mjs")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        yield json.loads(line)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def configure(host, issuer: str, audience: str, extra: str = "") -> None:
    (host.workspace / "toolwarden.toml").write_text(
        POLICY + f'\n[auth]\nissuer = "{issuer}"\naudience = "{audience}"\n'
        f'scopes = ["tools:call"]\nclaims = ["client_id"]\n{extra}')


@pytest.fixture
def server(host, provider, tmp_path):
    """The host behind `[auth]` naming the provider, with a shared token too."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    configure(host, provider["issuer"], url)
    token_file = tmp_path / "token"
    token_file.write_text(SHARED)
    with http_serve(host.env(), "--token-file", str(token_file), port=port) as (proc, url):
        yield proc, url


def issued(provider: dict, client: str, scope: str, resource: str) -> str:
    """An access token from the provider's token endpoint (client credentials)."""
    body = urllib.parse.urlencode({"grant_type": "client_credentials", "scope": scope,
                                   "resource": resource}).encode()
    secret = base64.b64encode(f"{client}:{client}-secret".encode()).decode()
    request = urllib.request.Request(provider["issuer"] + "/token", data=body,
                                     headers={"Authorization": f"Basic {secret}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)["access_token"]


def signed(provider: dict, claims: dict, key=None, header: dict | None = None) -> str:
    """A token signed with the provider's key (or `key`), as the provider names it."""
    now = int(time.time())
    payload = {"iss": provider["issuer"], "sub": "minted", "iat": now, "exp": now + 300,
               "scope": "tools:call", **claims}
    key = key or jwt.algorithms.RSAAlgorithm.from_jwk(json.dumps(provider["jwk"]))
    return jwt.encode(payload, key, algorithm="RS256",
                      headers={"kid": provider["jwk"]["kid"], **(header or {})})


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def initialize(url: str, token: str | None):
    """A raw `initialize`: (status, WWW-Authenticate, body)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "raw", "version": "0"}}}).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers.get("WWW-Authenticate"), ""
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("WWW-Authenticate"), e.read().decode()


def recorded_callers(host, tool: str, count: int = 1) -> list:
    """The caller of each call of `tool` in the audit, once the writer has
    put `count` there."""
    deadline = time.monotonic() + 10
    while True:
        code, out, err = host.cli("audit", "--json", "--tool", tool)
        assert code == 0, err
        calls = [r for r in json.loads(out) if r["kind"] == "call"]
        if len(calls) >= count or time.monotonic() > deadline:
            return [r["data"].get("caller") for r in calls]
        time.sleep(0.1)


def test_a_client_without_a_token_is_told_where_to_get_one(server, provider):
    _, url = server
    origin = url.removesuffix("/mcp")
    status, challenge, _ = initialize(url, None)
    assert status == 401
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"' in challenge
    assert 'scope="tools:call"' in challenge
    assert "error=" not in challenge  # RFC 6750: no error code when no token was sent
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]:
        with urllib.request.urlopen(origin + path, timeout=10) as response:
            metadata = json.load(response)
        assert metadata["resource"] == url
        assert metadata["authorization_servers"] == [provider["issuer"]]
        assert metadata["scopes_supported"] == ["tools:call"]


async def test_the_official_sdk_finds_the_issuer_gets_a_token_and_calls(host, server, provider):
    """The SDK starts without a token: from the 401 it reads the resource
    metadata, then the provider's, asks for a token for this server, and
    calls with it. The audit records who called: the token's subject, its
    issuer and the claims `[auth] claims` names."""
    _, url = server

    class Memory(TokenStorage):
        tokens = client = None

        async def get_tokens(self):
            return self.tokens

        async def set_tokens(self, tokens):
            self.tokens = tokens

        async def get_client_info(self):
            return self.client

        async def set_client_info(self, client_info):
            self.client = client_info

    storage = Memory()
    auth = ClientCredentialsOAuthProvider(server_url=url, storage=storage, client_id="agent",
                                          client_secret="agent-secret", scope="tools:call",
                                          issuer=provider["issuer"])
    client = create_mcp_http_client(auth=auth)
    async with client, streamable_http_client(url, http_client=client) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        result = await s.call_tool("calc", {"op": "add", "a": 40, "b": 2})
        assert result.structured_content == {"result": 42}
    claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
    assert claims["aud"] == url and claims["sub"] == "agent"
    assert recorded_callers(host, "calc") == [{
        "subject": "agent", "proof": "access_token", "issuer": provider["issuer"],
        "scopes": ["tools:call"], "claims": {"client_id": "agent"}}]


async def test_the_shared_token_is_recorded_as_what_it_is(host, server):
    """A call with the shared token is recorded as made by its holder, not
    by a person: the token proves no more."""
    _, url = server
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {SHARED}"})
    async with client, streamable_http_client(url, http_client=client) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        assert (await s.call_tool("calc", {"op": "add", "a": 1, "b": 1})).structured_content == {"result": 2}
    assert recorded_callers(host, "calc") == [{"subject": "shared-token", "proof": "shared_token"}]


def test_tokens_are_refused_for_each_reason(server, provider):
    proc, url = server
    now = int(time.time())
    own = {"aud": url}
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public_pem = jwt.algorithms.RSAAlgorithm.from_jwk(json.dumps(provider["jwk"])).public_key()
    from cryptography.hazmat.primitives import serialization
    pem = public_pem.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    confused_message = f'{b64(json.dumps({"alg": "HS256", "kid": provider["jwk"]["kid"]}).encode())}.' \
                       f'{b64(json.dumps({"iss": provider["issuer"], "aud": url, "sub": "x", "exp": now + 300, "scope": "tools:call"}).encode())}'
    confused = confused_message + "." + b64(hmac.new(pem, confused_message.encode(), hashlib.sha256).digest())
    unsigned = f'{b64(json.dumps({"alg": "none"}).encode())}.' \
               f'{b64(json.dumps({"iss": provider["issuer"], "aud": url, "sub": "x", "exp": now + 300}).encode())}.'
    cases = {
        "AUTH_AUDIENCE_WRONG": issued(provider, "agent", "tools:call", "http://127.0.0.1:1/elsewhere"),
        "AUTH_SCOPE_MISSING": issued(provider, "reader", "profile", url),
        "AUTH_TOKEN_EXPIRED": signed(provider, {**own, "exp": now - 600}),
        "AUTH_TOKEN_NOT_YET_VALID": signed(provider, {**own, "nbf": now + 600}),
        "AUTH_ISSUER_WRONG": signed(provider, {**own, "iss": "http://127.0.0.1:1"}),
        "AUTH_SIGNATURE_INVALID": signed(provider, own, key=other_key),
        "AUTH_KEY_UNKNOWN": signed(provider, own, header={"kid": "not-published"}),
        "AUTH_ALGORITHM_REFUSED": unsigned,
        "AUTH_TOKEN_MALFORMED": "not-a-jwt",
    }
    for code, token in [*cases.items(), ("AUTH_ALGORITHM_REFUSED", confused)]:
        status, challenge, body = initialize(url, token)
        assert code in body, (code, status, body)
        if code == "AUTH_SCOPE_MISSING":
            assert status == 403 and 'error="insufficient_scope"' in challenge, challenge
        else:
            assert status == 401 and 'error="invalid_token"' in challenge, (code, challenge)
    # None of it hurt the server: the provider's own token and the shared one work.
    assert initialize(url, issued(provider, "agent", "tools:call", url))[0] == 200
    assert initialize(url, SHARED)[0] == 200
    assert initialize(url, signed(provider, own))[0] == 200
    assert proc.poll() is None


def call(url: str, token: str, session: str | None, a: int, name: str = "calc", arguments=None) -> dict:
    """A 2026-07-28 `tools/call` with `token` (of calc adding `a` and 1,
    unless `name` and `arguments` say otherwise), naming `session` if any."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {}}
    if session is not None:
        meta["toolwarden/session"] = session
    arguments = {"op": "add", "a": a, "b": 1} if arguments is None else arguments
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": arguments, "_meta": meta}}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call", "Mcp-Name": name})
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            return json.loads(line[5:])
    return json.loads(text)


def test_a_named_session_is_its_first_callers(host, server, provider):
    """Another caller naming a session someone else's token opened is
    refused, and the refusal is audited with who tried; the owner goes on."""
    _, url = server
    agent = issued(provider, "agent", "tools:call", url)
    other = issued(provider, "other", "tools:call", url)
    assert call(url, agent, "work", 1)["result"]["structuredContent"] == {"result": 2}
    for intruder in [other, SHARED]:
        refused = call(url, intruder, "work", 2)["result"]
        assert refused["isError"] is True
        assert "SESSION_NOT_YOURS" in refused["content"][0]["text"], refused
    assert call(url, agent, "work", 3)["result"]["structuredContent"] == {"result": 4}
    assert call(url, other, "other-work", 4)["result"]["structuredContent"] == {"result": 5}
    callers = [c["subject"] for c in recorded_callers(host, "calc", 5)]
    assert sorted(callers) == ["agent", "agent", "other", "other", "shared-token"], callers


def test_an_mcp_session_stays_with_the_caller_that_opened_it(server, provider):
    """The session id is a header anyone could copy: with another caller's
    token (or the shared one) a request in the session is answered as if the
    session did not exist; its opener goes on in it."""
    _, url = server
    agent = issued(provider, "agent", "tools:call", url)
    other = issued(provider, "other", "tools:call", url)

    def post(token: str, body: dict, session: str | None = None):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2025-11-25"}
        if session:
            headers["Mcp-Session-Id"] = session
        request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.headers.get("Mcp-Session-Id")
        except urllib.error.HTTPError as e:
            return e.code, None

    status, session = post(agent, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    assert status == 200 and session
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    assert post(other, listing, session)[0] == 404
    assert post(SHARED, listing, session)[0] == 404
    assert post(agent, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
    assert post(agent, listing, session)[0] == 200


def test_rules_decide_by_who_calls(host, provider, tmp_path):
    """`caller` in a rule: calc is denied to one client and allowed to the
    others; a tool no other rule allows is allowed to one client only.
    `policy explain --caller` shows the same decisions."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    configure(host, provider["issuer"], url, extra="""
[[rule]]
tools = ["calc"]
caller = { subject = "other" }
decision = "deny"
reason = "calc is not for the other client"

[[rule]]
tools = ["hostile_log_flood"]
caller = { client_id = ["agent"] }
decision = "allow"
reason = "only the agent client may flood"
""")
    with http_serve(host.env(), port=port) as (_, url):
        agent = issued(provider, "agent", "tools:call", url)
        other = issued(provider, "other", "tools:call", url)
        assert call(url, agent, None, 1)["result"]["structuredContent"] == {"result": 2}
        denied = call(url, other, None, 1)["result"]
        assert denied["isError"] and "POLICY_DENIED" in denied["content"][0]["text"], denied
        assert "calc is not for the other client" in denied["content"][0]["text"]
        flood = {"n": 1}
        assert not call(url, agent, None, 0, "hostile_log_flood", flood)["result"].get("isError")
        refused = call(url, other, None, 0, "hostile_log_flood", flood)["result"]
        assert refused["isError"] and "POLICY_DENIED" in refused["content"][0]["text"], refused
    code, out, err = host.cli("policy", "explain", "calc", '{"op":"add","a":1,"b":1}', "--json",
                              "--caller", "subject=other")
    assert code == 0, err
    assert json.loads(out)["decision"]["verdict"] == "deny"
    code, out, err = host.cli("policy", "explain", "hostile_log_flood", '{"n":1}', "--json",
                              "--caller", "subject=agent", "--caller", "client_id=agent")
    assert code == 0, err
    assert json.loads(out)["decision"]["verdict"] == "allow"
    code, out, err = host.cli("policy", "explain", "hostile_log_flood", '{"n":1}')
    assert code == 0, err
    assert "depends on" in out and "who calls" in out, out


def test_a_rule_on_a_claim_callers_do_not_carry_is_refused(host):
    configure(host, "https://login.example.org", "https://tools.example.org/mcp", extra="""
[[rule]]
tools = ["calc"]
caller = { email = "*@example.org" }
decision = "allow"
reason = "staff"
""")
    code, _, err = host.cli("policy", "explain", "calc", "{}")
    assert code == 2, err
    assert "caller.email" in err and 'claims = ["email"]' in err, err


def test_an_issuer_that_cannot_be_reached_is_not_a_bad_token(host):
    """With the issuer down the token cannot be checked: 503, not 401 (a
    client must not throw its token away), and the server keeps serving."""
    port = free_port()
    configure(host, f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{port}/mcp")
    with http_serve(host.env(), port=port) as (proc, url):
        token = f'{b64(json.dumps({"alg": "RS256", "kid": "k"}).encode())}.e30.e30'
        status, _, body = initialize(url, token)
        assert status == 503 and "AUTH_ISSUER_UNREACHABLE" in body, (status, body)
        assert proc.poll() is None


def test_a_plain_http_issuer_on_another_machine_is_refused(host):
    configure(host, "http://login.example.org", "https://tools.example.org/mcp")
    code, _, err = host.cli("serve", "--http", f"127.0.0.1:{free_port()}")
    assert code != 0
    assert "plain HTTP" in err and "auth.issuer" in err, err


async def test_a_quorum_of_two_others_approves_a_token_callers_call(host, provider, tmp_path, browser):
    """`approvers = 2` and `self_approval = false`: the caller (a token from
    the provider) is not asked to approve its own call (its client's form
    would not count); the OS user at the CLI and a person in the console
    (Chromium, signed in with the shared token) are two approvers, and the
    call runs once."""
    from mcp import types

    from test_console import signed_in

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    configure(host, provider["issuer"], url, extra=TWO_OTHERS)
    token_file = tmp_path / "token"
    token_file.write_text(SHARED)
    asked = []

    async def approve_own(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"toolwarden_decision": "approve_once"})

    args = {"op": "add", "a": 20, "b": 22}
    with http_serve(host.env(), "--token-file", str(token_file), port=port) as (_, url):
        agent = issued(provider, "agent", "tools:call", url)
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {agent}"})
        async with client, streamable_http_client(url, http_client=client) as (r, w, *_), \
                ClientSession(r, w, elicitation_callback=approve_own) as s:
            await s.initialize()
            waiting = await s.call_tool("calc", args)
            assert asked == [], "the caller is not asked to approve its own call"
            assert waiting.is_error, waiting.content
            toolwarden = waiting.meta["toolwarden"]
            assert toolwarden["code"] == "APPROVAL_REQUIRED", toolwarden
            approval = toolwarden["approval_id"]

            code, out, err = host.cli("approvals", "approve", approval)
            assert code == 0, err
            assert "waits for 1 more" in out, out

            watched = await signed_in(browser, url.removesuffix("/mcp") + "/console", SHARED)
            page = watched.page
            await page.goto(url.removesuffix("/mcp") + f"/console/approvals/{approval}")
            shown = await page.inner_text("main")
            assert "2 distinct people, not the one who asked; waiting for 1 more" in shown, shown
            assert "approved by" in shown and "(os user, cli)" in shown, shown
            await page.click(f"#approval-{approval} button.approve")
            await page.wait_for_url(f"**/approvals/{approval}?done=approve")
            assert "(shared token, console)" in await page.inner_text("main")

            ran = await s.call_tool("calc", args)
            assert ran.is_error is False, ran.content
            assert ran.structured_content == {"result": 42}

    code, out, err = host.cli("approvals", "show", approval, "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["state"] == "consumed"
    assert shown["asked_by"].startswith(provider["issuer"] + " "), shown["asked_by"]
    assert [(d["proof"], d["channel"]) for d in shown["decisions"]] == [
        ("os user", "cli"), ("shared token", "console")], shown["decisions"]
    code, out, err = host.cli("audit", "--json", "--tool", "calc")
    assert code == 0, err
    kinds = {r["kind"]: r["data"] for r in json.loads(out)}
    assert kinds["approval_counted"]["approver"]["proof"] == "os_user", kinds
    assert kinds["approval_decided"]["approver"]["proof"] == "shared_token", kinds
