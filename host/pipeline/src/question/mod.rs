//! Questions a running tool asks the person on the other side (the `ask`
//! import of `toolwarden:tool@0.2.0`), and their answers; and, since
//! 0.3.0, the other requests a call stops for in the same way (the
//! `client` import: a completion from the client's model, its roots).
//!
//! A question is a message and a form: a flat JSON Schema object in the
//! subset MCP elicitation allows, checked here before anyone is shown it.
//! An answer is checked against what was asked before the plugin sees it. This
//! module only describes; it never asks anyone (the edges do: `mcp`, `cli`)
//! and never runs a call (the controller runs it again with the answers).

mod form;

use form::check_form;
pub use form::{MAX_FIELDS, RESERVED_PREFIX};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Longest question message a plugin may ask.
pub const MAX_MESSAGE_BYTES: usize = 4 << 10;
/// Largest form (as JSON text): a form is a few fields, not a document.
pub const MAX_FORM_BYTES: usize = 16 << 10;
/// Longest question key.
pub const MAX_KEY_LEN: usize = 64;
/// Most questions one run of a call may ask (answered ones included):
/// each unanswered one costs a person's attention and a run of the call.
pub const MAX_QUESTIONS: usize = 16;

/// One question a tool asked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Question {
    /// Names the question within its call, the same each run.
    pub key: String,
    /// What is asked, and of whom.
    pub need: Need,
    /// The plugin's text, as it wrote it; a person is shown [`Question::prompt`].
    /// For a request to the client: a one-line summary of it.
    pub message: String,
    /// The form's JSON Schema, already checked; `null` for a request to
    /// the client.
    pub form: Value,
    /// The tool that asked, named by the host.
    pub tool: String,
    /// The plugin file of that tool, named by the host.
    pub plugin: String,
}

/// Of whom a call's question asks what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Need {
    /// The person: a form (`message`, `form`).
    Form,
    /// The client's model: a completion (`sampling/createMessage`).
    Sample(Box<crate::sampling::Sampling>),
    /// The client: its roots (`roots/list`).
    Roots,
    /// The person: the host's own question whether this sampling request
    /// may go to the client's model (a policy `ask` rule), answered on the
    /// host's approval form ([`APPROVAL_FIELD`]).
    SamplingApproval(Box<crate::sampling::Sampling>),
}

/// The one field of the host's own approval form, which no plugin's form
/// may have (see [`RESERVED_PREFIX`]).
pub const APPROVAL_FIELD: &str = "toolwarden_decision";
/// The choice on that form that lets one thing happen once.
pub const APPROVE_ONCE: &str = "approve_once";
/// The choice on that form that refuses it.
pub const DENY: &str = "deny";

impl Need {
    /// The client capability answering it takes (MCP's name).
    pub fn capability(&self) -> &'static str {
        match self {
            Need::Form | Need::SamplingApproval(_) => "elicitation",
            Need::Sample(_) => "sampling",
            Need::Roots => "roots",
        }
    }
}

/// What the person (or the client) did with a question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", content = "content", rename_all = "snake_case")]
pub enum Answer {
    /// Filled in the form: its content (an object).
    Accepted(Value),
    Declined,
    Cancelled,
    /// The client's model answered a sampling request.
    Sampled(crate::sampling::Completion),
    /// The client listed its roots.
    Roots(Vec<crate::sampling::Root>),
    /// The client could not or would not answer a request: why.
    Failed(String),
}

/// The answers a call runs with, by question key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answers(BTreeMap<String, Answer>);

/// A question as the audit log records it: asked, and how it was answered
/// (none: the call stopped to ask it). A sampling request is recorded whole;
/// the model's answer only by its digest, size and model.
#[derive(Clone, Debug, Serialize)]
pub struct Asked {
    pub key: String,
    /// `elicitation`, `sampling` or `roots`.
    pub kind: &'static str,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<Box<crate::sampling::Sampling>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
}

impl Asked {
    pub fn new(question: &Question, answer: Option<&Answer>) -> Asked {
        let answer = answer.map(|answer| match answer {
            Answer::Sampled(completion) => Answer::Accepted(serde_json::json!({
                "model": completion.model,
                "stop_reason": completion.stop_reason,
                "sha256": completion.digest(),
                "parts": completion.content.len(),
            })),
            other => other.clone(),
        });
        Asked {
            key: question.key.clone(),
            kind: question.need.capability(),
            message: question.message.clone(),
            request: match &question.need {
                Need::Sample(sampling) | Need::SamplingApproval(sampling) => Some(sampling.clone()),
                Need::Form | Need::Roots => None,
            },
            answer,
        }
    }
}

impl Answers {
    pub fn get(&self, key: &str) -> Option<&Answer> {
        self.0.get(key)
    }

    pub fn insert(&mut self, key: String, answer: Answer) {
        self.0.insert(key, answer);
    }

    /// `other`'s answers added, replacing those with the same key.
    pub fn extend(&mut self, other: Answers) {
        self.0.extend(other.0);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<(String, Answer)> for Answers {
    fn from_iter<I: IntoIterator<Item = (String, Answer)>>(iter: I) -> Self {
        Answers(iter.into_iter().collect())
    }
}

impl Question {
    /// A question as a plugin asked it, or why it is malformed.
    pub fn new(key: String, message: String, form: &str) -> Result<Question, String> {
        check_key(&key)?;
        if message.len() > MAX_MESSAGE_BYTES {
            return Err(format!(
                "the message of question `{key}` is {} bytes, more than {MAX_MESSAGE_BYTES}",
                message.len()
            ));
        }
        if form.len() > MAX_FORM_BYTES {
            return Err(format!(
                "the form of question `{key}` is {} bytes, more than {MAX_FORM_BYTES}",
                form.len()
            ));
        }
        let form: Value = serde_json::from_str(form)
            .map_err(|e| format!("the form of question `{key}` is not JSON: {e}"))?;
        check_form(&form).map_err(|e| format!("the form of question `{key}` {e}"))?;
        Ok(Question {
            key,
            need: Need::Form,
            message,
            form,
            tool: String::new(),
            plugin: String::new(),
        })
    }

    /// A request to the client (`need` is not [`Need::Form`]) under `key`,
    /// or why it is malformed.
    pub fn to_client(key: String, need: Need) -> Result<Question, String> {
        check_key(&key)?;
        let message = match &need {
            Need::Form | Need::SamplingApproval(_) => {
                return Err(format!("request `{key}` is the person's, not the client's"));
            }
            Need::Sample(sampling) => {
                sampling
                    .check()
                    .map_err(|e| format!("request `{key}`: {e}"))?;
                sampling.summary()
            }
            Need::Roots => "the client's roots".to_owned(),
        };
        Ok(Question {
            key,
            need,
            message,
            form: Value::Null,
            tool: String::new(),
            plugin: String::new(),
        })
    }

    /// The host's question whether `request`, which the tool `tool` of
    /// `plugin` made under `key`, may go to the client's model. Its key
    /// holds a digest of the request, so a yes is for this request only: a
    /// run that asks something else under the same key is asked again.
    pub fn sampling_approval(
        key: &str,
        request: &crate::sampling::Sampling,
        tool: &str,
        plugin: &str,
    ) -> Question {
        use sha2::Digest;
        let json = serde_json::to_vec(request).unwrap_or_default();
        let digest = hex::encode(sha2::Sha256::digest(json));
        Question {
            key: format!("toolwarden-sampling-{key}-{}", &digest[..16]),
            message: format!(
                "toolwarden approval: the tool `{}` (plugin `{}`) would ask your client's model: \
                 {}. Allow this one request?",
                crate::presentation::one_line(tool),
                crate::presentation::one_line(plugin),
                request.summary()
            ),
            need: Need::SamplingApproval(Box::new(request.clone())),
            form: Value::Null,
            tool: tool.to_owned(),
            plugin: plugin.to_owned(),
        }
    }

    /// Whether `answer` to a [`Need::SamplingApproval`] says yes.
    pub fn approves(answer: &Answer) -> bool {
        matches!(answer, Answer::Accepted(content)
            if content.get(APPROVAL_FIELD).and_then(Value::as_str) == Some(APPROVE_ONCE))
    }

    /// What a person is shown, in every channel: who asks (named by the
    /// host, outside the plugin's text, and never the host itself), then
    /// the plugin's message with its control characters escaped. The host's
    /// own question is shown as the host wrote it.
    pub fn prompt(&self) -> String {
        if let Need::SamplingApproval(_) = self.need {
            return self.message.clone();
        }
        format!(
            "Question from the tool `{}` (plugin `{}`), not from toolwarden:\n\n{}",
            crate::presentation::one_line(&self.tool),
            crate::presentation::one_line(&self.plugin),
            crate::presentation::visible(&self.message)
        )
    }

    /// Whether `answer` fits this question's form: a declined or cancelled
    /// question always does; accepted content must be an object with the
    /// form's fields only, each as the form describes it.
    pub fn admits(&self, answer: &Answer) -> Result<(), String> {
        let content = match (&self.need, answer) {
            (Need::Form, Answer::Accepted(content)) => content,
            (Need::Form, Answer::Declined | Answer::Cancelled)
            | (Need::Sample(_) | Need::Roots, Answer::Failed(_))
            | (
                Need::SamplingApproval(_),
                Answer::Declined | Answer::Cancelled | Answer::Failed(_),
            ) => return Ok(()),
            (Need::SamplingApproval(_), Answer::Accepted(content)) => {
                let choice = content.get(APPROVAL_FIELD).and_then(Value::as_str);
                return if matches!(choice, Some(APPROVE_ONCE | DENY)) {
                    Ok(())
                } else {
                    Err(format!(
                        "the answer to `{}` chooses neither `{APPROVE_ONCE}` nor `{DENY}`",
                        self.key
                    ))
                };
            }
            (Need::Sample(_), Answer::Sampled(completion)) => {
                return completion
                    .check()
                    .map_err(|e| format!("request `{}`: {e}", self.key));
            }
            (Need::Roots, Answer::Roots(roots)) => {
                return crate::sampling::check_roots(roots)
                    .map_err(|e| format!("request `{}`: {e}", self.key));
            }
            (need, _) => {
                return Err(format!(
                    "the answer to `{}` is not what a {} request gets",
                    self.key,
                    need.capability()
                ));
            }
        };
        let mut schema = self.form.clone();
        if let Some(map) = schema.as_object_mut() {
            map.insert("additionalProperties".into(), Value::Bool(false));
        }
        let validator = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&schema)
            .map_err(|e| format!("the form cannot check answers: {e}"))?;
        let problems: Vec<String> = validator
            .iter_errors(content)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the answer to question `{}` does not fit its form: {}",
                self.key,
                problems.join("; ")
            ))
        }
    }
}

fn check_key(key: &str) -> Result<(), String> {
    if key.is_empty()
        || key.len() > MAX_KEY_LEN
        || !key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
    {
        return Err(format!(
            "the question key `{}` is not 1-{MAX_KEY_LEN} characters of [a-z0-9_-]",
            crate::presentation::cut_to(key.to_owned(), 80)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ask(form: Value) -> Result<Question, String> {
        Question::new("q".into(), "why?".into(), &form.to_string())
    }

    #[test]
    fn no_form_can_pass_for_the_hosts_approval_prompt() {
        let field = json!({"type": "string", "enum": ["approve_once", "deny"]});
        for form in [
            json!({"type": "object", "properties": {"toolwarden_decision": field}}),
            json!({"type": "object", "properties": {"TOOLWARDEN": field}}),
            json!({"type": "object", "title": "Toolwarden approval", "properties": {}}),
            json!({"type": "object", "properties": {"x": {"type": "boolean", "title": " toolwarden: your decision"}}}),
            json!({"type": "object", "properties": {"x": {"type": "boolean", "description": "a\u{1b}[2Jb"}}}),
            json!({"type": "object", "properties": {"x": {"type": "string", "enum": ["\u{202e}a"]}}}),
            json!({"type": "object", "properties": {"x\u{7}": {"type": "boolean"}}}),
        ] {
            assert!(ask(form.clone()).is_err(), "{form}");
        }
        let plain = json!({"type": "object", "properties": {"approve": {"type": "boolean", "description": "two\nlines"}}});
        assert!(ask(plain).is_ok());
    }

    #[test]
    fn a_person_is_shown_who_asks_and_the_text_with_its_escapes_shown() {
        let mut question = Question::new(
            "q".into(),
            "approve?\u{1b}[2J\u{202e}x\nnext".into(),
            &json!({"type": "object", "properties": {}}).to_string(),
        )
        .unwrap();
        question.tool = "fetch".into();
        question.plugin = "evil\n.wasm".into();
        assert_eq!(
            question.prompt(),
            "Question from the tool `fetch` (plugin `evil\\u{000a}.wasm`), not from toolwarden:\n\n\
             approve?\\u{001b}[2J\\u{202e}x\nnext"
        );
    }

    #[test]
    fn accepts_every_field_kind_mcp_elicitation_allows() {
        let form = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe", "minLength": 1},
                "email": {"type": "string", "format": "email"},
                "age": {"type": "integer", "minimum": 0, "default": 30},
                "score": {"type": "number", "default": 95.5},
                "ok": {"type": "boolean", "default": true},
                "one": {"type": "string", "enum": ["a", "b"]},
                "titled": {"type": "string", "oneOf": [{"const": "a", "title": "A"}]},
                "legacy": {"type": "string", "enum": ["a"], "enumNames": ["A"]},
                "many": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
                "many_titled": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}}
            },
            "required": ["name"]
        });
        assert!(ask(form).is_ok());
    }

    #[test]
    fn refuses_nested_objects_unknown_keywords_and_bad_keys() {
        let nested = json!({"type": "object", "properties": {"x": {"type": "object"}}});
        assert!(ask(nested).unwrap_err().contains("field `x`"));
        let keyword =
            json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "a"}}});
        assert!(ask(keyword).unwrap_err().contains("`pattern`"));
        let required = json!({"type": "object", "properties": {}, "required": ["y"]});
        assert!(ask(required).unwrap_err().contains("requires `y`"));
        let key = Question::new(
            "Bad Key".into(),
            "m".into(),
            r#"{"type":"object","properties":{}}"#,
        );
        assert!(key.unwrap_err().contains("[a-z0-9_-]"));
        assert!(ask(json!([1])).unwrap_err().contains("not a JSON object"));
    }

    #[test]
    fn an_answer_must_fit_the_form() {
        let q = ask(json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "mail": {"type": "string", "format": "email"}},
            "required": ["name"]
        }))
        .unwrap();
        assert!(
            q.admits(&Answer::Accepted(json!({"name": "Alice"})))
                .is_ok()
        );
        assert!(q.admits(&Answer::Declined).is_ok());
        assert!(q.admits(&Answer::Accepted(json!({}))).is_err());
        assert!(q.admits(&Answer::Accepted(json!({"name": 5}))).is_err());
        assert!(
            q.admits(&Answer::Accepted(json!({"name": "a", "extra": 1})))
                .is_err()
        );
        assert!(
            q.admits(&Answer::Accepted(json!({"name": "a", "mail": "nope"})))
                .is_err()
        );
        assert!(q.admits(&Answer::Accepted(json!("Alice"))).is_err());
    }
}
