//! The `[approvals]` section: how long an approval stays usable, and how
//! much a rehearsal may copy.

use crate::settings::{SettingError, bounded};
use crate::workspace::ScratchLimits;
use serde::Deserialize;
use std::time::Duration;

/// How long a pending or approved approval stays usable, unless the config
/// says otherwise (`[approvals] ttl_seconds`).
pub const DEFAULT_APPROVAL_TTL: Duration = Duration::from_secs(15 * 60);
/// Longest approval lifetime a config may set: a day.
const MAX_APPROVAL_TTL_SECONDS: u64 = 24 * 3600;

/// The `[approvals]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsSection {
    ttl_seconds: Option<u64>,
    rehearse_max_mb: Option<u64>,
    rehearse_max_entries: Option<u64>,
}

/// Largest workspace copy a config may allow for a rehearsal, in MiB.
const MAX_REHEARSE_MB: u64 = 16 * 1024;
/// Most entries a config may allow in a rehearsal's copy.
const MAX_REHEARSE_ENTRIES: u64 = 10_000_000;

/// What `[approvals]` settles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApprovalSettings {
    /// How long an approval stays usable.
    pub ttl: Duration,
    /// How much of the workspace may be copied to rehearse a call.
    pub rehearsal: ScratchLimits,
}

impl Default for ApprovalSettings {
    fn default() -> Self {
        ApprovalSettings {
            ttl: DEFAULT_APPROVAL_TTL,
            rehearsal: ScratchLimits::default(),
        }
    }
}

impl ApprovalsSection {
    pub const KEYS: &str = "ttl_seconds, rehearse_max_mb, rehearse_max_entries";

    pub fn resolve(self) -> Result<ApprovalSettings, SettingError> {
        let seconds = bounded(
            "approvals",
            "ttl_seconds",
            self.ttl_seconds,
            DEFAULT_APPROVAL_TTL.as_secs(),
            MAX_APPROVAL_TTL_SECONDS,
        )?;
        let mb = bounded(
            "approvals",
            "rehearse_max_mb",
            self.rehearse_max_mb,
            crate::workspace::DEFAULT_MAX_MB,
            MAX_REHEARSE_MB,
        )?;
        let entries = bounded(
            "approvals",
            "rehearse_max_entries",
            self.rehearse_max_entries,
            crate::workspace::DEFAULT_MAX_ENTRIES,
            MAX_REHEARSE_ENTRIES,
        )?;
        Ok(ApprovalSettings {
            ttl: Duration::from_secs(seconds),
            rehearsal: ScratchLimits {
                max_bytes: mb << 20,
                max_entries: entries,
            },
        })
    }
}
