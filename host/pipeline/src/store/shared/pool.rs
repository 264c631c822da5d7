//! The connections one process keeps to the shared store, and the thread
//! that drives them (see the module docs of `shared`).

use super::settings::PASSWORD_ENV;
use super::{SharedError, SharedSettings, migrate};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use tokio_postgres::{Client, NoTls, Statement};

/// Connections one process keeps to the shared store: a caller takes an
/// idle one, opens another while fewer are open, else waits for one.
pub(super) const POOL_SIZE: usize = 4;

/// The shared store: a small pool of connections, each made again when
/// lost.
pub struct Shared {
    settings: SharedSettings,
    pool: Mutex<Idle>,
    returned: Condvar,
}

pub(super) struct Idle {
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
pub(super) fn driver() -> Result<&'static tokio::runtime::Handle, SharedError> {
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
pub(super) fn wait<F: std::future::Future>(fut: F) -> F::Output {
    futures::executor::block_on(fut)
}

pub(super) fn connect(settings: &SharedSettings) -> Result<Client, SharedError> {
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
    let tls = settings.tls.connector.clone();
    let connecting = handle.spawn(async move {
        match tls {
            None => drive(config.connect(NoTls).await?),
            Some(tls) => drive(config.connect(tls).await?),
        }
    });
    match wait(connecting) {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(super::tls::explain(e)),
        Err(e) => Err(SharedError::Setup(format!("connecting failed: {e}"))),
    }
}

/// The client, once its connection is driven on the driver's runtime.
fn drive<S, T>(
    (client, connection): (Client, tokio_postgres::Connection<S, T>),
) -> Result<Client, tokio_postgres::Error>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!("the shared store's connection ended: {e}");
        }
    });
    Ok(client)
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

    pub(super) fn with(settings: &SharedSettings, first: Connection) -> Shared {
        Shared {
            settings: settings.clone(),
            pool: Mutex::new(Idle {
                connections: vec![first],
                open: 1,
            }),
            returned: Condvar::new(),
        }
    }

    pub(super) fn idle(&self) -> MutexGuard<'_, Idle> {
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
    pub(super) fn client(&self) -> Result<Pooled<'_>, SharedError> {
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
}
