//! Taking old records out of the audit log: `audit export` and
//! `[audit.retention]`. A cut writes the records it takes to a segment
//! (checking every link and hash on the way), has the segment put on disk,
//! and only then removes them, moves the checkpoint and appends a `cut`
//! record to the chain, in one transaction; the rest of the chain verifies
//! from the checkpoint. Retention runs the same cut on a thread of its own,
//! on its own connection, so appends never wait for it. Never removes a
//! record that was not first written out (or, with no archive configured,
//! that retention was not told to drop).

use super::segment::{SegmentHeader, SegmentWriter};
use super::{Verification, Walk, record_hash};
use crate::settings::SettingError;
use crate::store::{Checkpoint, NewAuditRow, Store, StoreError};
use serde::Deserialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// The kind of the record a cut appends.
pub const CUT_KIND: &str = "cut";

/// Which records a cut takes out of the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Every record up to the last one older than `ms` (milliseconds
    /// since the epoch).
    Before { ms: i64 },
    /// Every record but the newest `records`.
    Keeping { records: i64 },
}

/// Why records could not be taken out; nothing was removed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("cannot write the export: {0}")]
    Write(#[from] std::io::Error),
    #[error("the audit log is broken at record {seq}: {problem}")]
    Broken { seq: i64, problem: String },
    #[error("the audit log changed while it was exported (another process cut it)")]
    Moved,
}

impl ExportError {
    pub fn code(&self) -> &'static str {
        match self {
            ExportError::Store(_) => "STATE",
            ExportError::Write(_) => "EXPORT_WRITE",
            ExportError::Broken { .. } => "AUDIT_BROKEN",
            ExportError::Moved => "AUDIT_MOVED",
        }
    }
}

/// Takes the records `cut` selects out of `store`: writes them to `out` as
/// a segment, has `sync` put it on disk, then removes them. `Ok(None)`:
/// `cut` selects no record.
pub(super) fn cut(
    store: &Store,
    cut: Cut,
    out: &mut dyn Write,
    sync: &dyn Fn() -> std::io::Result<()>,
    reason: &str,
) -> Result<Option<SegmentHeader>, ExportError> {
    let through = match cut {
        Cut::Before { ms } => store.audit_last_before(ms)?,
        Cut::Keeping { records } => store.audit_back_from_end(records)?,
    };
    match through {
        Some((seq, hash)) => {
            cut_through(store, Checkpoint { seq, hash }, out, sync, reason).map(Some)
        }
        None => Ok(None),
    }
}

fn cut_through(
    store: &Store,
    through: Checkpoint,
    out: &mut dyn Write,
    sync: &dyn Fn() -> std::io::Result<()>,
    reason: &str,
) -> Result<SegmentHeader, ExportError> {
    let base = store
        .audit_checkpoint()?
        .unwrap_or_else(Checkpoint::genesis);
    let first = base.seq + 1;
    let header = SegmentHeader::new(first, base.hash.clone(), through.seq, through.hash.clone());
    let mut writer = SegmentWriter::start(std::io::BufWriter::new(out), &header)?;
    let mut walk = Walk::after(base, true);
    let mut written = Ok(());
    store.scan_audit(first, Some(through.seq), &mut |row| {
        walk.step(&row, None, None)?;
        written = writer.record(&row);
        match written {
            Ok(()) => std::ops::ControlFlow::Continue(()),
            Err(_) => std::ops::ControlFlow::Break(()),
        }
    })?;
    written?;
    if let Some(Verification::Broken { seq, problem }) = walk.broken {
        return Err(ExportError::Broken { seq, problem });
    }
    if walk.expected != through.seq + 1 {
        return Err(ExportError::Broken {
            seq: walk.expected,
            problem: "the record is missing".into(),
        });
    }
    writer.finish()?;
    sync()?;
    let note = NewAuditRow {
        ts_ms: crate::store::now_ms(),
        call_id: Arc::from(""),
        session: Arc::from(""),
        tool: Arc::from(""),
        kind: std::borrow::Cow::Borrowed(CUT_KIND),
        data: serde_json::json!({
            "through_seq": through.seq,
            "through_hash": through.hash,
            "records": header.records,
            "reason": reason,
        })
        .to_string(),
    };
    if !store.cut_audit(&through, &note, &record_hash)? {
        return Err(ExportError::Moved);
    }
    Ok(header)
}

/// The `[audit.retention]` table as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionSection {
    max_age: Option<String>,
    max_records: Option<u64>,
    archive_dir: Option<PathBuf>,
    interval: Option<String>,
}

/// How long the audit log keeps records, and where those it stops keeping
/// go. With neither limit set, it keeps everything (the default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Retention {
    /// Records older than this (milliseconds) are taken out.
    pub max_age_ms: Option<i64>,
    /// At most about this many records are kept: a pass runs once the log
    /// holds a tenth more, so each pass moves a batch, not one record.
    pub max_records: Option<i64>,
    /// Where taken-out records are written first, a segment per pass that
    /// `audit verify --file` checks; without it they are dropped.
    pub archive_dir: Option<PathBuf>,
    /// How often a running host checks (it also checks when it starts).
    pub interval: Duration,
}

impl RetentionSection {
    pub fn resolve(self) -> Result<Retention, SettingError> {
        let age = |key: &str, text: Option<String>| -> Result<Option<i64>, SettingError> {
            text.map(|text| {
                crate::when::age_ms(&text)
                    .filter(|ms| *ms > 0)
                    .ok_or_else(|| {
                        SettingError::new(
                            format!("`[audit.retention] {key} = \"{text}\"` is not a duration"),
                            "write it as 30s, 10m, 2h or 90d",
                        )
                    })
            })
            .transpose()
        };
        let max_records = match self.max_records {
            Some(0) => {
                return Err(SettingError::new(
                    "`[audit.retention] max_records = 0` would keep nothing",
                    "keep at least 1 record, or leave max_records out",
                ));
            }
            Some(n) => Some(i64::try_from(n).unwrap_or(i64::MAX)),
            None => None,
        };
        let interval = age("interval", self.interval)?.unwrap_or(60_000);
        Ok(Retention {
            max_age_ms: age("max_age", self.max_age)?,
            max_records,
            archive_dir: self.archive_dir,
            interval: Duration::from_millis(interval.unsigned_abs()),
        })
    }
}

impl Retention {
    fn is_set(&self) -> bool {
        self.max_age_ms.is_some() || self.max_records.is_some()
    }

    /// One pass: takes out what the limits no longer keep. `Ok` lists the
    /// segments taken out.
    pub(super) fn pass(&self, store: &Store) -> Result<Vec<SegmentHeader>, ExportError> {
        let mut taken = Vec::new();
        if let Some(age) = self.max_age_ms {
            let ms = crate::store::now_ms().saturating_sub(age);
            taken.extend(self.take(store, Cut::Before { ms })?);
        }
        if let Some(keep) = self.max_records
            && store
                .audit_back_from_end(keep.saturating_add(keep / 10).saturating_add(1))?
                .is_some()
        {
            taken.extend(self.take(store, Cut::Keeping { records: keep })?);
        }
        Ok(taken)
    }

    fn take(&self, store: &Store, selected: Cut) -> Result<Option<SegmentHeader>, ExportError> {
        let Some(dir) = &self.archive_dir else {
            return cut(
                store,
                selected,
                &mut std::io::sink(),
                &|| Ok(()),
                "retention",
            );
        };
        // Written under a name of its own (two takes of one pass may fall
        // in the same millisecond), then named for the records it holds,
        // once the cut knows them: seqs never repeat, so the names never
        // collide, and they sort in chain order. After a crash between the
        // two, the `audit-taking-*` file holds a whole segment.
        static TAKES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let taking = dir.join(format!(
            "audit-taking-{}-{}-{}.jsonl",
            crate::store::now_ms(),
            std::process::id(),
            TAKES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let mut out = crate::private_file::options()
            .write(true)
            .create_new(true)
            .open(&taking)?;
        let synced = out.try_clone()?;
        let taken = cut(
            store,
            selected,
            &mut out,
            &|| sync_with_dir(&synced, dir),
            "retention",
        );
        match &taken {
            Ok(Some(header)) => {
                let named = dir.join(segment_file_name(header));
                let renamed = std::fs::rename(&taking, &named)
                    .and_then(|()| std::fs::File::open(dir)?.sync_all());
                if let Err(e) = renamed {
                    tracing::warn!(
                        "the archived segment keeps the name `{}`: {e}",
                        taking.display()
                    );
                }
            }
            _ => {
                let _ = std::fs::remove_file(&taking);
            }
        }
        taken
    }
}

/// An archived segment's file name: its first and last seq, zero-padded so
/// that names sort as the chain runs.
fn segment_file_name(header: &SegmentHeader) -> String {
    format!(
        "audit-{:012}-{:012}.jsonl",
        header.first_seq, header.last_seq
    )
}

/// The file's bytes and its name in `dir`, both on disk.
fn sync_with_dir(file: &std::fs::File, dir: &Path) -> std::io::Result<()> {
    file.sync_all()?;
    std::fs::File::open(dir)?.sync_all()
}

/// Runs retention passes on a thread of its own until dropped.
#[derive(Debug)]
pub(super) struct Pruner {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Pruner {
    /// `None` when `retention` sets no limit.
    pub(super) fn start(store: Store, retention: Retention) -> std::io::Result<Option<Pruner>> {
        if !retention.is_set() {
            return Ok(None);
        }
        if let Some(dir) = &retention.archive_dir {
            crate::private_file::create_dir(dir)?;
        }
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("audit-retention".into())
            .spawn(move || {
                loop {
                    match retention.pass(&store) {
                        Ok(taken) => {
                            for segment in taken {
                                tracing::info!(
                                    first = segment.first_seq,
                                    last = segment.last_seq,
                                    "audit retention took {} records out",
                                    segment.records
                                );
                            }
                        }
                        Err(e) => tracing::warn!("audit retention: {e}; nothing was removed"),
                    }
                    match stopped.recv_timeout(retention.interval) {
                        Err(RecvTimeoutError::Timeout) => continue,
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
            })?;
        Ok(Some(Pruner {
            stop: Some(stop),
            thread: Some(thread),
        }))
    }
}

impl Drop for Pruner {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
