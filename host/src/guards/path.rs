//! The path guard: does a workspace-relative path stay inside the workspace?
//!
//! Resolved with cap-std, never `std::fs`: a tool with write access can plant
//! a symlink that points outside, and cap-std refuses to follow one out of
//! the directory it was opened on.

use crate::error::Error;
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use std::io::ErrorKind;
use std::path::{Component, Path};

#[derive(Debug)]
pub(super) struct Workspace {
    dir: Dir,
}

impl Workspace {
    pub fn open(path: &Path) -> Result<Workspace, Error> {
        let dir = Dir::open_ambient_dir(path, ambient_authority()).map_err(|source| {
            Error::Directory {
                what: "workspace",
                path: path.to_owned(),
                source,
            }
        })?;
        Ok(Workspace { dir })
    }

    /// `Ok` if `text` names a place inside the workspace (existing or not);
    /// otherwise why not.
    pub fn check(&self, text: &str) -> Result<(), String> {
        let path = Path::new(text);
        if path.is_absolute() {
            return Err("is an absolute path; give a path relative to the workspace root".into());
        }
        let mut depth: i64 = 0;
        for component in path.components() {
            match component {
                Component::ParentDir => depth -= 1,
                Component::Normal(_) => depth += 1,
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => {
                    return Err("is not a relative path".into());
                }
            }
            if depth < 0 {
                return Err("leads out of the workspace with `..`".into());
            }
        }
        // Resolve the longest part that exists: symlinks live there.
        let mut existing = path;
        loop {
            if existing.as_os_str().is_empty() {
                return Ok(());
            }
            match self.dir.canonicalize(existing) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == ErrorKind::NotFound => match existing.parent() {
                    Some(parent) => existing = parent,
                    None => return Ok(()),
                },
                Err(e) => {
                    return Err(format!(
                        "cannot be resolved inside the workspace (`{}`: {e}); a symlink may point outside it",
                        existing.display()
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("ws/src")).unwrap();
        std::fs::write(root.path().join("outside.txt"), "x").unwrap();
        let ws = Workspace::open(&root.path().join("ws")).unwrap();
        (root, ws)
    }

    #[test]
    fn paths_inside_pass_existing_or_not() {
        let (_root, ws) = workspace();
        for ok in [".", "src", "src/new/file.rs", "./src/../src/x", "new.txt"] {
            assert_eq!(ws.check(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn absolute_and_dotdot_paths_are_refused() {
        let (_root, ws) = workspace();
        assert!(ws.check("/etc/passwd").unwrap_err().contains("absolute"));
        for bad in [
            "..",
            "../outside.txt",
            "src/../../outside.txt",
            "missing/../../x",
        ] {
            assert!(ws.check(bad).unwrap_err().contains(".."), "{bad}");
        }
    }

    #[test]
    fn symlinks_out_are_refused_even_when_planted_inside() {
        let (root, ws) = workspace();
        let inside = root.path().join("ws");
        std::os::unix::fs::symlink(root.path().join("outside.txt"), inside.join("abs_link"))
            .unwrap();
        std::os::unix::fs::symlink("../outside.txt", inside.join("rel_link")).unwrap();
        std::os::unix::fs::symlink(root.path(), inside.join("dir_link")).unwrap();
        std::os::unix::fs::symlink("src", inside.join("ok_link")).unwrap();
        for bad in [
            "abs_link",
            "rel_link",
            "dir_link/outside.txt",
            "dir_link/new.txt",
        ] {
            assert!(ws.check(bad).is_err(), "{bad} should be refused");
        }
        assert_eq!(ws.check("ok_link/file.rs"), Ok(()));
    }
}
