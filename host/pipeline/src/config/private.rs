//! The host's own directories must be its own: the state directory (the
//! approvals, the audit trail, and compile-cache entries the host maps as
//! native code) and the plugins directory (code the host loads).
//!
//! Starting is refused when one of them is writable by group or others, or
//! owned by another user: whoever can write there controls the host. The
//! state directory is also kept at mode 0700 (tightened if it is the
//! user's own and looser), so that nobody else can read what it records.
//! This module only checks and tightens modes; it never creates files.

use crate::error::Error;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// The user this process runs as.
fn me() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Refuses a directory that another user owns or that group or others can
/// write. A directory that does not exist passes: whoever needs it reports
/// that with its own message.
pub fn not_shared(what: &'static str, dir: &Path) -> Result<(), Error> {
    let meta = match std::fs::metadata(dir) {
        Ok(meta) => meta,
        Err(_) => return Ok(()),
    };
    let unsafe_dir = |problem: String, fix: String| Error::UnsafePermissions {
        what,
        path: dir.to_owned(),
        problem,
        fix,
    };
    if meta.uid() != me() {
        return Err(unsafe_dir(
            format!(
                "is owned by user {}, not by the user running the host ({})",
                meta.uid(),
                me()
            ),
            format!(
                "run `chown {} {}` or choose a directory of your own",
                me(),
                dir.display()
            ),
        ));
    }
    let mode = meta.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(unsafe_dir(
            format!(
                "can be written by {} (mode {:o})",
                writers(mode),
                mode & 0o777
            ),
            format!("run `chmod go-w {}`", dir.display()),
        ));
    }
    Ok(())
}

fn writers(mode: u32) -> &'static str {
    match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (true, true) => "its group and everyone else",
        (true, false) => "its group",
        (false, true) | (false, false) => "everyone",
    }
}

/// Checks the state directory and its compile cache, and keeps the state
/// directory at mode 0700.
pub fn state_dir(dir: &Path) -> Result<(), Error> {
    not_shared("state directory", dir)?;
    not_shared("compile cache", &dir.join("cache"))?;
    let meta = std::fs::metadata(dir).map_err(|source| Error::Directory {
        what: "state directory",
        path: dir.to_owned(),
        source,
    })?;
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(
            |source| Error::Directory {
                what: "state directory",
                path: dir.to_owned(),
                source,
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(dir: &Path, mode: u32) {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_directory_others_can_write_is_refused_with_the_chmod_that_fixes_it() {
        let tmp = tempfile::tempdir().unwrap();
        for bad in [0o775, 0o757, 0o777] {
            mode(tmp.path(), bad);
            let err = not_shared("plugins directory", tmp.path()).unwrap_err();
            assert_eq!(err.code(), "UNSAFE_PERMISSIONS");
            assert!(err.hint().contains("chmod go-w"), "{}", err.hint());
        }
        mode(tmp.path(), 0o755);
        assert!(not_shared("plugins directory", tmp.path()).is_ok());
        assert!(not_shared("plugins directory", &tmp.path().join("missing")).is_ok());
    }

    #[test]
    fn the_state_directory_is_tightened_to_0700() {
        let tmp = tempfile::tempdir().unwrap();
        mode(tmp.path(), 0o755);
        state_dir(tmp.path()).unwrap();
        let now = std::fs::metadata(tmp.path()).unwrap().permissions().mode();
        assert_eq!(now & 0o777, 0o700);
    }

    #[test]
    fn a_directory_of_another_user_is_refused() {
        if me() != 0 {
            // Only root can give a directory away (CI and the development
            // machines run the suite as root).
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        std::os::unix::fs::chown(tmp.path(), Some(65534), None).unwrap();
        let err = not_shared("state directory", tmp.path()).unwrap_err();
        assert!(err.to_string().contains("owned by user 65534"), "{err}");
        assert!(err.hint().contains("chown"), "{}", err.hint());
    }
}
