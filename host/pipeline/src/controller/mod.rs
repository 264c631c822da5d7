//! The controller: the one place that orders the pipeline, and the only path
//! from a request to a plugin.
//!
//! materialize -> resolve -> validate -> authorize -> guard -> approve -> run
//! -> check. Each step takes the previous step's type by value and returns
//! the next, so the order is checked by the compiler; this file wires them,
//! writes the audit trail (everything before execution is on disk before the
//! plugin starts), and turns the outcome into a [`CallResult`]. It holds no
//! rule of its own.

mod batch;
mod children;
mod offer;
mod preview;
mod prompts;
mod resources;
mod sampling;
mod serving;
mod setup;
mod shown;

pub use prompts::{OfferRequest, PROMPT_RECORD_PREFIX};
pub use resources::RESOURCE_RECORD_PREFIX;
pub use shown::ShownCall;
mod trail;

use crate::approval;
use crate::audit::Event;
use crate::call::CallRequest;
use crate::config::Config;
use crate::guards::Guards;
use crate::idempotency::{self, Claimed, Keys};
use crate::materialize::Arguments;
use crate::outcome::{CallError, CallResult, ErrorCode, Status};
use crate::output::{self, CheckedOutput};
use crate::policy::{Caller, Verdict, Who};
use crate::records::Records;
use crate::registry::{Plugin, Registry, Tool};
use crate::sandbox::{RunContext, Sandbox};
use crate::validation;
use crate::workspace::Workspace;
use children::Children;
use std::sync::{Arc, RwLock, Weak};
use std::time::Instant;
use trail::{Trail, describe_paths};

/// The state directory's subdirectory that calls are rehearsed in.
const REHEARSALS_DIR: &str = "rehearsals";

/// A loaded host: config, registry, guards, records and sandbox.
#[derive(Debug)]
pub struct Controller {
    /// The host itself, lent to the calls its tools make through `compose`.
    me: Weak<Controller>,
    config: Config,
    /// Swapped whole on reload; a call holds the `Arc` of the version it
    /// started with until it ends.
    registry: RwLock<Arc<Registry>>,
    workspace: Workspace,
    guards: Guards,
    records: Records,
    sandbox: Sandbox,
    keys: Keys,
    owners: crate::ownership::Owners,
}

/// What `inspect` reports about one plugin file.
#[derive(Debug)]
pub struct Inspection {
    pub plugin: Arc<Plugin>,
    pub tools: Vec<Tool>,
}

impl Controller {
    /// Runs one call through the whole pipeline. Always returns a result.
    pub async fn handle(&self, request: CallRequest) -> CallResult {
        let started = Instant::now();
        let mut trail = Trail::new(&request);
        let outcome = self.pipeline(&request, &mut trail).await;
        self.finish(request, trail, outcome, started)
    }

    /// Refuses a call before the pipeline sees it (over a turn's budget, or
    /// a front end found it unusable, e.g. a replayed MCP request state),
    /// recorded like any other refusal.
    pub fn refuse(&self, request: CallRequest, error: CallError) -> CallResult {
        let trail = Trail::new(&request);
        self.finish(request, trail, Err(error), Instant::now())
    }

    /// Records how a call ended and freezes its result.
    fn finish(
        &self,
        request: CallRequest,
        mut trail: Trail,
        outcome: Result<CheckedOutput, CallError>,
        started: Instant,
    ) -> CallResult {
        let subject = Arc::clone(&trail.subject);
        if let Err(error) = &outcome {
            trail.end(|| format!("stopped: {}: {}", error.code, error.message));
        }
        let duration_us = started.elapsed().as_micros() as u64;
        let (status, value, content, blocks, error) = match outcome {
            Ok(checked) => {
                let (value, content, blocks) = checked.into_parts();
                (Status::Ok, Some(value), Some(content), blocks, None)
            }
            Err(error) => (error.code.status(), None, None, Vec::new(), Some(error)),
        };
        let output_bytes = content.as_ref().map_or(0, String::len)
            + blocks
                .iter()
                .map(crate::content::Block::size)
                .sum::<usize>();
        trail.close(
            status,
            error.as_ref(),
            duration_us,
            output_bytes,
            value.clone(),
            &blocks,
        );
        let events = std::mem::take(&mut trail.events);
        if let Err(e) = self
            .records
            .audit_log()
            .record(&subject, events, trail.execution.take())
        {
            tracing::error!(
                call = &*subject.call_id,
                "the audit trail of this call could not be written: {e}"
            );
        }
        tracing::debug!(
            call = &*subject.call_id,
            tool = &*subject.tool,
            ?status,
            duration_us,
            "call finished"
        );
        CallResult {
            call_id: subject.call_id.to_string(),
            tool: request.tool,
            status,
            value,
            content,
            blocks,
            approval_id: error.as_ref().and_then(|e| e.approval_id.clone()),
            questions: error
                .as_ref()
                .map(|e| e.questions.clone())
                .unwrap_or_default(),
            error,
            duration_us,
            fuel_used: trail.fuel_used,
            trace: trail.trace.unwrap_or_default(),
            replayed_from: trail.replayed_from,
            children: trail.children,
        }
    }

    async fn pipeline(
        &self,
        request: &CallRequest,
        trail: &mut Trail,
    ) -> Result<CheckedOutput, CallError> {
        if request.cancel.is_cancelled() {
            return Err(CallError::new(
                ErrorCode::Cancelled,
                "the call was cancelled before it started; it did not run",
            ));
        }
        trail.begin("materialize");
        let args = Arguments::from_raw(&request.args)?;
        trail.end(|| format!("canonical arguments, SHA-256 {}", &args.digest()[..16]));
        trail.events.push(Event::Call {
            args: args.shared_value(),
            args_digest: args.shared_digest(),
            profile: request.profile.clone(),
            turn: request.turn.clone(),
            parent: request.lineage.as_ref().map(|l| l.parent_call_id.shared()),
            root: request.lineage.as_ref().map(|l| l.root_call_id.shared()),
            caller: request.caller.clone(),
        });
        if let Some(caller) = request.caller.as_deref() {
            trail.begin("session");
            self.owners.check(&request.session, caller)?;
            trail.end(|| format!("the session is `{}`'s to use", caller.subject));
        }
        if request.lineage.is_some() {
            trail.begin("nesting");
            self.config
                .nesting
                .check(request.lineage.as_deref(), &request.tool)?;
            trail.end(|| "within the depth and fan-out bounds, no cycle".into());
        }
        trail.begin("resolve");
        let tools = self.config.tool_set(request.profile.as_deref());
        let resolved = self.registry().resolve(&request.tool, args, &tools)?;
        trail.end(|| format!("plugin `{}`", resolved.tool().plugin.file_name()));
        trail.begin("validate");
        let validated = validation::validate(resolved)?;
        trail.end(|| "the arguments match the input schema".into());
        trail.begin("paths");
        let (located, _lease) = self.workspace.locate(validated).await?;
        trail.end(|| describe_paths(located.paths()));
        if located.written().is_some() {
            trail.events.push(Event::Paths {
                paths: located.paths().to_vec(),
                uris: located.uris().to_vec(),
                args_digest: located.call().resolved().args().shared_digest(),
            });
        }
        trail.begin("policy");
        let caller = match &request.lineage {
            Some(lineage) => Caller::Tool(lineage.parent_tool()),
            None => Caller::Agent,
        };
        let authorized = match self.config.policy.authorize(
            located,
            self.config.sandbox,
            (caller, Who::Known(request.caller.as_deref())),
        ) {
            Ok(authorized) => authorized,
            Err(denied) => {
                trail.events.push(Event::policy(&denied.decision));
                return Err(approval::policy_refused(denied.error(), request));
            }
        };
        trail.events.push(Event::policy(authorized.decision()));
        trail.end(|| {
            format!(
                "{}: {}",
                authorized.decision().verdict.as_str(),
                authorized.decision().reason
            )
        });
        // A keyed call whose policy lets it run (or that brings the
        // approval it ran under) may be answered from its key's record; a
        // call that still needs a person's approval is not looked up.
        let keyed = authorized.call().resolved().tool().spec.keyed
            && (authorized.decision().verdict == Verdict::Allow || request.approval.is_some());
        let claim = if keyed {
            trail.begin("idempotency");
            let key = idempotency::key(
                request.session.as_str(),
                &request.tool,
                authorized.call().resolved().args().digest(),
                request.approval.as_deref(),
            );
            match self.keys.claim(key.clone(), &request.call_id)? {
                Claimed::Replay {
                    original_call_id,
                    output,
                } => {
                    trail.end(|| format!("answered with the output of `{original_call_id}`"));
                    trail.events.push(Event::Replayed {
                        key,
                        original_call_id: original_call_id.clone(),
                    });
                    trail.replayed_from = Some(original_call_id);
                    return Ok(output);
                }
                Claimed::Fresh(claim) => {
                    trail.end(|| format!("key {} claimed", &claim.key()[..16]));
                    Some(claim)
                }
            }
        } else {
            None
        };
        // A call a person is asked about is shown to them, once the
        // approval exists (see `preview`).
        let previewed = (authorized.decision().verdict == Verdict::Ask).then(|| {
            let resolved = authorized.call().resolved();
            preview::Previewed {
                tool: Arc::clone(resolved.tool()),
                args: resolved.args().canonical().to_owned(),
                grant: authorized.grant().clone(),
            }
        });
        trail.begin("guards");
        let (admitted, reservation) = self.blocking_on_the_store(|| {
            self.guards
                .check(authorized, (&request.session, request.caller.as_deref()))
        })?;
        trail.end(|| "sandbox mode, paths, budgets and duplicates: passed".into());
        trail.begin("approval");
        let mut noted = Vec::new();
        let admission =
            self.records
                .approval_book()
                .admit(admitted, request, &self.workspace, &mut noted);
        let asked = noted.iter().find_map(|step| match step {
            approval::ApprovalStep::Asked { approval_id, .. } => Some(approval_id.clone()),
            approval::ApprovalStep::Consumed { .. } => None,
        });
        trail.events.extend(noted.into_iter().map(Event::from));
        if let (Some(id), Some(previewed)) = (asked, previewed) {
            self.preview(request, &id, previewed, trail).await;
        }
        let prepared = admission?;
        trail.end(|| {
            format!(
                "cleared to run with filesystem {}, network {}",
                prepared.grant().fs.as_str(),
                prepared.grant().net
            )
        });
        trail.begin("audit");
        trail.commit(&self.records, "the call did not run")?;
        trail.end(|| "the call and its decisions are committed".into());
        trail.ran = true;
        let tool = Arc::clone(prepared.tool());
        trail.ran_on = Some(crate::audit::RanOn(Arc::clone(&tool.plugin)));
        // Like a wait for a free sandbox, a wait for the plugin's code ends
        // in an outcome (cancelled, it says the call did not run), and it
        // is not run time: the budget's clock starts after it.
        self.sandbox.code_ready(&prepared, &request.cancel).await?;
        let children = tool
            .plugin
            .loaded
            .composes()
            .then(|| Arc::new(Children::of(self.me.clone(), request, &tool.name)));
        let cx = RunContext {
            call_id: request.call_id.clone(),
            session: request.session.clone(),
            cancel: request.cancel.clone(),
            progress: request.progress.clone(),
            log: request.log.clone(),
            children: children
                .clone()
                .map(|c| c as Arc<dyn crate::call::ChildCalls>),
            answers: Arc::new(request.answers.clone()),
            session_sampled_tokens: if tool.plugin.loaded.samples() {
                self.sampled_tokens(&request.session)
            } else {
                0
            },
        };
        let started = Instant::now();
        trail.begin("sandbox");
        let execution = self.sandbox.run(prepared, cx, &self.workspace).await;
        // A run that stopped at a question, or whose rehearsed change the
        // sandbox refused to apply, took no effect a repeat would double:
        // it counts as a call, not as a run with these arguments.
        let took_no_effect = matches!(
            &execution.result,
            Err(e) if matches!(e.code, ErrorCode::InputRequired | ErrorCode::ApprovalInvalid)
        );
        if let Err(e) = &execution.result
            && e.code == ErrorCode::InputRequired
        {
            self.charge_sampled_tokens(&request.session, &e.questions);
        }
        trail.execution = Some(if took_no_effect {
            reservation.stopped_to_ask(started.elapsed())
        } else {
            reservation.executed(started.elapsed())
        });
        trail.fuel_used = execution.fuel_used;
        trail
            .events
            .extend(execution.retried.into_iter().map(Event::Retried));
        trail
            .events
            .extend(execution.requests.into_iter().map(Event::Request));
        trail
            .events
            .extend(execution.asked.into_iter().map(Event::Question));
        if !execution.reoffer.is_empty() {
            trail.events.push(Event::ToolsOffered(execution.reoffer));
        }
        let attached = match children {
            Some(children) => {
                children.settle().await;
                let (calls, contents) = children.finished();
                trail.children = calls;
                Some(contents)
            }
            None => None,
        };
        let returned = execution.result?;
        trail.end(|| {
            format!(
                "instantiated and ran, fuel used {}",
                execution.fuel_used.unwrap_or(0)
            )
        });
        trail.begin("output");
        let max_bytes = self.config.limits.max_output_bytes;
        let mut checked = output::check(&tool, returned, max_bytes)?;
        if let Some(contents) = attached.filter(|c| !c.is_empty()) {
            checked = checked.with_children(contents, max_bytes);
        }
        trail.end(|| "size and output schema: ok".into());
        if let Some(claim) = claim {
            claim.complete(&checked);
        }
        Ok(checked)
    }
}

impl Controller {
    /// Runs a step that may wait for the shared store (a round trip to
    /// PostgreSQL) so that it holds up only its own call: on a multi-thread
    /// runtime the worker hands its other tasks on while it waits. On
    /// SQLite, or on a current-thread runtime (a stdio connection's own
    /// thread), the step just runs.
    fn blocking_on_the_store<T>(&self, step: impl FnOnce() -> T) -> T {
        let multi_thread = tokio::runtime::Handle::try_current().is_ok_and(|handle| {
            handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
        });
        if multi_thread && self.records.store().is_shared() {
            tokio::task::block_in_place(step)
        } else {
            step()
        }
    }
}
