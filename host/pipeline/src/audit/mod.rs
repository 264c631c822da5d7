//! The audit log: every call and every decision, append-only and chained.
//!
//! Each record stores a SHA-256 over all of its fields and the previous
//! record's hash, so altering, removing or reordering any record breaks the
//! chain from that point, and [`Audit::verify`] names the first bad record.
//! What the chain alone cannot show, records cut off the end of the log (no
//! later record is left to disagree), the head kept beside it does
//! ([`crate::store::Head`]); verification compares the two.
//! Arguments and outputs pass through a [`Redactor`] before they are stored.

mod chain;
mod cut;
mod event;
mod head_pace;
mod redact;
mod section;
pub mod segment;
mod stats;
mod writer;

pub use chain::{HeadCheck, Verification};
use chain::{Walk, record_hash};
pub use cut::{CUT_KIND, Cut, ExportError, Retention};
pub use event::{Event, RanOn, Subject};
pub use redact::{DEFAULT_REDACT_KEYS, Redactor};
pub use section::{AuditSection, AuditSettings};
pub use stats::{ApprovalStats, SessionStats, Spread, Stats, ToolStats, stats};
pub use writer::Durability;

use crate::store::{AuditFilter, AuditRow, Checkpoint, ExecutionRow, Store, StoreError};
use segment::SegmentHeader;
use serde::Serialize;
use serde_json::Value;
use std::io::Write;
use std::sync::Arc;

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

/// Appending to the audit log failed; the message says why.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the audit log: {0}")]
pub struct AuditError(pub(crate) String);

#[derive(Debug)]
pub struct Audit {
    store: Arc<Store>,
    writer: writer::Writer,
    durability: Durability,
    /// Retention's thread, once a host started it.
    pruner: std::sync::Mutex<Option<cut::Pruner>>,
}

impl Audit {
    /// Reads through `store`; appends through a writer thread with its own
    /// connection, redacting with `redactor` on the way; with batched
    /// `durability`, it commits every `batch_window`.
    pub fn new(
        store: Arc<Store>,
        redactor: Redactor,
        durability: Durability,
        batch_window: std::time::Duration,
    ) -> Result<Audit, AuditError> {
        let writer_store = store
            .connect_again()
            .map_err(|e| AuditError(e.to_string()))?;
        let writer = writer::Writer::start(writer_store, redactor, durability, batch_window)
            .map_err(|e| AuditError(format!("cannot start the writer thread: {e}")))?;
        Ok(Audit {
            store,
            writer,
            durability,
            pruner: Default::default(),
        })
    }

    /// Starts applying `retention` on a thread of its own (a pass now, then
    /// one per interval), unless it sets no limit or already runs. Only a
    /// host starts it: a command that only reads the log never cuts it.
    pub fn start_retention(&self, retention: &Retention) -> Result<(), AuditError> {
        let mut pruner = self
            .pruner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if pruner.is_some() {
            return Ok(());
        }
        let store = self
            .store
            .connect_again()
            .map_err(|e| AuditError(e.to_string()))?;
        *pruner = cut::Pruner::start(store, retention.clone())
            .map_err(|e| AuditError(format!("cannot start audit retention: {e}")))?;
        Ok(())
    }

    /// From now on, commits run only in time no call wants (see
    /// `Writer::write_in_idle_time`).
    pub fn write_in_idle_time(&self) {
        self.writer.write_in_idle_time();
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
        // While the log cannot be written, every call waits for its commit
        // (and so does not run), whatever the durability.
        let wait = self.durability == Durability::Sync || !self.writer.is_healthy();
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

    /// What `audit stats` reports on the records `filter` selects, counted
    /// by the database once the queue is committed.
    pub fn tallies(&self, filter: &AuditFilter) -> Result<crate::store::AuditTallies, StoreError> {
        self.settle();
        self.store.audit_tallies(filter)
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

    /// Walks the chain from its start (or from where a cut left it) and
    /// reports the first record that does not fit. Streams: memory stays
    /// flat however long the chain is.
    pub fn verify(&self) -> Result<Verification, StoreError> {
        self.settle();
        // The head is read first: every record it counts was committed
        // before it was written, so the scan below sees them all.
        let head = self.store.read_head();
        let shared_head = self.store.shared_audit_head()?;
        let checkpoint = self.store.audit_checkpoint()?;
        let head_seq = head
            .as_ref()
            .ok()
            .and_then(|h| h.as_ref())
            .map(|h| h.records);
        let base = checkpoint.clone().unwrap_or_else(Checkpoint::genesis);
        let mut walk = Walk::after(base, checkpoint.is_none());
        let first = walk.expected;
        self.store.scan_audit(first, None, &mut |row| {
            walk.step(&row, checkpoint.as_ref(), head_seq)
        })?;
        if let Some(broken) = walk.broken {
            return Ok(broken);
        }
        if let (false, Some(c)) = (walk.cut_noted, &checkpoint) {
            return Ok(Verification::Broken {
                seq: c.seq + 1,
                problem: format!(
                    "the log starts after record {}, but no record in it says it was cut \
                     there: records were removed",
                    c.seq
                ),
            });
        }
        let last = walk.expected - 1;
        let cut_through = checkpoint.map(|c| c.seq);
        let by_file = self.compare_head(head, last - first + 1, last, walk.at_head, cut_through);
        if matches!(by_file, Verification::Broken { .. }) {
            return Ok(by_file);
        }
        Ok(self
            .compare_shared_head(shared_head, last, cut_through)?
            .unwrap_or(by_file))
    }

    /// A shared chain against the head the store keeps, which every append
    /// moves in its own transaction: records cut off the end show on every
    /// host, not only on the one whose head file counted them.
    fn compare_shared_head(
        &self,
        head: Option<(i64, String)>,
        last: i64,
        cut_through: Option<i64>,
    ) -> Result<Option<Verification>, StoreError> {
        let Some((seq, hash)) = head else {
            return Ok(None);
        };
        if seq > last {
            return Ok(Some(Verification::Broken {
                seq: last + 1,
                problem: format!(
                    "the shared log ends after record {last}, but the store's head says {seq} \
                     records were written: the last {} were cut off the end",
                    seq - last
                ),
            }));
        }
        if cut_through.is_some_and(|cut| seq <= cut) {
            return Ok(None);
        }
        if self.store.audit_hash_at(seq)?.as_deref() == Some(hash.as_str()) {
            return Ok(None);
        }
        Ok(Some(Verification::Broken {
            seq,
            problem: "its hash is not the one the store's head recorded for it: the shared \
                      chain was rewritten from here on"
                .into(),
        }))
    }

    /// An intact chain against its head: records cut off the end show here.
    fn compare_head(
        &self,
        head: std::io::Result<Option<crate::store::Head>>,
        records: i64,
        last: i64,
        at_head: Option<String>,
        cut_through: Option<i64>,
    ) -> Verification {
        let file = self.store.head_path();
        let broken = |seq, problem| Verification::Broken { seq, problem };
        let intact = |head| Verification::Intact {
            records,
            head,
            cut_through,
        };
        let head = match head {
            Ok(Some(head)) => head,
            Ok(None) => return intact(HeadCheck::Missing),
            Err(e) => {
                return broken(
                    last,
                    format!(
                        "the chain's head `{}` cannot be read ({e}); it was damaged or replaced",
                        file.display()
                    ),
                );
            }
        };
        if head.records > last {
            return broken(
                last + 1,
                format!(
                    "the log ends after record {last}, but its head `{}` says {} records \
                     were written: the last {} were cut off the end",
                    file.display(),
                    head.records,
                    head.records - last
                ),
            );
        }
        let lags = || HeadCheck::Lags {
            head_records: head.records,
        };
        match at_head {
            Some(hash) if hash == head.hash && head.records == last => intact(HeadCheck::Matches),
            Some(hash) if hash == head.hash => intact(lags()),
            Some(_) => broken(
                head.records,
                format!(
                    "its hash is not the one the head `{}` recorded for it: the chain was \
                     rewritten from here on",
                    file.display()
                ),
            ),
            // The head lags from before a cut that removed the record it
            // names: nothing is left to compare it with.
            None if cut_through.is_some_and(|cut| head.records <= cut) => intact(lags()),
            None => broken(1, format!("the head `{}` names no record", file.display())),
        }
    }

    /// Takes the records `cut` selects out of the database into `out`;
    /// see [`cut::cut`].
    pub fn export(
        &self,
        cut: Cut,
        out: &mut dyn Write,
        sync: &dyn Fn() -> std::io::Result<()>,
        reason: &str,
    ) -> Result<Option<SegmentHeader>, ExportError> {
        self.settle();
        cut::cut(&self.store, cut, out, sync, reason)
    }

    /// The chain's head as last written, if any.
    pub fn head(&self) -> std::io::Result<Option<crate::store::Head>> {
        self.settle();
        self.store.read_head()
    }
}
