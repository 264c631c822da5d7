//! The example plugins do what their descriptions promise.

use crate::harness::{TestHost, call};
use serde_json::json;
use toolwarden::{ErrorCode, SandboxMode, Status};
use toolwarden_tests::{CALC, FS, HTTP_FETCH};

#[test]
pub(crate) fn calc() {
    let t = TestHost::new(&[CALC]);
    let host = t.controller();
    let r = call(&host, "calc", r#"{"op":"pow","a":2,"b":52}"#);
    assert_eq!(r.value, Some(json!({"result": 4503599627370496_i64})));
    assert_eq!(r.content.as_deref(), Some("4503599627370496"));
    let overflow = call(&host, "calc", r#"{"op":"mul","a":9007199254740991,"b":2}"#);
    assert_eq!(overflow.code(), Some(ErrorCode::ToolFailed));
    assert!(
        overflow
            .error
            .unwrap()
            .message
            .contains("outside the exact integer range")
    );
    let by_zero = call(&host, "calc", r#"{"op":"div","a":1,"b":0}"#);
    assert_eq!(by_zero.code(), Some(ErrorCode::ToolFailed));
    assert!(by_zero.error.unwrap().message.contains("division by zero"));
    let out_of_range = call(&host, "calc", r#"{"op":"add","a":9007199254740992,"b":0}"#);
    assert_eq!(
        out_of_range.code(),
        Some(ErrorCode::InvalidArgs),
        "the schema bounds are enforced by the host"
    );
}

#[test]
pub(crate) fn fs() {
    let t = TestHost::new(&[FS]).sandbox(SandboxMode::WorkspaceWrite);
    t.file("src/main.rs", "fn main() {\n    println!(\"needle\");\n}\n");
    t.file("notes.txt", "no match here\nneedle again\n");
    let host = t.controller();

    let read = call(
        &host,
        "read_file",
        r#"{"path":"src/main.rs","max_bytes":9}"#,
    );
    assert_eq!(read.value.as_ref().unwrap()["content"], "fn main()");
    assert_eq!(read.value.as_ref().unwrap()["truncated"], true);

    let list = call(&host, "list_dir", r#"{"path":"."}"#);
    let names: Vec<_> = list.value.unwrap()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["notes.txt", "src"]);

    let found = call(&host, "search_text", r#"{"pattern":"needle","path":"."}"#);
    let matches = found.value.unwrap()["matches"].clone();
    assert_eq!(matches.as_array().unwrap().len(), 2, "{matches}");
    assert_eq!(
        matches[0],
        json!({"path": "notes.txt", "line": 2, "text": "needle again"})
    );

    let wrote = call(
        &host,
        "write_file",
        r#"{"path":"out.txt","content":"written"}"#,
    );
    assert_eq!(wrote.status, Status::Ok, "{wrote:#?}");
    assert_eq!(
        std::fs::read_to_string(t.workspace.join("out.txt")).unwrap(),
        "written"
    );

    let missing = call(&host, "read_file", r#"{"path":"nope.txt"}"#);
    assert_eq!(missing.code(), Some(ErrorCode::ToolFailed));
    assert!(missing.error.unwrap().message.contains("does not exist"));
}

#[test]
pub(crate) fn http_fetch() {
    let server = crate::web::WebServer::start();
    let t = TestHost::new(&[HTTP_FETCH]).config(&format!(
        "[network]\nallow = [{{ origin = \"http://127.0.0.1:*\", private = true }}]\n{}",
        crate::harness::ALLOW_ALL
    ));
    let host = t.controller();
    let args = |url: String, max: Option<u32>| {
        let mut args = json!({ "url": url });
        if let Some(max) = max {
            args["max_bytes"] = json!(max);
        }
        args.to_string()
    };
    let r = call(&host, "http_fetch", &args(server.url("/hello"), Some(5)));
    let value = r.value.unwrap_or_else(|| panic!("{:?}", r.error));
    assert_eq!(value["status"], 200);
    assert_eq!(value["text"], "hello");
    assert_eq!(value["truncated"], true);
    assert_eq!(value["content_type"], "text/plain");
    assert!(r.content.unwrap().starts_with("200 http://127.0.0.1:"));
    let r = call(
        &host,
        "http_fetch",
        &args(server.url("/redirect?to=/hello"), None),
    );
    let value = r.value.unwrap();
    assert_eq!(value["text"], crate::web::HELLO);
    assert_eq!(value["redirects"], json!([server.url("/hello")]));
    let r = call(&host, "http_fetch", &args("ftp://127.0.0.1/x".into(), None));
    assert_eq!(r.code(), Some(ErrorCode::GuardDenied), "{r:?}");
    let r = call(&host, "http_fetch", &args("not a url".into(), None));
    assert_eq!(r.code(), Some(ErrorCode::InvalidArgs), "{r:?}");
}
