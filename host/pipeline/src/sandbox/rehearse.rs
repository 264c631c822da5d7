//! Rehearsals: what a person approves is what a call does, not what its
//! plugin says it does.
//!
//! A call that may change the workspace (its grant is read-write) and that
//! the policy asks about is first run in a private copy of the workspace
//! ([`Sandbox::rehearse`]): the same plugin, arguments, grant and limits,
//! with the copy preopened where the workspace would be. The host then
//! walks the copy and shows the person every file, link and directory the
//! call created, changed or removed, as diffs it renders itself. The
//! approval binds that change's digest.
//!
//! The approved call runs again in a fresh copy of the workspace as it is
//! then ([`Sandbox::run_rehearsed`]). If it makes exactly the approved
//! change (the same paths, from the same content to the same content), the
//! host applies that change to the workspace; otherwise nothing in the
//! workspace changes and the call ends `APPROVAL_INVALID`, naming what
//! differs. A file the call only reads is held this way too, where what it
//! reads decides what it writes. A call that fails in the copy changes
//! nothing.
//!
//! What cannot be rehearsed is said to be so, never shown as a whole
//! change: a call that may reach the network or call other tools (neither
//! can be held back inside a copy), or a workspace larger than
//! `[approvals] rehearse_max_mb` / `rehearse_max_entries` allow.

use super::run::{Job, RunContext, invoke};
use super::{Execution, Sandbox};
use crate::approval::PreparedCall;
use crate::capability::{FsAccess, Grant, Network};
use crate::changes::Reoffer;
use crate::engine::guest::Place;
use crate::outcome::{CallError, ErrorCode};
use crate::registry::Tool;
use crate::workspace::{Applied, ChangeSet, Workspace};
use std::sync::Arc;

/// Largest file whose text is diffed for a person; a larger one is listed
/// with its sizes.
const MAX_DIFFED_FILE: usize = 256 << 10;

/// What a rehearsal found: the change the call made in the copy, and how
/// its run there ended.
#[derive(Debug)]
pub struct Rehearsal {
    pub change: ChangeSet,
    /// `None` when the tool returned; otherwise its code and message.
    pub failed: Option<CallError>,
    /// The change as the person is shown it.
    pub shown: String,
}

/// Why a call with `grant` cannot be rehearsed, if it cannot.
pub fn unrehearsable(tool: &Tool, grant: &Grant) -> Option<&'static str> {
    match (&grant.net, tool.plugin.loaded.composes()) {
        (Network::Open(_), _) => Some(
            "it may reach the network, and a request cannot be held back inside a copy of the \
             workspace",
        ),
        (Network::Closed, true) => Some(
            "its plugin calls other tools, and their calls cannot be held back inside a copy \
             of the workspace",
        ),
        (Network::Closed, false) => None,
    }
}

impl Sandbox {
    /// Runs `tool` on `args` (canonical, validated) with `grant` in a
    /// fresh copy of `workspace`, and says what it changed there. `Err`
    /// says why the call cannot be rehearsed.
    pub async fn rehearse(
        &self,
        tool: &Arc<Tool>,
        args: &str,
        grant: &Grant,
        cx: &RunContext,
        workspace: &Workspace,
    ) -> Result<Rehearsal, String> {
        if let Some(why) = unrehearsable(tool, grant) {
            return Err(why.to_owned());
        }
        let scratch = workspace.scratch(&self.rehearsals, self.rehearsal_limits)?;
        let job = Job {
            tool,
            args,
            grant,
            place: Place::Copy(scratch.path()),
        };
        let deadline = self.engine.limits().timeout_for(tool.spec.timeout_ms);
        let attempt = invoke(&self.engine, &self.slots, &job, cx, deadline, deadline).await;
        let change = scratch.changes()?;
        let failed = match attempt.result {
            Ok(Ok(_)) => None,
            Ok(Err(failure)) => Some(failure.into_error()),
            Err(error) => Some(error),
        };
        let shown = change.render(
            |path| workspace.read(path, MAX_DIFFED_FILE),
            |path| scratch.read(path, MAX_DIFFED_FILE),
            crate::presentation::MAX_PREVIEW_BYTES - 1024,
        );
        let mut failed = failed;
        if let (Some(error), Some(secrets)) = (&mut failed, self.engine.secrets()) {
            secrets.mask_string(&mut error.message);
        }
        let shown = match (&failed, self.engine.secrets()) {
            (_, Some(secrets)) => secrets.mask_str(&shown).unwrap_or(shown),
            (_, None) => shown,
        };
        Ok(Rehearsal {
            change,
            failed,
            shown,
        })
    }

    /// Runs an approved call that was rehearsed again, in a fresh copy of
    /// `workspace`, and applies its change only if it is the approved one
    /// (`approved`, its digest).
    pub(super) async fn run_rehearsed(
        &self,
        call: &PreparedCall,
        approved: &str,
        cx: &RunContext,
        workspace: &Workspace,
    ) -> Execution {
        let stopped = |error: CallError| Execution {
            result: Err(error),
            fuel_used: None,
            requests: Vec::new(),
            asked: Vec::new(),
            retried: Vec::new(),
            reoffer: Reoffer::default(),
        };
        let scratch = match workspace.scratch(&self.rehearsals, self.rehearsal_limits) {
            Ok(scratch) => scratch,
            Err(why) => {
                return stopped(CallError::new(
                    ErrorCode::HostError,
                    format!(
                        "the approved call runs in a copy of the workspace, and none could be \
                         made ({why}); nothing ran"
                    ),
                ));
            }
        };
        let job = Job {
            place: Place::Copy(scratch.path()),
            ..Job::of(call)
        };
        let deadline = self
            .engine
            .limits()
            .timeout_for(call.tool().spec.timeout_ms);
        let attempt = invoke(&self.engine, &self.slots, &job, cx, deadline, deadline).await;
        let mut reoffer = Reoffer::default();
        let result = match attempt.result {
            Ok(Ok(output)) => match self.apply_if_approved(&scratch, approved, workspace) {
                Ok(()) => {
                    reoffer = self.make_real(&call.tool().plugin, attempt.made);
                    Ok(Ok(output))
                }
                Err(refusal) => Err(refusal),
            },
            other => other,
        };
        Execution {
            result,
            fuel_used: attempt.fuel_used,
            requests: attempt.requests,
            asked: attempt.asked,
            retried: Vec::new(),
            reoffer,
        }
    }

    /// Applies what the call did in `scratch` to the workspace if it is
    /// exactly the change with digest `approved`.
    fn apply_if_approved(
        &self,
        scratch: &crate::workspace::Scratch,
        approved: &str,
        workspace: &Workspace,
    ) -> Result<(), CallError> {
        let change = scratch.changes().map_err(|why| {
            CallError::new(
                ErrorCode::HostError,
                format!("what the call changed cannot be read ({why}); nothing was applied"),
            )
        })?;
        if change.digest() != approved {
            return Err(CallError::new(
                ErrorCode::ApprovalInvalid,
                format!(
                    "the call made another change than the one approved ({} path{} now: {}); \
                     nothing in the workspace was changed. Repeat the call without `--approval` \
                     to be shown what it does now",
                    change.changes.len(),
                    if change.changes.len() == 1 { "" } else { "s" },
                    crate::presentation::one_line(&change.paths().join(", "))
                ),
            ));
        }
        workspace
            .apply(scratch, &change)
            .map_err(|applied| match applied {
                Applied::Moved(path) => CallError::new(
                    ErrorCode::ApprovalInvalid,
                    format!(
                        "`{}` changed while the approved call ran; nothing in the workspace was \
                         changed",
                        crate::presentation::one_line(&path)
                    ),
                ),
                Applied::Failed(why) => CallError::new(
                    ErrorCode::HostError,
                    format!("the approved change could not be applied whole: {why}"),
                ),
            })
    }
}

/// Whether a call with `grant` may change the workspace, and so is
/// rehearsed when a person is asked about it.
pub fn changes_the_workspace(grant: &Grant) -> bool {
    grant.fs == FsAccess::ReadWrite
}
