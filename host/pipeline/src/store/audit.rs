//! The `audit` table: append-only, each row chained to the one before.
//! With a shared store the chain is in PostgreSQL (see `shared::audit`);
//! the head file stays with each host.

use super::head::Head;
use super::{ExecutionRow, Store, StoreError};
use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};
use std::borrow::Cow;
use std::ops::ControlFlow;
use std::sync::Arc;

/// The chain's first `prev_hash`.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A record to append; `seq`, `prev_hash` and `hash` are assigned on append.
/// The texts a call's rows have in common are shared between them.
#[derive(Clone, Debug)]
pub struct NewAuditRow {
    pub ts_ms: i64,
    pub call_id: Arc<str>,
    pub session: Arc<str>,
    pub tool: Arc<str>,
    pub kind: Cow<'static, str>,
    pub data: String,
}

/// A stored record.
#[derive(Clone, Debug)]
pub struct AuditRow {
    pub seq: i64,
    pub row: NewAuditRow,
    pub prev_hash: String,
    pub hash: String,
}

/// Where the chain continues from once its start was exported or pruned:
/// the last removed record's seq and hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    pub seq: i64,
    pub hash: String,
}

impl Checkpoint {
    /// Where a chain nothing was ever cut from starts: before record 1,
    /// on the genesis hash.
    pub fn genesis() -> Checkpoint {
        Checkpoint {
            seq: 0,
            hash: GENESIS.to_owned(),
        }
    }
}

/// Which records to read. Empty means all.
#[derive(Clone, Debug, Default)]
pub struct AuditFilter {
    pub since_ms: Option<i64>,
    /// Records older than this (milliseconds since the epoch) only.
    pub until_ms: Option<i64>,
    pub tool: Option<String>,
    pub session: Option<String>,
    /// This call and every call under it (those its tool made through
    /// `compose`, and theirs).
    pub call_id: Option<String>,
    pub limit: Option<i64>,
    /// The newest records first (and `limit` keeps the newest); chain
    /// order otherwise.
    pub newest_first: bool,
}

/// The filter in SQLite, over the parameters since (?1), tool (?2), call id
/// (?3), limit (?4), until (?5) and session (?6): the tree of calls under a
/// call, then the condition a record of the selection meets.
pub(super) const SQLITE_TREE: &str = "WITH RECURSIVE tree(id) AS (\
       SELECT ?3 WHERE ?3 IS NOT NULL \
       UNION SELECT a.call_id FROM audit a JOIN tree t \
         ON a.kind = 'call' AND json_extract(a.data, '$.parent') = t.id)";
pub(super) const SQLITE_MATCHES: &str = "(?1 IS NULL OR ts_ms >= ?1) AND (?2 IS NULL OR tool = ?2) \
     AND (?3 IS NULL OR call_id IN (SELECT id FROM tree)) \
     AND (?5 IS NULL OR ts_ms < ?5) AND (?6 IS NULL OR session = ?6)";

/// The parameters of [`SQLITE_TREE`] and [`SQLITE_MATCHES`], in order.
pub(super) fn sqlite_args(filter: &AuditFilter) -> [&dyn rusqlite::ToSql; 6] {
    [
        &filter.since_ms,
        &filter.tool,
        &filter.call_id,
        &filter.limit,
        &filter.until_ms,
        &filter.session,
    ]
}

impl Store {
    /// Appends audit `rows` and `executions` in one transaction (one
    /// commit, one fsync for however many calls the batch holds), chaining
    /// each audit row to the last stored one with `hash(seq, row, prev_hash)`.
    /// The chain's tail is read inside the transaction, so several processes
    /// appending to one file still build one chain. Returns the chain's new
    /// head when rows were appended, for the caller to write with
    /// [`Store::advance_head_or_warn`] when it chooses (the writer spaces
    /// those writes out).
    pub fn append(
        &self,
        rows: &[NewAuditRow],
        hash: &dyn Fn(i64, &NewAuditRow, &str) -> String,
        executions: &[ExecutionRow],
    ) -> Result<Option<Head>, StoreError> {
        let (seq, prev) = match &self.shared {
            Some(shared) => shared
                .append(rows, hash, executions)
                .map_err(|e| self.shared_error(e))?,
            None => self.append_here(rows, hash, executions)?,
        };
        Ok((!rows.is_empty()).then_some(Head {
            records: seq,
            hash: prev,
        }))
    }

    /// [`Store::append`] to the SQLite file; the chain's new tail.
    fn append_here(
        &self,
        rows: &[NewAuditRow],
        hash: &dyn Fn(i64, &NewAuditRow, &str) -> String,
        executions: &[ExecutionRow],
    ) -> Result<(i64, String), StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let (mut seq, mut prev) = self.tail(&tx)?;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO audit (seq, ts_ms, call_id, session, tool, kind, data, prev_hash, hash) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )
                .map_err(|e| self.error(e))?;
            for row in rows {
                seq += 1;
                let digest = hash(seq, row, &prev);
                insert
                    .execute(params![
                        seq,
                        row.ts_ms,
                        row.call_id,
                        row.session,
                        row.tool,
                        row.kind,
                        row.data,
                        prev,
                        digest
                    ])
                    .map_err(|e| self.error(e))?;
                prev = digest;
            }
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO executions (session, tool, args_digest, duration_us, ts_ms) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(|e| self.error(e))?;
            for e in executions {
                insert
                    .execute(params![
                        e.session,
                        e.tool,
                        e.args_digest,
                        e.duration_us,
                        e.ts_ms
                    ])
                    .map_err(|e| self.error(e))?;
            }
        }
        tx.commit().map_err(|e| self.error(e))?;
        Ok((seq, prev))
    }

    /// The chain's last record (seq and hash) as this transaction sees it;
    /// with no record left, where a cut left it; with neither, its start.
    fn tail(&self, tx: &Transaction) -> Result<(i64, String), StoreError> {
        // Cached: the writer asks this once per commit, and parsing the
        // statement each time cost more than running it.
        let last = tx
            .prepare_cached("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1")
            .and_then(|mut last| last.query_row([], |r| Ok((r.get(0)?, r.get(1)?))))
            .optional()
            .map_err(|e| self.error(e))?;
        match last {
            Some(last) => Ok(last),
            None => {
                let base = checkpoint_in(tx)
                    .map_err(|e| self.error(e))?
                    .unwrap_or_else(Checkpoint::genesis);
                Ok((base.seq, base.hash))
            }
        }
    }

    /// Where the chain continues from, if its start was cut off.
    pub fn audit_checkpoint(&self) -> Result<Option<Checkpoint>, StoreError> {
        if let Some(shared) = &self.shared {
            return shared.audit_checkpoint().map_err(|e| self.shared_error(e));
        }
        checkpoint_in(&self.conn()).map_err(|e| self.error(e))
    }

    /// The shared chain's head, kept in the shared store by every append
    /// (seq, hash); `None` for this host's own SQLite chain, whose head is
    /// the file `audit.head`.
    pub fn shared_audit_head(&self) -> Result<Option<(i64, String)>, StoreError> {
        match &self.shared {
            Some(shared) => shared.audit_head().map_err(|e| self.shared_error(e)),
            None => Ok(None),
        }
    }

    /// The last record older than `before_ms`, as (seq, hash).
    pub fn audit_last_before(&self, before_ms: i64) -> Result<Option<(i64, String)>, StoreError> {
        self.seq_and_hash(
            "SELECT seq, hash FROM audit WHERE ts_ms < ?1 ORDER BY seq DESC LIMIT 1",
            "SELECT seq, hash FROM audit WHERE ts_ms < $1 ORDER BY seq DESC LIMIT 1",
            before_ms,
        )
    }

    /// The record `back` places before the chain's last one, as (seq,
    /// hash): where a cut that keeps `back` records would end.
    pub fn audit_back_from_end(&self, back: i64) -> Result<Option<(i64, String)>, StoreError> {
        self.seq_and_hash(
            "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1 OFFSET ?1",
            "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1 OFFSET $1",
            back,
        )
    }

    /// The hash of record `seq`, if the log holds it.
    pub fn audit_hash_at(&self, seq: i64) -> Result<Option<String>, StoreError> {
        Ok(self
            .seq_and_hash(
                "SELECT seq, hash FROM audit WHERE seq = ?1",
                "SELECT seq, hash FROM audit WHERE seq = $1",
                seq,
            )?
            .map(|(_, hash)| hash))
    }

    /// The first (seq, hash) a query finds, written for each database.
    fn seq_and_hash(
        &self,
        sqlite: &str,
        postgres: &str,
        param: i64,
    ) -> Result<Option<(i64, String)>, StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .seq_and_hash(postgres, param)
                .map_err(|e| self.shared_error(e));
        }
        let sql = sqlite;
        self.conn()
            .query_row(sql, [param], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(|e| self.error(e))
    }

    /// Hands `visit` every record from seq `from` through `through` (all
    /// from `from` on when `None`), in chain order, one at a time: a
    /// million records are checked without holding them all.
    pub fn scan_audit(
        &self,
        from: i64,
        through: Option<i64>,
        visit: &mut dyn FnMut(AuditRow) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .scan_audit(from, through, visit)
                .map_err(|e| self.shared_error(e));
        }
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, ts_ms, call_id, session, tool, kind, data, prev_hash, hash FROM audit \
                 WHERE seq >= ?1 AND (?2 IS NULL OR seq <= ?2) ORDER BY seq",
            )
            .map_err(|e| self.error(e))?;
        let mut rows = stmt
            .query(params![from, through])
            .map_err(|e| self.error(e))?;
        while let Some(r) = rows.next().map_err(|e| self.error(e))? {
            let row = audit_row(r).map_err(|e| self.error(e))?;
            if visit(row).is_break() {
                break;
            }
        }
        Ok(())
    }

    /// Removes every record through `through` (whose hash must still be
    /// `through.hash`: what was exported is what goes), moves the
    /// checkpoint there and appends `note` (the record of the cut) to the
    /// chain, in one transaction. `Ok(false)`: the record there is not the
    /// one expected, and nothing changed.
    pub fn cut_audit(
        &self,
        through: &Checkpoint,
        note: &NewAuditRow,
        hash: &dyn Fn(i64, &NewAuditRow, &str) -> String,
    ) -> Result<bool, StoreError> {
        let tail = match &self.shared {
            Some(shared) => shared
                .cut_audit(through, note, hash)
                .map_err(|e| self.shared_error(e))?,
            None => self.cut_here(through, note, hash)?,
        };
        let Some((seq, digest)) = tail else {
            return Ok(false);
        };
        self.advance_head_or_warn(&Head {
            records: seq,
            hash: digest,
        });
        Ok(true)
    }

    /// [`Store::cut_audit`] in the SQLite file; the chain's new tail, or
    /// `None` when the record at `through` is not the one expected.
    fn cut_here(
        &self,
        through: &Checkpoint,
        note: &NewAuditRow,
        hash: &dyn Fn(i64, &NewAuditRow, &str) -> String,
    ) -> Result<Option<(i64, String)>, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let there: Option<String> = tx
            .query_row(
                "SELECT hash FROM audit WHERE seq = ?1",
                [through.seq],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.error(e))?;
        if there.as_deref() != Some(through.hash.as_str()) {
            return Ok(None);
        }
        let (last, prev) = self.tail(&tx)?;
        let seq = last + 1;
        let digest = hash(seq, note, &prev);
        tx.execute("DELETE FROM audit WHERE seq <= ?1", [through.seq])
            .map_err(|e| self.error(e))?;
        tx.execute(
            "INSERT INTO audit_checkpoint (id, seq, hash, ts_ms) VALUES (1, ?1, ?2, ?3) \
             ON CONFLICT (id) DO UPDATE SET seq = ?1, hash = ?2, ts_ms = ?3",
            params![through.seq, through.hash, note.ts_ms],
        )
        .map_err(|e| self.error(e))?;
        tx.execute(
            "INSERT INTO audit (seq, ts_ms, call_id, session, tool, kind, data, prev_hash, hash) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                seq,
                note.ts_ms,
                note.call_id,
                note.session,
                note.tool,
                note.kind,
                note.data,
                prev,
                digest
            ],
        )
        .map_err(|e| self.error(e))?;
        tx.commit().map_err(|e| self.error(e))?;
        Ok(Some((seq, digest)))
    }

    /// Records matching `filter`, in chain order.
    pub fn audit_rows(&self, filter: &AuditFilter) -> Result<Vec<AuditRow>, StoreError> {
        if let Some(shared) = &self.shared {
            return shared.audit_rows(filter).map_err(|e| self.shared_error(e));
        }
        let conn = self.conn();
        let order = if filter.newest_first { "DESC" } else { "ASC" };
        // A call's records come with those of every call its tool made
        // through `compose`, and theirs, down the tree.
        let mut stmt = conn
            .prepare_cached(&format!(
                "{SQLITE_TREE} \
                 SELECT seq, ts_ms, call_id, session, tool, kind, data, prev_hash, hash FROM audit \
                 WHERE {SQLITE_MATCHES} ORDER BY seq {order} LIMIT coalesce(?4, -1)"
            ))
            .map_err(|e| self.error(e))?;
        let rows = stmt
            .query_map(sqlite_args(filter), audit_row)
            .map_err(|e| self.error(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.error(e))
    }
}

fn checkpoint_in(conn: &rusqlite::Connection) -> rusqlite::Result<Option<Checkpoint>> {
    conn.query_row(
        "SELECT seq, hash FROM audit_checkpoint WHERE id = 1",
        [],
        |r| {
            Ok(Checkpoint {
                seq: r.get(0)?,
                hash: r.get(1)?,
            })
        },
    )
    .optional()
}

fn audit_row(r: &rusqlite::Row) -> rusqlite::Result<AuditRow> {
    Ok(AuditRow {
        seq: r.get(0)?,
        row: NewAuditRow {
            ts_ms: r.get(1)?,
            call_id: r.get(2)?,
            session: r.get(3)?,
            tool: r.get(4)?,
            kind: r.get(5)?,
            data: r.get(6)?,
        },
        prev_hash: r.get(7)?,
        hash: r.get(8)?,
    })
}
