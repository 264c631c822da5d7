//! The audit chain's head, kept outside the database: `audit.head` in the
//! state directory holds how many records the chain has and the hash of the
//! last one, replaced atomically (write, then rename) after commits: after
//! each one when every call waits for its commit; with batched commits at
//! most every `HEAD_EVERY` (audit/head_pace.rs), the last one at the latest
//! that long after its commit, and when the writer stops (a rename per
//! commit cost the writer as much as a third of its work).
//!
//! The chain alone cannot show records cut off its end: no later record is
//! left to disagree. The head can, so `audit verify` compares the two, and
//! `audit head` prints it for anchoring somewhere the host cannot write.
//! Several processes may append to one database; a lock file orders their
//! head updates and a head never moves backwards. The head is not fsynced:
//! after a power loss it may lag the database (reported, not an error); it
//! is written only after the commit it describes, so it never runs ahead.
//! A host killed outright may leave it behind by the records of its last
//! `HEAD_EVERY`, as a power loss may.

use super::Store;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};

/// The head file's name inside the state directory.
pub const HEAD_FILE: &str = "audit.head";
const LOCK_FILE: &str = "audit.head.lock";

/// The end of the chain: the number of records and the last one's hash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Head {
    pub records: i64,
    pub hash: String,
}

impl Store {
    fn state_dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// Where the head file is.
    pub fn head_path(&self) -> PathBuf {
        self.state_dir().join(HEAD_FILE)
    }

    /// The head as last written, or `None` if no head was ever written.
    pub fn read_head(&self) -> io::Result<Option<Head>> {
        match std::fs::read(self.head_path()) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Moves the head to `head` unless it already is there or beyond. The
    /// records it counts are committed whatever happens here; a head left
    /// behind only makes `audit verify` say it lags, so a failure is logged.
    pub fn advance_head_or_warn(&self, head: &Head) {
        if let Err(e) = self.advance_head(head) {
            tracing::warn!(
                "cannot update the audit head `{}`: {e}",
                self.head_path().display()
            );
        }
    }

    fn advance_head(&self, head: &Head) -> io::Result<()> {
        let lock = crate::private_file::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.state_dir().join(LOCK_FILE))?;
        lock.lock()?;
        if let Ok(Some(current)) = self.read_head()
            && current.records >= head.records
        {
            return Ok(());
        }
        let bytes = serde_json::to_vec(head).map_err(io::Error::other)?;
        crate::private_file::replace(&self.head_path(), &bytes)
    }
}
