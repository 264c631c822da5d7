"""People sign in to the console with the `[auth]` issuer (authorization code
and PKCE, `console_client_id`), in Chromium, against a real OpenID provider
(oidc-provider on loopback, tests/oauth/provider.mjs): the console shows who
they are, records their decisions under their name, and refuses what a thief
of the pieces would try (a replayed callback, a callback this browser did not
start, a session cookie kept after signing out)."""

import http.client
import json
import re
import urllib.parse

import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import free_port, http_serve
from test_console import Watched, browser  # noqa: F401 (a fixture)
from test_oauth import TWO_OTHERS, configure, issued, provider  # noqa: F401 (a fixture)

pytestmark = pytest.mark.anyio

RULE = 'console_client_id = "console"\n' + TWO_OTHERS


def get(url: str, cookie: str | None = None) -> tuple[int, dict, str]:
    """A GET that does not follow redirects: status, headers, body."""
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    connection.request("GET", path, headers={"Cookie": cookie} if cookie else {})
    response = connection.getresponse()
    return response.status, dict(response.getheaders()), response.read().decode()


def post(url: str, form: dict, cookie: str) -> int:
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.request("POST", parts.path, body=urllib.parse.urlencode(form),
                       headers={"Cookie": cookie,
                                "Content-Type": "application/x-www-form-urlencoded"})
    return connection.getresponse().status


async def sign_in(browser, console: str, login: str, issuer: str):
    """A new browser signed in as `login` on the provider's pages; the page,
    and the callback URL the provider sent it back to."""
    context = await browser.new_context(viewport={"width": 1200, "height": 900})
    watched = Watched(await context.new_page())
    page = watched.page
    callbacks = []
    page.on("request", lambda r: "/console/login/callback" in r.url and callbacks.append(r.url))
    await page.goto(console)
    assert page.url.endswith("/console/login"), "a console with sign-in opens to no one"
    assert await page.locator("input[name=token]").count() == 0, "no token form without a token"
    await page.click("#sign-in")
    await page.wait_for_url(issuer + "/**")
    await page.fill("input[name=login]", login)
    await page.fill("input[name=password]", "any")
    await page.click("button:has-text('Sign-in')")
    await page.click("button:has-text('Continue')")  # the consent page
    await page.wait_for_url(console)
    assert len(callbacks) == 1, callbacks
    watched.errors.clear()  # the provider's development pages fetch fonts from the Internet
    return watched, callbacks[0]


async def test_a_person_signs_in_with_the_issuer_and_approves_under_their_name(
        host, provider, browser):
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    console = url.removesuffix("/mcp") + "/console"
    configure(host, provider["issuer"], url, extra=RULE)
    args = {"op": "add", "a": 20, "b": 22}
    with http_serve(host.env(), port=port) as (proc, url):
        agent = issued(provider, "agent", "tools:call", url)
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {agent}"})
        async with client, streamable_http_client(url, http_client=client) as (r, w, *_), \
                ClientSession(r, w) as s:
            await s.initialize()
            waiting = await s.call_tool("calc", args)
            approval = waiting.meta["toolwarden"]["approval_id"]

            # The agent's person signs in: the same issuer and subject as the
            # token that asked, so their approval is their own and counts not.
            own, _ = await sign_in(browser, console, "agent", provider["issuer"])
            await own.page.goto(f"{console}/approvals/{approval}")
            await own.page.click(f"#approval-{approval} button.approve")
            await own.page.wait_for_url(f"**/approvals/{approval}?done=own")

            alice, callback = await sign_in(browser, console, "alice", provider["issuer"])
            page = alice.page
            header = await page.inner_text("header")
            assert f"Signed in as alice ({provider['issuer']})" in header, header
            code, out, err = host.cli("approvals", "approve", approval)
            assert code == 0 and "waits for 1 more" in out, (out, err)
            await page.goto(f"{console}/approvals/{approval}")
            await page.click(f"#approval-{approval} button.approve")
            await page.wait_for_url(f"**/approvals/{approval}?done=approve")
            assert "alice (console sign-in, console)" in await page.inner_text("main")
            assert alice.errors == [] and own.errors == [], (alice.errors, own.errors)

            ran = await s.call_tool("calc", args)
            assert ran.is_error is False and ran.structured_content == {"result": 42}, ran

            # The callback once more: from this browser (its sign-in cookie is
            # gone), and with the state cookie forged to match (used up).
            again = await page.goto(callback)
            assert again.status == 403, again.status
            assert "SIGNIN_NOT_STARTED_HERE" in await page.inner_text("main")
            state = urllib.parse.parse_qs(urllib.parse.urlsplit(callback).query)["state"][0]
            status, _, body = get(callback, cookie=f"toolwarden_sign_in={state}")
            assert status == 401 and "SIGNIN_UNKNOWN" in body, (status, body)

            # The session cookie, kept past signing out, opens nothing.
            cookies = await page.context.cookies()
            session = next(c["value"] for c in cookies if c["name"] == "toolwarden_console")
            kept = f"toolwarden_console={session}"
            assert get(console, kept)[0] == 200
            await page.goto(console)
            csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', await page.content()).group(1)
            await page.click("header form.logout button")
            await page.wait_for_url("**/console/login")
            status, headers, _ = get(console, kept)
            assert status in (302, 303, 307) and headers["location"] == "/console/login", status
            assert post(f"{console}/approvals/{approval}/deny", {"csrf": csrf}, kept) == 403

        assert proc.poll() is None

    code, out, err = host.cli("approvals", "show", approval, "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["state"] == "consumed", shown
    assert [(d["name"], d["proof"], d["channel"]) for d in shown["decisions"]][-1] == \
        ("alice", "console sign-in", "console"), shown["decisions"]
    assert shown["decisions"][-1]["identity"] == f"{provider['issuer']} alice"
    code, out, err = host.cli("audit", "--json", "--tool", "calc")
    assert code == 0, err
    decided = next(r["data"] for r in json.loads(out) if r["kind"] == "approval_decided")
    assert decided["approver"] == {"subject": "alice", "proof": "sign_in",
                                   "issuer": provider["issuer"]}, decided


async def test_a_callback_this_browser_did_not_start_signs_no_one_in(host, provider, browser):
    """Login CSRF: a link with someone's code and state, or a made-up state,
    is refused before the code is redeemed; an issuer's refusal is shown."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    console = url.removesuffix("/mcp") + "/console"
    configure(host, provider["issuer"], url, extra=RULE)
    with http_serve(host.env(), port=port) as (proc, _):
        status, headers, _ = get(console + "/login/issuer")
        assert status in (302, 303), status
        location = urllib.parse.urlsplit(headers["location"])
        asked = urllib.parse.parse_qs(location.query)
        assert location.geturl().startswith(provider["issuer"]), location
        assert asked["code_challenge_method"] == ["S256"] and asked["client_id"] == ["console"]
        assert asked["redirect_uri"] == [console + "/login/callback"], asked
        started = re.search(r"toolwarden_sign_in=([^;]+)", headers["set-cookie"]).group(1)
        assert started == asked["state"][0]

        callback = f"{console}/login/callback?code=stolen&state={started}"
        status, _, body = get(callback)
        assert status == 403 and "SIGNIN_NOT_STARTED_HERE" in body, (status, body)
        status, _, body = get(callback, cookie="toolwarden_sign_in=other")
        assert status == 403, status
        # The right browser, but a code the issuer never issued.
        status, _, body = get(callback, cookie=f"toolwarden_sign_in={started}")
        assert status == 401 and "SIGNIN_REFUSED" in body and "invalid_grant" in body, body

        context = await browser.new_context()
        page = await context.new_page()
        await page.goto(console + "/login")
        await page.click("#sign-in")
        await page.wait_for_url(provider["issuer"] + "/**")
        state = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query).get("state")
        if not state:  # the provider moved to its interaction page; ask the cookie
            cookies = await context.cookies()
            state = [next(c["value"] for c in cookies if c["name"] == "toolwarden_sign_in")]
        refused = await page.goto(
            f"{console}/login/callback?error=access_denied&error_description=no+thanks"
            f"&state={state[0]}")
        assert refused.status == 401
        assert "SIGNIN_REFUSED" in await page.inner_text("main")
        assert "access_denied: no thanks" in await page.inner_text("main")
        assert proc.poll() is None
