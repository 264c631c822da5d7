//! One guest in one fresh `Store`: the store built from a grant (exactly
//! the granted preopens, the granted origins behind the egress hooks and
//! no sockets, capped stdio, fuel, a memory limit),
//! the race against the deadline and cancellation, and how the run ended
//! (returned, trapped, out of fuel or memory, stopped). Used for a plugin's
//! `tools()` at load and for every call; never decides what a guest gets.

use super::Engine;
pub(crate) use super::contract::Phase;
use super::contract::PluginPre;
use super::state::{CallState, HostState, Limiter};
use crate::call::CancelToken;
use crate::capability::{FsAccess, Grant};
use crate::outcome::{CallError, ErrorCode};
use std::future::Future;
use std::pin::Pin;
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
/// How much of a crashed plugin's stderr is quoted in the error.
const STDERR_QUOTE_BYTES: usize = 1024;

pub(crate) struct Pipes {
    stdout: MemoryOutputPipe,
    stderr: MemoryOutputPipe,
}

/// A store on `code`'s engine for one run of it.
/// Where a store's workspace preopen points: the workspace, or a private
/// copy of it a call is rehearsed in.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Place<'a> {
    Workspace,
    Copy(&'a std::path::Path),
}

pub(crate) fn new_store(
    engine: &Engine,
    code: &PluginPre,
    grant: &Grant,
    place: Place<'_>,
    host: HostState,
    fuel: u64,
    deadline: tokio::time::Instant,
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
    // standard toolchains import it), so sockets are closed here, each door
    // by name, rather than left to wasmtime's defaults, which have changed
    // before. The only way out is `wasi:http`, through the egress hooks.
    wasi.allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .socket_addr_check(|_, _| Box::pin(std::future::ready(false)));
    let root = match place {
        Place::Workspace => engine.workspace.clone(),
        Place::Copy(path) => super::root::LinkRoot::new(path),
    };
    match grant.fs {
        FsAccess::None => {}
        FsAccess::ReadOnly => {
            wasi.preopened_dir(root.path(), GUEST_WORKSPACE, FsPerms::ReadOnly)
                .map_err(host_error)?;
        }
        FsAccess::ReadWrite => {
            wasi.preopened_dir(root.path(), GUEST_WORKSPACE, FsPerms::ReadWrite)
                .map_err(host_error)?;
        }
    }
    let mut table = ResourceTable::new();
    table.set_max_capacity(super::state::MAX_HANDLES);
    let egress = engine
        .egress
        .hooks(&grant.net, &grant.urls, host.cancel.clone(), deadline);
    let mut host = host;
    host.secrets = engine.egress.secrets().cloned();
    let state = CallState {
        wasi: wasi.build(),
        table,
        limiter: Limiter {
            memory_bytes: engine.limits.memory_bytes as usize,
            refused_memory: false,
        },
        host,
        links: (grant.fs == FsAccess::ReadWrite).then_some(root),
        http: wasmtime_wasi_http::WasiHttpCtx::new(),
        egress,
    };
    let mut store = Store::new(code.engine(), state);
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
///
/// `deadline` is the instant the store's network hooks stop at too
/// ([`new_store`]). A request stopped there hands the guest an error it may
/// turn into a tool error in the same wake-up; the timer is polled before the
/// guest so that such a call is reported as the timeout it is.
pub(crate) async fn race<R>(
    mut guest: Pin<&mut impl Future<Output = Result<R, (Phase, wasmtime::Error)>>>,
    deadline: tokio::time::Instant,
    cancel: &CancelToken,
) -> Result<Result<R, (Phase, wasmtime::Error)>, ErrorCode> {
    if cancel.is_cancelled() {
        return Err(ErrorCode::Cancelled);
    }
    if let Poll::Ready(outcome) = futures::poll!(guest.as_mut()) {
        return Ok(outcome);
    }
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ErrorCode::Cancelled),
        _ = tokio::time::sleep_until(deadline) => Err(ErrorCode::Timeout),
        outcome = guest => Ok(outcome),
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

pub(crate) fn classify<R>(
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
    if !store.data().host.stopped_at.is_empty() {
        return Err(CallError::asking(store.data().host.stopped_at.clone()));
    }
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

pub(crate) fn log_stdio(
    pipes: &Pipes,
    tool: &str,
    call_id: &str,
    secrets: Option<&std::sync::Arc<crate::egress::Secrets>>,
) {
    // Reading a pipe locks it and copies what it holds: only worth it when
    // the lines go somewhere.
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    for (stream, pipe) in [("stdout", &pipes.stdout), ("stderr", &pipes.stderr)] {
        let bytes = pipe.contents();
        if !bytes.is_empty() {
            let mut text = String::from_utf8_lossy(&bytes).into_owned();
            if let Some(secrets) = secrets {
                secrets.mask_string(&mut text);
            }
            tracing::debug!(tool, call = call_id, "plugin {stream}: {text}");
        }
    }
}
