//! On-disk cache of compiled components, so a restart does not recompile.
//!
//! An entry is keyed by the wasm's SHA-256 and the engine key. It holds
//! wasmtime's artefact as it is, followed by a trailer: a MAC over the
//! artefact (keyed BLAKE3) and a format tag. A hit is mapped into memory
//! with [`Component::deserialize_file`]: the code runs from the page cache
//! and the linear-memory images are mapped copy-on-write from the same
//! file, so nothing is copied onto the heap.
//!
//! Deserializing is `unsafe` in wasmtime (the bytes become executable code),
//! so an entry is used only if its MAC checks out under the key in
//! `<state>/cache.key` (32 random bytes, mode 0600, made on first use). A
//! corrupted or truncated file, or one written by anyone who does not hold
//! the key (another user who planted entries in a cache directory they
//! could write), is recompiled and replaced, never run. BLAKE3 rather than
//! HMAC-SHA-256: every warm start checks every entry, and BLAKE3 reads
//! several times faster on one core. Without a usable key the cache is off
//! and every plugin compiles.
//!
//! Entries are written to a temporary file (mode 0600) and renamed into
//! place, never rewritten where they lie, so a crash never leaves a
//! half-written entry under the real name and a mapped entry never changes
//! under a running host.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Ends every entry after the MAC. Entries of earlier formats (`-v2`: a
/// CRC-32 anyone could recompute) are not read.
const FORMAT_TAG: &[u8; 4] = b"twc3";
const MAC_LEN: usize = blake3::OUT_LEN;
const TRAILER_LEN: u64 = (MAC_LEN + FORMAT_TAG.len()) as u64;
const READ_CHUNK: usize = 64 << 10;
/// The cache key's file name in the state directory.
pub const KEY_FILE: &str = "cache.key";
const KEY_LEN: usize = blake3::KEY_LEN;

#[derive(Debug)]
pub(super) struct Cache {
    dir: PathBuf,
    engine_key: String,
    /// As [`CacheDir`] read it.
    key: Option<[u8; KEY_LEN]>,
}

/// The key in `state_dir`, made on first use. Two processes starting at
/// once agree on one: only one can create the file.
fn load_key(state_dir: &Path) -> io::Result<[u8; KEY_LEN]> {
    let path = state_dir.join(KEY_FILE);
    for _ in 0..2 {
        match std::fs::read(&path) {
            Ok(bytes) => {
                return <[u8; KEY_LEN]>::try_from(bytes.as_slice()).map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "`{}` is not a {KEY_LEN}-byte key; delete it to make a new one",
                            path.display()
                        ),
                    )
                });
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let mut key = [0u8; KEY_LEN];
        getrandom::fill(&mut key).map_err(io::Error::other)?;
        match crate::private_file::options()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                file.write_all(&key)?;
                file.sync_all()?;
                return Ok(key);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "`{}` keeps changing",
        path.display()
    )))
}

/// The cache directory and its key, read once and shared by the cache of
/// every engine (each names its entries by its own engine key).
#[derive(Debug)]
pub(super) struct CacheDir {
    dir: PathBuf,
    /// `None`: no key could be read or made, so nothing is cached.
    key: Option<[u8; KEY_LEN]>,
}

impl CacheDir {
    /// `state_dir/cache`, keyed by `state_dir/cache.key`.
    pub fn open(state_dir: &Path) -> CacheDir {
        let key = match load_key(state_dir) {
            Ok(key) => Some(key),
            Err(e) => {
                tracing::warn!("the compile cache is off: cannot use its key: {e}");
                None
            }
        };
        let dir = state_dir.join("cache");
        remove_stale_temporaries(&dir);
        CacheDir { dir, key }
    }

    /// The cache of code compiled under `engine_key`.
    pub fn for_engine(&self, engine_key: String) -> Cache {
        Cache {
            dir: self.dir.clone(),
            engine_key,
            key: self.key,
        }
    }
}

impl Cache {
    /// Where the entry for `wasm_sha256` lives, whether or not it exists.
    pub fn entry(&self, wasm_sha256: &str) -> PathBuf {
        self.dir
            .join(format!("{wasm_sha256}-{}-v3.cwasm", self.engine_key))
    }

    fn superseded(&self, wasm_sha256: &str) -> [PathBuf; 2] {
        [
            self.dir
                .join(format!("{wasm_sha256}-{}.cwasm", self.engine_key)),
            self.dir
                .join(format!("{wasm_sha256}-{}-v2.cwasm", self.engine_key)),
        ]
    }

    /// The cached component, if a valid entry exists.
    pub fn get(&self, engine: &Engine, wasm_sha256: &str) -> Option<Component> {
        let key = self.key.as_ref()?;
        let path = self.entry(wasm_sha256);
        let file = File::open(&path).ok()?;
        if let Err(problem) = verify(file, key) {
            tracing::warn!(
                "cache entry `{}` is not usable ({problem}); recompiling",
                path.display()
            );
            return None;
        }
        // SAFETY: the artefact was written by `put` from `Component::serialize`
        // of this engine configuration (the key says so), its MAC under this
        // state directory's secret key matches, and entries are only ever
        // replaced by a rename, so the mapped file holds the bytes wasmtime
        // produced. wasmtime ignores the trailer: it reads the artefact
        // through the ELF headers.
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
        let Some(key) = &self.key else { return };
        if let Err(e) = self.try_put(key, wasm_sha256, component) {
            tracing::warn!(
                "cannot write the compile cache in `{}`: {e}",
                self.dir.display()
            );
        }
    }

    fn try_put(
        &self,
        key: &[u8; KEY_LEN],
        wasm_sha256: &str,
        component: &Component,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let mut data = component.serialize()?;
        let mac = blake3::keyed_hash(key, &data);
        data.extend_from_slice(mac.as_bytes());
        data.extend_from_slice(FORMAT_TAG);
        crate::private_file::create_dir(&self.dir)?;
        crate::private_file::replace(&self.entry(wasm_sha256), &data)?;
        // The entries this one supersedes, if an earlier version left them:
        // they would never be read again.
        for old in self.superseded(wasm_sha256) {
            let _ = std::fs::remove_file(old);
        }
        Ok(())
    }
}

/// A temporary file older than this was left by a process that stopped
/// while writing an entry (a command exits while its background compiles
/// are still writing); no write takes anywhere near this long.
const STALE_TEMPORARY: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes such leftovers, so they do not pile up; best effort.
fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > STALE_TEMPORARY);
        if stale && path.extension().is_some_and(|ext| ext == "tmp") {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Checks an entry's trailer against its artefact, reading it through one
/// small buffer (the page cache serves it; nothing is kept).
fn verify(mut file: File, key: &[u8; KEY_LEN]) -> Result<(), String> {
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let Some(artefact_len) = len.checked_sub(TRAILER_LEN) else {
        return Err(format!("{len} bytes, shorter than its trailer"));
    };
    let mut hasher = blake3::Hasher::new_keyed(key);
    let mut artefact = (&mut file).take(artefact_len);
    let mut chunk = vec![0; READ_CHUNK];
    loop {
        match artefact.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&chunk[..n]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut trailer = [0; TRAILER_LEN as usize];
    file.read_exact(&mut trailer)
        .map_err(|e| format!("cannot read its trailer: {e}"))?;
    let (stored, tag) = trailer.split_at(MAC_LEN);
    if tag != FORMAT_TAG {
        return Err("no format tag at its end".into());
    }
    // `Hash`'s equality is constant-time.
    let stored = <[u8; MAC_LEN]>::try_from(stored).map_err(|e| e.to_string())?;
    if blake3::Hash::from_bytes(stored) != hasher.finalize() {
        return Err(
            "its MAC does not match: it was damaged, or written without this host's key".into(),
        );
    }
    Ok(())
}
