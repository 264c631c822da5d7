//! The `approval_votes` table: who decided each approval. Every person's
//! decision is a row, one per approver (by identity); an approval moves to
//! approved once `quorum` distinct approvers approved it, and to denied at
//! the first denial. Each decision is one immediate transaction (one
//! `SELECT ... FOR UPDATE` with a shared store, see `shared::votes`), so
//! votes cast at once on several processes are all counted and the
//! approval moves once.

use super::approvals::{COLUMNS, from_row};
use super::{ApprovalRow, ApprovalState, Store, StoreError};
use rusqlite::{OptionalExtension, TransactionBehavior, params};

/// One person's decision on an approval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vote {
    /// Who, as one text two approvers share only if they are the same
    /// (see `caller::Caller::identity`): what the quorum counts.
    pub approver: String,
    /// Their name as shown (a token's subject, an OS user name).
    pub name: String,
    /// How the name was proven (`access token`, `shared token`, `os user`).
    pub proof: String,
    /// Where they decided (`cli`, `terminal`, `mcp`, `console`).
    pub channel: String,
    pub approve: bool,
    pub reason: Option<String>,
    pub decided_ms: i64,
}

/// What one person's decision did to an approval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decided {
    Missing,
    /// Already decided, used or expired: left as it is, the vote unkept.
    Stale(ApprovalRow),
    /// The approver is who asked, and the rules want someone else.
    OwnCall(ApprovalRow),
    /// An approval counted (`again`: this approver had approved before),
    /// with `have` approvers so far, fewer than the quorum: still pending.
    Counted {
        row: ApprovalRow,
        have: i64,
        again: bool,
    },
    /// It moved to approved (the quorum is reached) or denied.
    Now(ApprovalRow),
}

/// What a decision on `row` (as it is now) may do before anything is
/// written: `Err` with the answer when it may not count.
pub(super) fn admissible(
    row: Option<ApprovalRow>,
    vote: &Vote,
    now_ms: i64,
) -> Result<ApprovalRow, Box<Decided>> {
    let Some(row) = row else {
        return Err(Box::new(Decided::Missing));
    };
    if row.state != ApprovalState::Pending || row.expires_ms <= now_ms {
        return Err(Box::new(Decided::Stale(row)));
    }
    // A caller may always take their own call back; approving it is what
    // `self_approval = false` keeps from them.
    if vote.approve && !row.self_approval && vote.approver == row.caller {
        return Err(Box::new(Decided::OwnCall(row)));
    }
    Ok(row)
}

/// The approval's state once `have` approvers approved it (a denial:
/// `None`), and whether that decides it.
pub(super) fn outcome(row: &ApprovalRow, vote: &Vote, have: i64) -> Option<ApprovalState> {
    match vote.approve {
        false => Some(ApprovalState::Denied),
        true if have >= row.quorum => Some(ApprovalState::Approved),
        true => None,
    }
}

const VOTE_COLUMNS: &str =
    "approval_id, approver, name, proof, channel, approve, reason, decided_ms";

impl Store {
    /// Records `vote` on pending approval `id` and moves the approval if
    /// it decides it.
    pub fn decide_approval(
        &self,
        id: &str,
        vote: &Vote,
        now_ms: i64,
    ) -> Result<Decided, StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .decide_approval(id, vote, now_ms)
                .map_err(|e| self.shared_error(e));
        }
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.error(e))?;
        let select = format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1");
        let row = tx
            .query_row(&select, [id], from_row)
            .optional()
            .map_err(|e| self.error(e))?;
        let row = match admissible(row, vote, now_ms) {
            Ok(row) => row,
            Err(answer) => return Ok(*answer),
        };
        // An approver who approved and then denies is recorded as denying;
        // one who approves twice is counted once.
        let conflict = if vote.approve {
            "DO NOTHING"
        } else {
            "DO UPDATE SET approve = 0, reason = excluded.reason, channel = excluded.channel, \
             decided_ms = excluded.decided_ms"
        };
        let added = tx
            .execute(
                &format!(
                    "INSERT INTO approval_votes ({VOTE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
                     ON CONFLICT (approval_id, approver) {conflict}"
                ),
                params![
                    id,
                    vote.approver,
                    vote.name,
                    vote.proof,
                    vote.channel,
                    vote.approve,
                    vote.reason,
                    vote.decided_ms
                ],
            )
            .map_err(|e| self.error(e))?;
        let have: i64 = tx
            .query_row(
                "SELECT count(*) FROM approval_votes WHERE approval_id = ?1 AND approve",
                [id],
                |r| r.get(0),
            )
            .map_err(|e| self.error(e))?;
        let answer = match outcome(&row, vote, have) {
            Some(state) => {
                tx.execute(
                    "UPDATE approvals SET state = ?2, decided_reason = ?3, decided_ms = ?4, decided_by = ?5 \
                     WHERE id = ?1",
                    params![id, state.as_str(), vote.reason, now_ms, vote.channel],
                )
                .map_err(|e| self.error(e))?;
                let row = tx
                    .query_row(&select, [id], from_row)
                    .map_err(|e| self.error(e))?;
                Decided::Now(row)
            }
            None => Decided::Counted {
                row,
                have,
                again: added == 0,
            },
        };
        tx.commit().map_err(|e| self.error(e))?;
        Ok(answer)
    }

    /// The decisions on approval `id` (every approval's: `None`), oldest
    /// first, each with its approval's id.
    pub fn votes(&self, id: Option<&str>) -> Result<Vec<(String, Vote)>, StoreError> {
        if let Some(shared) = &self.shared {
            return shared.votes(id).map_err(|e| self.shared_error(e));
        }
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {VOTE_COLUMNS} FROM approval_votes WHERE ?1 IS NULL OR approval_id = ?1 \
                 ORDER BY decided_ms, approver"
            ))
            .map_err(|e| self.error(e))?;
        let rows = stmt
            .query_map([id], |r| {
                Ok((
                    r.get(0)?,
                    Vote {
                        approver: r.get(1)?,
                        name: r.get(2)?,
                        proof: r.get(3)?,
                        channel: r.get(4)?,
                        approve: r.get(5)?,
                        reason: r.get(6)?,
                        decided_ms: r.get(7)?,
                    },
                ))
            })
            .map_err(|e| self.error(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.error(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::approvals::tests::row;

    fn vote(approver: &str, approve: bool) -> Vote {
        Vote {
            approver: approver.into(),
            name: approver.into(),
            proof: "os user".into(),
            channel: "cli".into(),
            approve,
            reason: None,
            decided_ms: 5,
        }
    }

    #[test]
    fn a_quorum_counts_distinct_approvers_and_the_caller_may_be_kept_out() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).unwrap();
        store
            .insert_approval(&ApprovalRow {
                expires_ms: 100,
                quorum: 2,
                self_approval: false,
                ..row()
            })
            .unwrap();
        let decide = |v: &Vote| store.decide_approval("a", v, 10).unwrap();
        assert!(matches!(
            decide(&vote("os-user alice", true)),
            Decided::OwnCall(_)
        ));
        assert!(matches!(
            decide(&vote("bob", true)),
            Decided::Counted {
                have: 1,
                again: false,
                ..
            }
        ));
        assert!(matches!(
            decide(&vote("bob", true)),
            Decided::Counted {
                have: 1,
                again: true,
                ..
            }
        ));
        let Decided::Now(approved) = decide(&vote("carol", true)) else {
            panic!("two distinct approvers approve it");
        };
        assert_eq!(approved.state, ApprovalState::Approved);
        assert!(matches!(decide(&vote("dave", false)), Decided::Stale(_)));
        let votes = store.votes(Some("a")).unwrap();
        let who: Vec<&str> = votes.iter().map(|(_, v)| v.approver.as_str()).collect();
        assert_eq!(
            who,
            ["bob", "carol"],
            "the refused and late votes are not kept"
        );
        assert_eq!(store.votes(Some("b")).unwrap(), []);
        assert!(matches!(
            store.decide_approval("b", &vote("bob", true), 10).unwrap(),
            Decided::Missing
        ));
    }

    #[test]
    fn one_denial_decides_and_the_caller_may_take_their_call_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).unwrap();
        store
            .insert_approval(&ApprovalRow {
                expires_ms: 100,
                quorum: 3,
                self_approval: false,
                ..row()
            })
            .unwrap();
        store.decide_approval("a", &vote("bob", true), 10).unwrap();
        let Decided::Now(denied) = store
            .decide_approval("a", &vote("os-user alice", false), 11)
            .unwrap()
        else {
            panic!("a denial decides");
        };
        assert_eq!(denied.state, ApprovalState::Denied);
        assert_eq!(denied.decided_by.as_deref(), Some("cli"));
        let expired = ApprovalRow {
            id: "late".into(),
            expires_ms: 9,
            ..row()
        };
        store.insert_approval(&expired).unwrap();
        assert!(matches!(
            store
                .decide_approval("late", &vote("bob", true), 10)
                .unwrap(),
            Decided::Stale(_)
        ));
    }
}
