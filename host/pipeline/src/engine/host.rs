//! The `toolwarden:tool/host` interface: what a plugin may ask of the host.
//! Every function is cheap and bounded; none can fail or block the host.
//! Every contract version has the same interface; each version's `Host`
//! trait is implemented by the one below. Also the `compose` import
//! (0.2.0 and later), which hands a child call to the controller's
//! [`ChildCalls`] and waits for it; it decides nothing itself. And the `ask`
//! import (0.2.0 and later), which answers from the call's answers or stops
//! the call; and what the `client` import (0.3.0, in `client`) asks of the
//! client, which stops the call the same way once the policy's sampling
//! grant lets it (see `sampling_gate`).

use super::bindings::{v0_1, v0_2, v0_2_ask, v0_3, v0_3_ask};
use super::sampling_gate::{Refusal, mask_sampling};
use super::state::{CallState, HostState};
use crate::call::{ChildCalls, LogLevel as Level, LogLine, Progress};
use crate::presentation::cut_to;
use crate::question::{Answer, Asked, MAX_QUESTIONS, Need, Question};
use crate::sampling::Sampling;

/// Longest progress message passed on; longer ones are cut.
pub const MAX_PROGRESS_MESSAGE_BYTES: usize = 1024;

impl CallState {
    fn log_line(&mut self, level: Level, message: String) {
        let host = &mut self.host;
        if host.log_bytes_left < super::state::LOG_LINE_COST {
            return;
        }
        host.log_bytes_left -= super::state::LOG_LINE_COST;
        let mut end = message.len().min(host.log_bytes_left);
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        host.log_bytes_left = if end < message.len() {
            0
        } else {
            host.log_bytes_left - end
        };
        let masked = host
            .secrets
            .as_ref()
            .and_then(|s| s.mask_str(&message[..end]));
        let text = masked.as_deref().unwrap_or(&message[..end]);
        let (tool, call) = (&*host.tool, &*host.call_id);
        match level {
            Level::Trace => tracing::trace!(tool, call, "plugin: {text}"),
            Level::Debug => tracing::debug!(tool, call, "plugin: {text}"),
            Level::Info => tracing::info!(tool, call, "plugin: {text}"),
            Level::Warn => tracing::warn!(tool, call, "plugin: {text}"),
            Level::Error => tracing::error!(tool, call, "plugin: {text}"),
        }
        if let Some(sink) = &host.log {
            sink.report(LogLine {
                tool: std::sync::Arc::clone(&host.tool),
                level,
                text: text.to_owned(),
            });
        }
    }

    fn report_progress(&mut self, done: u64, total: Option<u64>, message: Option<String>) {
        let host = &mut self.host;
        if let Some(sink) = &host.progress
            && host.progress_gate.admit()
        {
            let mut message = message.map(|m| cut_to(m, MAX_PROGRESS_MESSAGE_BYTES));
            if let (Some(secrets), Some(text)) = (&host.secrets, message.as_mut()) {
                secrets.mask_string(text);
            }
            sink.report(Progress {
                done,
                total,
                message,
            });
        }
    }
}

macro_rules! host_interface {
    ($version:ident) => {
        impl $version::toolwarden::tool::host::Host for CallState {
            fn log(&mut self, level: $version::toolwarden::tool::host::Level, message: String) {
                use $version::toolwarden::tool::host::Level as L;
                let level = match level {
                    L::Trace => Level::Trace,
                    L::Debug => Level::Debug,
                    L::Info => Level::Info,
                    L::Warn => Level::Warn,
                    L::Error => Level::Error,
                };
                self.log_line(level, message);
            }

            fn progress(&mut self, done: u64, total: Option<u64>, message: Option<String>) {
                self.report_progress(done, total, message);
            }

            fn cancelled(&mut self) -> bool {
                self.host.cancel.is_cancelled()
            }
        }
    };
}

host_interface!(v0_1);
host_interface!(v0_2);
host_interface!(v0_3);

macro_rules! compose_interface {
    ($version:ident) => {
        impl $version::toolwarden::tool::compose::Host for CallState {
            async fn call_tool(
                &mut self,
                name: String,
                args_json: String,
            ) -> Result<
                $version::toolwarden::tool::compose::ChildOutput,
                $version::toolwarden::tool::compose::ChildError,
            > {
                use $version::toolwarden::tool::compose::{ChildError, ChildOutput};
                let Some(children) = self.host.children.clone() else {
                    return Err(ChildError {
                        call_id: String::new(),
                        code: crate::outcome::ErrorCode::NestingLimit.as_str().to_owned(),
                        message: "no tool can be called from here: only a call's own run may \
                                  call other tools, not `tools()`, a preview or a prompt"
                            .into(),
                    });
                };
                match ChildCalls::call(&*children, name, args_json).await {
                    Ok(output) => Ok(ChildOutput {
                        call_id: output.call_id,
                        value: output.value,
                        text: output.text,
                    }),
                    Err(error) => Err(ChildError {
                        call_id: error.call_id,
                        code: error.code.to_owned(),
                        message: error.message,
                    }),
                }
            }
        }
    };
}

compose_interface!(v0_2);
compose_interface!(v0_3);

macro_rules! ask_interface {
    ($version:ident) => {
        impl $version::toolwarden::tool::ask::Host for CallState {
            /// Answers from the call's answers, or stops the call (a trap
            /// the sandbox reports as `INPUT_REQUIRED`) at the first
            /// question without one that fits its form: the person is asked
            /// while no sandbox waits.
            fn question(
                &mut self,
                key: String,
                message: String,
                form: String,
            ) -> wasmtime::Result<$version::toolwarden::tool::ask::Answer> {
                let question = self.host.admit(vec![Asking::Form { key, message, form }])?;
                let mut answers = self.host.answer(question)?;
                answers
                    .pop()
                    .map(|answer| ask_interface!(@answer $version, answer))
                    .ok_or_else(|| wasmtime::Error::msg("a question went unanswered"))
            }

            /// As `question`, for a batch: the call stops with every
            /// question of it that has no fitting answer yet, so the person
            /// sees them together.
            fn questions(
                &mut self,
                queries: Vec<$version::toolwarden::tool::ask::Query>,
            ) -> wasmtime::Result<Vec<$version::toolwarden::tool::ask::Answer>> {
                let asked = queries
                    .into_iter()
                    .map(|q| Asking::Form {
                        key: q.key,
                        message: q.message,
                        form: q.form,
                    })
                    .collect();
                let questions = self.host.admit(asked)?;
                Ok(self
                    .host
                    .answer(questions)?
                    .into_iter()
                    .map(|answer| ask_interface!(@answer $version, answer))
                    .collect())
            }
        }
    };
    (@answer $version:ident, $answer:expr) => {{
        use $version::toolwarden::tool::ask::Answer as Wit;
        match $answer {
            Answer::Accepted(content) => Wit::Accepted(content.to_string()),
            Answer::Declined => Wit::Declined,
            // What a question never gets (`admits` lets only these three
            // through for a form): no answer.
            Answer::Cancelled | Answer::Sampled(_) | Answer::Roots(_) | Answer::Failed(_) => {
                Wit::Cancelled
            }
        }
    }};
}

ask_interface!(v0_2_ask);
ask_interface!(v0_3_ask);

/// One request a plugin made of the person or the client, as it made it.
pub(super) enum Asking {
    Form {
        key: String,
        message: String,
        form: String,
    },
    Sample {
        key: String,
        request: Sampling,
    },
    Roots {
        key: String,
    },
}

impl Asking {
    fn key(&self) -> &str {
        match self {
            Asking::Form { key, .. } | Asking::Sample { key, .. } | Asking::Roots { key } => key,
        }
    }
}

/// What a request got: an answer, or the host's refusal to send it.
pub(super) enum Got {
    Answer(Answer),
    Refused(String),
}

impl HostState {
    /// The requests a plugin made, checked: a malformed one, a key twice
    /// in one batch, or more than [`MAX_QUESTIONS`] in the run is the
    /// plugin's defect and stops the call.
    pub(super) fn admit(&self, asked: Vec<Asking>) -> wasmtime::Result<Vec<Question>> {
        if self.asked.len() + asked.len() > MAX_QUESTIONS {
            return Err(wasmtime::Error::msg(format!(
                "the plugin asked more than {MAX_QUESTIONS} questions in one call"
            )));
        }
        let mut questions: Vec<Question> = Vec::with_capacity(asked.len());
        for asking in asked {
            if questions.iter().any(|q| q.key == asking.key()) {
                return Err(wasmtime::Error::msg(format!(
                    "the plugin asked question `{}` twice at once",
                    asking.key()
                )));
            }
            let made = match asking {
                Asking::Form { key, message, form } => Question::new(key, message, &form),
                Asking::Sample { key, mut request } => {
                    if let Some(secrets) = &self.secrets {
                        mask_sampling(secrets, &mut request);
                    }
                    Question::to_client(key, Need::Sample(Box::new(request)))
                }
                Asking::Roots { key } => Question::to_client(key, Need::Roots),
            };
            let mut question = made.map_err(|e| {
                wasmtime::Error::msg(format!("the plugin asked a malformed question: {e}"))
            })?;
            question.tool = self.tool.to_string();
            question.plugin = self.plugin.to_string();
            if let Some(secrets) = &self.secrets {
                secrets.mask_string(&mut question.message);
                if let Some(form) = secrets.mask_value(&question.form) {
                    question.form = form;
                }
            }
            questions.push(question);
        }
        Ok(questions)
    }

    /// What each request got, in order: the host's refusal, or the answer
    /// from the call's answers; or, when any has no answer that fits, the
    /// call stopped at those.
    pub(super) fn gather(&mut self, questions: Vec<Question>) -> wasmtime::Result<Vec<Got>> {
        let mut got = Vec::with_capacity(questions.len());
        let mut open = Vec::new();
        for question in questions {
            let refused = self
                .refusal(&question)
                .or_else(|| self.unapproved(&question, &mut open));
            match refused {
                Some(Refusal::Now(why)) => {
                    let refused = Answer::Failed(why.clone());
                    self.asked.push(Asked::new(&question, Some(&refused)));
                    got.push(Some(Got::Refused(why)));
                }
                Some(Refusal::AskFirst) => got.push(None),
                None => {
                    got.push(None);
                    open.push(question);
                }
            }
        }
        let mut answers = self.answer(open)?.into_iter();
        Ok(got
            .into_iter()
            .map(|g| g.unwrap_or_else(|| Got::Answer(answers.next().unwrap_or(Answer::Cancelled))))
            .collect())
    }

    /// Each question's answer from the call's answers, in order; or, when
    /// any has none that fits its form, the call stopped at those.
    fn answer(&mut self, questions: Vec<Question>) -> wasmtime::Result<Vec<Answer>> {
        let mut answers = Vec::with_capacity(questions.len());
        for question in questions {
            let answer = self
                .answers
                .as_deref()
                .and_then(|answers| answers.get(&question.key))
                .filter(|answer| match question.admits(answer) {
                    Ok(()) => true,
                    Err(why) => {
                        tracing::info!(
                            tool = &*self.tool,
                            call = &*self.call_id,
                            "{why}; asking again"
                        );
                        false
                    }
                })
                .cloned();
            self.asked.push(Asked::new(&question, answer.as_ref()));
            match answer {
                Some(answer) => answers.push(answer),
                None => self.stopped_at.push(question),
            }
        }
        if self.stopped_at.is_empty() {
            Ok(answers)
        } else {
            Err(wasmtime::Error::msg("the call stopped to ask a person"))
        }
    }
}
