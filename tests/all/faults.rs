//! Faults around the host: a damaged database, a full disk, an unusable
//! state directory, the plugins directory vanishing. Each gives a clear
//! error, and no approval or audit record that was committed is lost.
//! (A corrupted compile-cache entry is in `registry.rs`.)

use crate::harness::{ALLOW_ALL, TestHost, assert_still_serves, binary, call, run_cli};
use std::process::Command;
use toolwarden_tests::CALC;

const ASK_CALC: &str = "[audit]\ndurability = \"sync\"\n\n[[rule]]\ntools = [\"calc\"]\nwhen = { \"/op\" = \"pow\" }\ndecision = \"ask\"\nreason = \"powers need a look\"\n\n[[rule]]\ntools = [\"calc\"]\ndecision = \"allow\"\nreason = \"ok\"\n";

fn audit_count(t: &TestHost) -> usize {
    let (code, stdout, stderr) = run_cli(t.cli().args(["audit", "--json"]));
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str::<serde_json::Value>(&stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .len()
}

/// Some committed history: two calls and one pending approval.
fn history(t: &TestHost) -> String {
    for args in [r#"{"op":"add","a":1,"b":2}"#, r#"{"op":"mul","a":3,"b":4}"#] {
        let (code, _, stderr) = run_cli(t.cli().args(["call", "calc", args]));
        assert_eq!(code, 0, "{stderr}");
    }
    let (code, stdout, _) =
        run_cli(
            t.cli()
                .args(["call", "calc", r#"{"op":"pow","a":2,"b":10}"#, "--json"]),
        );
    assert_eq!(code, 3, "pending approval: {stdout}");
    serde_json::from_str::<serde_json::Value>(&stdout).unwrap()["approval_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_full_disk_refuses_the_call_and_keeps_what_was_committed() {
    let t = TestHost::new(&[CALC]).config(ASK_CALC);
    let approval = history(&t);
    let before = audit_count(&t);
    // No write may reach past the first KiB of any file from here: it fails
    // with EFBIG, as on a full disk (the signal that would kill us is ignored).
    let limit_kib = 1;
    let mut full = t.command("bash");
    full.arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {limit_kib}; exec \"$0\" \"$@\""
        ))
        .arg(binary())
        .args(["call", "calc", r#"{"op":"add","a":40,"b":2}"#]);
    let (code, stdout, stderr) = run_cli(&mut full);
    assert_ne!(code, 0, "the call must not succeed unrecorded: {stdout}");
    let said = format!("{stdout}{stderr}");
    assert!(
        said.contains("disk") && said.contains("hint:"),
        "a clear error: {said}"
    );
    assert!(!stdout.contains("42"), "the call did not run: {stdout}");
    // Room again: everything committed before is there and verifies.
    assert_eq!(audit_count(&t), before);
    let (code, out, _) = run_cli(t.cli().args(["audit", "verify"]));
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = run_cli(t.cli().args(["approvals", "show", &approval]));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("pending"), "{out}");
}

#[test]
fn a_damaged_database_is_a_clear_error_and_is_left_as_it_was() {
    let t = TestHost::new(&[CALC]).config(ASK_CALC);
    history(&t);
    let db = t.state.join(toolwarden::DB_FILE);
    // Lose the WAL so the damage cannot be repaired from it.
    let (code, _, _) = run_cli(t.cli().args(["audit", "verify"]));
    assert_eq!(code, 0);
    let mut bytes = std::fs::read(&db).unwrap();
    for b in bytes.iter_mut().take(100) {
        *b = 0x5a;
    }
    std::fs::write(&db, &bytes).unwrap();
    for args in [&["list"][..], &["audit"], &["approvals", "list"]] {
        let (code, _, stderr) = run_cli(t.cli().args(args));
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(
            stderr.contains(&db.display().to_string()) && stderr.contains("move it aside"),
            "names the file and what to do: {stderr}"
        );
    }
    assert_eq!(
        std::fs::read(&db).unwrap(),
        bytes,
        "nothing was overwritten"
    );
}

#[test]
fn an_unusable_state_directory_is_a_clear_error() {
    let t = TestHost::new(&[CALC]);
    let blocker = t.root.path().join("not_a_dir");
    std::fs::write(&blocker, "a file where a directory should be").unwrap();
    let (code, _, stderr) = run_cli(
        Command::new(binary())
            .env("TOOLWARDEN_PLUGINS", &t.plugins)
            .env("TOOLWARDEN_WORKSPACE", &t.workspace)
            .env("TOOLWARDEN_STATE", blocker.join("state"))
            .arg("list"),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not_a_dir"), "names the path: {stderr}");
    assert!(stderr.contains("hint:"), "{stderr}");
}

#[test]
fn the_plugins_directory_vanishing_keeps_the_loaded_tools_serving() {
    let t = TestHost::new(&[CALC]).config(ALLOW_ALL);
    let host = t.controller();
    std::fs::remove_dir_all(&t.plugins).unwrap();
    let reload = host.reload();
    assert!(
        matches!(&reload, Err(e) if e.code() == "PLUGINS_DIR"),
        "{reload:?}"
    );
    assert_eq!(host.registry().tools().count(), 1, "the old registry stays");
    assert_still_serves(&host);
    let r = call(&host, "calc", r#"{"op":"sub","a":5,"b":3}"#);
    assert_eq!(r.value, Some(serde_json::json!({ "result": 2 })));
    // Back again: the next reload picks it up as before.
    std::fs::create_dir_all(&t.plugins).unwrap();
    t.add_plugin(CALC);
    assert!(host.reload().is_ok());
    assert_still_serves(&host);
}

/// Regression for issue #17: the state directory was created 0755 and the
/// database 0644, so every local user could read the audit trail.
#[test]
fn the_state_is_readable_by_its_owner_alone() {
    use std::os::unix::fs::PermissionsExt;
    let t = TestHost::cold(&[CALC]).config(ALLOW_ALL);
    std::fs::remove_dir(&t.state).unwrap();
    let host = t.controller();
    assert_eq!(
        call(&host, "calc", r#"{"op":"add","a":1,"b":2}"#).code(),
        None
    );
    host.records().verify().unwrap();
    let mode = |path: &std::path::Path| {
        std::fs::metadata(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(&t.state), 0o700);
    assert_eq!(mode(&t.state.join("cache")), 0o700);
    let mut files = vec![
        t.state.join(toolwarden::DB_FILE),
        t.state.join(format!("{}-wal", toolwarden::DB_FILE)),
        t.state.join(toolwarden::HEAD_FILE),
        t.state.join("cache.key"),
    ];
    files.extend(
        std::fs::read_dir(t.state.join("cache"))
            .unwrap()
            .map(|e| e.unwrap().path()),
    );
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    drop(host);
    // A database an older version left readable is tightened at the next start.
    std::fs::set_permissions(
        t.state.join(toolwarden::DB_FILE),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    drop(t.controller());
    assert_eq!(mode(&t.state.join(toolwarden::DB_FILE)), 0o600);
}

#[test]
fn a_state_cache_or_plugins_directory_others_can_write_stops_the_host() {
    use std::os::unix::fs::PermissionsExt;
    let t = TestHost::new(&[CALC]).config(ALLOW_ALL);
    drop(t.controller());
    for (dir, what) in [
        (t.state.clone(), "state directory"),
        (t.state.join("cache"), "compile cache"),
        (t.plugins.clone(), "plugins directory"),
    ] {
        let before = std::fs::metadata(&dir).unwrap().permissions();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = t.start().expect_err("a shared directory");
        assert_eq!(err.code(), "UNSAFE_PERMISSIONS", "{what}: {err}");
        assert!(err.to_string().contains(what), "{err}");
        let (code, _, stderr) = run_cli(t.cli().arg("list"));
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains(&format!("chmod go-w {}", dir.display())),
            "{stderr}"
        );
        std::fs::set_permissions(&dir, before).unwrap();
    }
    assert!(t.start().is_ok());
}

#[test]
fn without_home_or_xdg_directories_the_host_asks_for_state_and_plugins() {
    let t = TestHost::new(&[CALC]);
    for (remove, flag) in [
        ("TOOLWARDEN_STATE", "--state"),
        ("TOOLWARDEN_PLUGINS", "--plugins"),
    ] {
        let (code, _, stderr) = run_cli(
            t.cli()
                .env_remove(remove)
                .env_remove("HOME")
                .env_remove("XDG_STATE_HOME")
                .env_remove("XDG_DATA_HOME")
                .arg("list"),
        );
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(flag) && stderr.contains("/tmp"), "{stderr}");
    }
    assert!(!std::path::Path::new("/tmp/.local/state/toolwarden").exists());
}
