//! `toolwarden policy explain TOOL ARGS`: how the rules decide a call.

use crate::ExitStatus;
use crate::caller::{Caller, Proof};
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::printer::Printer;
use std::collections::BTreeMap;

pub fn explain(
    config: Config,
    (tool, args): (&str, &str),
    caller: &[String],
    json: bool,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let caller = match described_caller(caller, config.auth().map(|a| a.issuer.as_str())) {
        Ok(caller) => caller,
        Err(why) => {
            printer.error(
                why,
                Some("e.g. --caller subject=alice --caller groups=oncall"),
            );
            return Ok(ExitStatus::Error);
        }
    };
    let host = Controller::new(config)?;
    let explanation = match host.explain(tool, args, caller.as_ref()) {
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
    if !decision.approvers.is_default() {
        printer.out(format!("approvers: {}", decision.approvers.describe()));
    }
    printer.out(format!("reason: {}", decision.reason));
    Ok(ExitStatus::Success)
}

/// The caller `--caller KEY=VALUE` describes (none without any): a token's
/// subject from `issuer` (by default the configured one), or the shared
/// token's holder with `proof=shared_token`; other keys are claims.
fn described_caller(pairs: &[String], issuer: Option<&str>) -> Result<Option<Caller>, String> {
    if pairs.is_empty() {
        return Ok(None);
    }
    let mut subject = None;
    let mut issuer = issuer.map(str::to_owned);
    let mut shared = false;
    let mut claims: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for pair in pairs {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("`--caller {pair}` is not KEY=VALUE"))?;
        match key {
            "subject" => subject = Some(value.to_owned()),
            "issuer" => issuer = Some(value.to_owned()),
            "proof" => match value {
                "shared_token" => shared = true,
                "access_token" => shared = false,
                other => {
                    return Err(format!(
                        "`proof={other}` is neither access_token nor shared_token"
                    ));
                }
            },
            claim => claims
                .entry(claim.to_owned())
                .or_default()
                .push(value.to_owned()),
        }
    }
    let proof = if shared {
        Proof::SharedToken
    } else {
        Proof::AccessToken {
            issuer: issuer.unwrap_or_default(),
        }
    };
    let subject = match (&proof, subject) {
        (Proof::SharedToken, None) => "shared-token".to_owned(),
        (_, Some(subject)) => subject,
        (Proof::AccessToken { .. } | Proof::SignIn { .. } | Proof::OsUser, None) => {
            return Err("`--caller` needs `subject=...` (or `proof=shared_token`)".into());
        }
    };
    let claims = claims
        .into_iter()
        .map(|(claim, mut values)| {
            let value = match values.len() {
                1 => serde_json::Value::String(values.remove(0)),
                _ => serde_json::json!(values),
            };
            (claim, value)
        })
        .collect();
    Ok(Some(Caller {
        subject,
        proof,
        scopes: Vec::new(),
        claims,
    }))
}
