//! `toolwarden list`: every tool and what the policy decides for it.

use crate::ExitStatus;
use crate::config::Config;
use crate::error::Error;
use crate::printer::Printer;
use serde_json::json;

pub fn run(
    config: Config,
    json: bool,
    profile: Option<String>,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let (host, profile) = match super::profiled_host(config, profile, printer)? {
        Ok(profiled) => profiled,
        Err(status) => return Ok(status),
    };
    let registry = host.registry();
    for failure in registry.failures() {
        printer.warning(failure, Some(&failure.error().hint()));
    }
    let set = host.config().tool_set(profile.as_deref());
    let rows: Vec<_> = registry
        .tools_in(&set)
        .map(|tool| {
            let decision = host.decision(tool);
            let plugin = tool
                .plugin()
                .file()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (tool, plugin, decision)
        })
        .collect();
    if json {
        let list: Vec<_> = rows
            .iter()
            .map(|(tool, plugin, decision)| {
                json!({
                    "name": tool.spec().name,
                    "title": tool.spec().title,
                    "description": tool.spec().description,
                    "plugin": plugin,
                    "plugin_sha256": tool.plugin().sha256(),
                    "risk": tool.spec().risk,
                    "filesystem": tool.spec().filesystem,
                    "effects": tool.spec().effects,
                    "network": tool.spec().network,
                    "keyed": tool.spec().keyed,
                    "granted_network": host.config().policy_network(tool),
                    "decision": decision.verdict,
                    "depends_on_args": decision.depends_on_args,
                    "reason": decision.reason,
                })
            })
            .collect();
        printer.json(&list);
        return Ok(ExitStatus::Success);
    }
    if rows.is_empty() {
        printer.out(match &profile {
            Some(name) => format!("no tools: profile `{name}` names none of the loaded tools"),
            None => format!(
                "no tools: `{}` holds no plugin that loaded",
                host.config().plugins_dir().display()
            ),
        });
        return Ok(ExitStatus::Success);
    }
    let width = |f: &dyn Fn(&(_, String, _)) -> usize, min: usize| {
        rows.iter().map(f).max().unwrap_or(0).max(min)
    };
    let name_w = width(
        &|r: &(
            &std::sync::Arc<crate::registry::Tool>,
            String,
            crate::policy::Decision,
        )| r.0.spec().name.len(),
        4,
    );
    let plugin_w = width(&|r| r.1.len(), 6);
    printer.out(format!(
        "{:name_w$}  {:plugin_w$}  {:9}  {:15}  {:7}  {:30}  NETWORK",
        "NAME", "PLUGIN", "RISK", "FILESYSTEM", "POLICY", "EFFECTS"
    ));
    for (tool, plugin, decision) in &rows {
        let network = match tool.spec().network {
            None => "none".to_owned(),
            Some(_) => format!("granted: {}", host.config().policy_network(tool)),
        };
        printer.out(format!(
            "{:name_w$}  {:plugin_w$}  {:9}  {:15}  {:7}  {:30}  {network}",
            tool.spec().name,
            plugin,
            tool.spec().risk.as_str(),
            tool.spec().filesystem.as_str(),
            if decision.depends_on_args {
                "by-args"
            } else {
                decision.verdict.as_str()
            },
            tool.spec().effects.to_string()
        ));
        if let Some(need) = &tool.spec().network {
            let declared: Vec<String> = need.origins.iter().map(ToString::to_string).collect();
            printer.out(format!("{:name_w$}  declares {}", "", declared.join(", ")));
            if !need.credentials.is_empty() {
                printer.out(format!(
                    "{:name_w$}  credentials {}",
                    "",
                    need.credentials.join(", ")
                ));
            }
        }
    }
    Ok(ExitStatus::Success)
}
