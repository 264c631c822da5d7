//! Names the host writes or prints cannot forge what it prints (issue #42,
//! part 5): a plugin file, an install name, a lock entry, a session or a
//! profile with a newline or a terminal escape is refused where it comes
//! in, and shown escaped (one line) wherever it is printed anyway.

use crate::harness::{TestHost, run_cli};
use toolwarden_tests::CALC;

/// A name that would print a row of its own, and a terminal escape.
const FORGED: &str =
    "ok.wasm\ncalc.wasm  oci://trusted/calc:1.0  sha256:00  signed by RWQtrusted\x1b[2K";

#[test]
fn install_refuses_a_name_or_source_with_control_characters() {
    let t = TestHost::new(&[]);
    for (args, what) in [
        (vec!["install", CALC, "--name", FORGED], "name"),
        (vec!["install", "/tmp/x\n.wasm"], "source"),
    ] {
        let (code, out, err) = run_cli(t.cli().args(&args));
        assert_eq!(code, 2, "{what}: {out}{err}");
        assert!(
            err.contains("\\u{000a}"),
            "{what}: the name is shown escaped: {err}"
        );
        assert!(!err.contains('\x1b'), "{err}");
    }
    assert_eq!(
        std::fs::read_dir(&t.plugins).unwrap().count(),
        0,
        "nothing installed"
    );
    let (code, out, _) = run_cli(t.cli().args(["plugins", "list"]));
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 1, "{out}");
}

#[test]
fn a_lock_file_edited_by_hand_lists_one_row_per_plugin() {
    let t = TestHost::new(&[]);
    let entry = toml_entry(FORGED);
    std::fs::write(t.plugins.join("plugins.lock"), entry).unwrap();
    let (code, out, err) = run_cli(t.cli().args(["plugins", "list"]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 1, "one plugin, one row: {out}");
    assert!(
        out.contains("\\u{000a}") && out.contains("\\u{001b}"),
        "{out}"
    );
    assert!(!out.contains('\x1b'));
}

fn toml_entry(file: &str) -> String {
    format!(
        "[[plugin]]\nfile = {file:?}\nsource = \"/tmp/calc.wasm\"\nsha256 = \"00\"\ninstalled = \"2026-12-04 00:00:00Z\"\n"
    )
    .replace("\\u{1b}", "\\u001b")
}

#[test]
fn a_plugin_file_whose_name_holds_a_newline_does_not_load_and_is_shown_escaped() {
    let t = TestHost::new(&[CALC]);
    std::fs::copy(
        t.plugins.join("calc.wasm"),
        t.plugins.join("evil\nrow.wasm"),
    )
    .unwrap();
    std::fs::remove_file(t.plugins.join("calc.wasm")).unwrap();
    let (code, out, err) = run_cli(t.cli().args(["list"]));
    assert!(!out.contains("calc"), "the plugin did not load: {out}");
    assert!(
        err.contains("evil\\u{000a}row.wasm") && err.contains("control characters"),
        "{code} {err}"
    );
    assert!(!err.lines().any(|l| l.starts_with("row.wasm")), "{err}");
}

#[test]
fn a_session_name_with_control_characters_is_refused_at_the_cli() {
    let t = TestHost::new(&[CALC]);
    let in_session = |session: &str| {
        run_cli(t.cli().args([
            "call",
            "calc",
            r#"{"op":"add","a":1,"b":2}"#,
            "--session",
            session,
        ]))
    };
    let (code, out, err) = in_session("s1\nforged");
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("session name"), "{err}");
    let (code, _, err) = in_session("agent-7:review.2");
    assert_eq!(code, 0, "{err}");
}
