//! The writer: one thread that appends audit records (and the executions
//! budgets count) in group commits.
//!
//! Calls hand their events over a channel; the thread takes everything
//! queued, redacts and serializes it, and appends it in one transaction, so
//! one fsync serves every call that finished meanwhile. Whether a call waits
//! for that commit is the [`Durability`]: with `Sync` nothing runs until its
//! trail is on disk; with `Batched` (the default) the call goes on and the
//! commit follows within one batch. Dropping the writer commits what is
//! queued before it returns, so an orderly exit loses nothing.
//!
//! A commit that fails (the disk is full, the shared database is gone)
//! keeps its records for the next one, and until a commit succeeds again
//! every call waits for its own, as with `Sync`: while the log cannot be
//! written, nothing runs (the call is refused), and once it can, the kept
//! records go first, so the chain misses none of the calls that ran.
//!
//! A batch the database refuses as data (a record it will never take, see
//! `StoreError::refuses_data`) is committed record by record instead, each
//! refused record replaced by an `unrecordable` one that says what it was
//! and why: retried as it was, it would fail every commit from then on and
//! the host would refuse every call.
//!
//! The queue is bounded ([`MAX_QUEUED`]): callers that outrun the writer
//! wait for room instead of growing the host's memory without limit. The
//! thread runs below the calls ([`NICENESS`]; for a stdio server also in
//! Linux's `SCHED_IDLE`, see [`Writer::write_in_idle_time`]): its work is
//! deferrable, and it no longer takes a CPU from a call or an MCP client
//! that is about to run (an MCP round trip's p99 fell from ~500-800 µs to
//! ~190-340 µs at nice 10, and the round trips over 500 µs from one in 150
//! to one in 1,500 in `SCHED_IDLE`).
//! When nothing else wants the CPU it runs as fast as before; when calls
//! saturate every core, the bound makes them wait for it.

use super::head_pace::HeadKeeper;
use super::{Event, Subject, record_hash};
use crate::audit::Redactor;
use crate::store::{ExecutionRow, Head, NewAuditRow, Store, StoreError, now_ms};
use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::Duration;

/// Jobs one transaction takes at most; more wait for the next one.
const MAX_BATCH: usize = 4096;
/// Jobs queued at most; a caller beyond waits for the writer to catch up.
/// Four batches: tens of megabytes at most, where the unbounded queue grew
/// by ~140 MiB in 3 s of calls on two cores.
const MAX_QUEUED: usize = 4 * MAX_BATCH;
/// The writer thread's nice value (Linux: per thread).
const NICENESS: i32 = 10;

/// Write-ahead log pages between the writer's checkpoints (16 MiB of 4 KiB
/// pages): a quarter of the checkpoints, and of their waits for the disk,
/// of SQLite's default.
const CHECKPOINT_PAGES: u32 = 4000;
/// Records kept from failed commits at most; past it the oldest are
/// dropped (and said so), so an outage cannot grow the host without end.
const MAX_KEPT: usize = 65_536;

/// When an audit append is on disk, relative to the call that made it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Each call waits for its records' commit (shared with whatever else is
    /// queued): nothing runs unless its trail is on disk.
    Sync,
    /// Calls go on; the writer commits every few milliseconds, without
    /// waiting for the disk (SQLite `synchronous = NORMAL`). A crash of the
    /// process (not an orderly exit) can lose the records of the last
    /// batch, a power loss those since the last checkpoint; never the
    /// chain's integrity.
    #[default]
    Batched,
}

struct Job {
    subject: Arc<Subject>,
    events: Vec<Event>,
    execution: Option<ExecutionRow>,
    ts_ms: i64,
    done: Option<SyncSender<Result<(), String>>>,
}

/// The callers' end of the queue. Not behind a lock: a `SyncSender` is
/// shared as it is, and only `drop` (which has the writer to itself) closes it.
pub(super) struct Writer {
    sender: Option<SyncSender<Job>>,
    thread: Option<JoinHandle<()>>,
    /// Whether the last commit succeeded.
    healthy: Arc<AtomicBool>,
    /// Set once the writer should run only in idle time (see
    /// [`Writer::write_in_idle_time`]).
    idle_time: Arc<AtomicBool>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Writer")
    }
}

impl Writer {
    /// Starts the thread; `store` is its own connection to the database.
    /// With `Batched`, the writer lets a batch fill for `batch_window`
    /// before committing: one commit then serves every call of that window,
    /// not one each.
    pub fn start(
        store: Store,
        redactor: Redactor,
        durability: Durability,
        batch_window: Duration,
    ) -> std::io::Result<Writer> {
        let (sender, receiver) = sync_channel(MAX_QUEUED);
        let window = match durability {
            Durability::Sync => Duration::ZERO,
            Durability::Batched => {
                if let Err(e) = store.relax_durability() {
                    tracing::warn!("audit writes stay fully synchronous: {e}");
                }
                batch_window
            }
        };
        if let Err(e) = store.checkpoint_every(CHECKPOINT_PAGES) {
            tracing::debug!("the audit log keeps SQLite's checkpoint interval: {e}");
        }
        let healthy = Arc::new(AtomicBool::new(true));
        let health = Arc::clone(&healthy);
        let idle_time = Arc::new(AtomicBool::new(false));
        let wants_idle = Arc::clone(&idle_time);
        let thread = std::thread::Builder::new()
            .name("toolwarden-audit".into())
            .spawn(move || {
                if let Err(e) = rustix::process::setpriority_process(None, NICENESS) {
                    tracing::debug!("the audit writer keeps the calls' priority: {e}");
                }
                write_batches(&store, &redactor, &receiver, window, &health, &wants_idle);
            })?;
        Ok(Writer {
            sender: Some(sender),
            thread: Some(thread),
            healthy,
            idle_time,
        })
    }

    /// From its next batch on, the writer runs only when no other thread
    /// wants a CPU (see [`run_when_idle`]). For a host that serves one
    /// client whose calls come one at a time: there a commit must never
    /// delay an answer. Under a load that fills every core it would starve
    /// until callers wait for room in its queue (on two cores, governed
    /// calls per second halved and the HTTP p99 at 256 connections went
    /// from 67 ms to 940 ms), so a host that serves many callers keeps it
    /// at nice 10 alone.
    pub fn write_in_idle_time(&self) {
        self.idle_time.store(true, Ordering::Relaxed);
    }

    /// Whether the last commit succeeded: if not, callers should wait for
    /// theirs (see the module's docs).
    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    /// Queues the records; with `wait`, returns once they are committed.
    pub fn submit(
        &self,
        subject: &Arc<Subject>,
        events: Vec<Event>,
        execution: Option<ExecutionRow>,
        wait: bool,
    ) -> Result<(), String> {
        let (done, committed) = if wait {
            let (tx, rx) = sync_channel(1);
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let job = Job {
            subject: Arc::clone(subject),
            events,
            execution,
            ts_ms: now_ms(),
            done,
        };
        let sent = self.sender.as_ref().map(|s| s.send(job).is_ok());
        if sent != Some(true) {
            return Err("the audit writer has stopped".into());
        }
        match committed {
            Some(rx) => rx
                .recv()
                .unwrap_or_else(|_| Err("the audit writer stopped before the commit".into())),
            None => Ok(()),
        }
    }
}

impl Writer {
    /// Returns once everything queued before the call is committed.
    pub fn flush(&self) -> Result<(), String> {
        let nobody = Arc::new(Subject {
            call_id: Arc::from(""),
            session: Arc::from(""),
            tool: Arc::from(""),
        });
        self.submit(&nobody, Vec::new(), None, true)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the channel lets the thread commit what is queued and end.
        drop(self.sender.take());
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("the audit writer panicked; records queued at the end may be missing");
        }
    }
}

fn rows_of(job: &mut Job, redactor: &Redactor) -> Vec<NewAuditRow> {
    job.events
        .iter_mut()
        .map(|event| {
            match event {
                Event::Call { args, .. } => {
                    if let Some(masked) = redactor.masked(args) {
                        *args = Arc::new(masked);
                    }
                }
                Event::Outcome {
                    value: Some(value), ..
                }
                | Event::Question(crate::question::Asked {
                    answer: Some(crate::question::Answer::Accepted(value)),
                    ..
                }) => {
                    if let Some(masked) = redactor.masked(value) {
                        *value = masked;
                    }
                }
                _ => {}
            }
            NewAuditRow {
                ts_ms: job.ts_ms,
                call_id: Arc::clone(&job.subject.call_id),
                session: Arc::clone(&job.subject.session),
                tool: Arc::clone(&job.subject.tool),
                kind: Cow::Borrowed(event.kind()),
                data: redactor.masked_record(
                    serde_json::to_string(event)
                        .unwrap_or_else(|e| format!("{{\"unserializable\":\"{e}\"}}")),
                ),
            }
        })
        .collect()
}

/// Commits `rows` one at a time, each refused one replaced by an
/// `unrecordable` record (see the module's docs). The executions go with
/// the first commit. What a commit that fails otherwise leaves is kept in
/// `rows` and `executions` for the next batch.
fn append_one_by_one(
    store: &Store,
    rows: &mut Vec<NewAuditRow>,
    executions: &mut Vec<ExecutionRow>,
) -> Result<Option<Head>, StoreError> {
    let mut committed = 0;
    let mut head = None;
    let mut result = Ok(());
    for row in rows.iter() {
        let appended = match store.append(std::slice::from_ref(row), &record_hash, executions) {
            Err(refused) if refused.refuses_data() => {
                tracing::error!(
                    call_id = %row.call_id,
                    kind = %row.kind,
                    "the audit database refused a record for good; an `unrecordable` record \
                     stands in its place: {refused}"
                );
                store.append(&[unrecordable(row, &refused)], &record_hash, executions)
            }
            other => other,
        };
        match appended {
            Ok(new) => head = new.or(head),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
        executions.clear();
        committed += 1;
    }
    rows.drain(..committed);
    if result.is_ok() && !executions.is_empty() {
        result = store.append(&[], &record_hash, executions).map(drop);
        if result.is_ok() {
            executions.clear();
        }
    }
    result.map(|()| head)
}

/// What stands in the audit log for a record the database refused: its
/// kind, its size and the database's reason, never its content.
fn unrecordable(row: &NewAuditRow, refused: &StoreError) -> NewAuditRow {
    const MAX_REASON: usize = 512;
    let reason = crate::presentation::cut_to(refused.to_string(), MAX_REASON);
    NewAuditRow {
        ts_ms: row.ts_ms,
        call_id: Arc::clone(&row.call_id),
        session: Arc::clone(&row.session),
        tool: Arc::clone(&row.tool),
        kind: Cow::Borrowed("unrecordable"),
        data: serde_json::json!({
            "kind": row.kind,
            "bytes": row.data.len(),
            "refused": reason,
        })
        .to_string(),
    }
}

fn write_batches(
    store: &Store,
    redactor: &Redactor,
    receiver: &Receiver<Job>,
    window: Duration,
    healthy: &AtomicBool,
    wants_idle: &AtomicBool,
) {
    let mut in_idle_time = false;
    // Records of failed commits, kept for the next one.
    let mut kept: Vec<NewAuditRow> = Vec::new();
    let mut kept_executions: Vec<ExecutionRow> = Vec::new();
    let mut head = HeadKeeper::new(store, !window.is_zero());
    // Idle, the thread waits on the channel; busy, it sleeps through the
    // window instead, so that senders find nobody to wake (a wake is a
    // syscall and a context switch per call).
    while let Some(first) = head.next_job(receiver) {
        if !in_idle_time && wants_idle.load(Ordering::Relaxed) {
            in_idle_time = true;
            if let Err(e) = run_when_idle() {
                tracing::debug!("the audit writer stays in the usual scheduling class: {e}");
            }
        }
        if !window.is_zero() {
            std::thread::sleep(window);
        }
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match receiver.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let mut rows = std::mem::take(&mut kept);
        let mut executions = std::mem::take(&mut kept_executions);
        for job in &mut batch {
            rows.extend(rows_of(job, redactor));
            executions.extend(job.execution.take());
        }
        let result = match store.append(&rows, &record_hash, &executions) {
            Err(e) if e.refuses_data() => append_one_by_one(store, &mut rows, &mut executions),
            other => other,
        }
        .map(|new| head.committed(new))
        .map_err(|e| e.to_string());
        healthy.store(result.is_ok(), Ordering::Relaxed);
        if let Err(e) = &result {
            tracing::error!(
                records = rows.len(),
                executions = executions.len(),
                "cannot write to the audit log, kept for the next commit: {e}"
            );
            if rows.len() > MAX_KEPT {
                let lost = rows.len() - MAX_KEPT;
                rows.drain(..lost);
                tracing::error!("{lost} audit records dropped: the log stayed unwritable too long");
            }
            kept = rows;
            kept_executions = executions;
        }
        for job in batch {
            if let Some(done) = job.done {
                let _ = done.send(result.clone());
            }
        }
    }
    head.write_pending();
    if !kept.is_empty() {
        tracing::error!(
            "{} audit records could not be written before the host stopped",
            kept.len()
        );
    }
}

/// Puts the calling thread in Linux's `SCHED_IDLE` class: any thread that
/// wakes takes its CPU at once. At nice 10 alone, a woken MCP connection
/// (or its client) could still wait for the writer when both cores were
/// busy: over stdio, one round trip in 150 took over 500 µs; in
/// `SCHED_IDLE`, one in 1,500. There is no way back without privilege
/// (`CAP_SYS_NICE`), hence a one-way switch.
fn run_when_idle() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `param` is a valid `sched_param`; pid 0 is this thread.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
