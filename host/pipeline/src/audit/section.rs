//! The `[audit]` section: how durably records are committed, and what is
//! redacted from them.

use super::{DEFAULT_REDACT_KEYS, Durability, Retention, cut};
use serde::Deserialize;

/// The `[audit]` table as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditSection {
    redact_keys: Option<Vec<String>>,
    durability: Option<Durability>,
    retention: Option<cut::RetentionSection>,
}

/// How the audit log records: which argument keys it redacts, when an
/// append is on disk, and how long records are kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditSettings {
    pub redact_keys: Vec<String>,
    pub durability: Durability,
    pub retention: Retention,
}

impl Default for AuditSettings {
    fn default() -> Self {
        AuditSettings {
            redact_keys: DEFAULT_REDACT_KEYS.iter().map(|k| k.to_string()).collect(),
            durability: Durability::default(),
            retention: Retention::default(),
        }
    }
}

impl AuditSection {
    pub const KEYS: &str =
        "redact_keys, durability, retention (a table: max_age, max_records, archive_dir, interval)";

    pub fn resolve(self) -> Result<AuditSettings, crate::settings::SettingError> {
        let defaults = AuditSettings::default();
        Ok(AuditSettings {
            redact_keys: self.redact_keys.unwrap_or(defaults.redact_keys),
            durability: self.durability.unwrap_or_default(),
            retention: self
                .retention
                .map(cut::RetentionSection::resolve)
                .transpose()?
                .unwrap_or_default(),
        })
    }
}
