//! A plugin's preview of a call the policy asks a person about: the same
//! fresh store as a call, but built from a grant that cannot write (the
//! workspace read-only when the tool needs a filesystem, no network, no
//! child calls) and under a deadline of at most [`PREVIEW_TIMEOUT`]. It
//! runs before anyone approved the call, so it gets less than the call
//! would, never more.

use super::Sandbox;
use super::teardown::{Teardown, release};
use crate::call::{CallId, SessionId};
use crate::capability::{FsAccess, Grant};
use crate::engine::guest::{GUEST_WORKSPACE, classify, new_store, race};
use crate::engine::{CallContext, HostState, LOG_BUDGET_BYTES};
use crate::outcome::{CallError, ErrorCode};
use crate::presentation::Presentation;
use crate::registry::Tool;
use crate::spec::FsNeed;
use std::sync::Arc;
use std::time::Duration;

/// The longest a preview may take; the approval is asked without one after.
pub const PREVIEW_TIMEOUT: Duration = Duration::from_secs(2);

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
        let engine = &self.engine;
        let grant = Grant {
            fs: match tool.spec.filesystem {
                FsNeed::None => FsAccess::None,
                FsNeed::ReadOnly | FsNeed::WorkspaceWrite => FsAccess::ReadOnly,
            },
            ..Grant::default()
        };
        let timeout = engine
            .limits()
            .timeout_for(tool.spec.timeout_ms)
            .min(PREVIEW_TIMEOUT);
        let Ok(slot) = Arc::clone(&self.slots).try_acquire_owned() else {
            return Err(CallError::new(
                ErrorCode::HostError,
                "no sandbox was free for the preview",
            ));
        };
        let host = HostState {
            tool: Arc::clone(&tool.name),
            call_id: call_id.shared(),
            cancel: Default::default(),
            progress: None,
            log_bytes_left: LOG_BUDGET_BYTES,
            progress_gate: Default::default(),
            children: None,
        };
        let (mut store, pipes) = new_store(engine, &grant, host, engine.limits().fuel, timeout)?;
        let context = CallContext {
            call_id: call_id.as_str().to_owned(),
            session_id: session.as_str().to_owned(),
            workspace: (grant.fs != FsAccess::None).then(|| GUEST_WORKSPACE.to_owned()),
        };
        let outcome = {
            let _ticking = engine.ticking();
            let guest = std::pin::pin!(tool.plugin.loaded.pre.preview(
                &mut store,
                &tool.spec.name,
                args,
                context,
            ));
            race(guest, timeout, &Default::default()).await
        };
        let result = classify(outcome, &store, &pipes, timeout);
        release(Teardown::new(store, slot));
        result
    }
}
