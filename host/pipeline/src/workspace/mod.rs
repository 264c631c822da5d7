//! Where a call's path and URL arguments lead: the pipeline step between
//! validation and policy, `ValidatedCall -> LocatedCall`.
//!
//! Every argument the tool's schema marks `"format": "uri"` is read as
//! [`crate::canonical_url`] reads URLs and rewritten to that canonical form
//! (`HTTPS://Docs.RS/a/../b` is `https://docs.rs/b`, `https://a.org\@b.org`
//! goes to `a.org`, `http://localhost./%61` is `http://localhost/a`), so the policy's URL globs, the guard that holds it to
//! the call's network grant, and the plugin all see one and the same URL.
//!
//! Every argument the tool's schema marks `"format": "path"` is resolved
//! inside the workspace ([`resolve`]: cap-std, every component, symlinks
//! followed only within the workspace). A path that resolves somewhere else
//! than it reads is rewritten to the resolved form, so the policy decides on
//! where a path leads and the plugin receives exactly what was decided (the
//! canonical arguments, their digest and the audit record all follow the
//! rewrite; the written form is kept for the policy's deny and ask rules and
//! for `policy explain`). A path that cannot be resolved inside, or that
//! names one of the host's own files, is kept as written and marked: the
//! path guard refuses it after the policy, so refusal codes stay in
//! pipeline order.
//!
//! Between this step and the plugin opening the path a concurrent call
//! could swap a directory for a symlink. The [`Lease`] bounds that race:
//! calls that may change the workspace hold it exclusively, calls that read
//! it share it, from before resolution until their run ends, across every
//! session of this host. It does not cover another process writing the
//! workspace (another host, an editor); SECURITY.md says so.
//!
//! It also owns the workspace's files where a call's change is rehearsed
//! ([`scratch`]: a private copy, what a run changed in it, [`change`]) and
//! where a rehearsed change is applied to the workspace itself, and its
//! files as `file://` resources ([`files`]).
//!
//! This step never decides whether a call is allowed and never runs a tool.

mod change;
mod files;
mod scratch;

pub use change::ChangeSet;
pub use files::{ResourcesSection, WorkspaceFiles, is_file_uri, media_type};
pub use scratch::{Applied, DEFAULT_MAX_ENTRIES, DEFAULT_MAX_MB, Scratch, ScratchLimits};

use crate::real_path as resolve;

use crate::canonical_url::CanonicalUrl;
use crate::capability::FsAccess;
use crate::capability::SandboxMode;
use crate::materialize::Arguments;
use crate::origin::Origin;
use crate::outcome::CallError;
use crate::validation::ValidatedCall;
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

/// The workspace of one host, opened once.
#[derive(Debug)]
pub struct Workspace {
    dir: Dir,
    /// Canonical host path of the workspace.
    root: PathBuf,
    /// The host's own files and directories, canonical, with what each is.
    protected: Vec<(PathBuf, &'static str)>,
    sandbox: SandboxMode,
    lease: Arc<RwLock<()>>,
}

/// Where one path argument leads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "place", rename_all = "snake_case")]
pub enum Place {
    /// Inside the workspace, at this workspace-relative path.
    Inside { resolved: String },
    /// At one of the host's own files (its config, state or plugins); no
    /// rule can allow a call to reach it.
    HostFile {
        resolved: String,
        what: &'static str,
    },
    /// It cannot be resolved inside the workspace, and why.
    Outside { why: String },
}

/// One path argument: where it is, as written, and where it leads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LocatedPath {
    pub pointer: String,
    pub written: String,
    #[serde(flatten)]
    pub place: Place,
}

impl LocatedPath {
    /// Worth showing a person: it leads elsewhere than it reads, or nowhere
    /// a tool may go.
    pub fn noteworthy(&self) -> bool {
        match &self.place {
            Place::Inside { resolved } => *resolved != self.written,
            Place::HostFile { .. } | Place::Outside { .. } => true,
        }
    }

    /// The resolved form when it differs from the written one.
    pub fn rewritten(&self) -> Option<&str> {
        match &self.place {
            Place::Inside { resolved } | Place::HostFile { resolved, .. }
                if *resolved != self.written =>
            {
                Some(resolved)
            }
            Place::Inside { .. } | Place::HostFile { .. } | Place::Outside { .. } => None,
        }
    }
}

impl std::fmt::Display for LocatedPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (pointer, written) = (&self.pointer, &self.written);
        match &self.place {
            Place::Outside { why } => write!(f, "`{pointer}`: `{written}` {why}"),
            Place::HostFile { resolved, what } => {
                write!(
                    f,
                    "`{pointer}`: `{written}` leads to `{resolved}`, the host's {what}"
                )
            }
            Place::Inside { resolved } if resolved != written => {
                write!(f, "`{pointer}`: `{written}` leads to `{resolved}`")
            }
            Place::Inside { .. } => write!(f, "`{pointer}`: `{written}`"),
        }
    }
}

/// One URL argument: where it is, as written, its canonical form, and the
/// origin it goes to (`None` for a URL that is not `http(s)` with a host).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LocatedUri {
    pub pointer: String,
    pub written: String,
    pub canonical: String,
    pub origin: Option<Origin>,
}

impl LocatedUri {
    fn read(pointer: String, written: String) -> LocatedUri {
        let (canonical, origin) = match CanonicalUrl::parse(&written) {
            Some(url) => (url.as_str().to_owned(), Some(url.origin().clone())),
            None => (
                url::Url::parse(&written).map_or_else(|_| written.clone(), String::from),
                None,
            ),
        };
        LocatedUri {
            canonical,
            origin,
            pointer,
            written,
        }
    }
}

/// A validated call whose path arguments are resolved and URL arguments
/// read. Only [`Workspace::locate`] makes one.
#[derive(Debug)]
pub struct LocatedCall {
    call: ValidatedCall,
    /// The arguments as written, when resolving rewrote a path or a URL.
    written: Option<Arc<Value>>,
    paths: Vec<LocatedPath>,
    uris: Vec<LocatedUri>,
}

impl LocatedCall {
    pub fn call(&self) -> &ValidatedCall {
        &self.call
    }

    pub fn resolved(&self) -> &crate::registry::ResolvedCall {
        self.call.resolved()
    }

    /// The arguments as the caller wrote them, when they differ from the
    /// resolved ones (which [`ValidatedCall::resolved`] holds).
    pub fn written(&self) -> Option<&Value> {
        self.written.as_deref()
    }

    pub fn paths(&self) -> &[LocatedPath] {
        &self.paths
    }

    pub fn uris(&self) -> &[LocatedUri] {
        &self.uris
    }

    pub(crate) fn into_validated(self) -> ValidatedCall {
        self.call
    }
}

/// A call's hold on the workspace, from before its paths are resolved until
/// its run ends. Dropping it lets the next call in.
#[derive(Debug)]
pub enum Lease {
    /// The call gets no filesystem.
    Unneeded,
    Shared(#[allow(dead_code)] OwnedRwLockReadGuard<()>),
    Exclusive(#[allow(dead_code)] OwnedRwLockWriteGuard<()>),
}

/// The workspace directory cannot be opened.
#[derive(Debug)]
pub struct Unopenable {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl Workspace {
    /// Opens the workspace at `path`. `protected` lists the host's own
    /// files and directories (they need not exist) that no path argument
    /// may reach.
    pub fn open(
        path: &Path,
        sandbox: SandboxMode,
        protected: &[(&Path, &'static str)],
    ) -> Result<Workspace, Unopenable> {
        let directory = |source| Unopenable {
            path: path.to_owned(),
            source,
        };
        let root = std::fs::canonicalize(path).map_err(directory)?;
        let dir = Dir::open_ambient_dir(&root, ambient_authority()).map_err(directory)?;
        let protected = protected
            .iter()
            .map(|(p, what)| (canonical_or_lexical(p), *what))
            .collect();
        Ok(Workspace {
            dir,
            root,
            protected,
            sandbox,
            lease: Arc::new(RwLock::new(())),
        })
    }

    /// Where `text` leads from the workspace root.
    /// The content of workspace file `rel`, up to `max` bytes; none when
    /// there is no such file inside the workspace (a link out of it
    /// included) or it cannot be read.
    pub fn read(&self, rel: &str, max: usize) -> Option<Vec<u8>> {
        use std::io::Read;
        let file = self.open_file(rel)?;
        let mut bytes = Vec::new();
        file.take(max as u64).read_to_end(&mut bytes).ok()?;
        Some(bytes)
    }

    /// Workspace file `rel`, opened inside the workspace only; none when it
    /// is missing, not a regular file, or out of reach.
    fn open_file(&self, rel: &str) -> Option<cap_std::fs::File> {
        let file = self.dir.open(rel.trim_start_matches('/')).ok()?;
        file.metadata().ok()?.is_file().then_some(file)
    }

    /// SHA-256 (hex) of workspace file `rel` as it is now; none when there
    /// is no such file. What an approval holds a previewed file to.
    pub fn digest(&self, rel: &str) -> Option<String> {
        use sha2::Digest;
        let mut file = self.open_file(rel)?;
        let mut hasher = sha2::Sha256::new();
        std::io::copy(&mut file, &mut hasher).ok()?;
        Some(hex::encode(hasher.finalize()))
    }

    pub fn place(&self, text: &str) -> Place {
        match resolve::resolve(&self.dir, &self.root, text) {
            Ok(resolved) => {
                let host = resolve::host_path(&self.root, &resolved);
                match self.protected.iter().find(|(own, _)| host.starts_with(own)) {
                    Some((_, what)) => Place::HostFile { resolved, what },
                    None => Place::Inside { resolved },
                }
            }
            Err(why) => Place::Outside { why },
        }
    }

    /// Every path argument of `args` for a call of a tool with `schema`.
    pub fn paths(&self, schema: &crate::schema::Schema, args: &Value) -> Vec<LocatedPath> {
        schema
            .path_pointers(args)
            .into_iter()
            .filter_map(|pointer| {
                let written = args.pointer(&pointer)?.as_str()?.to_owned();
                let place = self.place(&written);
                Some(LocatedPath {
                    pointer,
                    written,
                    place,
                })
            })
            .collect()
    }

    /// Every URL argument of `args` for a call of a tool with `schema`.
    pub fn uris(schema: &crate::schema::Schema, args: &Value) -> Vec<LocatedUri> {
        schema
            .uri_pointers(args)
            .into_iter()
            .filter_map(|pointer| {
                let written = args.pointer(&pointer)?.as_str()?.to_owned();
                Some(LocatedUri::read(pointer, written))
            })
            .collect()
    }

    /// The arguments with every path that resolved elsewhere rewritten to
    /// its resolved form and every URL to its canonical one, or `None` when
    /// nothing changed.
    pub fn rewrite(args: &Value, paths: &[LocatedPath], uris: &[LocatedUri]) -> Option<Value> {
        let changes = paths
            .iter()
            .filter_map(|path| Some((&path.pointer, path.rewritten()?)))
            .chain(
                uris.iter()
                    .filter(|uri| uri.canonical != uri.written)
                    .map(|uri| (&uri.pointer, uri.canonical.as_str())),
            );
        let mut rewritten: Option<Value> = None;
        for (pointer, now) in changes {
            let value = rewritten.get_or_insert_with(|| args.clone());
            if let Some(slot) = value.pointer_mut(pointer) {
                *slot = Value::String(now.to_owned());
            }
        }
        rewritten
    }

    /// Pipeline step: takes the call's lease on the workspace, then resolves
    /// its path arguments and hands on the call with the resolved ones.
    pub async fn locate(&self, call: ValidatedCall) -> Result<(LocatedCall, Lease), CallError> {
        let tool = call.resolved().tool();
        let lease = match FsAccess::for_tool(tool.spec.filesystem, self.sandbox) {
            FsAccess::None => Lease::Unneeded,
            FsAccess::ReadOnly => Lease::Shared(Arc::clone(&self.lease).read_owned().await),
            FsAccess::ReadWrite => Lease::Exclusive(Arc::clone(&self.lease).write_owned().await),
        };
        let args = call.resolved().args().value();
        let paths = self.paths(&tool.input, args);
        let uris = Workspace::uris(&tool.input, args);
        let (call, written) = match Workspace::rewrite(args, &paths, &uris) {
            None => (call, None),
            Some(value) => {
                let written = call.resolved().args().shared_value();
                let args = Arguments::from_value(Arc::new(value))?;
                (call.with_args(args)?, Some(written))
            }
        };
        Ok((
            LocatedCall {
                call,
                written,
                paths,
                uris,
            },
            lease,
        ))
    }
}

/// `path` made canonical as far as it exists, the rest appended, so a
/// host file that does not exist yet is still recognized once created.
fn canonical_or_lexical(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = std::fs::canonicalize(existing) {
            return rest
                .iter()
                .rev()
                .fold(canonical, |acc: PathBuf, name| acc.join(name));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            (None, _) | (_, None) => return path.to_owned(),
        }
    }
}
