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
//! again, so a host recovers by itself once the database is back. The
//! password comes from a file or the environment, never from the URL, and
//! is never shown.
//!
//! PostgreSQL is the `postgres` feature (the CLI turns it on). Without it
//! the `[store]` table is still read, and naming a shared store is a config
//! error that says how to get a build with one (`absent`).

#[cfg(feature = "postgres")]
mod approvals;
#[cfg(feature = "postgres")]
mod audit;
#[cfg(feature = "postgres")]
mod budget;
#[cfg(feature = "postgres")]
mod executions;
#[cfg(feature = "postgres")]
mod import;
#[cfg(feature = "postgres")]
mod owners;
#[cfg(feature = "postgres")]
mod pool;
#[cfg(feature = "postgres")]
mod rates;
#[cfg(feature = "postgres")]
mod request_states;
#[cfg(feature = "postgres")]
mod sampling;
#[cfg(feature = "postgres")]
mod schema;
#[cfg(feature = "postgres")]
mod settings;
#[cfg(feature = "postgres")]
mod tallies;
#[cfg(feature = "postgres")]
mod tasks;
#[cfg(feature = "postgres")]
mod tls;
#[cfg(feature = "postgres")]
mod votes;

#[cfg(not(feature = "postgres"))]
mod absent;
mod section;

#[cfg(not(feature = "postgres"))]
pub use absent::{Shared, SharedSettings};
#[cfg(feature = "postgres")]
use approvals::insert_approval;
#[cfg(feature = "postgres")]
pub use pool::Shared;
#[cfg(feature = "postgres")]
use pool::{Connection, wait};
#[cfg(feature = "postgres")]
use schema::migrate;
pub use section::StoreSection;
#[cfg(feature = "postgres")]
pub use settings::SharedSettings;

/// A call's unit of its session's budget, as the shared store keeps it,
/// with the limits it must fit.
#[derive(Debug)]
pub struct NewReservation<'a> {
    pub session: &'a str,
    pub tool: &'a str,
    /// Empty when the call is not counted per arguments; else no unit of
    /// the session may have the same tool and digest.
    pub args_digest: &'a str,
    pub expires_ms: i64,
    pub limits: UnitLimits,
}

/// The session's limits a unit must fit (`None`: no limit), as the budget
/// guard's `check` reads them: fewer units than `max_calls`, fewer of the
/// tool's than `max_calls_per_tool`, less run time than `max_run_us`.
#[derive(Clone, Copy, Debug, Default)]
pub struct UnitLimits {
    pub max_calls: Option<i64>,
    pub max_calls_per_tool: Option<i64>,
    pub max_run_us: Option<i64>,
}

/// What a migration copied.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Copied {
    pub approvals: usize,
    pub records: usize,
    pub executions: usize,
    /// The chain's last record (seq, hash), if it has one.
    pub tail: Option<(i64, String)>,
}

/// A failure of the shared store.
#[derive(Debug, thiserror::Error)]
pub enum SharedError {
    #[cfg(feature = "postgres")]
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
    #[cfg(feature = "postgres")]
    pub fn refuses_data(&self) -> bool {
        let Self::Postgres(e) = self else {
            return false;
        };
        e.code()
            .is_some_and(|code| matches!(code.code().get(..2), Some("22" | "54")))
    }

    #[cfg(not(feature = "postgres"))]
    pub fn refuses_data(&self) -> bool {
        false
    }
}

/// What PostgreSQL said: a server's error names its cause and code, where
/// the driver's own text is only "db error".
#[cfg(feature = "postgres")]
fn said(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}
