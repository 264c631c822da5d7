//! The trail of one call: the audit events its steps produced, the trace
//! the caller asked for, and the run the session's budgets count. The
//! controller fills it step by step and hands it to the audit log at the
//! end; it never decides anything about the call.

use crate::audit::{Event, Subject};
use crate::call::{CallRequest, Tracing};
use crate::outcome::{CallError, ErrorCode, Status, TraceStep};
use crate::store::ExecutionRow;
use crate::workspace::LocatedPath;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// What happened on the way, for the audit trail.
pub(super) struct Trail {
    /// Which call the records are about; shared by both of its appends.
    pub(super) subject: Arc<Subject>,
    pub(super) events: Vec<Event>,
    pub(super) ran: bool,
    /// The run the session's budgets count, once the call ran.
    pub(super) execution: Option<ExecutionRow>,
    pub(super) fuel_used: Option<u64>,
    /// The plugin build the call ran on, once it ran.
    pub(super) ran_on: Option<crate::audit::RanOn>,
    /// Steps taken so far, when the caller asked for a trace.
    pub(super) trace: Option<Vec<TraceStep>>,
    /// The step under way, and since when.
    pub(super) step: Option<(&'static str, Instant)>,
    /// The keyed call whose recorded output answered this one.
    pub(super) replayed_from: Option<String>,
    /// The calls the tool made through `compose`, in order.
    pub(super) children: Vec<crate::outcome::ChildCall>,
}

impl Trail {
    pub(super) fn new(request: &CallRequest) -> Trail {
        let trace = match request.tracing {
            Tracing::Off => None,
            Tracing::Steps => Some(Vec::new()),
        };
        Trail {
            subject: Arc::new(Subject::of(request)),
            events: Vec::new(),
            ran: false,
            execution: None,
            fuel_used: None,
            ran_on: None,
            trace,
            step: None,
            replayed_from: None,
            children: Vec::new(),
        }
    }

    pub(super) fn begin(&mut self, step: &'static str) {
        if self.trace.is_some() {
            self.step = Some((step, Instant::now()));
        }
    }

    /// Hands the events so far to the audit log before a plugin runs: with
    /// `durability = "sync"` nothing runs unless they are on disk; batched,
    /// they are queued ahead of the end. `refused` says what did not happen
    /// when they cannot be written.
    pub(super) fn commit(
        &mut self,
        records: &crate::records::Records,
        refused: &str,
    ) -> Result<(), CallError> {
        records
            .audit_log()
            .record(&self.subject, std::mem::take(&mut self.events), None)
            .map_err(|e| {
                CallError::new(
                    ErrorCode::HostError,
                    format!("the audit log could not be written, so {refused}: {e}"),
                )
            })
    }

    /// Records how a request for a prompt or a resource ended: its size and
    /// blocks, or the error.
    pub(super) fn record_end(
        mut self,
        records: &crate::records::Records,
        started: Instant,
        outcome: Result<(usize, Vec<crate::content::Block>), &CallError>,
    ) {
        let (status, error, bytes, blocks) = match outcome {
            Ok((bytes, blocks)) => (Status::Ok, None, bytes, blocks),
            Err(error) => (error.code.status(), Some(error), 0, Vec::new()),
        };
        let duration_us = started.elapsed().as_micros() as u64;
        self.close(status, error, duration_us, bytes, None, &blocks);
        let events = std::mem::take(&mut self.events);
        if let Err(e) = records.audit_log().record(&self.subject, events, None) {
            tracing::error!(
                call = &*self.subject.call_id,
                "the audit trail of `{}` could not be written: {e}",
                self.subject.tool
            );
        }
    }

    /// Closes the step under way with what it found.
    pub(super) fn end(&mut self, outcome: impl FnOnce() -> String) {
        if let (Some(trace), Some((step, since))) = (&mut self.trace, self.step.take()) {
            trace.push(TraceStep {
                step,
                us: since.elapsed().as_micros() as u64,
                outcome: outcome(),
            });
        }
    }

    /// Adds the event that says how the call ended: its outcome if it ran,
    /// the refusal if it did not.
    pub(super) fn close(
        &mut self,
        status: Status,
        error: Option<&CallError>,
        duration_us: u64,
        output_bytes: usize,
        value: Option<Value>,
        blocks: &[crate::content::Block],
    ) {
        let answered = self.ran || (error.is_none() && self.replayed_from.is_some());
        let last = match (error, answered) {
            (error, true) => Event::Outcome {
                status,
                code: error.as_ref().map(|e| e.code),
                message: error.as_ref().map(|e| e.message.clone()),
                duration_us,
                fuel_used: self.fuel_used,
                output_bytes,
                value,
                content: blocks.iter().map(Into::into).collect(),
                plugin: self.ran_on.take(),
            },
            (Some(e), false) => Event::Refused {
                code: e.code,
                message: e.message.clone(),
            },
            (None, false) => Event::Refused {
                code: ErrorCode::HostError,
                message: "ended without running".into(),
            },
        };
        self.events.push(last);
    }
}

/// What the path step found, for `call --trace`.
pub(super) fn describe_paths(paths: &[LocatedPath]) -> String {
    if paths.is_empty() {
        return "no path arguments".into();
    }
    let each: Vec<String> = paths.iter().map(LocatedPath::to_string).collect();
    each.join("; ")
}
