//! The sandbox grants exactly the filesystem access the policy computed, and
//! nothing a plugin does reaches outside it.

use crate::harness::{TestHost, assert_code, assert_still_serves, call};
use toolwarden::{ErrorCode, SandboxMode, Status};
use toolwarden_tests::{CALC, FS, HOSTILE};

/// A file beside the workspace that no call may read or change.
fn plant_secret(t: &TestHost) -> std::path::PathBuf {
    let secret = t.root.path().join("secret.txt");
    std::fs::write(&secret, "top secret").unwrap();
    secret
}

#[test]
fn read_works_in_read_only_mode() {
    let t = TestHost::new(&[FS, CALC]);
    t.file("hello.txt", "hello");
    let host = t.controller();
    let r = call(&host, "read_file", r#"{"path":"hello.txt"}"#);
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    assert_eq!(r.value.unwrap()["content"], "hello");
}

#[test]
fn a_write_tool_is_refused_by_the_guard_in_a_read_only_session() {
    let t = TestHost::new(&[FS, CALC]);
    t.file("keep.txt", "original");
    let host = t.controller();
    let r = call(
        &host,
        "write_file",
        r#"{"path":"keep.txt","content":"changed"}"#,
    );
    assert!(
        r.error
            .as_ref()
            .unwrap()
            .message
            .contains("--sandbox workspace-write"),
        "{r:#?}"
    );
    assert_eq!(r.status, Status::Denied);
    assert_code(&host, &r, ErrorCode::GuardDenied);
    assert_eq!(
        std::fs::read_to_string(t.workspace.join("keep.txt")).unwrap(),
        "original"
    );
}

#[test]
fn write_is_refused_by_the_sandbox_in_read_only_mode() {
    // `hostile_sneaky_write` declares read-only access, so policy and guards
    // let it through; the read-only preopen is what refuses the write.
    for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
        let t = TestHost::new(&[CALC, HOSTILE]).sandbox(mode);
        t.file("keep.txt", "original");
        let host = t.controller();
        for path in ["/workspace/keep.txt", "/workspace/pwned"] {
            let args = serde_json::json!({ "path": path }).to_string();
            let r = call(&host, "hostile_sneaky_write", &args);
            assert!(
                r.error.as_ref().unwrap().message.contains("not permitted"),
                "{r:#?}"
            );
            assert_code(&host, &r, ErrorCode::ToolFailed);
        }
        assert_eq!(
            std::fs::read_to_string(t.workspace.join("keep.txt")).unwrap(),
            "original"
        );
        assert!(!t.workspace.join("pwned").exists());
    }
}

#[test]
fn write_works_in_workspace_write_mode() {
    let t = TestHost::new(&[FS]).sandbox(SandboxMode::WorkspaceWrite);
    let host = t.controller();
    let r = call(
        &host,
        "write_file",
        r#"{"path":"made.txt","content":"made"}"#,
    );
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    assert_eq!(
        std::fs::read_to_string(t.workspace.join("made.txt")).unwrap(),
        "made"
    );
}

#[test]
fn traversal_absolute_paths_and_symlinks_do_not_reach_outside() {
    let t = TestHost::new(&[FS, CALC, HOSTILE]).sandbox(SandboxMode::WorkspaceWrite);
    let secret = plant_secret(&t);
    std::os::unix::fs::symlink(&secret, t.workspace.join("link_file")).unwrap();
    std::os::unix::fs::symlink(t.root.path(), t.workspace.join("link_dir")).unwrap();
    std::os::unix::fs::symlink("../secret.txt", t.workspace.join("relative_link")).unwrap();
    let host = t.controller();
    let secret_path = secret.display().to_string();
    // The fs tools mark `path` as a workspace path, so the path guard refuses
    // these before the plugin runs; the hostile tools read and write raw guest
    // paths, so only the sandbox stands in their way.
    let fails = |tool: &str, extra: serde_json::Value, paths: &[&str]| {
        let code = if tool.starts_with("hostile_") {
            ErrorCode::ToolFailed
        } else {
            ErrorCode::GuardDenied
        };
        for path in paths {
            let mut args = extra.clone();
            args["path"] = serde_json::json!(path);
            let r = call(&host, tool, &args.to_string());
            assert_code(&host, &r, code);
        }
    };
    let none = serde_json::json!({});
    fails(
        "read_file",
        none.clone(),
        &[
            "../secret.txt",
            "../../secret.txt",
            &secret_path,
            "link_file",
            "link_dir/secret.txt",
            "relative_link",
            "/etc/passwd",
        ],
    );
    fails(
        "hostile_read_raw",
        none.clone(),
        &[
            "/workspace/../secret.txt",
            &secret_path,
            "/etc/passwd",
            "/workspace/link_file",
            "/workspace/link_dir/secret.txt",
        ],
    );
    fails(
        "hostile_write_raw",
        none,
        &[
            "/workspace/../escaped.txt",
            "/workspace/link_file",
            "/workspace/link_dir/escaped.txt",
            "/tmp/escaped.txt",
            "/escaped.txt",
        ],
    );
    fails(
        "write_file",
        serde_json::json!({ "content": "pwned" }),
        &["../escaped.txt", "link_file", "link_dir/escaped.txt"],
    );
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "top secret");
    assert!(!t.root.path().join("escaped.txt").exists());
    assert!(!std::path::Path::new("/tmp/escaped.txt").exists());
    // Inside the workspace, the same raw tool works: the refusals above are
    // about where, not about the tool.
    let ok = call(
        &host,
        "hostile_write_raw",
        r#"{"path":"/workspace/inside.txt"}"#,
    );
    assert_eq!(ok.status, Status::Ok, "{ok:#?}");
    assert_still_serves(&host);
}

#[test]
fn a_tool_without_filesystem_need_sees_no_filesystem() {
    let t = TestHost::new(&[CALC, HOSTILE]);
    t.file("visible.txt", "x");
    let host = t.controller();
    // `hostile_read_raw` declares read-only, so it sees the file...
    let r = call(
        &host,
        "hostile_read_raw",
        r#"{"path":"/workspace/visible.txt"}"#,
    );
    assert_eq!(r.status, Status::Ok, "{r:#?}");
    // ...while a pure tool gets no preopen at all (`ctx.workspace` is none),
    // which `fs` reports as an error instead of guessing a path.
    assert_eq!(
        call(&host, "calc", r#"{"op":"add","a":1,"b":1}"#).status,
        Status::Ok
    );
}
