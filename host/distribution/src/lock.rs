//! `plugins.lock`, beside the plugins: what each installed plugin came
//! from (its source, tag and manifest digest), the SHA-256 of its bytes,
//! who signed it and when it was installed. `install --locked` reproduces
//! exactly these digests. TOML, written whole and renamed into place, so a
//! crash leaves the old file or the new one, never half of one.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The lock file's name inside the plugins directory.
pub const LOCK_FILE: &str = "plugins.lock";

/// One installed plugin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locked {
    /// The file in the plugins directory (`calc.wasm`).
    pub file: String,
    /// What was asked for: `oci://REGISTRY/REPO:TAG`, `oci://...@sha256:...`,
    /// or a local file.
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// The manifest's digest, for a plugin from a registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// SHA-256 of the component's bytes.
    pub sha256: String,
    /// The minisign key id that signed it, if it is signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// When it was installed (UTC).
    pub installed: String,
}

#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    #[serde(default, rename = "plugin")]
    pub plugins: Vec<Locked>,
}

pub fn path(plugins_dir: &Path) -> PathBuf {
    plugins_dir.join(LOCK_FILE)
}

/// The lock file, or an empty one when there is none.
pub fn read(plugins_dir: &Path) -> Result<Lock, String> {
    let file = path(plugins_dir);
    match std::fs::read_to_string(&file) {
        Ok(text) => {
            toml::from_str(&text).map_err(|e| format!("`{}`: {}", file.display(), e.message()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Lock::default()),
        Err(e) => Err(format!("`{}`: {e}", file.display())),
    }
}

/// Writes `lock` in place of the old file, all at once.
pub fn write(plugins_dir: &Path, lock: &Lock) -> Result<(), String> {
    let file = path(plugins_dir);
    let text = format!(
        "# Written by `toolwarden install`; `toolwarden install --locked` reproduces it.\n{}",
        toml::to_string(lock).map_err(|e| e.to_string())?
    );
    let staged = plugins_dir.join(format!(".{LOCK_FILE}.{}", std::process::id()));
    std::fs::write(&staged, text)
        .and_then(|()| std::fs::rename(&staged, &file))
        .map_err(|e| {
            let _ = std::fs::remove_file(&staged);
            format!("`{}`: {e}", file.display())
        })
}

impl Lock {
    /// Records `entry`, replacing the one for the same file.
    pub fn record(&mut self, entry: Locked) {
        self.plugins.retain(|p| p.file != entry.file);
        self.plugins.push(entry);
        self.plugins.sort_by(|a, b| a.file.cmp(&b.file));
    }

    pub fn get(&self, file: &str) -> Option<&Locked> {
        self.plugins.iter().find(|p| p.file == file)
    }

    pub fn remove(&mut self, file: &str) -> bool {
        let before = self.plugins.len();
        self.plugins.retain(|p| p.file != file);
        self.plugins.len() != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_reads_back_as_written_and_replaces_entries_by_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), Lock::default());
        let entry = |file: &str, sha: &str| Locked {
            file: file.into(),
            source: "oci://127.0.0.1:5000/tools/calc:1.0".into(),
            tag: Some("1.0".into()),
            digest: Some("sha256:abc".into()),
            sha256: sha.into(),
            signer: None,
            installed: "2026-12-02 05:00:00Z".into(),
        };
        let mut lock = Lock::default();
        lock.record(entry("calc.wasm", "1"));
        lock.record(entry("a.wasm", "2"));
        lock.record(entry("calc.wasm", "3"));
        write(dir.path(), &lock).unwrap();
        let back = read(dir.path()).unwrap();
        assert_eq!(back, lock);
        assert_eq!(back.plugins.len(), 2);
        assert_eq!(back.get("calc.wasm").unwrap().sha256, "3");
        std::fs::write(path(dir.path()), "[[plugin]]\nfile = 1\n").unwrap();
        assert!(read(dir.path()).unwrap_err().contains("plugins.lock"));
    }
}
