//! The workspace's canonical place, as the link checks (`links`) and a
//! call's store (`state`) hold it. Knows paths and directory handles only;
//! it never follows a link.

use cap_std::fs::Dir;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;

/// The workspace as the link checks see it.
#[derive(Clone)]
pub(super) struct LinkRoot {
    /// Canonical host path of the workspace.
    root: Arc<Path>,
}

impl LinkRoot {
    pub fn new(workspace: &Path) -> LinkRoot {
        let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_owned());
        LinkRoot { root: root.into() }
    }

    /// Its canonical host path.
    pub fn path(&self) -> &Path {
        &self.root
    }

    pub(super) fn dir(&self) -> Option<Dir> {
        Dir::open_ambient_dir(&self.root, cap_std::ambient_authority()).ok()
    }

    /// Where a directory descriptor stands, relative to the workspace (`""`
    /// for the workspace itself).
    pub(super) fn place_of(&self, dir: &std::fs::File) -> Option<String> {
        let real = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd())).ok()?;
        Some(real.strip_prefix(&self.root).ok()?.to_str()?.to_owned())
    }
}
