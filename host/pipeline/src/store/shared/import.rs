//! `toolwarden store migrate`: one host's SQLite state copied into an empty
//! shared store, in one transaction, every record with its own seq and
//! hash, so the chain (and the host's head file) verify as before.
//!
//! Copying into a store that already holds approvals, records or
//! executions is refused: two chains cannot be merged, and a second run
//! must not duplicate the first.

use super::audit::{CHAIN_LOCK, Chained, Writes, checkpoint};
use super::{Copied, Shared, SharedError, insert_approval, wait};
use crate::store::Store;
use std::ops::ControlFlow;

/// Rows copied per read of the source, so memory stays flat however long
/// the chain is.
const CHUNK: i64 = 10_000;

fn source(e: impl std::fmt::Display) -> SharedError {
    SharedError::Source(e.to_string())
}

impl Shared {
    /// Copies `from` (a store without a shared one: its SQLite file) here.
    pub fn import(&self, from: &Store) -> Result<Copied, SharedError> {
        let mut client = self.client()?;
        wait(async {
            let writes = Writes::prepare(&mut client).await?;
            let tx = client.transaction().await?;
            tx.execute(CHAIN_LOCK, &[]).await?;
            let held: i64 = tx
                .query_one(
                    "SELECT (SELECT count(*) FROM approvals) + (SELECT count(*) FROM audit) \
                     + (SELECT count(*) FROM executions) + (SELECT count(*) FROM audit_checkpoint)",
                    &[],
                )
                .await?
                .try_get(0)?;
            if held > 0 || checkpoint(&tx).await?.is_some() {
                return Err(SharedError::NotEmpty(format!(
                    "the shared store already holds {held} approvals, audit records or \
                     executions; nothing was copied. hint: migrate into an empty database (a \
                     second run would duplicate the first, and two audit chains cannot merge)"
                )));
            }
            let mut copied = Copied::default();
            for row in from.approvals().map_err(source)? {
                insert_approval(&tx, &row).await?;
                copied.approvals += 1;
            }
            for (id, vote) in from.votes(None).map_err(source)? {
                super::votes::insert_vote(&tx, &id, &vote, "DO NOTHING").await?;
            }
            let base = from.audit_checkpoint().map_err(source)?;
            if let Some(base) = &base {
                writes.head(&tx, base.seq, &base.hash).await?;
                tx.execute(
                    "INSERT INTO audit_checkpoint (id, seq, hash, ts_ms) VALUES (1, $1, $2, $3)",
                    &[&base.seq, &base.hash, &crate::store::now_ms()],
                )
                .await?;
            }
            let mut next = base.map_or(0, |b| b.seq + 1);
            loop {
                let mut chunk = Vec::new();
                from.scan_audit(next, Some(next + CHUNK - 1), &mut |row| {
                    chunk.push(row);
                    ControlFlow::Continue(())
                })
                .map_err(source)?;
                let Some(last) = chunk.last() else { break };
                next = last.seq + 1;
                let chained: Vec<_> = chunk
                    .iter()
                    .map(|record| Chained {
                        seq: record.seq,
                        row: &record.row,
                        prev_hash: record.prev_hash.clone(),
                        hash: record.hash.clone(),
                    })
                    .collect();
                writes.chain(&tx, &chained).await?;
                copied.records += chunk.len();
                copied.tail = Some((last.seq, last.hash.clone()));
            }
            let mut after = 0;
            loop {
                let chunk = from.executions_after(after, CHUNK).map_err(source)?;
                let Some((last, _)) = chunk.last() else { break };
                after = *last;
                let rows: Vec<_> = chunk.into_iter().map(|(_, row)| row).collect();
                writes.executions(&tx, &rows).await?;
                copied.executions += rows.len();
            }
            tx.commit().await?;
            Ok(copied)
        })
    }
}
