//! Who decided each approval, across hosts: the shared twin of the
//! store's `votes`. A decision locks its approval's row (`FOR UPDATE`) in
//! one transaction, so people deciding at once on several hosts are all
//! counted and the approval moves once.

use super::approvals::from_row;
use super::{Shared, SharedError, wait};
use crate::store::approvals::COLUMNS;
use crate::store::votes::{Decided, Vote, admissible, outcome};
use tokio_postgres::GenericClient;

const VOTE_COLUMNS: &str =
    "approval_id, approver, name, proof, channel, approve, reason, decided_ms";

impl Shared {
    pub fn decide_approval(
        &self,
        id: &str,
        vote: &Vote,
        now_ms: i64,
    ) -> Result<Decided, SharedError> {
        let mut client = self.client()?;
        wait(async {
            let tx = client.transaction().await?;
            let select = format!("SELECT {COLUMNS} FROM approvals WHERE id = $1");
            let row = tx
                .query_opt(&format!("{select} FOR UPDATE"), &[&id])
                .await?
                .as_ref()
                .map(from_row)
                .transpose()?;
            let row = match admissible(row, vote, now_ms) {
                Ok(row) => row,
                Err(answer) => return Ok(*answer),
            };
            let conflict = if vote.approve {
                "DO NOTHING"
            } else {
                "DO UPDATE SET approve = false, reason = excluded.reason, \
                 channel = excluded.channel, decided_ms = excluded.decided_ms"
            };
            let added = insert_vote(&tx, id, vote, conflict).await?;
            let have: i64 = tx
                .query_one(
                    "SELECT count(*) FROM approval_votes WHERE approval_id = $1 AND approve",
                    &[&id],
                )
                .await?
                .try_get(0)?;
            let answer = match outcome(&row, vote, have) {
                Some(state) => {
                    let row = tx
                        .query_one(
                            &format!(
                                "UPDATE approvals SET state = $2, decided_reason = $3, \
                                 decided_ms = $4, decided_by = $5 WHERE id = $1 RETURNING {COLUMNS}"
                            ),
                            &[&id, &state.as_str(), &vote.reason, &now_ms, &vote.channel],
                        )
                        .await?;
                    Decided::Now(from_row(&row)?)
                }
                None => Decided::Counted {
                    row,
                    have,
                    again: added == 0,
                },
            };
            tx.commit().await?;
            Ok(answer)
        })
    }

    pub fn votes(&self, id: Option<&str>) -> Result<Vec<(String, Vote)>, SharedError> {
        let client = self.client()?;
        let rows = wait(client.query(
            &format!(
                "SELECT {VOTE_COLUMNS} FROM approval_votes \
                 WHERE $1::TEXT IS NULL OR approval_id = $1 ORDER BY decided_ms, approver"
            ),
            &[&id],
        ))?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get(0)?,
                    Vote {
                        approver: r.try_get(1)?,
                        name: r.try_get(2)?,
                        proof: r.try_get(3)?,
                        channel: r.try_get(4)?,
                        approve: r.try_get(5)?,
                        reason: r.try_get(6)?,
                        decided_ms: r.try_get(7)?,
                    },
                ))
            })
            .collect()
    }
}

/// Adds `vote` on approval `id`; `conflict` says what an earlier vote of
/// the same approver becomes. How many rows it added.
pub(super) async fn insert_vote(
    client: &impl GenericClient,
    id: &str,
    vote: &Vote,
    conflict: &str,
) -> Result<u64, SharedError> {
    Ok(client
        .execute(
            &format!(
                "INSERT INTO approval_votes ({VOTE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (approval_id, approver) {conflict}"
            ),
            &[
                &id,
                &vote.approver,
                &vote.name,
                &vote.proof,
                &vote.channel,
                &vote.approve,
                &vote.reason,
                &vote.decided_ms,
            ],
        )
        .await?)
}
