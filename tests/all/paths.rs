//! The path step: a `format: path` argument is decided on where it leads,
//! and the plugin acts on exactly that place. Regression tests for the
//! symlink dodge of issue #17 (a `when` glob matched the path as written).

use crate::harness::{ALLOW_ALL, TestHost, assert_code, call, run_cli, runtime};
use serde_json::{Value, json};
use toolwarden::{CallRequest, ErrorCode, SandboxMode, Status};
use toolwarden_tests::{CALC, FS, HOSTILE};

const SECRET: &str = "KEY=do-not-leak";

/// Every way a path in the workspace can lead into `secrets/` through a
/// link, each naming `secrets/key.env` in the end.
const INTO_SECRETS: [&str; 6] = [
    "docs/key.env",           // a symlinked directory
    "key_link",               // a symlinked file
    "chain2",                 // a chain of links
    "src/up/secrets/key.env", // a link to `..` inside the workspace
    "abs/key.env",            // a link with an absolute target inside
    "planted/key.env",        // a link planted by an earlier call
];

fn tools_rule(decision: &str) -> String {
    format!(
        "[[rule]]\ntools = [\"read_file\", \"write_file\", \"list_dir\"]\n\
         when = {{ \"/path\" = \"secrets/**\" }}\ndecision = \"{decision}\"\n\
         reason = \"secrets stay secret\"\n"
    )
}

const WORK: &str = r#"
[[rule]]
tools = ["read_file", "write_file", "list_dir", "calc", "hostile_fs_op_rw"]
decision = "allow"
reason = "working in the workspace"
"#;

/// A workspace with `secrets/key.env` and links into it of every kind; the
/// last one planted by a plugin in an earlier workspace-write call.
fn linked(config: &str) -> TestHost {
    let t = TestHost::new(&[FS, CALC, HOSTILE])
        .config(ALLOW_ALL)
        .sandbox(SandboxMode::WorkspaceWrite);
    t.file("secrets/key.env", SECRET);
    t.file("public/readme.txt", "hello");
    t.file("src/lib.rs", "// code");
    let ws = &t.workspace;
    let link = |target: &str, at: &str| std::os::unix::fs::symlink(target, ws.join(at)).unwrap();
    link("secrets", "docs");
    link("secrets/key.env", "key_link");
    link("docs", "chain1");
    link("chain1/key.env", "chain2");
    link("..", "src/up");
    std::os::unix::fs::symlink(ws.join("secrets"), ws.join("abs")).unwrap();
    let planted = call(
        &t.controller(),
        "hostile_fs_op_rw",
        r#"{"op":"symlink","path":"/workspace/planted","to":"secrets"}"#,
    );
    assert_eq!(planted.status, Status::Ok, "{planted:#?}");
    assert!(ws.join("planted").is_symlink());
    t.config(config)
}

#[test]
fn a_deny_rule_applies_wherever_the_path_is_written_to_lead_into_its_glob() {
    let t = linked(&format!("{WORK}{}", tools_rule("deny")));
    let host = t.controller();
    for path in INTO_SECRETS {
        let r = call(&host, "read_file", &json!({ "path": path }).to_string());
        assert_code(&host, &r, ErrorCode::PolicyDenied);
        let message = r.error.unwrap().message;
        assert!(message.contains("secrets stay secret"), "{path}: {message}");
    }
    for path in ["docs/planted.txt", "planted/new.txt", "src/up/secrets/x"] {
        let args = json!({ "path": path, "content": "pwned" }).to_string();
        let r = call(&host, "write_file", &args);
        assert_code(&host, &r, ErrorCode::PolicyDenied);
    }
    let mut in_secrets: Vec<String> = std::fs::read_dir(t.workspace.join("secrets"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    in_secrets.sort();
    assert_eq!(in_secrets, ["key.env"], "nothing was planted in secrets/");
    let elsewhere = call(&host, "read_file", r#"{"path":"public/readme.txt"}"#);
    assert_eq!(elsewhere.status, Status::Ok, "{elsewhere:#?}");
}

#[test]
fn an_ask_rule_applies_wherever_the_path_is_written_to_lead_into_its_glob() {
    let t = linked(&format!("{WORK}{}", tools_rule("ask")));
    let host = t.controller();
    for path in INTO_SECRETS {
        let r = call(&host, "read_file", &json!({ "path": path }).to_string());
        assert_eq!(r.status, Status::PendingApproval, "{path}: {r:#?}");
        assert!(r.value.is_none());
    }
}

#[test]
fn an_allow_rule_applies_only_where_the_path_really_leads() {
    let allow_public = r#"
[[rule]]
tools = ["read_file"]
when = { "/path" = "public/**" }
decision = "allow"
reason = "public files"

[[rule]]
tools = ["calc"]
decision = "allow"
reason = "pure computation"
"#;
    let t = linked(allow_public);
    let ws = &t.workspace;
    std::os::unix::fs::symlink("../secrets/key.env", ws.join("public/leak")).unwrap();
    std::os::unix::fs::symlink("../docs", ws.join("public/docs")).unwrap();
    std::os::unix::fs::symlink("public", ws.join("pub")).unwrap();
    std::os::unix::fs::symlink(ws.join("public/readme.txt"), ws.join("abs_readme")).unwrap();
    let host = t.controller();
    for path in [
        "public/leak",
        "public/docs/key.env",
        "public/../secrets/key.env",
    ] {
        let r = call(&host, "read_file", &json!({ "path": path }).to_string());
        assert_code(&host, &r, ErrorCode::PolicyDenied);
    }
    // Written outside the glob, leading into it: the resolved form decides,
    // and the plugin is handed that form.
    for path in ["pub/readme.txt", "abs_readme", "src/up/public/readme.txt"] {
        let r = call(&host, "read_file", &json!({ "path": path }).to_string());
        assert_eq!(r.status, Status::Ok, "{path}: {r:#?}");
        let value = r.value.unwrap();
        assert_eq!(value["content"], "hello");
        assert_eq!(value["path"], "public/readme.txt", "{path}");
    }
}

#[test]
fn the_plugin_receives_and_the_audit_records_the_resolved_arguments() {
    let t = linked(&format!("[audit]\ndurability = \"sync\"\n{WORK}"));
    let host = t.controller();
    let rt = runtime();
    let request = CallRequest::new("read_file", r#"{"path":"docs/key.env"}"#);
    let call_id = request.call_id.to_string();
    let r = rt.block_on(host.handle(request));
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    assert_eq!(r.value.as_ref().unwrap()["path"], "secrets/key.env");
    let direct = CallRequest::new("read_file", r#"{"path":"secrets/key.env"}"#);
    let direct_id = direct.call_id.to_string();
    assert_eq!(rt.block_on(host.handle(direct)).status, Status::Ok);
    let record = |id: &str, kind: &str| {
        let filter = toolwarden::AuditFilter {
            call_id: Some(id.to_owned()),
            ..Default::default()
        };
        let records = host.records().audit(&filter).unwrap();
        let found = records.into_iter().find(|r| r.kind == kind);
        found.unwrap_or_else(|| panic!("no `{kind}` record for {id}"))
    };
    let paths = record(&call_id, "paths");
    assert_eq!(paths.data["paths"][0]["written"], "docs/key.env");
    assert_eq!(paths.data["paths"][0]["resolved"], "secrets/key.env");
    assert_eq!(
        paths.data["args_digest"],
        record(&direct_id, "call").data["args_digest"],
        "the digest is that of the arguments the plugin received"
    );
}

#[test]
fn the_hosts_own_files_are_out_of_reach_of_every_path_argument() {
    let t = linked(ALLOW_ALL);
    t.file("toolwarden.toml", ALLOW_ALL);
    std::os::unix::fs::symlink("toolwarden.toml", t.workspace.join("cfg")).unwrap();
    let host = t.controller();
    for path in [
        "toolwarden.toml",
        "./toolwarden.toml",
        "cfg",
        "src/up/toolwarden.toml",
    ] {
        let read = call(&host, "read_file", &json!({ "path": path }).to_string());
        assert_code(&host, &read, ErrorCode::GuardDenied);
        let message = read.error.unwrap().message;
        assert!(message.contains("the host's config file"), "{message}");
        let write = call(
            &host,
            "write_file",
            &json!({ "path": path, "content": "[[rule]]" }).to_string(),
        );
        assert_code(&host, &write, ErrorCode::GuardDenied);
    }
    assert_eq!(
        std::fs::read_to_string(t.workspace.join("toolwarden.toml")).unwrap(),
        ALLOW_ALL
    );
}

#[test]
fn explain_and_trace_show_both_forms_of_a_path_that_leads_elsewhere() {
    let t = linked(&format!("{WORK}{}", tools_rule("deny")));
    let (code, stdout, stderr) = run_cli(t.cli().args([
        "policy",
        "explain",
        "read_file",
        r#"{"path":"docs/key.env"}"#,
    ]));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("path `/path`: `docs/key.env` leads to `secrets/key.env`"),
        "{stdout}"
    );
    assert!(stdout.contains("decision: deny"), "{stdout}");
    let (_, stdout, stderr) = run_cli(t.cli().args([
        "call",
        "read_file",
        r#"{"path":"chain2"}"#,
        "--trace",
        "--json",
    ]));
    let result: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let step = result["trace"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == "paths")
        .expect("a paths step");
    assert_eq!(
        step["outcome"],
        "`/path`: `chain2` leads to `secrets/key.env`"
    );
    assert_eq!(result["error"]["code"], "POLICY_DENIED");
}

#[test]
fn a_call_that_reads_waits_for_a_call_that_changes_the_workspace() {
    let t = linked(WORK);
    let host = std::sync::Arc::new(t.controller());
    let rt = runtime();
    let (write, read) = rt.block_on(async {
        let writer = {
            let host = std::sync::Arc::clone(&host);
            tokio::spawn(async move {
                host.handle(CallRequest::new(
                    "hostile_fs_op_rw",
                    r#"{"op":"create","path":"/workspace/late.txt","ms":400}"#,
                ))
                .await
            })
        };
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let read = host
            .handle(CallRequest::new("list_dir", r#"{"path":"."}"#))
            .await;
        (writer.await.unwrap(), read)
    });
    assert_eq!(write.status, Status::Ok, "{write:#?}");
    assert_eq!(read.status, Status::Ok, "{read:#?}");
    let listed = read.value.unwrap().to_string();
    assert!(
        listed.contains("late.txt"),
        "the read ran while the write was under way: {listed}"
    );
}
