//! Trust on first use for the config file, as direnv and mise do.
//!
//! A config file sits where the tools it governs may write (the default is
//! `<workspace>/toolwarden.toml`), so a host must not simply obey whatever
//! the file says at its next start. The host keeps, per config file, the
//! SHA-256 and a copy of the text it was told to trust, in
//! `<state>/trusted/` (mode 0700, files 0600, replaced atomically). A file
//! whose text differs from its record is untrusted until a person reviews
//! the change (`policy diff`) and trusts it (`policy trust`).
//!
//! This module only reads and writes trust records; which commands need a
//! trusted file, and how a person is asked, is the CLI's business.

use sha2::{Digest, Sha256};
use std::io;
use std::path::{Path, PathBuf};

/// Where a config file stands with its trust record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// The text is the one last trusted.
    Trusted,
    /// No record: the file was never trusted.
    Unrecorded,
    /// The file differs from the text last trusted, which is kept here.
    Changed { trusted: String },
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    path: PathBuf,
    sha256: String,
    text: String,
}

fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The record of `file`: one per canonical path, so each workspace's file
/// has its own.
fn record_path(state_dir: &Path, file: &Path) -> PathBuf {
    let canonical = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_owned());
    let key = sha256(&canonical.to_string_lossy());
    state_dir.join("trusted").join(format!("{key}.json"))
}

/// How `text`, read from `file`, stands with its record.
pub fn standing(state_dir: &Path, file: &Path, text: &str) -> io::Result<Standing> {
    let bytes = match std::fs::read(record_path(state_dir, file)) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Standing::Unrecorded),
        Err(e) => return Err(e),
    };
    let record: Record = serde_json::from_slice(&bytes).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the trust record is damaged ({e}); run `toolwarden policy trust` again"),
        )
    })?;
    Ok(if record.sha256 == sha256(text) {
        Standing::Trusted
    } else {
        Standing::Changed {
            trusted: record.text,
        }
    })
}

/// Records `text`, read from `file`, as trusted.
pub fn trust(state_dir: &Path, file: &Path, text: &str) -> io::Result<()> {
    let target = record_path(state_dir, file);
    crate::private_file::create_dir(&state_dir.join("trusted"))?;
    let record = Record {
        path: std::fs::canonicalize(file).unwrap_or_else(|_| file.to_owned()),
        sha256: sha256(text),
        text: text.to_owned(),
    };
    let bytes = serde_json::to_vec_pretty(&record).map_err(io::Error::other)?;
    crate::private_file::replace(&target, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_trusted_as_it_was_recorded_and_no_longer_once_it_changes() {
        let state = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let file = ws.path().join("toolwarden.toml");
        std::fs::write(&file, "a").unwrap();
        assert_eq!(
            standing(state.path(), &file, "a").unwrap(),
            Standing::Unrecorded
        );
        trust(state.path(), &file, "a").unwrap();
        assert_eq!(
            standing(state.path(), &file, "a").unwrap(),
            Standing::Trusted
        );
        assert_eq!(
            standing(state.path(), &file, "b").unwrap(),
            Standing::Changed {
                trusted: "a".into()
            }
        );
        let other = ws.path().join("other.toml");
        std::fs::write(&other, "a").unwrap();
        assert_eq!(
            standing(state.path(), &other, "a").unwrap(),
            Standing::Unrecorded
        );
    }
}
