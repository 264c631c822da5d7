//! Resolving one workspace-relative path to where it really leads.
//!
//! Walks the path one component at a time through a cap-std [`Dir`] opened
//! on the workspace, as the kernel would: a symlink is read and its target
//! spliced in where it stood, `..` after a link goes to the parent of the
//! link's target, a component that does not exist (yet) is kept as written.
//! A link whose target is an absolute host path inside the workspace is
//! followed too (cap-std and WASI refuse to follow those, so the plugin
//! could not act on the path as written anyway). Anything that would leave
//! the workspace is refused, never followed: this module reads link
//! contents and metadata, and never opens what a path names.

use cap_std::fs::Dir;
use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

/// Links followed in one path before it counts as a loop; Linux's own
/// limit (`MAXSYMLINKS`).
pub const MAX_LINK_HOPS: usize = 40;

/// Why a path cannot be resolved inside the workspace. Worded to follow
/// "argument `/path` (`text`) ".
pub type Refusal = String;

/// Resolves `text` inside `dir`, whose host path is `root` (canonical).
/// Returns the workspace-relative path with no `.`, `..` or symlink in it
/// (`.` for the workspace itself).
pub fn resolve(dir: &Dir, root: &Path, text: &str) -> Result<String, Refusal> {
    let path = Path::new(text);
    if path.is_absolute() {
        return Err("is an absolute path; give a path relative to the workspace root".into());
    }
    let mut pending: Vec<String> = Vec::new();
    push_components(&mut pending, path)?;
    let mut resolved: Vec<String> = Vec::new();
    let mut hops = 0;
    // `pending` is a stack: its last element is the next component.
    while let Some(name) = pending.pop() {
        if name == ".." {
            if resolved.pop().is_none() {
                return Err(if hops == 0 {
                    "leads out of the workspace with `..`".into()
                } else {
                    "leads out of the workspace through a symlink".into()
                });
            }
            continue;
        }
        resolved.push(name);
        let here = joined(&resolved);
        match dir.symlink_metadata(&here) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_LINK_HOPS {
                    return Err(format!(
                        "passes through more than {MAX_LINK_HOPS} symlinks (a symlink loop?)"
                    ));
                }
                let target = dir.read_link_contents(&here).map_err(|e| {
                    format!("cannot be resolved inside the workspace (`{here}`: {e})")
                })?;
                resolved.pop();
                let target = if target.is_absolute() {
                    // A link to an absolute host path counts only if that
                    // path is inside the workspace; it then restarts there.
                    let inside = target.strip_prefix(root).map_err(|_| {
                        format!(
                            "leads out of the workspace through the symlink `{here}` (to `{}`)",
                            target.display()
                        )
                    })?;
                    resolved.clear();
                    inside.to_path_buf()
                } else {
                    target
                };
                push_components(&mut pending, &target).map_err(|_| {
                    format!("cannot be resolved: the symlink `{here}` has an unusable target")
                })?;
            }
            Ok(_) => {}
            // Not there (yet), or a file used as a directory: the plugin
            // gets its own error when it acts on it, so the path is kept as
            // written from here on (a later `..` still applies lexically).
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {}
            Err(e) => {
                return Err(format!(
                    "cannot be resolved inside the workspace (`{here}`: {e}); a symlink may point outside it"
                ));
            }
        }
    }
    Ok(if resolved.is_empty() {
        ".".to_owned()
    } else {
        joined(&resolved)
    })
}

/// Pushes the components of `path` onto the stack so that its first
/// component is popped first.
fn push_components(pending: &mut Vec<String>, path: &Path) -> Result<(), Refusal> {
    let mut names = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => match name.to_str() {
                Some(name) => names.push(name.to_owned()),
                None => return Err("is not valid UTF-8".into()),
            },
            Component::ParentDir => names.push("..".to_owned()),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err("is not a relative path".into());
            }
        }
    }
    pending.extend(names.into_iter().rev());
    Ok(())
}

fn joined(parts: &[String]) -> String {
    parts.join("/")
}

/// The host path a resolved workspace-relative path names.
pub fn host_path(root: &Path, resolved: &str) -> PathBuf {
    if resolved == "." {
        root.to_owned()
    } else {
        root.join(resolved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cap_std::ambient_authority;
    use std::os::unix::fs::symlink;

    struct Fixture {
        _tmp: tempfile::TempDir,
        outside: PathBuf,
        root: PathBuf,
        dir: Dir,
    }

    impl Fixture {
        fn new() -> Fixture {
            let tmp = tempfile::tempdir().unwrap();
            let base = std::fs::canonicalize(tmp.path()).unwrap();
            let root = base.join("ws");
            std::fs::create_dir_all(root.join("src/deep")).unwrap();
            std::fs::create_dir_all(root.join("secrets")).unwrap();
            std::fs::write(root.join("secrets/key.env"), "k").unwrap();
            std::fs::write(base.join("outside.txt"), "x").unwrap();
            let dir = Dir::open_ambient_dir(&root, ambient_authority()).unwrap();
            Fixture {
                _tmp: tmp,
                outside: base.join("outside.txt"),
                root,
                dir,
            }
        }

        fn link(&self, target: impl AsRef<Path>, at: &str) {
            symlink(target, self.root.join(at)).unwrap();
        }

        fn resolve(&self, text: &str) -> Result<String, Refusal> {
            resolve(&self.dir, &self.root, text)
        }
    }

    #[test]
    fn plain_paths_resolve_to_their_normal_form_existing_or_not() {
        let f = Fixture::new();
        for (text, want) in [
            (".", "."),
            ("", "."),
            ("src", "src"),
            ("./src//deep/", "src/deep"),
            ("src/../secrets/key.env", "secrets/key.env"),
            ("src/new/file.rs", "src/new/file.rs"),
            ("missing/../x", "x"),
        ] {
            assert_eq!(f.resolve(text).as_deref(), Ok(want), "{text}");
        }
    }

    #[test]
    fn absolute_and_dotdot_paths_are_refused() {
        let f = Fixture::new();
        assert!(f.resolve("/etc/passwd").unwrap_err().contains("absolute"));
        for bad in ["..", "../outside.txt", "src/../../outside.txt", "a/../../x"] {
            assert!(f.resolve(bad).unwrap_err().contains(".."), "{bad}");
        }
    }

    #[test]
    fn links_inside_the_workspace_resolve_to_their_targets() {
        let f = Fixture::new();
        f.link("secrets", "docs");
        f.link("secrets/key.env", "key_link");
        f.link("docs", "chain1");
        f.link("chain1/key.env", "chain2");
        f.link("..", "src/up");
        f.link(f.root.join("secrets"), "abs_inside");
        f.link("../secrets/key.env", "src/rel_key");
        for (text, want) in [
            ("docs/key.env", "secrets/key.env"),
            ("docs/planted.txt", "secrets/planted.txt"),
            ("key_link", "secrets/key.env"),
            ("chain2", "secrets/key.env"),
            ("src/up/secrets/key.env", "secrets/key.env"),
            ("src/up", "."),
            ("abs_inside/key.env", "secrets/key.env"),
            ("src/rel_key", "secrets/key.env"),
            ("docs/../src", "src"),
        ] {
            assert_eq!(f.resolve(text).as_deref(), Ok(want), "{text}");
        }
    }

    #[test]
    fn a_dangling_link_resolves_to_where_a_write_would_land() {
        let f = Fixture::new();
        f.link("secrets/new.txt", "plant");
        assert_eq!(f.resolve("plant").as_deref(), Ok("secrets/new.txt"));
    }

    #[test]
    fn links_that_lead_out_or_loop_are_refused() {
        let f = Fixture::new();
        f.link(&f.outside, "abs_out");
        f.link("../outside.txt", "rel_out");
        f.link(f.root.parent().unwrap(), "dir_out");
        f.link("loop_b", "loop_a");
        f.link("loop_a", "loop_b");
        f.link("/workspace/secrets", "guest_abs");
        for bad in [
            "abs_out",
            "rel_out",
            "dir_out/outside.txt",
            "dir_out/new.txt",
            "guest_abs/key.env",
        ] {
            let why = f.resolve(bad).unwrap_err();
            assert!(why.contains("out of the workspace"), "{bad}: {why}");
        }
        assert!(f.resolve("loop_a").unwrap_err().contains("symlink loop"));
    }
}
