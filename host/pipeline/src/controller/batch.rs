//! A model turn's calls as one batch: parallel-safe neighbours run
//! together, everything else alone (see [`crate::scheduler`]), within the
//! turn's call budget. Each call still goes through the whole pipeline
//! (`Controller::handle`); this only decides what runs beside what.

use super::Controller;
use crate::call::CallRequest;
use crate::outcome::{CallError, CallResult, ErrorCode};
use crate::scheduler;
use futures::StreamExt;
use std::sync::Arc;

impl Controller {
    /// Runs the calls of one model turn: parallel-safe neighbours together,
    /// everything else alone (see [`crate::scheduler`]). Results come back in
    /// call order. Calls beyond `budget.max_calls_per_turn` do not run.
    pub async fn handle_batch(&self, mut calls: Vec<CallRequest>) -> Vec<CallResult> {
        let turn = crate::call::fresh_id();
        for call in &mut calls {
            call.turn.get_or_insert_with(|| Arc::clone(&turn));
        }
        let over = match self.config.budget.max_calls_per_turn {
            Some(max) if calls.len() as u64 > max => calls.split_off(max as usize),
            Some(_) | None => Vec::new(),
        };
        let mut results = Vec::with_capacity(calls.len() + over.len());
        for group in scheduler::groups(&self.registry(), calls) {
            let done: Vec<CallResult> = futures::stream::iter(group)
                .map(|call| self.handle(call))
                .buffered(self.config.max_parallel)
                .collect()
                .await;
            results.extend(done);
        }
        for call in over {
            let refusal = CallError::new(
                ErrorCode::BudgetExceeded,
                "this turn asked for more calls than `budget.max_calls_per_turn` allows; this one did not run",
            );
            results.push(self.refuse(call, refusal));
        }
        results
    }
}
