//! A rule as written ([`RuleDef`]) made into what decides ([`Rule`]):
//! every glob, caller matcher and `when` pattern built once, when the
//! policy loads, and every combination of keys the rule cannot honour
//! refused with its line and a hint. Decides nothing.

use super::identity::CallerMatcher;
use super::offered::{check_offer_rule, check_sampling_caps};
use super::when::compile_pattern;
use super::{NetMatch, Rule, RuleDef, globs};
use crate::policy::PolicyError;
use std::sync::Arc;

impl Rule {
    pub(in crate::policy) fn compile(index: usize, def: RuleDef) -> Result<Rule, PolicyError> {
        let line = def.line;
        let error = move |message: String, hint: &str| PolicyError {
            line,
            message,
            hint: hint.into(),
        };
        if def.reason.trim().is_empty() {
            return Err(error(
                "`reason` is empty; every decision must say why".into(),
                "write the reason a person reviewing the audit log should read",
            ));
        }
        for (key, list_empty) in [
            (
                "network",
                matches!(&def.network, Some(NetMatch::Origins(list)) if list.is_empty()),
            ),
            ("risk", def.risk.as_ref().is_some_and(Vec::is_empty)),
            ("effects", def.effects.as_ref().is_some_and(Vec::is_empty)),
            (
                "filesystem",
                def.filesystem.as_ref().is_some_and(Vec::is_empty),
            ),
        ] {
            if list_empty {
                return Err(error(
                    format!("`{key}` is empty, so the rule matches nothing"),
                    "list at least one value, or leave the key out",
                ));
            }
        }
        def.approvers
            .check(def.verdict)
            .map_err(|(message, hint)| error(message, hint))?;
        let offer_key = [
            ("prompts", def.prompts.is_some()),
            ("resources", def.resources.is_some()),
            ("sampling", def.sampling.is_some()),
        ]
        .into_iter()
        .find_map(|(key, set)| set.then_some(key));
        if let Some(key) = offer_key {
            check_offer_rule(&def, key).map_err(|(message, hint)| error(message, hint))?;
        }
        check_sampling_caps(&def).map_err(|(message, hint)| error(message, hint))?;
        let tools = def
            .tools
            .as_deref()
            .map(|t| globs(t, "tools", &error))
            .transpose()?;
        let prompts = def
            .prompts
            .as_deref()
            .map(|p| globs(p, "prompts", &error))
            .transpose()?;
        let resources = def
            .resources
            .as_deref()
            .map(|r| globs(r, "resources", &error))
            .transpose()?;
        let sampling = def
            .sampling
            .as_deref()
            .map(|t| globs(t, "sampling", &error))
            .transpose()?;
        let plugin = def
            .plugin
            .as_deref()
            .map(|p| globs(p, "plugin", &error))
            .transpose()?;
        if def.nested == Some(false) && def.parent.is_some() {
            return Err(error(
                "`nested = false` with `parent` matches nothing: only a nested call has a parent"
                    .into(),
                "drop one of the two",
            ));
        }
        let parent = def
            .parent
            .as_deref()
            .map(|p| globs(p, "parent", &error))
            .transpose()?;
        let caller = CallerMatcher::compile(def.caller.as_ref(), &error)?;
        let mut when = Vec::with_capacity(def.when.len());
        for (pointer, pattern) in &def.when {
            if !(pointer.is_empty() || pointer.starts_with('/')) {
                return Err(error(
                    format!("`when` key `{pointer}` is not a JSON pointer"),
                    "name an argument by JSON pointer, e.g. when = { \"/path\" = \"src/**\" }",
                ));
            }
            when.push((pointer.clone(), compile_pattern(pointer, pattern, &error)?));
        }
        let url_entries = when
            .iter()
            .enumerate()
            .filter_map(|(at, (_, compiled))| Some((at, compiled.url_pattern()?)))
            .collect();
        let description = Arc::from(format!(
            "{} (rule {}{})",
            def.reason,
            index + 1,
            line.map(|l| format!(", line {l}")).unwrap_or_default()
        ));
        Ok(Rule {
            index,
            def,
            description,
            tools,
            prompts,
            resources,
            sampling,
            plugin,
            parent,
            caller,
            when,
            url_entries,
        })
    }
}
