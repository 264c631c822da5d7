//! PostgreSQL: the store several hosts share (`[store] url`).
//!
//! With a shared store, the approval book lives in PostgreSQL: an approval
//! asked through one host is seen, decided and consumed from any other,
//! and consumed at most once across all of them (one conditional `UPDATE`,
//! which PostgreSQL re-checks on the row it locks, so racing hosts cannot
//! both win). So do the MCP request states (taken out by one `DELETE ...
//! RETURNING`, so a retry on any host redeems a state once), and the audit
//! log: one hash chain that every host appends to, one append at a time (an
//! advisory lock held by the appending transaction), with the executions
//! budgets count. Budgets and keyed calls hold across hosts too (`budget`).
//!
//! The store API is synchronous, like SQLite's: a call blocks its thread
//! for its round trips, on one of a small pool of connections. Their I/O
//! runs on a thread of its own (one per process), so a caller on a Tokio
//! runtime never nests one runtime in another. A lost connection fails the
//! operation (the caller fails closed) and the next operation connects
//! again, so a host recovers by itself once the database is back. The password comes from a file or
//! the environment, never from the URL, and is never shown.

mod audit;
mod budget;
mod import;

pub use budget::NewReservation;
pub use import::Copied;

use super::approvals::{ApprovalRow, ApprovalState, COLUMNS, Consumed};
use crate::settings::SettingError;
use serde::Deserialize;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use tokio_postgres::config::Host;
use tokio_postgres::{Client, Config, GenericClient, NoTls, Row, Statement};

/// The URL of the shared store, overriding `[store] url`.
const URL_ENV: &str = "TOOLWARDEN_STORE_URL";
/// Its password, when `[store] password_file` is not set.
const PASSWORD_ENV: &str = "TOOLWARDEN_STORE_PASSWORD";
/// Bump with every migration below.
const SCHEMA_VERSION: i32 = 4;

const MIGRATION_1: &str = "
CREATE TABLE approvals (
    id             TEXT PRIMARY KEY,
    tool           TEXT NOT NULL,
    args           TEXT NOT NULL,
    args_digest    TEXT NOT NULL,
    session        TEXT NOT NULL,
    plugin_sha256  TEXT NOT NULL,
    grant_fs       TEXT NOT NULL,
    grant_net      TEXT NOT NULL,
    policy_hash    TEXT NOT NULL,
    reason         TEXT NOT NULL,
    state          TEXT NOT NULL,
    decided_reason TEXT,
    created_ms     BIGINT NOT NULL,
    expires_ms     BIGINT NOT NULL,
    decided_ms     BIGINT,
    consumed_ms    BIGINT,
    decided_by     TEXT,
    rules          TEXT NOT NULL,
    profile        TEXT NOT NULL,
    preview        TEXT,
    bound_files    TEXT NOT NULL
);
CREATE INDEX approvals_call ON approvals(tool, args_digest, session);
";

/// MCP request states, so that a client's retry may land on any host. Kept
/// by the SHA-256 of the state: the table never holds the bearer secret.
const MIGRATION_2: &str = "
CREATE TABLE request_states (
    key       TEXT PRIMARY KEY,
    pending   TEXT NOT NULL,
    issued_ms BIGINT NOT NULL
);
CREATE INDEX request_states_issued ON request_states(issued_ms);
";

/// One audit chain for every host, with the executions budgets count
/// (appended in the same transaction), and where a cut left the chain.
const MIGRATION_3: &str = "
CREATE TABLE audit (
    seq       BIGINT PRIMARY KEY,
    ts_ms     BIGINT NOT NULL,
    call_id   TEXT NOT NULL,
    session   TEXT NOT NULL,
    tool      TEXT NOT NULL,
    kind      TEXT NOT NULL,
    data      TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL
);
CREATE INDEX audit_call ON audit(call_id);
CREATE INDEX audit_tool ON audit(tool, seq);
CREATE INDEX audit_ts ON audit(ts_ms);
CREATE TABLE audit_checkpoint (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    seq   BIGINT NOT NULL,
    hash  TEXT NOT NULL,
    ts_ms BIGINT NOT NULL
);
CREATE TABLE executions (
    session     TEXT NOT NULL,
    tool        TEXT NOT NULL,
    args_digest TEXT NOT NULL,
    duration_us BIGINT NOT NULL,
    ts_ms       BIGINT NOT NULL
);
CREATE INDEX executions_session ON executions(session, tool, args_digest);
";

/// Budget units every host's calls hold before they run, and the outcomes
/// of keyed calls (see `budget`).
const MIGRATION_4: &str = "
CREATE TABLE budget_reservations (
    id          BIGSERIAL PRIMARY KEY,
    session     TEXT NOT NULL,
    tool        TEXT NOT NULL,
    args_digest TEXT NOT NULL,
    expires_ms  BIGINT NOT NULL,
    duration_us BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX budget_reservations_session ON budget_reservations(session);
CREATE TABLE idempotency (
    key        TEXT PRIMARY KEY,
    call_id    TEXT NOT NULL,
    output     TEXT,
    created_ms BIGINT NOT NULL
);
";

/// The `[store]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSection {
    url: Option<String>,
    password_file: Option<PathBuf>,
}

impl StoreSection {
    pub const KEYS: &str = "url, password_file";

    /// The shared store the section (or [`URL_ENV`]) names, if any.
    pub fn resolve(self) -> Result<Option<SharedSettings>, SettingError> {
        let url = std::env::var(URL_ENV).ok().filter(|u| !u.is_empty());
        match url.or(self.url) {
            None if self.password_file.is_some() => Err(SettingError::new(
                "`[store] password_file` is set but no `url`",
                format!(
                    "add `url = \"postgres://USER@HOST:PORT/DB\"` to `[store]`, or set {URL_ENV}"
                ),
            )),
            None => Ok(None),
            Some(url) => SharedSettings::new(&url, self.password_file).map(Some),
        }
    }

    /// No `[store]` table: the environment may still name one.
    pub fn absent() -> Result<Option<SharedSettings>, SettingError> {
        StoreSection {
            url: None,
            password_file: None,
        }
        .resolve()
    }
}

/// Where the shared store is and how to log in.
#[derive(Clone)]
pub struct SharedSettings {
    config: Config,
    password_file: Option<PathBuf>,
    shown: String,
}

impl std::fmt::Debug for SharedSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl SharedSettings {
    fn new(url: &str, password_file: Option<PathBuf>) -> Result<SharedSettings, SettingError> {
        let config = Config::from_str(url).map_err(|e| {
            SettingError::new(
                format!("the store URL is not a PostgreSQL URL: {e}"),
                "write it as postgres://USER@HOST:PORT/DB (or with host=/path/to/socket/dir)",
            )
        })?;
        if config.get_password().is_some() {
            return Err(SettingError::new(
                "the store URL holds a password",
                format!(
                    "URLs end up in shell histories and logs: put the password in a file named by \
                     `[store] password_file`, or in {PASSWORD_ENV}"
                ),
            ));
        }
        let hosts = config.get_hosts();
        if hosts.is_empty() {
            return Err(SettingError::new(
                "the store URL names no host",
                "name a loopback address or a Unix socket directory",
            ));
        }
        for host in hosts {
            if let Host::Tcp(name) = host
                && !is_loopback(name)
            {
                return Err(SettingError::new(
                    format!("the store URL names `{name}`, which is not a loopback address"),
                    "toolwarden does not speak TLS to PostgreSQL yet: reach the database through \
                     a Unix socket or a loopback address (an SSH or TLS tunnel to a remote one)",
                ));
            }
        }
        let shown = shown(&config);
        Ok(SharedSettings {
            config,
            password_file,
            shown,
        })
    }

    /// The URL without its password, for messages.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

fn is_loopback(name: &str) -> bool {
    name == "localhost"
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn shown(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "postgres://{}@{}:{port}/{}",
        config.get_user().unwrap_or(""),
        hosts.join(","),
        config.get_dbname().unwrap_or("")
    )
}

/// A failure of the shared store.
#[derive(Debug, thiserror::Error)]
pub enum SharedError {
    #[error("{}", said(.0))]
    Postgres(#[from] tokio_postgres::Error),
    #[error("{0}")]
    Setup(String),
    /// Reading the SQLite state to copy failed.
    #[error("reading the state to copy: {0}")]
    Source(String),
    /// The shared store already holds state: copying would mix two.
    #[error("{0}")]
    NotEmpty(String),
}

impl SharedError {
    /// Whether PostgreSQL refused the data itself: a data exception (class
    /// 22: a NUL in text, a value out of range) or a value past one of its
    /// limits (class 54). Not an integrity violation (class 23): a key two
    /// hosts raced for is taken on the next try.
    pub fn refuses_data(&self) -> bool {
        let Self::Postgres(e) = self else {
            return false;
        };
        e.code()
            .is_some_and(|code| matches!(code.code().get(..2), Some("22" | "54")))
    }
}

/// What PostgreSQL said: a server's error names its cause and code, where
/// the driver's own text is only "db error".
fn said(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

/// Connections one process keeps to the shared store: a caller takes an
/// idle one, opens another while fewer are open, else waits for one.
const POOL_SIZE: usize = 4;

/// The shared store: a small pool of connections, each made again when
/// lost.
pub struct Shared {
    settings: SharedSettings,
    pool: Mutex<Idle>,
    returned: Condvar,
}

struct Idle {
    connections: Vec<Connection>,
    open: usize,
}

/// A connection taken from the pool, given back when dropped (unless it
/// was lost: the next caller opens a fresh one).
pub(super) struct Pooled<'a> {
    shared: &'a Shared,
    connection: Option<Connection>,
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let mut idle = self.shared.idle();
        match self.connection.take() {
            Some(c) if !c.is_closed() => idle.connections.push(c),
            _ => idle.open -= 1,
        }
        self.shared.returned.notify_one();
    }
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        match &self.connection {
            Some(c) => c,
            None => unreachable!("a pooled connection is held until dropped"),
        }
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        match &mut self.connection {
            Some(c) => c,
            None => unreachable!("a pooled connection is held until dropped"),
        }
    }
}

/// A connection with the statements prepared on it so far: a prepared
/// statement is sent without a round trip of its own, and statements sent
/// together are pipelined, so the hot paths cost one or two round trips.
pub(super) struct Connection {
    client: Client,
    prepared: std::collections::HashMap<&'static str, Statement>,
}

impl Connection {
    fn new(client: Client) -> Connection {
        Connection {
            client,
            prepared: Default::default(),
        }
    }

    /// `sql` prepared on this connection (once).
    pub(super) async fn statement(&mut self, sql: &'static str) -> Result<Statement, SharedError> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql).await?;
        self.prepared.insert(sql, statement.clone());
        Ok(statement)
    }
}

impl std::ops::Deref for Connection {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl std::ops::DerefMut for Connection {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("url", &self.settings.shown)
            .finish()
    }
}

/// The thread that drives every PostgreSQL connection of this process.
fn driver() -> Result<&'static tokio::runtime::Handle, SharedError> {
    static DRIVER: OnceLock<tokio::runtime::Handle> = OnceLock::new();
    if let Some(handle) = DRIVER.get() {
        return Ok(handle);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("toolwarden-postgres".into())
        .spawn(move || {
            match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => {
                    let _ = tx.send(Ok(runtime.handle().clone()));
                    runtime.block_on(std::future::pending::<()>());
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            }
        })
        .map_err(|e| SharedError::Setup(format!("cannot start the database thread: {e}")))?;
    let handle = rx
        .recv()
        .map_err(|_| SharedError::Setup("the database thread ended at once".into()))?
        .map_err(|e| SharedError::Setup(format!("cannot start the database runtime: {e}")))?;
    Ok(DRIVER.get_or_init(|| handle))
}

/// Runs `fut` to its end on this thread. Client futures only talk to the
/// connection's task through channels, so they need no runtime here.
fn wait<F: std::future::Future>(fut: F) -> F::Output {
    futures::executor::block_on(fut)
}

fn connect(settings: &SharedSettings) -> Result<Client, SharedError> {
    let mut config = settings.config.clone();
    if let Some(file) = &settings.password_file {
        let text = std::fs::read_to_string(file).map_err(|e| {
            SharedError::Setup(format!(
                "cannot read the store's password file `{}`: {e}",
                file.display()
            ))
        })?;
        config.password(text.trim_end_matches(['\r', '\n']));
    } else if let Ok(password) = std::env::var(PASSWORD_ENV) {
        config.password(password);
    }
    let handle = driver()?;
    let connecting = handle.spawn(async move {
        let (client, connection) = config.connect(NoTls).await?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!("the shared store's connection ended: {e}");
            }
        });
        Ok::<_, tokio_postgres::Error>(client)
    });
    match wait(connecting) {
        Ok(client) => Ok(client?),
        Err(e) => Err(SharedError::Setup(format!("connecting failed: {e}"))),
    }
}

impl Shared {
    /// Connects and brings the schema up to date; several hosts starting at
    /// once migrate one after the other (an advisory lock), and a schema
    /// newer than this host's is refused.
    pub fn open(settings: &SharedSettings) -> Result<Shared, SharedError> {
        let mut client = connect(settings)?;
        wait(migrate(&mut client))?;
        Ok(Shared::with(settings, Connection::new(client)))
    }

    fn with(settings: &SharedSettings, first: Connection) -> Shared {
        Shared {
            settings: settings.clone(),
            pool: Mutex::new(Idle {
                connections: vec![first],
                open: 1,
            }),
            returned: Condvar::new(),
        }
    }

    fn idle(&self) -> MutexGuard<'_, Idle> {
        // Only plain bookkeeping is done under the lock: nothing to tear.
        self.pool.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn shown(&self) -> &str {
        &self.settings.shown
    }

    /// Another connection to the same store, for a thread of its own (the
    /// audit writer's batches then never hold up a call's budget check).
    pub fn another(&self) -> Result<Shared, SharedError> {
        let first = Connection::new(connect(&self.settings)?);
        Ok(Shared::with(&self.settings, first))
    }

    /// A connection of the pool: an idle one, else a new one while fewer
    /// than [`POOL_SIZE`] are open, else the first one given back. A lost
    /// connection is dropped and replaced.
    fn client(&self) -> Result<Pooled<'_>, SharedError> {
        let mut idle = self.idle();
        loop {
            while let Some(c) = idle.connections.pop() {
                if !c.is_closed() {
                    return Ok(Pooled {
                        shared: self,
                        connection: Some(c),
                    });
                }
                idle.open -= 1;
            }
            if idle.open < POOL_SIZE {
                idle.open += 1;
                drop(idle);
                return match connect(&self.settings) {
                    Ok(client) => Ok(Pooled {
                        shared: self,
                        connection: Some(Connection::new(client)),
                    }),
                    Err(e) => {
                        self.idle().open -= 1;
                        self.returned.notify_one();
                        Err(e)
                    }
                };
            }
            idle = self.returned.wait(idle).unwrap_or_else(|p| p.into_inner());
        }
    }

    pub fn insert_approval(&self, row: &ApprovalRow) -> Result<(), SharedError> {
        let client = self.client()?;
        wait(insert_approval(&**client, row))
    }

    pub fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, SharedError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            &format!("SELECT {COLUMNS} FROM approvals WHERE id = $1"),
            &[&id],
        ))?;
        row.as_ref().map(from_row).transpose()
    }

    pub fn matching_approval(
        &self,
        expected: &ApprovalRow,
        now_ms: i64,
    ) -> Result<Option<ApprovalRow>, SharedError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            &format!(
                "SELECT {COLUMNS} FROM approvals WHERE tool = $1 AND args_digest = $2 \
                 AND session = $3 AND plugin_sha256 = $4 AND grant_fs = $5 AND policy_hash = $6 \
                 AND state IN ('pending', 'approved', 'denied') AND expires_ms > $7 \
                 AND grant_net = $8 AND profile = $9 \
                 ORDER BY state = 'approved' DESC, created_ms DESC LIMIT 1"
            ),
            &[
                &expected.tool,
                &expected.args_digest,
                &expected.session,
                &expected.plugin_sha256,
                &expected.grant_fs,
                &expected.policy_hash,
                &now_ms,
                &expected.grant_net,
                &expected.profile,
            ],
        ))?;
        row.as_ref().map(from_row).transpose()
    }

    pub fn approvals(&self) -> Result<Vec<ApprovalRow>, SharedError> {
        let client = self.client()?;
        let rows = wait(client.query(
            &format!("SELECT {COLUMNS} FROM approvals ORDER BY created_ms DESC, id DESC"),
            &[],
        ))?;
        rows.iter().map(from_row).collect()
    }

    pub fn approvals_version(&self) -> Result<i64, SharedError> {
        let client = self.client()?;
        let row = wait(client.query_one(
            "SELECT (count(*) + coalesce(max(created_ms), 0) + coalesce(sum(decided_ms), 0) \
             + coalesce(sum(consumed_ms), 0) + count(preview))::BIGINT FROM approvals",
            &[],
        ))?;
        Ok(row.try_get(0)?)
    }

    pub fn set_preview(&self, id: &str, preview: &str, bound: &str) -> Result<(), SharedError> {
        let client = self.client()?;
        wait(client.execute(
            "UPDATE approvals SET preview = $2, bound_files = $3 WHERE id = $1 AND state = 'pending'",
            &[&id, &preview, &bound],
        ))?;
        Ok(())
    }

    pub fn retire_approval(&self, id: &str, now: i64) -> Result<(), SharedError> {
        let client = self.client()?;
        wait(client.execute(
            "UPDATE approvals SET expires_ms = least(expires_ms, $2) WHERE id = $1",
            &[&id, &now],
        ))?;
        Ok(())
    }

    pub fn decide_approval(
        &self,
        id: &str,
        state: ApprovalState,
        reason: Option<&str>,
        by: &str,
        now_ms: i64,
    ) -> Result<Option<(ApprovalRow, bool)>, SharedError> {
        let client = self.client()?;
        let changed = wait(client.query_opt(
            &format!(
                "UPDATE approvals SET state = $2, decided_reason = $3, decided_ms = $4, \
                 decided_by = $5 WHERE id = $1 AND state = 'pending' AND expires_ms > $4 \
                 RETURNING {COLUMNS}"
            ),
            &[&id, &state.as_str(), &reason, &now_ms, &by],
        ))?;
        if let Some(row) = changed {
            return Ok(Some((from_row(&row)?, true)));
        }
        drop(client);
        Ok(self.approval(id)?.map(|row| (row, false)))
    }

    /// Consumes approval `id` for the call `expected` describes, at most
    /// once across every host sharing the database: the `UPDATE` takes the
    /// row only while it is approved, unexpired and bound to this call.
    pub fn consume_approval(
        &self,
        id: &str,
        expected: &ApprovalRow,
        now_ms: i64,
    ) -> Result<Consumed, SharedError> {
        let client = self.client()?;
        let taken = wait(client.query_opt(
            &format!(
                "UPDATE approvals SET state = 'consumed', consumed_ms = $2 WHERE id = $1 \
                 AND state = 'approved' AND expires_ms > $2 AND tool = $3 AND args_digest = $4 \
                 AND session = $5 AND plugin_sha256 = $6 AND grant_fs = $7 AND grant_net = $8 \
                 AND policy_hash = $9 AND profile = $10 RETURNING {COLUMNS}"
            ),
            &[
                &id,
                &now_ms,
                &expected.tool,
                &expected.args_digest,
                &expected.session,
                &expected.plugin_sha256,
                &expected.grant_fs,
                &expected.grant_net,
                &expected.policy_hash,
                &expected.profile,
            ],
        ))?;
        if let Some(row) = taken {
            return Ok(Consumed::Now(from_row(&row)?));
        }
        drop(client);
        // Not taken: say why, from the row as it is now.
        Ok(match self.approval(id)? {
            None => Consumed::Missing,
            Some(row) if row.state != ApprovalState::Approved => Consumed::NotApproved(row),
            Some(row) if row.expires_ms <= now_ms => Consumed::Expired(row),
            Some(row) => match row.first_difference(expected) {
                Some(binding) => Consumed::Mismatch(binding),
                // Approved and fitting now, yet not taken a moment ago: it
                // changed in between; the caller asks again.
                None => Consumed::NotApproved(row),
            },
        })
    }
}

impl Shared {
    /// Keeps what request state `key` stands for; forgets states issued
    /// before `expired_before_ms` on the way.
    pub fn put_request_state(
        &self,
        key: &str,
        pending: &str,
        now_ms: i64,
        expired_before_ms: i64,
    ) -> Result<(), SharedError> {
        let client = self.client()?;
        wait(client.execute(
            "DELETE FROM request_states WHERE issued_ms < $1",
            &[&expired_before_ms],
        ))?;
        wait(client.execute(
            "INSERT INTO request_states (key, pending, issued_ms) VALUES ($1, $2, $3)",
            &[&key, &pending, &now_ms],
        ))?;
        Ok(())
    }

    /// Takes request state `key` out, if it is there and was issued at or
    /// after `issued_since_ms`: of hosts racing with one state, one gets it.
    pub fn take_request_state(
        &self,
        key: &str,
        issued_since_ms: i64,
    ) -> Result<Option<String>, SharedError> {
        let client = self.client()?;
        let row = wait(client.query_opt(
            "DELETE FROM request_states WHERE key = $1 RETURNING pending, issued_ms",
            &[&key],
        ))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let issued: i64 = row.try_get(1)?;
        Ok((issued >= issued_since_ms)
            .then(|| row.try_get(0))
            .transpose()?)
    }
}

async fn insert_approval(
    client: &impl GenericClient,
    row: &ApprovalRow,
) -> Result<(), SharedError> {
    client
        .execute(
            &format!(
                "INSERT INTO approvals ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
                 $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)"
            ),
            &[
                &row.id,
                &row.tool,
                &row.args,
                &row.args_digest,
                &row.session,
                &row.plugin_sha256,
                &row.grant_fs,
                &row.policy_hash,
                &row.reason,
                &row.state.as_str(),
                &row.decided_reason,
                &row.created_ms,
                &row.expires_ms,
                &row.decided_ms,
                &row.consumed_ms,
                &row.grant_net,
                &row.decided_by,
                &row.rules,
                &row.profile,
                &row.preview,
                &row.bound_files,
            ],
        )
        .await?;
    Ok(())
}

async fn migrate(client: &mut Client) -> Result<(), SharedError> {
    let tx = client.transaction().await?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext('toolwarden schema'))",
        &[],
    )
    .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS toolwarden_schema (
            id      INTEGER PRIMARY KEY CHECK (id = 1),
            version INTEGER NOT NULL
        )",
    )
    .await?;
    let version: i32 = tx
        .query_opt("SELECT version FROM toolwarden_schema WHERE id = 1", &[])
        .await?
        .map(|row| row.try_get(0))
        .transpose()?
        .unwrap_or(0);
    if version > SCHEMA_VERSION {
        return Err(SharedError::Setup(format!(
            "the shared store's schema is version {version}, newer than this host's \
             {SCHEMA_VERSION}: a newer toolwarden wrote it; run that version"
        )));
    }
    for (to, migration) in [
        (1, MIGRATION_1),
        (2, MIGRATION_2),
        (3, MIGRATION_3),
        (4, MIGRATION_4),
    ] {
        if version < to {
            tx.batch_execute(migration).await?;
        }
    }
    tx.execute(
        "INSERT INTO toolwarden_schema (id, version) VALUES (1, $1) \
         ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version",
        &[&SCHEMA_VERSION.max(version)],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

fn from_row(r: &Row) -> Result<ApprovalRow, SharedError> {
    Ok(ApprovalRow {
        id: r.try_get(0)?,
        tool: r.try_get(1)?,
        args: r.try_get(2)?,
        args_digest: r.try_get(3)?,
        session: r.try_get(4)?,
        plugin_sha256: r.try_get(5)?,
        grant_fs: r.try_get(6)?,
        policy_hash: r.try_get(7)?,
        reason: r.try_get(8)?,
        state: ApprovalState::parse(r.try_get(9)?),
        decided_reason: r.try_get(10)?,
        created_ms: r.try_get(11)?,
        expires_ms: r.try_get(12)?,
        decided_ms: r.try_get(13)?,
        consumed_ms: r.try_get(14)?,
        grant_net: r.try_get(15)?,
        decided_by: r.try_get(16)?,
        rules: r.try_get(17)?,
        profile: r.try_get(18)?,
        preview: r.try_get(19)?,
        bound_files: r.try_get(20)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str) -> SettingError {
        match SharedSettings::new(url, None) {
            Ok(settings) => panic!("{url} was accepted as {settings:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn loopback_and_socket_urls_are_accepted_and_shown_without_a_password() {
        for (url, shown) in [
            (
                "postgres://tw@127.0.0.1:5433/book",
                "postgres://tw@127.0.0.1:5433/book",
            ),
            (
                "postgres://tw@localhost/book",
                "postgres://tw@localhost:5432/book",
            ),
            ("postgres://tw@[::1]:7/b", "postgres://tw@::1:7/b"),
            (
                "host=/run/postgresql user=tw dbname=b",
                "postgres://tw@/run/postgresql:5432/b",
            ),
        ] {
            let settings =
                SharedSettings::new(url, None).unwrap_or_else(|e| panic!("{url}: {}", e.message));
            assert_eq!(settings.shown(), shown);
        }
    }

    #[test]
    fn a_password_a_remote_host_or_a_bad_url_is_refused_with_what_to_do() {
        let e = refused("postgres://tw:s3cret@127.0.0.1/book");
        assert!(e.message.contains("holds a password"), "{}", e.message);
        assert!(!e.message.contains("s3cret") && !e.hint.contains("s3cret"));
        assert!(e.hint.contains("password_file"));
        let e = refused("postgres://tw@db.example.com/book");
        assert!(e.message.contains("db.example.com") && e.hint.contains("TLS"));
        let e = refused("postgres://tw@10.0.0.5/book");
        assert!(e.message.contains("not a loopback"));
        let e = refused("mysql://tw@127.0.0.1/book");
        assert!(e.message.contains("not a PostgreSQL URL"), "{}", e.message);
    }
}
