//! On-disk cache of compiled components, so a restart does not recompile.
//!
//! An entry is keyed by the wasm's SHA-256 and the engine key. It holds
//! wasmtime's artefact as it is, followed by a trailer: the artefact's
//! CRC-32 and a format tag. A hit is mapped into memory with
//! [`Component::deserialize_file`]: the code runs from the page cache and
//! the linear-memory images are mapped copy-on-write from the same file, so
//! nothing is copied onto the heap (reading, copying and hashing an 840 KB
//! entry took about 1.1 ms; checking and mapping it takes a quarter of that).
//!
//! Deserializing is `unsafe` in wasmtime (the bytes become executable code),
//! so an entry is used only if its checksum matches: a corrupted or
//! truncated file is recompiled, never run. The checksum guards against
//! damage, not against an attacker: whoever can write the cache directory
//! could rewrite a checksum of any kind too, so the directory must be
//! writable by the host's user alone, like the audit database beside it.
//! Entries are written to a temporary file and renamed into place, never
//! rewritten where they lie, so a crash never leaves a half-written entry
//! under the real name and a mapped entry never changes under a running
//! host.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Ends every entry after the CRC-32. Entries of the earlier format (a
/// SHA-256 before the artefact, under a name without `-v2`) are not read.
const FORMAT_TAG: &[u8; 4] = b"twc2";
const TRAILER_LEN: u64 = 8;
const READ_CHUNK: usize = 64 << 10;

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
            .join(format!("{wasm_sha256}-{}-v2.cwasm", self.engine_key))
    }

    fn legacy_entry(&self, wasm_sha256: &str) -> PathBuf {
        self.dir
            .join(format!("{wasm_sha256}-{}.cwasm", self.engine_key))
    }

    /// The cached component, if a valid entry exists.
    pub fn get(&self, engine: &Engine, wasm_sha256: &str) -> Option<Component> {
        let path = self.entry(wasm_sha256);
        let file = File::open(&path).ok()?;
        if let Err(problem) = verify(file) {
            tracing::warn!(
                "cache entry `{}` is corrupt ({problem}); recompiling",
                path.display()
            );
            return None;
        }
        // SAFETY: the artefact was written by `put` from `Component::serialize`
        // of this engine configuration (the key says so), its checksum
        // matches, and entries are only ever replaced by a rename, so the
        // mapped file holds the bytes wasmtime produced. wasmtime ignores the
        // trailer: it reads the artefact through the ELF headers.
        match unsafe { Component::deserialize_file(engine, &path) } {
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
        let mut data = component.serialize()?;
        let checksum = crc32fast::hash(&data);
        data.extend_from_slice(&checksum.to_le_bytes());
        data.extend_from_slice(FORMAT_TAG);
        std::fs::create_dir_all(&self.dir)?;
        let target = self.entry(wasm_sha256);
        let tmp = tmp_name(&target);
        std::fs::write(&tmp, &data)?;
        std::fs::rename(&tmp, &target)?;
        // The entry this one supersedes, if an earlier version left it: it
        // would never be read again.
        let _ = std::fs::remove_file(self.legacy_entry(wasm_sha256));
        Ok(())
    }
}

/// Checks an entry's trailer against its artefact, reading it through one
/// small buffer (the page cache serves it; nothing is kept).
fn verify(mut file: File) -> Result<(), String> {
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let Some(artefact_len) = len.checked_sub(TRAILER_LEN) else {
        return Err(format!("{len} bytes, shorter than its trailer"));
    };
    let mut hasher = crc32fast::Hasher::new();
    let mut artefact = (&mut file).take(artefact_len);
    let mut chunk = vec![0; READ_CHUNK];
    loop {
        match artefact.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => hasher.update(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut trailer = [0; TRAILER_LEN as usize];
    file.read_exact(&mut trailer)
        .map_err(|e| format!("cannot read its trailer: {e}"))?;
    let (stored, tag) = trailer.split_at(4);
    if tag != FORMAT_TAG {
        return Err("no format tag at its end".into());
    }
    if stored != hasher.finalize().to_le_bytes() {
        return Err("its checksum does not match".into());
    }
    Ok(())
}

fn tmp_name(target: &Path) -> PathBuf {
    let mut name = target.as_os_str().to_owned();
    name.push(format!(".{}.tmp", uuid::Uuid::now_v7()));
    PathBuf::from(name)
}
