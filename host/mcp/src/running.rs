//! Running one `tools/call` for a connection: its first poll on the
//! connection's thread, the rest on the calls' runtime, and cancellation
//! when the client or the transport gives up.

use super::Server;
use crate::call::{CallRequest, CancelToken};
use crate::outcome::{CallResult, ErrorCode};
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use tokio::task::JoinHandle;

impl Server {
    /// Runs the call: here, if it finishes in its first poll (most do: the
    /// governed path and a short plugin call never wait), else on a task of
    /// its own on the calls' runtime, so that it always finishes (and is
    /// recorded) even if the transport drops this future; dropping it, or
    /// the client's cancellation, cancels the call.
    pub(super) async fn run(
        &self,
        request: CallRequest,
        cx: &RequestContext<RoleServer>,
    ) -> CallResult {
        let cancel = request.cancel.clone();
        let (tool, call_id) = (request.tool.clone(), request.call_id.clone());
        let host = Arc::clone(&self.host);
        let mut call = match self.start(async move { host.handle(request).await }) {
            Started::Finished(result) => return result,
            Started::Elsewhere(task) => StopOnDrop::new(task, cancel),
        };
        let finished = tokio::select! {
            result = call.join() => result,
            _ = cx.ct.cancelled() => {
                call.stop();
                call.join().await
            }
        };
        finished.unwrap_or_else(|e| self.lost(tool, call_id, &e))
    }

    /// What a call run elsewhere came to: its result, or, if its task
    /// failed, the host's failure, recorded like any refusal.
    pub(super) fn joined(
        &self,
        finished: Result<CallResult, tokio::task::JoinError>,
        request: &CallRequest,
    ) -> CallResult {
        finished.unwrap_or_else(|e| self.lost(request.tool.clone(), request.call_id.clone(), &e))
    }

    fn lost(
        &self,
        tool: String,
        call_id: crate::call::CallId,
        e: &tokio::task::JoinError,
    ) -> CallResult {
        let error = crate::outcome::CallError::new(
            ErrorCode::HostError,
            format!("the call's task failed: {e}"),
        );
        let mut request = CallRequest::new(tool, "{}");
        request.call_id = call_id;
        self.host.refuse(request, error)
    }
}

/// Where a call stands once started.
#[expect(
    clippy::large_enum_variant,
    reason = "lives on the stack for one match; boxing the result would cost an allocation per call"
)]
enum Started {
    Finished(CallResult),
    Elsewhere(JoinHandle<CallResult>),
}

impl Server {
    /// Polls `call` once here; if it must wait, it goes on on the calls'
    /// runtime. The box keeps the future where its first poll left it
    /// (registered as a waiter, a timer armed) while it changes threads;
    /// the task's first poll replaces the no-op waker, and wakers work
    /// across runtimes.
    fn start(&self, call: impl Future<Output = CallResult> + Send + 'static) -> Started {
        let mut call = Box::pin(call);
        let waker = std::task::Waker::noop();
        match call
            .as_mut()
            .poll(&mut std::task::Context::from_waker(waker))
        {
            Poll::Ready(result) => Started::Finished(result),
            Poll::Pending => Started::Elsewhere(self.elsewhere(call)),
        }
    }

    /// Runs `request` from the start on the calls' runtime.
    pub(super) fn spawn_call(&self, request: CallRequest) -> JoinHandle<CallResult> {
        let host = Arc::clone(&self.host);
        self.elsewhere(async move { host.handle(request).await })
    }

    /// `call` on the calls' runtime; a stdio connection is told when it ends.
    fn elsewhere(
        &self,
        call: impl Future<Output = CallResult> + Send + 'static,
    ) -> JoinHandle<CallResult> {
        let waiting = self.waiting.clone();
        self.calls.spawn(async move {
            let result = call.await;
            if let Some(waiting) = waiting {
                waiting.answer_ready();
            }
            result
        })
    }
}

/// A run on the calls' runtime, stopped if whoever waits for it goes away
/// (the transport drops a request's future; a task's TTL running out aborts
/// the task's). The token is shared with reruns of the same request.
pub(super) struct StopOnDrop {
    run: JoinHandle<CallResult>,
    cancel: Option<CancelToken>,
}

impl StopOnDrop {
    pub(super) fn new(run: JoinHandle<CallResult>, cancel: CancelToken) -> StopOnDrop {
        StopOnDrop {
            run,
            cancel: Some(cancel),
        }
    }

    pub(super) fn stop(&self) {
        if let Some(cancel) = &self.cancel {
            cancel.cancel();
        }
    }

    /// The run's result, once it has ended (cancel-safe).
    pub(super) async fn join(&mut self) -> Result<CallResult, tokio::task::JoinError> {
        let result = (&mut self.run).await;
        self.cancel = None;
        result
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.stop();
    }
}
