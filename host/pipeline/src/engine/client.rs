//! The `client` import (0.3.0): a tool's requests to the client's model
//! and roots, turned into the host's own types and handed to
//! [`HostState::admit`] and [`HostState::gather`], which decide whether they
//! go out; and what they got, turned back. Decides nothing itself.

use super::bindings::v0_3_client;
use super::host::{Asking, Got};
use super::state::CallState;
#[cfg(doc)]
use super::state::HostState;
use crate::question::{Answer, Need};
use crate::sampling::{Completion, Message, Part, Role, Root, Sampling};

mod client_wit {
    //! The `client` import's types and the host's own, both ways.
    pub(super) use super::super::bindings::v0_3_client::toolwarden::tool::ask::{
        Answer as WitAnswer, Query,
    };
    pub(super) use super::super::bindings::v0_3_client::toolwarden::tool::client::*;
    pub(super) use super::super::bindings::v0_3_client::toolwarden::tool::tool::Media;
}

use client_wit as wit;

fn role_in(role: wit::Role) -> Role {
    match role {
        wit::Role::User => Role::User,
        wit::Role::Assistant => Role::Assistant,
    }
}

fn role_out(role: Role) -> wit::Role {
    match role {
        Role::User => wit::Role::User,
        Role::Assistant => wit::Role::Assistant,
    }
}

fn part_in(part: wit::Part) -> Part {
    match part {
        wit::Part::Text(text) => Part::Text { text },
        wit::Part::Image(m) => Part::Image {
            data: crate::content::Bytes(m.data),
            mime_type: m.mime_type,
        },
        wit::Part::Audio(m) => Part::Audio {
            data: crate::content::Bytes(m.data),
            mime_type: m.mime_type,
        },
    }
}

fn part_out(part: Part) -> wit::Part {
    match part {
        Part::Text { text } => wit::Part::Text(text),
        Part::Image { data, mime_type } => wit::Part::Image(wit::Media {
            mime_type,
            data: data.0,
        }),
        Part::Audio { data, mime_type } => wit::Part::Audio(wit::Media {
            mime_type,
            data: data.0,
        }),
    }
}

fn sampling_in(request: wit::Sampling) -> Sampling {
    Sampling {
        messages: request
            .messages
            .into_iter()
            .map(|m| Message {
                role: role_in(m.role),
                content: m.content.into_iter().map(part_in).collect(),
            })
            .collect(),
        system_prompt: request.system_prompt,
        max_tokens: request.max_tokens,
        temperature: request.temperature,
        stop_sequences: request.stop_sequences,
    }
}

fn completion_out(completion: Completion) -> wit::Completion {
    wit::Completion {
        role: role_out(completion.role),
        content: completion.content.into_iter().map(part_out).collect(),
        model: completion.model,
        stop_reason: completion.stop_reason,
    }
}

fn roots_out(roots: Vec<Root>) -> Vec<wit::Root> {
    roots
        .into_iter()
        .map(|r| wit::Root {
            uri: r.uri,
            name: r.name,
        })
        .collect()
}

/// What a request of a `gather` is answered with, as the plugin sees it.
enum Wanted {
    Answer,
    Completion,
    Roots,
}

impl Wanted {
    fn of(need: &Need) -> Wanted {
        match need {
            Need::Form | Need::SamplingApproval(_) => Wanted::Answer,
            Need::Sample(_) => Wanted::Completion,
            Need::Roots => Wanted::Roots,
        }
    }
}

/// What a sampling request got, as the plugin sees it.
fn sampled(got: Got) -> Result<wit::Completion, String> {
    match got {
        Got::Answer(Answer::Sampled(completion)) => Ok(completion_out(completion)),
        Got::Answer(Answer::Failed(why)) | Got::Refused(why) => Err(why),
        Got::Answer(_) => Err("the client did not answer the sampling request".into()),
    }
}

/// What a roots request got, as the plugin sees it.
fn listed(got: Got) -> Result<Vec<wit::Root>, String> {
    match got {
        Got::Answer(Answer::Roots(roots)) => Ok(roots_out(roots)),
        Got::Answer(Answer::Failed(why)) | Got::Refused(why) => Err(why),
        Got::Answer(_) => Err("the client did not list its roots".into()),
    }
}

impl v0_3_client::toolwarden::tool::client::Host for CallState {
    fn create_message(
        &mut self,
        key: String,
        request: wit::Sampling,
    ) -> wasmtime::Result<Result<wit::Completion, String>> {
        let asked = self.host.admit(vec![Asking::Sample {
            key,
            request: sampling_in(request),
        }])?;
        let got = self.host.gather(asked)?.pop();
        Ok(got.map_or_else(|| Err("no answer".into()), sampled))
    }

    fn list_roots(&mut self, key: String) -> wasmtime::Result<Result<Vec<wit::Root>, String>> {
        let asked = self.host.admit(vec![Asking::Roots { key }])?;
        let got = self.host.gather(asked)?.pop();
        Ok(got.map_or_else(|| Err("no answer".into()), listed))
    }

    fn gather(&mut self, needs: Vec<wit::Need>) -> wasmtime::Result<Vec<wit::Got>> {
        let asked = needs
            .into_iter()
            .map(|need| match need {
                wit::Need::Question(wit::Query { key, message, form }) => {
                    Asking::Form { key, message, form }
                }
                wit::Need::Sample(s) => Asking::Sample {
                    key: s.key,
                    request: sampling_in(s.request),
                },
                wit::Need::Roots(key) => Asking::Roots { key },
            })
            .collect();
        let questions = self.host.admit(asked)?;
        let wanted: Vec<Wanted> = questions.iter().map(|q| Wanted::of(&q.need)).collect();
        let got = self.host.gather(questions)?;
        Ok(wanted
            .into_iter()
            .zip(got)
            .map(|(wanted, got)| match wanted {
                Wanted::Answer => wit::Got::Answered(match got {
                    Got::Answer(Answer::Accepted(content)) => {
                        wit::WitAnswer::Accepted(content.to_string())
                    }
                    Got::Answer(Answer::Declined) => wit::WitAnswer::Declined,
                    _ => wit::WitAnswer::Cancelled,
                }),
                Wanted::Completion => wit::Got::Sampled(sampled(got)),
                Wanted::Roots => wit::Got::Roots(listed(got)),
            })
            .collect())
    }
}
