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
