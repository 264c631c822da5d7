//! Files and directories only the host's user may read: everything the host
//! keeps in its state directory (audit head, trust records, compile cache
//! and its key, the database). One place says how such a file is created
//! (mode 0600, a directory 0700) and how it is replaced: written whole
//! under a fresh temporary name beside its target, then renamed over it, so
//! a reader sees the old file or the new one, never a torn one.
//!
//! A leaf: it knows paths and modes, nothing of what the files hold.

use std::fs::{DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Options that create a file readable and writable by its owner alone.
pub fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(0o600);
    options
}

/// Creates `dir` (and missing parents) with mode 0700.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Replaces `target` with `bytes` atomically; a temporary file left by a
/// failed write is removed.
pub fn replace(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let temporary = temporary_beside(target);
    let written = options()
        .write(true)
        .create_new(true)
        .open(&temporary)
        .and_then(|mut file| file.write_all(bytes))
        .and_then(|()| std::fs::rename(&temporary, target));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// `target.<uuid>.tmp`: unique across threads and processes.
fn temporary_beside(target: &Path) -> PathBuf {
    let mut name = target.as_os_str().to_owned();
    name.push(format!(".{}.tmp", uuid::Uuid::now_v7()));
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_replaced_file_is_private_and_leaves_no_temporary_behind() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("made");
        replace(&target, b"one").unwrap();
        replace(&target, b"two").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"two");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let missing = dir.path().join("no/such/dir/file");
        assert!(replace(&missing, b"x").is_err());
    }
}
