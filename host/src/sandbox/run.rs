//! One call in one fresh `Store`: set up, instantiate, call, classify how it
//! ended, drop.

use super::bindings::exports::toolwarden::tool::tool::{CallContext, ToolError, ToolOutput};
use super::bindings::{self, PluginPre};
use super::state::{CallState, HostState, Limiter};
use super::{Execution, LoadedPlugin, Sandbox};
use crate::approval::PreparedCall;
use crate::call::{CallId, CancelToken, ProgressSink, SessionId};
use crate::capability::{FsAccess, Grant};
use crate::config::Limits;
use crate::error::PluginError;
use crate::outcome::{CallError, ErrorCode};
use crate::spec::{Effect, Effects, FsNeed, Risk, ToolSpec};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use wasmtime::component::ResourceTable;
use wasmtime::{Store, Trap};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

/// Where the workspace appears inside the guest.
pub const GUEST_WORKSPACE: &str = "/workspace";
/// Bytes of stdout and of stderr kept per call; writes beyond fail in the
/// guest. Plugins talk through their result and `log`, not stdio.
pub const OUTPUT_PIPE_BYTES: usize = 64 << 10;
/// Budget of a plugin's `tools()` at load time: building a few specs needs
/// far less; a plugin that loops there is refused, not waited for.
const DESCRIBE_FUEL: u64 = 1_000_000_000;
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(2);
/// How much of a crashed plugin's stderr is quoted in the error.
const STDERR_QUOTE_BYTES: usize = 1024;

/// Per-call facts the sandbox needs beyond the prepared call.
#[derive(Clone, Debug, Default)]
pub struct RunContext {
    pub call_id: CallId,
    pub session: SessionId,
    pub cancel: CancelToken,
    pub progress: Option<ProgressSink>,
}

/// What a tool returned on success, unchecked.
#[derive(Debug)]
pub struct RawOutput {
    pub value: String,
    pub text: Option<String>,
}

/// A tool's own expected error (the WIT `tool-error`).
#[derive(Debug, PartialEq, Eq)]
pub enum ToolFailure {
    InvalidArgs(String),
    NotFound(String),
    Failed(String),
}

struct Pipes {
    stdout: MemoryOutputPipe,
    stderr: MemoryOutputPipe,
}

enum Phase {
    Instantiate,
    Call,
}

fn new_store(
    sandbox: &Sandbox,
    grant: Grant,
    host: HostState,
    fuel: u64,
) -> Result<(Store<CallState>, Pipes), CallError> {
    let host_error = |e: wasmtime::Error| {
        CallError::new(
            ErrorCode::HostError,
            format!("cannot set up the sandbox: {e:#}"),
        )
    };
    let pipes = Pipes {
        stdout: MemoryOutputPipe::new(OUTPUT_PIPE_BYTES),
        stderr: MemoryOutputPipe::new(OUTPUT_PIPE_BYTES),
    };
    let mut wasi = WasiCtxBuilder::new();
    // Before the preopen: the directory handle captures this setting. File
    // reads run inline instead of hopping to tokio's blocking pool (10-20x
    // faster); each read is bounded by wasmtime, so the deadline still holds.
    wasi.allow_blocking_current_thread(true)
        .stdout(pipes.stdout.clone())
        .stderr(pipes.stderr.clone());
    // `wasi:sockets` is linked for every plugin (components built by the
    // standard toolchains import it), so the network is closed here, each
    // door by name, rather than left to wasmtime's defaults, which have
    // changed before.
    wasi.allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .socket_addr_check(|_, _| Box::pin(std::future::ready(false)));
    match grant.fs {
        FsAccess::None => {}
        FsAccess::ReadOnly => {
            wasi.preopened_dir(&sandbox.workspace, GUEST_WORKSPACE, FsPerms::ReadOnly)
                .map_err(host_error)?;
        }
        FsAccess::ReadWrite => {
            wasi.preopened_dir(&sandbox.workspace, GUEST_WORKSPACE, FsPerms::ReadWrite)
                .map_err(host_error)?;
        }
    }
    let mut table = ResourceTable::new();
    table.set_max_capacity(super::state::MAX_HANDLES);
    let state = CallState {
        wasi: wasi.build(),
        table,
        limiter: Limiter {
            memory_bytes: sandbox.limits.memory_bytes as usize,
            refused_memory: false,
        },
        host,
        links: (grant.fs == FsAccess::ReadWrite).then(|| sandbox.link_root.clone()),
    };
    let mut store = Store::new(&sandbox.engine, state);
    store.limiter(|s| &mut s.limiter);
    store.set_fuel(fuel).map_err(host_error)?;
    store.set_epoch_deadline(1);
    store.epoch_deadline_async_yield_and_update(1);
    Ok((store, pipes))
}

/// Races the guest against its deadline and its cancellation. A guest that
/// computes yields at every epoch tick; one blocked in an async host call is
/// stopped by dropping its future. Either way the store is unusable after.
///
/// Most calls finish in their first poll, without ever yielding, so the
/// timer and the cancellation waiter (a lock on the timer wheel and one on
/// the token's waiter list, each taken again to remove them) are armed only
/// when the guest yields. The deadline still counts from the start, and a
/// computing guest yields at the next epoch tick at the latest, as before.
async fn race<R>(
    mut guest: Pin<&mut impl Future<Output = Result<R, (Phase, wasmtime::Error)>>>,
    timeout: Duration,
    cancel: &CancelToken,
) -> Result<Result<R, (Phase, wasmtime::Error)>, ErrorCode> {
    let deadline = tokio::time::Instant::now() + timeout;
    if cancel.is_cancelled() {
        return Err(ErrorCode::Cancelled);
    }
    if let Poll::Ready(outcome) = futures::poll!(guest.as_mut()) {
        return Ok(outcome);
    }
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ErrorCode::Cancelled),
        outcome = guest => Ok(outcome),
        _ = tokio::time::sleep_until(deadline) => Err(ErrorCode::Timeout),
    }
}

fn quote_stderr(pipes: &Pipes) -> String {
    let bytes = pipes.stderr.contents();
    if bytes.is_empty() {
        return String::new();
    }
    let start = bytes.len().saturating_sub(STDERR_QUOTE_BYTES);
    format!(
        "; its stderr ends with: {}",
        String::from_utf8_lossy(&bytes[start..]).trim()
    )
}

fn classify<R>(
    outcome: Result<Result<R, (Phase, wasmtime::Error)>, ErrorCode>,
    store: &Store<CallState>,
    pipes: &Pipes,
    timeout: Duration,
) -> Result<R, CallError> {
    let (phase, error) = match outcome {
        Ok(Ok(value)) => return Ok(value),
        Err(ErrorCode::Cancelled) => {
            return Err(CallError::new(
                ErrorCode::Cancelled,
                "the call was cancelled by its caller and stopped",
            ));
        }
        Err(_) => {
            return Err(CallError::new(
                ErrorCode::Timeout,
                format!(
                    "the call ran past its {} ms deadline and was stopped",
                    timeout.as_millis()
                ),
            ));
        }
        Ok(Err(failure)) => failure,
    };
    if store.data().limiter.refused_memory {
        return Err(CallError::new(
            ErrorCode::MemoryLimit,
            format!(
                "the plugin tried to grow its memory past the {} MiB limit and was stopped",
                store.data().limiter.memory_bytes >> 20
            ),
        ));
    }
    let crashed = |what: String| {
        CallError::new(
            ErrorCode::ToolCrashed,
            format!("{what}{}", quote_stderr(pipes)),
        )
    };
    match (error.downcast_ref::<Trap>(), phase) {
        (Some(Trap::OutOfFuel), _) => Err(CallError::new(
            ErrorCode::OutOfFuel,
            "the call used up its fuel (CPU budget) and was stopped; raise `limits.fuel` if the work is legitimate",
        )),
        (Some(Trap::Interrupt), _) => Err(CallError::new(
            ErrorCode::Timeout,
            format!(
                "the call ran past its {} ms deadline and was stopped",
                timeout.as_millis()
            ),
        )),
        (Some(Trap::StackOverflow), _) => Err(crashed(
            "the plugin overflowed its stack (a defect in the plugin)".into(),
        )),
        (Some(Trap::UnreachableCodeReached), _) => Err(crashed(
            "the plugin crashed: it panicked or aborted (a defect in the plugin, not a tool error)"
                .into(),
        )),
        (Some(trap), _) => Err(crashed(format!(
            "the plugin trapped: {trap} (a defect in the plugin)"
        ))),
        (None, Phase::Instantiate) => Err(CallError::new(
            ErrorCode::HostError,
            format!("the host could not start the plugin: {error:#}"),
        )),
        (None, Phase::Call) => Err(crashed(format!("the plugin failed: {error:#}"))),
    }
}

fn log_stdio(pipes: &Pipes, tool: &str, call_id: &str) {
    // Reading a pipe locks it and copies what it holds: only worth it when
    // the lines go somewhere.
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    for (stream, pipe) in [("stdout", &pipes.stdout), ("stderr", &pipes.stderr)] {
        let bytes = pipe.contents();
        if !bytes.is_empty() {
            tracing::debug!(
                tool,
                call = call_id,
                "plugin {stream}: {}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }
}

async fn instantiate(
    pre: &PluginPre<CallState>,
    store: &mut Store<CallState>,
) -> Result<bindings::Plugin, (Phase, wasmtime::Error)> {
    pre.instantiate_async(&mut *store)
        .await
        .map_err(|e| (Phase::Instantiate, e))
}

pub(super) async fn invoke(
    sandbox: &Sandbox,
    call: PreparedCall,
    cx: super::RunContext,
) -> Execution {
    let tool = call.tool();
    let timeout = sandbox.limits.timeout_for(tool.spec.timeout_ms);
    let fuel = sandbox.limits.fuel;
    // Beyond `max_instances` calls in flight, a call waits for an instance
    // (still cancellable) rather than failing; the wait is not run time.
    // A free instance is taken without registering as a waiter anywhere.
    let slot = match Arc::clone(&sandbox.slots).try_acquire_owned() {
        Ok(slot) => Ok(slot),
        Err(_) => tokio::select! {
            biased;
            _ = cx.cancel.cancelled() => {
                return Execution {
                    result: Err(CallError::new(
                        ErrorCode::Cancelled,
                        "the call was cancelled while waiting for a free sandbox; it did not run",
                    )),
                    fuel_used: None,
                };
            }
            slot = Arc::clone(&sandbox.slots).acquire_owned() => slot,
        },
    };
    // The semaphore is never closed.
    let Ok(slot) = slot else {
        return Execution {
            result: Err(CallError::new(
                ErrorCode::HostError,
                "the sandbox is shutting down; the call did not run",
            )),
            fuel_used: None,
        };
    };
    let host = HostState {
        tool: Arc::clone(&tool.name),
        call_id: cx.call_id.shared(),
        cancel: cx.cancel.clone(),
        progress: cx.progress.clone(),
        log_bytes_left: super::host::LOG_BUDGET_BYTES,
        progress_gate: Default::default(),
    };
    let (mut store, pipes) = match new_store(sandbox, call.grant(), host, fuel) {
        Ok(created) => created,
        Err(e) => {
            return Execution {
                result: Err(e),
                fuel_used: None,
            };
        }
    };
    let context = CallContext {
        call_id: cx.call_id.as_str().to_owned(),
        session_id: cx.session.as_str().to_owned(),
        workspace: (call.grant().fs != FsAccess::None).then(|| GUEST_WORKSPACE.to_owned()),
    };
    // Pinned here and lent to `race`, not moved into it: the guest's
    // future (over a kilobyte) is then stored once, not copied at each
    // level. It is dropped at the end of this block, when `race` is done.
    let outcome = {
        let _ticking = sandbox.ticker.running();
        let guest = std::pin::pin!(async {
            let plugin = instantiate(&tool.plugin.loaded.pre, &mut store).await?;
            plugin
                .toolwarden_tool_tool()
                .call_invoke(
                    &mut store,
                    &tool.spec.name,
                    call.args().canonical(),
                    &context,
                )
                .await
                .map_err(|e| (Phase::Call, e))
        });
        race(guest, timeout, &cx.cancel).await
    };
    // A guest stopped mid-run leaves its fuel counter on the dropped fiber, so
    // the store's count is only meaningful when the call came back by itself.
    let fuel_used = match &outcome {
        Ok(_) => store.get_fuel().ok().map(|left| fuel.saturating_sub(left)),
        Err(_) => None,
    };
    log_stdio(&pipes, &tool.spec.name, cx.call_id.as_str());
    let result = classify(outcome, &store, &pipes, timeout).map(|returned| match returned {
        Ok(ToolOutput { value, text }) => Ok(RawOutput { value, text }),
        Err(ToolError::InvalidArgs(m)) => Err(ToolFailure::InvalidArgs(m)),
        Err(ToolError::NotFound(m)) => Err(ToolFailure::NotFound(m)),
        Err(ToolError::Failed(m)) => Err(ToolFailure::Failed(m)),
    });
    super::teardown::release(super::teardown::Teardown::new(store, slot));
    Execution { result, fuel_used }
}

pub(super) fn describe(
    sandbox: &Sandbox,
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
        new_store(sandbox, Grant::default(), host, DESCRIBE_FUEL).map_err(PluginError::Describe)?;
    let cancel = CancelToken::default();
    let _ticking = sandbox.ticker.running();
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
    let limits = &sandbox.limits;
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
