//! The `approvals` table. State moves pending -> approved | denied, and
//! approved -> consumed exactly once, inside one immediate transaction, so
//! two processes racing for the same approval cannot both win. With a
//! shared store the table is in PostgreSQL instead (see `shared`).

use super::{Store, StoreError};
use rusqlite::{OptionalExtension, Row, TransactionBehavior, params};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApprovalState {
    Pending,
    Approved,
    Denied,
    Consumed,
}

impl ApprovalState {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Approved => "approved",
            ApprovalState::Denied => "denied",
            ApprovalState::Consumed => "consumed",
        }
    }

    pub(super) fn parse(text: &str) -> ApprovalState {
        match text {
            "pending" => ApprovalState::Pending,
            "approved" => ApprovalState::Approved,
            "consumed" => ApprovalState::Consumed,
            // An unknown state can never be used: treat it as denied.
            _ => ApprovalState::Denied,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalRow {
    pub id: String,
    pub tool: String,
    pub args: String,
    pub args_digest: String,
    pub session: String,
    pub plugin_sha256: String,
    pub grant_fs: String,
    /// What the call may reach on the network, as [`crate::capability::Network`]
    /// reads (`none` for every approval from before network existed).
    pub grant_net: String,
    pub policy_hash: String,
    pub reason: String,
    pub state: ApprovalState,
    pub decided_reason: Option<String>,
    pub created_ms: i64,
    pub expires_ms: i64,
    pub decided_ms: Option<i64>,
    pub consumed_ms: Option<i64>,
    /// Who decided it (`cli`, `terminal`, `mcp`, `console`).
    pub decided_by: Option<String>,
    /// The numbers of the rules that matched when the policy asked.
    pub rules: String,
    /// The profile of the session that asked (`""`: none).
    pub profile: String,
    /// What the call would do, as the plugin previewed it (JSON of a
    /// [`crate::presentation::Rendered`]), once the preview ran.
    pub preview: Option<String>,
    /// Workspace files the approval holds to their content when it was
    /// asked: a JSON object of path -> SHA-256 (`null`: the file did not
    /// exist). `""`: none.
    pub bound_files: String,
    /// Who asked: the identity of the call's caller as its channel proved
    /// it, or of the OS user of the process it came to (`""`: asked
    /// before approvers were recorded).
    pub caller: String,
    /// Distinct approvers needed before the call may run.
    pub quorum: i64,
    /// Whether the caller may be one of them.
    pub self_approval: bool,
}

/// What an attempt to consume an approval found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Consumed {
    /// It was approved, unexpired and bound to this call: now consumed.
    Now(ApprovalRow),
    Missing,
    /// Not in the approved state (pending, denied or already consumed).
    NotApproved(ApprovalRow),
    Expired(ApprovalRow),
    /// Approved, but for a different call (this binding differs first);
    /// left as it is.
    Mismatch(Binding),
}

/// What an approval is bound to, in the order differences are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    Tool,
    Arguments,
    Session,
    Plugin,
    Capability,
    Policy,
    Profile,
}

impl ApprovalRow {
    /// The first binding on which two approvals of calls differ, if any.
    pub fn first_difference(&self, other: &ApprovalRow) -> Option<Binding> {
        [
            (Binding::Tool, self.tool == other.tool),
            (Binding::Arguments, self.args_digest == other.args_digest),
            (Binding::Session, self.session == other.session),
            (Binding::Plugin, self.plugin_sha256 == other.plugin_sha256),
            (
                Binding::Capability,
                self.grant_fs == other.grant_fs && self.grant_net == other.grant_net,
            ),
            (Binding::Policy, self.policy_hash == other.policy_hash),
            (Binding::Profile, self.profile == other.profile),
        ]
        .into_iter()
        .find_map(|(binding, same)| (!same).then_some(binding))
    }
}

pub(super) const COLUMNS: &str = "id, tool, args, args_digest, session, plugin_sha256, grant_fs, policy_hash, reason, \
                       state, decided_reason, created_ms, expires_ms, decided_ms, consumed_ms, grant_net, decided_by, rules, profile, \
                       preview, bound_files, caller, quorum, self_approval";

pub(super) fn from_row(r: &Row<'_>) -> rusqlite::Result<ApprovalRow> {
    Ok(ApprovalRow {
        id: r.get(0)?,
        tool: r.get(1)?,
        args: r.get(2)?,
        args_digest: r.get(3)?,
        session: r.get(4)?,
        plugin_sha256: r.get(5)?,
        grant_fs: r.get(6)?,
        policy_hash: r.get(7)?,
        reason: r.get(8)?,
        state: ApprovalState::parse(&r.get::<_, String>(9)?),
        decided_reason: r.get(10)?,
        created_ms: r.get(11)?,
        expires_ms: r.get(12)?,
        decided_ms: r.get(13)?,
        consumed_ms: r.get(14)?,
        grant_net: r.get(15)?,
        decided_by: r.get(16)?,
        rules: r.get(17)?,
        profile: r.get(18)?,
        preview: r.get(19)?,
        bound_files: r.get(20)?,
        caller: r.get(21)?,
        quorum: r.get(22)?,
        self_approval: r.get(23)?,
    })
}

impl Store {
    pub fn insert_approval(&self, row: &ApprovalRow) -> Result<(), StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .insert_approval(row)
                .map_err(|e| self.shared_error(e));
        }
        self.conn()
            .execute(
                &format!("INSERT INTO approvals ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)"),
                params![
                    row.id,
                    row.tool,
                    row.args,
                    row.args_digest,
                    row.session,
                    row.plugin_sha256,
                    row.grant_fs,
                    row.policy_hash,
                    row.reason,
                    row.state.as_str(),
                    row.decided_reason,
                    row.created_ms,
                    row.expires_ms,
                    row.decided_ms,
                    row.consumed_ms,
                    row.grant_net,
                    row.decided_by,
                    row.rules,
                    row.profile,
                    row.preview,
                    row.bound_files,
                    row.caller,
                    row.quorum,
                    row.self_approval
                ],
            )
            .map(drop)
            .map_err(|e| self.error(e))
    }

    pub fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, StoreError> {
        if let Some(shared) = &self.shared {
            return shared.approval(id).map_err(|e| self.shared_error(e));
        }
        self.conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1"),
                [id],
                from_row,
            )
            .optional()
            .map_err(|e| self.error(e))
    }

    /// The newest pending, approved or denied unexpired approval bound to
    /// exactly the call `expected` describes (an approved one first).
    pub fn matching_approval(
        &self,
        expected: &ApprovalRow,
        now_ms: i64,
    ) -> Result<Option<ApprovalRow>, StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .matching_approval(expected, now_ms)
                .map_err(|e| self.shared_error(e));
        }
        self.conn()
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM approvals WHERE tool = ?1 AND args_digest = ?2 AND session = ?3 \
                     AND plugin_sha256 = ?4 AND grant_fs = ?5 AND policy_hash = ?6 \
                     AND state IN ('pending', 'approved', 'denied') AND expires_ms > ?7 AND grant_net = ?8 AND profile = ?9 \
                     ORDER BY state = 'approved' DESC, created_ms DESC LIMIT 1"
                ),
                params![
                    expected.tool,
                    expected.args_digest,
                    expected.session,
                    expected.plugin_sha256,
                    expected.grant_fs,
                    expected.policy_hash,
                    now_ms,
                    expected.grant_net,
                    expected.profile
                ],
                from_row,
            )
            .optional()
            .map_err(|e| self.error(e))
    }

    /// Every approval, newest first.
    pub fn approvals(&self) -> Result<Vec<ApprovalRow>, StoreError> {
        if let Some(shared) = &self.shared {
            return shared.approvals().map_err(|e| self.shared_error(e));
        }
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {COLUMNS} FROM approvals ORDER BY created_ms DESC, id DESC"
            ))
            .map_err(|e| self.error(e))?;
        let rows = stmt.query_map([], from_row).map_err(|e| self.error(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.error(e))
    }

    /// A number that changes whenever an approval is asked, decided or used:
    /// what a page watching the book compares, without reading it all.
    pub fn approvals_version(&self) -> Result<i64, StoreError> {
        if let Some(shared) = &self.shared {
            return shared.approvals_version().map_err(|e| self.shared_error(e));
        }
        self.conn()
            .query_row(
                "SELECT count(*) + coalesce(max(created_ms), 0) + coalesce(sum(decided_ms), 0) \
                 + coalesce(sum(consumed_ms), 0) + count(preview) \
                 + (SELECT count(*) FROM approval_votes) FROM approvals",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.error(e))
    }

    /// Attaches the preview of a pending approval's call, and the files
    /// it holds to their content.
    pub fn set_preview(
        &self,
        id: &str,
        preview: &str,
        bound_files: &str,
    ) -> Result<(), StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .set_preview(id, preview, bound_files)
                .map_err(|e| self.shared_error(e));
        }
        self.conn()
            .execute(
                "UPDATE approvals SET preview = ?2, bound_files = ?3 WHERE id = ?1 AND state = 'pending'",
                params![id, preview, bound_files],
            )
            .map(drop)
            .map_err(|e| self.error(e))
    }

    /// Makes an approval expire now (if it has not already), so that it is
    /// neither found for its call nor usable.
    pub fn retire_approval(&self, id: &str, now: i64) -> Result<(), StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .retire_approval(id, now)
                .map_err(|e| self.shared_error(e));
        }
        self.conn()
            .execute(
                "UPDATE approvals SET expires_ms = min(expires_ms, ?2) WHERE id = ?1",
                params![id, now],
            )
            .map(drop)
            .map_err(|e| self.error(e))
    }

    /// Consumes approval `id` for the call `expected` describes, at most once
    /// across every process sharing the database.
    pub fn consume_approval(
        &self,
        id: &str,
        expected: &ApprovalRow,
        now_ms: i64,
    ) -> Result<Consumed, StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .consume_approval(id, expected, now_ms)
                .map_err(|e| self.shared_error(e));
        }
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let Some(row) = tx
            .query_row(
                &format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1"),
                [id],
                from_row,
            )
            .optional()
            .map_err(|e| self.error(e))?
        else {
            return Ok(Consumed::Missing);
        };
        let outcome = if row.state != ApprovalState::Approved {
            Consumed::NotApproved(row)
        } else if row.expires_ms <= now_ms {
            Consumed::Expired(row)
        } else if let Some(binding) = row.first_difference(expected) {
            Consumed::Mismatch(binding)
        } else {
            tx.execute(
                "UPDATE approvals SET state = 'consumed', consumed_ms = ?2 WHERE id = ?1 AND state = 'approved'",
                params![id, now_ms],
            )
            .map_err(|e| self.error(e))?;
            Consumed::Now(ApprovalRow {
                state: ApprovalState::Consumed,
                consumed_ms: Some(now_ms),
                ..row
            })
        };
        tx.commit().map_err(|e| self.error(e))?;
        Ok(outcome)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::store) fn row() -> ApprovalRow {
        ApprovalRow {
            id: "a".into(),
            tool: "t".into(),
            args: "{}".into(),
            args_digest: "d".into(),
            session: "s".into(),
            plugin_sha256: "p".into(),
            grant_fs: "none".into(),
            grant_net: "none".into(),
            policy_hash: "h".into(),
            reason: "r".into(),
            state: ApprovalState::Pending,
            decided_reason: None,
            created_ms: 0,
            expires_ms: 1,
            decided_ms: None,
            consumed_ms: None,
            decided_by: None,
            rules: String::new(),
            profile: String::new(),
            preview: None,
            bound_files: String::new(),
            caller: "os-user alice".into(),
            quorum: 1,
            self_approval: true,
        }
    }

    #[test]
    fn every_binding_is_compared_and_the_first_difference_is_named() {
        let base = row();
        let other_state = ApprovalRow {
            id: "b".into(),
            state: ApprovalState::Approved,
            reason: "x".into(),
            ..row()
        };
        assert_eq!(
            base.first_difference(&other_state),
            None,
            "id, state and reason are not bindings"
        );
        type Change = fn(&mut ApprovalRow);
        let cases: [(Change, Binding); 8] = [
            (|r| r.tool = "x".into(), Binding::Tool),
            (|r| r.args_digest = "x".into(), Binding::Arguments),
            (|r| r.session = "x".into(), Binding::Session),
            (|r| r.plugin_sha256 = "x".into(), Binding::Plugin),
            (|r| r.grant_fs = "x".into(), Binding::Capability),
            (|r| r.grant_net = "x".into(), Binding::Capability),
            (|r| r.policy_hash = "x".into(), Binding::Policy),
            (|r| r.profile = "x".into(), Binding::Profile),
        ];
        for (change, binding) in cases {
            let mut changed = row();
            change(&mut changed);
            assert_eq!(base.first_difference(&changed), Some(binding));
        }
        let both = ApprovalRow {
            session: "x".into(),
            policy_hash: "x".into(),
            ..row()
        };
        assert_eq!(base.first_difference(&both), Some(Binding::Session));
    }
}
