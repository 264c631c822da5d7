//! `toolwarden call TOOL [ARGS|-]`: one call through the full pipeline.

use crate::approval::ApprovalDecision;
use crate::call::{CallId, CallRequest, SessionId, Tracing};
use crate::cli::ExitStatus;
use crate::cli::printer::{Printer, timestamp};
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::outcome::{CallResult, ErrorCode, Status};
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
        printer.error(failure, Some(&failure.error.hint()));
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
    if interactive
        && result.code() == Some(ErrorCode::ApprovalRequired)
        && let Some(id) = result.approval_id.clone()
        && prompt(&host, &id, printer)?
    {
        // Approved or declined, the call now carries its decided approval:
        // it runs once, or ends as APPROVAL_DENIED in the audit log.
        request.call_id = CallId::new();
        request.approval = Some(id);
        result = runtime.block_on(host.handle(request));
    }
    print(&result, opts.json, printer);
    Ok(result.status.into())
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
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    let (decision, reason) = match answer.trim().to_lowercase().as_str() {
        "y" | "yes" => (ApprovalDecision::Approve, "approved at the terminal prompt"),
        _ => (ApprovalDecision::Deny, "declined at the terminal prompt"),
    };
    match host.records().decide(
        id,
        decision,
        Some(reason),
        crate::approval::Decider::Terminal,
    )? {
        Some(_) => Ok(true),
        None => {
            printer.error(format!("approval `{id}` disappeared"), None);
            Ok(false)
        }
    }
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
