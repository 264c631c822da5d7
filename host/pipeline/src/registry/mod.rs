//! The tool registry: loads every `*.wasm` in the plugins directory, checks
//! what each declares, and resolves a call's tool name to exactly one tool.
//!
//! Owns plugin identity (file, SHA-256) and the name -> tool and name ->
//! prompt maps. A plugin that fails to load is reported and skipped; two
//! plugins declaring the same tool or prompt name stop the host, since a
//! name must never be ambiguous. It compiles and
//! describes components through the engine and never runs a tool itself.

mod error;
mod load;
mod offered;

pub use error::RegistryError;
pub use load::{LoadFailure, MAX_PLUGIN_BYTES};
pub use offered::Prompt;

use crate::changes::Offers;
use crate::engine::PluginError;
use crate::engine::{Engine, LoadedPlugin, Origin};
use crate::materialize::Arguments;
use crate::outcome::{CallError, ErrorCode};
use crate::profile::ToolSet;
use crate::prompt::PromptSpec;
use crate::resource::Catalog;
use crate::schema::Schema;
use crate::spec::ToolSpec;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One loaded plugin file.
#[derive(Debug)]
pub struct Plugin {
    pub(crate) file: PathBuf,
    /// SHA-256 of the file, hex.
    pub(crate) sha256: String,
    pub(crate) loaded: LoadedPlugin,
    /// `file`'s last component, which policy rules match on every call.
    name: String,
    /// The id of the trusted key that signed the file, if it is signed.
    signer: Option<String>,
    /// The prompts it offers (contract 0.3.0), checked.
    prompts: Vec<PromptSpec>,
    /// The URI prefixes it owns and the resources it serves (0.3.0).
    catalog: Catalog,
    /// Which of its tools it withdrew (0.3.0, `changes`); each run of one
    /// of its tools holds it too.
    offers: Arc<Offers>,
}

impl Plugin {
    pub(crate) fn new(
        file: &Path,
        sha256: String,
        loaded: LoadedPlugin,
        signer: Option<String>,
        (prompts, catalog): (Vec<PromptSpec>, Catalog),
        offers: Arc<Offers>,
    ) -> Plugin {
        Plugin {
            file: file.to_owned(),
            sha256,
            loaded,
            signer,
            prompts,
            catalog,
            offers,
            name: file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        }
    }

    /// Which of its tools it offers now.
    pub fn offers(&self) -> &Arc<Offers> {
        &self.offers
    }

    /// The file it was loaded from.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// SHA-256 of the file, hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The plugin's file name, as policy rules match it (`fs.wasm`).
    pub fn file_name(&self) -> &str {
        &self.name
    }

    /// The id of the trusted minisign key that signed it, if it is signed.
    pub fn signer(&self) -> Option<&str> {
        self.signer.as_deref()
    }

    /// The prompts it offers.
    pub fn prompts(&self) -> &[PromptSpec] {
        &self.prompts
    }

    /// The URI prefixes it owns and the resources it serves.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Whether its code was compiled now or loaded from the cache.
    pub fn origin(&self) -> Origin {
        self.loaded.origin()
    }

    /// The contract version it was built against.
    pub fn contract(&self) -> crate::engine::Contract {
        self.loaded.contract()
    }

    /// What it imports from the host (WIT interfaces), as declared.
    pub fn imports(&self) -> &[String] {
        self.loaded.imports()
    }

    /// Whether the optimized code its calls run is built yet.
    pub fn is_optimized(&self) -> bool {
        self.loaded.is_optimized()
    }

    /// Builds (and caches) the optimized code its calls run, which a start
    /// otherwise builds in the background or the first call waits for.
    /// Blocks; an error says why the code cannot be compiled.
    pub fn finish_compiling(&self) -> Result<(), String> {
        self.loaded.optimize().map(drop).map_err(str::to_owned)
    }
}

/// One tool, ready to be called: its spec, compiled schemas and plugin.
#[derive(Debug)]
pub struct Tool {
    pub(crate) spec: ToolSpec,
    pub(crate) plugin: Arc<Plugin>,
    /// `spec.name`, shared with every record and reservation of its calls.
    pub(crate) name: Arc<str>,
    pub(crate) input: Schema,
    pub(crate) output: Option<Schema>,
}

impl Tool {
    /// What the plugin declared for it.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The plugin that serves it.
    pub fn plugin(&self) -> &Arc<Plugin> {
        &self.plugin
    }

    /// Its plugin offers it now (it has not withdrawn it).
    pub fn offered(&self) -> bool {
        self.plugin.offers.offers(&self.spec.name)
    }
}

#[derive(Debug, Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<Tool>>,
    prompts: BTreeMap<String, Arc<Prompt>>,
    plugins: Vec<Arc<Plugin>>,
    failures: Vec<LoadFailure>,
}

/// Told (plugins loaded, of how many) as each plugin of a directory is
/// loaded; from the loading threads, in any order.
pub type OnLoaded = dyn Fn(usize, usize) + Send + Sync;

/// A shared [`OnLoaded`], as a config carries it.
#[derive(Clone)]
pub struct LoadProgress(pub std::sync::Arc<OnLoaded>);

impl std::fmt::Debug for LoadProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LoadProgress")
    }
}

impl Registry {
    /// Loads every `*.wasm` in `dir`, in name order, telling `progress`
    /// (plugins done, of how many) as each one is loaded.
    pub fn load(
        dir: &Path,
        engine: &Engine,
        progress: Option<&OnLoaded>,
    ) -> Result<Registry, RegistryError> {
        let files = load::plugin_files(dir)?;
        let mut registry = Registry::default();
        for outcome in load::load_all(&files, engine, progress, None) {
            match outcome {
                Ok((plugin, tools)) => registry.add(plugin, tools)?,
                Err(failure) => {
                    tracing::warn!("{}", failure);
                    registry.failures.push(failure);
                }
            }
        }
        load::optimize_in_background(&registry.plugins);
        Ok(registry)
    }

    /// Loads `dir` again for a running host. Unlike [`Registry::load`], a
    /// name clash does not stop anything: plugins that `previous` already
    /// served (same file, same bytes) keep their names and the tools they
    /// withdrew, and a newcomer that claims one of them is rejected as a
    /// load failure.
    pub fn reload(
        dir: &Path,
        engine: &Engine,
        previous: &Registry,
    ) -> Result<Registry, RegistryError> {
        let files = load::plugin_files(dir)?;
        let (mut kept, mut arriving) = (Vec::new(), Vec::new());
        let mut registry = Registry::default();
        for outcome in load::load_all(&files, engine, None, Some(previous)) {
            match outcome {
                Ok(loaded) if previous.served(&loaded.0.file, &loaded.0.sha256).is_some() => {
                    kept.push(loaded)
                }
                Ok(loaded) => arriving.push(loaded),
                Err(failure) => registry.failures.push(failure),
            }
        }
        for (plugin, tools) in kept {
            registry.add(plugin, tools)?;
        }
        for (plugin, tools) in arriving {
            let clash = tools.iter().find_map(|t| {
                registry
                    .tools
                    .get(&t.spec.name)
                    .map(|other| PluginError::Conflict {
                        tool: t.spec.name.clone(),
                        other: other.plugin.file.clone(),
                    })
            });
            let prompt_clash = || {
                plugin.prompts.iter().find_map(|p| {
                    registry
                        .prompts
                        .get(&p.name)
                        .map(|other| PluginError::Prompt {
                            prompt: p.name.clone(),
                            problem: format!("already served by `{}`", other.plugin.file.display()),
                        })
                })
            };
            match clash.or_else(prompt_clash) {
                Some(error) => registry.failures.push(LoadFailure {
                    file: plugin.file.clone(),
                    error,
                }),
                None => registry.add(plugin, tools)?,
            }
        }
        load::optimize_in_background(&registry.plugins);
        Ok(registry)
    }

    /// Identifies the served tools and prompts and their plugin versions,
    /// to tell whether a reload changed anything a client can see.
    pub fn fingerprint(&self) -> Vec<(String, String)> {
        let prompts = self
            .prompts
            .values()
            .map(|p| (format!("prompt {}", p.spec.name), p.plugin.sha256.clone()));
        self.tools
            .values()
            .map(|t| (t.spec.name.clone(), t.plugin.sha256.clone()))
            .chain(prompts)
            .collect()
    }

    /// Loads one plugin file on its own (for `inspect`).
    pub fn load_file(
        file: &Path,
        engine: &Engine,
    ) -> Result<(Arc<Plugin>, Vec<Tool>), PluginError> {
        load::load_one(file, engine, None)
    }

    /// The plugin this registry serves from `file` with content `sha256`.
    fn served(&self, file: &Path, sha256: &str) -> Option<&Arc<Plugin>> {
        self.plugins
            .iter()
            .find(|p| p.file == file && p.sha256 == sha256)
    }

    fn add(&mut self, plugin: Arc<Plugin>, tools: Vec<Tool>) -> Result<(), RegistryError> {
        for tool in tools {
            if let Some(existing) = self.tools.get(&tool.spec.name) {
                return Err(RegistryError::DuplicateTool {
                    tool: tool.spec.name.clone(),
                    first: existing.plugin.file.clone(),
                    second: plugin.file.clone(),
                });
            }
            self.tools.insert(tool.spec.name.clone(), Arc::new(tool));
        }
        if let Some((prefix, other)) = self.claimant(&plugin.catalog) {
            return Err(RegistryError::ResourceClaim {
                prefix,
                first: other.file.clone(),
                second: plugin.file.clone(),
            });
        }
        for spec in &plugin.prompts {
            if let Some(existing) = self.prompts.get(&spec.name) {
                return Err(RegistryError::DuplicatePrompt {
                    prompt: spec.name.clone(),
                    first: existing.plugin.file.clone(),
                    second: plugin.file.clone(),
                });
            }
            let prompt = Prompt {
                spec: spec.clone(),
                plugin: Arc::clone(&plugin),
            };
            self.prompts.insert(spec.name.clone(), Arc::new(prompt));
        }
        self.plugins.push(plugin);
        Ok(())
    }

    /// Tools in name order.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<Tool>> {
        self.tools.values()
    }

    /// The tools a session with tool set `set` sees, in name order: those
    /// of the set that their plugins offer now.
    pub fn tools_in<'a>(&'a self, set: &'a ToolSet<'_>) -> impl Iterator<Item = &'a Arc<Tool>> {
        self.tools()
            .filter(|tool| set.includes(&tool.spec.name) && tool.offered())
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Tool>> {
        self.tools.get(name)
    }

    pub fn plugins(&self) -> &[Arc<Plugin>] {
        &self.plugins
    }

    /// Blocks until every plugin's optimized code is built (and cached),
    /// which a start otherwise finishes in the background. For a caller
    /// that wants the next start to find everything in the cache, or to
    /// measure the whole compile.
    pub fn finish_compiling(&self) {
        for plugin in &self.plugins {
            let _ = plugin.finish_compiling();
        }
    }

    /// Plugins that were skipped, with the reason.
    pub fn failures(&self) -> &[LoadFailure] {
        &self.failures
    }

    /// Pipeline step: finds the tool a call names.
    pub fn resolve(
        &self,
        name: &str,
        args: Arguments,
        set: &ToolSet<'_>,
    ) -> Result<ResolvedCall, CallError> {
        let tool = self
            .tools
            .get(name)
            .filter(|tool| set.includes(name) && tool.offered())
            .ok_or_else(|| {
                let known: Vec<&str> = self.tools_in(set).map(|t| t.spec.name.as_str()).collect();
                let missing = match self.tools.get(name) {
                    Some(tool) if set.includes(name) && !tool.offered() => format!(
                        "the tool `{name}` is withdrawn by its plugin `{}` for now",
                        tool.plugin.name
                    ),
                    _ => set.missing(name),
                };
                CallError::new(
                    ErrorCode::UnknownTool,
                    format!(
                        "{}{}; available tools: {}",
                        missing,
                        crate::suggest::did_you_mean(name, known.iter().copied()),
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ),
                )
            })?;
        Ok(ResolvedCall {
            tool: Arc::clone(tool),
            args,
        })
    }
}

/// A call whose tool exists. Only [`Registry::resolve`] makes one.
#[derive(Debug)]
pub struct ResolvedCall {
    tool: Arc<Tool>,
    args: Arguments,
}

impl ResolvedCall {
    pub fn tool(&self) -> &Arc<Tool> {
        &self.tool
    }

    pub fn args(&self) -> &Arguments {
        &self.args
    }

    pub(crate) fn into_parts(self) -> (Arc<Tool>, Arguments) {
        (self.tool, self.args)
    }

    /// The same call with other arguments; only [`crate::schema`] uses it,
    /// to validate them again.
    pub(crate) fn with_args(self, args: Arguments) -> ResolvedCall {
        ResolvedCall {
            tool: self.tool,
            args,
        }
    }
}
