//! `toolwarden schemas --format F`: the tool list in a model API's shape.

use crate::cli::ExitStatus;
use crate::cli::printer::Printer;
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::export::{Format, export};

pub fn run(config: Config, format: Format, printer: Printer) -> Result<ExitStatus, Error> {
    let host = Controller::new(config)?;
    let registry = host.registry();
    let (tools, refused) = export(format, registry.tools().map(|t| &t.spec));
    printer.json(&tools);
    for r in &refused {
        printer.error(format!("`{}` left out: {}", r.tool, r.reason), None);
    }
    Ok(if refused.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
