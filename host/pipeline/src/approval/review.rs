//! An approval as a person reviews it (the CLI, the console, MCP): exactly
//! what would run, read from the approval book's row.

use super::{Held, held};
use crate::presentation::Rendered;
use crate::store::{ApprovalRow, ApprovalState, Vote, now_ms};
use serde::Serialize;

/// One person's decision on an approval, as far as their channel proved
/// who they are.
#[derive(Clone, Debug, Serialize)]
pub struct Decision {
    /// Who, as one text two people share only if they are the same (see
    /// `Caller::identity`).
    pub identity: String,
    /// Their name: a token's subject, an OS user name, or `shared-token`.
    pub name: String,
    /// How the name was proven: `access token`, `shared token`, `os user`.
    pub proof: String,
    /// Where they decided: `cli`, `terminal`, `mcp` or `console`.
    pub channel: String,
    pub approved: bool,
    pub reason: Option<String>,
    pub decided_ms: i64,
}

impl From<Vote> for Decision {
    fn from(vote: Vote) -> Decision {
        Decision {
            identity: vote.approver,
            name: vote.name,
            proof: vote.proof,
            channel: vote.channel,
            approved: vote.approve,
            reason: vote.reason,
            decided_ms: vote.decided_ms,
        }
    }
}

/// An approval as a person reviews it: exactly what would run.
#[derive(Clone, Debug, Serialize)]
pub struct Approval {
    pub id: String,
    pub tool: String,
    pub args: serde_json::Value,
    pub args_digest: String,
    pub session: String,
    pub plugin_sha256: String,
    /// Filesystem access the call would get (`none`, `read-only`, `read-write`).
    pub capability: String,
    /// What the call may reach on the network: the origins (and whether at
    /// private addresses too) and the credentials, or `none`.
    pub network: String,
    /// Why the policy asked.
    pub reason: String,
    /// Numbers of the rules that matched when the policy asked.
    pub rules: String,
    /// The profile of the session that asked, if it declared one.
    pub profile: Option<String>,
    pub state: &'static str,
    pub decided_reason: Option<String>,
    /// Where it was decided: `cli`, `terminal`, `mcp` (an MCP client's
    /// form) or `console`.
    pub decided_by: Option<String>,
    /// Who asked: the caller's identity as its channel proved it (an
    /// access token's issuer and subject, `shared-token`), or the OS user
    /// of the process the call came to (`os-user NAME`).
    pub asked_by: Option<String>,
    /// Distinct people who must approve before the call runs.
    pub approvers_needed: i64,
    /// Whether the caller may be one of them.
    pub self_approval: bool,
    /// Every person's decision so far, oldest first.
    pub decisions: Vec<Decision>,
    pub created_ms: i64,
    pub expires_ms: i64,
    pub decided_ms: Option<i64>,
    /// When the approved call ran.
    pub consumed_ms: Option<i64>,
    pub expired: bool,
    /// What the call would do, as its plugin previewed it (a `diff`
    /// rendered against the file as it was when asked), or why the
    /// preview failed; none when the tool has no preview.
    pub preview: Option<Rendered>,
    /// Workspace paths the approval holds: the files the plugin's preview
    /// named (held to the content they had when it was asked), or every
    /// path the rehearsed change touches.
    pub bound_files: Vec<String>,
    /// The digest of the rehearsed change the approved call must make
    /// again, if the call was rehearsed.
    pub rehearsed: Option<String>,
}

impl Approval {
    /// How many more distinct people must approve before the call may run.
    pub fn awaiting(&self) -> i64 {
        let approved = self.decisions.iter().filter(|d| d.approved).count();
        (self.approvers_needed - approved as i64).max(0)
    }

    /// Whether the person `identity` may still add a decision: they have
    /// not decided yet, and did not ask for a call the rules keep from
    /// them.
    pub fn awaits(&self, identity: &str) -> bool {
        let asked = self.asked_by.as_deref() == Some(identity);
        let decided = self.decisions.iter().any(|d| d.identity == identity);
        !(decided || (asked && !self.self_approval))
    }

    /// Who must approve, as a person reads it: "2 distinct people, not the
    /// one who asked".
    pub fn approvers(&self) -> String {
        crate::policy::Approvers::describe_raw(self.approvers_needed, self.self_approval)
    }

    /// The approval `row`, with the decisions people made on it.
    pub(super) fn new(row: ApprovalRow, votes: Vec<Vote>) -> Approval {
        Approval {
            asked_by: Some(row.caller).filter(|c| !c.is_empty()),
            approvers_needed: row.quorum,
            self_approval: row.self_approval,
            decisions: votes.into_iter().map(Decision::from).collect(),
            expired: row.expires_ms <= now_ms()
                && matches!(row.state, ApprovalState::Pending | ApprovalState::Approved),
            args: serde_json::from_str(&row.args).unwrap_or(serde_json::Value::String(row.args)),
            id: row.id,
            tool: row.tool,
            args_digest: row.args_digest,
            session: row.session,
            plugin_sha256: row.plugin_sha256,
            capability: row.grant_fs,
            network: row.grant_net,
            reason: row.reason,
            rules: row.rules,
            profile: Some(row.profile).filter(|p| !p.is_empty()),
            state: row.state.as_str(),
            decided_reason: row.decided_reason,
            decided_by: row.decided_by,
            created_ms: row.created_ms,
            expires_ms: row.expires_ms,
            decided_ms: row.decided_ms,
            consumed_ms: row.consumed_ms,
            preview: row
                .preview
                .as_deref()
                .and_then(|p| serde_json::from_str(p).ok()),
            bound_files: match held(&row.bound_files) {
                Held::Files(files) => files.into_keys().collect(),
                Held::Rehearsed { rehearsed } => rehearsed.paths,
            },
            rehearsed: match held(&row.bound_files) {
                Held::Files(_) => None,
                Held::Rehearsed { rehearsed } => Some(rehearsed.digest),
            },
        }
    }
}
