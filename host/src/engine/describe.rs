//! Asking a compiled plugin what it serves: its `tools()` under the
//! load-time budget, each spec checked against what a plugin may declare
//! (`[limits]`) and turned into a [`ToolSpec`]. Never runs a tool.

use super::bindings;
use super::guest::{Phase, classify, instantiate, new_store, race};
use super::state::HostState;
use super::{Engine, LoadedPlugin, PluginError};
use crate::call::CancelToken;
use crate::capability::Grant;
use crate::limits::Limits;
use crate::outcome::{CallError, ErrorCode};
use crate::spec::{Effect, Effects, FsNeed, Risk, ToolSpec};
use std::sync::Arc;
use std::time::Duration;

/// Budget of a plugin's `tools()` at load time: building a few specs needs
/// far less; a plugin that loops there is refused, not waited for.
const DESCRIBE_FUEL: u64 = 1_000_000_000;
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(2);

pub(super) fn describe(
    engine: &Engine,
    plugin: &LoadedPlugin,
) -> Result<Vec<ToolSpec>, PluginError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| PluginError::Describe(CallError::new(ErrorCode::HostError, e.to_string())))?;
    let host = HostState {
        tool: Arc::from("tools()"),
        call_id: Arc::from(""),
        cancel: CancelToken::default(),
        progress: None,
        log_bytes_left: super::host::LOG_BUDGET_BYTES,
        progress_gate: Default::default(),
    };
    let (mut store, pipes) =
        new_store(engine, Grant::default(), host, DESCRIBE_FUEL).map_err(PluginError::Describe)?;
    let cancel = CancelToken::default();
    let _ticking = engine.ticker.running();
    let specs = runtime.block_on(async {
        let guest = std::pin::pin!(async {
            let instance = instantiate(&plugin.pre, &mut store).await?;
            instance
                .toolwarden_tool_tool()
                .call_tools(&mut store)
                .await
                .map_err(|e| (Phase::Call, e))
        });
        race(guest, DESCRIBE_TIMEOUT, &cancel).await
    });
    let specs = classify(specs, &store, &pipes, DESCRIBE_TIMEOUT).map_err(PluginError::Describe)?;
    let limits = &engine.limits;
    if specs.len() > limits.max_tools_per_plugin {
        return Err(PluginError::TooManyTools {
            declared: specs.len(),
            max: limits.max_tools_per_plugin,
            key: "max_tools_per_plugin",
        });
    }
    specs
        .into_iter()
        .map(|spec| convert_spec(spec, limits))
        .collect()
}

/// A spec's texts against the declaration limits, before any is parsed.
fn check_sizes(
    spec: &bindings::exports::toolwarden::tool::tool::ToolSpec,
    limits: &Limits,
) -> Result<(), String> {
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

fn convert_spec(
    spec: bindings::exports::toolwarden::tool::tool::ToolSpec,
    limits: &Limits,
) -> Result<ToolSpec, PluginError> {
    use bindings::exports::toolwarden::tool::tool::{Effects as E, Filesystem, Risk as R};
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
    let flags = [
        (E::READ_ONLY, Effect::ReadOnly),
        (E::MUTATES_WORKSPACE, Effect::MutatesWorkspace),
        (E::EXCLUSIVE, Effect::Exclusive),
        (E::STATEFUL, Effect::Stateful),
        (E::IDEMPOTENT, Effect::Idempotent),
        (E::OPEN_WORLD, Effect::OpenWorld),
    ];
    let effects: Effects = flags
        .into_iter()
        .filter(|(f, _)| spec.effects.contains(*f))
        .map(|(_, e)| e)
        .collect();
    Ok(ToolSpec {
        name: spec.name,
        title: spec.title,
        description: spec.description,
        input_schema,
        output_schema,
        effects,
        risk: match spec.risk {
            R::Safe => Risk::Safe,
            R::Normal => Risk::Normal,
            R::Dangerous => Risk::Dangerous,
        },
        filesystem: match spec.filesystem {
            Filesystem::None => FsNeed::None,
            Filesystem::ReadOnly => FsNeed::ReadOnly,
            Filesystem::WorkspaceWrite => FsNeed::WorkspaceWrite,
        },
        timeout_ms: spec.timeout_ms,
    })
}
