//! The audit log: every call and every decision, append-only and chained.
//!
//! Each record stores a SHA-256 over all of its fields and the previous
//! record's hash, so altering, removing or reordering any record breaks the
//! chain from that point, and [`Audit::verify`] names the first bad record.
//! What the chain cannot show: records cut off the end of the log (there is
//! no later record to disagree); anchor the last hash elsewhere for that.
//! Arguments and outputs pass through a [`Redactor`] before they are stored.

mod redact;
mod writer;

pub use redact::{DEFAULT_REDACT_KEYS, Redactor};
pub use writer::Durability;

use crate::store::{AuditFilter, AuditRow, ExecutionRow, NewAuditRow, Store, StoreError};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// One thing that happened to a call.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// The call as materialized (arguments redacted) and its digest.
    Call {
        args: Arc<Value>,
        args_digest: Arc<str>,
    },
    /// What the policy decided.
    Policy {
        verdict: &'static str,
        matched_rules: crate::policy::RuleNumbers,
        reason: Arc<str>,
    },
    /// The call stopped before running (unknown tool, invalid arguments,
    /// policy or guard denial, approval problem).
    Refused {
        code: &'static str,
        message: String,
    },
    ApprovalAsked {
        approval_id: String,
        expires_ms: i64,
    },
    ApprovalDecided {
        approval_id: String,
        approved: bool,
        reason: Option<String>,
    },
    ApprovalConsumed {
        approval_id: String,
    },
    /// How the execution ended.
    Outcome {
        status: &'static str,
        code: Option<&'static str>,
        message: Option<String>,
        duration_us: u64,
        fuel_used: Option<u64>,
        output_bytes: usize,
        value: Option<Value>,
    },
}

impl Event {
    /// The policy's decision, as recorded.
    pub fn policy(decision: &crate::policy::Decision) -> Event {
        Event::Policy {
            verdict: decision.verdict.as_str(),
            matched_rules: decision.matched.clone(),
            reason: decision.reason.clone(),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Event::Call { .. } => "call",
            Event::Policy { .. } => "policy",
            Event::Refused { .. } => "refused",
            Event::ApprovalAsked { .. } => "approval_asked",
            Event::ApprovalDecided { .. } => "approval_decided",
            Event::ApprovalConsumed { .. } => "approval_consumed",
            Event::Outcome { .. } => "outcome",
        }
    }
}

/// Which call the events belong to. Its texts are shared with the request
/// and with every row written for it.
#[derive(Clone, Debug)]
pub struct Subject {
    pub call_id: Arc<str>,
    pub session: Arc<str>,
    pub tool: Arc<str>,
}

impl Subject {
    pub fn of(request: &crate::call::CallRequest) -> Subject {
        Subject {
            call_id: request.call_id.shared(),
            session: request.session.shared(),
            tool: Arc::from(request.tool.as_str()),
        }
    }
}

/// A stored record, for display.
#[derive(Clone, Debug, Serialize)]
pub struct Record {
    pub seq: i64,
    pub ts_ms: i64,
    pub call_id: String,
    pub session: String,
    pub tool: String,
    pub kind: String,
    pub data: Value,
    pub hash: String,
}

/// The result of checking the chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Verification {
    Intact { records: i64 },
    Broken { seq: i64, problem: String },
}

/// Appending to the audit log failed; the message says why.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the audit log: {0}")]
pub struct AuditError(String);

#[derive(Debug)]
pub struct Audit {
    store: Arc<Store>,
    writer: writer::Writer,
    durability: Durability,
}

/// SHA-256 over the record's fields and the previous hash, as the compact
/// JSON array `[seq, ts_ms, call_id, session, tool, kind, data, prev]`.
/// Serialized straight from borrowed fields: the writer hashes every record.
fn record_hash(seq: i64, row: &NewAuditRow, prev: &str) -> String {
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

impl Audit {
    /// Reads through `store`; appends through a writer thread with its own
    /// connection, redacting with `redactor` on the way.
    pub fn new(
        store: Arc<Store>,
        redactor: Redactor,
        durability: Durability,
    ) -> Result<Audit, AuditError> {
        let writer_store = store
            .connect_again()
            .map_err(|e| AuditError(e.to_string()))?;
        let writer = writer::Writer::start(writer_store, redactor, durability)
            .map_err(|e| AuditError(format!("cannot start the writer thread: {e}")))?;
        Ok(Audit {
            store,
            writer,
            durability,
        })
    }

    /// Appends a call's events, with the execution its session's budgets
    /// count once it ran (in the same transaction), committed as the
    /// configured [`Durability`] says.
    pub fn record(
        &self,
        subject: &Arc<Subject>,
        events: Vec<Event>,
        execution: Option<ExecutionRow>,
    ) -> Result<(), AuditError> {
        let wait = self.durability == Durability::Sync;
        self.append(subject, events, execution, wait)
    }

    /// Appends events and returns only once they are on disk, whatever the
    /// durability: for decisions a person made, which must not be lost.
    pub fn record_durably(
        &self,
        subject: &Arc<Subject>,
        events: Vec<Event>,
    ) -> Result<(), AuditError> {
        self.append(subject, events, None, true)
    }

    fn append(
        &self,
        subject: &Arc<Subject>,
        events: Vec<Event>,
        execution: Option<ExecutionRow>,
        wait: bool,
    ) -> Result<(), AuditError> {
        if events.is_empty() && execution.is_none() {
            return Ok(());
        }
        self.writer
            .submit(subject, events, execution, wait)
            .map_err(AuditError)
    }

    /// Commits what this host queued, so that reading shows every call so far.
    fn settle(&self) {
        if let Err(e) = self.writer.flush() {
            tracing::error!("{e}");
        }
    }

    pub fn records(&self, filter: &AuditFilter) -> Result<Vec<Record>, StoreError> {
        self.settle();
        Ok(self
            .store
            .audit_rows(filter)?
            .into_iter()
            .map(|AuditRow { seq, row, hash, .. }| Record {
                seq,
                ts_ms: row.ts_ms,
                data: serde_json::from_str(&row.data).unwrap_or(Value::String(row.data)),
                call_id: row.call_id.to_string(),
                session: row.session.to_string(),
                tool: row.tool.to_string(),
                kind: row.kind.into_owned(),
                hash,
            })
            .collect())
    }

    /// Walks the whole chain and reports the first record that does not fit.
    pub fn verify(&self) -> Result<Verification, StoreError> {
        self.settle();
        let rows = self.store.audit_rows(&AuditFilter::default())?;
        let mut prev = crate::store::GENESIS.to_owned();
        for (i, row) in rows.iter().enumerate() {
            let expected_seq = i as i64 + 1;
            let broken = |problem: String| {
                Ok(Verification::Broken {
                    seq: row.seq,
                    problem,
                })
            };
            if row.seq != expected_seq {
                return broken(format!(
                    "expected record {expected_seq} here: records were removed or reordered"
                ));
            }
            if row.prev_hash != prev {
                return broken("its link to the previous record is wrong: a record before it was altered, removed or reordered".into());
            }
            if record_hash(row.seq, &row.row, &row.prev_hash) != row.hash {
                return broken(
                    "its content does not match its hash: the record was altered".into(),
                );
            }
            prev = row.hash.clone();
        }
        Ok(Verification::Intact {
            records: rows.len() as i64,
        })
    }
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
