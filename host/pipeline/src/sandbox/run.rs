//! One call in one fresh `Store`: wait for a free instance, build the store
//! from the call's grant, instantiate, invoke, classify how it ended, tear
//! down, saying whether the plugin started. Runs a [`Job`]: made from a
//! [`PreparedCall`] that [`super::Sandbox::run`] took by value (so only a
//! call every earlier step cleared reaches the workspace), or, for a
//! rehearsal, from a call's tool, arguments and grant in a private copy of
//! the workspace (the rehearsal, which uses this file and not the other way).

use super::teardown::{Teardown, release};
use super::{RawOutput, ToolFailure};
use crate::approval::PreparedCall;
use crate::call::{CallId, CancelToken, ChildCalls, LogSink, ProgressSink, SessionId};
use crate::capability::FsAccess;
use crate::capability::Grant;
use crate::engine::guest::{GUEST_WORKSPACE, Place, classify, log_stdio, new_store, race};
use crate::engine::{CallContext, Engine, HostState, PluginPre, SamplingBudget};
use crate::outcome::{CallError, ErrorCode};
use crate::registry::{Plugin, Tool};
use crate::resource::Announced;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Per-call facts the sandbox needs beyond the prepared call.
#[derive(Clone, Debug, Default)]
pub struct RunContext {
    pub call_id: CallId,
    pub session: SessionId,
    pub cancel: CancelToken,
    pub progress: Option<ProgressSink>,
    pub log: Option<LogSink>,
    /// How the tool calls other tools, when its plugin imports `compose`.
    pub children: Option<Arc<dyn ChildCalls>>,
    /// The answers to the tool's questions (`ask`) this run has.
    pub answers: Arc<crate::question::Answers>,
    /// The tokens the session's earlier calls asked the client's model for.
    pub session_sampled_tokens: u64,
}

/// How one attempt at a call ended.
pub(super) struct Attempt {
    pub result: Result<Result<RawOutput, ToolFailure>, CallError>,
    pub fuel_used: Option<u64>,
    pub requests: Vec<crate::egress::RequestRecord>,
    /// The questions the tool asked, with their answers.
    pub asked: Vec<crate::question::Asked>,
    /// What the tool changed that clients hear of, for the sandbox to
    /// make real once the run's changes are.
    pub made: Made,
    /// The plugin was instantiated, so it may have done something.
    pub started: bool,
}

/// What one run asked to change that clients hear of.
#[derive(Debug, Default)]
pub(super) struct Made {
    /// The URIs of its plugin's resources the tool announced as changed.
    pub announced: Vec<String>,
    /// Its plugin's tools it asked to offer (true) or withdraw.
    pub reoffered: std::collections::BTreeMap<String, bool>,
}

/// The code `plugin`'s calls run: built now if it is not yet (see
/// [`crate::engine::LoadedPlugin`]), on a blocking thread, while the call
/// waits for that plugin alone. Like waiting for an instance, the wait
/// is not run time and may be cancelled; the build then goes on, for the
/// next call.
pub(super) async fn code_of<'p>(
    plugin: &'p Arc<Plugin>,
    cancel: &CancelToken,
) -> Result<&'p PluginPre, CallError> {
    let unbuilt = |why: &str| {
        CallError::new(
            ErrorCode::HostError,
            format!("the plugin's code could not be compiled: {why}; the call did not run"),
        )
    };
    if let Some(built) = plugin.loaded.optimized() {
        return built.map_err(unbuilt);
    }
    let building = Arc::clone(plugin);
    let build = tokio::task::spawn_blocking(move || {
        let _ = building.loaded.optimize();
    });
    tokio::select! {
        biased;
        _ = cancel.cancelled() => {
            return Err(CallError::new(
                ErrorCode::Cancelled,
                "the call was cancelled while its plugin was compiled; it did not run",
            ));
        }
        _ = build => {}
    }
    match plugin.loaded.optimized() {
        Some(built) => built.map_err(unbuilt),
        None => Err(unbuilt("the compiling thread stopped")),
    }
}

/// What one attempt runs: a tool on its canonical arguments, with a grant,
/// in the workspace or in a private copy of it.
pub(super) struct Job<'a> {
    pub tool: &'a Arc<Tool>,
    pub args: &'a str,
    pub grant: &'a Grant,
    pub place: Place<'a>,
}

impl<'a> Job<'a> {
    /// A cleared call, in the workspace.
    pub fn of(call: &'a PreparedCall) -> Job<'a> {
        Job {
            tool: call.tool(),
            args: call.args().canonical(),
            grant: call.grant(),
            place: Place::Workspace,
        }
    }
}

/// One attempt at `job`, stopped after `timeout` (what is left of the
/// call's `deadline`).
pub(super) async fn invoke(
    engine: &Engine,
    slots: &Arc<Semaphore>,
    job: &Job<'_>,
    cx: &RunContext,
    deadline: std::time::Duration,
    timeout: std::time::Duration,
) -> Attempt {
    let not_started = |error| Attempt {
        result: Err(error),
        fuel_used: None,
        requests: Vec::new(),
        asked: Vec::new(),
        made: Made::default(),
        started: false,
    };
    let tool = job.tool;
    let fuel = engine.limits().fuel;
    let code = match code_of(&tool.plugin, &cx.cancel).await {
        Ok(code) => code,
        Err(e) => return not_started(e),
    };
    // Beyond `max_instances` calls in flight, a call waits for an instance
    // (still cancellable) rather than failing; the wait is not run time.
    // A free instance is taken without registering as a waiter anywhere.
    let slot = match Arc::clone(slots).try_acquire_owned() {
        Ok(slot) => Ok(slot),
        Err(_) => tokio::select! {
            biased;
            _ = cx.cancel.cancelled() => {
                return not_started(CallError::new(
                    ErrorCode::Cancelled,
                    "the call was cancelled while waiting for a free sandbox; it did not run",
                ));
            }
            slot = Arc::clone(slots).acquire_owned() => slot,
        },
    };
    // The semaphore is never closed.
    let Ok(slot) = slot else {
        return not_started(CallError::new(
            ErrorCode::HostError,
            "the sandbox is shutting down; the call did not run",
        ));
    };
    let host = HostState {
        plugin: Arc::from(tool.plugin.file_name()),
        progress: cx.progress.clone(),
        log: cx.log.clone(),
        children: cx.children.clone(),
        answers: Some(Arc::clone(&cx.answers)),
        sampling: job.grant.sampling.map(|grant| SamplingBudget {
            grant,
            session_tokens_left: grant
                .max_session_tokens
                .saturating_sub(cx.session_sampled_tokens),
        }),
        announced: tool
            .plugin
            .loaded
            .announces()
            .then(|| Announced::new(tool.plugin.catalog().prefixes.clone())),
        reoffered: tool
            .plugin
            .loaded
            .announces()
            .then(|| tool.plugin.offers().reoffered()),
        ..HostState::new(
            Arc::clone(&tool.name),
            cx.call_id.shared(),
            cx.cancel.clone(),
        )
    };
    let stop_at = tokio::time::Instant::now() + timeout;
    let (mut store, pipes) =
        match new_store(engine, code, job.grant, job.place, host, fuel, stop_at) {
            Ok(created) => created,
            Err(e) => return not_started(e),
        };
    let context = CallContext {
        call_id: cx.call_id.as_str().to_owned(),
        session_id: cx.session.as_str().to_owned(),
        workspace: (job.grant.fs != FsAccess::None).then(|| GUEST_WORKSPACE.to_owned()),
    };
    // Pinned here and lent to `race`, not moved into it: the guest's
    // future (over a kilobyte) is then stored once, not copied at each
    // level. It is dropped at the end of this block, when `race` is done.
    let outcome = {
        let _ticking = engine.ticking();
        let guest = std::pin::pin!(code.invoke(&mut store, &tool.spec.name, job.args, context,));
        race(guest, stop_at, &cx.cancel).await
    };
    // A guest stopped mid-run leaves its fuel counter on the dropped fiber, so
    // the store's count is only meaningful when the call came back by itself.
    let fuel_used = match &outcome {
        Ok(_) => store.get_fuel().ok().map(|left| fuel.saturating_sub(left)),
        Err(_) => None,
    };
    log_stdio(
        &pipes,
        &tool.spec.name,
        cx.call_id.as_str(),
        engine.secrets(),
    );
    // A stopped call is reported against its deadline, not against what
    // was left of it for this attempt.
    let result = classify(outcome, &store, &pipes, deadline);
    let requests = store.data().requests();
    let asked = store.data_mut().take_asked();
    let made = Made {
        announced: store.data_mut().take_announced(),
        reoffered: store.data_mut().take_reoffered(),
    };
    release(Teardown::new(store, slot));
    Attempt {
        result,
        fuel_used,
        requests,
        asked,
        made,
        started: true,
    }
}
