//! The calls one running tool makes through `compose`. Each becomes a
//! [`CallRequest`] of its own, in the parent's session, profile and turn,
//! made by the parent's caller,
//! with its place in the tree ([`Lineage`]) and a cancellation token that
//! is a child of the parent's, and goes through [`Controller::handle`]
//! like any agent's call: nothing of the parent's grant or approval comes
//! with it. Decides nothing; keeps, in the order they were made, what each
//! child ended with, for the parent's result.

use super::Controller;
use crate::call::{CallId, SessionId};
use crate::call::{CallRequest, CancelToken, ChildCalls, ChildError, ChildOutput, Lineage};
use crate::outcome::{CallResult, ChildCall, ErrorCode};
use crate::output::ChildContent;
use futures::future::BoxFuture;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tokio_util::task::TaskTracker;

/// What one child ended with.
struct Ended {
    sibling: u32,
    call: ChildCall,
    content: Option<ChildContent>,
}

/// The `compose` door of one call.
pub(super) struct Children {
    host: Weak<Controller>,
    parent_call_id: CallId,
    root_call_id: CallId,
    /// The tools from the root down to the parent, the parent included.
    path: Vec<Arc<str>>,
    session: SessionId,
    profile: Option<Arc<str>>,
    turn: Option<Arc<str>>,
    caller: Option<Arc<crate::caller::Caller>>,
    cancel: CancelToken,
    /// Where the children's log lines go: where the parent's go.
    log: Option<crate::call::LogSink>,
    made: AtomicU32,
    ended: Arc<Mutex<Vec<Ended>>>,
    /// The children's tasks, so the parent ends after the last of them.
    running: TaskTracker,
}

impl std::fmt::Debug for Children {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Children")
            .field("parent_call_id", &self.parent_call_id)
            .field("made", &self.made)
            .finish()
    }
}

impl Children {
    /// The door for `request`, a call of `tool` about to run.
    pub(super) fn of(host: Weak<Controller>, request: &CallRequest, tool: &Arc<str>) -> Children {
        let (root_call_id, mut path) = match &request.lineage {
            Some(lineage) => (lineage.root_call_id.clone(), lineage.path.clone()),
            None => (request.call_id.clone(), Vec::new()),
        };
        path.push(Arc::clone(tool));
        Children {
            host,
            parent_call_id: request.call_id.clone(),
            root_call_id,
            path,
            session: request.session.clone(),
            profile: request.profile.clone(),
            turn: request.turn.clone(),
            caller: request.caller.clone(),
            cancel: request.cancel.clone(),
            log: request.log.clone(),
            made: AtomicU32::new(0),
            ended: Arc::default(),
            running: TaskTracker::new(),
        }
    }

    /// Waits until every child has ended. A parent stopped mid-wait has
    /// cancelled the child it waited for, which then ends within an epoch
    /// tick; waiting for it keeps the tree whole: no child outlives its
    /// parent's result, or its process, without an audit record.
    pub(super) async fn settle(&self) {
        self.running.close();
        self.running.wait().await;
    }

    /// Every child's summary, and the content of those that succeeded, in
    /// the order the tool made them.
    pub(super) fn finished(&self) -> (Vec<ChildCall>, Vec<ChildContent>) {
        let mut ended = std::mem::take(
            &mut *self
                .ended
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        ended.sort_by_key(|e| e.sibling);
        let mut calls = Vec::with_capacity(ended.len());
        let mut contents = Vec::new();
        for e in ended {
            calls.push(e.call);
            contents.extend(e.content);
        }
        (calls, contents)
    }
}

impl ChildCalls for Children {
    fn call(
        &self,
        tool: String,
        args: String,
    ) -> BoxFuture<'static, Result<ChildOutput, ChildError>> {
        let sibling = self.made.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        let mut request = CallRequest::new(tool, args).in_session(self.session.clone());
        request.profile = self.profile.clone();
        request.turn = self.turn.clone();
        request.caller = self.caller.clone();
        request.cancel = self.cancel.child_token();
        request.log = self.log.clone();
        request.lineage = Some(Arc::new(Lineage {
            parent_call_id: self.parent_call_id.clone(),
            root_call_id: self.root_call_id.clone(),
            path: self.path.clone(),
            depth: self.path.len() as u32,
            sibling,
        }));
        let call_id = request.call_id.to_string();
        let Some(host) = self.host.upgrade() else {
            return Box::pin(std::future::ready(Err(ChildError {
                call_id,
                code: ErrorCode::HostError.as_str(),
                message: "the host is shutting down; the call did not run".into(),
            })));
        };
        // The child runs as a task of its own, so that a parent stopped
        // mid-wait (deadline, cancellation) does not drop it half-way: the
        // guard cancels it, and it still ends with its audit record.
        let stop_child = request.cancel.clone().drop_guard();
        let task = self
            .running
            .spawn(async move { host.handle(request).await });
        let ended = Arc::clone(&self.ended);
        Box::pin(async move {
            let joined = task.await;
            stop_child.disarm();
            let result = match joined {
                Ok(result) => result,
                Err(e) => {
                    return Err(ChildError {
                        call_id,
                        code: ErrorCode::HostError.as_str(),
                        message: format!("the call stopped in the host: {e}"),
                    });
                }
            };
            let answer = answer(&result);
            let content = result.content.clone().map(|text| ChildContent {
                call_id: result.call_id.clone(),
                tool: result.tool.clone(),
                text,
                blocks: result.blocks.clone(),
            });
            ended
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(Ended {
                    sibling,
                    call: ChildCall {
                        call_id: result.call_id,
                        tool: result.tool,
                        status: result.status,
                        code: result.error.map(|e| e.code),
                    },
                    content,
                });
            answer
        })
    }
}

/// What the parent's plugin is told about a child's result.
fn answer(result: &CallResult) -> Result<ChildOutput, ChildError> {
    match (&result.value, &result.error) {
        (Some(value), None) => Ok(ChildOutput {
            call_id: result.call_id.clone(),
            value: value.to_string(),
            text: result.content.clone().unwrap_or_default(),
        }),
        (_, error) => Err(ChildError {
            call_id: result.call_id.clone(),
            code: error.as_ref().map_or("HOST_ERROR", |e| e.code.as_str()),
            message: error.as_ref().map_or_else(
                || "the call ended without a value".into(),
                |e| e.message.clone(),
            ),
        }),
    }
}
