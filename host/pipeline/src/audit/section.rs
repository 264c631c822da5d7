//! The `[audit]` section: how durably records are committed, and what is
//! redacted from them.

use super::{DEFAULT_REDACT_KEYS, Durability, Retention, cut};
use crate::settings::{SettingError, bounded};
use serde::Deserialize;
use std::time::Duration;

/// How long a batch fills by default: one commit then serves every call of
/// those milliseconds, and a host that crashes loses at most that much.
const DEFAULT_BATCH_WINDOW: Duration = Duration::from_millis(2);
/// A second: past it a crash loses more than a person would expect of a log
/// that says it is written as calls happen.
const MAX_BATCH_WINDOW_MS: u64 = 1000;

/// The `[audit]` table as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditSection {
    redact_keys: Option<Vec<String>>,
    durability: Option<Durability>,
    batch_window_ms: Option<u64>,
    retention: Option<cut::RetentionSection>,
}

/// How the audit log records: which argument keys it redacts, when an
/// append is on disk, and how long records are kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditSettings {
    pub redact_keys: Vec<String>,
    pub durability: Durability,
    /// With `Batched`: how long the writer lets a batch fill.
    pub batch_window: Duration,
    pub retention: Retention,
}

impl Default for AuditSettings {
    fn default() -> Self {
        AuditSettings {
            redact_keys: DEFAULT_REDACT_KEYS.iter().map(|k| k.to_string()).collect(),
            durability: Durability::default(),
            batch_window: DEFAULT_BATCH_WINDOW,
            retention: Retention::default(),
        }
    }
}

impl AuditSection {
    pub const KEYS: &str = "redact_keys, durability, batch_window_ms, retention (a table: max_age, max_records, archive_dir, interval)";

    pub fn resolve(self) -> Result<AuditSettings, SettingError> {
        let defaults = AuditSettings::default();
        let durability = self.durability.unwrap_or_default();
        if durability == Durability::Sync && self.batch_window_ms.is_some() {
            return Err(SettingError::new(
                "`audit.batch_window_ms` is set, but `audit.durability` is \"sync\": every call's records commit at once",
                "remove `batch_window_ms`, or set `durability = \"batched\"`",
            ));
        }
        let window_ms = bounded(
            "audit",
            "batch_window_ms",
            self.batch_window_ms,
            defaults.batch_window.as_millis() as u64,
            MAX_BATCH_WINDOW_MS,
        )?;
        Ok(AuditSettings {
            redact_keys: self.redact_keys.unwrap_or(defaults.redact_keys),
            durability,
            batch_window: Duration::from_millis(window_ms),
            retention: self
                .retention
                .map(cut::RetentionSection::resolve)
                .transpose()?
                .unwrap_or_default(),
        })
    }
}
