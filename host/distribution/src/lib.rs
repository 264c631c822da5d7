//! # `toolwarden-distribution` (host/distribution)
//!
//! Owns OCI registries (oci-client), installs, publishing and
//! `plugins.lock`. Depends on the pipeline library (`toolwarden`) for the
//! registry's checks; never serves or calls a tool.
//!
//! Plugins from registries: `toolwarden install`, `publish` and `plugins
//! list|update|remove`.
//!
//! Installing takes a component from an OCI registry ([`oci`]) or a local
//! file, with its signature if there is one, and stages it in a hidden
//! directory inside the plugins directory, where it goes through exactly
//! the checks a running host applies (pins and signatures as `[plugins]`
//! asks, then compiling into the cache, linking and every spec check: the
//! registry's own `load_file`). Only a plugin that passes is moved into
//! place, by rename (signature first), so a running `serve` picks up a
//! whole plugin or nothing, and a pull that fails half way leaves nothing
//! behind. `plugins.lock` ([`lock`]) records where each came from.
//!
//! Sits beside `check`: it uses the registry and the engine to vet a plugin
//! and never runs a tool.

#![deny(clippy::print_stdout, clippy::print_stderr)]

mod lock;
mod oci;

// The library's modules, by the names this code knew them under when it
// was one crate with them.
use toolwarden::{config, presentation, private_file, provenance, registry, store, when};

pub use lock::{Lock, Locked, path as lock_file};
pub use oci::Access;

use crate::config::Config;
use crate::provenance::SIGNATURE_SUFFIX;
use crate::registry::{MAX_PLUGIN_BYTES, Registry};
use oci_client::Reference;
use std::path::{Path, PathBuf};

/// Why a plugin could not be installed, published or removed. Nothing was
/// changed in the plugins directory.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct DistributionError {
    pub message: String,
    pub hint: String,
}

fn fail(message: impl Into<String>, hint: impl Into<String>) -> DistributionError {
    DistributionError {
        message: message.into(),
        hint: hint.into(),
    }
}

/// Where a plugin comes from.
#[derive(Clone, Debug)]
pub enum Source {
    Registry(Reference),
    File(PathBuf),
}

impl Source {
    /// `oci://REGISTRY/REPO:TAG`, `oci://REGISTRY/REPO@sha256:...`, or a path.
    pub fn parse(text: &str) -> Result<Source, DistributionError> {
        if crate::presentation::has_control(text) {
            return Err(fail(
                format!(
                    "`{}` holds control characters or direction overrides",
                    crate::presentation::one_line(text)
                ),
                "give the reference or path as plain text",
            ));
        }
        match text.strip_prefix("oci://") {
            Some(rest) => rest.parse::<Reference>().map(Source::Registry).map_err(|e| {
                fail(
                    format!("`{text}` is not a registry reference: {e}"),
                    "write oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:DIGEST",
                )
            }),
            None => Ok(Source::File(PathBuf::from(text))),
        }
    }

    /// The file name a plugin from here gets: the repository's last part,
    /// or the file's own name.
    fn file_name(&self) -> Option<String> {
        match self {
            Source::Registry(reference) => reference
                .repository()
                .rsplit('/')
                .next()
                .filter(|n| !n.is_empty())
                .map(|n| format!("{}.wasm", n.trim_end_matches(".wasm"))),
            Source::File(path) => path.file_name().map(|n| n.to_string_lossy().into_owned()),
        }
    }
}

/// What an install did.
#[derive(Clone, Debug)]
pub struct Installed {
    pub entry: Locked,
    pub tools: Vec<String>,
    /// The plugin was already installed with these very bytes.
    pub unchanged: bool,
    /// How the registry's artifact was packaged (none for a file).
    pub format: Option<String>,
}

/// A plugin's bytes and signature, fetched but not yet trusted.
struct Fetched {
    bytes: Vec<u8>,
    signature: Option<String>,
    digest: Option<String>,
    /// How a registry's artifact was packaged.
    format: Option<String>,
}

async fn fetch(
    source: &Source,
    access: &Access,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Fetched, DistributionError> {
    match source {
        Source::Registry(reference) => {
            let pulled = oci::Registry::new(reference, access)
                .pull(reference, MAX_PLUGIN_BYTES, progress)
                .await
                .map_err(|e| fail(e, "check the reference, that the registry runs, and your credentials (docker login, or --username)"))?;
            Ok(Fetched {
                bytes: pulled.bytes,
                signature: pulled.signature,
                digest: Some(pulled.digest),
                format: Some(pulled.format),
            })
        }
        Source::File(path) => {
            let size = std::fs::metadata(path)
                .map_err(|e| {
                    fail(
                        format!("cannot read `{}`: {e}", path.display()),
                        "check the path",
                    )
                })?
                .len();
            if size > MAX_PLUGIN_BYTES {
                return Err(fail(
                    format!(
                        "`{}` is {size} bytes; plugins may be at most {MAX_PLUGIN_BYTES}",
                        path.display()
                    ),
                    "strip debug info (`strip = true` in the profile)",
                ));
            }
            let bytes = std::fs::read(path).map_err(|e| {
                fail(
                    format!("cannot read `{}`: {e}", path.display()),
                    "check the path",
                )
            })?;
            let mut sig = path.as_os_str().to_owned();
            sig.push(SIGNATURE_SUFFIX);
            let signature = std::fs::read_to_string(&sig).ok();
            Ok(Fetched {
                bytes,
                signature,
                digest: None,
                format: None,
            })
        }
    }
}

/// A staging directory inside the plugins directory (same filesystem, so
/// moving out of it is a rename), removed whatever happens.
struct Staging(PathBuf);

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn io(what: &str, path: &Path, e: std::io::Error) -> DistributionError {
    fail(
        format!("cannot {what} `{}`: {e}", path.display()),
        "check the plugins directory's permissions and free space",
    )
}

/// A plugin fetched from its source, not yet checked or placed.
pub struct Download {
    source: Source,
    source_text: String,
    file_name: String,
    fetched: Fetched,
}

/// Fetches the plugin at `source_text` (to be installed as `name` if
/// given): the network part of an install, nothing written yet.
/// `progress` hears the component's bytes received and their total.
pub async fn download(
    source_text: &str,
    name: Option<&str>,
    access: &Access,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Download, DistributionError> {
    let source = Source::parse(source_text)?;
    let file_name = match name {
        Some(name) => name.to_owned(),
        None => source.file_name().ok_or_else(|| {
            fail(
                format!("cannot tell a file name from `{source_text}`"),
                "give one with --name NAME.wasm",
            )
        })?,
    };
    if !file_name.ends_with(".wasm")
        || file_name.contains('/')
        || file_name.starts_with('.')
        || crate::presentation::has_control(&file_name)
    {
        return Err(fail(
            format!(
                "`{}` is not a plugin file name",
                crate::presentation::one_line(&file_name)
            ),
            "use --name NAME.wasm (letters, digits, `-`, `_` and `.`; no control characters)",
        ));
    }
    let fetched = fetch(&source, access, progress).await?;
    Ok(Download {
        source,
        source_text: source_text.to_owned(),
        file_name,
        fetched,
    })
}

/// Checks a downloaded plugin as the host would load it (compiling it into
/// the cache) and moves it into the plugins directory. Blocks.
pub fn install(config: &Config, download: Download) -> Result<Installed, DistributionError> {
    let Download {
        source,
        source_text,
        file_name,
        fetched,
    } = download;
    let source_text = source_text.as_str();
    let plugins = config.plugins_dir();
    crate::private_file::create_dir(plugins).map_err(|e| io("create", plugins, e))?;
    let staging = Staging(plugins.join(format!(
        ".installing-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    )));
    std::fs::create_dir(&staging.0).map_err(|e| io("create", &staging.0, e))?;
    let staged = staging.0.join(&file_name);
    let staged_signature = staging.0.join(format!("{file_name}{SIGNATURE_SUFFIX}"));
    std::fs::write(&staged, &fetched.bytes).map_err(|e| io("write", &staged, e))?;
    if let Some(signature) = &fetched.signature {
        std::fs::write(&staged_signature, signature)
            .map_err(|e| io("write", &staged_signature, e))?;
    }
    let engine = config
        .engine()
        .map_err(|e| fail(e.to_string(), "see the error"))?;
    let (plugin, tools) = Registry::load_file(&staged, &engine)
        .map_err(|e| fail(format!("`{source_text}` was not installed: {e}"), e.hint()))?;
    // The code its calls run, compiled now and cached: installing is the
    // moment to wait for it (a big component, one embedding Python or
    // JavaScript, takes seconds), not the first call.
    plugin.finish_compiling().map_err(|e| {
        fail(
            format!("`{source_text}` was not installed: its code cannot be compiled: {e}"),
            "check the plugin with `toolwarden check FILE`",
        )
    })?;
    let target = plugins.join(&file_name);
    let target_signature = plugins.join(format!("{file_name}{SIGNATURE_SUFFIX}"));
    let mut lock = lock::read(plugins).map_err(|e| fail(e, "repair or remove the lock file"))?;
    let unchanged = std::fs::read(&target).is_ok_and(|old| old == fetched.bytes);
    // The signature first: whoever sees the new component sees its
    // signature with it.
    if fetched.signature.is_some() {
        std::fs::rename(&staged_signature, &target_signature)
            .map_err(|e| io("move", &target_signature, e))?;
    } else if target_signature.exists() {
        std::fs::remove_file(&target_signature).map_err(|e| io("remove", &target_signature, e))?;
    }
    std::fs::rename(&staged, &target).map_err(|e| io("move", &target, e))?;
    let entry = Locked {
        file: file_name,
        source: source_text.to_owned(),
        tag: match &source {
            Source::Registry(reference) => reference.tag().map(str::to_owned),
            Source::File(_) => None,
        },
        digest: fetched.digest,
        sha256: plugin.sha256().to_owned(),
        signer: plugin.signer().map(str::to_owned),
        installed: crate::when::timestamp(crate::store::now_ms()),
    };
    lock.record(entry.clone());
    lock::write(plugins, &lock)
        .map_err(|e| fail(e, "the plugin is installed; fix the lock file's directory"))?;
    Ok(Installed {
        entry,
        tools: tools.iter().map(|t| t.spec().name.clone()).collect(),
        unchanged,
        format: fetched.format,
    })
}

/// Pushes `file` (and `file.minisig`, if there) to the registry as `target`
/// (`oci://REGISTRY/REPO:TAG`); returns the manifest's digest.
pub async fn publish(
    file: &Path,
    target: &str,
    access: &Access,
) -> Result<String, DistributionError> {
    let Source::Registry(reference) = Source::parse(target)? else {
        return Err(fail(
            format!("`{target}` is not a registry reference"),
            "write oci://REGISTRY/REPOSITORY:TAG",
        ));
    };
    let fetched = fetch(&Source::File(file.to_owned()), access, &|_, _| {}).await?;
    let title = file.file_name().and_then(|name| name.to_str());
    oci::Registry::new(&reference, access)
        .push(&reference, fetched.bytes, title, fetched.signature)
        .await
        .map_err(|e| {
            fail(
                e,
                "check that the registry runs and that you may push to it",
            )
        })
}

/// The lock file's entries.
pub fn locked(config: &Config) -> Result<Lock, DistributionError> {
    lock::read(config.plugins_dir()).map_err(|e| fail(e, "repair or remove the lock file"))
}

/// Takes plugin `file` (and its signature) out of the plugins directory
/// and the lock file; a running `serve` drops its tools.
pub fn remove(config: &Config, file: &str) -> Result<bool, DistributionError> {
    let plugins = config.plugins_dir();
    let file = if file.ends_with(".wasm") {
        file.to_owned()
    } else {
        format!("{file}.wasm")
    };
    if file.contains('/') || file.starts_with('.') {
        return Err(fail(
            format!("`{file}` is not a plugin file name"),
            "name it as `plugins list` shows it",
        ));
    }
    let mut lock = lock::read(plugins).map_err(|e| fail(e, "repair or remove the lock file"))?;
    let target = plugins.join(&file);
    let existed = target.exists();
    if existed {
        std::fs::remove_file(&target).map_err(|e| io("remove", &target, e))?;
    }
    let signature = plugins.join(format!("{file}{SIGNATURE_SUFFIX}"));
    if signature.exists() {
        std::fs::remove_file(&signature).map_err(|e| io("remove", &signature, e))?;
    }
    let recorded = lock.remove(&file);
    if recorded {
        lock::write(plugins, &lock).map_err(|e| fail(e, "fix the lock file's directory"))?;
    }
    Ok(existed || recorded)
}

/// Puts back the sources (and tags) `before` recorded: a locked install
/// reinstalls by digest and must not rewrite what the lock says was asked.
pub fn restore_sources(config: &Config, before: &Lock) -> Result<(), DistributionError> {
    let plugins = config.plugins_dir();
    let mut lock = lock::read(plugins).map_err(|e| fail(e, "repair or remove the lock file"))?;
    for entry in &mut lock.plugins {
        if let Some(old) = before.get(&entry.file) {
            entry.source = old.source.clone();
            entry.tag = old.tag.clone();
        }
    }
    lock::write(plugins, &lock).map_err(|e| fail(e, "fix the lock file's directory"))
}

/// The source that reproduces a locked plugin exactly: its registry
/// reference pinned to the locked digest, or its file.
pub fn locked_source(entry: &Locked) -> Result<String, DistributionError> {
    match (Source::parse(&entry.source)?, &entry.digest) {
        (Source::Registry(reference), Some(digest)) => Ok(format!(
            "oci://{}/{}@{digest}",
            reference.registry(),
            reference.repository()
        )),
        (Source::Registry(_), None) | (Source::File(_), _) => Ok(entry.source.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_name_their_plugin_file() {
        let named = |text: &str| Source::parse(text).unwrap().file_name();
        assert_eq!(
            named("oci://127.0.0.1:5000/tools/calc:1.0").as_deref(),
            Some("calc.wasm")
        );
        assert_eq!(
            named("oci://ghcr.io/acme/fetch@sha256:0123456789012345678901234567890123456789012345678901234567890123").as_deref(),
            Some("fetch.wasm")
        );
        assert_eq!(
            named("/tmp/x/word_count.wasm").as_deref(),
            Some("word_count.wasm")
        );
        assert!(Source::parse("oci://").is_err());
    }

    #[test]
    fn a_locked_entry_is_reproduced_by_its_digest() {
        let entry = Locked {
            file: "calc.wasm".into(),
            source: "oci://127.0.0.1:5000/tools/calc:1.0".into(),
            tag: Some("1.0".into()),
            digest: Some("sha256:ab".into()),
            sha256: "x".into(),
            signer: None,
            installed: "t".into(),
        };
        assert_eq!(
            locked_source(&entry).unwrap(),
            "oci://127.0.0.1:5000/tools/calc@sha256:ab"
        );
    }
}
