//! A person's first minutes with the binary: `init` in a project folder, no
//! guessed workspace in the home folder or `/`, `mcp-config` for the
//! clients people use, errors a script can read under `--json`, shell
//! completions and man pages, and `serve --http` saying where it is.

use crate::harness::{binary, run_cli};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh HOME with a project folder in it; the binary runs with nothing
/// of the tester's environment that could point it elsewhere.
struct Person {
    home: tempfile::TempDir,
}

impl Person {
    fn new() -> Person {
        let home = tempfile::tempdir().expect("temp home");
        std::fs::create_dir_all(home.path().join("project")).expect("project");
        Person { home }
    }

    fn home(&self) -> &Path {
        self.home.path()
    }

    fn project(&self) -> PathBuf {
        self.home().join("project")
    }

    fn plugins(&self) -> PathBuf {
        self.home().join(".local/share/toolwarden/plugins")
    }

    /// `toolwarden ARGS` started in `dir`.
    fn run(&self, dir: &Path, args: &[&str]) -> (i32, String, String) {
        let mut cmd = Command::new(binary());
        cmd.env_clear()
            .env("HOME", self.home())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(dir)
            .args(args);
        run_cli(&mut cmd)
    }
}

#[test]
fn init_makes_a_project_ready_and_running_it_again_changes_nothing() {
    let person = Person::new();
    let project = person.project();
    let (code, stdout, stderr) = person.run(&project, &["init"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let config = project.join("toolwarden.toml");
    let text = std::fs::read_to_string(&config).expect("init wrote the config");
    assert!(
        stdout.contains("decision = \"ask\""),
        "the config is shown: {stdout}"
    );
    assert!(stdout.contains("Trusted"), "{stdout}");
    assert!(
        stdout.contains("toolwarden install") && stdout.contains("toolwarden call"),
        "the next commands: {stdout}"
    );
    let mode = std::fs::metadata(person.plugins())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "the plugins directory is private");

    // The config it wrote governs at once: a call runs under it without
    // `--trust-config` (no tool yet, so the call fails as unknown, not as
    // an untrusted config).
    let (code, stdout, stderr) = person.run(&project, &["call", "calc", "--json"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("UNKNOWN_TOOL"), "{stdout}{stderr}");

    let (code, stdout, stderr) = person.run(&project, &["init", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(report["wrote_config"], false);
    assert_eq!(report["trust"], "trusted");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), text);
}

#[test]
fn init_never_trusts_a_config_it_did_not_write() {
    let person = Person::new();
    let project = person.project();
    let theirs = "[[rule]]\ntools = [\"*\"]\ndecision = \"allow\"\nreason = \"someone else's\"\n";
    std::fs::write(project.join("toolwarden.toml"), theirs).unwrap();
    let (code, stdout, stderr) = person.run(&project, &["init", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(
        (&report["wrote_config"], &report["trust"]),
        (&serde_json::json!(false), &serde_json::json!("untrusted"))
    );
    assert_eq!(
        std::fs::read_to_string(project.join("toolwarden.toml")).unwrap(),
        theirs
    );
    let (code, stdout, _) = person.run(&project, &["call", "calc", "--json"]);
    assert_eq!(code, 2, "an untrusted config still stops calls: {stdout}");
    assert!(stdout.contains("CONFIG_UNTRUSTED"), "{stdout}");
}

#[test]
fn the_home_folder_and_the_root_are_never_taken_for_a_workspace() {
    let person = Person::new();
    for dir in [person.home().to_path_buf(), PathBuf::from("/")] {
        for args in [&["list"][..], &["serve"], &["init"]] {
            let (code, stdout, stderr) = person.run(&dir, args);
            assert_eq!(code, 2, "{args:?} in {}: {stdout}{stderr}", dir.display());
            assert!(
                stderr.contains("not a project folder")
                    && stderr.contains("--workspace DIR")
                    && stderr.contains("mcp-config"),
                "the message says what toolwarden governs and how to name it: {stderr}"
            );
        }
    }
    // Named, it works from anywhere.
    let project = person.project();
    let (code, _, stderr) = person.run(
        Path::new("/"),
        &["--workspace", project.to_str().unwrap(), "list"],
    );
    assert_eq!(code, 0, "{stderr}");
    // Under --json, the failure is one JSON document with its code.
    let (code, stdout, _) = person.run(person.home(), &["list", "--json"]);
    assert_eq!(code, 2);
    let error: serde_json::Value = serde_json::from_str(&stdout).expect("a JSON error");
    assert_eq!(error["error"]["code"], "NO_WORKSPACE");
    assert!(
        error["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("--workspace")
    );
}

#[test]
fn mcp_config_names_everything_a_client_started_elsewhere_needs() {
    let person = Person::new();
    let project = person.project();
    let (code, _, stderr) = person.run(&project, &["init"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) = person.run(
        Path::new("/"),
        &[
            "--workspace",
            project.to_str().unwrap(),
            "mcp-config",
            "--client",
            "claude-desktop",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    let server = &doc["mcpServers"]["toolwarden"];
    let command = PathBuf::from(server["command"].as_str().unwrap());
    assert!(command.is_absolute() && command.exists(), "{command:?}");
    let args: Vec<&str> = server["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let project = project.canonicalize().unwrap();
    assert_eq!(
        args[..3],
        ["serve", "--workspace", project.to_str().unwrap()]
    );
    assert!(args.contains(&"--trust-config"));
    assert_eq!(
        server["env"]["TOOLWARDEN_PLUGINS"].as_str(),
        Some(person.plugins().canonicalize().unwrap().to_str().unwrap())
    );

    let (code, stdout, _) = person.run(&project, &["mcp-config", "--client", "vscode", "--json"]);
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["servers"]["toolwarden"]["type"], "stdio");
    let (code, stdout, _) = person.run(&project, &["mcp-config", "--client", "codex"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("[mcp_servers.toolwarden]"), "{stdout}");
    let (code, stdout, _) = person.run(&project, &["mcp-config", "--client", "claude-code"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("claude mcp add toolwarden"), "{stdout}");
}

#[test]
fn install_locked_without_a_lock_file_is_an_error() {
    let person = Person::new();
    let project = person.project();
    let (code, stdout, stderr) = person.run(&project, &["install", "--locked"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("no lock file"), "{stderr}");
    let (code, stdout, _) = person.run(&project, &["install", "--locked", "--json"]);
    assert_eq!(code, 2);
    let error: serde_json::Value = serde_json::from_str(&stdout).expect("a JSON error");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no lock file")
    );
}

#[test]
fn completions_and_man_pages_come_from_the_same_definitions_as_help() {
    let person = Person::new();
    let (code, stdout, _) = person.run(person.home(), &["completions", "bash"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("mcp-config") && stdout.contains("approvals"));
    let man = person.home().join("man1");
    let (code, _, stderr) = person.run(person.home(), &["man", man.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let page = std::fs::read_to_string(man.join("toolwarden-init.1")).expect("a page per command");
    assert!(page.contains(".TH"), "{page}");
    assert!(man.join("toolwarden.1").exists());
}

#[test]
fn serve_http_says_where_it_listens_and_where_the_token_is() {
    use std::io::{BufRead, BufReader};
    let person = Person::new();
    let project = person.project();
    let token = person.home().join("token");
    std::fs::write(&token, "a-long-random-token").unwrap();
    let mut child = Command::new(binary())
        .env_clear()
        .env("HOME", person.home())
        .current_dir(&project)
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--token-file",
            token.to_str().unwrap(),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = String::new();
    for line in lines.by_ref().take(4) {
        said.push_str(&line.unwrap_or_default());
        said.push('\n');
    }
    let _ = child.kill();
    let _ = child.wait();
    let port = said
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|port| port.parse::<u16>().ok());
    assert!(
        port.is_some_and(|p| p != 0),
        "the bound port, not 0: {said}"
    );
    assert!(said.contains("/mcp") && said.contains("/console"), "{said}");
    assert!(said.contains(token.to_str().unwrap()), "{said}");
}

#[test]
fn a_server_that_cannot_start_does_not_wait_for_ever_on_a_silent_client() {
    let person = Person::new();
    let mut child = Command::new(binary())
        .env_clear()
        .env("HOME", person.home())
        .current_dir("/")
        .arg("serve")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve");
    // The client never writes, and keeps its end open.
    let _open = child.stdin.take();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if started.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(2),
        "it exits with the error, not hangs"
    );
}
