//! What a tool may ask of the MCP client besides the person (the `client`
//! import of `toolwarden:tool@0.3.0`): a completion from the client's model
//! ([`Context::sample`]) and the client's roots ([`Context::roots`]).
//!
//! Like a question, each request stops the call the first time it is made;
//! the host hands it to the client and runs the call again from the start
//! with the answer, which the same request (the same `key`) then returns.
//! Sampling works only where the host's policy allows it for the tool
//! (`[[rule]] sampling = ["tool"]`); otherwise, or past the policy's caps,
//! or when the client cannot sample, the request returns an error at once.

use crate::Context;
use crate::bindings::toolwarden::tool::client as wit;

pub use wit::{Completion, Got, Message, Need, Part, Query, Role, Root, SampleRequest, Sampling};

/// A request of one user message of text, answered in at most
/// `max_tokens` tokens: what most tools ask.
pub fn sampling(text: &str, max_tokens: u32) -> Sampling {
    Sampling {
        messages: vec![Message {
            role: Role::User,
            content: vec![Part::Text(text.to_owned())],
        }],
        system_prompt: None,
        max_tokens,
        temperature: None,
        stop_sequences: Vec::new(),
    }
}

impl Completion {
    /// The answer's text parts, joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|part| match part {
                Part::Text(text) => Some(text.as_str()),
                Part::Image(_) | Part::Audio(_) => None,
            })
            .collect()
    }
}

const OUTSIDE: &str = "outside the host there is no MCP client to ask";

impl Context {
    /// Asks the client's model to continue `request`'s conversation; `key`
    /// names the request within the call, the same on every run. An error
    /// says why no answer came: the policy, a cap, or the client.
    pub fn sample(&self, key: &str, request: &Sampling) -> Result<Completion, String> {
        if !self.attached {
            return Err(OUTSIDE.into());
        }
        wit::create_message(key, request)
    }

    /// The client's roots (the folders it works in); an error if it has
    /// none to give.
    pub fn roots(&self, key: &str) -> Result<Vec<Root>, String> {
        if !self.attached {
            return Err(OUTSIDE.into());
        }
        wit::list_roots(key)
    }

    /// Several requests at once (questions, sampling, roots), so the client
    /// gets them together; what each got, in order.
    pub fn gather(&self, needs: &[Need]) -> Vec<Got> {
        if !self.attached {
            return needs
                .iter()
                .map(|need| match need {
                    Need::Question(_) => Got::Answered(crate::Answer::Cancelled),
                    Need::Sample(_) => Got::Sampled(Err(OUTSIDE.into())),
                    Need::Roots(_) => Got::Roots(Err(OUTSIDE.into())),
                })
                .collect();
        }
        wit::gather(needs)
    }
}
