//! The validation-only path: loads plugins and the policy exactly as the host
//! would, runs no tool, and lists every problem with a fix. Used by
//! `toolwarden check` and by CI pipelines that vet plugins before deploying.
//!
//! Problems: a plugin that does not load (world, schemas outside the subset,
//! inconsistent effects, invalid names, empty descriptions, network it does
//! not declare), a tool name claimed twice, a tool no rule covers (always
//! denied), a declared origin the config allows nowhere, a declared
//! credential the config does not define, and a rule that matches none of
//! the loaded tools (usually a typo).

use crate::config::Config;
use crate::error::Error;
use crate::registry::{Registry, Tool};
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;

/// One thing to fix.
#[derive(Clone, Debug, Serialize)]
pub struct Problem {
    /// The plugin file, tool or rule concerned.
    pub place: String,
    pub problem: String,
    pub fix: String,
}

/// What a check found.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub plugins: usize,
    pub tools: usize,
    pub rules: usize,
    pub problems: Vec<Problem>,
}

/// Whose problems a check reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The plugin author's: what keeps a plugin from loading.
    Plugins,
    /// Also the operator's: what the policy makes of the plugins.
    Policy,
}

impl Scope {
    /// The operator's problems are reported when there is a config file to
    /// fix, or when asked for: an author checking a new plugin has no
    /// policy yet, and no rule covering their tool is not their problem.
    pub fn for_config(config: &Config, asked: bool) -> Scope {
        if asked || config.config_file.is_some() {
            Scope::Policy
        } else {
            Scope::Plugins
        }
    }
}

/// Checks the plugin file or directory `target` (default: the configured
/// plugins directory) and, in [`Scope::Policy`], the config's policy.
pub fn check(config: &Config, target: Option<&Path>, scope: Scope) -> Result<Report, Error> {
    let engine = config.engine()?;
    let target = target.unwrap_or(&config.plugins_dir);
    let whole_set = target.is_dir();
    let mut problems = Vec::new();
    let (plugins, tools): (usize, Vec<Arc<Tool>>) = if whole_set {
        // Reloading onto nothing: the first plugin to claim a name keeps it
        // and every later claim is reported, instead of stopping at the first.
        let registry = Registry::reload(target, &engine, &Registry::default())?;
        for failure in registry.failures() {
            problems.push(Problem {
                place: failure.file.display().to_string(),
                problem: failure.error.to_string(),
                fix: failure.error.hint(),
            });
        }
        (
            registry.plugins().len(),
            registry.tools().cloned().collect(),
        )
    } else {
        match Registry::load_file(target, &engine) {
            Ok((_, tools)) => (1, tools.into_iter().map(Arc::new).collect()),
            Err(error) => {
                problems.push(Problem {
                    place: target.display().to_string(),
                    problem: error.to_string(),
                    fix: error.hint(),
                });
                (0, Vec::new())
            }
        }
    };
    let rules = config.policy.rule_count();
    if scope == Scope::Plugins {
        return Ok(Report {
            plugins,
            tools: tools.len(),
            rules,
            problems,
        });
    }
    let mut rule_used = vec![false; rules];
    for tool in &tools {
        let explanation = config.policy.explain(
            &tool.spec,
            tool.plugin.file_name(),
            None,
            None,
            (crate::policy::Caller::Unknown, crate::policy::Who::Unknown),
        );
        for (used, report) in rule_used.iter_mut().zip(&explanation.rules) {
            *used |= report.matched || report.needs_args;
        }
        let plugin = tool.plugin.file_name();
        for origin in config.policy.unallowed(&tool.spec, plugin) {
            problems.push(Problem {
                place: format!("tool `{}`", tool.spec.name),
                problem: format!(
                    "declares the origin `{origin}`, which the config allows nowhere, so no call \
                     can reach it"
                ),
                fix: format!(
                    "if it should, add it to `[network] allow` (or `[network.plugin.\"{plugin}\"] \
                     allow`), e.g. allow = [\"{origin}\"]"
                ),
            });
        }
        for name in tool.spec.network.iter().flat_map(|n| &n.credentials) {
            if !config.egress.credentials().defines(name) {
                problems.push(Problem {
                    place: format!("tool `{}`", tool.spec.name),
                    problem: format!(
                        "needs the credential `{name}`, which the config does not define, so \
                         its calls fail with CREDENTIAL_MISSING{}",
                        crate::suggest::did_you_mean(name, config.egress.credentials().names())
                    ),
                    fix: format!(
                        "add [credential.{name}] with env = \"VARIABLE\" (or file = \"PATH\"), \
                         origins = [...] and header = \"Authorization\""
                    ),
                });
            }
        }
        if explanation.decision.matched.is_empty() && !explanation.decision.depends_on_args {
            problems.push(Problem {
                place: format!("tool `{}`", tool.spec.name),
                problem: "no policy rule covers it, so every call to it is denied".into(),
                fix: format!(
                    "if agents should use it, add to toolwarden.toml (or decision = \"ask\"):\n\n{}",
                    crate::policy::suggested_rule(&tool.spec.name, "allow")
                ),
            });
        }
    }
    if whole_set {
        for (index, used) in rule_used.iter().enumerate() {
            if !used {
                problems.push(Problem {
                    place: format!(
                        "rule {}{}",
                        index + 1,
                        config
                            .policy
                            .rule_line(index)
                            .map(|l| format!(" (line {l})"))
                            .unwrap_or_default()
                    ),
                    problem: "matches none of the loaded tools".into(),
                    fix: "check its `tools`, `plugin` and other matchers against `toolwarden list`"
                        .into(),
                });
            }
        }
    }
    Ok(Report {
        plugins,
        tools: tools.len(),
        rules,
        problems,
    })
}
