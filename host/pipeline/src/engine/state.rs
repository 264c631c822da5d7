//! What one `Store` holds for one call: its WASI context, resource table,
//! memory limiter, the per-call state of the `host` interface and what the
//! call may still spend through it (log text, progress reports).

use crate::call::{CancelToken, ChildCalls, LogSink, ProgressSink};
use crate::egress::CallHooks;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// Open WASI handles (files, streams, directories) one call may hold. Far
/// above what a tool needs; stops descriptor exhaustion.
pub const MAX_HANDLES: usize = 1024;
/// Wasm tables and their elements per call.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;

/// Log text one call may write through `log`; later lines are dropped so a
/// chatty plugin cannot flood the host's log, its memory or a client.
pub const LOG_BUDGET_BYTES: usize = 64 << 10;

/// What each line costs of [`LOG_BUDGET_BYTES`] besides its text: empty
/// lines are not free, so a call logs at most 1,024 lines.
pub const LOG_LINE_COST: usize = 64;

/// Progress reports one call may pass on, and how often: a report is
/// state ("done of total"), so dropping the ones in between loses nothing
/// a person watching needs, while forwarding every one of a plugin's
/// millions would grow the host and hold the answer up behind them.
pub const MAX_PROGRESS_REPORTS: u32 = 1_000;
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(10);

/// Which of a call's progress reports go on.
#[derive(Debug, Default)]
pub(crate) struct ProgressGate {
    sent: u32,
    last: Option<Instant>,
}

impl ProgressGate {
    pub(super) fn admit(&mut self) -> bool {
        let now = Instant::now();
        if self.sent >= MAX_PROGRESS_REPORTS
            || self
                .last
                .is_some_and(|last| now.duration_since(last) < PROGRESS_INTERVAL)
        {
            return false;
        }
        self.sent += 1;
        self.last = Some(now);
        true
    }
}

/// Refuses growth past the limit and remembers that it did, so a guest that
/// aborts on allocation failure is reported as MEMORY_LIMIT rather than as a
/// crash.
pub(crate) struct Limiter {
    pub memory_bytes: usize,
    pub refused_memory: bool,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            self.refused_memory = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

/// Per-call state of the `host` interface.
pub(crate) struct HostState {
    pub tool: Arc<str>,
    /// The tool's plugin file, named with its questions.
    pub plugin: Arc<str>,
    pub call_id: Arc<str>,
    pub cancel: CancelToken,
    pub progress: Option<ProgressSink>,
    /// Where log lines go besides the host's log (an MCP client).
    pub log: Option<LogSink>,
    pub log_bytes_left: usize,
    pub progress_gate: ProgressGate,
    /// How the call's tool reaches other tools (`compose`); none while a
    /// plugin lists its tools.
    pub children: Option<Arc<dyn ChildCalls>>,
    /// The answers the call runs with (`ask`); none where nobody can be
    /// asked (a plugin listing its tools, a preview).
    pub answers: Option<Arc<crate::question::Answers>>,
    /// Each question the call asked, in order, with the answer it got.
    pub asked: Vec<crate::question::Asked>,
    /// The questions the call stopped at, for want of answers: one, or
    /// the unanswered ones of a `questions` batch.
    pub stopped_at: Vec<crate::question::Question>,
    /// The credentials' secrets, masked in what the plugin logs, reports
    /// and asks (set by the store from the engine's egress).
    pub secrets: Option<Arc<crate::egress::Secrets>>,
    /// What the call may ask of the client's model (`client`), and what
    /// the session's earlier calls left of its tokens.
    pub sampling: Option<SamplingBudget>,
    /// What this run's sampling requests asked for so far.
    pub sampled: Sampled,
    /// What a tool's run announced as changed (`changes`); none where the
    /// plugin does not announce, or nothing a client reads can change (a
    /// prompt, a read, a plugin listing its tools).
    pub announced: Option<crate::resource::Announced>,
    /// What a tool's run asked to offer or withdraw of its plugin's tools
    /// (`changes`); none where the plugin does not import it, or outside a
    /// tool's call.
    pub reoffered: Option<crate::changes::Reoffered>,
}

/// Sampling requests a run made, and the tokens they asked for: all of
/// them (the call's caps), and those not answered yet, which are what the
/// session pays for now (an answered one was paid for by the run that
/// stopped for it).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sampled {
    pub requests: u32,
    pub tokens: u64,
    pub unanswered_tokens: u64,
}

/// A call's sampling grant, with the session's tokens it may still use.
#[derive(Clone, Copy, Debug)]
pub struct SamplingBudget {
    pub grant: crate::sampling::SamplingGrant,
    pub session_tokens_left: u64,
}

impl HostState {
    /// The state of a run of `tool` (or of a plugin's `tools()`): nothing
    /// reported, asked or answered yet; no children, no answers.
    pub fn new(tool: Arc<str>, call_id: Arc<str>, cancel: CancelToken) -> HostState {
        HostState {
            tool,
            plugin: Arc::from(""),
            call_id,
            cancel,
            progress: None,
            log: None,
            log_bytes_left: LOG_BUDGET_BYTES,
            progress_gate: Default::default(),
            children: None,
            answers: None,
            asked: Vec::new(),
            stopped_at: Vec::new(),
            secrets: None,
            sampling: None,
            sampled: Sampled::default(),
            announced: None,
            reoffered: None,
        }
    }
}

pub(crate) struct CallState {
    pub(super) wasi: WasiCtx,
    pub(super) table: ResourceTable,
    pub(super) limiter: Limiter,
    pub(super) host: HostState,
    /// Set when the call may write the workspace: the symlinks it makes
    /// are checked against it.
    pub(super) links: Option<super::root::LinkRoot>,
    pub(super) http: WasiHttpCtx,
    /// Every request the guest hands to `wasi:http` goes through these,
    /// with the call's network grant.
    pub(super) egress: CallHooks,
}

impl CallState {
    /// Lets go of the caller's progress sink, so nobody waits on a store
    /// that is only being torn down.
    pub(crate) fn forget_caller(&mut self) {
        self.host.progress = None;
        self.host.log = None;
    }

    /// The questions the call asked, with their answers; taken out.
    pub(crate) fn take_asked(&mut self) -> Vec<crate::question::Asked> {
        std::mem::take(&mut self.host.asked)
    }

    /// The URIs the call announced as changed; taken out.
    pub(crate) fn take_announced(&mut self) -> Vec<String> {
        self.host
            .announced
            .take()
            .map(crate::resource::Announced::into_uris)
            .unwrap_or_default()
    }

    /// Which of its plugin's tools the call asked to offer or withdraw;
    /// taken out.
    pub(crate) fn take_reoffered(&mut self) -> std::collections::BTreeMap<String, bool> {
        self.host
            .reoffered
            .take()
            .map(crate::changes::Reoffered::into_wanted)
            .unwrap_or_default()
    }

    /// The requests the call sent (or tried to), so far.
    pub(crate) fn requests(&self) -> Vec<crate::egress::RequestRecord> {
        self.egress.requests()
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.egress,
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
