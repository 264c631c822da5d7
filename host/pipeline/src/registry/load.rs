//! Reading plugin files and turning each into checked [`Tool`]s.

use super::RegistryError;
use super::{OnLoaded, Plugin, Registry, Tool};
use crate::changes::Offers;
use crate::engine::Engine;
use crate::engine::PluginError;
use crate::provenance::{MAX_SIGNATURE_BYTES, Proven, SIGNATURE_SUFFIX};
use crate::schema::Schema;
use crate::spec::{ToolSpec, check_declaration};
use sha2::{Digest, Sha256};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest plugin file accepted. Compiling untrusted wasm is costly and not
/// covered by wasmtime's security policy, so the input is bounded first.
pub const MAX_PLUGIN_BYTES: u64 = 64 << 20;

/// A plugin and the tools it declares, checked.
pub(super) type Loaded = (Arc<Plugin>, Vec<Tool>);

/// A plugin file that was skipped, and why.
#[derive(Debug)]
pub struct LoadFailure {
    pub(crate) file: PathBuf,
    pub(crate) error: PluginError,
}

impl LoadFailure {
    /// The plugin file that was skipped.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Why it was skipped.
    pub fn error(&self) -> &PluginError {
        &self.error
    }
}

impl fmt::Display for LoadFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "plugin `{}` was not loaded: {}",
            crate::presentation::one_line(&self.file.display().to_string()),
            self.error
        )
    }
}

/// `*.wasm` files in `dir`, sorted by name.
pub(super) fn plugin_files(dir: &Path) -> Result<Vec<PathBuf>, RegistryError> {
    let entries = std::fs::read_dir(dir).map_err(|source| RegistryError::PluginsDir {
        path: dir.to_owned(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "wasm") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// Loads each file, compiling several at once: compilation dominates a cold
/// start and is independent per file. Results keep the files' order. A file
/// `before` served unchanged shares that build's record of what it withdrew.
pub(super) fn load_all(
    files: &[PathBuf],
    engine: &Engine,
    progress: Option<&OnLoaded>,
    before: Option<&Registry>,
) -> Vec<Result<Loaded, LoadFailure>> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let finished = std::sync::atomic::AtomicUsize::new(0);
    let mut slots: Vec<Option<Result<Loaded, LoadFailure>>> = files.iter().map(|_| None).collect();
    let done = std::sync::Mutex::new(&mut slots);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(file) = files.get(i) else { break };
                    let outcome = load_one(file, engine, before).map_err(|error| LoadFailure {
                        file: file.clone(),
                        error,
                    });
                    if let Ok(mut slots) = done.lock() {
                        slots[i] = Some(outcome);
                    }
                    let finished = finished.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                    if let Some(progress) = progress {
                        progress(finished, files.len());
                    }
                }
            });
        }
    });
    slots.into_iter().flatten().collect()
}

pub(super) fn load_one(
    file: &Path,
    engine: &Engine,
    before: Option<&Registry>,
) -> Result<(Arc<Plugin>, Vec<Tool>), PluginError> {
    let name = file.file_name().map(|n| n.to_string_lossy());
    if name.is_none_or(|name| crate::presentation::has_control(&name)) {
        return Err(PluginError::FileName);
    }
    let size = std::fs::metadata(file).map_err(PluginError::Read)?.len();
    if size > MAX_PLUGIN_BYTES {
        return Err(PluginError::TooLarge {
            bytes: size,
            max: MAX_PLUGIN_BYTES,
        });
    }
    let bytes = std::fs::read(file).map_err(PluginError::Read)?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    // Proven before it is compiled: compiling is itself exposure.
    let proven = prove(file, &bytes, &sha256, engine)?;
    let loaded = engine.load(&bytes, &sha256)?;
    let described = engine.describe(&loaded)?;
    let specs = described.tools;
    // One record for every build of the same file, so that a call of the
    // build a reload replaces, ending after it, withdraws from the new one.
    let offers = before
        .and_then(|registry| registry.served(file, &sha256))
        .map(|plugin| Arc::clone(plugin.offers()))
        .unwrap_or_else(|| Arc::new(Offers::new(specs.iter().map(|spec| spec.name.clone()))));
    let plugin = Arc::new(Plugin::new(
        file,
        sha256,
        loaded,
        proven.signer,
        (described.prompts, described.catalog),
        offers,
    ));
    let mut tools = Vec::with_capacity(specs.len());
    let mut seen = std::collections::HashSet::new();
    for spec in specs {
        if !seen.insert(spec.name.clone()) {
            return Err(PluginError::Spec {
                tool: spec.name,
                problem: "declared twice in this plugin".into(),
            });
        }
        tools.push(check_tool(spec, &plugin)?);
    }
    // Only a plugin that says what it will reach may hold the door to the
    // network at all.
    if !tools.iter().any(|t| t.spec.network.is_some())
        && let Some(http) = plugin
            .loaded
            .imports()
            .iter()
            .find(|i| i.starts_with("wasi:http/"))
    {
        return Err(PluginError::UndeclaredNetwork {
            import: http.clone(),
        });
    }
    Ok((plugin, tools))
}

/// The plugin's pin and signature (`NAME.wasm.minisig` beside it), as the
/// `[plugins]` section asks.
fn prove(file: &Path, bytes: &[u8], sha256: &str, engine: &Engine) -> Result<Proven, PluginError> {
    let mut name = file.as_os_str().to_owned();
    name.push(SIGNATURE_SUFFIX);
    let signature = match std::fs::File::open(&name) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(PluginError::Read(e)),
        Ok(opened) => {
            use std::io::Read;
            let mut text = String::new();
            opened
                .take(MAX_SIGNATURE_BYTES as u64)
                .read_to_string(&mut text)
                .map_err(PluginError::Read)?;
            Some(text)
        }
    };
    let file_name = file
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    engine
        .provenance()
        .check(&file_name, bytes, sha256, signature.as_deref())
        .map_err(|unproven| PluginError::Unproven {
            reason: unproven.reason,
            fix: unproven.fix,
        })
}

fn check_tool(spec: ToolSpec, plugin: &Arc<Plugin>) -> Result<Tool, PluginError> {
    let problem = |problem: String| PluginError::Spec {
        tool: spec.name.clone(),
        problem,
    };
    check_declaration(
        &spec.name,
        &spec.description,
        spec.effects,
        spec.filesystem,
        spec.network.as_ref(),
    )
    .map_err(problem)?;
    let input = Schema::compile(&spec.input_schema).map_err(|e| problem(format!("input {e}")))?;
    if !input.is_object_schema() {
        return Err(problem(
            "the input schema must declare `\"type\": \"object\"` at its root".into(),
        ));
    }
    let output = match &spec.output_schema {
        Some(doc) => Some(Schema::compile(doc).map_err(|e| problem(format!("output {e}")))?),
        None => None,
    };
    Ok(Tool {
        name: Arc::from(spec.name.as_str()),
        spec,
        plugin: Arc::clone(plugin),
        input,
        output,
    })
}

/// The background compile threads' nice value (Linux: per thread): the
/// calls being served come first; a call that needs a plugin's code before
/// it is built compiles it on its own thread, at the calls' priority.
const OPTIMIZE_NICENESS: i32 = 10;

/// Compiles the optimized code of every plugin that lacks it (see
/// [`crate::engine::LoadedPlugin`]), one plugin per thread at a time. A
/// plugin whose registry is gone by its turn (a reload replaced it, the
/// host stopped) is skipped. Returns at once.
pub(super) fn optimize_in_background(plugins: &[Arc<Plugin>]) {
    let pending: Vec<std::sync::Weak<Plugin>> = plugins
        .iter()
        .filter(|p| !p.loaded.is_optimized())
        .map(Arc::downgrade)
        .collect();
    if pending.is_empty() {
        return;
    }
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(pending.len());
    let pending = Arc::new(pending);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for _ in 0..workers {
        let (pending, next) = (Arc::clone(&pending), Arc::clone(&next));
        let spawned = std::thread::Builder::new()
            .name("toolwarden-compile".into())
            .spawn(move || {
                if let Err(e) = rustix::process::setpriority_process(None, OPTIMIZE_NICENESS) {
                    tracing::debug!("background compiles keep the calls' priority: {e}");
                }
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(plugin) = pending.get(i) else { break };
                    if let Some(plugin) = plugin.upgrade()
                        && let Err(e) = plugin.loaded.optimize()
                    {
                        tracing::warn!(
                            "plugin `{}`: its optimized code cannot be compiled: {e}",
                            plugin.file.display()
                        );
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(
                "no background compile thread ({e}); each plugin compiles at its first call"
            );
            return;
        }
    }
}
