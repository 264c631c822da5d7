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
//! never decides whether a call may run.

mod run;
mod teardown;

pub use crate::engine::{RawOutput, ToolFailure};
pub use run::RunContext;
pub use teardown::{defer_on_this_thread, finish_deferred};

use crate::approval::PreparedCall;
use crate::engine::Engine;
use crate::outcome::CallError;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// How a call ended inside the sandbox, before its output is checked.
#[derive(Debug)]
pub struct Execution {
    /// The tool returned (a value or its own error), or the call was stopped.
    pub result: Result<Result<RawOutput, ToolFailure>, CallError>,
    pub fuel_used: Option<u64>,
    /// Every request the call sent or tried to send, in order.
    pub requests: Vec<crate::egress::RequestRecord>,
}

#[derive(Debug)]
pub struct Sandbox {
    engine: Engine,
    /// One permit per call instance the pool holds (`limits.max_instances`).
    slots: Arc<Semaphore>,
}

impl Sandbox {
    pub fn new(engine: Engine) -> Sandbox {
        let slots = Arc::new(Semaphore::new(engine.limits().max_instances as usize));
        Sandbox { engine, slots }
    }

    /// The engine plugins are loaded on.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Sandbox instances free right now.
    pub fn free_instances(&self) -> usize {
        self.slots.available_permits()
    }

    /// Runs a prepared call to the end: returned, failed, or stopped.
    pub async fn run(&self, call: PreparedCall, cx: RunContext) -> Execution {
        run::invoke(&self.engine, &self.slots, call, cx).await
    }
}
