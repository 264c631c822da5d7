//! The `[[rule]]` tables of `toolwarden.toml`: what a rule may say, and how
//! it becomes a [`RuleDef`]. The policy step owns its section; `config`
//! hands each table here with its line.

use super::rule::{Approvers, ArgPattern, NetMatch, RuleDef, SamplingCaps, Verdict};
use crate::settings::SettingError;
use crate::spec::{Effect, FsNeed, Risk};
use serde::Deserialize;
use std::collections::BTreeMap;

/// A `[[rule]]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSection {
    tools: Option<Vec<String>>,
    prompts: Option<Vec<String>>,
    resources: Option<Vec<String>>,
    sampling: Option<Vec<String>>,
    /// For `sampling`: requests per call.
    max_requests: Option<u32>,
    /// For `sampling`: tokens (the requests' `maxTokens`) per call.
    max_tokens: Option<u64>,
    /// For `sampling`: tokens per session.
    max_session_tokens: Option<u64>,
    plugin: Option<Vec<String>>,
    risk: Option<Vec<Risk>>,
    effects: Option<Vec<Effect>>,
    filesystem: Option<Vec<FsNeed>>,
    network: Option<toml::Value>,
    nested: Option<bool>,
    parent: Option<Vec<String>>,
    caller: Option<BTreeMap<String, toml::Value>>,
    #[serde(default)]
    when: BTreeMap<String, toml::Value>,
    decision: Verdict,
    /// For `ask`: how many distinct people must approve each call.
    approvers: Option<u8>,
    /// For `ask`: whether the caller may be one of them.
    self_approval: Option<bool>,
    reason: String,
}

impl RuleSection {
    pub const KEYS: &str = "tools, prompts, resources, sampling, max_requests, max_tokens, \
         max_session_tokens, plugin, risk, effects, filesystem, network, nested, parent, caller, when, decision, \
         approvers, self_approval, reason";

    /// The rule, which starts at `line` of the file.
    pub fn resolve(self, line: usize) -> Result<RuleDef, SettingError> {
        let mut when = BTreeMap::new();
        for (pointer, value) in self.when {
            let pattern = arg_pattern(&value).map_err(|message| {
                SettingError::new(
                    format!("`when.\"{pointer}\"`: {message}"),
                    "use a glob string (\"src/**\"), a scalar (true, 3), or { not = ... }",
                )
            })?;
            when.insert(pointer, pattern);
        }
        let network = self.network.as_ref().map(net_match).transpose()?;
        let caller = self.caller.map(caller_match).transpose()?;
        Ok(RuleDef {
            network,
            caller,
            nested: self.nested,
            parent: self.parent,
            line: Some(line),
            tools: self.tools,
            prompts: self.prompts,
            resources: self.resources,
            sampling: self.sampling,
            sampling_caps: SamplingCaps {
                max_requests: self.max_requests,
                max_tokens: self.max_tokens,
                max_session_tokens: self.max_session_tokens,
            },
            plugin: self.plugin,
            risk: self.risk,
            effects: self.effects,
            filesystem: self.filesystem,
            when,
            verdict: self.decision,
            approvers: Approvers {
                quorum: self.approvers.unwrap_or(1),
                self_approval: self.self_approval.unwrap_or(true),
            },
            reason: self.reason,
        })
    }
}

/// `network = true | false | ["origin pattern", ...]`.
fn net_match(value: &toml::Value) -> Result<NetMatch, SettingError> {
    let hint = "network = true (reaches some origin), false (none), or a list of origins \
                such as [\"https://*.github.com\"]";
    match value {
        toml::Value::Boolean(reaches) => Ok(NetMatch::Reaches(*reaches)),
        toml::Value::Array(items) => items
            .iter()
            .map(|item| {
                let text = item.as_str().ok_or_else(|| {
                    SettingError::new(format!("`network`: `{item}` is not an origin"), hint)
                })?;
                text.parse().map_err(|e: crate::origin::PatternError| {
                    SettingError::new(format!("`network`: {}", e.message), e.hint)
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(NetMatch::Origins),
        other => Err(SettingError::new(
            format!("`network = {other}` is neither a boolean nor a list of origins"),
            hint,
        )),
    }
}

/// `caller = { subject = "alice", groups = ["oncall", "sre"] }`: each key
/// with one glob or a list of them.
fn caller_match(
    keys: BTreeMap<String, toml::Value>,
) -> Result<BTreeMap<String, Vec<String>>, SettingError> {
    keys.into_iter()
        .map(|(key, value)| {
            let globs = match value {
                toml::Value::String(glob) => vec![glob],
                toml::Value::Array(items) => items
                    .into_iter()
                    .map(|item| match item {
                        toml::Value::String(glob) => Ok(glob),
                        other => Err(other),
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|other| {
                        SettingError::new(
                            format!("`caller.{key}`: `{other}` is not a glob"),
                            "write each value as a string, e.g. caller = { subject = [\"alice\"] }",
                        )
                    })?,
                other => {
                    return Err(SettingError::new(
                        format!("`caller.{key} = {other}` is neither a glob nor a list of them"),
                        "e.g. caller = { subject = \"alice\", groups = [\"oncall\"] }",
                    ));
                }
            };
            Ok((key, globs))
        })
        .collect()
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
