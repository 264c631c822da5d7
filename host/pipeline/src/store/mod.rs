//! SQLite: the host's own database, `toolwarden.db` in the state directory,
//! and PostgreSQL when several hosts share their approvals (`shared`).
//!
//! Holds the audit log, approvals, the executions that budgets count and
//! the outcomes of keyed calls.
//! Knows SQL and its own row types, not the pipeline's; `audit`, `approval`
//! and `guards` convert at their side. WAL mode with `synchronous = FULL`:
//! a committed approval or audit record survives a crash or SIGKILL. Several
//! processes may share the file; writers wait for each other (busy timeout).

mod approvals;
mod audit;
mod executions;
mod head;
mod keys;
mod owners;
mod rates;
mod sampling;
mod schema;
mod shared;
mod tallies;
mod tasks;
mod votes;

pub use approvals::{ApprovalRow, ApprovalState, Binding, Consumed};
pub use audit::{AuditFilter, AuditRow, Checkpoint, NewAuditRow};
pub use executions::{ExecutionGroup, ExecutionRow, SharedBudget};
pub use head::{HEAD_FILE, Head};
pub use keys::KeyState;
pub use rates::{RateKey, RateTaken};
pub use shared::{
    Copied, NewReservation, Shared, SharedError, SharedSettings, StoreSection, UnitLimits,
};
pub use tallies::{AuditTallies, CountRow, PERCENTILES, RankRow, SessionRow, nearest_rank};
pub use tasks::{TaskRow, TaskSignal, TaskWrite};
pub use votes::{Decided, Vote};

use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The database file's name inside the state directory.
pub const DB_FILE: &str = "toolwarden.db";
/// How long a writer waits for another process's transaction.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// A database failure, with the database it concerns (the SQLite file, or
/// the shared store's URL without its password).
#[derive(Debug, thiserror::Error)]
#[error("database `{}`: {source}", path.display())]
pub struct StoreError {
    pub path: PathBuf,
    #[source]
    pub source: Failure,
}

impl StoreError {
    /// Whether the database refused the data itself (a value it cannot
    /// hold, a check or trigger that rejects it), which it would refuse
    /// again however often asked: not an outage, and not a race (a unique
    /// key two hosts raced for is taken on the next try).
    pub fn refuses_data(&self) -> bool {
        use rusqlite::ffi;
        match &self.source {
            Failure::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => {
                e.code == rusqlite::ErrorCode::TooBig
                    || matches!(
                        e.extended_code,
                        ffi::SQLITE_CONSTRAINT_CHECK
                            | ffi::SQLITE_CONSTRAINT_NOTNULL
                            | ffi::SQLITE_CONSTRAINT_TRIGGER
                    )
            }
            Failure::Sqlite(_) => false,
            Failure::Shared(shared) => shared.refuses_data(),
        }
    }

    /// A failure of the shared store `settings` names.
    pub fn shared(settings: &SharedSettings, source: SharedError) -> StoreError {
        StoreError {
            path: PathBuf::from(settings.shown()),
            source: source.into(),
        }
    }
}

/// What failed, in either database.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error(transparent)]
    Shared(#[from] shared::SharedError),
}

#[derive(Debug)]
pub struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
    /// Where the approval book is when several hosts share it.
    shared: Option<Arc<Shared>>,
}

/// Makes the database file (and its WAL and shared-memory files, which
/// SQLite creates with the main file's mode) readable by its owner alone:
/// it holds arguments, outputs and approvals. Created 0600 when missing;
/// an older, looser file is tightened.
///
/// The file is never opened here once it exists: closing any descriptor of
/// a database file drops every POSIX lock this process holds on it, SQLite
/// connections' included, so only a file that does not exist yet is
/// created (and closed before SQLite opens it), and modes are changed by
/// path.
fn keep_private(db: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if std::fs::symlink_metadata(db).is_err() {
        match crate::private_file::options()
            .write(true)
            .create_new(true)
            .open(db)
        {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        match std::fs::metadata(&name) {
            Ok(meta) if meta.permissions().mode() & 0o077 != 0 => {
                std::fs::set_permissions(&name, std::fs::Permissions::from_mode(0o600))?;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn io_error(e: std::io::Error) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
        Some(e.to_string()),
    )
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Store {
    /// Opens (creating if needed) the database in `state_dir` and brings its
    /// schema up to date.
    pub fn open(state_dir: &Path, shared: Option<Arc<Shared>>) -> Result<Store, StoreError> {
        let path = state_dir.join(DB_FILE);
        let fail = |source: rusqlite::Error| StoreError {
            path: path.clone(),
            source: source.into(),
        };
        keep_private(&path).map_err(|e| fail(io_error(e)))?;
        let mut conn = Connection::open(&path).map_err(fail)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(fail)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(fail)?;
        schema::migrate(&mut conn).map_err(fail)?;
        // Reading one row of each table proves the file is a database we can use.
        conn.query_row("SELECT count(*) FROM approvals", [], |r| r.get::<_, i64>(0))
            .map_err(fail)?;
        Ok(Store {
            conn: Mutex::new(conn),
            path,
            shared,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Commits on this connection stop waiting for the disk (WAL with
    /// `synchronous = NORMAL`): a crashed process loses nothing committed, a
    /// power loss may lose the last commits, the file stays consistent.
    pub fn relax_durability(&self) -> Result<(), StoreError> {
        self.conn()
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| self.error(e))
    }

    /// How many pages the write-ahead log of this connection's commits may
    /// grow by before a commit copies them back into the database (SQLite's
    /// default is 1,000). The audit writer's commits each rewrite the same
    /// few index pages at the right edge of their trees: a longer log copies
    /// each of those back, and waits for the disk, once where the default
    /// would several times.
    pub fn checkpoint_every(&self, pages: u32) -> Result<(), StoreError> {
        self.conn()
            .pragma_update(None, "wal_autocheckpoint", pages)
            .map_err(|e| self.error(e))
    }

    /// A second connection to the same database (and shared store), for a
    /// thread of its own.
    pub fn connect_again(&self) -> Result<Store, StoreError> {
        let shared = match &self.shared {
            Some(shared) => Some(Arc::new(
                shared.another().map_err(|e| self.shared_error(e))?,
            )),
            None => None,
        };
        Store::open(self.path.parent().unwrap_or(Path::new(".")), shared)
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite half-written
        // (transactions roll back), so a poisoned lock is still usable.
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn error(&self, source: rusqlite::Error) -> StoreError {
        StoreError {
            path: self.path.clone(),
            source: source.into(),
        }
    }

    fn shared_error(&self, source: shared::SharedError) -> StoreError {
        StoreError {
            path: self
                .shared
                .as_ref()
                .map_or_else(|| self.path.clone(), |s| PathBuf::from(s.shown())),
            source: source.into(),
        }
    }

    /// Whether hosts share this store's approvals and request states.
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// Keeps an MCP request state in the shared store (see
    /// `Shared::put_request_state`); without one, a no-op the caller never
    /// needs (it keeps states in memory).
    pub fn put_request_state(
        &self,
        key: &str,
        pending: &str,
        now_ms: i64,
        expired_before_ms: i64,
    ) -> Result<(), StoreError> {
        self.on_shared((), |shared| {
            shared.put_request_state(key, pending, now_ms, expired_before_ms)
        })
    }

    /// Takes an MCP request state out of the shared store.
    pub fn take_request_state(
        &self,
        key: &str,
        issued_since_ms: i64,
    ) -> Result<Option<String>, StoreError> {
        self.on_shared(None, |shared| {
            shared.take_request_state(key, issued_since_ms)
        })
    }

    /// Connects to the shared store `settings` names.
    pub fn connect_shared(settings: &SharedSettings) -> Result<Arc<Shared>, StoreError> {
        Shared::open(settings)
            .map(Arc::new)
            .map_err(|source| StoreError::shared(settings, source))
    }
}
