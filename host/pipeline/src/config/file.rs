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

use super::mcp::McpSection;
use crate::approval::{ApprovalSettings, ApprovalsSection};
use crate::audit::{AuditSection, AuditSettings};
use crate::egress::{CredentialSection, Credentials, NetworkSection, NetworkSettings};
use crate::error::Error;
use crate::guards::{Budget, BudgetSection, RateLimitSection, RateLimits};
use crate::idempotency::IdempotencySection;
use crate::limits::{Limits, LimitsSection};
use crate::nesting::{ComposeSection, Nesting};
use crate::policy::{RuleDef, RuleSection};
use crate::profile::{ProfileSection, Profiles};
use crate::provenance::{PluginsSection, Provenance};
use crate::sandbox::{Retry, RetrySection};
use crate::scheduler::SchedulerSection;
use crate::settings::SettingError;
use crate::store::{SharedSettings, StoreSection};
use crate::workspace::{ResourcesSection, WorkspaceFiles};
use serde::Deserialize;
use std::path::Path;
use std::time::Duration;
use toml::Spanned;

/// The file: each table is read by the step that owns it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    limits: Option<Spanned<LimitsSection>>,
    #[serde(default)]
    approvals: Option<Spanned<ApprovalsSection>>,
    #[serde(default)]
    audit: Option<Spanned<AuditSection>>,
    #[serde(default)]
    budget: Option<Spanned<BudgetSection>>,
    #[serde(default)]
    mcp: Option<McpSection>,
    #[serde(default)]
    scheduler: Option<Spanned<SchedulerSection>>,
    retry: Option<Spanned<RetrySection>>,
    compose: Option<Spanned<ComposeSection>>,
    idempotency: Option<Spanned<IdempotencySection>>,
    #[serde(default)]
    network: Option<Spanned<NetworkSection>>,
    #[serde(default)]
    credential: std::collections::BTreeMap<String, Spanned<CredentialSection>>,
    #[serde(default)]
    plugins: Option<Spanned<PluginsSection>>,
    #[serde(default)]
    profile: std::collections::BTreeMap<String, Spanned<ProfileSection>>,
    #[serde(default)]
    rule: Vec<Spanned<RuleSection>>,
    #[serde(default)]
    rate_limit: Vec<Spanned<RateLimitSection>>,
    store: Option<Spanned<StoreSection>>,
    auth: Option<Spanned<super::auth::AuthSection>>,
    resources: Option<Spanned<ResourcesSection>>,
}

/// What a config file says, before the policy is compiled.
pub(super) struct Parsed {
    pub limits: Limits,
    pub rules: Vec<RuleDef>,
    pub approvals: ApprovalSettings,
    pub audit: AuditSettings,
    pub budget: Budget,
    pub rate_limits: RateLimits,
    pub mcp_list_denied: bool,
    pub mcp_sessions: super::McpSessions,
    pub mcp_tasks: super::McpTasks,
    pub max_parallel: usize,
    pub retry: Retry,
    pub nesting: Nesting,
    pub idempotency_window: Duration,
    pub network: NetworkSettings,
    pub credentials: Credentials,
    pub provenance: Provenance,
    pub profiles: Profiles,
    pub store: Option<SharedSettings>,
    pub auth: Option<super::AuthSettings>,
    pub workspace_files: WorkspaceFiles,
}

/// A config error that does not yet know the file's name.
pub(super) struct FileError {
    line: Option<usize>,
    message: String,
    hint: String,
}

impl FileError {
    #[cfg(feature = "fuzzing")]
    pub(super) fn message(&self) -> &str {
        &self.message
    }

    pub fn at(self, path: &Path) -> Error {
        Error::Config {
            path: path.to_owned(),
            line: self.line,
            message: self.message,
            hint: self.hint,
        }
    }

    fn from_setting(line: Option<usize>, e: SettingError) -> FileError {
        FileError {
            line,
            message: e.message,
            hint: e.hint,
        }
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Hands a spanned table to its owner, or takes the default without one.
fn section<S, T>(
    text: &str,
    table: Option<Spanned<S>>,
    resolve: impl FnOnce(S) -> Result<T, SettingError>,
    default: impl FnOnce() -> T,
) -> Result<T, FileError> {
    match table {
        None => Ok(default()),
        Some(table) => {
            let line = line_of(text, table.span().start);
            resolve(table.into_inner()).map_err(|e| FileError::from_setting(Some(line), e))
        }
    }
}

/// An array of tables (`[[rule]]`, `[[rate_limit]]`), each resolved by its
/// owner with the line it starts at.
fn each_table<S, T>(
    text: &str,
    tables: Vec<Spanned<S>>,
    resolve: impl Fn(S, usize) -> Result<T, SettingError>,
) -> Result<Vec<T>, FileError> {
    tables
        .into_iter()
        .map(|table| {
            let line = line_of(text, table.span().start);
            resolve(table.into_inner(), line).map_err(|e| FileError::from_setting(Some(line), e))
        })
        .collect()
}

/// Where every key is explained.
const DOCS: &str = "docs/policy.md";

/// The keys the table a line sits in takes, found from the nearest table
/// header above it.
fn keys_of_table_above(text: &str, offset: usize) -> Option<(String, &'static str)> {
    // Up to the end of the offending line: the error may point at the
    // header itself (a key missing from the table).
    let offset = offset.min(text.len());
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let header = text[..line_end]
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| line.starts_with('['))?;
    let name = header.trim_matches(|c| c == '[' || c == ']').trim();
    let first = name.split('.').next().unwrap_or(name);
    let keys = match first {
        "limits" => LimitsSection::KEYS,
        "approvals" => ApprovalsSection::KEYS,
        "audit" => AuditSection::KEYS,
        "budget" => BudgetSection::KEYS,
        "mcp" => McpSection::KEYS,
        "scheduler" => SchedulerSection::KEYS,
        "retry" => RetrySection::KEYS,
        "compose" => ComposeSection::KEYS,
        "idempotency" => IdempotencySection::KEYS,
        "network" => NetworkSection::KEYS,
        "credential" => CredentialSection::KEYS,
        "plugins" => PluginsSection::KEYS,
        "profile" => ProfileSection::KEYS,
        "store" => StoreSection::KEYS,
        "rule" => RuleSection::KEYS,
        "rate_limit" => RateLimitSection::KEYS,
        "auth" => super::auth::AuthSection::KEYS,
        "resources" => ResourcesSection::KEYS,
        _ => return None,
    };
    Some((header.to_owned(), keys))
}

/// For "unknown field `x`, expected one of `a`, `b`" (or a variant), the
/// expected word closest to `x`, if one is close.
fn did_you_mean(message: &str) -> Option<String> {
    let rest = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("unknown variant `"))?;
    let (given, expected) = rest.split_once('`')?;
    crate::suggest::closest(given, expected.split('`').skip(1).step_by(2)).map(str::to_owned)
}

/// The offending line with a caret under what is wrong.
fn pointed_at(text: &str, span: std::ops::Range<usize>) -> String {
    let start = span.start.min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_text = text[line_start..].lines().next().unwrap_or("");
    let line_end = line_start + line_text.len();
    let end = span.end.clamp(start, line_end.max(start));
    let column = text[line_start..start.max(line_start)].chars().count();
    let width = text.get(start..end).map_or(1, |s| s.chars().count().max(1));
    let number = line_of(text, start).to_string();
    let pad = " ".repeat(number.len());
    format!(
        "{pad} |\n{number} | {line_text}\n{pad} | {}{}",
        " ".repeat(column),
        "^".repeat(width)
    )
}

/// A TOML or shape error as a person can act on it: the message, the line
/// with a caret, a "did you mean" for a misspelt key or value, and the keys
/// of the table it is in (not every key of every table).
fn syntax_error(text: &str, e: &toml::de::Error) -> FileError {
    let message = e.message().trim_end().to_owned();
    let Some(span) = e.span() else {
        return FileError {
            line: None,
            message,
            hint: format!("{DOCS} explains every table and key"),
        };
    };
    let mut hint = match did_you_mean(&message) {
        Some(meant) => format!("did you mean `{meant}`? "),
        None => String::new(),
    };
    match keys_of_table_above(text, span.start) {
        Some((header, keys)) if !message.contains("expected one of") => {
            hint.push_str(&format!("`{header}` takes {keys}; "))
        }
        _ => {}
    }
    hint.push_str(&format!("{DOCS} explains every table and key"));
    FileError {
        line: Some(line_of(text, span.start)),
        message: format!("{message}\n{}", pointed_at(text, span)),
        hint,
    }
}

pub(super) fn parse(text: &str) -> Result<Parsed, FileError> {
    let file: FileConfig = toml::from_str(text).map_err(|e| syntax_error(text, &e))?;
    let limits = section(text, file.limits, LimitsSection::resolve, Limits::default)?;
    let rules = each_table(text, file.rule, RuleSection::resolve)?;
    let approvals = section(
        text,
        file.approvals,
        ApprovalsSection::resolve,
        ApprovalSettings::default,
    )?;
    let audit = section(
        text,
        file.audit,
        AuditSection::resolve,
        AuditSettings::default,
    )?;
    let budget = section(text, file.budget, BudgetSection::resolve, Budget::default)?;
    let rate_limits = each_table(text, file.rate_limit, RateLimitSection::resolve)?;
    let max_parallel = section(
        text,
        file.scheduler,
        SchedulerSection::resolve,
        crate::scheduler::default_parallelism,
    )?;
    let retry = section(text, file.retry, RetrySection::resolve, Retry::default)?;
    let nesting = section(
        text,
        file.compose,
        ComposeSection::resolve,
        Nesting::default,
    )?;
    let idempotency_window = section(
        text,
        file.idempotency,
        IdempotencySection::resolve,
        crate::idempotency::default_window,
    )?;
    let network = section(
        text,
        file.network,
        NetworkSection::resolve,
        NetworkSettings::default,
    )?;
    let (tables, lines) = named_tables(text, file.credential);
    let credentials = crate::egress::credentials(tables)
        .map_err(|(name, e)| FileError::from_setting(lines.get(&name).copied(), e))?;
    let (tables, lines) = named_tables(text, file.profile);
    let profiles = Profiles::resolve(tables)
        .map_err(|(name, e)| FileError::from_setting(lines.get(&name).copied(), e))?;
    let provenance = section(
        text,
        file.plugins,
        PluginsSection::resolve,
        Provenance::default,
    )?;
    let store = match file.store {
        None => StoreSection::absent().map_err(|e| FileError::from_setting(None, e))?,
        Some(table) => {
            let line = line_of(text, table.span().start);
            table
                .into_inner()
                .resolve()
                .map_err(|e| FileError::from_setting(Some(line), e))?
        }
    };
    let auth = section(text, file.auth, |table| table.resolve().map(Some), || None)?;
    let workspace_files = section(
        text,
        file.resources,
        ResourcesSection::resolve,
        WorkspaceFiles::default,
    )?;
    if let Some((line, mistake)) = super::auth::unknown_caller_key(&rules, auth.as_ref()) {
        return Err(FileError::from_setting(line, mistake));
    }
    let mcp_list_denied = file.mcp.as_ref().is_some_and(|m| m.list_denied);
    let (mcp_sessions, mcp_tasks) = match file.mcp {
        None => Default::default(),
        Some(table) => table
            .resolve()
            .map_err(|e| FileError::from_setting(None, e))?,
    };
    Ok(Parsed {
        limits,
        rules,
        approvals,
        audit,
        budget,
        rate_limits: RateLimits(rate_limits),
        mcp_list_denied,
        mcp_sessions,
        mcp_tasks,
        max_parallel,
        retry,
        nesting,
        idempotency_window,
        network,
        credentials,
        provenance,
        profiles,
        store,
        auth,
        workspace_files,
    })
}

/// `[kind.NAME]` tables by name, and the line each starts on.
type Named<S> = (
    std::collections::BTreeMap<String, S>,
    std::collections::BTreeMap<String, usize>,
);

fn named_tables<S>(text: &str, tables: std::collections::BTreeMap<String, Spanned<S>>) -> Named<S> {
    let mut lines = std::collections::BTreeMap::new();
    let tables = tables
        .into_iter()
        .map(|(name, table)| {
            lines.insert(name.clone(), line_of(text, table.span().start));
            (name, table.into_inner())
        })
        .collect();
    (tables, lines)
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
    fn a_misspelt_key_is_shown_with_a_caret_and_what_was_meant() {
        let e = err("[limits]\ntimeout_ms = 5\ntimeuot_ms = 3\n");
        assert!(
            e.message.ends_with("3 | timeuot_ms = 3\n  | ^^^^^^^^^^"),
            "{}",
            e.message
        );
        assert!(
            e.hint.starts_with("did you mean `timeout_ms`?"),
            "{}",
            e.hint
        );
        assert!(e.hint.len() < 200, "no dump of every key: {}", e.hint);
        let e = err("[[rule]]\ntools = [\"x\"]\ndecision = \"alow\"\nreason = \"r\"\n");
        assert!(e.hint.contains("did you mean `allow`?"), "{}", e.hint);
        let e = err("[[rule]]\ntools = [\"x\"]\ndecision = \"allow\"\n");
        assert!(e.message.contains("reason"), "{}", e.message);
        assert!(
            e.hint.contains("`[[rule]]` takes"),
            "the rule's own keys: {}",
            e.hint
        );
        let e = err("[limits]\ntimeout_ms = \"fast\"\n");
        assert!(e.hint.contains("`[limits]` takes timeout_ms"), "{}", e.hint);
        assert!(!e.hint.contains("[budget]"), "{}", e.hint);
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
        assert_eq!(parsed.mcp_tasks, crate::config::McpTasks::default());
        let parsed = parse("[mcp]\ntask_after_ms = 5\nmax_tasks = 2\ntask_only = [\"slow\"]\n")
            .unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(parsed.mcp_tasks.after, Duration::from_millis(5));
        assert_eq!(parsed.mcp_tasks.max_running, 2);
        assert_eq!(parsed.mcp_tasks.task_only, ["slow"]);
        for bad in [
            "max_sessions = 0",
            "session_idle_seconds = 0",
            "max_sessions = 1000000",
            "task_after_ms = 0",
            "task_ttl_seconds = 0",
            "max_tasks = 0",
            "max_tasks = 100000",
        ] {
            let e = err(&format!("[mcp]\n{bad}\n"));
            assert!(e.message.contains("mcp."), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn every_matcher_parses() {
        use crate::policy::ArgPattern;
        use crate::spec::Risk;
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
        assert_eq!(parsed.rules[0].verdict, crate::policy::Verdict::Ask);
    }
}
