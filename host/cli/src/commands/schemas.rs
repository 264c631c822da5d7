//! `toolwarden schemas --format F`: the tool list in a model API's shape.

use crate::ExitStatus;
use crate::config::Config;
use crate::error::Error;
use crate::export::{Format, export};
use crate::printer::Printer;

pub fn run(
    config: Config,
    format: Format,
    profile: Option<String>,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let (host, profile) = match super::profiled_host(config, profile, printer)? {
        Ok(profiled) => profiled,
        Err(status) => return Ok(status),
    };
    let set = host.config().tool_set(profile.as_deref());
    let registry = host.registry();
    let offered = registry.tools_in(&set).map(|t| t.spec());
    let (tools, refused) = export(format, offered);
    printer.json(&tools);
    for r in &refused {
        printer.warning(format!("`{}` left out: {}", r.tool, r.reason), None);
    }
    Ok(if refused.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
