//! `toolwarden inspect FILE.wasm`: what one plugin declares.

use crate::ExitStatus;
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::printer::Printer;
use serde_json::json;
use std::path::Path;

pub fn run(
    config: &Config,
    file: &Path,
    json: bool,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let inspection = Controller::inspect(config, file)?;
    let plugin = &inspection.plugin;
    if json {
        let tools: Vec<_> = inspection.tools.iter().map(|t| t.spec()).collect();
        printer.json(&json!({
            "file": plugin.file(),
            "sha256": plugin.sha256(),
            "contract": plugin.contract().as_str(),
            "imports": plugin.imports(),
            "tools": tools,
            "prompts": plugin.prompts(),
        }));
        return Ok(ExitStatus::Success);
    }
    printer.out(format!("{}", plugin.file().display()));
    printer.out(format!("  sha256   {}", plugin.sha256()));
    printer.out(format!("  contract {}", plugin.contract()));
    printer.out(format!("  imports  {}", plugin.imports().join(", ")));
    for tool in &inspection.tools {
        let spec = tool.spec();
        printer.out(format!("\n{} - {}", spec.name, spec.title));
        printer.out(format!(
            "  risk {}, filesystem {}, effects [{}]",
            spec.risk.as_str(),
            spec.filesystem.as_str(),
            spec.effects
        ));
        if let Some(ms) = spec.timeout_ms {
            printer.out(format!("  timeout hint {ms} ms"));
        }
        match &spec.network {
            None => printer.out("  network none"),
            Some(need) => {
                let origins: Vec<String> = need.origins.iter().map(ToString::to_string).collect();
                printer.out(format!("  network {}", origins.join(", ")));
                if !need.credentials.is_empty() {
                    printer.out(format!("  credentials {}", need.credentials.join(", ")));
                }
            }
        }
        printer.out(format!("  {}", spec.description));
        printer.out(format!("  input  {}", spec.input_schema));
        if let Some(output) = &spec.output_schema {
            printer.out(format!("  output {output}"));
        }
    }
    for prompt in plugin.prompts() {
        let arguments: Vec<String> = prompt
            .arguments
            .iter()
            .map(|a| {
                let required = if a.required { "" } else { "?" };
                format!("{}{required}", a.name)
            })
            .collect();
        printer.out(format!(
            "\nprompt {}({})",
            prompt.name,
            arguments.join(", ")
        ));
        printer.out(format!("  {}", prompt.description));
    }
    Ok(ExitStatus::Success)
}
