//! Compiled plugins shared by the tests' hosts. Every `TestHost` has a
//! fresh state directory, so each compiled its plugins again, with Winch and
//! then Cranelift: 60 % of this binary's CPU before the pool.
//!
//! A host's state starts with the pool's cache key and a hard link to each
//! entry the pool holds; when the host is dropped, the entries it compiled
//! join the pool. The host replaces an entry by a rename and never rewrites
//! one in place, so a link never changes under another host, and an entry a
//! test damages fails its MAC and is recompiled, never run. The cache's own
//! tests use `TestHost::cold`: such hosts neither take from the pool nor
//! give to it.
//!
//! The pool is this process's (`toolwarden-tests-compiled-PID` in the temp
//! directory); the next run removes the pools of processes that are gone.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const PREFIX: &str = "toolwarden-tests-compiled-";
/// As the host names its cache key and directory in a state directory.
const KEY_FILE: &str = "cache.key";
const CACHE_DIR: &str = "cache";
/// Only finished entries are shared: the host writes `*.cwasm` by renaming
/// a temporary into place.
const ENTRY_EXTENSION: &str = "cwasm";

/// The pool's directory, made on first use; `None` if it cannot be, and
/// then every host compiles as it would alone.
fn pool() -> Option<&'static Path> {
    static POOL: OnceLock<Option<PathBuf>> = OnceLock::new();
    POOL.get_or_init(|| {
        let temp = std::env::temp_dir();
        remove_abandoned(&temp);
        let dir = temp.join(format!("{PREFIX}{}", std::process::id()));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir.join(CACHE_DIR))
            .ok()?;
        let mut key = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut random| std::io::Read::read_exact(&mut random, &mut key))
            .ok()?;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.join(KEY_FILE))
            .and_then(|mut file| file.write_all(&key))
            .ok()?;
        Some(dir)
    })
    .as_deref()
}

fn remove_abandoned(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn entries(dir: &Path) -> impl Iterator<Item = PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == ENTRY_EXTENSION))
}

/// Gives the fresh state directory `state` the pool's key and entries.
pub fn seed(state: &Path) {
    let Some(pool) = pool() else { return };
    let cache = state.join(CACHE_DIR);
    if std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&cache)
        .is_err()
        || std::fs::copy(pool.join(KEY_FILE), state.join(KEY_FILE)).is_err()
    {
        return;
    }
    for entry in entries(&pool.join(CACHE_DIR)) {
        if let Some(name) = entry.file_name() {
            let _ = std::fs::hard_link(&entry, cache.join(name));
        }
    }
}

/// Adds to the pool what the host with state directory `state` compiled.
/// An entry the pool already has stays as it is.
pub fn harvest(state: &Path) {
    let Some(pool) = pool() else { return };
    for entry in entries(&state.join(CACHE_DIR)) {
        if let Some(name) = entry.file_name() {
            let _ = std::fs::hard_link(&entry, pool.join(CACHE_DIR).join(name));
        }
    }
}
