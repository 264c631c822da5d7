//! Governed egress (issue #19): plugins that declare network reach exactly
//! what the call was granted (declared ∩ allowed), every request is checked
//! when it is sent and recorded, limits and cancellation reach requests in
//! flight, and credentials reach their origins only, never the plugin.
//! Real servers on 127.0.0.1 ([`crate::web`]), real components.

use crate::harness::{TestHost, call, run_cli, runtime};
use crate::web::{HELLO, HUGE_BYTES, TestCa, WebServer};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use toolwarden::{AuditFilter, CallRequest, CallResult, Controller, ErrorCode, Status};
use toolwarden_tests::{CALC, HTTP_FETCH, NET_PROBE, UNDECLARED_HTTP};

const ALLOW_TOOLS: &str =
    "[[rule]]\ntools = [\"*\"]\ndecision = \"allow\"\nreason = \"network tests\"\n";

/// Loopback on any port, over plain http, as every test server needs.
const LOOPBACK: &str = "[network]\nallow = [{ origin = \"http://127.0.0.1:*\", private = true }]\n";

fn host(plugins: &[&str], network: &str) -> TestHost {
    TestHost::new(plugins).config(&format!("{network}\n{ALLOW_TOOLS}"))
}

fn fetch(host: &Controller, url: &str) -> CallResult {
    call(host, "http_fetch", &json!({ "url": url }).to_string())
}

fn probe(host: &Controller, tool: &str, args: Value) -> CallResult {
    call(host, tool, &args.to_string())
}

/// The `request` records of one call, as the audit stored them.
pub fn requests(host: &Controller, call_id: &str) -> Vec<Value> {
    host.records()
        .audit(&AuditFilter {
            call_id: Some(call_id.into()),
            ..AuditFilter::default()
        })
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == "request")
        .map(|r| r.data)
        .collect()
}

/// The first result a `net_probe` call reports.
fn first(result: &CallResult) -> &Value {
    &result
        .value
        .as_ref()
        .unwrap_or_else(|| panic!("{result:#?}"))["results"][0]
}

#[test]
fn an_allowed_call_reaches_its_origin_and_each_request_is_recorded() {
    let server = WebServer::start();
    let t = host(&[HTTP_FETCH], LOOPBACK);
    let host = t.controller();
    let r = fetch(&host, &server.url("/hello?token=s3cr3t"));
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    let value = r.value.as_ref().unwrap();
    assert_eq!(value["status"], 200);
    assert_eq!(value["text"], HELLO);
    assert_eq!(server.requests().len(), 1);
    let records = requests(&host, &r.call_id);
    assert_eq!(records.len(), 1, "{records:#?}");
    let record = &records[0];
    assert_eq!(record["decision"], "allowed");
    assert_eq!(record["method"], "GET");
    assert_eq!(
        record["origin"],
        format!("http://127.0.0.1:{}", server.port)
    );
    assert_eq!(
        record["path"], "/hello?token=REDACTED",
        "query values are redacted"
    );
    assert_eq!(record["status"], 200);
    assert_eq!(record["received_bytes"], HELLO.len());
    assert_eq!(record["address"], format!("127.0.0.1:{}", server.port));
    assert!(record["duration_us"].as_u64().unwrap() > 0);
}

#[test]
fn the_audit_holds_one_record_per_request_and_the_request_limit_holds() {
    let server = WebServer::start();
    let t = host(&[NET_PROBE], &format!("{LOOPBACK}max_requests = 3\n"));
    let host = t.controller();
    let r = probe(
        &host,
        "net_probe",
        json!({ "url": server.url("/hello"), "method": "POST", "body_bytes": 10, "times": 5 }),
    );
    let results = r.value.as_ref().unwrap()["results"]
        .as_array()
        .unwrap()
        .clone();
    let statuses: Vec<Value> = results.iter().map(|s| s["status"].clone()).collect();
    assert_eq!(
        statuses,
        [json!(200), json!(200), json!(200), Value::Null, Value::Null],
        "{results:#?}"
    );
    assert_eq!(results[3]["denied"], true, "{results:#?}");
    assert_eq!(
        server.requests().len(),
        3,
        "the server saw only what was let out"
    );
    assert!(server.requests().iter().all(|s| s.body_bytes == 10));
    let records = requests(&host, &r.call_id);
    assert_eq!(
        records.len(),
        4,
        "three sent and one refusal at the limit: {records:#?}"
    );
    for record in &records[..3] {
        assert_eq!(record["decision"], "allowed");
        assert_eq!(record["method"], "POST");
        assert_eq!(record["sent_bytes"], 10);
    }
    assert_eq!(records[3]["decision"], "denied");
    assert!(
        records[3]["reason"]
            .as_str()
            .unwrap()
            .contains("network.max_requests"),
        "{records:#?}"
    );
}

#[test]
fn request_bodies_past_the_limit_are_cut_off_and_a_silent_server_is_left_at_the_first_byte_timeout()
{
    let server = WebServer::start();
    let t = host(
        &[NET_PROBE],
        &format!("{LOOPBACK}max_sent_kb = 1\nfirst_byte_timeout_ms = 300\n"),
    );
    let host = t.controller();
    let r = probe(
        &host,
        "net_probe",
        json!({ "url": server.url("/hello"), "method": "POST", "body_bytes": 4096 }),
    );
    assert!(first(&r)["status"].is_null(), "{r:#?}");
    let records = requests(&host, &r.call_id);
    assert!(
        records[0]["reason"]
            .as_str()
            .unwrap()
            .contains("max_sent_kb"),
        "{records:#?}"
    );
    assert!(records[0]["sent_bytes"].as_u64().unwrap() <= 4096);
    let started = Instant::now();
    let r = probe(&host, "net_probe", json!({ "url": server.url("/hang") }));
    assert!(first(&r)["error"].is_string(), "{r:#?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let records = requests(&host, &r.call_id);
    assert!(
        records[0]["reason"].as_str().unwrap().contains("timeout"),
        "{records:#?}"
    );
}

#[test]
fn an_origin_the_tool_does_not_declare_is_denied() {
    let server = WebServer::start();
    let t = host(&[NET_PROBE], LOOPBACK);
    let host = t.controller();
    let r = probe(
        &host,
        "net_probe_narrow",
        json!({ "url": server.url("/hello") }),
    );
    assert_eq!(first(&r)["denied"], true, "{r:#?}");
    assert!(server.requests().is_empty());
    let records = requests(&host, &r.call_id);
    assert_eq!(records[0]["decision"], "denied");
    assert!(
        records[0]["reason"]
            .as_str()
            .unwrap()
            .contains("is not among the origins"),
        "{records:#?}"
    );
}

#[test]
fn an_origin_the_operator_does_not_allow_is_denied_before_and_while_the_plugin_runs() {
    let allowed = WebServer::start();
    let other = WebServer::start();
    let network = format!(
        "[network]\nallow = [{{ origin = \"http://127.0.0.1:{}\", private = true }}]\n",
        allowed.port
    );
    let t = host(&[HTTP_FETCH, NET_PROBE], &network);
    let host = t.controller();
    // A URL argument the grant does not cover: refused before the plugin starts.
    let r = fetch(&host, &other.url("/hello"));
    assert_eq!(r.code(), Some(ErrorCode::GuardDenied), "{r:#?}");
    let message = &r.error.as_ref().unwrap().message;
    assert!(
        message.contains("/url") && message.contains("may not reach"),
        "{message}"
    );
    assert_eq!(r.fuel_used, None, "the plugin never ran");
    // A request to it the plugin builds itself: refused when it is sent.
    let r = probe(&host, "net_probe", json!({ "url": other.url("/hello") }));
    assert_eq!(first(&r)["denied"], true, "{r:#?}");
    assert!(other.requests().is_empty(), "nothing reached the server");
    // The allowed one works, and a URL written another way is read as a
    // browser would before anything is decided.
    let r = fetch(
        &host,
        &format!("HTTP://127.0.0.1:{}/a/../hello", allowed.port),
    );
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    assert_eq!(allowed.requests()[0].path, "/hello");
}

#[test]
fn a_name_that_resolves_to_loopback_is_denied_unless_the_entry_allows_private_addresses() {
    let server = WebServer::start();
    let public_only = host(
        &[HTTP_FETCH],
        "[network]\nallow = [\"http://localhost:*\"]\n",
    );
    let host_a = public_only.controller();
    let r = fetch(&host_a, &server.localhost_url("/hello"));
    assert_eq!(r.code(), Some(ErrorCode::ToolFailed), "{r:#?}");
    assert!(
        r.error
            .as_ref()
            .unwrap()
            .message
            .contains("HTTP-request-denied")
    );
    let records = requests(&host_a, &r.call_id);
    let reason = records[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("loopback") && reason.contains("private = true"),
        "{reason}"
    );
    assert!(server.requests().is_empty());

    let private = host(
        &[HTTP_FETCH],
        "[network]\nallow = [{ origin = \"http://localhost:*\", private = true }]\n",
    );
    let r = fetch(&private.controller(), &server.localhost_url("/hello"));
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    assert_eq!(r.value.unwrap()["text"], HELLO);
}

#[test]
fn plain_http_needs_an_allow_entry_that_says_http() {
    let server = WebServer::start();
    let t = host(
        &[NET_PROBE],
        "[network]\nallow = [{ origin = \"https://127.0.0.1:*\", private = true }]\n",
    );
    let r = probe(
        &t.controller(),
        "net_probe",
        json!({ "url": server.url("/hello") }),
    );
    assert_eq!(first(&r)["denied"], true, "{r:#?}");
    assert!(server.requests().is_empty());
}

#[test]
fn redirects_are_new_requests_checked_anew() {
    let server = WebServer::start();
    let t = host(&[HTTP_FETCH], LOOPBACK);
    let host = t.controller();
    let r = fetch(&host, &server.url("/redirect?to=/hello"));
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    assert_eq!(r.value.as_ref().unwrap()["text"], HELLO);
    assert_eq!(requests(&host, &r.call_id).len(), 2);

    let metadata = "http://169.254.169.254/latest/meta-data/";
    let r = fetch(&host, &server.url(&format!("/redirect?to={metadata}")));
    assert_eq!(r.code(), Some(ErrorCode::ToolFailed), "{r:#?}");
    assert!(
        r.error
            .as_ref()
            .unwrap()
            .message
            .contains("HTTP-request-denied")
    );
    let records = requests(&host, &r.call_id);
    assert_eq!(records.len(), 2, "{records:#?}");
    assert_eq!(records[0]["status"], 302);
    assert_eq!(records[1]["decision"], "denied");
    assert_eq!(records[1]["origin"], "http://169.254.169.254");
}

#[test]
fn a_huge_response_is_cut_off_at_the_limit_never_buffered_whole() {
    let server = WebServer::start();
    let t = host(&[NET_PROBE], &format!("{LOOPBACK}max_received_kb = 1024\n"));
    let host = t.controller();
    let started = Instant::now();
    let r = probe(&host, "net_probe", json!({ "url": server.url("/huge") }));
    let error = first(&r)["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{r:#?}"))
        .to_owned();
    assert!(error.contains("body size exceeds limit"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(30));
    let records = requests(&host, &r.call_id);
    let received = records[0]["received_bytes"].as_u64().unwrap();
    assert!(
        (1 << 20..2 << 20).contains(&received),
        "cut off just past 1 MiB, got {received}"
    );
    assert!(
        records[0]["reason"]
            .as_str()
            .unwrap()
            .contains("max_received_kb")
    );
    // The connection is closed once the call ends: the server stops
    // writing long before the 1 GiB it announced.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut sent = server.huge_sent();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        let now = server.huge_sent();
        if now == sent {
            break;
        }
        sent = now;
    }
    assert!(sent < HUGE_BYTES / 8, "the server wrote {sent} bytes");
}

#[test]
fn a_server_that_trickles_is_stopped_at_the_deadline() {
    let server = WebServer::start();
    let t = host(
        &[HTTP_FETCH],
        &format!("{LOOPBACK}\n[limits]\ntimeout_ms = 1500\n"),
    );
    let host = t.controller();
    let started = Instant::now();
    let r = fetch(&host, &server.url("/slow"));
    assert_eq!(r.code(), Some(ErrorCode::Timeout), "{r:#?}");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(requests(&host, &r.call_id).len(), 1);
}

#[test]
fn cancelling_a_call_aborts_its_request_in_flight() {
    let server = WebServer::start();
    let t = host(&[HTTP_FETCH], LOOPBACK);
    let host = t.controller();
    let request = CallRequest::new(
        "http_fetch",
        json!({ "url": server.url("/hang") }).to_string(),
    );
    let cancel = request.cancel.clone();
    let runtime = runtime();
    let result = runtime.block_on(async {
        let waiter = async {
            while server.requests().is_empty() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            cancel.cancel();
        };
        let (result, ()) = tokio::join!(host.handle(request), waiter);
        result
    });
    assert_eq!(result.code(), Some(ErrorCode::Cancelled), "{result:#?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server.hung_up() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server.hung_up(), "the connection was closed with the call");
}

/// A 0600 file holding `secret`, in the test host's root.
fn secret_file(t: &TestHost, secret: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = t.root.path().join("probe.secret");
    std::fs::write(&path, format!("{secret}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path.display().to_string()
}

#[test]
fn a_credential_reaches_its_origin_only_and_never_the_plugin_the_audit_or_approvals() {
    let bound = WebServer::start();
    let other = WebServer::start();
    let secret = "tw-secret-7f3a9c1e";
    let t = TestHost::new(&[NET_PROBE]);
    let config = format!(
        "{LOOPBACK}\n[credential.probe]\nfile = {:?}\norigins = [\"http://127.0.0.1:{}\"]\n\
         header = \"X-Probe-Key\"\nprefix = \"Key \"\n\n{ALLOW_TOOLS}\n\
         [[rule]]\ntools = [\"net_probe_keyed\"]\nwhen = {{ \"/method\" = \"PUT\" }}\ndecision = \"ask\"\n\
         reason = \"puts need a person\"\n",
        secret_file(&t, secret),
        bound.port
    );
    let t = t.config(&config);
    let host = t.controller();
    let headers = json!({ "X-Probe-Key": "the plugin's own value" });
    let to_bound = probe(
        &host,
        "net_probe_keyed",
        json!({ "url": bound.url("/hello"), "headers": headers }),
    );
    assert_eq!(first(&to_bound)["status"], 200, "{to_bound:#?}");
    let to_other = probe(
        &host,
        "net_probe_keyed",
        json!({ "url": other.url("/hello"), "headers": headers }),
    );
    assert_eq!(first(&to_other)["status"], 200, "{to_other:#?}");
    assert_eq!(
        bound.requests()[0].header("X-Probe-Key"),
        Some(format!("Key {secret}").as_str()),
        "the host replaces the plugin's header with the credential"
    );
    assert_eq!(
        other.requests()[0].header("X-Probe-Key"),
        Some("the plugin's own value"),
        "another origin never gets it"
    );
    let asked = probe(
        &host,
        "net_probe_keyed",
        json!({ "url": bound.url("/hello"), "method": "PUT" }),
    );
    assert_eq!(asked.code(), Some(ErrorCode::ApprovalRequired));
    let approval = host
        .records()
        .approval(asked.approval_id.as_deref().unwrap())
        .unwrap()
        .unwrap();
    assert!(
        approval.network.contains("credentials probe"),
        "{}",
        approval.network
    );
    // Nothing the plugin returned, nothing in the trail, no approval holds it.
    let everything = format!(
        "{:?}{:?}{}{}",
        to_bound,
        to_other,
        serde_json::to_string(&host.records().audit(&AuditFilter::default()).unwrap()).unwrap(),
        serde_json::to_string(&host.records().approvals().unwrap()).unwrap(),
    );
    assert!(
        !everything.contains(secret),
        "the secret leaked: {everything}"
    );
    let env = &to_bound.value.as_ref().unwrap()["env"];
    assert_eq!(env, &json!([]), "the plugin has no environment");
}

#[test]
fn a_credential_from_the_environment_never_shows_in_output_logs_or_errors() {
    let bound = WebServer::start();
    let secret = "tw-env-secret-41d2b8";
    let config = format!(
        "{LOOPBACK}first_byte_timeout_ms = 500\n\n[credential.probe]\nenv = \"TW_TEST_PROBE_TOKEN\"\n\
         origins = [\"http://127.0.0.1:{}\"]\nheader = \"Authorization\"\nprefix = \"Bearer \"\n\n{ALLOW_TOOLS}",
        bound.port
    );
    let t = TestHost::new(&[NET_PROBE]).config(&config);
    for (url, want) in [(bound.url("/hello"), 200), (bound.url("/hang"), 0)] {
        let (_, out, err) = run_cli(
            t.cli()
                .env("TW_TEST_PROBE_TOKEN", secret)
                .env("TOOLWARDEN_LOG", "trace")
                .args(["-vv", "call", "net_probe_keyed", "--json"])
                .arg(json!({ "url": url }).to_string()),
        );
        assert!(
            !out.contains(secret) && !err.contains(secret),
            "leaked: {out}\n{err}"
        );
        if want == 200 {
            assert!(out.contains("\"status\": 200"), "{out}\n{err}");
        }
    }
    assert_eq!(
        bound.requests()[0].header("authorization"),
        Some(format!("Bearer {secret}").as_str())
    );
    let (_, out, err) = run_cli(
        t.cli()
            .args(["audit", "--json"])
            .env("TW_TEST_PROBE_TOKEN", secret),
    );
    assert!(!out.contains(secret) && !err.contains(secret));
    let (code, _, err) = run_cli(t.cli().args(["list"]));
    assert_eq!(code, 2, "without the variable the config does not load");
    assert!(err.contains("TW_TEST_PROBE_TOKEN"), "{err}");
}

#[test]
fn a_tool_that_needs_an_undefined_credential_loads_and_its_calls_fail_closed() {
    let server = WebServer::start();
    let t = host(&[NET_PROBE], LOOPBACK);
    let host = t.controller();
    assert!(host.registry().get("net_probe_keyed").is_some(), "it loads");
    let r = probe(
        &host,
        "net_probe_keyed",
        json!({ "url": server.url("/hello") }),
    );
    assert_eq!(r.code(), Some(ErrorCode::CredentialMissing), "{r:#?}");
    assert!(
        r.error
            .as_ref()
            .unwrap()
            .message
            .contains("[credential.probe]")
    );
    assert!(server.requests().is_empty());
    // A tool of the same plugin that needs no credential still runs.
    let r = probe(
        &host,
        "net_probe_narrow",
        json!({ "url": "http://127.0.0.1:1/" }),
    );
    assert_eq!(r.status, Status::Ok, "{r:#?}");
}

#[test]
fn https_works_with_the_ca_the_operator_adds_and_fails_without_it() {
    let ca = TestCa::new();
    let server = WebServer::start_tls(&ca);
    let t = host(&[HTTP_FETCH], "");
    let ca_file = t.root.path().join("test-ca.pem");
    std::fs::write(&ca_file, &ca.ca_pem).unwrap();
    let allow = "allow = [{ origin = \"https://localhost:*\", private = true }]\n";
    let trusting = host(
        &[HTTP_FETCH],
        &format!(
            "[network]\n{allow}ca_file = {:?}\n",
            ca_file.display().to_string()
        ),
    );
    let r = fetch(&trusting.controller(), &server.localhost_url("/hello"));
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    assert_eq!(r.value.unwrap()["text"], HELLO);

    let system_roots_only = host(&[HTTP_FETCH], &format!("[network]\n{allow}"));
    let host = system_roots_only.controller();
    let r = fetch(&host, &server.localhost_url("/hello"));
    assert_eq!(r.code(), Some(ErrorCode::ToolFailed), "{r:#?}");
    let records = requests(&host, &r.call_id);
    assert!(
        records[0]["reason"].as_str().unwrap().contains("TLS"),
        "{records:#?}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "only the trusting host's request got through"
    );
}

#[test]
fn a_tool_without_network_has_every_request_refused_and_a_plugin_that_hides_http_does_not_load() {
    let server = WebServer::start();
    let t = host(&[NET_PROBE, UNDECLARED_HTTP], LOOPBACK);
    let host = t.controller();
    let r = probe(&host, "net_none", json!({ "url": server.url("/hello") }));
    assert_eq!(first(&r)["denied"], true, "{r:#?}");
    assert!(server.requests().is_empty());
    let registry = host.registry();
    let failure = registry
        .failures()
        .iter()
        .find(|f| f.file().ends_with("undeclared_http.wasm"))
        .expect("the plugin that imports wasi:http without declaring network is refused");
    let message = failure.to_string();
    assert!(
        message.contains("wasi:http") && message.contains("network"),
        "{message}"
    );
}

#[test]
fn a_0_1_0_plugin_is_unaffected_by_network_settings() {
    let kept = concat!(env!("CARGO_MANIFEST_DIR"), "/kept/contract-0.1.0.wasm");
    let t = host(&[kept], LOOPBACK);
    t.file("notes.txt", "hello\n");
    let host = t.controller();
    let registry = host.registry();
    let tool = registry.get("contract_read").unwrap();
    assert_eq!(tool.spec().network, None);
    assert_eq!(tool.plugin().sha256().len(), 64);
    let r = call(&host, "contract_read", r#"{"path":"notes.txt"}"#);
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    assert!(requests(&host, &r.call_id).is_empty());
}

#[test]
fn approvals_show_and_bind_the_origins_a_call_may_reach() {
    let server = WebServer::start();
    let ask = "[[rule]]\ntools = [\"http_fetch\"]\ndecision = \"ask\"\nreason = \"a person reads what leaves\"\n";
    let wide = format!("{LOOPBACK}\n{ask}");
    let t = TestHost::new(&[HTTP_FETCH]).config(&wide);
    let args = json!({ "url": server.url("/hello") }).to_string();
    let asked = call(&t.controller(), "http_fetch", &args);
    assert_eq!(
        asked.code(),
        Some(ErrorCode::ApprovalRequired),
        "{asked:#?}"
    );
    let id = asked.approval_id.clone().unwrap();
    let (code, shown, _) = run_cli(t.cli().args(["approvals", "show", &id]));
    assert_eq!(code, 0);
    assert!(
        shown.contains("network    http://127.0.0.1:* (private addresses too)"),
        "{shown}"
    );
    let (code, _, stderr) = run_cli(t.cli().args(["approvals", "approve", &id]));
    assert_eq!(code, 0, "{stderr}");
    // The operator narrows what the tool may reach: the approval no longer fits.
    let narrow = format!(
        "[network]\nallow = [{{ origin = \"http://127.0.0.1:{}\", private = true }}]\n{ask}",
        server.port
    );
    let t = t.config(&narrow);
    let mut request = CallRequest::new("http_fetch", &args);
    request.approval = Some(id.clone());
    request.session = asked_session(&t, &id);
    let r = runtime().block_on(t.controller().handle(request));
    assert_eq!(r.code(), Some(ErrorCode::ApprovalInvalid), "{r:#?}");
    assert!(r.error.unwrap().message.contains("network"));
    assert!(server.requests().is_empty());
    // Under the policy it was given for, it runs once.
    let t = t.config(&wide);
    let mut request = CallRequest::new("http_fetch", &args);
    request.approval = Some(id.clone());
    request.session = asked_session(&t, &id);
    let r = runtime().block_on(t.controller().handle(request));
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    assert_eq!(server.requests().len(), 1);
}

fn asked_session(t: &TestHost, id: &str) -> toolwarden::SessionId {
    let host = t.controller();
    let approval = host.records().approval(id).unwrap().unwrap();
    toolwarden::SessionId::from(approval.session)
}

#[test]
fn check_reports_declared_origins_the_config_does_not_allow_and_undefined_credentials() {
    let t = host(
        &[HTTP_FETCH, NET_PROBE],
        "[network]\nallow = [\"https://docs.rs\"]\n",
    );
    let (code, out, _) = run_cli(t.cli().args(["check", "--json"]));
    assert_eq!(code, 1, "{out}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let problems: Vec<String> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("{}: {}", p["place"], p["problem"]))
        .collect();
    let mentions = |needle: &str| problems.iter().any(|p| p.contains(needle));
    assert!(
        mentions("`http_fetch`") && mentions("`http://*:*`"),
        "{problems:#?}"
    );
    assert!(
        !mentions("`https://*:*`"),
        "docs.rs is allowed: {problems:#?}"
    );
    assert!(mentions("credential `probe`"), "{problems:#?}");
}

#[test]
fn list_and_inspect_show_declared_and_granted_network() {
    let t = host(&[HTTP_FETCH, CALC], LOOPBACK);
    let (code, out, _) = run_cli(t.cli().args(["list", "--json"]));
    assert_eq!(code, 0);
    let tools: Value = serde_json::from_str(&out).unwrap();
    let fetch = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "http_fetch")
        .unwrap();
    assert_eq!(
        fetch["network"]["origins"],
        json!(["https://*:*", "http://*:*"])
    );
    assert_eq!(
        fetch["granted_network"]["origins"][0],
        json!({ "pattern": "http://127.0.0.1:*", "reach": "also-private" })
    );
    let calc = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "calc")
        .unwrap();
    assert!(calc.get("network").is_none_or(Value::is_null), "{calc}");
    let plugin = t.plugins.join("http_fetch.wasm");
    let (code, out, _) = run_cli(t.cli().args(["inspect"]).arg(&plugin));
    assert_eq!(code, 0);
    assert!(out.contains("contract toolwarden:tool@0.3.0"), "{out}");
    assert!(out.contains("network https://*:*, http://*:*"), "{out}");
}

#[test]
fn mcp_tools_list_shows_open_world_for_network_tools() {
    let t = host(&[HTTP_FETCH, CALC], LOOPBACK);
    let tools = crate::mcp::list_tools(&t);
    let hint = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} is listed: {tools:#?}"))["annotations"]["openWorldHint"]
            .clone()
    };
    assert_eq!(hint("http_fetch"), true);
    assert_eq!(hint("calc"), false);
}

#[test]
fn check_names_the_credential_a_misspelt_one_was_meant_to_be() {
    use std::os::unix::fs::PermissionsExt;
    let secrets = tempfile::tempdir().unwrap();
    let token = secrets.path().join("token");
    std::fs::write(&token, "s3cret").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = format!(
        "{LOOPBACK}\n[credential.prob]\nfile = {token:?}\norigins = [\"http://127.0.0.1:1\"]\nheader = \"Authorization\"\n"
    );
    let t = host(&[NET_PROBE], &config);
    let (code, stdout, stderr) = crate::harness::run_cli(t.cli().args(["check", "--policy"]));
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.contains("needs the credential `probe`") && stdout.contains("did you mean `prob`?"),
        "{stdout}"
    );
}
