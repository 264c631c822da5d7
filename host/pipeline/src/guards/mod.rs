//! Deny-only checks that run after the policy allowed (or asked for) a call.
//!
//! A guard can refuse a call, never allow one: [`Guards::check`] takes an
//! [`AuthorizedCall`] and returns an [`AdmittedCall`] only if every guard
//! passes. Guards:
//! - sandbox mode: a tool that needs `workspace-write` in a read-only session;
//! - path: every argument the tool's schema marks `"format": "path"` must
//!   have resolved inside the workspace (no absolute paths, no `..` out, no
//!   symlink out; see [`crate::workspace`]) and must not name one of the
//!   host's own files (its config, state or plugins), whatever the policy
//!   says;
//! - URL: every argument marked `"format": "uri"` must go to an origin the
//!   call's network grant covers, so a tool is never started on a URL it
//!   could not fetch;
//! - credentials: a tool that declares a credential the config does not
//!   define does not run (`CREDENTIAL_MISSING`);
//! - budget: per-session call counts and run time, and repeated calls with
//!   the same arguments (see [`budget`]); passing it reserves the call's unit;
//! - rate: calls per caller and tool over a sliding window, counted in the
//!   store across hosts (see [`rate`]); passing it takes the call's units.
//!
//! The sandbox enforces the same boundaries on its own; guards refuse early,
//! with a message that says why, and keep the refusal out of the plugin.

mod budget;
mod rate;

pub use budget::{Budget, BudgetSection, MAX_RESIDENT_SESSIONS, Reservation};
pub use rate::{RateLimitSection, RateLimits};

use crate::call::SessionId;
use crate::caller::Caller;
use crate::capability::SandboxMode;
use crate::egress::Egress;
use crate::outcome::{CallError, ErrorCode};
use crate::policy::AuthorizedCall;
use crate::spec::FsNeed;
use crate::store::Store;
use crate::workspace::Place;
use std::sync::Arc;

/// The guards of one host.
#[derive(Debug)]
pub struct Guards {
    sandbox: SandboxMode,
    budget: Budget,
    ledger: Arc<budget::Ledger>,
    rates: RateLimits,
    store: Arc<Store>,
    /// Which credentials the config defines.
    egress: Arc<Egress>,
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
    /// `lease`: how long a budget unit a shared store holds for a call may
    /// stay reserved (`Limits::longest_hold`).
    pub fn new(
        sandbox: SandboxMode,
        (budget, rates): (Budget, RateLimits),
        store: Arc<Store>,
        egress: Arc<Egress>,
        lease: std::time::Duration,
    ) -> Guards {
        let ledger = budget::Ledger::new(Arc::clone(&store), lease, budget.forget_sessions_after);
        Guards {
            sandbox,
            budget,
            ledger: Arc::new(ledger),
            rates,
            store,
            egress,
        }
    }

    /// Pipeline step: refuses the call if any guard objects. Admission
    /// reserves the call's unit of its session's budget and of the rate
    /// limits that count it for `caller` (see `Caller::identity_of`); hand the
    /// reservation to the call's end, or drop it if the call does not run.
    pub fn check(
        &self,
        call: AuthorizedCall,
        (session, caller): (&SessionId, Option<&Caller>),
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
        for path in call.call().paths() {
            let why = match &path.place {
                Place::Inside { .. } => continue,
                Place::Outside { why } => why.clone(),
                Place::HostFile { resolved, what } => format!(
                    "leads to `{resolved}`, the host's {what}; no tool may reach the host's own \
                     files through its arguments"
                ),
            };
            return Err(CallError::new(
                ErrorCode::GuardDenied,
                format!("argument `{}` (`{}`) {why}", path.pointer, path.written),
            ));
        }
        let network = &call.grant().net;
        for uri in call.call().uris() {
            let reachable = uri.origin.as_ref().is_some_and(|origin| {
                network
                    .origins()
                    .iter()
                    .any(|granted| granted.pattern.matches(origin))
            });
            if !reachable {
                let goes = uri.origin.as_ref().map_or_else(
                    || "is not an http(s) URL".to_owned(),
                    |o| format!("goes to `{o}`"),
                );
                return Err(CallError::new(
                    ErrorCode::GuardDenied,
                    format!(
                        "argument `{}` (`{}`) {goes}, which this call may not reach (it may \
                         reach: {network}); the operator allows origins in `[network] allow`",
                        uri.pointer, uri.written
                    ),
                ));
            }
        }
        if let Some(need) = &tool.spec.network
            && let Some(missing) = need
                .credentials
                .iter()
                .find(|name| !self.egress.credentials().defines(name))
        {
            return Err(CallError::new(
                ErrorCode::CredentialMissing,
                format!(
                    "`{}` needs the credential `{missing}`, which the config does not define; \
                     the operator adds it as [credential.{missing}] with env or file, origins \
                     and header",
                    tool.spec.name
                ),
            ));
        }
        let reservation =
            self.ledger
                .reserve(&self.budget, session, tool, resolved.args().shared_digest())?;
        let rate = self.rates.take(&self.store, &tool.spec.name, caller)?;
        Ok((AdmittedCall { call }, reservation.with_rate(rate)))
    }
}
