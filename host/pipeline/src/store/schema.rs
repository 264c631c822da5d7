//! The SQLite database's schema: every migration, in order, and the step
//! that brings a database up to date. (The shared store's is
//! `shared/schema.rs`.)

use rusqlite::Connection;

/// Bump with every migration below.
const SCHEMA_VERSION: i64 = 14;

const MIGRATION_1: &str = "
CREATE TABLE audit (
    seq       INTEGER PRIMARY KEY,
    ts_ms     INTEGER NOT NULL,
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
CREATE TABLE approvals (
    id             TEXT PRIMARY KEY,
    tool           TEXT NOT NULL,
    args           TEXT NOT NULL,
    args_digest    TEXT NOT NULL,
    session        TEXT NOT NULL,
    plugin_sha256  TEXT NOT NULL,
    grant_fs       TEXT NOT NULL,
    policy_hash    TEXT NOT NULL,
    reason         TEXT NOT NULL,
    state          TEXT NOT NULL,
    decided_reason TEXT,
    created_ms     INTEGER NOT NULL,
    expires_ms     INTEGER NOT NULL,
    decided_ms     INTEGER,
    consumed_ms    INTEGER
);
CREATE TABLE executions (
    session     TEXT NOT NULL,
    tool        TEXT NOT NULL,
    args_digest TEXT NOT NULL,
    duration_us INTEGER NOT NULL,
    ts_ms       INTEGER NOT NULL
);
CREATE INDEX executions_session ON executions(session, tool, args_digest);
";

/// Approvals bind what a call may reach on the network; those recorded
/// before network existed bound none.
const MIGRATION_2: &str = "
ALTER TABLE approvals ADD COLUMN grant_net TEXT NOT NULL DEFAULT 'none';
";

/// Approvals record who decided them and which rules asked, for the
/// people reviewing them.
const MIGRATION_3: &str = "
ALTER TABLE approvals ADD COLUMN decided_by TEXT;
ALTER TABLE approvals ADD COLUMN rules TEXT NOT NULL DEFAULT '';
";

/// Approvals bind the profile of the session that asked; those recorded
/// before profiles existed were asked with none.
const MIGRATION_4: &str = "
ALTER TABLE approvals ADD COLUMN profile TEXT NOT NULL DEFAULT '';
";

/// Outcomes of keyed calls (see `idempotency`): a row is claimed (`output`
/// null) before the call runs and holds its checked output once it
/// succeeded.
const MIGRATION_5: &str = "
CREATE TABLE idempotency (
    key        TEXT PRIMARY KEY,
    call_id    TEXT NOT NULL,
    output     TEXT,
    created_ms INTEGER NOT NULL
);
";

/// The calls a tool made through `compose` name their parent in their
/// `call` record; `audit --call` follows these down a tree.
const MIGRATION_6: &str = "
CREATE INDEX audit_parent ON audit(json_extract(data, '$.parent')) WHERE kind = 'call';
";

/// Approvals keep the preview of their call and the files they hold to
/// the content those had when the approval was asked.
const MIGRATION_7: &str = "
ALTER TABLE approvals ADD COLUMN preview TEXT;
ALTER TABLE approvals ADD COLUMN bound_files TEXT NOT NULL DEFAULT '';
";

/// Where the audit chain continues from once its start was exported or
/// pruned: the last removed record's seq and hash (the next one's link).
const MIGRATION_8: &str = "
CREATE TABLE audit_checkpoint (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    seq   INTEGER NOT NULL,
    hash  TEXT NOT NULL,
    ts_ms INTEGER NOT NULL
);
";

/// Which caller each named session belongs to (the `ownership` step).
const MIGRATION_9: &str = "
CREATE TABLE session_owners (
    session    TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    claimed_ms INTEGER NOT NULL
);
";

/// Approvals record who asked and who must approve, and every person's
/// decision on them (see `votes`).
const MIGRATION_10: &str = "
ALTER TABLE approvals ADD COLUMN caller TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN quorum INTEGER NOT NULL DEFAULT 1;
ALTER TABLE approvals ADD COLUMN self_approval INTEGER NOT NULL DEFAULT 1;
CREATE TABLE approval_votes (
    approval_id TEXT NOT NULL,
    approver    TEXT NOT NULL,
    name        TEXT NOT NULL,
    proof       TEXT NOT NULL,
    channel     TEXT NOT NULL,
    approve     INTEGER NOT NULL,
    reason      TEXT,
    decided_ms  INTEGER NOT NULL,
    PRIMARY KEY (approval_id, approver)
);
";

/// The calls rate limits count (see `rates`).
const MIGRATION_11: &str = "
CREATE TABLE rate_units (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    key   TEXT NOT NULL,
    ts_ms INTEGER NOT NULL
);
CREATE INDEX rate_units_key ON rate_units(key, ts_ms);
CREATE INDEX rate_units_ts ON rate_units(ts_ms);
";

/// Keys past their window are removed as new ones are claimed (see `keys`).
const MIGRATION_12: &str = "
CREATE INDEX idempotency_created ON idempotency(created_ms);
";

/// Sessions idle past `[budget] forget_sessions_after` are removed (see
/// `executions`).
const MIGRATION_13: &str = "
CREATE INDEX executions_ts ON executions(ts_ms);
";

/// The tokens each session's calls asked the client's model for (see
/// `sampling`).
const MIGRATION_14: &str = "
CREATE TABLE sampling_tokens (
    session TEXT PRIMARY KEY,
    tokens  INTEGER NOT NULL,
    at_ms   INTEGER NOT NULL
);
CREATE INDEX sampling_tokens_at ON sampling_tokens(at_ms);
";

/// Brings `conn`'s schema up to date, refusing one newer than this host's.
pub(super) fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISMATCH),
            Some(format!(
                "the database's schema is version {version}, newer than this host's \
                 {SCHEMA_VERSION}: a newer toolwarden wrote it; run that version"
            )),
        ));
    }
    // Each migration runs in its own transaction, which reads the
    // version again: of several processes starting at once, one migrates.
    for (to, migration) in [
        (1, MIGRATION_1),
        (2, MIGRATION_2),
        (3, MIGRATION_3),
        (4, MIGRATION_4),
        (5, MIGRATION_5),
        (6, MIGRATION_6),
        (7, MIGRATION_7),
        (8, MIGRATION_8),
        (9, MIGRATION_9),
        (10, MIGRATION_10),
        (11, MIGRATION_11),
        (12, MIGRATION_12),
        (13, MIGRATION_13),
        (14, MIGRATION_14),
    ] {
        if version >= to {
            continue;
        }
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let now: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if now < to {
            tx.execute_batch(&format!("{migration} PRAGMA user_version = {to};"))?;
        }
        tx.commit()?;
    }
    Ok(())
}
