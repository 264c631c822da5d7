//! `toolwarden check [PLUGIN.wasm|DIR]`: every problem, one line each, with a fix.

use crate::ExitStatus;
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::printer::Printer;
use std::path::Path;

pub fn run(
    config: &Config,
    target: Option<&Path>,
    json: bool,
    policy: bool,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let scope = crate::check::Scope::for_config(config, policy);
    let report = Controller::check(config, target, scope)?;
    if json {
        printer.json(&report);
    } else {
        for p in &report.problems {
            // Quoted plugin output may span lines; a problem is one line.
            let problem = p.problem.split_whitespace().collect::<Vec<_>>().join(" ");
            // A fix may hold a rule to paste: its lines are indented under
            // the problem (TOML takes indented keys and headers as they are).
            let fix: Vec<&str> = p.fix.lines().filter(|l| !l.trim().is_empty()).collect();
            printer.out(format!(
                "{}: {problem}\n  fix: {}",
                p.place,
                fix.join("\n    ")
            ));
        }
        let summary = format!(
            "{} plugins, {} tools, {} rules",
            report.plugins, report.tools, report.rules
        );
        match report.problems.len() {
            0 => printer.out(format!("ok: {summary}, no problems")),
            n => printer.out(format!(
                "{n} problem{} ({summary})",
                if n == 1 { "" } else { "s" }
            )),
        }
    }
    Ok(if report.problems.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
