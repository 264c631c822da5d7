//! `toolwarden policy explain TOOL ARGS`: how the rules decide a call.

use crate::ExitStatus;
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::printer::Printer;

pub fn explain(
    config: Config,
    tool: &str,
    args: &str,
    json: bool,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let host = Controller::new(config)?;
    let explanation = match host.explain(tool, args) {
        Ok(explanation) => explanation,
        Err(error) => {
            printer.error(
                &error,
                Some("`toolwarden list` shows the tools; arguments are a JSON object"),
            );
            return Ok(ExitStatus::Error);
        }
    };
    if json {
        printer.json(&explanation);
        return Ok(ExitStatus::Success);
    }
    for path in &explanation.paths {
        printer.out(format!("path {path}"));
    }
    if explanation.rules.is_empty() {
        printer.out("no rules in the policy");
    }
    for report in &explanation.rules {
        let at = report
            .line
            .map(|l| format!(" (line {l})"))
            .unwrap_or_default();
        let status = if report.matched {
            "matches"
        } else {
            "no match"
        };
        let note = report
            .note
            .as_deref()
            .map(|n| format!(": {n}"))
            .unwrap_or_default();
        printer.out(format!(
            "rule {}{at} [{}] {status}{note}",
            report.rule,
            report.verdict.as_str()
        ));
    }
    let decision = &explanation.decision;
    printer.out(format!("decision: {}", decision.verdict.as_str()));
    printer.out(format!("reason: {}", decision.reason));
    Ok(ExitStatus::Success)
}
