//! People deciding on approvals: where they decided ([`Decider`]), what
//! ([`ApprovalDecision`]), and what their decision did ([`Decided`]),
//! counted per person towards the approvers the rules want.

use super::{Approval, Approvals};
use crate::caller::Caller;
use crate::store::{StoreError, Vote, now_ms};

/// Where a person decided an approval, for the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decider {
    /// `toolwarden approvals approve|deny`.
    Cli,
    /// The prompt `toolwarden call` shows on a terminal.
    Terminal,
    /// An MCP client's elicitation form or `input_required` answer.
    Mcp,
    /// The web console.
    Console,
}

impl Decider {
    pub fn as_str(self) -> &'static str {
        match self {
            Decider::Cli => "cli",
            Decider::Terminal => "terminal",
            Decider::Mcp => "mcp",
            Decider::Console => "console",
        }
    }
}

/// What a person decides on a pending approval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// The call may run, once.
    Approve,
    /// It may not.
    Deny,
}

/// What one person's decision did to an approval.
#[derive(Clone, Debug)]
pub enum Decided {
    /// There is no such approval.
    Missing,
    /// Already decided, used or expired: nothing changed.
    Stale(Approval),
    /// The person asked for the call themselves, and the rules that asked
    /// want someone else to approve it: nothing changed.
    OwnCall(Approval),
    /// Their approval is counted (`again`: it was already), and the call
    /// waits for more people.
    Counted { approval: Approval, again: bool },
    /// It is approved (every approver needed said yes) or denied, now.
    Now(Approval),
}

impl Decided {
    /// The approval as it is after the decision, if there is one.
    pub fn approval(&self) -> Option<&Approval> {
        match self {
            Decided::Missing => None,
            Decided::Stale(a)
            | Decided::OwnCall(a)
            | Decided::Now(a)
            | Decided::Counted { approval: a, .. } => Some(a),
        }
    }
}

impl Approvals {
    /// Records `who`'s decision on a pending approval, decided at `by`:
    /// a denial decides it, an approval once every approver it needs said
    /// yes.
    pub fn decide(
        &self,
        id: &str,
        decision: ApprovalDecision,
        reason: Option<&str>,
        (by, who): (Decider, &Caller),
    ) -> Result<Decided, StoreError> {
        let now = now_ms();
        let vote = Vote {
            approver: who.identity(),
            name: who.subject.clone(),
            proof: who.proof_name().to_owned(),
            channel: by.as_str().to_owned(),
            approve: decision == ApprovalDecision::Approve,
            reason: reason.map(str::to_owned),
            decided_ms: now,
        };
        Ok(match self.store.decide_approval(id, &vote, now)? {
            crate::store::Decided::Missing => Decided::Missing,
            crate::store::Decided::Stale(row) => Decided::Stale(self.reviewed(row)?),
            crate::store::Decided::OwnCall(row) => Decided::OwnCall(self.reviewed(row)?),
            crate::store::Decided::Counted { row, again, .. } => Decided::Counted {
                approval: self.reviewed(row)?,
                again,
            },
            crate::store::Decided::Now(row) => Decided::Now(self.reviewed(row)?),
        })
    }
}
