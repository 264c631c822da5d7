//! A private copy of the workspace to rehearse a call in, and the way a
//! rehearsed change is applied to the real one.
//!
//! [`Workspace::scratch`] copies the workspace (everything but the host's
//! own files) into a fresh directory of the state directory, reading it
//! through cap-std, so a link cannot bring anything from outside into the
//! copy; links are copied as links. It records what it copied
//! ([`Manifest`]). After a run, [`Scratch::changes`] walks the copy and
//! says what the call did to it ([`ChangeSet`]).
//!
//! [`Workspace::apply`] applies such a change to the workspace, after
//! checking that every path it touches still holds what it held when the
//! copy was made; it writes each file beside its place and renames it
//! there, and makes no link that would lead out.
//!
//! A copy larger than [`ScratchLimits`] allows is not made: the call is
//! then not rehearsed, and the approval says so.

use super::Workspace;
use super::change::{Change, ChangeSet, Manifest, Node};
use cap_std::fs::Dir;
use sha2::Digest;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Default bound of a copy: the workspace's files, in MiB.
pub const DEFAULT_MAX_MB: u64 = 64;
/// Default bound of a copy: files, links and directories.
pub const DEFAULT_MAX_ENTRIES: u64 = 10_000;

/// How much of a workspace may be copied to rehearse a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScratchLimits {
    pub max_bytes: u64,
    pub max_entries: u64,
}

impl Default for ScratchLimits {
    fn default() -> Self {
        ScratchLimits {
            max_bytes: DEFAULT_MAX_MB << 20,
            max_entries: DEFAULT_MAX_ENTRIES,
        }
    }
}

/// A copy of the workspace, removed when dropped.
#[derive(Debug)]
pub struct Scratch {
    root: PathBuf,
    before: Manifest,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.root) {
            tracing::warn!(
                "cannot remove the rehearsal copy `{}`: {e}",
                self.root.display()
            );
        }
    }
}

fn hash_reader(mut reader: impl Read) -> std::io::Result<(String, u64)> {
    let mut hasher = sha2::Sha256::new();
    let bytes = std::io::copy(&mut reader, &mut hasher)?;
    Ok((hex::encode(hasher.finalize()), bytes))
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// Every path under `dir` (but those `skip` says) and what stands there,
/// read through cap-std without following links; within `limits`, if
/// given (`Err` names the bound passed). Sockets, fifos and devices are
/// left out: nothing a tool should reach through a copy.
fn walk(
    dir: &Dir,
    skip: impl Fn(&str) -> bool,
    limits: Option<ScratchLimits>,
) -> Result<Manifest, String> {
    let mut manifest = Manifest::new();
    let mut bytes = 0u64;
    let mut pending = vec![String::new()];
    while let Some(sub) = pending.pop() {
        let entries = if sub.is_empty() {
            dir.entries()
        } else {
            dir.read_dir(&sub)
        }
        .map_err(|e| format!("cannot read `{sub}`: {e}"))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot read `{sub}`: {e}"))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                return Err(format!("`{sub}` holds a name that is not UTF-8"));
            };
            let rel = join(&sub, &name);
            if skip(&rel) {
                continue;
            }
            let unreadable = |e: std::io::Error| format!("cannot read `{rel}`: {e}");
            let kind = entry.file_type().map_err(unreadable)?;
            let node = if kind.is_symlink() {
                let target = dir.read_link_contents(&rel).map_err(unreadable)?;
                Node::Link {
                    target: target.to_string_lossy().into_owned(),
                }
            } else if kind.is_dir() {
                pending.push(rel.clone());
                Node::Dir
            } else if kind.is_file() {
                let (sha256, len) =
                    hash_reader(dir.open(&rel).map_err(unreadable)?).map_err(unreadable)?;
                bytes += len;
                Node::File { sha256, bytes: len }
            } else {
                continue;
            };
            manifest.insert(rel, node);
            let Some(limits) = limits else { continue };
            if manifest.len() as u64 > limits.max_entries {
                return Err(format!(
                    "the workspace holds more than {} files, links and directories \
                     (`approvals.rehearse_max_entries`)",
                    limits.max_entries
                ));
            }
            if bytes > limits.max_bytes {
                return Err(format!(
                    "the workspace's files hold more than {} MiB (`approvals.rehearse_max_mb`)",
                    limits.max_bytes >> 20
                ));
            }
        }
    }
    Ok(manifest)
}

impl Workspace {
    /// Whether `rel` is (inside) one of the host's own files.
    fn is_host_file(&self, rel: &str) -> bool {
        let host = self.root.join(rel);
        self.protected.iter().any(|(own, _)| host.starts_with(own))
    }

    /// What the workspace holds, as [`Scratch`] would copy it; `Err` names
    /// the bound it passes.
    fn manifest(&self, limits: ScratchLimits) -> Result<Manifest, String> {
        walk(&self.dir, |rel| self.is_host_file(rel), Some(limits))
    }

    /// A copy of the workspace in a new directory under `base`; `Err` says
    /// why none was made (too large, unreadable).
    pub fn scratch(&self, base: &Path, limits: ScratchLimits) -> Result<Scratch, String> {
        let before = self.manifest(limits)?;
        crate::private_file::create_dir(base)
            .map_err(|e| format!("cannot make `{}`: {e}", base.display()))?;
        let root = base.join(crate::call::fresh_id().as_ref());
        std::fs::create_dir(&root).map_err(|e| format!("cannot make `{}`: {e}", root.display()))?;
        let scratch = Scratch { root, before };
        for (rel, node) in &scratch.before {
            let target = scratch.root.join(rel);
            let copied = match node {
                Node::Dir => std::fs::create_dir(&target),
                Node::Link { target: to } => std::os::unix::fs::symlink(to, &target),
                Node::File { .. } => self.copy_out(rel, &target),
            };
            copied.map_err(|e| format!("cannot copy `{rel}`: {e}"))?;
        }
        Ok(scratch)
    }

    /// Copies workspace file `rel` (read through cap-std) to `target`,
    /// with its permissions.
    fn copy_out(&self, rel: &str, target: &Path) -> std::io::Result<()> {
        use cap_std::fs::PermissionsExt as _;
        use std::os::unix::fs::PermissionsExt;
        let mut from = self.dir.open(rel)?;
        let mode = from.metadata()?.permissions().mode();
        let mut to = std::fs::File::create(target)?;
        std::io::copy(&mut from, &mut to)?;
        to.set_permissions(std::fs::Permissions::from_mode(mode))
    }

    /// What stands at `rel` in the workspace now (`None`: nothing).
    fn node(&self, rel: &str) -> std::io::Result<Option<Node>> {
        let meta = match self.dir.symlink_metadata(rel) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(Some(if meta.is_symlink() {
            Node::Link {
                target: self
                    .dir
                    .read_link_contents(rel)?
                    .to_string_lossy()
                    .into_owned(),
            }
        } else if meta.is_dir() {
            Node::Dir
        } else {
            let (sha256, bytes) = hash_reader(self.dir.open(rel)?)?;
            Node::File { sha256, bytes }
        }))
    }

    /// Applies `change`, made in `scratch`, to the workspace. `Err` names a
    /// path that no longer holds what the copy was made from (nothing is
    /// changed then), or what could not be done.
    pub fn apply(&self, scratch: &Scratch, change: &ChangeSet) -> Result<(), Applied> {
        for each in &change.changes {
            let now = self
                .node(&each.path)
                .map_err(|e| Applied::Failed(format!("cannot read `{}`: {e}", each.path)))?;
            if now != each.before {
                return Err(Applied::Moved(each.path.clone()));
            }
            if let Some(Node::Link { target }) = &each.after
                && leads_out(&each.path, target)
            {
                return Err(Applied::Failed(format!(
                    "the link `{}` would lead out of the workspace",
                    each.path
                )));
            }
        }
        let failed = |path: &str, e: std::io::Error| Applied::Failed(format!("`{path}`: {e}"));
        // What goes, deepest first; then what comes, shallowest first.
        for each in change.changes.iter().rev() {
            match (&each.before, &each.after) {
                (Some(Node::Dir), None) => self.dir.remove_dir(&each.path),
                (Some(Node::File { .. } | Node::Link { .. }), None)
                | (Some(Node::Link { .. }), Some(_))
                | (Some(Node::File { .. }), Some(Node::Dir | Node::Link { .. })) => {
                    self.dir.remove_file(&each.path)
                }
                (Some(Node::Dir), Some(Node::File { .. } | Node::Link { .. })) => {
                    self.dir.remove_dir_all(&each.path)
                }
                (Some(Node::File { .. }), Some(Node::File { .. }))
                | (Some(Node::Dir), Some(Node::Dir))
                | (None, _) => Ok(()),
            }
            .map_err(|e| failed(&each.path, e))?;
        }
        for each in &change.changes {
            match &each.after {
                Some(Node::Dir) if each.before != Some(Node::Dir) => {
                    self.dir.create_dir(&each.path)
                }
                Some(Node::Link { target }) => self.dir.symlink(target, &each.path),
                Some(Node::File { .. }) => self.write_from(scratch, each),
                Some(Node::Dir) | None => Ok(()),
            }
            .map_err(|e| failed(&each.path, e))?;
        }
        Ok(())
    }

    /// Writes the copy's version of a changed file beside its place, then
    /// renames it there: a reader sees the old file or the new one.
    fn write_from(&self, scratch: &Scratch, change: &Change) -> std::io::Result<()> {
        let source = scratch.root.join(&change.path);
        let mode = std::fs::symlink_metadata(&source)?.permissions();
        let mut from = std::fs::File::open(&source)?;
        let staged = format!("{}.toolwarden-{}", change.path, crate::call::fresh_id());
        let mut to = self.dir.create(&staged)?;
        std::io::copy(&mut from, &mut to)?;
        to.set_permissions(cap_std::fs::Permissions::from_std(mode))?;
        drop(to);
        self.dir
            .rename(&staged, &self.dir, &change.path)
            .inspect_err(|_| {
                let _ = self.dir.remove_file(&staged);
            })
    }
}

/// Whether a link at `path` to `target` would lead outside the workspace,
/// read lexically: an absolute target, or more `..` than it stands deep.
fn leads_out(path: &str, target: &str) -> bool {
    if target.starts_with('/') {
        return true;
    }
    let mut depth = path.split('/').count() as i64 - 1;
    for part in target.split('/') {
        match part {
            ".." => depth -= 1,
            "" | "." => {}
            _ => depth += 1,
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

/// Why a rehearsed change was not applied.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    /// This path no longer holds what the rehearsal started from.
    Moved(String),
    /// Something could not be done (what and why).
    Failed(String),
}

impl Scratch {
    /// Where the copy is, to preopen in its place.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// What the call did to the copy: its tree now against what was copied.
    pub fn changes(&self) -> Result<ChangeSet, String> {
        let dir = Dir::open_ambient_dir(&self.root, cap_std::ambient_authority())
            .map_err(|e| format!("cannot open the copy: {e}"))?;
        let after = walk(&dir, |_| false, None)?;
        Ok(ChangeSet::between(&self.before, &after))
    }

    /// The copy's version of file `rel`, up to `max` bytes.
    pub fn read(&self, rel: &str, max: usize) -> Option<Vec<u8>> {
        let file = std::fs::File::open(self.root.join(rel)).ok()?;
        let mut bytes = Vec::new();
        file.take(max as u64).read_to_end(&mut bytes).ok()?;
        Some(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::leads_out;

    #[test]
    fn links_that_would_lead_out_are_seen_lexically() {
        assert!(leads_out("a", "/etc/passwd"));
        assert!(leads_out("a", "../x"));
        assert!(leads_out("d/a", "../../x"));
        assert!(!leads_out("d/a", "../x"));
        assert!(!leads_out("d/a", "b/../c"));
        assert!(leads_out("d/a", "b/../../../c"));
    }
}
