//! The floor: a fresh pooled instance of a plugin per call with plain
//! wasmtime and none of the host around it, on two engines (see [`Engine`])
//! and through both of wasmtime's APIs.
//!
//! A [`Floor`] is set up once (engine, compiled component, linker) and then
//! called one call at a time, so that the benchmark can interleave floor
//! calls with governed calls and both see the same machine. A tool that
//! reads files gets the workspace preopened read-only, per call, as the
//! host does: its floor then moves with this machine's file system calls,
//! which a governed figure alone cannot tell from a regression.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use wasmtime::Store;
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

mod sync {
    wasmtime::component::bindgen!({ path: "../wit", world: "plugin" });
}
mod asynchronous {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "plugin",
        exports: { default: async },
    });
}

struct State {
    ctx: WasiCtx,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

impl sync::toolwarden::tool::host::Host for State {
    fn log(&mut self, _: sync::toolwarden::tool::host::Level, _: String) {}
    fn progress(&mut self, _: u64, _: Option<u64>, _: Option<String>) {}
    fn cancelled(&mut self) -> bool {
        false
    }
}

impl asynchronous::toolwarden::tool::host::Host for State {
    fn log(&mut self, _: asynchronous::toolwarden::tool::host::Level, _: String) {}
    fn progress(&mut self, _: u64, _: Option<u64>, _: Option<String>) {}
    fn cancelled(&mut self) -> bool {
        false
    }
}

/// Which engine the floor runs on.
#[derive(Clone, Copy, Debug)]
pub enum Engine {
    /// wasmtime's pooling allocator with its default settings, fuel and
    /// epochs on: the floor as issue #7 defines it (about 25 µs there).
    Pooling,
    /// The host's own engine (`toolwarden::engine_config`: the pool sized
    /// and tuned to keep memory resident and reset it with `PAGEMAP_SCAN`).
    /// The stricter floor: the ratio against it is what governance adds to
    /// the sandbox the host actually runs.
    Tuned,
}

fn engine(kind: Engine) -> wasmtime::Engine {
    let config = match kind {
        Engine::Tuned => toolwarden::engine_config(&toolwarden::Limits::default()),
        Engine::Pooling => {
            let mut config = wasmtime::Config::new();
            config
                .allocation_strategy(wasmtime::InstanceAllocationStrategy::pooling())
                .epoch_interruption(true)
                .consume_fuel(true);
            config
        }
    };
    wasmtime::Engine::new(&config).expect("engine")
}

/// Where the guest finds the workspace, as in the host.
const GUEST_WORKSPACE: &str = "/workspace";

fn store(engine: &wasmtime::Engine, workspace: Option<&Path>) -> Store<State> {
    let mut ctx = WasiCtxBuilder::new();
    // As the host: file reads run inline on the calling thread.
    ctx.allow_blocking_current_thread(true);
    if let Some(dir) = workspace {
        ctx.preopened_dir(dir, GUEST_WORKSPACE, FsPerms::ReadOnly)
            .expect("preopen the workspace");
    }
    let state = State {
        ctx: ctx.build(),
        table: ResourceTable::new(),
    };
    let mut store = Store::new(engine, state);
    store.set_fuel(10_000_000_000).expect("fuel");
    store.set_epoch_deadline(1 << 40);
    store
}

/// One tool call a floor makes, and a piece of its answer that shows it
/// worked.
pub struct Job {
    pub tool: &'static str,
    pub args: &'static str,
    pub answer_contains: &'static str,
    /// Preopened read-only for the guest when the tool reads files.
    pub workspace: Option<PathBuf>,
}

/// A linked component for one of wasmtime's APIs, and the context of the
/// call made into it (built once: it is not part of the floor).
enum Pre {
    Sync(
        sync::PluginPre<State>,
        sync::exports::toolwarden::tool::tool::CallContext,
    ),
    Async(
        asynchronous::PluginPre<State>,
        asynchronous::exports::toolwarden::tool::tool::CallContext,
    ),
}

/// A compiled, linked plugin, ready to be instantiated once per call.
pub struct Floor {
    engine: wasmtime::Engine,
    pre: Pre,
    job: Job,
}

/// Which of wasmtime's APIs a floor uses.
#[derive(Clone, Copy, Debug)]
pub enum Api {
    Sync,
    /// As the host calls plugins.
    Async,
}

impl Floor {
    pub fn new(wasm: &[u8], kind: Engine, api: Api, job: Job) -> Floor {
        let engine = engine(kind);
        let component = Component::new(&engine, wasm).expect("compile the plugin");
        let mut linker = Linker::new(&engine);
        let pre = match api {
            Api::Sync => {
                wasmtime_wasi::p2::add_to_linker_sync(&mut linker).expect("wasi");
                sync::toolwarden::tool::host::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
                    .expect("host");
                let pre = linker.instantiate_pre(&component).expect("pre");
                let ctx = sync::exports::toolwarden::tool::tool::CallContext {
                    call_id: "bench".into(),
                    session_id: "bench".into(),
                    workspace: job.workspace.as_ref().map(|_| GUEST_WORKSPACE.into()),
                };
                Pre::Sync(sync::PluginPre::new(pre).expect("pre"), ctx)
            }
            Api::Async => {
                wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("wasi");
                asynchronous::toolwarden::tool::host::add_to_linker::<_, HasSelf<_>>(
                    &mut linker,
                    |s| s,
                )
                .expect("host");
                let pre = linker.instantiate_pre(&component).expect("pre");
                let ctx = asynchronous::exports::toolwarden::tool::tool::CallContext {
                    call_id: "bench".into(),
                    session_id: "bench".into(),
                    workspace: job.workspace.as_ref().map(|_| GUEST_WORKSPACE.into()),
                };
                Pre::Async(asynchronous::PluginPre::new(pre).expect("pre"), ctx)
            }
        };
        Floor { engine, pre, job }
    }

    /// One instantiate + `invoke` + drop, timed.
    pub async fn call(&self) -> Duration {
        let started = Instant::now();
        let Job {
            tool,
            args,
            answer_contains,
            ref workspace,
        } = self.job;
        let mut store = store(&self.engine, workspace.as_deref());
        let value = match &self.pre {
            Pre::Sync(pre, ctx) => {
                let plugin = pre.instantiate(&mut store).expect("instantiate");
                plugin
                    .toolwarden_tool_tool()
                    .call_invoke(&mut store, tool, args, ctx)
                    .expect("call")
                    .map(|out| out.value)
                    .map_err(drop)
            }
            Pre::Async(pre, ctx) => {
                let plugin = pre
                    .instantiate_async(&mut store)
                    .await
                    .expect("instantiate");
                plugin
                    .toolwarden_tool_tool()
                    .call_invoke(&mut store, tool, args, ctx)
                    .await
                    .expect("call")
                    .map(|out| out.value)
                    .map_err(drop)
            }
        };
        drop(store);
        let elapsed = started.elapsed();
        assert!(value.is_ok_and(|v| v.contains(answer_contains)));
        elapsed
    }
}
