//! A `TestHost`: a fresh temp dir with a workspace, a plugins dir and a state
//! dir, a config, and helpers to run calls through the library or the CLI.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolwarden::{
    AuditFilter, CallRequest, CallResult, Config, ConfigBuilder, Controller, ErrorCode, Record,
    SandboxMode, Status,
};

/// Allows every tool: for tests that exercise something other than policy.
pub const ALLOW_ALL: &str =
    "[[rule]]\ntools = [\"*\"]\ndecision = \"allow\"\nreason = \"tests allow everything\"\n";

pub fn wasm(path: &str) -> &str {
    if let Some(error) = toolwarden_tests::BUILD_ERROR {
        panic!(
            "the test plugins were not built for wasm32-wasip2.\nhint: run `make setup` (it installs the target, or reinstalls it when rustup lists it but its files are gone)\n{error}"
        );
    }
    path
}

pub struct TestHost {
    pub root: tempfile::TempDir,
    pub workspace: PathBuf,
    pub plugins: PathBuf,
    pub state: PathBuf,
    config: String,
    sandbox: SandboxMode,
    /// The `[store]` table of a fresh database, when the tests run against
    /// PostgreSQL (see [`shared_store`]); appended to every config.
    store: Option<String>,
    /// Whether this host takes compiled plugins from the tests' pool and
    /// gives back what it compiled (see `compiled.rs`).
    pooled: bool,
}

impl Drop for TestHost {
    fn drop(&mut self) {
        if self.pooled {
            crate::compiled::harvest(&self.state);
        }
    }
}

impl TestHost {
    /// A host with the given plugin files and an allow-everything policy,
    /// whose state starts with the plugins other tests compiled.
    pub fn new(plugins: &[&str]) -> TestHost {
        let mut host = TestHost::cold(plugins);
        crate::compiled::seed(&host.state);
        host.pooled = true;
        host
    }

    /// As [`TestHost::new`], with an empty compile cache of its own: for
    /// the tests of compiling and of the cache.
    pub fn cold(plugins: &[&str]) -> TestHost {
        let root = tempfile::tempdir().expect("temp dir");
        let workspace = root.path().join("workspace");
        let plugins_dir = root.path().join("plugins");
        let state = root.path().join("state");
        for dir in [&workspace, &plugins_dir, &state] {
            std::fs::create_dir_all(dir).expect("create test dir");
        }
        let store = shared_store(root.path());
        let host = TestHost {
            workspace,
            plugins: plugins_dir,
            state,
            root,
            config: String::new(),
            sandbox: SandboxMode::ReadOnly,
            store,
            pooled: false,
        }
        .config(ALLOW_ALL);
        for plugin in plugins {
            host.add_plugin(plugin);
        }
        host
    }

    pub fn add_plugin(&self, path: &str) {
        let path = Path::new(wasm(path));
        let name = path.file_name().expect("plugin file name");
        std::fs::copy(path, self.plugins.join(name)).expect("copy plugin");
    }

    /// Replaces the config file text (policy and limits).
    pub fn config(mut self, toml: &str) -> TestHost {
        self.config = toml.to_owned();
        if let Some(store) = &self.store {
            self.config.push_str(store);
        }
        self
    }

    /// Whether this host keeps its state in PostgreSQL (see [`shared_store`]).
    /// Tests that read or edit `toolwarden.db` itself check only SQLite.
    pub fn is_shared(&self) -> bool {
        self.store.is_some()
    }

    pub fn sandbox(mut self, mode: SandboxMode) -> TestHost {
        self.sandbox = mode;
        self
    }

    pub fn build_config(&self) -> Result<Config, toolwarden::Error> {
        ConfigBuilder::new(&self.workspace)
            .plugins_dir(&self.plugins)
            .state_dir(&self.state)
            .config_text(&self.config)
            .sandbox(self.sandbox)
            .build()
    }

    pub fn start(&self) -> Result<Arc<Controller>, toolwarden::Error> {
        Controller::new(self.build_config()?)
    }

    pub fn controller(&self) -> Arc<Controller> {
        self.start()
            .unwrap_or_else(|e| panic!("host did not start: {e}\nhint: {}", e.hint()))
    }

    /// Writes a file into the workspace.
    pub fn file(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.workspace.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&path, content).expect("write workspace file");
        path
    }

    /// The `toolwarden` binary with this host's directories in its environment.
    pub fn cli(&self) -> Command {
        self.command(binary())
    }

    /// `program` with this host's directories in its environment (and its
    /// config written where the CLI looks for it).
    ///
    /// The config is trusted the way its author would: on first use with
    /// `--trust-config` (as an MCP client configuration would), and with
    /// `policy trust` after the test changed it.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let config = self.workspace.join("toolwarden.toml");
        // Written only when it differs: rewriting it while another of the
        // test's processes reads it would show that one a torn file.
        let old = std::fs::read_to_string(&config).ok();
        if old.as_deref() != Some(self.config.as_str()) {
            std::fs::write(&config, &self.config).expect("write config");
        }
        if old.is_some_and(|old| old != self.config) {
            let (code, _, stderr) = run_cli(self.environment(binary()).args(["policy", "trust"]));
            assert_eq!(code, 0, "policy trust: {stderr}");
        }
        let mut cmd = self.environment(program);
        cmd.env("TOOLWARDEN_TRUST_CONFIG", "1");
        cmd
    }

    fn environment(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("TOOLWARDEN_PLUGINS", &self.plugins)
            .env("TOOLWARDEN_WORKSPACE", &self.workspace)
            .env("TOOLWARDEN_STATE", &self.state)
            .env("TOOLWARDEN_SANDBOX", self.sandbox.as_str())
            .env_remove("TOOLWARDEN_CONFIG")
            .env_remove("TOOLWARDEN_TRUST_CONFIG")
            .env_remove("TOOLWARDEN_LOG");
        cmd
    }
}

/// With `TOOLWARDEN_TEST_POSTGRES` set (`HOST:PORT` of a server whose
/// `toolwarden` login has the password in `TOOLWARDEN_TEST_POSTGRES_PASSWORD`,
/// as `tests/mcp/postgres.py` starts one), a fresh database of it for a
/// host in `root`, as the `[store]` table naming it. `make test` runs the
/// store-facing tests this way too, so they hold for both backends.
fn shared_store(root: &Path) -> Option<String> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let server = std::env::var("TOOLWARDEN_TEST_POSTGRES").ok()?;
    let password = std::env::var("TOOLWARDEN_TEST_POSTGRES_PASSWORD").unwrap_or_default();
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let database = format!("t{}_{n}", std::process::id());
    if let Err(e) = toolwarden_tests::psql(
        &server,
        &password,
        "postgres",
        &format!("CREATE DATABASE {database}"),
    ) {
        panic!("creating the test database: {e}");
    }
    let password_file = root.join("pg-password");
    std::fs::write(&password_file, format!("{password}\n")).expect("write the password file");
    Some(format!(
        "\n[store]\nurl = \"postgres://toolwarden@{server}/{database}\"\npassword_file = \"{}\"\n",
        password_file.display()
    ))
}

/// The `toolwarden` binary of this build (`target/<profile>/toolwarden`).
pub fn binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    let bin = dir.join("toolwarden");
    assert!(
        bin.exists(),
        "`{}` is missing.\nhint: build it first with `make test-build` (`make test` does)",
        bin.display()
    );
    static CHECKED: std::sync::Once = std::sync::Once::new();
    CHECKED.call_once(|| refuse_stale(&bin));
    bin
}

/// `cargo test` rebuilds the library the tests link, not the CLI they run:
/// a CLI older than the host's sources would let a CLI test pass on code
/// that is no longer there.
fn refuse_stale(bin: &Path) {
    let built = std::fs::metadata(bin).and_then(|m| m.modified());
    let Some(repo) = Path::new(env!("CARGO_MANIFEST_DIR")).parent() else {
        return;
    };
    // What the binary is built from: each host crate's sources, templates
    // and manifest (their own tests are not).
    let crates = std::fs::read_dir(repo.join("host"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path());
    let newest = crates
        .flat_map(|dir| ["src", "templates", "Cargo.toml"].map(|part| dir.join(part)))
        .filter_map(|part| newest_file(&part))
        .max();
    let (Ok(built), Some((newest, changed))) = (built, newest) else {
        return;
    };
    assert!(
        newest <= built,
        "`{}` is older than `{}`: the CLI tests would run old code.\nhint: rebuild it with `make test-build` (`make test` does)",
        bin.display(),
        changed.display()
    );
}

/// The most recently modified file at or under `dir`, and when.
fn newest_file(dir: &Path) -> Option<(std::time::SystemTime, PathBuf)> {
    if let Ok(meta) = std::fs::metadata(dir)
        && meta.is_file()
    {
        return meta.modified().ok().map(|t| (t, dir.to_owned()));
    }
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                pending.push(path);
            } else if let Ok(modified) = meta.modified()
                && newest.as_ref().is_none_or(|(t, _)| modified > *t)
            {
                newest = Some((modified, path));
            }
        }
    }
    newest
}

pub fn run_cli(cmd: &mut Command) -> (i32, String, String) {
    run_cli_with_stdin(cmd, b"")
}

/// Runs `cmd` with `input` on its stdin: (exit code, stdout, stderr).
pub fn run_cli_with_stdin(cmd: &mut Command, input: &[u8]) -> (i32, String, String) {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run toolwarden");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input)
        .expect("write stdin");
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("wait for toolwarden");
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Runs one call to the end.
pub fn call(host: &Controller, tool: &str, args: &str) -> CallResult {
    runtime().block_on(host.handle(CallRequest::new(tool, args)))
}

/// Asserts the call ended with `code`, and that the host still serves an
/// ordinary call afterwards.
pub fn assert_code(host: &Controller, result: &CallResult, code: ErrorCode) {
    assert_eq!(result.code(), Some(code), "unexpected result: {result:#?}");
    assert!(
        result.value.is_none() && result.content.is_none(),
        "a failed call carries no value: {result:#?}"
    );
    assert_still_serves(host);
}

/// An ordinary call must succeed: hostile calls leave no trace.
pub fn assert_still_serves(host: &Controller) {
    if host.registry().get("calc").is_none() {
        return;
    }
    let ok = call(host, "calc", r#"{"op":"mul","a":6,"b":7}"#);
    assert_eq!(ok.status, Status::Ok, "the host stopped serving: {ok:#?}");
    assert_eq!(ok.value, Some(serde_json::json!({"result": 42})));
}

/// Runs `toolwarden ARGS` through `script` (util-linux), the command with
/// the environment it should have, on a pseudo-terminal, typing `answer`
/// at the prompt: (exit code, everything the terminal showed). The
/// terminal is `TERM=dumb` unless `script` names another.
pub fn on_a_terminal(mut script: Command, args: &str, answer: &str) -> (i32, String) {
    use std::io::Write;
    let command = format!("{} {args}", binary().display());
    if !script.get_envs().any(|(key, _)| key == "TERM") {
        script.env("TERM", "dumb");
    }
    let mut child = script
        .args(["-qec", &command, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux `script` (Debian package bsdutils)");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(answer.as_bytes())
        .expect("type the answer");
    let out = child.wait_with_output().expect("wait for script");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).replace('\r', ""),
    )
}

/// The audit records of `call_id` and of the calls under it.
pub fn audit(host: &Controller, call_id: &str) -> Vec<Record> {
    host.records()
        .audit(&AuditFilter {
            call_id: Some(call_id.to_owned()),
            ..AuditFilter::default()
        })
        .unwrap()
}

/// The outcome record of `call_id`, once the audit writer has put it on
/// disk (it writes after the result is returned).
pub fn outcome_of(host: &Controller, call_id: &str) -> Record {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(r) = audit(host, call_id)
            .into_iter()
            .find(|r| r.kind == "outcome" && r.call_id == call_id)
        {
            return r;
        }
        assert!(Instant::now() < until, "{call_id} never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The audit records under the tool column `tool` (a prompt's or a
/// resource's, `prompt:NAME`, `resource:URI`), once one of `kind` is among
/// them (the writer commits after the answer).
pub fn records_until(host: &Controller, tool: &str, kind: &str) -> Vec<Record> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let found = host
            .records()
            .audit(&AuditFilter {
                tool: Some(tool.to_owned()),
                ..AuditFilter::default()
            })
            .unwrap();
        if found.iter().any(|r| r.kind == kind) {
            return found;
        }
        assert!(
            Instant::now() < until,
            "no `{kind}` record for {tool}: {found:#?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A started host with `plugins` and `config`, and its directories.
pub fn started(plugins: &[&str], config: &str) -> (TestHost, Arc<Controller>) {
    let t = TestHost::new(plugins).config(config);
    let host = t.controller();
    (t, host)
}
