//! `toolwarden turn FILE|-`: the tool calls of one model turn, as a batch.

use crate::ExitStatus;
use crate::call::{CallRequest, SessionId};
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::outcome::Status;
use crate::printer::Printer;
use crate::turn::{parse, render};
use serde_json::json;
use std::io::Read;
use std::path::Path;

pub fn run(
    config: Config,
    input: &Path,
    session: Option<String>,
    profile: Option<String>,
    json: bool,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let profile = match super::profile_of(&config, profile, printer) {
        Ok(profile) => profile,
        Err(status) => return Ok(status),
    };
    let text = if input == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map(|_| text)
    } else {
        std::fs::read_to_string(input)
    };
    let text = match text {
        Ok(text) => text,
        Err(e) => {
            printer.error(
                format!("cannot read the turn from `{}`: {e}", input.display()),
                Some("give a file, or `-` for stdin"),
            );
            return Ok(ExitStatus::Error);
        }
    };
    let (shape, calls) = match parse(&text) {
        Ok(parsed) => parsed,
        Err(e) => {
            printer.error(e, Some("pass the `tool_calls` list of an OpenAI message, or the `tool_use` blocks of an Anthropic message"));
            return Ok(ExitStatus::Error);
        }
    };
    let host = Controller::new(config)?;
    let session = session.map(SessionId::from).unwrap_or_default();
    let requests = calls
        .iter()
        .map(|c| {
            let mut request =
                CallRequest::new(c.tool.clone(), c.args.clone()).in_session(session.clone());
            request.profile = profile.clone();
            request
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Engine(format!("cannot start the async runtime: {e}")))?;
    let results = runtime.block_on(host.handle_batch(requests));
    if json {
        let details: Vec<_> = calls
            .iter()
            .zip(&results)
            .map(|(c, r)| json!({ "id": c.id, "result": r }))
            .collect();
        printer.json(&details);
    } else {
        printer.json(&render(shape, &calls, &results));
    }
    let worst = results
        .iter()
        .map(|r| r.status)
        .fold(Status::Ok, |worst, s| match (worst, s) {
            (Status::Error | Status::Denied, _) | (_, Status::Error | Status::Denied) => {
                Status::Error
            }
            (Status::PendingApproval, _) | (_, Status::PendingApproval) => Status::PendingApproval,
            (Status::Ok, Status::Ok) => Status::Ok,
        });
    Ok(worst.into())
}
