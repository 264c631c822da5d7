//! A plugin's views of a call: its preview, for a call the policy asks a
//! person about, and its view of a finished call's result, for a person
//! reading it back. Each runs in the same fresh store as a call, but built
//! from a grant that cannot write (a preview may read the workspace when
//! the tool needs a filesystem; a result view gets no filesystem at all,
//! so it depends on the stored arguments and value alone), with no
//! network and no child calls, under a deadline of at most
//! [`PREVIEW_TIMEOUT`]. A view gets less than the call would, never more.

use super::Sandbox;
use super::teardown::{Teardown, release};
use crate::call::{CallId, SessionId};
use crate::capability::{FsAccess, Grant};
use crate::engine::guest::{GUEST_WORKSPACE, Place, classify, new_store, race};
use crate::engine::{CallContext, HostState};
use crate::outcome::{CallError, ErrorCode};
use crate::presentation::Presentation;
use crate::registry::Tool;
use crate::spec::FsNeed;
use std::sync::Arc;
use std::time::Duration;

/// The longest a view may take; the approval is asked (the call shown)
/// without one after.
pub const PREVIEW_TIMEOUT: Duration = Duration::from_secs(2);

/// Which view of a call to ask the plugin for.
enum Asked<'a> {
    /// How a call on these (canonical, validated) arguments would look.
    Preview {
        args: &'a str,
        session: &'a SessionId,
    },
    /// How a finished call on these arguments that returned this value
    /// looks.
    Result { args: &'a str, value: &'a str },
}

impl Sandbox {
    /// Asks `tool`'s plugin how a call on `args` (canonical, validated)
    /// would look. `Ok(None)`: the plugin has no preview for it.
    pub async fn preview(
        &self,
        tool: &Tool,
        args: &str,
        call_id: &CallId,
        session: &SessionId,
    ) -> Result<Option<Presentation>, CallError> {
        self.view(tool, call_id, Asked::Preview { args, session })
            .await
    }

    /// Asks `tool`'s plugin how the finished call `call_id` on `args` that
    /// returned `value` (both JSON, as the audit log kept them) looks.
    /// `Ok(None)`: the plugin has no view of the tool's results.
    pub async fn show_result(
        &self,
        tool: &Tool,
        args: &str,
        value: &str,
        call_id: &CallId,
    ) -> Result<Option<Presentation>, CallError> {
        self.view(tool, call_id, Asked::Result { args, value })
            .await
    }

    async fn view(
        &self,
        tool: &Tool,
        call_id: &CallId,
        asked: Asked<'_>,
    ) -> Result<Option<Presentation>, CallError> {
        let engine = &self.engine;
        let fs = match (&asked, tool.spec.filesystem) {
            (Asked::Result { .. }, _) | (_, FsNeed::None) => FsAccess::None,
            (Asked::Preview { .. }, FsNeed::ReadOnly | FsNeed::WorkspaceWrite) => {
                FsAccess::ReadOnly
            }
        };
        let grant = Grant {
            fs,
            ..Grant::default()
        };
        let timeout = engine
            .limits()
            .timeout_for(tool.spec.timeout_ms)
            .min(PREVIEW_TIMEOUT);
        let pre = super::run::code_of(&tool.plugin, &Default::default()).await?;
        let Ok(slot) = Arc::clone(&self.slots).try_acquire_owned() else {
            return Err(CallError::new(
                ErrorCode::HostError,
                "no sandbox was free to ask the plugin",
            ));
        };
        let host = HostState::new(Arc::clone(&tool.name), call_id.shared(), Default::default());
        let stop_at = tokio::time::Instant::now() + timeout;
        let (mut store, pipes) = new_store(
            engine,
            pre,
            &grant,
            Place::Workspace,
            host,
            engine.limits().fuel,
            stop_at,
        )?;
        let name = &tool.spec.name;
        let outcome = {
            let _ticking = engine.ticking();
            match asked {
                Asked::Preview { args, session } => {
                    let context = CallContext {
                        call_id: call_id.as_str().to_owned(),
                        session_id: session.as_str().to_owned(),
                        workspace: (grant.fs != FsAccess::None).then(|| GUEST_WORKSPACE.to_owned()),
                    };
                    let guest = std::pin::pin!(pre.preview(&mut store, name, args, context));
                    race(guest, stop_at, &Default::default()).await
                }
                Asked::Result { args, value } => {
                    let guest = std::pin::pin!(pre.show_result(&mut store, name, args, value));
                    race(guest, stop_at, &Default::default()).await
                }
            }
        };
        let mut result = classify(outcome, &store, &pipes, timeout);
        release(Teardown::new(store, slot));
        if let Some(secrets) = engine.secrets() {
            match &mut result {
                Ok(Some(view)) => {
                    for text in [&mut view.title, &mut view.body] {
                        secrets.mask_string(text);
                    }
                    if let Some(path) = &mut view.path {
                        secrets.mask_string(path);
                    }
                }
                Ok(None) => {}
                Err(error) => secrets.mask_string(&mut error.message),
            }
        }
        result
    }
}
