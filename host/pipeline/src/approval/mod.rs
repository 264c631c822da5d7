//! One-time approvals, and the step that turns an admitted call into a
//! [`PreparedCall`], the only thing the sandbox will run.
//!
//! An `allow` decision passes straight through. An `ask` decision needs a
//! person. An approval is bound to the tool, the canonical argument digest,
//! the session, the plugin's SHA-256, the capability grant and the config's
//! hash, and expires. A call that brings an approval id consumes that one; a
//! call without one uses an approved approval with exactly its bindings if
//! there is one, reuses a pending one if the same call is already waiting,
//! and otherwise records a new pending approval and ends as
//! `pending_approval`. Consuming happens once, atomically, across processes,
//! and only when every binding matches this call as prepared and decided
//! again now. Nothing is ever cached as a permanent allow.

mod decide;
mod refusals;
mod review;
mod section;

pub use decide::{ApprovalDecision, Decided, Decider};
pub use refusals::policy_refused;
use refusals::{denied, host_error, mismatch, pending};
pub use review::{Approval, Decision};
pub use section::{ApprovalSettings, ApprovalsSection, DEFAULT_APPROVAL_TTL};

use crate::call::CallRequest;
use crate::capability::Grant;
use crate::guards::AdmittedCall;
use crate::materialize::Arguments;
use crate::outcome::{CallError, ErrorCode};
use crate::policy::Clearance;
use crate::presentation::Rendered;
use crate::registry::Tool;
use crate::store::{ApprovalRow, ApprovalState, Consumed, Store, StoreError, Vote, now_ms};
use crate::workspace::Workspace;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// A call cleared to run: resolved, validated, allowed or approved, guarded,
/// with its grant. Only [`Approvals::admit`] makes one, and running it
/// consumes it.
#[derive(Debug)]
pub struct PreparedCall {
    tool: Arc<Tool>,
    args: Arguments,
    grant: Grant,
    /// The digest of the change a person approved after it was rehearsed:
    /// the call must make exactly that change again (see
    /// `sandbox::rehearse`). None for an allowed call, or one approved
    /// without a rehearsal.
    rehearsed: Option<String>,
}

impl PreparedCall {
    pub fn rehearsed(&self) -> Option<&str> {
        self.rehearsed.as_deref()
    }

    pub fn tool(&self) -> &Arc<Tool> {
        &self.tool
    }

    pub fn args(&self) -> &Arguments {
        &self.args
    }

    pub fn grant(&self) -> &Grant {
        &self.grant
    }
}

/// The files an approval holds, and the SHA-256 each had (`None`: absent).
/// What an approval holds the approved call to, beyond its bindings, as
/// the approval book keeps it (JSON).
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum Held {
    /// The call was rehearsed: it must make exactly this change again.
    Rehearsed { rehearsed: RehearsedChange },
    /// The plugin's preview named these files: each must still hold this
    /// content (SHA-256), or not exist (`None`).
    Files(BTreeMap<String, Option<String>>),
}

#[derive(Debug, Serialize, Deserialize)]
struct RehearsedChange {
    digest: String,
    paths: Vec<String>,
}

fn held(text: &str) -> Held {
    serde_json::from_str(text).unwrap_or_else(|_| Held::Files(BTreeMap::new()))
}

/// The approval book of one host.
#[derive(Debug)]
pub struct Approvals {
    store: Arc<Store>,
    ttl: Duration,
    policy_hash: String,
}

/// What the approval step did to the approval book, for the audit log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApprovalStep {
    /// A new pending approval was recorded.
    Asked {
        approval_id: String,
        expires_ms: i64,
    },
    /// The call used up this approval.
    Consumed { approval_id: String },
}

impl Approvals {
    pub fn new(store: Arc<Store>, ttl: Duration, policy_hash: String) -> Approvals {
        Approvals {
            store,
            ttl,
            policy_hash,
        }
    }

    /// Pipeline step: lets an allowed call through; for an `ask`, asks for an
    /// approval or consumes the one the request brings.
    pub fn admit(
        &self,
        call: AdmittedCall,
        request: &CallRequest,
        workspace: &Workspace,
        noted: &mut Vec<ApprovalStep>,
    ) -> Result<PreparedCall, CallError> {
        let (validated, clearance, decision, grant) = call.into_authorized().into_parts();
        let (tool, args) = validated.into_resolved().into_parts();
        if clearance == Clearance::Allowed {
            return Ok(PreparedCall {
                tool,
                args,
                grant,
                rehearsed: None,
            });
        }
        let now = now_ms();
        let this_call = ApprovalRow {
            id: uuid::Uuid::now_v7().to_string(),
            tool: tool.spec.name.clone(),
            args: args.canonical().to_owned(),
            args_digest: args.digest().to_owned(),
            session: request.session.as_str().to_owned(),
            plugin_sha256: tool.plugin.sha256.clone(),
            grant_fs: grant.fs.as_str().to_owned(),
            grant_net: grant.net.to_string(),
            profile: request.profile.as_deref().unwrap_or_default().to_owned(),
            policy_hash: self.policy_hash.clone(),
            reason: decision.reason.to_string(),
            state: ApprovalState::Pending,
            decided_reason: None,
            created_ms: now,
            expires_ms: now + self.ttl.as_millis() as i64,
            decided_ms: None,
            consumed_ms: None,
            decided_by: None,
            rules: decision
                .matched
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
            preview: None,
            bound_files: String::new(),
            caller: request.who_asks(),
            quorum: i64::from(decision.approvers.quorum),
            self_approval: decision.approvers.self_approval,
        };
        let ask = |noted: &mut Vec<ApprovalStep>| {
            self.store.insert_approval(&this_call).map_err(host_error)?;
            noted.push(ApprovalStep::Asked {
                approval_id: this_call.id.clone(),
                expires_ms: this_call.expires_ms,
            });
            Err(pending(&this_call, self.console()))
        };
        // Without an id, an approval already given for exactly this call is
        // used, and a retry of a call still waiting reuses its approval. One
        // whose previewed file changed since is retired, and asked anew.
        let id = match &request.approval {
            Some(id) => {
                if let Some(row) = self.store.approval(id).map_err(host_error)?
                    && let Some(path) = self.changed_file(&row, workspace, now)?
                {
                    return Err(CallError::new(
                        ErrorCode::ApprovalInvalid,
                        format!(
                            "`{path}` changed since approval `{id}` was asked, so what was approved is not \
                             what would run; nothing ran. Repeat the call without `--approval` to ask again \
                             with the file as it is now"
                        ),
                    )
                    .with_approval(id.clone()));
                }
                id.clone()
            }
            None => match self
                .store
                .matching_approval(&this_call, now)
                .map_err(host_error)?
            {
                Some(row) if row.state == ApprovalState::Approved => {
                    if self.changed_file(&row, workspace, now)?.is_some() {
                        return ask(noted);
                    }
                    row.id
                }
                // A person said no to exactly this call: asking again at
                // once would only ask them again.
                Some(row) if row.state == ApprovalState::Denied => {
                    return Err(denied(&row));
                }
                Some(row) => return Err(pending(&row, self.console())),
                None => return ask(noted),
            },
        };
        let refused =
            |code, message: String| Err(CallError::new(code, message).with_approval(id.clone()));
        match self
            .store
            .consume_approval(&id, &this_call, now)
            .map_err(host_error)?
        {
            Consumed::Now(row) => {
                noted.push(ApprovalStep::Consumed {
                    approval_id: id.clone(),
                });
                let rehearsed = match held(&row.bound_files) {
                    Held::Rehearsed { rehearsed } => Some(rehearsed.digest),
                    Held::Files(_) => None,
                };
                Ok(PreparedCall {
                    tool,
                    args,
                    grant,
                    rehearsed,
                })
            }
            Consumed::Missing => refused(
                ErrorCode::ApprovalInvalid,
                format!("there is no approval `{id}`"),
            ),
            Consumed::Expired(_) => refused(
                ErrorCode::ApprovalExpired,
                format!(
                    "approval `{id}` expired before it was used; repeat the call without `--approval` to ask again"
                ),
            ),
            Consumed::Mismatch(binding) => refused(
                ErrorCode::ApprovalInvalid,
                format!(
                    "approval `{id}` does not fit this call: {}; nothing ran",
                    mismatch(binding)
                ),
            ),
            Consumed::NotApproved(row) => match row.state {
                ApprovalState::Pending => refused(
                    ErrorCode::ApprovalRequired,
                    format!(
                        "approval `{id}` has not been decided yet; approve it with `toolwarden approvals approve {id}`"
                    ),
                ),
                ApprovalState::Denied => Err(denied(&row)),
                ApprovalState::Approved | ApprovalState::Consumed => refused(
                    ErrorCode::ApprovalInvalid,
                    format!("approval `{id}` was already used; an approval runs one call once"),
                ),
            },
        }
    }

    /// The first file `row` holds that is not as it was when the approval
    /// was asked. Such an approval is retired (it expires now), so that
    /// the same call asks again rather than finding it.
    fn changed_file(
        &self,
        row: &ApprovalRow,
        workspace: &Workspace,
        now: i64,
    ) -> Result<Option<String>, CallError> {
        let Held::Files(files) = held(&row.bound_files) else {
            return Ok(None);
        };
        let changed = files
            .into_iter()
            .find(|(path, then)| workspace.digest(path) != *then)
            .map(|(path, _)| path);
        if changed.is_some() {
            self.store
                .retire_approval(&row.id, now)
                .map_err(host_error)?;
        }
        Ok(changed)
    }

    /// Keeps the preview of pending approval `id`'s call with it, and
    /// holds the approval to the content `bound` files have now.
    pub fn attach_preview(
        &self,
        id: &str,
        preview: &Rendered,
        bound: &BTreeMap<String, Option<String>>,
    ) -> Result<(), StoreError> {
        let preview = serde_json::to_string(preview).unwrap_or_default();
        let bound = if bound.is_empty() {
            String::new()
        } else {
            serde_json::to_string(bound).unwrap_or_default()
        };
        self.store.set_preview(id, &preview, &bound)
    }

    /// Keeps the rehearsal of pending approval `id`'s call with it: what
    /// the person is shown, and the change the approved call must make
    /// again.
    pub fn attach_rehearsal(
        &self,
        id: &str,
        shown: &Rendered,
        change: &crate::workspace::ChangeSet,
    ) -> Result<(), StoreError> {
        let preview = serde_json::to_string(shown).unwrap_or_default();
        let held = Held::Rehearsed {
            rehearsed: RehearsedChange {
                digest: change.digest(),
                paths: change.paths(),
            },
        };
        self.store.set_preview(
            id,
            &preview,
            &serde_json::to_string(&held).unwrap_or_default(),
        )
    }

    /// The URL of a console running for this state directory, if any.
    fn console(&self) -> Option<String> {
        self.store
            .path()
            .parent()
            .and_then(crate::console_url::read)
    }

    /// Every approval, newest first.
    pub fn list(&self) -> Result<Vec<Approval>, StoreError> {
        let mut votes: std::collections::HashMap<String, Vec<Vote>> = Default::default();
        for (id, vote) in self.store.votes(None)? {
            votes.entry(id).or_default().push(vote);
        }
        Ok(self
            .store
            .approvals()?
            .into_iter()
            .map(|row| {
                let decisions = votes.remove(&row.id).unwrap_or_default();
                Approval::new(row, decisions)
            })
            .collect())
    }

    /// Approval `row` with the decisions on it.
    fn reviewed(&self, row: ApprovalRow) -> Result<Approval, StoreError> {
        let votes = self.store.votes(Some(&row.id))?;
        Ok(Approval::new(
            row,
            votes.into_iter().map(|(_, vote)| vote).collect(),
        ))
    }

    /// Changes whenever an approval is asked, decided or used.
    pub fn version(&self) -> Result<i64, StoreError> {
        self.store.approvals_version()
    }

    pub fn get(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        self.store
            .approval(id)?
            .map(|row| self.reviewed(row))
            .transpose()
    }
}
