//! Prompts (contract 0.3.0), governed like calls: the one place that
//! orders their steps. A request resolves to a prompt the session's
//! profile offers, its arguments are checked against the declaration, the
//! policy's prompt rules decide (default deny), and only then is the plugin
//! asked, in a sandbox that cannot write, reach the network or call tools;
//! what it renders is masked and held to the output limit. Every
//! `prompts/get` is in the audit log under the name `prompt:NAME`: the
//! request (arguments redacted like a call's), the decision and how it
//! ended. A completion is decided the same way and is not recorded (it
//! renders nothing and a client asks one per keystroke).

use super::Controller;
use super::trail::Trail;
use crate::audit::Event;
use crate::call::{CallId, CallRequest, RawArgs, SessionId};
use crate::materialize::Arguments;
use crate::outcome::{CallError, ErrorCode};
use crate::policy::{Decision, Offered, Verdict, Who};
use crate::prompt::{MAX_COMPLETIONS, RenderedPrompt};
use crate::registry::Prompt;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// The prefix a prompt's records carry in the audit log's tool column: no
/// tool name has a `:`, so a prompt's records never pass for a call's.
pub const PROMPT_RECORD_PREFIX: &str = "prompt:";

/// A request for a prompt (MCP `prompts/get`, or `completion/complete`
/// with the arguments filled in so far) or a resource (`resources/read`,
/// `resources/subscribe`, or a template's completion with the variables
/// filled in so far).
#[derive(Clone, Debug)]
pub struct OfferRequest {
    /// The prompt's name, or the resource's URI (a template's, to complete).
    pub name: String,
    pub arguments: BTreeMap<String, String>,
    pub session: SessionId,
    /// The profile the session declared; none: every prompt and resource.
    pub profile: Option<Arc<str>>,
    /// Who asks, as their channel proved it.
    pub caller: Option<Arc<crate::caller::Caller>>,
    /// The person's answers to the questions a prompt's rendering asked so
    /// far (a prompt only).
    pub answers: Arc<crate::question::Answers>,
}

impl OfferRequest {
    pub fn new(name: impl Into<String>) -> OfferRequest {
        OfferRequest {
            name: name.into(),
            arguments: BTreeMap::new(),
            session: SessionId::new(),
            profile: None,
            caller: None,
            answers: Arc::default(),
        }
    }
}

impl Controller {
    /// The prompts a session with `profile`, asked for by `caller`, is
    /// shown, each through `show`: those of its profile the policy lets it
    /// get.
    pub fn offered_prompts<R>(
        &self,
        profile: Option<&str>,
        caller: Option<&crate::caller::Caller>,
        mut show: impl FnMut(&Prompt) -> R,
    ) -> Vec<R> {
        let set = self.config.prompt_set(profile);
        self.registry()
            .prompts_in(&set)
            .filter(|prompt| {
                self.prompt_decision(prompt, Who::Known(caller)).verdict == Verdict::Allow
            })
            .map(|prompt| show(prompt))
            .collect()
    }

    fn prompt_decision(&self, prompt: &Prompt, who: Who<'_>) -> Decision {
        self.config.policy.decide_offered(
            Offered::Prompt,
            &prompt.spec.name,
            prompt.plugin.file_name(),
            who,
        )
    }

    /// The prompt a request names, if its session may have it.
    fn admitted_prompt(
        &self,
        request: &OfferRequest,
    ) -> Result<(Arc<Prompt>, Decision), CallError> {
        if let Some(caller) = request.caller.as_deref() {
            self.owners.check(&request.session, caller)?;
        }
        let set = self.config.prompt_set(request.profile.as_deref());
        let prompt = Arc::clone(self.registry().prompt(&request.name, &set)?);
        let decision = self.prompt_decision(&prompt, Who::Known(request.caller.as_deref()));
        Ok((prompt, decision))
    }

    /// Renders a prompt, governed and recorded. A rendering that asks the
    /// person a question without an answer in `request` ends
    /// `INPUT_REQUIRED` with the questions: ask, and render again with the
    /// answers.
    pub async fn get_prompt(&self, request: OfferRequest) -> Result<RenderedPrompt, CallError> {
        let started = Instant::now();
        let arguments = request
            .arguments
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        let (recorded, mut trail) = open_trail(PROMPT_RECORD_PREFIX, &request, arguments);
        let outcome = self.render(&request, &recorded, &mut trail).await;
        let summary = outcome.as_ref().map(|rendered| {
            let blocks = rendered.messages.iter().map(|m| m.content.clone());
            (rendered.size(), blocks.collect())
        });
        trail.record_end(&self.records, started, summary);
        outcome
    }

    async fn render(
        &self,
        request: &OfferRequest,
        recorded: &CallRequest,
        trail: &mut Trail,
    ) -> Result<RenderedPrompt, CallError> {
        record_request(recorded, trail)?;
        let (prompt, decision) = self.admitted_prompt(request)?;
        prompt
            .spec
            .admit(&request.arguments)
            .map_err(|m| CallError::new(ErrorCode::InvalidArgs, m))?;
        trail.events.push(Event::policy(&decision));
        if decision.verdict != Verdict::Allow {
            return Err(CallError::new(
                ErrorCode::PolicyDenied,
                decision.reason.to_string(),
            ));
        }
        trail.commit(&self.records, "the prompt was not rendered")?;
        trail.ran = true;
        trail.ran_on = Some(crate::audit::RanOn(Arc::clone(&prompt.plugin)));
        let name: Arc<str> = Arc::from(prompt.spec.name.as_str());
        let (rendered, asked) = self
            .sandbox
            .get_prompt(
                &prompt,
                &name,
                (&request.arguments, &request.answers),
                &recorded.call_id,
            )
            .await;
        trail.events.extend(asked.into_iter().map(Event::Question));
        let rendered = rendered?.map_err(crate::engine::ToolFailure::into_error)?;
        check_rendered(&rendered, self.config.limits.max_output_bytes)?;
        Ok(rendered)
    }

    /// Values for argument `argument` of the prompt `request` names, given
    /// `value` so far: at most [`MAX_COMPLETIONS`], none for a prompt the
    /// session may not get or an argument it does not take.
    pub async fn complete_prompt(
        &self,
        request: OfferRequest,
        argument: &str,
        value: &str,
    ) -> Result<Vec<String>, CallError> {
        let (prompt, decision) = self.admitted_prompt(&request)?;
        if decision.verdict != Verdict::Allow
            || !prompt.spec.arguments.iter().any(|a| a.name == argument)
        {
            return Ok(Vec::new());
        }
        let name: Arc<str> = Arc::from(prompt.spec.name.as_str());
        let values = self
            .sandbox
            .complete_prompt(
                &prompt,
                &name,
                (argument, value),
                &request.arguments,
                &CallId::new(),
            )
            .await?;
        bounded(values, self.config.limits.max_output_bytes)
    }
}

/// Completion values as they are passed on: the first [`MAX_COMPLETIONS`],
/// within the output limit.
pub(super) fn bounded(mut values: Vec<String>, max_bytes: usize) -> Result<Vec<String>, CallError> {
    values.truncate(MAX_COMPLETIONS);
    if values.iter().map(String::len).sum::<usize>() > max_bytes {
        return Err(too_large("completion values", max_bytes));
    }
    Ok(values)
}

/// The request as the audit log keeps it, under `prefix` and the name it
/// asked for, with its arguments; and its trail, empty.
pub(super) fn open_trail(
    prefix: &str,
    request: &OfferRequest,
    arguments: serde_json::Map<String, serde_json::Value>,
) -> (CallRequest, Trail) {
    let mut recorded = CallRequest::new(
        format!("{prefix}{}", request.name),
        RawArgs::from(arguments),
    )
    .in_session(request.session.clone());
    recorded.profile = request.profile.clone();
    recorded.caller = request.caller.clone();
    let trail = Trail::new(&recorded);
    (recorded, trail)
}

/// The request's first record: its arguments, redacted like a call's.
pub(super) fn record_request(recorded: &CallRequest, trail: &mut Trail) -> Result<(), CallError> {
    let args = Arguments::from_raw(&recorded.args)?;
    trail.events.push(Event::Call {
        args: args.shared_value(),
        args_digest: args.shared_digest(),
        profile: recorded.profile.clone(),
        turn: None,
        parent: None,
        root: None,
        caller: recorded.caller.clone(),
    });
    Ok(())
}

pub(super) fn too_large(what: &str, max: usize) -> CallError {
    CallError::new(
        ErrorCode::OutputTooLarge,
        format!("the plugin returned {what} over the {max}-byte limit (`limits.max_output_kb`)"),
    )
}

/// A rendered prompt as it may be passed on: within the output limit, at
/// least one message, every block one a client can read.
fn check_rendered(rendered: &RenderedPrompt, max_bytes: usize) -> Result<(), CallError> {
    if rendered.size() > max_bytes {
        return Err(too_large("a prompt", max_bytes));
    }
    if rendered.messages.is_empty() {
        return Err(CallError::new(
            ErrorCode::InvalidToolOutput,
            "the plugin rendered the prompt with no message; this is a defect in the plugin",
        ));
    }
    if let Some((at, problem)) = rendered
        .messages
        .iter()
        .enumerate()
        .find_map(|(i, m)| m.content.problem().map(|p| (i, p)))
    {
        return Err(CallError::new(
            ErrorCode::InvalidToolOutput,
            format!("message {at} cannot be passed on: {problem}; this is a defect in the plugin"),
        ));
    }
    Ok(())
}
