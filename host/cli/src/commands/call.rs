//! `toolwarden call TOOL [ARGS|-]`: one call through the full pipeline.

use crate::ExitStatus;
use crate::approval::{ApprovalDecision, Decided};
use crate::call::{CallId, CallRequest, SessionId, Tracing};
use crate::caller::Caller;
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::outcome::{CallResult, ErrorCode, Status};
use crate::printer::{Printer, timestamp};
use crate::question::{Answer, MAX_QUESTIONS, Need, Question};
use serde_json::{Map, Value};
use std::io::{BufRead, IsTerminal, Read, Write};

pub struct Options {
    pub tool: String,
    pub args: Option<String>,
    pub session: Option<String>,
    pub approval: Option<String>,
    pub json: bool,
    pub tracing: Tracing,
    pub profile: Option<String>,
}

pub fn run(config: Config, opts: Options, printer: Printer) -> Result<ExitStatus, Error> {
    let args = match opts.args.as_deref() {
        Some("-") => {
            let mut text = String::new();
            if let Err(e) = std::io::stdin().read_to_string(&mut text) {
                printer.error(
                    format!("cannot read the arguments from stdin: {e}"),
                    Some("pipe a JSON object, e.g. echo '{}' | toolwarden call TOOL -"),
                );
                return Ok(ExitStatus::Error);
            }
            text
        }
        Some(text) => text.to_owned(),
        None => "{}".to_owned(),
    };
    let interactive = !opts.json
        && opts.args.as_deref() != Some("-")
        && std::io::stdin().is_terminal()
        && std::io::stderr().is_terminal();
    let profile = match super::profile_of(&config, opts.profile, printer) {
        Ok(profile) => profile,
        Err(status) => return Ok(status),
    };
    let host = Controller::new(config)?;
    for failure in host.registry().failures() {
        printer.warning(failure, Some(&failure.error().hint()));
    }
    // An approval belongs to the session it was asked in; a CLI call that
    // brings one without naming a session continues that session.
    let session = match (opts.session, &opts.approval) {
        (Some(id), _) => SessionId::from(id),
        (None, Some(approval)) => host
            .records()
            .approval(approval)?
            .map(|a| SessionId::from(a.session))
            .unwrap_or_default(),
        (None, None) => SessionId::new(),
    };
    let mut request = CallRequest::new(opts.tool, args).in_session(session);
    request.approval = opts.approval;
    request.tracing = opts.tracing;
    request.profile = profile;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Engine(format!("cannot start the async runtime: {e}")))?;
    let mut result = runtime.block_on(host.handle(request.clone()));
    // At a terminal the person answers what the call needs, and it runs
    // again: an approval (the call then carries its decided approval: it
    // runs once, or ends as APPROVAL_DENIED in the audit log), or a tool's
    // question (the call runs from the start with every answer so far).
    // A run that stops at a question has used its approval, so the rerun
    // is approved afresh.
    for _ in 0..2 * MAX_QUESTIONS {
        if !interactive {
            break;
        }
        if result.code() == Some(ErrorCode::ApprovalRequired)
            && let Some(id) = result.approval_id.clone()
            && prompt(&host, &id, printer)?
        {
            request.approval = Some(id);
        } else if !result.questions.is_empty() {
            for question in &result.questions {
                let answer = ask(question);
                request.answers.insert(question.key.clone(), answer);
            }
            request.approval = None;
        } else {
            break;
        }
        request.call_id = CallId::new();
        result = runtime.block_on(host.handle(request.clone()));
    }
    if !interactive && !result.questions.is_empty() {
        let asked: Vec<String> = result
            .questions
            .iter()
            .map(|question| {
                format!(
                    "{}\n{}",
                    question.prompt(),
                    serde_json::to_string_pretty(&question.form).unwrap_or_default()
                )
            })
            .collect();
        printer.warning(
            asked.join("\n"),
            Some(
                "nothing ran past the question: run the call at a terminal to answer it, or through an MCP client that can ask the person",
            ),
        );
    }
    print(&result, opts.json, printer);
    Ok(result.status.into())
}

/// Asks `question` at the terminal, field by field, until the answer fits
/// its form (three tries): `n` at the first prompt declines, an empty line
/// cancels. A request of an MCP client's own (sampling, roots) is answered
/// with why the terminal cannot: the tool sees that and goes on.
fn ask(question: &Question) -> Answer {
    match question.need {
        Need::Form => {}
        Need::Sample(_) | Need::SamplingApproval(_) => {
            return Answer::Failed(
                "the call runs at a terminal, where no model can be asked: call it through an \
                 MCP client that offers sampling"
                    .into(),
            );
        }
        Need::Roots => {
            return Answer::Failed(
                "the call runs at a terminal, which has no roots: its workspace is the host's"
                    .into(),
            );
        }
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "{}\nAnswer? [y = fill in, n = decline, Enter = cancel] ",
        question.prompt()
    );
    match read_line().to_lowercase().as_str() {
        "y" | "yes" => {}
        "n" | "no" => return Answer::Declined,
        _ => return Answer::Cancelled,
    }
    for _ in 0..3 {
        let answer = Answer::Accepted(Value::Object(fill_in(&question.form, &mut err)));
        match question.admits(&answer) {
            Ok(()) => return answer,
            Err(problem) => {
                let _ = writeln!(err, "That does not fit the form: {problem}.");
            }
        }
    }
    Answer::Cancelled
}

/// One prompt per field of `form`; an empty line keeps the default, or
/// leaves the field out.
fn fill_in(form: &Value, err: &mut impl Write) -> Map<String, Value> {
    let required: Vec<&str> = form["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    let Some(fields) = form["properties"].as_object() else {
        return content;
    };
    for (name, field) in fields {
        let kind = field["type"].as_str().unwrap_or("string");
        let mut label = field["title"].as_str().unwrap_or(name).to_owned();
        if let Some(description) = field["description"].as_str() {
            label = format!("{label} ({description})");
        }
        let choices = choices(field);
        if !choices.is_empty() {
            let many = if kind == "array" {
                ", comma-separated"
            } else {
                ""
            };
            label = format!("{label} [{}{many}]", choices.join(" | "));
        }
        if let Some(default) = field.get("default") {
            label = format!("{label} (default {default})");
        }
        let need = if required.contains(&name.as_str()) {
            "required"
        } else {
            "optional"
        };
        let _ = write!(err, "  {label}, {kind}, {need}: ");
        let _ = err.flush();
        let line = read_line();
        let value = if line.is_empty() {
            field.get("default").cloned()
        } else {
            Some(typed(kind, &line))
        };
        if let Some(value) = value {
            content.insert(name.clone(), value);
        }
    }
    content
}

/// The values a select field allows, as the person types them.
fn choices(field: &Value) -> Vec<String> {
    let one = if field["type"] == "array" {
        &field["items"]
    } else {
        field
    };
    let listed = one["enum"].as_array().map(|values| {
        values
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    });
    listed.unwrap_or_else(|| {
        one["oneOf"]
            .as_array()
            .or_else(|| one["anyOf"].as_array())
            .map(|options| {
                options
                    .iter()
                    .filter_map(|o| {
                        let value = o["const"].as_str()?;
                        Some(match o["title"].as_str() {
                            Some(title) => format!("{value} = {title}"),
                            None => value.to_owned(),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default()
    })
}

/// What the person typed, as the field's kind; text that is not of the
/// kind stays text, and the form check says what is wrong with it.
fn typed(kind: &str, line: &str) -> Value {
    let parsed = match kind {
        "integer" | "number" => serde_json::from_str::<serde_json::Number>(line)
            .ok()
            .map(Value::Number),
        "boolean" => match line.to_lowercase().as_str() {
            "y" | "yes" | "true" => Some(Value::Bool(true)),
            "n" | "no" | "false" => Some(Value::Bool(false)),
            _ => None,
        },
        "array" => Some(Value::Array(
            line.split(',')
                .map(|item| Value::String(item.trim().to_owned()))
                .filter(|item| item != "")
                .collect(),
        )),
        _ => None,
    };
    parsed.unwrap_or_else(|| Value::String(line.to_owned()))
}

fn read_line() -> String {
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    line.trim().to_owned()
}

/// Shows what would run and asks; anything but `y` or `yes` denies. Returns
/// whether the approval was decided.
fn prompt(host: &Controller, id: &str, printer: Printer) -> Result<bool, Error> {
    let Some(a) = host.records().approval(id)? else {
        return Ok(false);
    };
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "The policy asks before this call runs: {}\n  tool        {}\n  arguments   {}\n  capability  filesystem {}\n  network     {}\n  expires     {}\nRun it once? [y/N] ",
        a.reason,
        a.tool,
        a.args,
        a.capability,
        a.network,
        timestamp(a.expires_ms)
    );
    let (decision, reason) = match read_line().to_lowercase().as_str() {
        "y" | "yes" => (ApprovalDecision::Approve, "approved at the terminal prompt"),
        _ => (ApprovalDecision::Deny, "declined at the terminal prompt"),
    };
    let at_terminal = (crate::approval::Decider::Terminal, &Caller::os_user());
    match host
        .records()
        .decide(id, decision, Some(reason), at_terminal)?
    {
        Decided::Now(_) => Ok(true),
        Decided::Counted { approval, .. } => {
            printer.note(format!(
                "your approval is counted; the call waits for {} more: {}",
                approval.awaiting(),
                others_decide(id)
            ));
            Ok(false)
        }
        Decided::OwnCall(_) => {
            printer.warning(
                format!("approval `{id}` needs someone other than you to approve it"),
                Some(&others_decide(id)),
            );
            Ok(false)
        }
        Decided::Stale(_) | Decided::Missing => {
            printer.warning(format!("approval `{id}` is no longer pending"), None);
            Ok(false)
        }
    }
}

/// How the others a call waits for decide it.
fn others_decide(id: &str) -> String {
    format!(
        "they approve it with `toolwarden approvals approve {id}` or in the console, and the \
         same call, repeated, then runs once"
    )
}

fn print(result: &CallResult, json: bool, printer: Printer) {
    if json {
        printer.json(result);
        return;
    }
    for step in &result.trace {
        printer.note(format!(
            "{:>12}  {:>9.3} ms  {}",
            step.step,
            step.us as f64 / 1000.0,
            step.outcome
        ));
    }
    for child in &result.children {
        printer.note(format!(
            "called `{}` ({}): {}",
            child.tool,
            child.call_id,
            child.code.map_or("ok", |code| code.as_str())
        ));
    }
    if let Some(original) = &result.replayed_from {
        printer.note(format!(
            "answered with the recorded output of call `{original}`: the tool takes effect once per key and did not run again"
        ));
    }
    match (&result.content, &result.error) {
        (Some(content), _) => {
            printer.out(content);
            // Images, audio and resources are not written to a terminal:
            // one line each says what there is (`--json` has the bytes).
            for block in &result.blocks {
                printer.out(block.describe());
            }
        }
        (None, Some(error)) => {
            let label = match result.status {
                Status::Denied => "denied",
                Status::PendingApproval => "not run",
                Status::Ok | Status::Error => "error",
            };
            printer.out(format!("{label} [{}]: {}", error.code, error.message));
        }
        (None, None) => {}
    }
}
