//! `toolwarden call TOOL [ARGS|-]`: one call through the full pipeline.

use crate::call::{CallRequest, SessionId};
use crate::cli::ExitStatus;
use crate::cli::printer::Printer;
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::outcome::Status;
use std::io::Read;

pub fn run(
    config: Config,
    tool: String,
    args: Option<String>,
    session: Option<String>,
    json: bool,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let args = match args.as_deref() {
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
    let host = Controller::new(config)?;
    for failure in host.registry().failures() {
        printer.error(failure, Some(&failure.error.hint()));
    }
    let mut request = CallRequest::new(tool, args);
    if let Some(id) = session {
        request = request.in_session(SessionId::from(id));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Engine(format!("cannot start the async runtime: {e}")))?;
    let result = runtime.block_on(host.handle(request));
    if json {
        printer.json(&result);
    } else {
        match (&result.content, &result.error) {
            (Some(content), _) => printer.out(content),
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
    Ok(result.status.into())
}
