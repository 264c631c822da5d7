//! Runs plugin code, and nothing else does. Owns the wasmtime engine, the
//! linker, the compiled-component cache and the ticker.
//!
//! [`Sandbox::run`] takes a [`PreparedCall`] by value: a call reaches a
//! plugin only after every earlier step said yes, and only once. Each call
//! gets a fresh `Store` with exactly the granted preopens (none, or the
//! workspace at `/workspace` read-only or read-write), no environment, no
//! arguments, no network, captured and capped stdio, fuel, a memory limit, a
//! wall-clock deadline and cancellation; the store is dropped afterwards,
//! whatever happened. It never decides whether a call may run.
//!
//! Implements the WIT interface `toolwarden:tool/host` (in [`host`]); WASI
//! comes from `wasmtime-wasi`.

mod bindings;
mod cache;
mod engine;
mod host;
mod links;
mod run;
mod state;
mod teardown;

pub use engine::{EPOCH_TICK, LOAD_INSTANCES, MAX_WASM_STACK, engine_config};
pub use host::LOG_BUDGET_BYTES;
pub use run::{GUEST_WORKSPACE, OUTPUT_PIPE_BYTES, RawOutput, RunContext, ToolFailure};
pub use state::MAX_HANDLES;
pub use teardown::{defer_on_this_thread, finish_deferred};

use crate::approval::PreparedCall;
use crate::config::Limits;
use crate::error::{Error, PluginError};
use crate::outcome::CallError;
use crate::spec::ToolSpec;
use bindings::PluginPre;
use state::CallState;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wasmtime::Engine;
use wasmtime::component::{Component, HasSelf, Linker};

/// Where a loaded plugin's compiled code came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Compiled now (and written to the cache).
    Compiled,
    /// Loaded from the on-disk cache, not recompiled.
    Cache,
}

/// A compiled, linked plugin, ready to instantiate once per call.
pub struct LoadedPlugin {
    pre: PluginPre<CallState>,
    origin: Origin,
    imports: Vec<String>,
}

impl LoadedPlugin {
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The interfaces the component imports.
    pub fn imports(&self) -> &[String] {
        &self.imports
    }
}

impl fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("origin", &self.origin)
            .field("imports", &self.imports)
            .finish()
    }
}

/// How a call ended inside the sandbox, before its output is checked.
#[derive(Debug)]
pub struct Execution {
    /// The tool returned (a value or its own error), or the call was stopped.
    pub result: Result<Result<RawOutput, ToolFailure>, CallError>,
    pub fuel_used: Option<u64>,
}

pub struct Sandbox {
    engine: Engine,
    linker: Linker<CallState>,
    cache: cache::Cache,
    workspace: PathBuf,
    link_root: links::LinkRoot,
    limits: Limits,
    /// One permit per call instance the pool holds (`limits.max_instances`).
    slots: Arc<tokio::sync::Semaphore>,
    ticker: engine::Ticker,
}

impl fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sandbox")
            .field("workspace", &self.workspace)
            .field("limits", &self.limits)
            .finish()
    }
}

impl Sandbox {
    /// Sets up the engine for `limits`, with the compile cache under
    /// `state_dir/cache`, serving calls on `workspace`.
    pub fn new(workspace: &Path, state_dir: &Path, limits: &Limits) -> Result<Sandbox, Error> {
        let engine_error = |e: wasmtime::Error| Error::Engine(format!("{e:#}"));
        let engine = engine::engine(limits).map_err(engine_error)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(engine_error)?;
        links::shadow(&mut linker).map_err(engine_error)?;
        bindings::toolwarden::tool::host::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
            .map_err(engine_error)?;
        let cache = cache::Cache::open(state_dir, engine::engine_key(&engine));
        let ticker = engine::Ticker::start(&engine);
        Ok(Sandbox {
            engine,
            linker,
            cache,
            workspace: workspace.to_owned(),
            link_root: links::LinkRoot::new(workspace),
            limits: limits.clone(),
            slots: Arc::new(tokio::sync::Semaphore::new(limits.max_instances as usize)),
            ticker,
        })
    }

    /// Compiles (or loads from cache) and links a plugin.
    pub fn load(&self, wasm: &[u8], sha256: &str) -> Result<LoadedPlugin, PluginError> {
        let (component, origin) = match self.cache.get(&self.engine, sha256) {
            Some(component) => (component, Origin::Cache),
            None => {
                let component = Component::new(&self.engine, wasm)
                    .map_err(|e| PluginError::NotAComponent(format!("{e:#}")))?;
                self.cache.put(sha256, &component);
                (component, Origin::Compiled)
            }
        };
        let imports = component
            .component_type()
            .imports(&self.engine)
            .map(|(name, _)| name.to_owned())
            .collect();
        let pre = self
            .linker
            .instantiate_pre(&component)
            .and_then(PluginPre::new)
            .map_err(|e| PluginError::WrongWorld(format!("{e:#}")))?;
        Ok(LoadedPlugin {
            pre,
            origin,
            imports,
        })
    }

    /// Calls a plugin's `tools()` under the load-time budget. Blocks.
    pub fn describe(&self, plugin: &LoadedPlugin) -> Result<Vec<ToolSpec>, PluginError> {
        run::describe(self, plugin)
    }

    /// Runs a prepared call to the end: returned, failed, or stopped.
    pub fn free_instances(&self) -> usize {
        self.slots.available_permits()
    }

    pub async fn run(&self, call: PreparedCall, cx: RunContext) -> Execution {
        run::invoke(self, call, cx).await
    }
}
