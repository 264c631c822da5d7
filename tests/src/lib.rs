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
