//! The audit log: every call and every decision, append-only and chained.
//!
//! Each record stores a SHA-256 over all of its fields and the previous
//! record's hash, so altering, removing or reordering any record breaks the
//! chain from that point, and [`Audit::verify`] names the first bad record.
//! What the chain alone cannot show, records cut off the end of the log (no
//! later record is left to disagree), the head kept beside it does
//! ([`crate::store::Head`]); verification compares the two.
//! Arguments and outputs pass through a [`Redactor`] before they are stored.

mod cut;
mod redact;
pub mod segment;
mod stats;
mod writer;

pub use cut::{CUT_KIND, Cut, ExportError, Retention};
pub use redact::{DEFAULT_REDACT_KEYS, Redactor};
pub use stats::{ApprovalStats, SessionStats, Spread, Stats, ToolStats, stats};
pub use writer::Durability;

use crate::outcome::{ErrorCode, Status};
use crate::store::{
    AuditFilter, AuditRow, Checkpoint, ExecutionRow, NewAuditRow, Store, StoreError,
};
use segment::SegmentHeader;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::sync::Arc;

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

/// One thing that happened to a call.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// The call as materialized (arguments redacted) and its digest.
    Call {
        args: Arc<Value>,
        args_digest: Arc<str>,
        /// The tool set the session declared, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        profile: Option<Arc<str>>,
        /// The model turn it came in, if it came in a batch.
        #[serde(skip_serializing_if = "Option::is_none")]
        turn: Option<Arc<str>>,
        /// The call whose tool made this one through `compose`.
        #[serde(skip_serializing_if = "Option::is_none")]
        parent: Option<Arc<str>>,
        /// The agent's call at the top of its tree.
        #[serde(skip_serializing_if = "Option::is_none")]
        root: Option<Arc<str>>,
    },
    /// Path arguments that lead somewhere other than they read, and URL
    /// arguments with their canonical form: the plugin receives the
    /// rewritten arguments, whose digest this is.
    Paths {
        paths: Vec<crate::workspace::LocatedPath>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        uris: Vec<crate::workspace::LocatedUri>,
        args_digest: Arc<str>,
    },
    /// What the policy decided.
    Policy {
        verdict: crate::policy::Verdict,
        matched_rules: crate::policy::RuleNumbers,
        reason: Arc<str>,
    },
    /// The call stopped before running (unknown tool, invalid arguments,
    /// policy or guard denial, approval problem).
    Refused {
        code: ErrorCode,
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
        /// Where the person decided (`cli`, `terminal`, `mcp`, `console`).
        by: &'static str,
    },
    ApprovalConsumed {
        approval_id: String,
    },
    /// One HTTP request the plugin sent or tried to send: method, origin,
    /// path (query values redacted), decision, status, bytes each way.
    Request(crate::egress::RequestRecord),
    /// A keyed call answered with the output a call under the same key
    /// recorded: nothing ran.
    Replayed {
        key: String,
        original_call_id: String,
    },
    /// An attempt that failed and was run again (`[retry]`).
    Retried(crate::sandbox::Retried),
    /// A question the tool asked a person (`ask`) and the answer it got
    /// (its content redacted like arguments), or none: the call stopped
    /// to ask it.
    Question(crate::question::Asked),
    /// How the execution ended.
    Outcome {
        status: Status,
        code: Option<ErrorCode>,
        message: Option<String>,
        duration_us: u64,
        fuel_used: Option<u64>,
        output_bytes: usize,
        value: Option<Value>,
        /// The content blocks beside the value: kind, MIME type and size,
        /// never their bytes.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        content: Vec<crate::content::BlockSummary>,
        /// The plugin build the call ran on: its SHA-256 and the key that
        /// signed it, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        plugin: Option<RanOn>,
    },
}

/// The plugin build a call ran on, recorded as its SHA-256 and signer
/// (held as the plugin itself: a call's trail copies nothing for it).
#[derive(Clone, Debug)]
pub struct RanOn(pub Arc<crate::registry::Plugin>);

impl Serialize for RanOn {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("sha256", self.0.sha256())?;
        if let Some(signer) = self.0.signer() {
            map.serialize_entry("signer", signer)?;
        }
        map.end()
    }
}

impl From<crate::approval::ApprovalStep> for Event {
    fn from(step: crate::approval::ApprovalStep) -> Event {
        use crate::approval::ApprovalStep;
        match step {
            ApprovalStep::Asked {
                approval_id,
                expires_ms,
            } => Event::ApprovalAsked {
                approval_id,
                expires_ms,
            },
            ApprovalStep::Consumed { approval_id } => Event::ApprovalConsumed { approval_id },
        }
    }
}

impl Event {
    /// The policy's decision, as recorded.
    pub fn policy(decision: &crate::policy::Decision) -> Event {
        Event::Policy {
            verdict: decision.verdict,
            matched_rules: decision.matched.clone(),
            reason: decision.reason.clone(),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Event::Call { .. } => "call",
            Event::Paths { .. } => "paths",
            Event::Policy { .. } => "policy",
            Event::Refused { .. } => "refused",
            Event::ApprovalAsked { .. } => "approval_asked",
            Event::ApprovalDecided { .. } => "approval_decided",
            Event::ApprovalConsumed { .. } => "approval_consumed",
            Event::Request(_) => "request",
            Event::Retried(_) => "retried",
            Event::Question(_) => "question",
            Event::Replayed { .. } => "replayed",
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
            call_id: recordable(request.call_id.shared()),
            session: recordable(request.session.shared()),
            tool: recordable(Arc::from(request.tool.as_str())),
        }
    }
}

/// `text` as a record can keep it: PostgreSQL's `text` holds no NUL, so a
/// NUL a client slipped into a name (of a tool that does not exist, say)
/// is kept as U+FFFD. Kept as it came, it would make every commit of the
/// shared trail fail, and the writer retries a failed commit's records, so
/// the host would refuse every call after it.
fn recordable(text: Arc<str>) -> Arc<str> {
    if text.contains('\0') {
        Arc::from(text.replace('\0', "\u{FFFD}"))
    } else {
        text
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
        Ok(self.compare_head(
            head,
            last - first + 1,
            last,
            walk.at_head,
            checkpoint.map(|c| c.seq),
        ))
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
