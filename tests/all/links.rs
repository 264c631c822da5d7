//! A symlink a plugin makes in the workspace leads somewhere inside it, so
//! it cannot trap a person or another program that opens it later (issue
//! #17, item 7). Making one, moving one (alone or inside a directory) and
//! hard-linking one are each checked where the link would stand.

use crate::harness::{ALLOW_ALL, TestHost, call};
use serde_json::json;
use std::path::Path;
use toolwarden::{CallResult, SandboxMode, Status};
use toolwarden_tests::HOSTILE;

fn host() -> TestHost {
    let t = TestHost::new(&[HOSTILE])
        .config(ALLOW_ALL)
        .sandbox(SandboxMode::WorkspaceWrite);
    t.file("secrets/key.env", "KEY=x");
    t.file("src/lib.rs", "// code");
    // A person's own link, inside: `src/up` is the workspace itself.
    std::os::unix::fs::symlink("..", t.workspace.join("src/up")).unwrap();
    t
}

fn fs_op(t: &TestHost, op: &str, path: &str, to: &str) -> CallResult {
    let args = json!({ "op": op, "path": format!("/workspace/{path}"), "to": to });
    call(&t.controller(), "hostile_fs_op_rw", &args.to_string())
}

fn is_link(t: &TestHost, at: &str) -> bool {
    Path::new(&t.workspace.join(at)).is_symlink()
}

#[test]
fn a_symlink_that_would_lead_out_is_refused_when_it_is_made() {
    let t = host();
    for (at, target) in [
        ("out_rel", "../outside.txt"),
        ("out_abs", "/etc/passwd"),
        ("out_guest_abs", "/workspace/secrets"),
        ("src/out_deep", "../../x"),
        ("out_through_link", "src/up/.."),
        ("out_lexical", "src/../../x"),
        ("src/../out_placed", "../x"),
        ("src/up/out_via_parent", "../x"),
    ] {
        let r = fs_op(&t, "symlink", at, target);
        assert_ne!(r.status, Status::Ok, "{at} -> {target}: {r:#?}");
        let name = Path::new(at).file_name().unwrap().to_str().unwrap();
        assert!(
            !is_link(&t, name) && !is_link(&t, &format!("src/{name}")),
            "{at} was made"
        );
    }
    for (at, target) in [
        ("in_file", "secrets/key.env"),
        ("src/in_up", "../secrets"),
        ("src/in_through_link", "up/secrets"),
        ("in_dangling", "not/yet/there"),
    ] {
        let r = fs_op(&t, "symlink", at, target);
        assert_eq!(r.status, Status::Ok, "{at} -> {target}: {r:#?}");
        assert!(is_link(&t, at), "{at}");
    }
}

#[test]
fn moving_or_hard_linking_a_symlink_to_where_it_leads_out_is_refused() {
    let t = host();
    let made = fs_op(&t, "symlink", "src/rel", "../secrets");
    assert_eq!(made.status, Status::Ok, "{made:#?}");
    // At the top, `../secrets` is outside.
    let moved = fs_op(&t, "rename", "src/rel", "/workspace/rel");
    assert_ne!(moved.status, Status::Ok, "{moved:#?}");
    assert!(is_link(&t, "src/rel") && !is_link(&t, "rel"));
    let hard = fs_op(&t, "hard_link", "src/rel", "/workspace/hard");
    assert_ne!(hard.status, Status::Ok, "{hard:#?}");
    assert!(!is_link(&t, "hard"));
    // The same depth elsewhere keeps it inside.
    t.file("lib/keep.txt", "x");
    let sideways = fs_op(&t, "rename", "src/rel", "/workspace/lib/rel");
    assert_eq!(sideways.status, Status::Ok, "{sideways:#?}");
    assert!(is_link(&t, "lib/rel"));
    let hard_sideways = fs_op(&t, "hard_link", "lib/rel", "/workspace/src/hard");
    assert_eq!(hard_sideways.status, Status::Ok, "{hard_sideways:#?}");
}

#[test]
fn moving_a_directory_whose_links_would_lead_out_is_refused_and_undone() {
    let t = host();
    t.file("deep/d/notes.txt", "keep me");
    for (at, target) in [("deep/d/sub", ".."), ("deep/d/via", "sub/..")] {
        let r = fs_op(&t, "symlink", at, target);
        assert_eq!(r.status, Status::Ok, "{at} -> {target}: {r:#?}");
    }
    // At the top, `via` leads through `sub` (the top) to its parent: out,
    // though each link on its own looks harmless.
    let moved = fs_op(&t, "rename", "deep/d", "/workspace/d");
    assert_ne!(moved.status, Status::Ok, "{moved:#?}");
    assert!(!t.workspace.join("d").exists(), "the move was undone");
    let notes = std::fs::read_to_string(t.workspace.join("deep/d/notes.txt")).unwrap();
    assert_eq!(notes, "keep me");
    assert!(is_link(&t, "deep/d/via"));
    // Onto an empty directory (which a move replaces) it could not be
    // undone, so it is refused before it happens.
    std::fs::create_dir_all(t.workspace.join("empty")).unwrap();
    let over = fs_op(&t, "rename", "deep/d", "/workspace/empty");
    assert_ne!(over.status, Status::Ok, "{over:#?}");
    assert!(t.workspace.join("empty").is_dir() && is_link(&t, "deep/d/via"));
    // A move that keeps every link inside goes through.
    let fine = fs_op(&t, "rename", "deep/d", "/workspace/deep/e");
    assert_eq!(fine.status, Status::Ok, "{fine:#?}");
    assert!(is_link(&t, "deep/e/via"));
}
