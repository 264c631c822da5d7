//! What `audit stats` needs of the audit log, counted by the database: how
//! calls ended per tool, approvals and retries, the nearest-rank
//! percentiles of duration, fuel and output size, and per session its calls,
//! turns and longest run of one call repeated. The database groups, sorts
//! and ranks, so a million records cost the host a few rows of memory, not
//! the records (`audit/stats.rs` turns the rows into the report).
//!
//! The queries are written once here for both databases; a [`Dialect`]
//! says how each reads a field of a record's JSON.

use super::audit::{AuditFilter, SQLITE_MATCHES, SQLITE_TREE, sqlite_args};
use super::{Store, StoreError};

/// A count of records of one tool, by kind (`None`: a kind the report does
/// not count, which still makes the tool appear), the code a call ended
/// with, and whether an approval was granted.
#[derive(Debug)]
pub struct CountRow {
    pub tool: String,
    pub kind: Option<String>,
    pub code: Option<String>,
    pub approved: Option<bool>,
    pub records: u64,
}

/// A value of `metric` for `tool` at `rank` (1-based) among `of` values:
/// only ranks that some percentile picks are returned.
#[derive(Debug)]
pub struct RankRow {
    pub metric: String,
    pub tool: String,
    pub value: u64,
    pub rank: u64,
    pub of: u64,
}

#[derive(Debug)]
pub struct SessionRow {
    pub session: String,
    pub calls: u64,
    pub calls_in_turns: u64,
    pub turns: u64,
    pub longest_repeat: u64,
}

/// Everything `audit stats` reads, already grouped.
#[derive(Debug, Default)]
pub struct AuditTallies {
    pub counts: Vec<CountRow>,
    pub ranks: Vec<RankRow>,
    pub sessions: Vec<SessionRow>,
}

/// The percentiles `audit stats` reports.
pub const PERCENTILES: [u64; 3] = [50, 95, 99];

/// The 1-based nearest rank of percentile `p` among `n` values.
pub fn nearest_rank(n: u64, p: u64) -> u64 {
    (n * p).div_ceil(100).max(1)
}

/// How a database reads a field of a record's JSON `data`.
pub(super) struct Dialect {
    /// The filter's selection as `WITH ... sel AS (...)`, its columns
    /// `seq, session, tool, kind, data`; in `order` when `limited`. Without
    /// a limit it has no ORDER BY either, so the database can fold it into
    /// each query instead of copying the records into a temporary table.
    pub selection: fn(order: &str, limited: bool) -> String,
    /// The field as text when it is a JSON string, NULL otherwise.
    pub text: fn(&str) -> String,
    /// The field as an integer when it is a non-negative JSON integer.
    pub count: fn(&str) -> String,
    /// Whether the field is JSON `true`.
    pub is_true: fn(&str) -> String,
}

/// The three queries, in the order of [`AuditTallies`]' fields.
pub(super) fn queries(d: &Dialect, filter: &AuditFilter) -> [String; 3] {
    let order = if filter.newest_first { "DESC" } else { "ASC" };
    let sel = (d.selection)(order, filter.limit.is_some());
    let counted = "'outcome', 'refused', 'approval_asked', 'retried', 'approval_decided'";
    let counts = format!(
        "{sel} SELECT tool, kind, code, approved, count(*) FROM (\
           SELECT tool, CASE WHEN kind IN ({counted}) THEN kind END AS kind, \
             CASE WHEN kind IN ('outcome', 'refused') THEN {code} END AS code, \
             CASE WHEN kind = 'approval_decided' THEN {approved} END AS approved \
           FROM sel) c GROUP BY tool, kind, code, approved",
        code = (d.text)("code"),
        approved = (d.is_true)("approved"),
    );
    let metric = |name: &str| {
        format!(
            "SELECT '{name}' AS metric, tool, {} AS v FROM sel WHERE kind = 'outcome'",
            (d.count)(name)
        )
    };
    let ranks_wanted: Vec<String> = PERCENTILES
        .iter()
        .map(|p| format!("(n * {p} + 99) / 100"))
        .collect();
    let ranks = format!(
        "{sel} SELECT metric, tool, v, rn, n FROM (\
           SELECT metric, tool, v, row_number() OVER w AS rn, \
             count(*) OVER (PARTITION BY metric, tool) AS n \
           FROM ({} UNION ALL {} UNION ALL {}) m WHERE v IS NOT NULL \
           WINDOW w AS (PARTITION BY metric, tool ORDER BY v)) r \
         WHERE rn IN ({})",
        metric("duration_us"),
        metric("fuel_used"),
        metric("output_bytes"),
        ranks_wanted.join(", "),
    );
    // A run of one call repeated: a call starts a new run unless it has the
    // tool and arguments of the one before it in its session.
    let sessions = format!(
        "{sel}, calls AS (\
           SELECT seq, session, tool, coalesce({digest}, '') AS digest, {turn} AS turn \
           FROM sel WHERE kind = 'call'), \
         marked AS (\
           SELECT session, seq, CASE WHEN lag(tool) OVER w = tool AND lag(digest) OVER w = digest \
             THEN 0 ELSE 1 END AS starts \
           FROM calls WINDOW w AS (PARTITION BY session ORDER BY seq)), \
         runs AS (\
           SELECT session, sum(starts) OVER (PARTITION BY session ORDER BY seq \
             ROWS UNBOUNDED PRECEDING) AS run FROM marked), \
         longest AS (\
           SELECT session, max(k) AS longest FROM (\
             SELECT session, run, count(*) AS k FROM runs GROUP BY session, run) per_run \
           GROUP BY session), \
         totals AS (\
           SELECT session, count(*) AS calls, count(turn) AS in_turns, \
             count(DISTINCT turn) AS turns FROM calls GROUP BY session) \
         SELECT t.session, t.calls, t.in_turns, t.turns, l.longest \
         FROM totals t JOIN longest l ON l.session = t.session",
        digest = (d.text)("args_digest"),
        turn = (d.text)("turn"),
    );
    [counts, ranks, sessions]
}

const SQLITE: Dialect = Dialect {
    selection: |order, limited| {
        let limit = if limited {
            format!("ORDER BY seq {order} LIMIT ?4")
        } else {
            "AND ?4 IS NULL".to_owned()
        };
        format!(
            "{SQLITE_TREE}, sel AS (SELECT seq, session, tool, kind, data FROM audit \
             WHERE {SQLITE_MATCHES} {limit})"
        )
    },
    text: |key| {
        format!(
            "CASE WHEN json_type(data, '$.{key}') = 'text' THEN json_extract(data, '$.{key}') END"
        )
    },
    count: |key| {
        format!(
            "CASE WHEN json_type(data, '$.{key}') = 'integer' AND json_extract(data, '$.{key}') >= 0 \
             THEN json_extract(data, '$.{key}') END"
        )
    },
    is_true: |key| format!("json_type(data, '$.{key}') = 'true'"),
};

/// Every row `sql` answers, mapped.
fn rows<T>(
    conn: &rusqlite::Connection,
    sql: &str,
    args: &[&dyn rusqlite::ToSql],
    map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    let mut statement = conn.prepare(sql)?;
    let mapped = statement.query_map(args, map)?;
    mapped.collect()
}

/// A count from either database, never negative.
fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or_default()
}

impl Store {
    /// What `audit stats` reports on the records `filter` selects, counted
    /// by the database.
    pub fn audit_tallies(&self, filter: &AuditFilter) -> Result<AuditTallies, StoreError> {
        if let Some(shared) = &self.shared {
            return shared
                .audit_tallies(filter)
                .map_err(|e| self.shared_error(e));
        }
        let [counts, ranks, sessions] = queries(&SQLITE, filter);
        let conn = self.conn();
        let args = &sqlite_args(filter);
        let read = || -> rusqlite::Result<AuditTallies> {
            Ok(AuditTallies {
                counts: rows(&conn, &counts, args, |r| {
                    Ok(CountRow {
                        tool: r.get(0)?,
                        kind: r.get(1)?,
                        code: r.get(2)?,
                        approved: r.get(3)?,
                        records: unsigned(r.get(4)?),
                    })
                })?,
                ranks: rows(&conn, &ranks, args, |r| {
                    Ok(RankRow {
                        metric: r.get(0)?,
                        tool: r.get(1)?,
                        value: unsigned(r.get(2)?),
                        rank: unsigned(r.get(3)?),
                        of: unsigned(r.get(4)?),
                    })
                })?,
                sessions: rows(&conn, &sessions, args, |r| {
                    Ok(SessionRow {
                        session: r.get(0)?,
                        calls: unsigned(r.get(1)?),
                        calls_in_turns: unsigned(r.get(2)?),
                        turns: unsigned(r.get(3)?),
                        longest_repeat: unsigned(r.get(4)?),
                    })
                })?,
            })
        };
        read().map_err(|e| self.error(e))
    }
}
