//! Deny-only checks that run after the policy allowed (or asked for) a call.
//!
//! A guard can refuse a call, never allow one: [`Guards::check`] takes an
//! [`AuthorizedCall`] and returns an [`AdmittedCall`] only if every guard
//! passes. Guards:
//! - sandbox mode: a tool that needs `workspace-write` in a read-only session;
//! - path: every argument the tool's schema marks `"format": "path"` must
//!   stay inside the workspace (no absolute paths, no `..` out, no symlink
//!   out), checked with cap-std before the plugin is instantiated;
//! - budget: per-session call counts and run time, and repeated calls with
//!   the same arguments (see [`budget`]); passing it reserves the call's unit.
//!
//! The sandbox enforces the same boundaries on its own; guards refuse early,
//! with a message that says why, and keep the refusal out of the plugin.

mod budget;
mod path;

pub use budget::{Budget, MAX_RESIDENT_SESSIONS, Reservation};

use crate::call::SessionId;
use crate::config::SandboxMode;
use crate::error::Error;
use crate::outcome::{CallError, ErrorCode};
use crate::policy::AuthorizedCall;
use crate::spec::FsNeed;
use crate::store::Store;
use std::path::Path;
use std::sync::Arc;

/// The guards of one host.
#[derive(Debug)]
pub struct Guards {
    workspace: path::Workspace,
    sandbox: SandboxMode,
    budget: Budget,
    ledger: Arc<budget::Ledger>,
}

/// A call every guard let through. Only [`Guards::check`] makes one.
#[derive(Debug)]
pub struct AdmittedCall {
    call: AuthorizedCall,
}

impl AdmittedCall {
    pub(crate) fn into_authorized(self) -> AuthorizedCall {
        self.call
    }
}

impl Guards {
    pub fn new(
        workspace: &Path,
        sandbox: SandboxMode,
        budget: Budget,
        store: Arc<Store>,
    ) -> Result<Guards, Error> {
        Ok(Guards {
            workspace: path::Workspace::open(workspace)?,
            sandbox,
            budget,
            ledger: Arc::new(budget::Ledger::new(store)),
        })
    }

    /// Pipeline step: refuses the call if any guard objects. Admission
    /// reserves the call's unit of its session's budget; hand the
    /// reservation to the call's end, or drop it if the call does not run.
    pub fn check(
        &self,
        call: AuthorizedCall,
        session: &SessionId,
    ) -> Result<(AdmittedCall, Reservation), CallError> {
        let resolved = call.call().resolved();
        let tool = resolved.tool();
        match (tool.spec.filesystem, self.sandbox) {
            (FsNeed::WorkspaceWrite, SandboxMode::ReadOnly) => {
                return Err(CallError::new(
                    ErrorCode::GuardDenied,
                    format!(
                        "`{}` changes the workspace and this session is read-only; start the \
                         session with `--sandbox workspace-write` to allow writes",
                        tool.spec.name
                    ),
                ));
            }
            (FsNeed::None | FsNeed::ReadOnly, _)
            | (FsNeed::WorkspaceWrite, SandboxMode::WorkspaceWrite) => {}
        }
        let args = resolved.args().value();
        for pointer in tool.input.path_pointers(args) {
            if let Some(text) = args.pointer(&pointer).and_then(|v| v.as_str()) {
                self.workspace.check(text).map_err(|why| {
                    CallError::new(
                        ErrorCode::GuardDenied,
                        format!("argument `{pointer}` (`{text}`) {why}"),
                    )
                })?;
            }
        }
        let reservation =
            self.ledger
                .reserve(&self.budget, session, tool, resolved.args().shared_digest())?;
        Ok((AdmittedCall { call }, reservation))
    }
}
