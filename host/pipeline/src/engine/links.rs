//! Symlinks a plugin puts in the workspace lead somewhere inside it.
//!
//! WASI lets a plugin with workspace-write access create a symlink with any
//! target text. cap-std never follows one out of the preopen, so the plugin
//! itself gains nothing, but a person, an editor or a build script that
//! later opens the link would be taken outside the workspace. Three
//! `wasi:filesystem` methods can put a link somewhere: `symlink-at` makes
//! one, `rename-at` moves one (or a directory holding some) to a place
//! where its relative target means something else, and `link-at` gives a
//! link a second name (a hard link to the link itself, never followed).
//! This module shadows those three in the linker: it works out where each
//! link would stand and resolves its target from there with the resolver
//! the paths step uses; a link that would lead out, or has an absolute
//! target, is refused with `not-permitted` and nothing changes.
//!
//! It must never follow or open what a link names, and it changes nothing
//! but what the plugin asked for (a directory move that would carry an
//! escaping link is undone before the call returns).

use super::root::LinkRoot;
use super::state::CallState;
use crate::real_path::resolve;
use cap_std::fs::Dir;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{self, ErrorCode, HostDescriptor, PathFlags};

/// The `wasi:filesystem/types` instance wasmtime-wasi defines; plugins built
/// against any earlier 0.2 release are linked to it by semver.
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Entries a moved directory may hold for its links to be checked; past
/// this a move that would carry links is refused rather than walked on.
pub const MAX_MOVED_ENTRIES: usize = 100_000;

/// Replaces `symlink-at`, `rename-at` and `link-at` with checked versions
/// that then call wasmtime-wasi's own.
pub(super) fn shadow(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.symlink-at",
        |mut store, (fd, target, at): (Resource<Descriptor>, String, String)| {
            Box::new(async move {
                if let Err(refused) = check_symlink(store.data_mut(), &fd, &target, &at) {
                    return Ok((Err(refused),));
                }
                let mut fs = store.data_mut().filesystem();
                let done = HostDescriptor::symlink_at(&mut fs, fd, target, at).await;
                Ok((wasi_result(&mut fs, done)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.rename-at",
        |mut store,
         (fd, from, new_fd, to): (
            Resource<Descriptor>,
            String,
            Resource<Descriptor>,
            String,
        )| {
            Box::new(async move {
                let moved = match check_move(store.data_mut(), &fd, &from, &new_fd, &to) {
                    Ok(moved) => moved,
                    Err(refused) => return Ok((Err(refused),)),
                };
                let (undo_from, undo_to) = (fd.rep(), new_fd.rep());
                let mut fs = store.data_mut().filesystem();
                let done = HostDescriptor::rename_at(&mut fs, fd, from.clone(), new_fd, to.clone())
                    .await;
                let done = wasi_result(&mut fs, done)?;
                if done.is_ok()
                    && let Some(links) = moved
                    && let Some(refused) =
                        undo_if_escaping(store.data_mut(), undo_from, &from, undo_to, &to, &links)
                {
                    return Ok((Err(refused),));
                }
                Ok((done,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.link-at",
        |mut store,
         (fd, flags, from, new_fd, to): (
            Resource<Descriptor>,
            PathFlags,
            String,
            Resource<Descriptor>,
            String,
        )| {
            Box::new(async move {
                if let Err(refused) = check_hard_link(store.data_mut(), &fd, &from, &new_fd, &to) {
                    return Ok((Err(refused),));
                }
                let mut fs = store.data_mut().filesystem();
                let done = HostDescriptor::link_at(&mut fs, fd, flags, from, new_fd, to).await;
                Ok((wasi_result(&mut fs, done)?,))
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// A WASI result as the guest sees it; a trap stays a trap.
fn wasi_result(
    fs: &mut wasmtime_wasi::filesystem::WasiFilesystemCtxView<'_>,
    done: wasmtime_wasi::p2::FsResult<()>,
) -> wasmtime::Result<Result<(), ErrorCode>> {
    match done {
        Ok(()) => Ok(Ok(())),
        Err(e) => Ok(Err(types::Host::convert_error_code(fs, e)?)),
    }
}

/// The host directory behind a descriptor, when it is one the checks can
/// place. `None` lets wasmtime-wasi answer (a bad descriptor, a file).
fn host_dir(state: &mut CallState, fd: u32) -> Option<Arc<std::fs::File>> {
    let fd: Resource<Descriptor> = Resource::new_borrow(fd);
    match state.table.get(&fd) {
        Ok(Descriptor::Dir(dir)) => Some(Arc::clone(&dir.dir)),
        _ => None,
    }
}

/// What the checks need for one operation: the workspace opened through
/// cap-std and its canonical path.
struct Scope {
    root: LinkRoot,
    workspace: Dir,
}

impl Scope {
    /// `None` when the call has no writable workspace: wasmtime-wasi then
    /// refuses the operation itself. A workspace that cannot be opened to
    /// check against refuses the operation: nothing goes through unchecked.
    fn of(state: &CallState) -> Result<Option<Scope>, ErrorCode> {
        let Some(root) = state.links.clone() else {
            return Ok(None);
        };
        let workspace = root.dir().ok_or(ErrorCode::NotPermitted)?;
        Ok(Some(Scope { root, workspace }))
    }

    fn resolve(&self, text: &str) -> Result<String, ErrorCode> {
        resolve(&self.workspace, self.root.path(), text).map_err(|_| ErrorCode::NotPermitted)
    }

    /// Where `path` under the directory `dir` would stand, its last
    /// component kept as written (a link there is replaced, not followed).
    fn entry(&self, dir: &std::fs::File, path: &str) -> Result<String, ErrorCode> {
        let base = self.root.place_of(dir).ok_or(ErrorCode::NotPermitted)?;
        let path = Path::new(path);
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or(ErrorCode::Invalid)?;
        let parent = self.resolve(&joined(&base, path.parent().unwrap_or(Path::new(""))))?;
        Ok(joined(&parent, Path::new(name)))
    }

    /// Refuses a link standing at `at` (workspace-relative) with `target`
    /// unless the target resolves inside the workspace from there.
    fn link_stays_inside(&self, at: &str, target: &Path) -> Result<(), ErrorCode> {
        if target.is_absolute() {
            return Err(ErrorCode::NotPermitted);
        }
        let parent = Path::new(at).parent().unwrap_or(Path::new(""));
        let parent = parent.to_str().ok_or(ErrorCode::NotPermitted)?;
        self.resolve(&joined(parent, target)).map(drop)
    }

    /// Refuses a link with `target` that would stand at `path` under `dir`
    /// unless it leads inside the workspace from there.
    fn link_at(&self, dir: &std::fs::File, path: &str, target: &Path) -> Result<(), ErrorCode> {
        self.link_stays_inside(&self.entry(dir, path)?, target)
    }
}

fn joined(base: &str, rest: &Path) -> String {
    let rest = rest.to_string_lossy();
    match (base, rest.as_ref()) {
        ("" | ".", rest) => rest.to_owned(),
        (base, "") => base.to_owned(),
        (base, rest) => format!("{base}/{rest}"),
    }
}

/// `Err` refuses the operation; `Ok` lets wasmtime-wasi carry it out (and
/// refuse it itself, for a descriptor that is no directory).
fn check_symlink(
    state: &mut CallState,
    fd: &Resource<Descriptor>,
    target: &str,
    at: &str,
) -> Result<(), ErrorCode> {
    let Some(scope) = Scope::of(state)? else {
        return Ok(());
    };
    let Some(dir) = host_dir(state, fd.rep()) else {
        return Ok(());
    };
    scope.link_at(&dir, at, Path::new(target))
}

/// A hard link to a symlink is a second copy of that symlink; a hard link
/// to anything else cannot change where a path leads.
fn check_hard_link(
    state: &mut CallState,
    fd: &Resource<Descriptor>,
    from: &str,
    new_fd: &Resource<Descriptor>,
    to: &str,
) -> Result<(), ErrorCode> {
    let Some(scope) = Scope::of(state)? else {
        return Ok(());
    };
    let (Some(old_dir), Some(new_dir)) = (host_dir(state, fd.rep()), host_dir(state, new_fd.rep()))
    else {
        return Ok(());
    };
    match kind_of(&cap_dir(&old_dir)?, from)? {
        Kind::Link(target) => scope.link_at(&new_dir, to, &target),
        Kind::Directory | Kind::Other => Ok(()),
    }
}

/// Links a moved directory holds, each as its path inside the directory
/// and its target.
type CarriedLinks = Vec<(PathBuf, PathBuf)>;

/// Checks a move before it happens. A moved symlink is checked at its new
/// place; a moved directory's links can only be checked once it is there
/// (one may lead through another), so they are returned to be checked
/// after the move, which is refused up front if it would replace something
/// that could not be put back.
fn check_move(
    state: &mut CallState,
    fd: &Resource<Descriptor>,
    from: &str,
    new_fd: &Resource<Descriptor>,
    to: &str,
) -> Result<Option<CarriedLinks>, ErrorCode> {
    let Some(scope) = Scope::of(state)? else {
        return Ok(None);
    };
    let (Some(old_dir), Some(new_dir)) = (host_dir(state, fd.rep()), host_dir(state, new_fd.rep()))
    else {
        return Ok(None);
    };
    let source = cap_dir(&old_dir)?;
    match kind_of(&source, from)? {
        Kind::Link(target) => scope.link_at(&new_dir, to, &target).map(|()| None),
        Kind::Other => Ok(None),
        Kind::Directory => {
            let moved = source.open_dir(from).map_err(|_| ErrorCode::NotPermitted)?;
            let links = links_within(&moved)?;
            if links.is_empty() {
                return Ok(None);
            }
            if cap_dir(&new_dir)?.symlink_metadata(to).is_ok() {
                return Err(ErrorCode::NotPermitted);
            }
            Ok(Some(links))
        }
    }
}

/// After a directory moved to `to`, checks each link it carried at its new
/// place; if one leads out, or the check cannot be made, moves the
/// directory back and refuses.
fn undo_if_escaping(
    state: &mut CallState,
    old_fd: u32,
    from: &str,
    new_fd: u32,
    to: &str,
    links: &CarriedLinks,
) -> Option<ErrorCode> {
    let (old_dir, new_dir) = (host_dir(state, old_fd)?, host_dir(state, new_fd)?);
    let carried_stay_inside = |scope: &Scope| -> Result<(), ErrorCode> {
        let place = scope.entry(&new_dir, to)?;
        links.iter().try_for_each(|(inside, target)| {
            scope.link_stays_inside(&joined(&place, inside), target)
        })
    };
    let checked = match Scope::of(state) {
        Ok(Some(scope)) => carried_stay_inside(&scope),
        Ok(None) => Ok(()),
        Err(refused) => Err(refused),
    };
    if checked.is_ok() {
        return None;
    }
    let undone = match (cap_dir(&new_dir), cap_dir(&old_dir)) {
        (Ok(new_dir), Ok(old_dir)) => new_dir.rename(to, &old_dir, from).is_ok(),
        _ => false,
    };
    if !undone {
        tracing::error!(
            from,
            to,
            "a moved directory carries a symlink that leads out of the workspace, and it could not be moved back"
        );
    }
    Some(ErrorCode::NotPermitted)
}

fn cap_dir(file: &std::fs::File) -> Result<Dir, ErrorCode> {
    let file = file.try_clone().map_err(|_| ErrorCode::Io)?;
    Ok(Dir::from_std_file(file))
}

/// What a path names, its last component not followed.
enum Kind {
    Link(PathBuf),
    Directory,
    /// A file, or nothing there (the operation then fails on its own).
    Other,
}

fn kind_of(dir: &Dir, path: &str) -> Result<Kind, ErrorCode> {
    let Ok(meta) = dir.symlink_metadata(path) else {
        return Ok(Kind::Other);
    };
    if meta.file_type().is_symlink() {
        let target = dir
            .read_link_contents(path)
            .map_err(|_| ErrorCode::NotPermitted)?;
        Ok(Kind::Link(target))
    } else if meta.is_dir() {
        Ok(Kind::Directory)
    } else {
        Ok(Kind::Other)
    }
}

/// Every symlink under `dir`, never following one, at most
/// [`MAX_MOVED_ENTRIES`] entries.
fn links_within(dir: &Dir) -> Result<CarriedLinks, ErrorCode> {
    let mut links = Vec::new();
    let mut seen = 0usize;
    let mut pending = vec![(PathBuf::new(), dir.try_clone().map_err(|_| ErrorCode::Io)?)];
    while let Some((at, dir)) = pending.pop() {
        for entry in dir.entries().map_err(|_| ErrorCode::Io)? {
            let entry = entry.map_err(|_| ErrorCode::Io)?;
            seen += 1;
            if seen > MAX_MOVED_ENTRIES {
                return Err(ErrorCode::NotPermitted);
            }
            let name = entry.file_name();
            let kind = entry.file_type().map_err(|_| ErrorCode::Io)?;
            if kind.is_symlink() {
                let target = dir.read_link_contents(&name).map_err(|_| ErrorCode::Io)?;
                links.push((at.join(&name), target));
            } else if kind.is_dir() {
                let sub = dir.open_dir(&name).map_err(|_| ErrorCode::Io)?;
                pending.push((at.join(&name), sub));
            }
        }
    }
    Ok(links)
}
