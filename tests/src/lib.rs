//! Paths of the plugins and fixtures the build script compiled to
//! `wasm32-wasip2`. The tests themselves live in `all/`.

include!(concat!(env!("OUT_DIR"), "/plugins.rs"));
include!("../outer_build.rs");

/// This process's resident set size in KiB (Linux), 0 where unknown: for
/// the soak test and the benchmark's memory figures.
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Writes `n` distinct copies of the `numbered` fixture into `dir`, each
/// serving one tool (`numbered_tool_00000`, ...): plugins no cache has seen,
/// for the startup figures and tests.
pub fn numbered_plugins(dir: &std::path::Path, n: usize) {
    let template = std::fs::read(NUMBERED).expect("numbered fixture");
    let slot = b"numbered_tool_00000";
    let at = template
        .windows(slot.len())
        .position(|w| w == slot)
        .expect("the name slot is in the component");
    for i in 0..n {
        let mut copy = template.clone();
        copy[at..at + slot.len()].copy_from_slice(format!("numbered_tool_{i:05}").as_bytes());
        std::fs::write(dir.join(format!("numbered_{i:05}.wasm")), copy).expect("write plugin");
    }
}

/// Runs `sql` with `psql` as the `toolwarden` login of the PostgreSQL at
/// `server` (`HOST:PORT`, as `tests/mcp/postgres.py` names it) in
/// `database`: its output, or `psql`'s complaint.
pub fn psql(server: &str, password: &str, database: &str, sql: &str) -> Result<String, String> {
    let (address, port) = server
        .rsplit_once(':')
        .ok_or_else(|| format!("`{server}` is not HOST:PORT"))?;
    let bin = std::env::var("PG_BIN").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".into());
    let out = std::process::Command::new(std::path::Path::new(&bin).join("psql"))
        .args([
            "-h",
            address,
            "-p",
            port,
            "-U",
            "toolwarden",
            "-d",
            database,
            "-Atqc",
            sql,
        ])
        .env("PGPASSWORD", password)
        .output()
        .map_err(|e| format!("cannot run psql: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}
