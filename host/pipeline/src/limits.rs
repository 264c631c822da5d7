//! Resource limits applied to every plugin call and to what a plugin may
//! declare: the `[limits]` section, its defaults and its bounds. A plain
//! value read by the engine, the registry and the sandbox; imports nothing
//! but [`crate::settings`].

use crate::settings::{SettingError, bounded, bounded_kb};
use serde::Deserialize;
use std::time::Duration;

/// Wall-clock budget of one call, unless the tool hints a shorter one.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// CPU budget of one call, in wasmtime fuel units (about one per wasm
/// instruction). Bounds CPU even when the clock is generous; does not bound
/// time spent blocked in host calls (the timeout does).
pub const DEFAULT_FUEL: u64 = 10_000_000_000;
/// Linear memory one call may grow to. Rust guests need a few MiB.
pub const DEFAULT_MEMORY_MB: u64 = 64;
/// Largest output (value plus text) a call may return.
pub const DEFAULT_MAX_OUTPUT_KB: u64 = 1024;

/// Component instances alive at once: calls in flight (beyond it, calls
/// wait for a free instance). Sizes the pooling allocator, which reserves
/// address space (not memory) for each: 2 x (memory_mb + guard).
pub const DEFAULT_MAX_INSTANCES: u64 = 256;

/// Tools one plugin may declare. The registry, `tools/list` and every
/// schema export grow with it; no real plugin comes near.
pub const DEFAULT_MAX_TOOLS_PER_PLUGIN: u64 = 128;
/// Largest title or description a tool may declare: models read every
/// description on every turn.
pub const DEFAULT_MAX_DESCRIPTION_KB: u64 = 8;
/// Largest input or output schema text a tool may declare, checked before
/// it is parsed.
pub const DEFAULT_MAX_SCHEMA_KB: u64 = 256;

/// How long past the longest a call can run something it holds (a keyed
/// call's claim, a budget unit in a shared store) is still honoured:
/// generous, because waiting for a free sandbox (`max_instances`) does not
/// count against a call's deadline, and a hold that lapsed while its call
/// still waited would let the call's effect happen twice.
const HOLD_SLACK: Duration = Duration::from_secs(10 * 60);

/// Upper bounds on the settings, so a typo cannot disable a limit.
const MAX_TIMEOUT_MS: u64 = 600_000;
const MAX_MEMORY_MB: u64 = 4096;
const MAX_OUTPUT_KB: u64 = 64 * 1024;
const MAX_INSTANCES: u64 = 10_000;
const MAX_TOOLS_PER_PLUGIN: u64 = 10_000;
const MAX_DESCRIPTION_KB: u64 = 1024;
const MAX_SCHEMA_KB: u64 = 16 * 1024;

/// Per-call limits, from the `[limits]` table of the config file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    pub fuel: u64,
    pub memory_bytes: u64,
    pub max_output_bytes: usize,
    pub max_instances: u32,
    /// What one plugin may declare (checked when it loads).
    pub max_tools_per_plugin: usize,
    pub max_description_bytes: usize,
    pub max_schema_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            fuel: DEFAULT_FUEL,
            memory_bytes: DEFAULT_MEMORY_MB << 20,
            max_output_bytes: (DEFAULT_MAX_OUTPUT_KB << 10) as usize,
            max_instances: DEFAULT_MAX_INSTANCES as u32,
            max_tools_per_plugin: DEFAULT_MAX_TOOLS_PER_PLUGIN as usize,
            max_description_bytes: (DEFAULT_MAX_DESCRIPTION_KB << 10) as usize,
            max_schema_bytes: (DEFAULT_MAX_SCHEMA_KB << 10) as usize,
        }
    }
}

impl Limits {
    /// The deadline of a call to a tool that hints `hint_ms`: the hint, capped
    /// by the configured limit. The hint is host metadata, never seen by the
    /// model.
    pub fn timeout_for(&self, hint_ms: Option<u32>) -> Duration {
        match hint_ms {
            Some(ms) => self
                .timeout
                .min(Duration::from_millis(u64::from(ms).max(1))),
            None => self.timeout,
        }
    }

    /// How long a call may hold a claim or a reservation: past it, the call
    /// cannot still be running (its process died) and the hold lapses.
    pub fn longest_hold(&self) -> Duration {
        self.timeout + HOLD_SLACK
    }
}

/// The `[limits]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    timeout_ms: Option<u64>,
    fuel: Option<u64>,
    memory_mb: Option<u64>,
    max_output_kb: Option<u64>,
    max_instances: Option<u64>,
    max_tools_per_plugin: Option<u64>,
    max_description_kb: Option<u64>,
    max_schema_kb: Option<u64>,
}

impl LimitsSection {
    pub const KEYS: &str = "timeout_ms, fuel, memory_mb, max_output_kb, max_instances, \
        max_tools_per_plugin, max_description_kb, max_schema_kb";

    pub fn resolve(self) -> Result<Limits, SettingError> {
        let d = Limits::default();
        let n = |key, value, default, max| bounded("limits", key, value, default, max);
        let kb = |key, value, default, max| bounded_kb("limits", key, value, default, max);
        Ok(Limits {
            timeout: Duration::from_millis(n(
                "timeout_ms",
                self.timeout_ms,
                d.timeout.as_millis() as u64,
                MAX_TIMEOUT_MS,
            )?),
            fuel: n("fuel", self.fuel, d.fuel, u64::MAX)?,
            memory_bytes: n(
                "memory_mb",
                self.memory_mb,
                d.memory_bytes >> 20,
                MAX_MEMORY_MB,
            )? << 20,
            max_output_bytes: kb(
                "max_output_kb",
                self.max_output_kb,
                d.max_output_bytes,
                MAX_OUTPUT_KB,
            )?,
            max_instances: n(
                "max_instances",
                self.max_instances,
                u64::from(d.max_instances),
                MAX_INSTANCES,
            )? as u32,
            max_tools_per_plugin: n(
                "max_tools_per_plugin",
                self.max_tools_per_plugin,
                d.max_tools_per_plugin as u64,
                MAX_TOOLS_PER_PLUGIN,
            )? as usize,
            max_description_bytes: kb(
                "max_description_kb",
                self.max_description_kb,
                d.max_description_bytes,
                MAX_DESCRIPTION_KB,
            )?,
            max_schema_bytes: kb(
                "max_schema_kb",
                self.max_schema_kb,
                d.max_schema_bytes,
                MAX_SCHEMA_KB,
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_bounded() {
        let l = Limits::default();
        assert_eq!(l.timeout, Duration::from_secs(10));
        assert_eq!(l.memory_bytes, 64 << 20);
        assert_eq!(l.max_output_bytes, 1 << 20);
        assert!(l.fuel > 0);
    }

    #[test]
    fn tool_hint_can_only_shorten_the_deadline() {
        let l = Limits::default();
        assert_eq!(l.timeout_for(Some(500)), Duration::from_millis(500));
        assert_eq!(l.timeout_for(Some(3_600_000)), l.timeout);
        assert_eq!(l.timeout_for(None), l.timeout);
    }
}
