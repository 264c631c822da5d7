//! The shared audit chain and executions: the same operations as the SQLite
//! `audit` table's, in PostgreSQL. Appends and cuts hold one advisory lock
//! for their transaction, so the tail each reads is the chain's tail when
//! it commits, whichever host appends.

use super::executions::execution_group;
use super::{Connection, Shared, SharedError, wait};
use crate::store::ExecutionRow;
use crate::store::audit::{AuditFilter, AuditRow, Checkpoint, GENESIS, NewAuditRow};
use crate::store::executions::ExecutionGroup;
use futures::TryStreamExt;
use std::ops::ControlFlow;
use tokio_postgres::types::ToSql;
use tokio_postgres::{GenericClient, Row, Statement};

/// Taken by every transaction that extends or cuts the chain.
pub(super) const CHAIN_LOCK: &str =
    "SELECT pg_advisory_xact_lock(hashtext('toolwarden audit chain'))";

const INSERT_AUDIT: &str = "INSERT INTO audit \
    (seq, ts_ms, call_id, session, tool, kind, data, prev_hash, hash) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";

/// A batch's executions in one statement, so the triggers that count them
/// run once per batch.
const INSERT_EXECUTIONS: &str = "INSERT INTO executions \
    (session, tool, args_digest, duration_us, ts_ms) \
    SELECT * FROM unnest($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::BIGINT[], $5::BIGINT[])";

/// The budget units a batch's executions held.
const RELEASE_ALL: &str = "DELETE FROM budget_reservations WHERE id = ANY($1::BIGINT[])";

const MOVE_HEAD: &str = "INSERT INTO audit_head (id, seq, hash) VALUES (1, $1, $2) \
    ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash";

const AUDIT_COLUMNS: &str = "seq, ts_ms, call_id, session, tool, kind, data, prev_hash, hash";

/// The filter in PostgreSQL, over the parameters since ($1), tool ($2),
/// call id ($3), limit ($4), until ($5) and session ($6): the tree of calls
/// under a call, then the condition a record of the selection meets.
pub(super) const TREE: &str = "WITH RECURSIVE tree(id) AS (\
       SELECT $3::TEXT WHERE $3::TEXT IS NOT NULL \
       UNION SELECT a.call_id FROM audit a JOIN tree t \
         ON a.kind = 'call' AND (a.data::jsonb ->> 'parent') = t.id)";
pub(super) const MATCHES: &str = "($1::BIGINT IS NULL OR ts_ms >= $1) AND ($2::TEXT IS NULL OR tool = $2) \
     AND ($3::TEXT IS NULL OR call_id IN (SELECT id FROM tree)) \
     AND ($5::BIGINT IS NULL OR ts_ms < $5) AND ($6::TEXT IS NULL OR session = $6)";

/// The parameters of [`TREE`] and [`MATCHES`], in order.
pub(super) fn args(filter: &AuditFilter) -> [&(dyn ToSql + Sync); 6] {
    [
        &filter.since_ms,
        &filter.tool,
        &filter.call_id,
        &filter.limit,
        &filter.until_ms,
        &filter.session,
    ]
}

impl Shared {
    /// Appends `rows` chained after the chain's tail, and `executions`, in
    /// one transaction; the new tail (seq, hash).
    pub fn append(
        &self,
        rows: &[NewAuditRow],
        hash: &dyn Fn(i64, &NewAuditRow, &str) -> String,
        executions: &[ExecutionRow],
    ) -> Result<(i64, String), SharedError> {
        let mut client = self.client()?;
        wait(async {
            let writes = Writes::prepare(&mut client).await?;
            let tx = client.transaction().await?;
            tx.execute(CHAIN_LOCK, &[]).await?;
            let (mut seq, mut prev) = tail(&tx).await?;
            let mut chained = Vec::with_capacity(rows.len());
            for row in rows {
                seq += 1;
                let digest = hash(seq, row, &prev);
                chained.push(Chained {
                    seq,
                    row,
                    prev_hash: std::mem::replace(&mut prev, digest.clone()),
                    hash: digest,
                });
            }
            writes.chain(&tx, &chained).await?;
            writes.executions(&tx, executions).await?;
            tx.commit().await?;
            Ok((seq, prev))
        })
    }

    pub fn audit_checkpoint(&self) -> Result<Option<Checkpoint>, SharedError> {
        let client = self.client()?;
        wait(checkpoint(&**client))
    }

    /// The shared chain's head as the last append left it: (seq, hash).
    pub fn audit_head(&self) -> Result<Option<(i64, String)>, SharedError> {
        let client = self.client()?;
        wait(head(&**client))
    }

    /// (seq, hash) of the first record `sql` (with one BIGINT parameter) finds.
    pub fn seq_and_hash(
        &self,
        sql: &str,
        param: i64,
    ) -> Result<Option<(i64, String)>, SharedError> {
        let client = self.client()?;
        let row = wait(client.query_opt(sql, &[&param]))?;
        row.map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).transpose()
    }

    /// Hands `visit` every record from `from` through `through`, streamed.
    pub fn scan_audit(
        &self,
        from: i64,
        through: Option<i64>,
        visit: &mut dyn FnMut(AuditRow) -> ControlFlow<()>,
    ) -> Result<(), SharedError> {
        let client = self.client()?;
        wait(async {
            let params: [&(dyn ToSql + Sync); 2] = [&from, &through];
            let rows = client
                .query_raw(
                    &format!(
                        "SELECT {AUDIT_COLUMNS} FROM audit \
                         WHERE seq >= $1 AND ($2::BIGINT IS NULL OR seq <= $2) ORDER BY seq"
                    ),
                    params,
                )
                .await?;
            futures::pin_mut!(rows);
            while let Some(row) = rows.try_next().await? {
                if visit(audit_row(&row)?).is_break() {
                    break;
                }
            }
            Ok(())
        })
    }

    /// Removes the records through `through` if its hash is still
    /// `through.hash`, moves the checkpoint and appends `note`; the new tail,
    /// or `None` when the record there is not the one expected.
    pub fn cut_audit(
        &self,
        through: &Checkpoint,
        note: &NewAuditRow,
        hash: &dyn Fn(i64, &NewAuditRow, &str) -> String,
    ) -> Result<Option<(i64, String)>, SharedError> {
        let mut client = self.client()?;
        wait(async {
            let writes = Writes::prepare(&mut client).await?;
            let tx = client.transaction().await?;
            tx.execute(CHAIN_LOCK, &[]).await?;
            let there = tx
                .query_opt("SELECT hash FROM audit WHERE seq = $1", &[&through.seq])
                .await?
                .map(|r| r.try_get::<_, String>(0))
                .transpose()?;
            if there.as_deref() != Some(through.hash.as_str()) {
                return Ok(None);
            }
            let (last, prev) = tail(&tx).await?;
            let seq = last + 1;
            let digest = hash(seq, note, &prev);
            tx.execute("DELETE FROM audit WHERE seq <= $1", &[&through.seq])
                .await?;
            tx.execute(
                "INSERT INTO audit_checkpoint (id, seq, hash, ts_ms) VALUES (1, $1, $2, $3) \
                 ON CONFLICT (id) DO UPDATE SET seq = $1, hash = $2, ts_ms = $3",
                &[&through.seq, &through.hash, &note.ts_ms],
            )
            .await?;
            let chained = Chained {
                seq,
                row: note,
                prev_hash: prev,
                hash: digest,
            };
            writes.chain(&tx, std::slice::from_ref(&chained)).await?;
            tx.commit().await?;
            Ok(Some((seq, chained.hash)))
        })
    }

    /// Records matching `filter` (see the SQLite twin for what each means).
    pub fn audit_rows(&self, filter: &AuditFilter) -> Result<Vec<AuditRow>, SharedError> {
        let client = self.client()?;
        let order = if filter.newest_first { "DESC" } else { "ASC" };
        let rows = wait(client.query(
            &format!(
                "{TREE} SELECT {AUDIT_COLUMNS} FROM audit \
                 WHERE {MATCHES} ORDER BY seq {order} LIMIT $4::BIGINT"
            ),
            &args(filter),
        ))?;
        rows.iter().map(audit_row).collect()
    }

    pub fn session_executions(&self, session: &str) -> Result<Vec<ExecutionGroup>, SharedError> {
        let client = self.client()?;
        let rows = wait(client.query(
            "SELECT tool, args_digest, count(*)::BIGINT, coalesce(sum(duration_us), 0)::BIGINT \
             FROM executions WHERE session = $1 GROUP BY tool, args_digest",
            &[&session],
        ))?;
        rows.iter().map(execution_group).collect()
    }
}

/// A record with its place in the chain.
pub(super) struct Chained<'a> {
    pub seq: i64,
    pub row: &'a NewAuditRow,
    pub prev_hash: String,
    pub hash: String,
}

/// The statements that store records and executions, prepared once per
/// connection. The rows of a batch go out together, pipelined, so a batch
/// of any size costs about one round trip.
pub(super) struct Writes {
    record: Statement,
    execution: Statement,
    unreserve: Statement,
    head: Statement,
}

impl Writes {
    /// The statements, prepared on `conn` the first time.
    pub(super) async fn prepare(conn: &mut Connection) -> Result<Writes, SharedError> {
        Ok(Writes {
            record: conn.statement(INSERT_AUDIT).await?,
            execution: conn.statement(INSERT_EXECUTIONS).await?,
            unreserve: conn.statement(RELEASE_ALL).await?,
            head: conn.statement(MOVE_HEAD).await?,
        })
    }

    /// Stores `records` and moves the shared head to the last of them, in
    /// one round trip: every write that extends the chain goes through here.
    pub(super) async fn chain(
        &self,
        client: &impl GenericClient,
        records: &[Chained<'_>],
    ) -> Result<(), SharedError> {
        let Some(last) = records.last() else {
            return Ok(());
        };
        futures::try_join!(
            self.records(client, records),
            self.head(client, last.seq, &last.hash)
        )?;
        Ok(())
    }

    /// Moves the shared head to (`seq`, `hash`).
    pub(super) async fn head(
        &self,
        client: &impl GenericClient,
        seq: i64,
        hash: &str,
    ) -> Result<(), SharedError> {
        client.execute(&self.head, &[&seq, &hash]).await?;
        Ok(())
    }

    /// Stores each record as given (its hash already computed).
    async fn records(
        &self,
        client: &impl GenericClient,
        records: &[Chained<'_>],
    ) -> Result<(), SharedError> {
        futures::future::try_join_all(records.iter().map(|c| async move {
            let (call_id, session, tool, kind): (&str, &str, &str, &str) =
                (&c.row.call_id, &c.row.session, &c.row.tool, &c.row.kind);
            let params: [&(dyn ToSql + Sync); 9] = [
                &c.seq,
                &c.row.ts_ms,
                &call_id,
                &session,
                &tool,
                &kind,
                &c.row.data,
                &c.prev_hash,
                &c.hash,
            ];
            client.execute_raw(&self.record, params).await
        }))
        .await?;
        Ok(())
    }

    /// Stores executions; the budget unit each held leaves the store with it.
    pub(super) async fn executions(
        &self,
        client: &impl GenericClient,
        executions: &[ExecutionRow],
    ) -> Result<(), SharedError> {
        if executions.is_empty() {
            return Ok(());
        }
        let column = |field: fn(&ExecutionRow) -> &str| -> Vec<&str> {
            executions.iter().map(field).collect()
        };
        let (sessions, tools, digests) = (
            column(|e| &e.session),
            column(|e| &e.tool),
            column(|e| &e.args_digest),
        );
        let durations: Vec<i64> = executions.iter().map(|e| e.duration_us).collect();
        let times: Vec<i64> = executions.iter().map(|e| e.ts_ms).collect();
        let units: Vec<i64> = executions.iter().filter_map(|e| e.reservation).collect();
        let stored: [&(dyn ToSql + Sync); 5] = [&sessions, &tools, &digests, &durations, &times];
        let released: [&(dyn ToSql + Sync); 1] = [&units];
        futures::try_join!(
            client.execute_raw(&self.execution, stored),
            client.execute_raw(&self.unreserve, released),
        )?;
        Ok(())
    }
}

/// The chain's last record as `client` sees it; with none left, where a cut
/// left it; with neither, its start.
/// Where the next record goes: after the head (so a tail cut from the
/// table stays a gap `audit verify` shows), or, before the first append,
/// after the last record or where a cut left the chain.
async fn tail(client: &impl GenericClient) -> Result<(i64, String), SharedError> {
    if let Some(head) = head(client).await? {
        return Ok(head);
    }
    let last = client
        .query_opt("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1", &[])
        .await?;
    if let Some(row) = last {
        return Ok((row.try_get(0)?, row.try_get(1)?));
    }
    Ok(checkpoint(client)
        .await?
        .map_or_else(|| (0, GENESIS.to_owned()), |c| (c.seq, c.hash)))
}

async fn head(client: &impl GenericClient) -> Result<Option<(i64, String)>, SharedError> {
    let row = client
        .query_opt("SELECT seq, hash FROM audit_head WHERE id = 1", &[])
        .await?;
    row.map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).transpose()
}

pub(super) async fn checkpoint(
    client: &impl GenericClient,
) -> Result<Option<Checkpoint>, SharedError> {
    let row = client
        .query_opt("SELECT seq, hash FROM audit_checkpoint WHERE id = 1", &[])
        .await?;
    row.map(|r| {
        Ok(Checkpoint {
            seq: r.try_get(0)?,
            hash: r.try_get(1)?,
        })
    })
    .transpose()
}

fn audit_row(r: &Row) -> Result<AuditRow, SharedError> {
    Ok(AuditRow {
        seq: r.try_get(0)?,
        row: NewAuditRow {
            ts_ms: r.try_get(1)?,
            call_id: r.try_get::<_, &str>(2)?.into(),
            session: r.try_get::<_, &str>(3)?.into(),
            tool: r.try_get::<_, &str>(4)?.into(),
            kind: r.try_get::<_, String>(5)?.into(),
            data: r.try_get(6)?,
        },
        prev_hash: r.try_get(7)?,
        hash: r.try_get(8)?,
    })
}
