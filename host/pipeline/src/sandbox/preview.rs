//! What a plugin is asked besides a call: its preview, for a call the
//! policy asks a person about; its view of a finished call's result, for a
//! person reading it back; its prompts, rendered or completed; and its
//! resources, read or their templates completed. Each
//! runs in the same fresh store as a call, but built from a grant that
//! cannot write (a preview may read the workspace when the tool needs a
//! filesystem; a result view and a prompt get no filesystem at all, so they
//! depend on what they are handed alone), with no network and no child
//! calls, under a deadline of at most [`PREVIEW_TIMEOUT`]. An aside gets
//! less than a call would, never more. Only a prompt's rendering may ask
//! the person a question, which stops it as it stops a call.

use super::Sandbox;
use super::teardown::{Teardown, release};
use crate::call::{CallId, SessionId};
use crate::capability::{FsAccess, Grant};
use crate::content::ResourceContents;
use crate::engine::guest::{GUEST_WORKSPACE, Place, classify, new_store, race};
use crate::engine::{CallContext, HostState, ToolFailure};
use crate::outcome::{CallError, ErrorCode};
use crate::presentation::Presentation;
use crate::prompt::RenderedPrompt;
use crate::question::Answers;
use crate::registry::{Plugin, Prompt, Tool};
use crate::resource::ResourceContent;
use crate::spec::FsNeed;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The longest an aside may take; the approval is asked (the call shown)
/// without a preview after it, a prompt fails.
pub const PREVIEW_TIMEOUT: Duration = Duration::from_secs(2);

/// What to ask the plugin.
enum Asked<'a> {
    /// How a call on these (canonical, validated) arguments would look.
    Preview {
        args: &'a str,
        session: &'a SessionId,
    },
    /// How a finished call on these arguments that returned this value
    /// looks.
    Result { args: &'a str, value: &'a str },
    /// A prompt rendered with these (checked) arguments, and the
    /// person's answers to what its rendering asked so far.
    Prompt {
        arguments: &'a BTreeMap<String, String>,
        answers: &'a Arc<Answers>,
    },
    /// Values for a prompt's argument.
    Complete {
        argument: &'a str,
        value: &'a str,
        context: &'a BTreeMap<String, String>,
    },
    /// A resource, by URI.
    Read { uri: &'a str },
    /// Values for a template's variable.
    CompleteTemplate {
        template: &'a str,
        variable: &'a str,
        value: &'a str,
        context: &'a BTreeMap<String, String>,
    },
}

/// What the plugin answered, by what was asked.
enum Answered {
    View(Option<Presentation>),
    Prompt(Result<RenderedPrompt, ToolFailure>),
    Completions(Vec<String>),
    Read(Result<Vec<ResourceContent>, ToolFailure>),
}

/// Who is asked, and with what.
struct Aside<'a> {
    plugin: &'a Arc<Plugin>,
    /// The tool or prompt asked about: the name its log lines carry and
    /// the plugin is asked with.
    name: &'a Arc<str>,
    fs: FsAccess,
    timeout: Duration,
}

impl Sandbox {
    /// Asks `tool`'s plugin how a call on `args` (canonical, validated)
    /// would look. `Ok(None)`: the plugin has no preview for it.
    pub async fn preview(
        &self,
        tool: &Tool,
        args: &str,
        call_id: &CallId,
        session: &SessionId,
    ) -> Result<Option<Presentation>, CallError> {
        let fs = match tool.spec.filesystem {
            FsNeed::None => FsAccess::None,
            FsNeed::ReadOnly | FsNeed::WorkspaceWrite => FsAccess::ReadOnly,
        };
        match self
            .aside(
                self.of_tool(tool, fs),
                call_id,
                Asked::Preview { args, session },
            )
            .await?
        {
            Answered::View(view) => Ok(view),
            _ => Err(mismatch()),
        }
    }

    /// Asks `tool`'s plugin how the finished call `call_id` on `args` that
    /// returned `value` (both JSON, as the audit log kept them) looks.
    /// `Ok(None)`: the plugin has no view of the tool's results.
    pub async fn show_result(
        &self,
        tool: &Tool,
        args: &str,
        value: &str,
        call_id: &CallId,
    ) -> Result<Option<Presentation>, CallError> {
        let aside = self.of_tool(tool, FsAccess::None);
        match self
            .aside(aside, call_id, Asked::Result { args, value })
            .await?
        {
            Answered::View(view) => Ok(view),
            _ => Err(mismatch()),
        }
    }

    /// Asks `prompt`'s plugin to render it with `arguments` (already
    /// checked against its declaration) and the answers to the questions
    /// its rendering asks; a question without one stops it
    /// (`INPUT_REQUIRED`, with the questions).
    /// Also returns the questions the rendering asked, with their answers.
    pub async fn get_prompt(
        &self,
        prompt: &Prompt,
        name: &Arc<str>,
        (arguments, answers): (&BTreeMap<String, String>, &Arc<Answers>),
        call_id: &CallId,
    ) -> (
        Result<Result<RenderedPrompt, ToolFailure>, CallError>,
        Vec<crate::question::Asked>,
    ) {
        let (answered, asked) = self
            .aside_asking(
                self.of_prompt(prompt, name),
                call_id,
                Asked::Prompt { arguments, answers },
            )
            .await;
        let rendered = match answered {
            Ok(Answered::Prompt(rendered)) => Ok(rendered),
            Ok(_) => Err(mismatch()),
            Err(e) => Err(e),
        };
        (rendered, asked)
    }

    /// Asks `prompt`'s plugin for values of its argument `argument`.
    pub async fn complete_prompt(
        &self,
        prompt: &Prompt,
        name: &Arc<str>,
        (argument, value): (&str, &str),
        context: &BTreeMap<String, String>,
        call_id: &CallId,
    ) -> Result<Vec<String>, CallError> {
        let asked = Asked::Complete {
            argument,
            value,
            context,
        };
        match self
            .aside(self.of_prompt(prompt, name), call_id, asked)
            .await?
        {
            Answered::Completions(values) => Ok(values),
            _ => Err(mismatch()),
        }
    }

    /// Asks `plugin` for the resource at `uri`, which it owns.
    pub async fn read_resource(
        &self,
        plugin: &Arc<Plugin>,
        uri: &Arc<str>,
        call_id: &CallId,
    ) -> Result<Result<Vec<ResourceContent>, ToolFailure>, CallError> {
        match self
            .aside(self.of_plugin(plugin, uri), call_id, Asked::Read { uri })
            .await?
        {
            Answered::Read(read) => Ok(read),
            _ => Err(mismatch()),
        }
    }

    /// Asks `plugin` for values of variable `variable` of its template
    /// `template`.
    pub async fn complete_template(
        &self,
        plugin: &Arc<Plugin>,
        template: &Arc<str>,
        (variable, value): (&str, &str),
        context: &BTreeMap<String, String>,
        call_id: &CallId,
    ) -> Result<Vec<String>, CallError> {
        let asked = Asked::CompleteTemplate {
            template,
            variable,
            value,
            context,
        };
        match self
            .aside(self.of_plugin(plugin, template), call_id, asked)
            .await?
        {
            Answered::Completions(values) => Ok(values),
            _ => Err(mismatch()),
        }
    }

    fn of_tool<'a>(&self, tool: &'a Tool, fs: FsAccess) -> Aside<'a> {
        Aside {
            plugin: &tool.plugin,
            name: &tool.name,
            fs,
            timeout: self
                .engine
                .limits()
                .timeout_for(tool.spec.timeout_ms)
                .min(PREVIEW_TIMEOUT),
        }
    }

    fn of_prompt<'a>(&self, prompt: &'a Prompt, name: &'a Arc<str>) -> Aside<'a> {
        self.of_plugin(&prompt.plugin, name)
    }

    fn of_plugin<'a>(&self, plugin: &'a Arc<Plugin>, name: &'a Arc<str>) -> Aside<'a> {
        Aside {
            plugin,
            name,
            fs: FsAccess::None,
            timeout: self.engine.limits().timeout_for(None).min(PREVIEW_TIMEOUT),
        }
    }

    async fn aside(
        &self,
        aside: Aside<'_>,
        call_id: &CallId,
        asked: Asked<'_>,
    ) -> Result<Answered, CallError> {
        self.aside_asking(aside, call_id, asked).await.0
    }

    /// As [`Sandbox::aside`], with the questions the plugin asked (only a
    /// prompt's rendering can).
    async fn aside_asking(
        &self,
        aside: Aside<'_>,
        call_id: &CallId,
        asked: Asked<'_>,
    ) -> (Result<Answered, CallError>, Vec<crate::question::Asked>) {
        let engine = &self.engine;
        let grant = Grant {
            fs: aside.fs,
            ..Grant::default()
        };
        let timeout = aside.timeout;
        let pre = match super::run::code_of(aside.plugin, &Default::default()).await {
            Ok(pre) => pre,
            Err(e) => return (Err(e), Vec::new()),
        };
        let Ok(slot) = Arc::clone(&self.slots).try_acquire_owned() else {
            let busy = CallError::new(
                ErrorCode::HostError,
                "no sandbox was free to ask the plugin",
            );
            return (Err(busy), Vec::new());
        };
        let mut host = HostState::new(Arc::clone(aside.name), call_id.shared(), Default::default());
        host.plugin = Arc::from(aside.plugin.file_name());
        // Only a prompt's rendering may ask the person; anything else that
        // asks ends `INPUT_REQUIRED` with nobody asked.
        if let Asked::Prompt { answers, .. } = &asked {
            host.answers = Some(Arc::clone(answers));
        }
        let stop_at = tokio::time::Instant::now() + timeout;
        let (mut store, pipes) = match new_store(
            engine,
            pre,
            &grant,
            Place::Workspace,
            host,
            engine.limits().fuel,
            stop_at,
        ) {
            Ok(made) => made,
            Err(e) => return (Err(e), Vec::new()),
        };
        let name = &**aside.name;
        let never = Default::default();
        let outcome = {
            let _ticking = engine.ticking();
            match asked {
                Asked::Preview { args, session } => {
                    let context = CallContext {
                        call_id: call_id.as_str().to_owned(),
                        session_id: session.as_str().to_owned(),
                        workspace: (grant.fs != FsAccess::None).then(|| GUEST_WORKSPACE.to_owned()),
                    };
                    let guest = std::pin::pin!(pre.preview(&mut store, name, args, context));
                    race(guest, stop_at, &never)
                        .await
                        .map(|r| r.map(Answered::View))
                }
                Asked::Result { args, value } => {
                    let guest = std::pin::pin!(pre.show_result(&mut store, name, args, value));
                    race(guest, stop_at, &never)
                        .await
                        .map(|r| r.map(Answered::View))
                }
                Asked::Prompt { arguments, .. } => {
                    let guest = std::pin::pin!(pre.get_prompt(&mut store, name, arguments));
                    race(guest, stop_at, &never)
                        .await
                        .map(|r| r.map(Answered::Prompt))
                }
                Asked::Complete {
                    argument,
                    value,
                    context,
                } => {
                    let guest =
                        std::pin::pin!(pre.complete(&mut store, name, argument, value, context));
                    race(guest, stop_at, &never)
                        .await
                        .map(|r| r.map(Answered::Completions))
                }
                Asked::Read { uri } => {
                    let guest = std::pin::pin!(pre.read_resource(&mut store, uri));
                    race(guest, stop_at, &never)
                        .await
                        .map(|r| r.map(Answered::Read))
                }
                Asked::CompleteTemplate {
                    template,
                    variable,
                    value,
                    context,
                } => {
                    let asked = (template, variable, value);
                    let guest = std::pin::pin!(pre.complete_template(&mut store, asked, context));
                    race(guest, stop_at, &never)
                        .await
                        .map(|r| r.map(Answered::Completions))
                }
            }
        };
        let mut result = classify(outcome, &store, &pipes, timeout);
        let questions = store.data_mut().take_asked();
        release(Teardown::new(store, slot));
        if let Some(secrets) = engine.secrets() {
            mask(secrets, &mut result);
        }
        (result, questions)
    }
}

/// Masks the credentials' secrets in whatever the plugin answered.
fn mask(secrets: &crate::egress::Secrets, result: &mut Result<Answered, CallError>) {
    let texts: Vec<&mut String> = match result {
        Ok(Answered::View(Some(view))) => {
            let mut texts = vec![&mut view.title, &mut view.body];
            texts.extend(view.path.as_mut());
            texts
        }
        Ok(Answered::View(None)) => Vec::new(),
        Ok(Answered::Prompt(Ok(rendered))) => {
            for message in &mut rendered.messages {
                super::mask::mask_block(secrets, &mut message.content);
            }
            rendered.description.as_mut().into_iter().collect()
        }
        Ok(Answered::Read(Ok(parts))) => {
            let mut texts = Vec::new();
            for part in parts {
                match &mut part.contents {
                    ResourceContents::Text(text) => texts.push(text),
                    ResourceContents::Blob(blob) => {
                        if let Some(masked) = secrets.mask_bytes(&blob.0) {
                            blob.0 = masked;
                        }
                    }
                }
            }
            texts
        }
        Ok(
            Answered::Prompt(Err(
                ToolFailure::InvalidArgs(m) | ToolFailure::NotFound(m) | ToolFailure::Failed(m),
            ))
            | Answered::Read(Err(
                ToolFailure::InvalidArgs(m) | ToolFailure::NotFound(m) | ToolFailure::Failed(m),
            )),
        ) => vec![m],
        Ok(Answered::Completions(values)) => values.iter_mut().collect(),
        Err(error) => vec![&mut error.message],
    };
    for text in texts {
        secrets.mask_string(text);
    }
}

/// An answer of another kind than asked: the match above makes it
/// impossible, and it is still an error, never a panic.
fn mismatch() -> CallError {
    CallError::new(
        ErrorCode::HostError,
        "the plugin's answer was not of the kind asked",
    )
}
