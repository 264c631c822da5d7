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
mod changes;
mod client;
mod compiler;
mod contract;
mod describe;
mod error;
pub(crate) mod guest;
mod host;
mod links;
mod prompting;
mod resources;
mod root;
mod sampling_gate;
mod setup;
mod state;
mod views;

pub(crate) use contract::{CallContext, PluginPre};
pub use contract::{Contract, RawOutput, ToolFailure};
pub use error::{EngineError, PluginError};
pub use setup::engine_config;
pub(crate) use state::{CallState, HostState, SamplingBudget};

use crate::egress::Egress;
use crate::limits::Limits;
use crate::provenance::Provenance;
use compiler::Compiler;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use wasmtime::component::Component;

/// Where a loaded plugin's compiled code came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Compiled now, by the baseline compiler (and written to the cache);
    /// its optimized code follows (see [`LoadedPlugin`]).
    Compiled,
    /// Loaded from the on-disk cache: the optimized code, or the baseline
    /// code of a plugin whose optimized compile never finished.
    Cache,
}

/// A compiled, linked plugin, ready to instantiate once per call.
///
/// A plugin never compiled before is first compiled with the baseline
/// compiler (Winch, several times faster to compile, slower to run), enough
/// to ask it for its tools; the code its calls run is compiled with the
/// optimizing one (Cranelift) later, in the background or by its first
/// call, whichever comes first. So a start with many new plugins serves
/// `tools/list` after the fast compile, and a call waits only for its own
/// plugin's optimized code, never for the others'.
pub struct LoadedPlugin {
    optimized: OnceLock<Result<PluginPre, String>>,
    /// What building `optimized` needs, until it is built.
    deferred: Mutex<Option<Deferred>>,
    /// The baseline code, until the plugin has been described with it.
    baseline: Mutex<Option<PluginPre>>,
    origin: Origin,
    contract: Contract,
    imports: Vec<String>,
    /// Asked on every call: found once, at load.
    composes: bool,
    samples: bool,
    announces: bool,
    presents: bool,
    shows: bool,
}

/// A plugin's optimized compile, not yet done.
struct Deferred {
    wasm: Vec<u8>,
    sha256: String,
    compiler: Arc<Compiler>,
    /// The baseline code's cache entry, which the optimized one replaces.
    superseded: Option<PathBuf>,
}

impl LoadedPlugin {
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// Whether the code its calls run is built (see [`LoadedPlugin`]).
    pub fn is_optimized(&self) -> bool {
        self.optimized.get().is_some()
    }

    /// The code calls run, if it is built; `Err` says why it could not be.
    pub(crate) fn optimized(&self) -> Option<Result<&PluginPre, &str>> {
        self.optimized
            .get()
            .map(|built| built.as_ref().map_err(String::as_str))
    }

    /// The code calls run, built now on this thread unless it is built or
    /// being built, in which case this waits for that build alone. Blocks.
    pub(crate) fn optimize(&self) -> Result<&PluginPre, &str> {
        self.optimized
            .get_or_init(|| {
                let deferred = self.deferred.lock().ok().and_then(|mut d| d.take());
                let Some(Deferred {
                    wasm,
                    sha256,
                    compiler,
                    superseded,
                }) = deferred
                else {
                    return Err("its code was lost before it was compiled".into());
                };
                let component = compiler
                    .compile(&wasm, &sha256)
                    .map_err(|e| e.to_string())?;
                if let Some(superseded) = superseded {
                    let _ = std::fs::remove_file(superseded);
                }
                compiler.link(&component).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// The interfaces the component imports.
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    /// The contract version it was built against.
    pub fn contract(&self) -> Contract {
        self.contract
    }

    /// Whether it imports `compose`, so its tools may call other tools.
    pub fn composes(&self) -> bool {
        self.composes
    }

    /// Whether it imports `client`, so its tools may ask the client's model.
    pub fn samples(&self) -> bool {
        self.samples
    }

    /// Whether it imports `changes`, so its tools may announce that its
    /// resources changed.
    pub fn announces(&self) -> bool {
        self.announces
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

/// The import through which a plugin calls other tools, in each contract
/// version that has it.
pub const COMPOSE_IMPORTS: [&str; 2] = [
    "toolwarden:tool/compose@0.2.0",
    "toolwarden:tool/compose@0.3.0",
];
/// The import through which a plugin asks the client's model and roots.
pub const CLIENT_IMPORT: &str = "toolwarden:tool/client@0.3.0";
/// The import through which a plugin announces that its resources changed.
pub const CHANGES_IMPORT: &str = "toolwarden:tool/changes@0.3.0";
/// The export through which a plugin previews its calls.
pub const PRESENT_EXPORTS: [&str; 2] = [
    "toolwarden:tool/present@0.2.0",
    "toolwarden:tool/present@0.3.0",
];
/// The export through which a plugin shows its finished calls.
pub const SHOW_EXPORTS: [&str; 2] = ["toolwarden:tool/show@0.2.0", "toolwarden:tool/show@0.3.0"];

impl fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("origin", &self.origin)
            .field("contract", &self.contract)
            .field("optimized", &self.is_optimized())
            .field("imports", &self.imports)
            .finish()
    }
}

pub struct Engine {
    /// Cranelift: the code calls run.
    optimizing: Arc<Compiler>,
    /// Winch: the code a plugin compiled for the first time is described
    /// with. `None` where Winch cannot run (it compiles for x86-64 only):
    /// there every plugin is compiled optimized at once.
    baseline: Option<Compiler>,
    /// The workspace preopened for calls that are granted it, and the
    /// root the link checks hold it to.
    workspace: root::LinkRoot,
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
        let cache = cache::CacheDir::open(state_dir);
        let optimizing = Compiler::new(
            setup::engine(limits).map_err(EngineError::from_wasmtime)?,
            &cache,
        )?;
        let baseline = setup::baseline_engine()
            .map_err(EngineError::from_wasmtime)
            .and_then(|engine| Compiler::new(engine, &cache))
            .inspect_err(|e| {
                tracing::debug!("no baseline compiler, so plugins compile optimized at once: {e}");
            })
            .ok();
        let mut engines = vec![&optimizing.wasmtime];
        engines.extend(baseline.as_ref().map(|b| &b.wasmtime));
        let ticker = setup::Ticker::start(&engines);
        Ok(Engine {
            optimizing: Arc::new(optimizing),
            baseline,
            workspace: root::LinkRoot::new(workspace),
            limits: limits.clone(),
            egress,
            provenance,
            ticker,
        })
    }

    /// Loads a plugin from the cache, or compiles it with the baseline
    /// compiler and leaves the optimized compile for later (see
    /// [`LoadedPlugin`]), and links it.
    pub fn load(&self, wasm: &[u8], sha256: &str) -> Result<LoadedPlugin, PluginError> {
        let optimizing = &self.optimizing;
        let cached = optimizing
            .cache
            .get(&optimizing.wasmtime, sha256)
            .map(|hit| (hit, true))
            .or_else(|| {
                let baseline = self.baseline.as_ref()?;
                Some((baseline.cache.get(&baseline.wasmtime, sha256)?, false))
            });
        let (component, origin, optimized) = match cached {
            Some((hit, optimized)) => (hit, Origin::Cache, optimized),
            None => {
                let (component, optimized) = self.compile_first(wasm, sha256)?;
                (component, Origin::Compiled, optimized)
            }
        };
        let imports: Vec<String> = component
            .component_type()
            .imports(component.engine())
            .map(|(name, _)| name.to_owned())
            .collect();
        let composes = imports
            .iter()
            .any(|name| COMPOSE_IMPORTS.contains(&name.as_str()));
        let samples = imports.iter().any(|name| name == CLIENT_IMPORT);
        let announces = imports.iter().any(|name| name == CHANGES_IMPORT);
        let exports = |wanted: &[&str]| {
            component
                .component_type()
                .exports(component.engine())
                .any(|(name, _)| wanted.contains(&name))
        };
        let presents = exports(&PRESENT_EXPORTS);
        let shows = exports(&SHOW_EXPORTS);
        let linker = match &self.baseline {
            Some(baseline) if !optimized => baseline,
            _ => &**optimizing,
        };
        let pre = linker.link(&component)?;
        let contract = pre.contract();
        let (optimized, deferred, baseline) = if optimized {
            (OnceLock::from(Ok(pre)), None, None)
        } else {
            let deferred = Deferred {
                wasm: wasm.to_vec(),
                sha256: sha256.to_owned(),
                compiler: Arc::clone(optimizing),
                superseded: self.baseline.as_ref().map(|b| b.cache.entry(sha256)),
            };
            (OnceLock::new(), Some(deferred), Some(pre))
        };
        Ok(LoadedPlugin {
            optimized,
            deferred: Mutex::new(deferred),
            baseline: Mutex::new(baseline),
            origin,
            contract,
            imports,
            composes,
            samples,
            announces,
            presents,
            shows,
        })
    }

    /// A plugin's first code: the baseline compiler's, unless it refuses
    /// the plugin (Winch does not compile every proposal, tail calls for
    /// one), in which case the optimized code is compiled at once.
    /// `true`: what it returns is the optimized code.
    fn compile_first(&self, wasm: &[u8], sha256: &str) -> Result<(Component, bool), PluginError> {
        if let Some(baseline) = &self.baseline {
            match baseline.compile(wasm, sha256) {
                Ok(component) => return Ok((component, false)),
                Err(e) => {
                    tracing::debug!(
                        "the baseline compiler refused a plugin ({e}); compiling it optimized"
                    );
                }
            }
        }
        Ok((self.optimizing.compile(wasm, sha256)?, true))
    }

    /// Calls a plugin's `tools()` (and `prompts()`, when it offers them)
    /// under the load-time budget. Blocks.
    pub(crate) fn describe(
        &self,
        plugin: &LoadedPlugin,
    ) -> Result<describe::Described, PluginError> {
        describe::describe(self, plugin)
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The credentials' secrets, masked in whatever leaves a sandbox;
    /// `None` when the config defines no credential.
    pub fn secrets(&self) -> Option<&Arc<crate::egress::Secrets>> {
        self.egress.secrets()
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
