//! What a tool gets besides its arguments: facts about the call (its id,
//! session, workspace) and the host's services (log, progress,
//! cancellation, child calls, questions to the person). Outside a
//! component, a context made for tests stands in for the host.

use crate::bindings::exports::toolwarden::tool::tool as wit;
use crate::{Answer, ChildError, ChildOutput, Level, ToolError, bindings};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Facts about the current call, and the host's services (log, progress,
/// cancellation).
#[derive(Debug, Clone)]
pub struct Context {
    call_id: String,
    session_id: String,
    workspace: Option<PathBuf>,
    /// False for a context made by [`Context::for_test`]: there is no host
    /// to log to outside a component.
    pub(crate) attached: bool,
    /// What a test context answers to [`Context::ask`], by question key.
    test_answers: BTreeMap<String, Answer>,
}

impl Context {
    /// A context for unit tests run outside the host: logging and progress
    /// go nowhere, nothing is ever cancelled, and `workspace` stands in for
    /// the granted workspace.
    pub fn for_test(workspace: Option<PathBuf>) -> Context {
        Context {
            call_id: "test-call".into(),
            session_id: "test-session".into(),
            workspace,
            attached: false,
            test_answers: BTreeMap::new(),
        }
    }

    pub(crate) fn from_host(ctx: wit::CallContext) -> Context {
        Context {
            call_id: ctx.call_id,
            session_id: ctx.session_id,
            workspace: ctx.workspace.map(PathBuf::from),
            attached: true,
            test_answers: BTreeMap::new(),
        }
    }

    /// A test context whose person answers the question `key` with
    /// `answer`; unset questions are `Answer::Cancelled`.
    pub fn with_answer(mut self, key: &str, answer: Answer) -> Context {
        self.test_answers.insert(key.to_owned(), answer);
        self
    }

    /// Unique id of this call; quote it in logs.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The agent session the call belongs to.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The workspace directory, as this tool sees it. An error (for the
    /// model to read) when the host granted no filesystem to this call.
    pub fn workspace(&self) -> Result<&Path, ToolError> {
        self.workspace.as_deref().ok_or_else(|| {
            ToolError::Failed(
                "no workspace was granted to this call; the tool must declare a filesystem need"
                    .into(),
            )
        })
    }

    /// Writes a line to the host's log, tagged with the plugin and call.
    pub fn log(&self, level: Level, message: &str) {
        if self.attached {
            bindings::toolwarden::tool::host::log(level, message);
        }
    }

    /// Reports progress: `done` out of `total` (if known).
    pub fn progress(&self, done: u64, total: Option<u64>, message: Option<&str>) {
        if self.attached {
            bindings::toolwarden::tool::host::progress(done, total, message);
        }
    }

    /// True once the caller cancelled this call. Long loops should check it
    /// and return early; the host stops the call shortly after anyway.
    pub fn cancelled(&self) -> bool {
        self.attached && bindings::toolwarden::tool::host::cancelled()
    }

    /// Calls another tool through the host, as a call of its own (a
    /// composite tool). The host governs it as it would a call from the
    /// agent: policy (which may treat nested calls apart), guards,
    /// approval, its own sandbox and grant, audit. It runs in this call's
    /// session and stops when this call does. Blocks until it has ended.
    /// Outside the host (`for_test`) every call fails with `HOST_ERROR`.
    pub fn call_tool(&self, name: &str, args: &Value) -> Result<ChildOutput, ChildError> {
        if !self.attached {
            return Err(ChildError {
                call_id: String::new(),
                code: "HOST_ERROR".into(),
                message: "no host to call tools through: this context is for tests".into(),
            });
        }
        bindings::toolwarden::tool::compose::call_tool(name, &args.to_string())
    }

    /// Asks the person behind the agent `message`, with `form` a JSON
    /// Schema of a flat object (the MCP elicitation subset; see `ask` in the
    /// WIT). An `Accepted` answer's JSON already matches the form.
    ///
    /// The host does not keep the call waiting on a person: the first time
    /// a question is asked the call stops there, and once the person has
    /// answered it runs again from the start with the answer at hand. So
    /// `key` must name the same question on every run, and the tool should
    /// ask before it changes anything. Outside the host (`for_test`) the
    /// answer is the one set by [`Context::with_answer`].
    pub fn ask(&self, key: &str, message: &str, form: &Value) -> Answer {
        if !self.attached {
            return self
                .test_answers
                .get(key)
                .cloned()
                .unwrap_or(Answer::Cancelled);
        }
        bindings::toolwarden::tool::ask::question(key, message, &form.to_string())
    }

    /// Asks several questions at once, each a `(key, message, form)` as
    /// [`Context::ask`] takes them: the person sees them together and may
    /// answer them in any order. Returns the answers in the order asked;
    /// the call stops (and later runs again) until every one is answered.
    /// Outside the host (`for_test`) the answers are those set by
    /// [`Context::with_answer`].
    pub fn ask_all(&self, questions: &[(&str, &str, &Value)]) -> Vec<Answer> {
        if !self.attached {
            return questions
                .iter()
                .map(|(key, _, _)| {
                    self.test_answers
                        .get(*key)
                        .cloned()
                        .unwrap_or(Answer::Cancelled)
                })
                .collect();
        }
        let queries: Vec<bindings::toolwarden::tool::ask::Query> = questions
            .iter()
            .map(
                |(key, message, form)| bindings::toolwarden::tool::ask::Query {
                    key: (*key).to_owned(),
                    message: (*message).to_owned(),
                    form: form.to_string(),
                },
            )
            .collect();
        bindings::toolwarden::tool::ask::questions(&queries)
    }
}
