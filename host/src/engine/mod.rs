//! The wasmtime engine and everything a plugin needs before it can run:
//! the linker (WASI, `wasi:http` behind the egress hooks, every
//! `toolwarden:tool/host` version, the checked link operations),
//! the compiled-component cache, the epoch ticker, and the fresh `Store` a
//! guest gets for a grant. The registry loads and describes plugins through
//! it; the sandbox runs calls on it.
//!
//! It never decides whether a call may run, and it never runs a tool: the
//! only guest code it starts itself is a plugin's `tools()` at load.
//!
//! Implements the WIT interface `toolwarden:tool/host` (in [`host`]); WASI
//! comes from `wasmtime-wasi`.

mod bindings;
mod cache;
mod contract;
mod describe;
mod error;
pub(crate) mod guest;
mod host;
mod links;
mod setup;
mod state;

pub(crate) use contract::CallContext;
pub use contract::{Contract, RawOutput, ToolFailure};
pub use error::{EngineError, PluginError};
pub use host::LOG_BUDGET_BYTES;
pub use setup::engine_config;
pub(crate) use state::{CallState, HostState};

use crate::egress::Egress;
use crate::limits::Limits;
use crate::provenance::Provenance;
use crate::spec::ToolSpec;
use contract::PluginPre;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
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
    pub(crate) pre: PluginPre,
    origin: Origin,
    imports: Vec<String>,
    /// Asked on every call: found once, at load.
    composes: bool,
    presents: bool,
    shows: bool,
}

impl LoadedPlugin {
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The interfaces the component imports.
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    /// The contract version it was built against.
    pub fn contract(&self) -> Contract {
        self.pre.contract()
    }

    /// Whether it imports `compose`, so its tools may call other tools.
    pub fn composes(&self) -> bool {
        self.composes
    }

    /// Whether it exports `present`, so its tools may preview their calls.
    pub fn presents(&self) -> bool {
        self.presents
    }

    /// Whether it exports `show`, so its tools may show their results.
    pub fn shows(&self) -> bool {
        self.shows
    }
}

/// The import through which a plugin calls other tools.
pub const COMPOSE_IMPORT: &str = "toolwarden:tool/compose@0.2.0";
/// The export through which a plugin previews its calls.
pub const PRESENT_EXPORT: &str = "toolwarden:tool/present@0.2.0";
/// The export through which a plugin shows its finished calls.
pub const SHOW_EXPORT: &str = "toolwarden:tool/show@0.2.0";

impl fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("origin", &self.origin)
            .field("contract", &self.contract())
            .field("imports", &self.imports)
            .finish()
    }
}

pub struct Engine {
    wasmtime: wasmtime::Engine,
    linker: Linker<CallState>,
    cache: cache::Cache,
    /// The workspace preopened for calls that are granted it, and the
    /// root the link checks hold it to.
    workspace: links::LinkRoot,
    limits: Limits,
    /// What every call's requests go through.
    egress: Arc<Egress>,
    /// What a plugin file must prove before it is compiled.
    provenance: Arc<Provenance>,
    ticker: setup::Ticker,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("workspace", &self.workspace.path())
            .field("limits", &self.limits)
            .finish()
    }
}

impl Engine {
    /// Sets up the engine for `limits`, with the compile cache under
    /// `state_dir/cache`, serving calls on `workspace` and sending their
    /// requests through `egress`.
    pub fn new(
        workspace: &Path,
        state_dir: &Path,
        limits: &Limits,
        egress: Arc<Egress>,
        provenance: Arc<Provenance>,
    ) -> Result<Engine, EngineError> {
        let engine_error = EngineError::from_wasmtime;
        let engine = setup::engine(limits).map_err(engine_error)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(engine_error)?;
        // Linked for every plugin, so a plugin that imports it still loads
        // and is then refused by name if it declares no network; a call
        // without a network grant has every request refused.
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker).map_err(engine_error)?;
        links::shadow(&mut linker).map_err(engine_error)?;
        bindings::v0_1::toolwarden::tool::host::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
            .map_err(engine_error)?;
        bindings::v0_2::toolwarden::tool::host::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
            .map_err(engine_error)?;
        bindings::v0_2::toolwarden::tool::compose::add_to_linker::<_, HasSelf<_>>(
            &mut linker,
            |s| s,
        )
        .map_err(engine_error)?;
        let cache = cache::Cache::open(state_dir, setup::engine_key(&engine));
        let ticker = setup::Ticker::start(&engine);
        Ok(Engine {
            wasmtime: engine,
            linker,
            cache,
            workspace: links::LinkRoot::new(workspace),
            limits: limits.clone(),
            egress,
            provenance,
            ticker,
        })
    }

    /// Compiles (or loads from cache) and links a plugin.
    pub fn load(&self, wasm: &[u8], sha256: &str) -> Result<LoadedPlugin, PluginError> {
        let (component, origin) = match self.cache.get(&self.wasmtime, sha256) {
            Some(component) => (component, Origin::Cache),
            None => {
                let component = Component::new(&self.wasmtime, wasm)
                    .map_err(|e| PluginError::NotAComponent(format!("{e:#}")))?;
                self.cache.put(sha256, &component);
                (component, Origin::Compiled)
            }
        };
        let imports: Vec<String> = component
            .component_type()
            .imports(&self.wasmtime)
            .map(|(name, _)| name.to_owned())
            .collect();
        let composes = imports.iter().any(|name| name == COMPOSE_IMPORT);
        let exports = |wanted: &str| {
            component
                .component_type()
                .exports(&self.wasmtime)
                .any(|(name, _)| name == wanted)
        };
        let presents = exports(PRESENT_EXPORT);
        let shows = exports(SHOW_EXPORT);
        let pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(|e| PluginError::WrongWorld(format!("{e:#}")))?;
        let pre = PluginPre::new(pre).map_err(PluginError::WrongWorld)?;
        Ok(LoadedPlugin {
            pre,
            origin,
            imports,
            composes,
            presents,
            shows,
        })
    }

    /// Calls a plugin's `tools()` under the load-time budget. Blocks.
    pub fn describe(&self, plugin: &LoadedPlugin) -> Result<Vec<ToolSpec>, PluginError> {
        describe::describe(self, plugin)
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// What a plugin file must prove before it loads.
    pub fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    /// Keeps the epoch ticker running while a guest may run.
    pub(crate) fn ticking(&self) -> setup::Ticking<'_> {
        self.ticker.running()
    }
}
