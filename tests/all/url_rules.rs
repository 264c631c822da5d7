//! URL rules hold (issue #42, part 1): a `when` glob on a URL argument reads
//! every spelling of a URL as one (trailing dots, percent-encoded
//! unreserved characters, dot segments, case, default ports), and a deny or
//! ask rule binds every request the call sends (redirects the plugin
//! follows, URLs it builds itself), refused at the egress layer and audited
//! with the rule. Real servers on loopback, real components.

use crate::harness::{TestHost, call, run_cli, runtime};
use crate::network::requests;
use crate::web::{ADMIN, WebServer};
use serde_json::{Value, json};
use toolwarden::{CallRequest, CallResult, Controller, ErrorCode, Status};
use toolwarden_tests::{HTTP_FETCH, NET_PROBE};

/// `localhost` (a name that resolves to loopback) and `127.0.0.1`, any
/// port, plain http.
const LOCAL: &str = "[network]\nallow = [{ origin = \"http://localhost:*\", private = true }, \
                     { origin = \"http://127.0.0.1:*\", private = true }]\n";

const ALLOW: &str =
    "[[rule]]\ntools = [\"*\"]\ndecision = \"allow\"\nreason = \"the tools may fetch\"\n";

/// Written in a spelling of its own: the glob is read as URLs are.
const DENY_ADMIN: &str = "[[rule]]\nwhen = { \"/url\" = \"HTTP://LocalHost.:*/%61dmin/**\" }\n\
                          decision = \"deny\"\nreason = \"the admin pages are off limits\"\n";

fn host(rules: &str) -> TestHost {
    TestHost::new(&[HTTP_FETCH, NET_PROBE]).config(&format!("{LOCAL}{ALLOW}{rules}"))
}

fn localhost(server: &WebServer, path: &str) -> String {
    format!("http://localhost:{}{path}", server.port)
}

fn run(host: &Controller, tool: &str, args: Value) -> CallResult {
    call(host, tool, &args.to_string())
}

/// Which of the requests a `net_probe` call reports were refused.
fn refused(result: &CallResult) -> Vec<bool> {
    result
        .value
        .as_ref()
        .unwrap_or_else(|| panic!("{result:#?}"))["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|sent| sent["denied"] == true)
        .collect()
}

/// Whether any request reached an admin page, however its path was spelt.
fn admin_reached(server: &WebServer) -> bool {
    server.requests().iter().any(|seen| {
        let route = seen.path.split('?').next().unwrap_or_default();
        route.to_ascii_lowercase().contains("admin") || route.contains('%')
    })
}

#[test]
fn every_spelling_of_a_denied_url_is_denied_before_anything_is_sent() {
    let server = WebServer::start();
    let t = host(DENY_ADMIN);
    let host = t.controller();
    let port = server.port;
    for url in [
        format!("http://localhost:{port}/admin/x"),
        format!("http://localhost.:{port}/admin/x"),
        format!("http://localhost:{port}/%61dmin/x"),
        format!("http://localhost:{port}/%61%64%6d%69%6e/x"),
        format!("HTTP://LOCALHOST:{port}/public/../admin/x"),
        format!("http://localhost:{port}/public/%2e%2e/admin/x"),
        format!("http://localhost:{port}\\admin\\x"),
        format!("http://user@localhost:{port}/admin/x"),
        format!("http://local\thost:{port}/admin/x"),
    ] {
        for tool in ["http_fetch", "net_probe"] {
            let r = run(&host, tool, json!({ "url": url }));
            assert_eq!(
                r.code(),
                Some(ErrorCode::PolicyDenied),
                "{tool} {url}: {r:#?}"
            );
            assert!(
                r.error.as_ref().unwrap().message.contains("off limits"),
                "{r:#?}"
            );
        }
    }
    assert!(!admin_reached(&server), "{:?}", server.requests());
    // What the rule does not name still goes through.
    let r = run(
        &host,
        "http_fetch",
        json!({ "url": localhost(&server, "/public/x") }),
    );
    assert_eq!(r.status, Status::Ok, "{r:#?}");
}

#[test]
fn a_redirect_the_plugin_follows_is_held_to_the_deny_rule_and_audited_with_it() {
    let server = WebServer::start();
    let t = host(DENY_ADMIN);
    let host = t.controller();
    for target in ["/admin/x", "/%61dmin/x", "/public/../admin/x"] {
        let url = localhost(&server, &format!("/redirect?to={target}"));
        let r = run(&host, "http_fetch", json!({ "url": url }));
        assert_ne!(r.status, Status::Ok, "{target}: {r:#?}");
        assert!(
            !format!("{r:?}").contains(ADMIN),
            "the admin page came back: {r:#?}"
        );
        let records = requests(&host, &r.call_id);
        assert_eq!(records.len(), 2, "{records:#?}");
        assert_eq!(records[0]["decision"], "allowed");
        assert_eq!(records[1]["decision"], "denied", "{records:#?}");
        assert_eq!(
            records[1]["rule"], 2,
            "the refusal names the rule: {records:#?}"
        );
        assert_eq!(
            records[1]["path"], "/admin/x",
            "recorded in its canonical form"
        );
        let reason = records[1]["reason"].as_str().unwrap();
        assert!(reason.contains("off limits"), "{reason}");
    }
    assert!(!admin_reached(&server), "{:?}", server.requests());
}

#[test]
fn urls_a_plugin_builds_itself_are_held_to_the_rule() {
    let server = WebServer::start();
    let t = host(DENY_ADMIN);
    let host = t.controller();
    let port = server.port;
    let r = run(
        &host,
        "net_probe",
        json!({
            "url": localhost(&server, "/hello"),
            "then": [
                format!("http://localhost.:{port}/%61dmin/y"),
                format!("http://LOCALHOST:{port}/admin/z"),
                format!("http://localhost:{port}/hello/../admin/w"),
                format!("http://localhost:{port}/public"),
            ],
        }),
    );
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    let denied = refused(&r);
    assert_eq!(denied, [false, true, true, true, false], "{r:#?}");
    assert!(!admin_reached(&server), "{:?}", server.requests());
    let records = requests(&host, &r.call_id);
    assert_eq!(
        records.iter().filter(|r| r["rule"] == 2).count(),
        3,
        "{records:#?}"
    );
}

#[test]
fn a_rule_with_not_binds_every_request_outside_what_it_names() {
    let server = WebServer::start();
    let only_public = "[[rule]]\ntools = [\"net_probe\"]\n\
                       when = { \"/url\" = { not = \"http://localhost:*/public/**\" } }\n\
                       decision = \"deny\"\nreason = \"this tool reads the public pages only\"\n";
    let t = host(only_public);
    let host = t.controller();
    let r = run(
        &host,
        "net_probe",
        json!({
            "url": localhost(&server, "/public/a"),
            "then": [localhost(&server, "/public/b"), localhost(&server, "/hello")],
        }),
    );
    let denied = refused(&r);
    assert_eq!(denied, [false, false, true], "{r:#?}");
}

#[test]
fn an_ask_rule_lets_out_the_approved_url_and_refuses_every_other_it_names() {
    let server = WebServer::start();
    let ask = "[[rule]]\nwhen = { \"/url\" = \"http://localhost:*/private/**\" }\n\
               decision = \"ask\"\nreason = \"a person sees private pages fetched\"\n";
    let t = host(ask);
    let args = json!({
        "url": localhost(&server, "/private/a"),
        "then": [localhost(&server, "/private/b"), localhost(&server, "/hello")],
    })
    .to_string();
    let asked = call(&t.controller(), "net_probe", &args);
    assert_eq!(
        asked.code(),
        Some(ErrorCode::ApprovalRequired),
        "{asked:#?}"
    );
    assert!(server.requests().is_empty());
    let id = asked.approval_id.clone().unwrap();
    let (code, _, stderr) = run_cli(t.cli().args(["approvals", "approve", &id]));
    assert_eq!(code, 0, "{stderr}");
    let host = t.controller();
    let approval = host.records().approval(&id).unwrap().unwrap();
    let mut request = CallRequest::new("net_probe", &args);
    request.approval = Some(id);
    request.session = toolwarden::SessionId::from(approval.session);
    let r = runtime().block_on(host.handle(request));
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    let denied = refused(&r);
    assert_eq!(
        denied,
        [false, true, false],
        "the approved URL went out, another the rule names did not: {r:#?}"
    );
    let paths: Vec<String> = server.requests().iter().map(|s| s.path.clone()).collect();
    assert_eq!(paths, ["/private/a", "/hello"]);
}

#[test]
fn the_url_the_plugin_receives_and_the_server_reads_is_the_canonical_one() {
    let server = WebServer::start();
    let t = host("");
    let host = t.controller();
    let url = format!("http://localhost.:{}/a/./b/%7Euser/%2f", server.port);
    let r = run(&host, "http_fetch", json!({ "url": url }));
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    assert_eq!(
        r.value.as_ref().unwrap()["url"],
        format!("http://localhost:{}/a/b/~user/%2F", server.port)
    );
    let seen = server.requests();
    assert_eq!(seen[0].path, "/a/b/~user/%2F");
    assert_eq!(
        seen[0].header("host"),
        Some(format!("localhost:{}", server.port).as_str())
    );
    // A plugin that sends a raw spelling itself is sent the canonical one.
    let raw = format!("http://localhost.:{}/x/../%61bc", server.port);
    let r = run(&host, "net_probe", json!({ "url": raw }));
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    assert_eq!(server.requests()[1].path, "/abc");
    assert_eq!(requests(&host, &r.call_id)[0]["path"], "/abc");
}
