//! Asking a compiled plugin what it serves: its `tools()` (and
//! `prompts()` and resource `catalog()`) under the load-time budget, each spec checked against what a
//! plugin may declare (`[limits]`) and turned into a [`ToolSpec`] (or a
//! checked [`PromptSpec`]). Never runs a tool.

use super::contract::{DeclaredNetwork, DeclaredSpec, Phase};
use super::guest::{classify, new_store, race};
use super::state::HostState;
use super::{Engine, LoadedPlugin, PluginError};
use crate::call::CancelToken;
use crate::capability::Grant;
use crate::limits::Limits;
use crate::origin::{OriginPattern, PatternError};
use crate::outcome::{CallError, ErrorCode};
use crate::prompt::{MAX_PROMPTS_PER_PLUGIN, PromptSpec};
use crate::resource::Catalog;
use crate::spec::{NetworkNeed, ToolSpec, is_valid_credential_name};
use std::sync::Arc;
use std::time::Duration;

/// Budget of a plugin's `tools()` at load time: building a few specs needs
/// far less; a plugin that loops there is refused, not waited for.
const DESCRIBE_FUEL: u64 = 1_000_000_000;
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What a plugin serves, checked.
#[derive(Debug)]
pub struct Described {
    pub tools: Vec<ToolSpec>,
    pub prompts: Vec<PromptSpec>,
    pub catalog: Catalog,
}

pub(super) fn describe(engine: &Engine, plugin: &LoadedPlugin) -> Result<Described, PluginError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| PluginError::Describe(CallError::new(ErrorCode::HostError, e.to_string())))?;
    let host = HostState::new(Arc::from("tools()"), Arc::from(""), CancelToken::default());
    // A plugin compiled for the first time is described with its baseline
    // code, which is then dropped: calls run the optimized code.
    let baseline = plugin.baseline.lock().ok().and_then(|mut b| b.take());
    let code = match &baseline {
        Some(code) => code,
        None => plugin.optimize().map_err(|e| {
            PluginError::Describe(CallError::new(ErrorCode::HostError, e.to_owned()))
        })?,
    };
    let stop_at = tokio::time::Instant::now() + DESCRIBE_TIMEOUT;
    let (mut store, pipes) = new_store(
        engine,
        code,
        &Grant::default(),
        super::guest::Place::Workspace,
        host,
        DESCRIBE_FUEL,
        stop_at,
    )
    .map_err(PluginError::Describe)?;
    let cancel = CancelToken::default();
    let _ticking = engine.ticker.running();
    let declared = runtime.block_on(async {
        let guest = std::pin::pin!(async {
            let (tools, instance) = code.describe(&mut store).await?;
            let (prompts, catalog) = match instance {
                Some(instance) => {
                    let call = |e| (Phase::Call, e);
                    let prompts = super::prompting::declared(&instance, &mut store).await;
                    let catalog = super::resources::declared(&instance, &mut store).await;
                    (prompts.map_err(call)?, catalog.map_err(call)?)
                }
                None => Default::default(),
            };
            Ok((tools, prompts, catalog))
        });
        race(guest, stop_at, &cancel).await
    });
    let (specs, prompts, catalog) =
        classify(declared, &store, &pipes, DESCRIBE_TIMEOUT).map_err(PluginError::Describe)?;
    let limits = &engine.limits;
    if specs.len() > limits.max_tools_per_plugin {
        return Err(PluginError::TooManyTools {
            declared: specs.len(),
            max: limits.max_tools_per_plugin,
            key: "max_tools_per_plugin",
        });
    }
    if prompts.len() > MAX_PROMPTS_PER_PLUGIN {
        return Err(PluginError::Prompt {
            prompt: "*".into(),
            problem: format!(
                "declares {} prompts; a plugin may declare at most {MAX_PROMPTS_PER_PLUGIN}",
                prompts.len()
            ),
        });
    }
    let tools = specs
        .into_iter()
        .map(|spec| convert_spec(spec, limits))
        .collect::<Result<_, _>>()?;
    for prompt in &prompts {
        prompt
            .check(limits.max_description_bytes)
            .map_err(|problem| PluginError::Prompt {
                prompt: prompt.name.chars().take(64).collect(),
                problem,
            })?;
    }
    catalog
        .check(limits.max_description_bytes)
        .map_err(|problem| PluginError::Resources { problem })?;
    Ok(Described {
        tools,
        prompts,
        catalog,
    })
}

/// Origins and credentials a plugin may declare per tool: far more than any
/// real tool needs, few enough that granting stays cheap to compute and to read.
const MAX_DECLARED_ORIGINS: usize = 64;
const MAX_DECLARED_CREDENTIALS: usize = 16;

/// A declared `network-need`, each origin parsed strictly: a pattern the
/// host cannot read is a load error, never a wider grant.
fn network_need(declared: DeclaredNetwork) -> Result<NetworkNeed, String> {
    if declared.origins.is_empty() {
        return Err("declares `network` with no origins; leave `network` out instead".into());
    }
    if declared.origins.len() > MAX_DECLARED_ORIGINS
        || declared.credentials.len() > MAX_DECLARED_CREDENTIALS
    {
        return Err(format!(
            "declares {} origins and {} credentials; at most {MAX_DECLARED_ORIGINS} and \
             {MAX_DECLARED_CREDENTIALS} are accepted",
            declared.origins.len(),
            declared.credentials.len()
        ));
    }
    let mut origins = Vec::with_capacity(declared.origins.len());
    for text in &declared.origins {
        let shown: String = text.chars().take(128).collect();
        let pattern: OriginPattern = text
            .parse()
            .map_err(|e: PatternError| format!("origin `{shown}`: {}; {}", e.message, e.hint))?;
        if !origins.contains(&pattern) {
            origins.push(pattern);
        }
    }
    let mut credentials = Vec::with_capacity(declared.credentials.len());
    for name in declared.credentials {
        if !is_valid_credential_name(&name) {
            let shown: String = name.chars().take(64).collect();
            return Err(format!(
                "credential name `{shown}` must match `[a-z][a-z0-9_-]*` (at most 64 characters)"
            ));
        }
        if !credentials.contains(&name) {
            credentials.push(name);
        }
    }
    Ok(NetworkNeed {
        origins,
        credentials,
    })
}

/// A spec's texts against the declaration limits, before any is parsed.
fn check_sizes(spec: &DeclaredSpec, limits: &Limits) -> Result<(), String> {
    let texts = [
        (
            "title",
            spec.title.len(),
            limits.max_description_bytes,
            "max_description_kb",
        ),
        (
            "description",
            spec.description.len(),
            limits.max_description_bytes,
            "max_description_kb",
        ),
        (
            "input schema",
            spec.input_schema.len(),
            limits.max_schema_bytes,
            "max_schema_kb",
        ),
        (
            "output schema",
            spec.output_schema.as_ref().map_or(0, String::len),
            limits.max_schema_bytes,
            "max_schema_kb",
        ),
    ];
    for (what, bytes, max, key) in texts {
        if bytes > max {
            return Err(format!(
                "its {what} is {bytes} bytes; at most {max} are accepted (`limits.{key}`)"
            ));
        }
    }
    Ok(())
}

fn convert_spec(spec: DeclaredSpec, limits: &Limits) -> Result<ToolSpec, PluginError> {
    // A name is checked for its form later; here only so long that even
    // the error message should not quote it whole.
    let shown: String = spec.name.chars().take(64).collect();
    check_sizes(&spec, limits).map_err(|problem| PluginError::Spec {
        tool: shown,
        problem,
    })?;
    let parse = |what: &str, text: &str| {
        serde_json::from_str(text).map_err(|e| PluginError::Spec {
            tool: spec.name.clone(),
            problem: format!("the {what} schema is not valid JSON: {e}"),
        })
    };
    let input_schema = parse("input", &spec.input_schema)?;
    let output_schema = match &spec.output_schema {
        Some(text) => Some(parse("output", text)?),
        None => None,
    };
    let network = match spec.network {
        None => None,
        Some(need) => Some(network_need(need).map_err(|problem| PluginError::Spec {
            tool: spec.name.clone(),
            problem,
        })?),
    };
    Ok(ToolSpec {
        network,
        name: spec.name,
        title: spec.title,
        description: spec.description,
        input_schema,
        output_schema,
        effects: spec.effects,
        risk: spec.risk,
        filesystem: spec.filesystem,
        timeout_ms: spec.timeout_ms,
        keyed: spec.keyed,
    })
}
