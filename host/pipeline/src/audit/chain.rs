//! The hash chain: how a record's hash is made, what checking the chain
//! finds, and the walk that checks it record by record.

use super::CUT_KIND;
use crate::store::{AuditRow, Checkpoint, NewAuditRow};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The result of checking the chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Verification {
    Intact {
        records: i64,
        head: HeadCheck,
        /// The log's start was exported or pruned through this record; the
        /// chain was checked from there, and a `cut` record in it says so.
        #[serde(skip_serializing_if = "Option::is_none")]
        cut_through: Option<i64>,
    },
    Broken {
        seq: i64,
        problem: String,
    },
}

/// What the chain's head (kept outside the database, see
/// [`crate::store::Head`]) says about an intact chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadCheck {
    /// The head names the chain's last record.
    Matches,
    /// The chain has records the head does not count yet: a crash or a
    /// power loss came between a commit and the head's update.
    Lags { head_records: i64 },
    /// No head was ever written: a log from before heads existed, or one
    /// whose head was deleted. A cut-off end cannot be detected.
    Missing,
}

/// One step of walking the chain: what the next record must be.
pub(super) struct Walk {
    pub(super) expected: i64,
    pub(super) prev: String,
    pub(super) broken: Option<Verification>,
    /// Whether a `cut` record naming the checkpoint was seen.
    pub(super) cut_noted: bool,
    /// The hash of the record the head names, once passed.
    pub(super) at_head: Option<String>,
}

impl Walk {
    /// A walk from the record after `base` (where a cut left the chain,
    /// or its genesis); `cut_noted` when no `cut` record is to be looked for.
    pub(super) fn after(base: Checkpoint, cut_noted: bool) -> Walk {
        Walk {
            expected: base.seq + 1,
            prev: base.hash,
            broken: None,
            cut_noted,
            at_head: None,
        }
    }

    pub(super) fn step(
        &mut self,
        row: &AuditRow,
        checkpoint: Option<&Checkpoint>,
        head_seq: Option<i64>,
    ) -> std::ops::ControlFlow<()> {
        let problem = if row.seq != self.expected {
            Some(format!(
                "expected record {} here: records were removed or reordered",
                self.expected
            ))
        } else if row.prev_hash != self.prev {
            Some("its link to the previous record is wrong: a record before it was altered, removed or reordered".into())
        } else if record_hash(row.seq, &row.row, &row.prev_hash) != row.hash {
            Some("its content does not match its hash: the record was altered".into())
        } else {
            None
        };
        if let Some(problem) = problem {
            self.broken = Some(Verification::Broken {
                seq: row.seq,
                problem,
            });
            return std::ops::ControlFlow::Break(());
        }
        if let Some(c) = checkpoint
            && row.row.kind == CUT_KIND
            && let Ok(data) = serde_json::from_str::<Value>(&row.row.data)
            && data["through_seq"] == c.seq
            && data["through_hash"] == c.hash.as_str()
        {
            self.cut_noted = true;
        }
        if head_seq == Some(row.seq) {
            self.at_head = Some(row.hash.clone());
        }
        self.prev.clone_from(&row.hash);
        self.expected += 1;
        std::ops::ControlFlow::Continue(())
    }
}

/// SHA-256 over the record's fields and the previous hash, as the compact
/// JSON array `[seq, ts_ms, call_id, session, tool, kind, data, prev]`.
/// Serialized straight from borrowed fields: the writer hashes every record.
pub(super) fn record_hash(seq: i64, row: &NewAuditRow, prev: &str) -> String {
    let fields = (
        seq,
        row.ts_ms,
        &row.call_id,
        &row.session,
        &row.tool,
        &row.kind,
        &row.data,
        prev,
    );
    let mut hasher = Sha256::new();
    // Writing JSON into a hasher cannot fail: the tuple holds only integers
    // and strings, and the hasher (an `io::Write`) accepts every byte.
    let _ = serde_json::to_writer(&mut hasher, &fields);
    hex::encode(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chain of existing logs must keep verifying: the hash is the one
    /// of the `json!` array it was first defined as.
    #[test]
    fn record_hash_is_over_the_compact_json_array() {
        let row = NewAuditRow {
            ts_ms: 1_795_000_000_000,
            call_id: "c\"1".into(),
            session: "s\u{202e}".into(),
            tool: "calc".into(),
            kind: "outcome".into(),
            data: r#"{"kind":"outcome","value":"a\nb"}"#.into(),
        };
        let text = serde_json::json!([
            -7,
            row.ts_ms,
            row.call_id,
            row.session,
            row.tool,
            row.kind,
            row.data,
            "prev"
        ])
        .to_string();
        assert_eq!(
            record_hash(-7, &row, "prev"),
            hex::encode(Sha256::digest(text.as_bytes()))
        );
    }
}
