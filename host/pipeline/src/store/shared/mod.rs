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

mod approvals;
mod audit;
mod budget;
mod executions;
mod import;
mod pool;
mod request_states;
mod schema;
mod settings;

use approvals::insert_approval;
pub use budget::NewReservation;
pub use import::Copied;
pub use pool::Shared;
use pool::{Connection, wait};
use schema::migrate;
pub use settings::{SharedSettings, StoreSection};

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
