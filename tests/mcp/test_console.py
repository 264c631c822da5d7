"""The console at /console, in a real browser: Debian's chromium, headless,
driven by Playwright, beside an MCP client (the official Python SDK) that
makes the calls a person decides on.
"""

import contextlib
import json
import os
import shutil
import sqlite3
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import http_serve

pytestmark = pytest.mark.anyio

TOKEN = "console-token-0123456789abcdef"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Where `SCREENSHOTS=DIR` asks the tests to leave pictures of the pages
# (docs/console.md shows them).
SCREENSHOTS = os.environ.get("SCREENSHOTS")
HOSTILE = {
    "path": "x.txt",
    "content": "<script>alert('args')</script>\"><img src=x onerror=alert('img')>\u001b[31mred\u001b[0m",
}


@contextlib.contextmanager
def console_served(host, tmp_path):
    """`serve --http` with a token: (the /mcp URL, the /console URL)."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with http_serve(host.env(), "--token-file", str(token_file)) as (_, url):
        yield url, url.removesuffix("/mcp") + "/console"


@pytest.fixture
def served(host, tmp_path):
    with console_served(host, tmp_path) as urls:
        yield urls


@pytest.fixture
async def browser():
    from playwright.async_api import async_playwright

    assert Path(CHROMIUM).exists(), "chromium is missing: `apt-get install chromium` (.ci/run does)"
    async with async_playwright() as p:
        launched = await p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"])
        yield launched
        await launched.close()


class Watched:
    """A signed-in page, with every dialog and console error it raised."""

    def __init__(self, page):
        self.page = page
        self.dialogs = []
        self.errors = []
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))


async def signed_in(browser, console: str, token: str = TOKEN) -> Watched:
    context = await browser.new_context(viewport={"width": 1200, "height": 900})
    watched = Watched(await context.new_page())
    page = watched.page
    await page.goto(console)
    assert page.url.endswith("/console/login"), "without a session the console asks for the token"
    await page.fill("input[name=token]", "wrong")
    await page.click("button[type=submit]")
    assert "not the one" in await page.inner_text("main")
    await page.fill("input[name=token]", token)
    await page.click("button[type=submit]")
    await page.wait_for_url(console)
    watched.errors.clear()  # the refused login's 401
    return watched


async def click_to(page, button: str, url: str):
    """Clicks `button` once and waits for the page at `url`: a page that
    lists approvals updates itself in place (console.js), so nothing can
    take the click away."""
    await page.click(button)
    await page.wait_for_url(url, timeout=10_000)


def mcp_client(url: str):
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    return client, streamable_http_client(url, http_client=client)


async def call_tool(mcp: str, name: str, args: dict):
    """One call from a fresh MCP client session."""
    client, transport = mcp_client(mcp)
    async with client, transport as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        return await s.call_tool(name, args)


def meta(result) -> dict:
    return result.meta["toolwarden"]


async def shot(page, name: str):
    if SCREENSHOTS:
        await page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"), full_page=True)


async def test_an_ask_call_is_approved_in_the_browser_and_runs_once(host, served, browser):
    mcp, console = served
    watched = await signed_in(browser, console)
    page = watched.page
    args = {"path": "approved.txt", "content": "decided in the console"}
    client, transport = mcp_client(mcp)
    async with client, transport as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        asked = await s.call_tool("write_file", args)
        asked_at = time.monotonic()
        assert meta(asked)["code"] == "APPROVAL_REQUIRED"
        approval = meta(asked)["approval_id"]
        assert f"{console}/approvals/{approval}" in asked.content[0].text, "the message names the console"
        card = f"#approval-{approval}"
        await page.wait_for_selector(card, timeout=5000)
        appeared = time.monotonic() - asked_at
        print(f"the approval appeared {appeared:.2f} s after it was asked")
        assert appeared < 2.0, f"the approval took {appeared:.2f} s to appear"
        text = await page.inner_text(card)
        assert "write_file" in text and "approved.txt" in text and "decided in the console" in text
        assert "read-write" in text, text
        assert "writes need a person" in text and "Rules that matched" in text
        await shot(page, "waiting")
        assert not (host.workspace / "approved.txt").exists(), "nothing ran before the decision"

        await click_to(page, f"{card} button.approve", f"**/approvals/{approval}?done=approve")
        assert "now runs once" in await page.inner_text("main")

        ran = await s.call_tool("write_file", args)
        assert ran.is_error is False, ran.content
        assert (host.workspace / "approved.txt").read_text() == "decided in the console"
        once_more = await s.call_tool("write_file", args)
        assert once_more.is_error is True

    await page.goto(f"{console}/approvals/{approval}")
    assert "used" in await page.inner_text(".state")
    await page.goto(f"{console}/history")
    row = await page.inner_text("tbody")
    assert "write_file" in row and "used" in row and "console" in row
    assert watched.dialogs == [] and watched.errors == [], (watched.dialogs, watched.errors)


async def test_a_denial_with_a_reason_reaches_the_clients_retry(host, served, browser):
    mcp, console = served
    page = (await signed_in(browser, console)).page
    args = {"path": "denied.txt", "content": "no"}
    client, transport = mcp_client(mcp)
    async with client, transport as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        approval = meta(await s.call_tool("write_file", args))["approval_id"]
        card = f"#approval-{approval}"
        await page.goto(console)
        await page.fill(f"{card} input[name=reason]", "not in this sprint")
        await click_to(page, f"{card} button.deny", f"**/approvals/{approval}?done=deny")
        assert "APPROVAL_DENIED" in await page.inner_text(".next")
        retry = await s.call_tool("write_file", args)
        assert meta(retry)["code"] == "APPROVAL_DENIED", retry.content
        assert "not in this sprint" in retry.content[0].text
        assert meta(retry)["approval_id"] == approval
    code, out, err = host.cli("approvals", "show", approval, "--json")
    shown = json.loads(out)
    assert shown["state"] == "denied" and shown["decided_by"] == "console"
    assert shown["decided_reason"] == "not in this sprint"
    assert not (host.workspace / "denied.txt").exists()


async def test_the_waiting_page_updates_in_place_and_keeps_what_a_person_types(host, served, browser):
    mcp, console = served
    watched = await signed_in(browser, console)
    page = watched.page
    client, transport = mcp_client(mcp)
    async with client, transport as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        first = meta(await s.call_tool("write_file", {"path": "a.txt", "content": "a"}))["approval_id"]
        await page.wait_for_selector(f"#approval-{first}", timeout=5000)
        await page.evaluate("window.sameDocument = true")
        reason = f"#approval-{first} input[name=reason]"
        await page.click(reason)
        await page.keyboard.type("half a sent")

        second = meta(await s.call_tool("write_file", {"path": "b.txt", "content": "b"}))["approval_id"]
        await page.wait_for_selector(f"#approval-{second}", timeout=5000)
        assert await page.evaluate("window.sameDocument === true"), "the page was reloaded"
        assert await page.input_value(reason) == "half a sent"
        assert await page.evaluate("document.activeElement.name") == "reason", "the focus moved"
        cards = await page.eval_on_selector_all("main article", "cards => cards.map(c => c.id)")
        assert cards == [f"approval-{second}", f"approval-{first}"], "the newest first, as the server lists them"

        code, out, err = host.cli("approvals", "approve", second)
        assert code == 0, err
        await page.wait_for_selector(f"#approval-{second}", state="detached", timeout=5000)
        await page.keyboard.type("ence")
        assert await page.evaluate("window.sameDocument === true")
        await click_to(page, f"#approval-{first} button.deny", f"**/approvals/{first}?done=deny")
        retry = await s.call_tool("write_file", {"path": "a.txt", "content": "a"})
        assert meta(retry)["code"] == "APPROVAL_DENIED"
        assert "half a sentence" in retry.content[0].text, retry.content

    # A page is told of every change after the version it shows, even one
    # made before it began to listen, and of nothing else.
    await page.goto(console)
    shown = int(await page.get_attribute("body", "data-version"))
    heard = """async since => {
        const controller = new AbortController();
        setTimeout(() => controller.abort(), 1500);
        let text = "";
        try {
            const response = await fetch("/console/events?since=" + since, {signal: controller.signal});
            const reader = response.body.getReader();
            while (!text.includes("approvals")) {
                text += new TextDecoder().decode((await reader.read()).value);
            }
        } catch (e) {}
        return text.includes("event: approvals");
    }"""
    assert await page.evaluate(heard, shown - 1) is True
    assert await page.evaluate(heard, shown) is False
    assert watched.dialogs == [] and watched.errors == [], (watched.dialogs, watched.errors)


async def test_what_an_agent_writes_shows_as_text_and_no_script_runs(host, served, browser):
    mcp, console = served
    watched = await signed_in(browser, console)
    page = watched.page
    approval = meta(await call_tool(mcp, "write_file", HOSTILE))["approval_id"]
    for url in (console, f"{console}/approvals/{approval}", f"{console}/audit"):
        await page.goto(url)
        await page.wait_for_timeout(300)
    await page.goto(console)
    shown = await page.inner_text(f"#approval-{approval} pre.args")
    assert "<script>alert('args')</script>" in shown, shown
    assert "onerror=alert('img')" in shown, shown
    assert "\\u001b[31m" in shown, "the escape shows as an escape"
    assert await page.locator("main img").count() == 0, "no element was made from the arguments"
    assert await page.locator("main script").count() == 0
    assert watched.dialogs == [], watched.dialogs


async def test_a_finished_call_shows_as_its_tool_shows_it_and_as_text(host, served, browser):
    """The call page asks the tool's plugin how the result looks (its `show`
    export), from what the audit log kept: a file read after the call
    changed shows as it was read, and markup in it stays text."""
    (host.workspace / "page.html").write_text(HOSTILE["content"])
    mcp, console = served
    watched = await signed_in(browser, console)
    page = watched.page
    read = await call_tool(mcp, "read_file", {"path": "page.html"})
    assert not read.is_error, read
    call_id = meta(read)["call_id"]
    (host.workspace / "page.html").write_text("rewritten after the call")
    for _ in range(50):
        await page.goto(f"{console}/audit/call/{call_id}")
        if await page.locator("section.result").count():
            break
        await page.wait_for_timeout(100)
    view = await page.inner_text("section.result")
    assert "As its tool shows it" in view and "read page.html" in view and "(read)" in view, view
    assert "<script>alert('args')</script>" in view, view
    assert "rewritten after the call" not in view, "shown from the audit log, not the file"
    assert await page.locator("main img").count() == 0
    assert await page.locator("main script").count() == 0
    assert watched.dialogs == [] and watched.errors == [], (watched.dialogs, watched.errors)
    await shot(page, "call-view")


def raw(url: str, method: str = "GET", headers: dict | None = None, body: bytes | None = None):
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


async def test_state_changes_need_a_session_its_csrf_token_and_a_known_host(host, served, browser):
    mcp, console = served
    watched = await signed_in(browser, console)
    cookies = await watched.page.context.cookies()
    session = next(c for c in cookies if c["name"] == "toolwarden_console")
    assert session["httpOnly"] and session["sameSite"] == "Strict"
    cookie = f"toolwarden_console={session['value']}"
    client, transport = mcp_client(mcp)
    async with client, transport as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        approval = meta(await s.call_tool("write_file", {"path": "csrf.txt", "content": "x"}))["approval_id"]
    approve = f"{console}/approvals/{approval}/approve"
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, _, _ = raw(approve, "POST", {**form, "Cookie": cookie}, b"")
    assert status == 403, "a POST without the CSRF token"
    status, _, _ = raw(approve, "POST", {**form, "Cookie": cookie}, b"csrf=forged")
    assert status == 403, "a POST with a forged CSRF token"
    status, _, _ = raw(approve, "POST", form, b"csrf=whatever")
    assert status == 403, "a POST without the session cookie"
    status, headers, _ = raw(console)
    assert status in (302, 303) and headers["location"] == "/console/login", "a page without the cookie"
    status, _, _ = raw(console, headers={"Cookie": cookie, "Host": "evil.example"})
    assert status == 403, "a foreign Host header"
    code, out, _ = host.cli("approvals", "show", approval, "--json")
    assert json.loads(out)["state"] == "pending", "none of them changed anything"
    status, headers, _ = raw(console, headers={"Cookie": cookie})
    assert status == 200
    policy = headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy
    assert headers["x-frame-options"] == "DENY"


async def test_the_audit_page_shows_a_tampered_chain_as_broken(host, served, browser):
    mcp, console = served
    page = (await signed_in(browser, console)).page
    client, transport = mcp_client(mcp)
    async with client, transport as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        done = await s.call_tool("calc", {"op": "add", "a": 2, "b": 40})
        call_id = meta(done)["call_id"]
    await page.goto(f"{console}/audit")
    assert "Chain intact" in await page.inner_text(".chain")
    await page.fill("input[name=tool]", "calc")
    await page.click("form.filters button")
    await page.click(f"a[href='/console/audit/call/{call_id}']")
    trail = await page.inner_text("main")
    for kind in ("call", "policy", "outcome"):
        assert kind in trail, trail
    await shot(page, "call")
    await page.goto(f"{console}/audit")
    await shot(page, "audit")
    with sqlite3.connect(host.state / "toolwarden.db") as db:
        db.execute("UPDATE audit SET data = replace(data, '42', '41') WHERE kind = 'outcome'")
    await page.goto(f"{console}/audit")
    chain = await page.inner_text(".chain")
    assert "Chain broken at record" in chain, chain
    code, out, _ = host.cli("audit", "verify")
    assert code == 1, "the same check as `audit verify`"


async def test_the_tools_page_explains_a_call_without_running_it(host, served, browser):
    mcp, console = served
    page = (await signed_in(browser, console)).page
    await page.goto(f"{console}/tools")
    table = await page.inner_text("table")
    assert "write_file" in table and "workspace-write" in table and "ask" in table
    await page.select_option("select[name=tool]", "write_file")
    await page.fill("textarea[name=args]", json.dumps({"path": "explained.txt", "content": "x"}))
    await page.click("form.card button")
    explained = await page.inner_text(".explained")
    assert "Decision: ask" in explained and "writes need a person" in explained
    assert not (host.workspace / "explained.txt").exists()
    assert host.cli("approvals", "list", "--json")[1].strip() == "[]", "explaining asks nobody"


async def test_the_tools_page_marks_a_tool_its_plugin_withdrew(host, browser, tmp_path):
    host.with_conformance("""
[[rule]]
tools = ["test_trigger_tool_change"]
decision = "allow"
reason = "it only withdraws or offers a tool of its own plugin"
""")
    with console_served(host, tmp_path) as (mcp, console):
        page = (await signed_in(browser, console)).page
        row = page.locator("tbody tr:has(strong:text-is('test_dynamic_tool'))")
        await page.goto(f"{console}/tools")
        assert await page.locator("tbody .withdrawn").count() == 0
        done = await call_tool(mcp, "test_trigger_tool_change", {})
        assert done.content[0].text == "withdrew test_dynamic_tool", done
        await page.goto(f"{console}/tools")
        assert "withdrawn by its plugin" in await row.inner_text()
        assert await page.locator("tbody .withdrawn").count() == 1, "only the withdrawn tool is marked"


def test_a_stdio_user_gets_the_console_alone(host, tmp_path):
    """`toolwarden console` serves the same state: an approval asked over
    stdio (here by the CLI) is waiting there, and an untokened console on a
    public address is refused."""
    import subprocess
    from conftest import BINARY, free_port

    code, out, err = host.cli("call", "write_file", '{"path":"s.txt","content":"x"}', "--json")
    approval = json.loads(out)["approval_id"]
    port = free_port()
    proc = subprocess.Popen([str(BINARY), "console", f"127.0.0.1:{port}"], env=host.env(), stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        status = None
        while time.monotonic() < deadline:
            try:
                status, headers, body = raw(f"http://127.0.0.1:{port}/console")
                break
            except OSError:
                time.sleep(0.1)
        assert status == 200, "a loopback console without a token opens a session on the first visit"
        assert approval in body
        code, out, err = host.cli("call", "write_file", '{"path":"t.txt","content":"y"}')
        assert f"http://127.0.0.1:{port}/console/approvals/" in out + err, "the message names the running console"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    refused = subprocess.run([str(BINARY), "console", "0.0.0.0:0", "--insecure-no-auth"],
                             env=host.env(), capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "without a way to sign in" in refused.stderr
