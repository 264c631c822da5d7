//! Runs a cleared call's plugin code, and nothing else does: the pipeline
//! step after approval.
//!
//! [`Sandbox::run`] takes a [`PreparedCall`] by value: a call reaches a
//! plugin only after every earlier step said yes, and only once. Each call
//! gets a fresh `Store` (built by the [`Engine`]) with exactly the granted
//! preopens (none, or the workspace at `/workspace` read-only or
//! read-write), requests only to the granted origins, no sockets, no
//! environment, no arguments, captured and
//! capped stdio, fuel, a memory limit, a wall-clock deadline and
//! cancellation; the store is dropped afterwards, whatever happened. It
//! never decides whether a call may run. A call that failed where trying
//! again cannot do harm is run again in a fresh store ([`retry`]), within
//! the same deadline.

mod mask;
mod preview;
mod rehearse;
mod retry;
mod run;
mod teardown;

pub use rehearse::changes_the_workspace;
pub use retry::{Retried, Retry, RetrySection};

pub use crate::engine::{RawOutput, ToolFailure};
pub use run::RunContext;
pub use teardown::{defer_on_this_thread, finish_deferred};

use crate::approval::PreparedCall;
use crate::changes::Reoffer;
use crate::engine::Engine;
use crate::outcome::{CallError, ErrorCode};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Semaphore;

/// How a call ended inside the sandbox, before its output is checked.
#[derive(Debug)]
pub struct Execution {
    /// The tool returned (a value or its own error), or the call was stopped.
    pub result: Result<Result<RawOutput, ToolFailure>, CallError>,
    pub fuel_used: Option<u64>,
    /// Every request the call sent or tried to send, in order.
    pub requests: Vec<crate::egress::RequestRecord>,
    /// The questions the tool asked (`ask`), with their answers, in order.
    pub asked: Vec<crate::question::Asked>,
    /// The attempts that failed and were tried again, in order.
    pub retried: Vec<Retried>,
    /// The plugin's tools the call offered again or withdrew.
    pub reoffer: Reoffer,
}

#[derive(Debug)]
pub struct Sandbox {
    engine: Engine,
    /// One permit per call instance the pool holds (`limits.max_instances`).
    slots: Arc<Semaphore>,
    retry: Retry,
    /// Where the copies of the workspace that calls are rehearsed in go.
    rehearsals: std::path::PathBuf,
    rehearsal_limits: crate::workspace::ScratchLimits,
    /// Who hears of the changes calls make (resources, tools offered).
    changes: crate::changes::Changes,
}

impl Sandbox {
    /// A sandbox on `engine`; calls are rehearsed in copies under
    /// `rehearsals` (a directory of the host's own), as large as `limits`
    /// allows.
    pub fn new(
        engine: Engine,
        retry: Retry,
        rehearsals: std::path::PathBuf,
        limits: crate::workspace::ScratchLimits,
    ) -> Sandbox {
        let slots = Arc::new(Semaphore::new(engine.limits().max_instances as usize));
        Sandbox {
            engine,
            slots,
            retry,
            rehearsals,
            rehearsal_limits: limits,
            changes: Default::default(),
        }
    }

    /// The engine plugins are loaded on.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Where the changes that calls make (resources announced, tools
    /// offered or withdrawn) are told: a run's once it ends, whether or
    /// not it succeeded (what it did before it failed is done); a
    /// rehearsal's never; an approved rehearsed call's once its change is
    /// applied.
    pub fn changes(&self) -> &crate::changes::Changes {
        &self.changes
    }

    /// Makes what a run of one of `plugin`'s tools changed real, tells the
    /// listeners, and says which tools it offered or withdrew.
    fn make_real(&self, plugin: &crate::registry::Plugin, made: run::Made) -> Reoffer {
        self.changes.tell_resources(made.announced);
        let reoffer = plugin.offers().apply(made.reoffered);
        if !reoffer.is_empty() {
            tracing::info!(
                plugin = plugin.file_name(),
                offered = ?reoffer.offered,
                withdrawn = ?reoffer.withdrawn,
                "a plugin changed the tools it offers"
            );
            self.changes.tell_tools();
        }
        reoffer
    }

    /// Sandbox instances free right now.
    pub fn free_instances(&self) -> usize {
        self.slots.available_permits()
    }

    /// Waits until the optimized code of `call`'s plugin is built, which
    /// only a plugin loaded moments ago may still lack; it compiles that
    /// plugin alone if no one is compiling it yet. Run before the call's
    /// clock starts: compiling is neither its run time nor its deadline.
    pub async fn code_ready(
        &self,
        call: &PreparedCall,
        cancel: &crate::call::CancelToken,
    ) -> Result<(), CallError> {
        run::code_of(&call.tool().plugin, cancel).await.map(|_| ())
    }

    /// Runs a prepared call to the end: returned, failed, or stopped. A
    /// call approved after a rehearsal runs in a copy of `workspace` and
    /// changes it only by the approved change (see [`rehearse`]).
    pub async fn run(
        &self,
        call: PreparedCall,
        cx: RunContext,
        workspace: &crate::workspace::Workspace,
    ) -> Execution {
        if let Some(approved) = call.rehearsed() {
            return self
                .run_rehearsed(&call, approved, &cx, workspace)
                .await
                .masked(self.engine.secrets());
        }
        let tool = call.tool();
        let deadline = self.engine.limits().timeout_for(tool.spec.timeout_ms);
        let began = Instant::now();
        let mut fuel_used = None;
        let mut requests = Vec::new();
        let mut asked = Vec::new();
        let mut retried = Vec::new();
        let mut reoffer = Reoffer::default();
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let remaining = deadline.saturating_sub(began.elapsed());
            let job = run::Job::of(&call);
            let mut tried =
                run::invoke(&self.engine, &self.slots, &job, &cx, deadline, remaining).await;
            fuel_used = match (fuel_used, tried.fuel_used) {
                (Some(before), Some(now)) => Some(before + now),
                (before, now) => now.or(before),
            };
            requests.append(&mut tried.requests);
            asked.append(&mut tried.asked);
            reoffer = reoffer.and(self.make_real(&tool.plugin, std::mem::take(&mut tried.made)));
            let backoff = self.retry.backoff_after(attempt);
            let again = (attempt < self.retry.attempts)
                .then(|| retry::retryable(&tried.result, tried.started, tool.spec.effects))
                .flatten()
                .filter(|_| began.elapsed() + backoff < deadline);
            let Some((code, message)) = again else {
                return Execution {
                    result: tried.result,
                    fuel_used,
                    requests,
                    asked,
                    retried,
                    reoffer,
                }
                .masked(self.engine.secrets());
            };
            tracing::debug!(tool = %tool.spec.name, attempt, code = code.as_str(), "trying the call again");
            retried.push(Retried {
                attempt,
                code,
                message: message.to_owned(),
                backoff_ms: backoff.as_millis() as u64,
            });
            tokio::select! {
                biased;
                _ = cx.cancel.cancelled() => {
                    return Execution {
                        result: Err(CallError::new(
                            ErrorCode::Cancelled,
                            "the call was cancelled while waiting to try it again",
                        )),
                        fuel_used,
                        requests,
                        asked,
                        retried,
                        reoffer,
                    }
                    .masked(self.engine.secrets());
                }
                _ = tokio::time::sleep(backoff) => {}
            }
        }
    }
}
