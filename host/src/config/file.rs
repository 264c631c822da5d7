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
//!
//! [[rule]]
//! tools = ["write_file"]
//! when = { "/path" = { not = "src/**" } }
//! decision = "deny"
//! reason = "writes stay under src/"
//! ```
//!
//! Rule keys: `tools`, `plugin` (globs), `risk`, `effects`, `filesystem`
//! (lists of WIT spellings), `when` (JSON pointer -> glob for strings, a
//! scalar for exact match, or `{ not = ... }`), `decision`, `reason`.

use super::limits::{
    Limits, MAX_DESCRIPTION_KB, MAX_INSTANCES, MAX_MEMORY_MB, MAX_OUTPUT_KB, MAX_SCHEMA_KB,
    MAX_TIMEOUT_MS, MAX_TOOLS_PER_PLUGIN,
};
use crate::audit::Durability;
use crate::error::Error;
use crate::guards::Budget;
use crate::policy::{ArgPattern, RuleDef, Verdict};
use crate::spec::{Effect, FsNeed, Risk};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    limits: Option<Spanned<LimitsTable>>,
    #[serde(default)]
    approvals: Option<Spanned<ApprovalsTable>>,
    #[serde(default)]
    audit: Option<AuditTable>,
    #[serde(default)]
    budget: Option<Spanned<BudgetTable>>,
    #[serde(default)]
    mcp: Option<McpTable>,
    #[serde(default)]
    scheduler: Option<Spanned<SchedulerTable>>,
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
    max_instances: Option<u64>,
    max_tools_per_plugin: Option<u64>,
    max_description_kb: Option<u64>,
    max_schema_kb: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApprovalsTable {
    ttl_seconds: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetTable {
    max_calls: Option<u64>,
    max_calls_per_tool: Option<u64>,
    max_run_ms: Option<u64>,
    max_calls_per_turn: Option<u64>,
    #[serde(default)]
    allow_duplicate_calls: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SchedulerTable {
    max_parallel: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct McpTable {
    #[serde(default)]
    list_denied: bool,
    max_sessions: Option<u64>,
    session_idle_seconds: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditTable {
    redact_keys: Option<Vec<String>>,
    durability: Option<DurabilityName>,
}

#[derive(Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum DurabilityName {
    Sync,
    Batched,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleTable {
    tools: Option<Vec<String>>,
    plugin: Option<Vec<String>>,
    risk: Option<Vec<Risk>>,
    effects: Option<Vec<Effect>>,
    filesystem: Option<Vec<FsNeed>>,
    #[serde(default)]
    when: BTreeMap<String, toml::Value>,
    decision: Verdict,
    reason: String,
}

/// What a config file says, before the policy is compiled.
pub(super) struct Parsed {
    pub limits: Limits,
    pub rules: Vec<RuleDef>,
    pub approval_ttl: Duration,
    pub redact_keys: Vec<String>,
    pub audit_durability: Durability,
    pub budget: Budget,
    pub mcp_list_denied: bool,
    pub mcp_sessions: super::McpSessions,
    pub max_parallel: usize,
}

/// Longest approval lifetime a config may set: a day.
const MAX_APPROVAL_TTL_SECONDS: u64 = 24 * 3600;

/// A config error that does not yet know the file's name.
pub(super) struct FileError {
    line: Option<usize>,
    message: String,
    hint: String,
}

impl FileError {
    pub(super) fn message(&self) -> &str {
        &self.message
    }
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
        hint: "see the config format in the README: `[limits]` takes timeout_ms, fuel, \
               memory_mb, max_output_kb, max_instances, max_tools_per_plugin, max_description_kb, max_schema_kb; `[approvals]` ttl_seconds; `[audit]` redact_keys, durability; `[budget]` max_calls, \
               max_calls_per_tool, max_run_ms, max_calls_per_turn, allow_duplicate_calls; `[mcp]` list_denied, max_sessions, session_idle_seconds; \
               `[scheduler]` max_parallel; each \
               `[[rule]]` takes tools, plugin, risk, effects, filesystem, when, decision, reason"
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
    let mut rules = Vec::with_capacity(file.rule.len());
    for rule in file.rule {
        let line = line_of(text, rule.span().start);
        let rule = rule.into_inner();
        let mut when = BTreeMap::new();
        for (pointer, value) in rule.when {
            let pattern = arg_pattern(&value).map_err(|message| FileError {
                line: Some(line),
                message: format!("`when.\"{pointer}\"`: {message}"),
                hint: "use a glob string (\"src/**\"), a scalar (true, 3), or { not = ... }".into(),
            })?;
            when.insert(pointer, pattern);
        }
        rules.push(RuleDef {
            line: Some(line),
            tools: rule.tools,
            plugin: rule.plugin,
            risk: rule.risk,
            effects: rule.effects,
            filesystem: rule.filesystem,
            when,
            verdict: rule.decision,
            reason: rule.reason,
        });
    }
    let approval_ttl = match file.approvals {
        None => crate::approval::DEFAULT_APPROVAL_TTL,
        Some(table) => {
            let line = line_of(text, table.span().start);
            let default = crate::approval::DEFAULT_APPROVAL_TTL.as_secs();
            let seconds = bounded(
                "ttl_seconds",
                table.into_inner().ttl_seconds,
                default,
                MAX_APPROVAL_TTL_SECONDS,
            )
            .map_err(|message| FileError {
                line: Some(line),
                message: message.replace("limits.", "approvals."),
                hint: "choose a value inside the allowed range".into(),
            })?;
            Duration::from_secs(seconds)
        }
    };
    let audit_durability = match file.audit.as_ref().and_then(|a| a.durability) {
        Some(DurabilityName::Sync) => Durability::Sync,
        Some(DurabilityName::Batched) | None => Durability::Batched,
    };
    let redact_keys = file.audit.and_then(|a| a.redact_keys).unwrap_or_else(|| {
        crate::audit::DEFAULT_REDACT_KEYS
            .iter()
            .map(|k| k.to_string())
            .collect()
    });
    let budget = match file.budget {
        None => Budget::default(),
        Some(table) => {
            let line = line_of(text, table.span().start);
            let table = table.into_inner();
            if [
                table.max_calls,
                table.max_calls_per_tool,
                table.max_run_ms,
                table.max_calls_per_turn,
            ]
            .contains(&Some(0))
            {
                return Err(FileError {
                    line: Some(line),
                    message: "a `[budget]` limit is 0, which would refuse every call".into(),
                    hint: "leave the key out for no limit, or set at least 1".into(),
                });
            }
            Budget {
                max_calls: table.max_calls,
                max_calls_per_tool: table.max_calls_per_tool,
                max_run_time: table.max_run_ms.map(Duration::from_millis),
                max_calls_per_turn: table.max_calls_per_turn,
                allow_duplicate_calls: table.allow_duplicate_calls,
            }
        }
    };
    let max_parallel = match file.scheduler {
        None => crate::scheduler::default_parallelism(),
        Some(table) => {
            let line = line_of(text, table.span().start);
            let default = crate::scheduler::default_parallelism() as u64;
            bounded(
                "max_parallel",
                table.into_inner().max_parallel,
                default,
                1024,
            )
            .map_err(|message| FileError {
                line: Some(line),
                message: message.replace("limits.", "scheduler."),
                hint: "choose a value inside the allowed range".into(),
            })? as usize
        }
    };
    let mcp_list_denied = file.mcp.as_ref().is_some_and(|m| m.list_denied);
    let defaults = super::McpSessions::default();
    let mcp_sessions = match file.mcp {
        None => defaults,
        Some(table) => {
            let fail = |message: String| FileError {
                line: None,
                message: message.replace("limits.", "mcp."),
                hint: "choose a value inside the allowed range".into(),
            };
            super::McpSessions {
                max: bounded(
                    "max_sessions",
                    table.max_sessions,
                    defaults.max as u64,
                    super::MAX_MCP_SESSIONS,
                )
                .map_err(fail)? as usize,
                idle: Duration::from_secs(
                    bounded(
                        "session_idle_seconds",
                        table.session_idle_seconds,
                        defaults.idle.as_secs(),
                        super::MAX_SESSION_IDLE_SECONDS,
                    )
                    .map_err(fail)?,
                ),
            }
        }
    };
    Ok(Parsed {
        limits,
        rules,
        approval_ttl,
        redact_keys,
        audit_durability,
        budget,
        mcp_list_denied,
        mcp_sessions,
        max_parallel,
    })
}

fn arg_pattern(value: &toml::Value) -> Result<ArgPattern, String> {
    match value {
        toml::Value::String(glob) => Ok(ArgPattern::Glob(glob.clone())),
        toml::Value::Integer(i) => Ok(ArgPattern::Exact(serde_json::json!(i))),
        toml::Value::Float(f) => Ok(ArgPattern::Exact(serde_json::json!(f))),
        toml::Value::Boolean(b) => Ok(ArgPattern::Exact(serde_json::json!(b))),
        toml::Value::Table(table) => match table.get("not") {
            Some(inner) if table.len() == 1 => Ok(ArgPattern::Not(Box::new(arg_pattern(inner)?))),
            _ => Err("a table must be `{ not = ... }`".into()),
        },
        toml::Value::Array(_) | toml::Value::Datetime(_) => Err(format!(
            "`{value}` is not a glob, a scalar or `{{ not = ... }}`"
        )),
    }
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

/// A size written in KiB, bounded like [`bounded`], in bytes.
fn bounded_kb(
    key: &str,
    value: Option<u64>,
    default_bytes: usize,
    max_kb: u64,
) -> Result<usize, String> {
    Ok((bounded(key, value, (default_bytes >> 10) as u64, max_kb)? << 10) as usize)
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
        max_output_bytes: bounded_kb(
            "max_output_kb",
            table.max_output_kb,
            d.max_output_bytes,
            MAX_OUTPUT_KB,
        )?,
        max_instances: bounded(
            "max_instances",
            table.max_instances,
            u64::from(d.max_instances),
            MAX_INSTANCES,
        )? as u32,
        max_tools_per_plugin: bounded(
            "max_tools_per_plugin",
            table.max_tools_per_plugin,
            d.max_tools_per_plugin as u64,
            MAX_TOOLS_PER_PLUGIN,
        )? as usize,
        max_description_bytes: bounded_kb(
            "max_description_kb",
            table.max_description_kb,
            d.max_description_bytes,
            MAX_DESCRIPTION_KB,
        )?,
        max_schema_bytes: bounded_kb(
            "max_schema_kb",
            table.max_schema_kb,
            d.max_schema_bytes,
            MAX_SCHEMA_KB,
        )?,
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
    fn mcp_sessions_are_bounded_by_default_and_cannot_be_unbounded() {
        let parsed = parse("").unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(parsed.mcp_sessions, crate::config::McpSessions::default());
        assert_eq!(parsed.mcp_sessions.max, 256);
        let parsed = parse("[mcp]\nmax_sessions = 8\nsession_idle_seconds = 2\n")
            .unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(parsed.mcp_sessions.max, 8);
        assert_eq!(parsed.mcp_sessions.idle, Duration::from_secs(2));
        for bad in [
            "max_sessions = 0",
            "session_idle_seconds = 0",
            "max_sessions = 1000000",
        ] {
            let e = err(&format!("[mcp]\n{bad}\n"));
            assert!(e.message.contains("mcp."), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn every_matcher_parses() {
        let parsed = parse(
            "[[rule]]\nplugin = [\"fs*.wasm\"]\nrisk = [\"dangerous\"]\neffects = [\"mutates-workspace\"]\n\
             filesystem = [\"workspace-write\"]\nwhen = { \"/path\" = { not = \"src/**\" }, \"/force\" = true }\n\
             decision = \"deny\"\nreason = \"r\"\n",
        )
        .unwrap_or_else(|e| panic!("{}", e.message));
        let rule = &parsed.rules[0];
        assert_eq!(rule.tools, None);
        assert_eq!(rule.risk, Some(vec![Risk::Dangerous]));
        assert_eq!(
            rule.when["/path"],
            ArgPattern::Not(Box::new(ArgPattern::Glob("src/**".into())))
        );
        assert_eq!(
            rule.when["/force"],
            ArgPattern::Exact(serde_json::json!(true))
        );
    }

    #[test]
    fn bad_matcher_values_are_errors_with_their_line() {
        let e = err("\n[[rule]]\nrisk = [\"scary\"]\ndecision = \"deny\"\nreason = \"r\"\n");
        assert!(e.message.contains("scary"), "{}", e.message);
        let e = err("[[rule]]\nwhen = { \"/a\" = [1] }\ndecision = \"deny\"\nreason = \"r\"\n");
        assert_eq!(e.line, Some(1));
        assert!(e.message.contains("/a"), "{}", e.message);
        let e = err(
            "[[rule]]\nwhen = { \"/a\" = { nope = 1 } }\ndecision = \"deny\"\nreason = \"r\"\n",
        );
        assert!(e.message.contains("not"), "{}", e.message);
    }

    #[test]
    fn rules_keep_their_line() {
        let parsed = parse("\n\n[[rule]]\ntools = [\"a*\"]\ndecision = \"ask\"\nreason = \"r\"\n")
            .unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(parsed.rules[0].line, Some(3));
        assert_eq!(parsed.rules[0].verdict, Verdict::Ask);
    }
}
