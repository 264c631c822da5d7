//! The shared store's tables, and bringing a database up to them: one
//! migration per schema version, applied under an advisory lock so that
//! hosts starting together migrate once.

use super::SharedError;
use tokio_postgres::Client;

/// Bump with every migration below.
pub(super) const SCHEMA_VERSION: i32 = 13;

pub(super) const MIGRATION_1: &str = "
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
pub(super) const MIGRATION_2: &str = "
CREATE TABLE request_states (
    key       TEXT PRIMARY KEY,
    pending   TEXT NOT NULL,
    issued_ms BIGINT NOT NULL
);
CREATE INDEX request_states_issued ON request_states(issued_ms);
";

/// One audit chain for every host, with the executions budgets count
/// (appended in the same transaction), and where a cut left the chain.
pub(super) const MIGRATION_3: &str = "
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
pub(super) const MIGRATION_4: &str = "
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

/// Which caller each named session belongs to (the `ownership` step).
pub(super) const MIGRATION_5: &str = "
CREATE TABLE session_owners (
    session    TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    claimed_ms BIGINT NOT NULL
);
";

/// Approvals record who asked and who must approve, and every person's
/// decision on them (see `votes`).
pub(super) const MIGRATION_6: &str = "
ALTER TABLE approvals ADD COLUMN caller TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN quorum BIGINT NOT NULL DEFAULT 1;
ALTER TABLE approvals ADD COLUMN self_approval BOOLEAN NOT NULL DEFAULT true;
CREATE TABLE approval_votes (
    approval_id TEXT NOT NULL,
    approver    TEXT NOT NULL,
    name        TEXT NOT NULL,
    proof       TEXT NOT NULL,
    channel     TEXT NOT NULL,
    approve     BOOLEAN NOT NULL,
    reason      TEXT,
    decided_ms  BIGINT NOT NULL,
    PRIMARY KEY (approval_id, approver)
);
";

/// The calls rate limits count (see `rates`).
pub(super) const MIGRATION_7: &str = "
CREATE TABLE rate_units (
    id    BIGSERIAL PRIMARY KEY,
    key   TEXT NOT NULL,
    ts_ms BIGINT NOT NULL
);
CREATE INDEX rate_units_key ON rate_units(key, ts_ms);
CREATE INDEX rate_units_ts ON rate_units(ts_ms);
";

/// The shared chain's head, moved in the transaction of every append: a
/// tail cut from the table is seen by `audit verify` on any host, and the
/// next append chains after the head, not after what the cut left.
pub(super) const MIGRATION_8: &str = "
CREATE TABLE audit_head (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    seq  BIGINT NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash)
    SELECT 1, seq, hash FROM (
        SELECT seq, hash FROM audit UNION ALL SELECT seq, hash FROM audit_checkpoint
    ) AS ends ORDER BY seq DESC LIMIT 1;
";

/// Keys past their window are removed as new ones are claimed.
pub(super) const MIGRATION_9: &str = "
CREATE INDEX idempotency_created ON idempotency(created_ms);
";

/// MCP tasks, so any host answers for them (see `tasks`): the running
/// host's latest view of each (`snapshot`, the task as `tasks/get` shows
/// it), its lease, and what other hosts were asked to pass on to it.
pub(super) const MIGRATION_10: &str = "
CREATE TABLE tasks (
    id               TEXT PRIMARY KEY,
    host             TEXT NOT NULL,
    snapshot         TEXT NOT NULL,
    terminal         BOOLEAN NOT NULL,
    lease_until_ms   BIGINT NOT NULL,
    expires_ms       BIGINT NOT NULL,
    answers          TEXT,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX tasks_host ON tasks(host) WHERE NOT terminal;
CREATE INDEX tasks_expires ON tasks(expires_ms);
";

/// Sessions idle past `[budget] forget_sessions_after` are removed.
pub(super) const MIGRATION_11: &str = "
CREATE INDEX executions_ts ON executions(ts_ms);
";

/// A session's executions counted as they are stored and removed, so a
/// budget check reads two rows, not the session's whole history (see
/// `budget`). Triggers keep the counts, whatever path changes the table
/// (the audit's appends, `store migrate`, the pass over idle sessions, a
/// person at `psql`).
pub(super) const MIGRATION_12: &str = "
CREATE TABLE budget_totals (
    session TEXT PRIMARY KEY,
    calls   BIGINT NOT NULL,
    run_us  BIGINT NOT NULL
);
CREATE TABLE budget_tool_totals (
    session TEXT NOT NULL,
    tool    TEXT NOT NULL,
    calls   BIGINT NOT NULL,
    PRIMARY KEY (session, tool)
);
INSERT INTO budget_totals (session, calls, run_us)
    SELECT session, count(*), coalesce(sum(GREATEST(duration_us, 0)), 0)
    FROM executions GROUP BY session;
INSERT INTO budget_tool_totals (session, tool, calls)
    SELECT session, tool, count(*) FROM executions GROUP BY session, tool;
CREATE FUNCTION toolwarden_count_stored() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO budget_totals AS t (session, calls, run_us)
        SELECT session, count(*), coalesce(sum(GREATEST(duration_us, 0)), 0)
        FROM stored GROUP BY session ORDER BY session
        ON CONFLICT (session) DO UPDATE
        SET calls = t.calls + EXCLUDED.calls, run_us = t.run_us + EXCLUDED.run_us;
    INSERT INTO budget_tool_totals AS t (session, tool, calls)
        SELECT session, tool, count(*) FROM stored GROUP BY session, tool ORDER BY session, tool
        ON CONFLICT (session, tool) DO UPDATE SET calls = t.calls + EXCLUDED.calls;
    RETURN NULL;
END $$;
CREATE FUNCTION toolwarden_count_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE budget_totals AS t SET calls = t.calls - g.calls, run_us = t.run_us - g.run_us
        FROM (SELECT session, count(*) AS calls,
                     coalesce(sum(GREATEST(duration_us, 0)), 0) AS run_us
              FROM removed GROUP BY session) AS g
        WHERE t.session = g.session;
    UPDATE budget_tool_totals AS t SET calls = t.calls - g.calls
        FROM (SELECT session, tool, count(*) AS calls FROM removed GROUP BY session, tool) AS g
        WHERE t.session = g.session AND t.tool = g.tool;
    DELETE FROM budget_totals
        WHERE calls <= 0 AND session IN (SELECT session FROM removed);
    DELETE FROM budget_tool_totals
        WHERE calls <= 0 AND session IN (SELECT session FROM removed);
    RETURN NULL;
END $$;
CREATE TRIGGER executions_stored AFTER INSERT ON executions
    REFERENCING NEW TABLE AS stored FOR EACH STATEMENT EXECUTE FUNCTION toolwarden_count_stored();
CREATE TRIGGER executions_removed AFTER DELETE ON executions
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION toolwarden_count_removed();
";

/// The tokens each session's calls asked the client's model for (see
/// `sampling`).
pub(super) const MIGRATION_13: &str = "
CREATE TABLE sampling_tokens (
    session TEXT PRIMARY KEY,
    tokens  BIGINT NOT NULL,
    at_ms   BIGINT NOT NULL
);
CREATE INDEX sampling_tokens_at ON sampling_tokens(at_ms);
";

pub(super) async fn migrate(client: &mut Client) -> Result<(), SharedError> {
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
        (5, MIGRATION_5),
        (6, MIGRATION_6),
        (7, MIGRATION_7),
        (8, MIGRATION_8),
        (9, MIGRATION_9),
        (10, MIGRATION_10),
        (11, MIGRATION_11),
        (12, MIGRATION_12),
        (13, MIGRATION_13),
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
