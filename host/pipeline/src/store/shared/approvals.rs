//! The approval book in PostgreSQL: one conditional `UPDATE` consumes an
//! approval, so racing hosts cannot both win.

use super::{Shared, SharedError, wait};
use crate::store::approvals::{ApprovalRow, ApprovalState, COLUMNS, Consumed};
use tokio_postgres::{GenericClient, Row};

impl Shared {
    pub fn insert_approval(&self, row: &ApprovalRow) -> Result<(), SharedError> {
        let client = self.client()?;
        wait(insert_approval(&**client, row))
    }

    pub fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, SharedError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            &format!("SELECT {COLUMNS} FROM approvals WHERE id = $1"),
            &[&id],
        ))?;
        row.as_ref().map(from_row).transpose()
    }

    pub fn matching_approval(
        &self,
        expected: &ApprovalRow,
        now_ms: i64,
    ) -> Result<Option<ApprovalRow>, SharedError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            &format!(
                "SELECT {COLUMNS} FROM approvals WHERE tool = $1 AND args_digest = $2 \
                 AND session = $3 AND plugin_sha256 = $4 AND grant_fs = $5 AND policy_hash = $6 \
                 AND state IN ('pending', 'approved', 'denied') AND expires_ms > $7 \
                 AND grant_net = $8 AND profile = $9 \
                 ORDER BY state = 'approved' DESC, created_ms DESC LIMIT 1"
            ),
            &[
                &expected.tool,
                &expected.args_digest,
                &expected.session,
                &expected.plugin_sha256,
                &expected.grant_fs,
                &expected.policy_hash,
                &now_ms,
                &expected.grant_net,
                &expected.profile,
            ],
        ))?;
        row.as_ref().map(from_row).transpose()
    }

    pub fn approvals(&self) -> Result<Vec<ApprovalRow>, SharedError> {
        let client = self.client()?;
        let rows = wait(client.query(
            &format!("SELECT {COLUMNS} FROM approvals ORDER BY created_ms DESC, id DESC"),
            &[],
        ))?;
        rows.iter().map(from_row).collect()
    }

    pub fn approvals_version(&self) -> Result<i64, SharedError> {
        let client = self.client()?;
        let row = wait(client.query_one(
            "SELECT (count(*) + coalesce(max(created_ms), 0) + coalesce(sum(decided_ms), 0) \
             + coalesce(sum(consumed_ms), 0) + count(preview) \
             + (SELECT count(*) FROM approval_votes))::BIGINT FROM approvals",
            &[],
        ))?;
        Ok(row.try_get(0)?)
    }

    pub fn set_preview(&self, id: &str, preview: &str, bound: &str) -> Result<(), SharedError> {
        let client = self.client()?;
        wait(client.execute(
            "UPDATE approvals SET preview = $2, bound_files = $3 WHERE id = $1 AND state = 'pending'",
            &[&id, &preview, &bound],
        ))?;
        Ok(())
    }

    pub fn retire_approval(&self, id: &str, now: i64) -> Result<(), SharedError> {
        let client = self.client()?;
        wait(client.execute(
            "UPDATE approvals SET expires_ms = least(expires_ms, $2) WHERE id = $1",
            &[&id, &now],
        ))?;
        Ok(())
    }

    /// Consumes approval `id` for the call `expected` describes, at most
    /// once across every host sharing the database: the `UPDATE` takes the
    /// row only while it is approved, unexpired and bound to this call.
    pub fn consume_approval(
        &self,
        id: &str,
        expected: &ApprovalRow,
        now_ms: i64,
    ) -> Result<Consumed, SharedError> {
        let client = self.client()?;
        let taken = wait(client.query_opt(
            &format!(
                "UPDATE approvals SET state = 'consumed', consumed_ms = $2 WHERE id = $1 \
                 AND state = 'approved' AND expires_ms > $2 AND tool = $3 AND args_digest = $4 \
                 AND session = $5 AND plugin_sha256 = $6 AND grant_fs = $7 AND grant_net = $8 \
                 AND policy_hash = $9 AND profile = $10 RETURNING {COLUMNS}"
            ),
            &[
                &id,
                &now_ms,
                &expected.tool,
                &expected.args_digest,
                &expected.session,
                &expected.plugin_sha256,
                &expected.grant_fs,
                &expected.grant_net,
                &expected.policy_hash,
                &expected.profile,
            ],
        ))?;
        if let Some(row) = taken {
            return Ok(Consumed::Now(from_row(&row)?));
        }
        drop(client);
        // Not taken: say why, from the row as it is now.
        Ok(match self.approval(id)? {
            None => Consumed::Missing,
            Some(row) if row.state != ApprovalState::Approved => Consumed::NotApproved(row),
            Some(row) if row.expires_ms <= now_ms => Consumed::Expired(row),
            Some(row) => match row.first_difference(expected) {
                Some(binding) => Consumed::Mismatch(binding),
                // Approved and fitting now, yet not taken a moment ago: it
                // changed in between; the caller asks again.
                None => Consumed::NotApproved(row),
            },
        })
    }
}

pub(super) async fn insert_approval(
    client: &impl GenericClient,
    row: &ApprovalRow,
) -> Result<(), SharedError> {
    client
        .execute(
            &format!(
                "INSERT INTO approvals ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
                 $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)"
            ),
            &[
                &row.id,
                &row.tool,
                &row.args,
                &row.args_digest,
                &row.session,
                &row.plugin_sha256,
                &row.grant_fs,
                &row.policy_hash,
                &row.reason,
                &row.state.as_str(),
                &row.decided_reason,
                &row.created_ms,
                &row.expires_ms,
                &row.decided_ms,
                &row.consumed_ms,
                &row.grant_net,
                &row.decided_by,
                &row.rules,
                &row.profile,
                &row.preview,
                &row.bound_files,
                &row.caller,
                &row.quorum,
                &row.self_approval,
            ],
        )
        .await?;
    Ok(())
}

pub(super) fn from_row(r: &Row) -> Result<ApprovalRow, SharedError> {
    Ok(ApprovalRow {
        id: r.try_get(0)?,
        tool: r.try_get(1)?,
        args: r.try_get(2)?,
        args_digest: r.try_get(3)?,
        session: r.try_get(4)?,
        plugin_sha256: r.try_get(5)?,
        grant_fs: r.try_get(6)?,
        policy_hash: r.try_get(7)?,
        reason: r.try_get(8)?,
        state: ApprovalState::parse(r.try_get(9)?),
        decided_reason: r.try_get(10)?,
        created_ms: r.try_get(11)?,
        expires_ms: r.try_get(12)?,
        decided_ms: r.try_get(13)?,
        consumed_ms: r.try_get(14)?,
        grant_net: r.try_get(15)?,
        decided_by: r.try_get(16)?,
        rules: r.try_get(17)?,
        profile: r.try_get(18)?,
        preview: r.try_get(19)?,
        bound_files: r.try_get(20)?,
        caller: r.try_get(21)?,
        quorum: r.try_get(22)?,
        self_approval: r.try_get(23)?,
    })
}
