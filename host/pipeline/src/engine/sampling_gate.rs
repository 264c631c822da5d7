//! What the policy's sampling grant lets a tool's request to the client's
//! model do before it leaves the host: refused at once (no grant, a cap
//! reached, the person said no), held for the person's yes under an `ask`
//! rule, or let go and counted; and the credentials' secrets masked in
//! what it sends. Decides from the grant; never asks anyone itself.

use super::state::{HostState, Sampled};
use crate::question::{Asked, Need, Question};
use crate::sampling::{Part, Sampling};

/// Why a request does not go out now.
pub(super) enum Refusal {
    /// Never, for this reason (the tool is told).
    Now(String),
    /// Not before the person answers the host's question about it.
    AskFirst,
}

impl HostState {
    /// Why the policy lets `question` not leave the host, if it is a
    /// sampling request the call's grant does not cover; else counts it
    /// against the grant (answered or not: a rerun makes it again).
    pub(super) fn refusal(&mut self, question: &Question) -> Option<Refusal> {
        let Need::Sample(request) = &question.need else {
            return None;
        };
        let Some(budget) = self.sampling else {
            return Some(Refusal::Now(format!(
                "sampling refused: the policy grants tool `{tool}` no sampling; to allow it, add \
                 to toolwarden.toml:\n\n[[rule]]\nsampling = [\"{tool}\"]\ndecision = \
                 \"allow\"\nreason = \"...\"",
                tool = self.tool
            )));
        };
        let sampled = self.sampled;
        let asked = u64::from(request.max_tokens);
        let answered = self
            .answers
            .as_deref()
            .is_some_and(|answers| answers.get(&question.key).is_some());
        let unanswered = if answered { 0 } else { asked };
        let grant = budget.grant;
        let why = if sampled.requests >= grant.max_requests {
            format!(
                "sampling refused: a call of `{}` may make {} sampling request(s) \
                 (`max_requests`)",
                self.tool, grant.max_requests
            )
        } else if sampled.tokens + asked > grant.max_tokens {
            format!(
                "sampling refused: {asked} more tokens would pass the {} a call of `{}` may ask \
                 for (`max_tokens`; {} asked so far)",
                grant.max_tokens, self.tool, sampled.tokens
            )
        } else if sampled.unanswered_tokens + unanswered > budget.session_tokens_left {
            format!(
                "sampling refused: {asked} more tokens would pass what the session has left \
                 of its {} (`max_session_tokens`)",
                grant.max_session_tokens
            )
        } else {
            self.sampled = Sampled {
                requests: sampled.requests + 1,
                tokens: sampled.tokens + asked,
                unanswered_tokens: sampled.unanswered_tokens + unanswered,
            };
            return None;
        };
        Some(Refusal::Now(why))
    }

    /// For a sampling request an `ask` rule governs: `None` once the
    /// person said yes to this very request; a refusal when they said no;
    /// else the host's question goes into `open` and the request waits
    /// for its answer (`AskFirst`).
    pub(super) fn unapproved(
        &mut self,
        question: &Question,
        open: &mut Vec<Question>,
    ) -> Option<Refusal> {
        let Need::Sample(request) = &question.need else {
            return None;
        };
        if !self.sampling.is_some_and(|budget| budget.grant.ask) {
            return None;
        }
        let approval =
            Question::sampling_approval(&question.key, request, &self.tool, &self.plugin);
        let answer = self
            .answers
            .as_deref()
            .and_then(|answers| answers.get(&approval.key))
            .filter(|answer| approval.admits(answer).is_ok())
            .cloned();
        match answer {
            Some(answer) => {
                self.asked.push(Asked::new(&approval, Some(&answer)));
                (!Question::approves(&answer)).then(|| {
                    Refusal::Now(format!(
                        "sampling refused: the person did not allow request `{}` to go to the \
                         client's model",
                        question.key
                    ))
                })
            }
            None => {
                open.push(approval);
                Some(Refusal::AskFirst)
            }
        }
    }
}

/// Masks the credentials' secrets in the text a plugin sends the model.
pub(super) fn mask_sampling(secrets: &crate::egress::Secrets, request: &mut Sampling) {
    for message in &mut request.messages {
        for part in &mut message.content {
            if let Part::Text { text } = part {
                secrets.mask_string(text);
            }
        }
    }
    if let Some(system) = &mut request.system_prompt {
        secrets.mask_string(system);
    }
}
