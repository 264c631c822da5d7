//! A credential never comes back out (issue #42, part 4): a server at the
//! credential's origin echoes the request's headers, and a hostile plugin
//! hands what it got back through every channel it has, raw and encoded.
//! The host masks every form of the secret in everything that leaves the
//! sandbox, and refuses a request to any other origin that carries it (in
//! the URL, a header or the body, however the body is cut into frames).

use crate::harness::{TestHost, run_cli, runtime};
use crate::web::WebServer;
use base64::Engine;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use toolwarden::{AuditFilter, CallRequest, CallResult, Controller, ErrorCode, Status};
use toolwarden_tests::NET_PROBE;

const SECRET: &str = "tw-echo-secret-5b7e2d90c4a1";
const MASK: &str = "[REDACTED: credential probe]";

/// A host whose credential `probe` is bound to `bound`'s origin, sent as
/// `X-Probe-Key: Key <secret>`.
fn host_for(bound: &WebServer) -> TestHost {
    use std::os::unix::fs::PermissionsExt;
    let t = TestHost::new(&[NET_PROBE]);
    let file = t.root.path().join("probe.secret");
    std::fs::write(&file, format!("{SECRET}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = format!(
        "[network]\nallow = [{{ origin = \"http://127.0.0.1:*\", private = true }}]\n\
         [credential.probe]\nfile = {file:?}\norigins = [\"http://127.0.0.1:{}\"]\n\
         header = \"X-Probe-Key\"\nprefix = \"Key \"\n\n\
         [[rule]]\ntools = [\"*\"]\ndecision = \"allow\"\nreason = \"leak tests\"\n",
        bound.port
    );
    t.config(&config)
}

/// Every spelling of the secret a careless check would miss.
fn spellings() -> Vec<String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut all = vec![SECRET.to_owned()];
    for text in [SECRET.to_owned(), format!("Key {SECRET}")] {
        // The inner run of each encoding, wherever the secret starts.
        let encoded = b64.encode(&text);
        all.push(encoded[4..encoded.len() - 4].to_owned());
        let encoded = url.encode(&text);
        all.push(encoded[4..encoded.len() - 4].to_owned());
    }
    all
}

fn assert_no_secret(what: &str, text: &str) {
    for spelling in spellings() {
        assert!(
            !text.contains(&spelling),
            "{what} holds the secret as `{spelling}`:\n{text}"
        );
    }
}

fn run(host: &Controller, args: Value) -> CallResult {
    crate::harness::call(host, "net_probe_keyed", &args.to_string())
}

fn audit_text(host: &Controller) -> String {
    serde_json::to_string(&host.records().audit(&AuditFilter::default()).unwrap()).unwrap()
}

#[test]
fn a_credential_a_server_echoes_is_masked_in_the_value_text_blocks_progress_and_log_lines() {
    let bound = WebServer::start();
    let t = host_for(&bound);
    let host = t.controller();
    let reported = Arc::new(Mutex::new(Vec::new()));
    let mut request = CallRequest::new(
        "net_probe_keyed",
        json!({
            "url": bound.url("/echo"),
            "leak_via": ["text", "image", "resource", "progress", "log"],
        })
        .to_string(),
    );
    let seen = Arc::clone(&reported);
    request.progress = Some(toolwarden::ProgressSink::new(move |p| {
        seen.lock().unwrap().push(p.message.unwrap_or_default());
    }));
    let logged = Arc::new(Mutex::new(Vec::new()));
    let lines = Arc::clone(&logged);
    request.log = Some(toolwarden::LogSink::new(move |line| {
        lines.lock().unwrap().push(line.text);
    }));
    let r = runtime().block_on(host.handle(request));
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    assert_eq!(
        bound.requests()[0].header("x-probe-key"),
        Some(format!("Key {SECRET}").as_str()),
        "the server got the credential and echoed it"
    );
    let value = r.value.clone().unwrap();
    let echoed = value["results"][0]["body_start"].as_str().unwrap();
    assert!(echoed.contains(MASK), "{echoed}");
    let blocks = serde_json::to_string(&r.blocks).unwrap();
    let image = r
        .blocks
        .iter()
        .find_map(|b| match b {
            toolwarden::Block::Image { data, .. } => {
                Some(String::from_utf8_lossy(&data.0).into_owned())
            }
            _ => None,
        })
        .expect("the image block is there");
    assert!(image.contains(MASK), "{image}");
    let logged = logged.lock().unwrap().join("\n");
    assert!(
        logged.contains(MASK),
        "the log line is passed on, masked: {logged}"
    );
    for (what, text) in [
        ("the value", value.to_string()),
        ("the text", r.content.clone().unwrap_or_default()),
        ("the blocks", blocks),
        ("the image", image),
        ("the progress", reported.lock().unwrap().join("\n")),
        ("the log lines", logged),
        ("the audit", audit_text(&host)),
    ] {
        assert_no_secret(what, &text);
    }
}

#[test]
fn a_credential_a_server_echoes_is_masked_in_errors_questions_and_logs() {
    let bound = WebServer::start();
    let t = host_for(&bound);
    let host = t.controller();
    let failed = run(
        &host,
        json!({ "url": bound.url("/echo"), "leak_via": ["error"] }),
    );
    assert_eq!(failed.status, Status::Error, "{failed:#?}");
    let message = failed.error.as_ref().unwrap().message.clone();
    assert!(message.contains(MASK), "{message}");
    assert_no_secret("the error", &message);
    let asked = run(
        &host,
        json!({ "url": bound.url("/echo"), "leak_via": ["question"] }),
    );
    assert_eq!(asked.code(), Some(ErrorCode::InputRequired), "{asked:#?}");
    let question = serde_json::to_string(&asked.questions).unwrap();
    assert!(question.contains(MASK), "{question}");
    assert_no_secret("the question", &question);
    assert_no_secret("the audit", &audit_text(&host));
    // The plugin's log line, at a verbosity that shows everything.
    let (_, out, err) = run_cli(
        t.cli()
            .env("TOOLWARDEN_LOG", "trace")
            .args(["-vv", "call", "net_probe_keyed", "--json"])
            .arg(json!({ "url": bound.url("/echo"), "leak_via": ["log", "text"] }).to_string()),
    );
    assert!(err.contains("plugin: ") && err.contains(MASK), "{err}");
    assert_no_secret("the CLI's output", &out);
    assert_no_secret("the log", &err);
}

#[test]
fn a_credential_is_never_sent_to_an_origin_it_is_not_bound_to() {
    let bound = WebServer::start();
    let other = WebServer::start();
    let t = host_for(&bound);
    let host = t.controller();
    let encoded = base64::engine::general_purpose::STANDARD.encode(SECRET);
    let cases = [
        json!({ "url": other.url(&format!("/x?leak={SECRET}")) }),
        json!({ "url": other.url(&format!("/x?leak={encoded}")) }),
        json!({ "url": other.url(&format!("/{SECRET}/x")) }),
        json!({ "url": other.url("/x"), "headers": { "X-Leak": format!("Key {SECRET}") } }),
        json!({ "url": other.url("/x"), "method": "POST", "body_text": format!("k={SECRET}") }),
    ];
    for args in cases {
        let r = run(&host, args.clone());
        assert_eq!(r.status, Status::Ok, "{r:#?}");
        let first = &r.value.as_ref().unwrap()["results"][0];
        assert_eq!(first["denied"], true, "{args}: {r:#?}");
    }
    // However the body is cut into frames, no part of the secret leaves.
    for pad in [4090, 4094, 4096, 8189, 65_530] {
        let body = format!("{}{SECRET}{}", "x".repeat(pad), "y".repeat(10));
        let r = run(
            &host,
            json!({ "url": other.url("/x"), "method": "POST", "body_text": body }),
        );
        assert_eq!(
            r.value.as_ref().unwrap()["results"][0]["denied"],
            true,
            "pad {pad}: {r:#?}"
        );
    }
    for seen in other.requests() {
        let body = String::from_utf8_lossy(&seen.body);
        assert!(!body.contains(&SECRET[..SECRET.len() / 2]), "{body}");
        assert!(!seen.path.contains(SECRET) && !seen.path.contains(&encoded));
    }
    let records: Vec<Value> = host
        .records()
        .audit(&AuditFilter::default())
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == "request" && r.data["decision"] == "denied")
        .map(|r| r.data)
        .collect();
    assert!(
        records.iter().all(|r| r["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("credential `probe`")),
        "{records:#?}"
    );
    // The origin it is bound to gets the body as the plugin wrote it.
    let body = format!("{}{SECRET}", "x".repeat(4094));
    let r = run(
        &host,
        json!({ "url": bound.url("/x"), "method": "POST", "body_text": body }),
    );
    assert_eq!(
        r.value.as_ref().unwrap()["results"][0]["status"],
        200,
        "{r:#?}"
    );
    assert_eq!(bound.requests().last().unwrap().body, body.as_bytes());
}
