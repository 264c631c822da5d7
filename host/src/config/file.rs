//! The `toolwarden.toml` format. Unknown keys are errors, never ignored:
//! a misspelled limit must not silently leave the default in place.
//!
//! ```toml
//! [limits]
//! timeout_ms = 10000
//! fuel = 10000000000
//! memory_mb = 64
//! max_output_kb = 1024
//!
//! [[rule]]
//! tools = ["read_file", "list_*"]
//! decision = "allow"
//! reason = "reading the workspace is harmless"
//! ```

use super::limits::{Limits, MAX_MEMORY_MB, MAX_OUTPUT_KB, MAX_TIMEOUT_MS};
use crate::error::Error;
use crate::policy::{RuleDef, Verdict};
use serde::Deserialize;
use std::path::Path;
use std::time::Duration;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    limits: Option<Spanned<LimitsTable>>,
    #[serde(default)]
    rule: Vec<Spanned<RuleTable>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsTable {
    timeout_ms: Option<u64>,
    fuel: Option<u64>,
    memory_mb: Option<u64>,
    max_output_kb: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleTable {
    tools: Vec<String>,
    decision: Verdict,
    reason: String,
}

/// What a config file says, before the policy is compiled.
pub(super) struct Parsed {
    pub limits: Limits,
    pub rules: Vec<RuleDef>,
}

/// A config error that does not yet know the file's name.
pub(super) struct FileError {
    line: Option<usize>,
    message: String,
    hint: String,
}

impl FileError {
    pub fn at(self, path: &Path) -> Error {
        Error::Config {
            path: path.to_owned(),
            line: self.line,
            message: self.message,
            hint: self.hint,
        }
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

pub(super) fn parse(text: &str) -> Result<Parsed, FileError> {
    let file: FileConfig = toml::from_str(text).map_err(|e| FileError {
        line: e.span().map(|s| line_of(text, s.start)),
        message: e.message().to_owned(),
        hint: "see the policy format in the README: `[limits]` takes timeout_ms, fuel, \
               memory_mb, max_output_kb; each `[[rule]]` takes tools, decision, reason"
            .into(),
    })?;
    let limits = match file.limits {
        None => Limits::default(),
        Some(table) => {
            let line = line_of(text, table.span().start);
            limits(table.into_inner()).map_err(|message| FileError {
                line: Some(line),
                message,
                hint: "choose a value inside the allowed range".into(),
            })?
        }
    };
    let rules = file
        .rule
        .into_iter()
        .map(|rule| {
            let line = line_of(text, rule.span().start);
            let rule = rule.into_inner();
            RuleDef {
                line: Some(line),
                tools: rule.tools,
                verdict: rule.decision,
                reason: rule.reason,
            }
        })
        .collect();
    Ok(Parsed { limits, rules })
}

fn bounded(key: &str, value: Option<u64>, default: u64, max: u64) -> Result<u64, String> {
    match value {
        None => Ok(default),
        Some(v) if (1..=max).contains(&v) => Ok(v),
        Some(v) => Err(format!(
            "`limits.{key}` is {v}; it must be between 1 and {max}"
        )),
    }
}

fn limits(table: LimitsTable) -> Result<Limits, String> {
    let d = Limits::default();
    Ok(Limits {
        timeout: Duration::from_millis(bounded(
            "timeout_ms",
            table.timeout_ms,
            d.timeout.as_millis() as u64,
            MAX_TIMEOUT_MS,
        )?),
        fuel: bounded("fuel", table.fuel, d.fuel, u64::MAX)?,
        memory_bytes: bounded(
            "memory_mb",
            table.memory_mb,
            d.memory_bytes >> 20,
            MAX_MEMORY_MB,
        )? << 20,
        max_output_bytes: (bounded(
            "max_output_kb",
            table.max_output_kb,
            (d.max_output_bytes >> 10) as u64,
            MAX_OUTPUT_KB,
        )? << 10) as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> FileError {
        match parse(text) {
            Ok(_) => panic!("expected an error for {text:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn empty_file_means_default_limits_and_no_rules() {
        let parsed = parse("").unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(parsed.limits, Limits::default());
        assert!(parsed.rules.is_empty());
    }

    #[test]
    fn unknown_key_is_an_error_with_its_line() {
        let e = err("[limits]\ntimeout_ms = 5\ntimeuot = 3\n");
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("timeuot"), "{}", e.message);
    }

    #[test]
    fn unknown_decision_is_an_error() {
        let e = err("[[rule]]\ntools = [\"x\"]\ndecision = \"maybe\"\nreason = \"r\"\n");
        assert!(e.message.contains("maybe"), "{}", e.message);
    }

    #[test]
    fn zero_limits_are_refused() {
        let e = err("\n[limits]\nmemory_mb = 0\n");
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("memory_mb"));
    }

    #[test]
    fn rules_keep_their_line() {
        let parsed = parse("\n\n[[rule]]\ntools = [\"a*\"]\ndecision = \"ask\"\nreason = \"r\"\n")
            .unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(parsed.rules[0].line, Some(3));
        assert_eq!(parsed.rules[0].verdict, Verdict::Ask);
    }
}
