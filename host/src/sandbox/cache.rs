//! On-disk cache of compiled components, so a restart does not recompile.
//!
//! An entry is keyed by the wasm's SHA-256 and the engine key, and starts
//! with the SHA-256 of the artefact that follows. Deserializing is `unsafe`
//! in wasmtime (the bytes become executable code), so an entry is used only
//! if that checksum matches: a corrupted or truncated file is recompiled,
//! never run. Entries are written to a temporary file and renamed into place,
//! so a crash never leaves a half-written entry under the real name.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

const CHECKSUM_LEN: usize = 32;

#[derive(Debug)]
pub(super) struct Cache {
    dir: PathBuf,
    engine_key: String,
}

impl Cache {
    pub fn new(dir: PathBuf, engine_key: String) -> Cache {
        Cache { dir, engine_key }
    }

    fn entry(&self, wasm_sha256: &str) -> PathBuf {
        self.dir
            .join(format!("{wasm_sha256}-{}.cwasm", self.engine_key))
    }

    /// The cached component, if a valid entry exists.
    pub fn get(&self, engine: &Engine, wasm_sha256: &str) -> Option<Component> {
        let path = self.entry(wasm_sha256);
        let bytes = std::fs::read(&path).ok()?;
        if bytes.len() < CHECKSUM_LEN
            || Sha256::digest(&bytes[CHECKSUM_LEN..])[..] != bytes[..CHECKSUM_LEN]
        {
            tracing::warn!("cache entry `{}` is corrupt; recompiling", path.display());
            return None;
        }
        // SAFETY: the artefact was written by `put` from `Component::serialize`
        // of this engine configuration (the key says so) and its checksum
        // matches, so these are the bytes wasmtime produced.
        match unsafe { Component::deserialize(engine, &bytes[CHECKSUM_LEN..]) } {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!(
                    "cache entry `{}` cannot be loaded ({e}); recompiling",
                    path.display()
                );
                None
            }
        }
    }

    /// Stores a compiled component. Failure only costs a recompile later.
    pub fn put(&self, wasm_sha256: &str, component: &Component) {
        if let Err(e) = self.try_put(wasm_sha256, component) {
            tracing::warn!(
                "cannot write the compile cache in `{}`: {e}",
                self.dir.display()
            );
        }
    }

    fn try_put(
        &self,
        wasm_sha256: &str,
        component: &Component,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let artefact = component.serialize()?;
        std::fs::create_dir_all(&self.dir)?;
        let mut data = Vec::with_capacity(CHECKSUM_LEN + artefact.len());
        data.extend_from_slice(&Sha256::digest(&artefact));
        data.extend_from_slice(&artefact);
        let target = self.entry(wasm_sha256);
        let tmp = tmp_name(&target);
        std::fs::write(&tmp, &data)?;
        std::fs::rename(&tmp, &target)?;
        Ok(())
    }
}

fn tmp_name(target: &Path) -> PathBuf {
    let mut name = target.as_os_str().to_owned();
    name.push(format!(".{}.tmp", uuid::Uuid::now_v7()));
    PathBuf::from(name)
}
