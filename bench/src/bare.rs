//! The floor: a fresh pooled instance of the `calc` component per call with
//! plain wasmtime and none of the host around it, on two engines (see
//! [`Floor`]).

use std::time::{Duration, Instant};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

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
pub enum Floor {
    /// wasmtime's pooling allocator with its default settings, fuel and
    /// epochs on: the floor as issue #7 defines it (about 25 µs there).
    Pooling,
    /// The host's own engine (`toolwarden::engine_config`: the pool sized
    /// and tuned to keep memory resident and reset it with `PAGEMAP_SCAN`).
    /// The stricter floor: the ratio against it is what governance adds to
    /// the sandbox the host actually runs.
    Tuned,
}

fn engine(kind: Floor) -> Engine {
    let config = match kind {
        Floor::Tuned => toolwarden::engine_config(&toolwarden::Limits::default()),
        Floor::Pooling => {
            let mut config = wasmtime::Config::new();
            config
                .allocation_strategy(wasmtime::InstanceAllocationStrategy::pooling())
                .epoch_interruption(true)
                .consume_fuel(true);
            config
        }
    };
    Engine::new(&config).expect("engine")
}

fn store(engine: &Engine) -> Store<State> {
    let state = State {
        ctx: WasiCtxBuilder::new().build(),
        table: ResourceTable::new(),
    };
    let mut store = Store::new(engine, state);
    store.set_fuel(10_000_000_000).expect("fuel");
    store.set_epoch_deadline(1 << 40);
    store
}

const ARGS: &str = r#"{"op":"mul","a":6,"b":7}"#;

/// Instantiate + `invoke` + drop, synchronously, `n` times.
pub fn sync_calls(wasm: &[u8], n: usize, kind: Floor) -> Vec<Duration> {
    let engine = engine(kind);
    let component = Component::new(&engine, wasm).expect("compile calc");
    let mut linker = Linker::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).expect("wasi");
    sync::toolwarden::tool::host::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s).expect("host");
    let pre = sync::PluginPre::new(linker.instantiate_pre(&component).expect("pre")).expect("pre");
    let ctx = sync::exports::toolwarden::tool::tool::CallContext {
        call_id: "bench".into(),
        session_id: "bench".into(),
        workspace: None,
    };
    let once = || {
        let mut store = store(&engine);
        let plugin = pre.instantiate(&mut store).expect("instantiate");
        let out = plugin
            .toolwarden_tool_tool()
            .call_invoke(&mut store, "calc", ARGS, &ctx)
            .expect("call");
        assert!(out.is_ok_and(|o| o.value.contains("42")));
    };
    (0..n / 10).for_each(|_| once());
    (0..n)
        .map(|_| {
            let started = Instant::now();
            once();
            started.elapsed()
        })
        .collect()
}

/// The same through wasmtime's async API, as the host calls plugins.
pub fn async_calls(wasm: &[u8], n: usize, kind: Floor) -> Vec<Duration> {
    let engine = engine(kind);
    let component = Component::new(&engine, wasm).expect("compile calc");
    let mut linker = Linker::new(&engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("wasi");
    asynchronous::toolwarden::tool::host::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
        .expect("host");
    let pre = asynchronous::PluginPre::new(linker.instantiate_pre(&component).expect("pre"))
        .expect("pre");
    let ctx = asynchronous::exports::toolwarden::tool::tool::CallContext {
        call_id: "bench".into(),
        session_id: "bench".into(),
        workspace: None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let once = || async {
        let mut store = store(&engine);
        let plugin = pre
            .instantiate_async(&mut store)
            .await
            .expect("instantiate");
        let out = plugin
            .toolwarden_tool_tool()
            .call_invoke(&mut store, "calc", ARGS, &ctx)
            .await
            .expect("call");
        assert!(out.is_ok_and(|o| o.value.contains("42")));
    };
    runtime.block_on(async {
        for _ in 0..n / 10 {
            once().await;
        }
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let started = Instant::now();
            once().await;
            samples.push(started.elapsed());
        }
        samples
    })
}
