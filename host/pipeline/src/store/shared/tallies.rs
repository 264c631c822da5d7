//! `audit stats`' tallies in PostgreSQL: the queries of `store/tallies.rs`
//! in its dialect.

use super::audit::{MATCHES, TREE, args};
use super::{Shared, SharedError, wait};
use crate::store::audit::AuditFilter;
use crate::store::tallies::{AuditTallies, CountRow, Dialect, RankRow, SessionRow, queries};

const POSTGRES: Dialect = Dialect {
    selection: |order, limited| {
        let limit = if limited {
            format!("ORDER BY seq {order} LIMIT $4::BIGINT")
        } else {
            "AND $4::BIGINT IS NULL".to_owned()
        };
        format!(
            "{TREE}, sel AS (SELECT seq, session, tool, kind, data FROM audit \
             WHERE {MATCHES} {limit})"
        )
    },
    text: |key| {
        format!(
            "CASE WHEN jsonb_typeof(data::jsonb -> '{key}') = 'string' THEN data::jsonb ->> '{key}' END"
        )
    },
    // Digits only, and few enough for a BIGINT: a JSON number that is not a
    // non-negative integer is left out, as in SQLite.
    count: |key| {
        format!(
            "CASE WHEN jsonb_typeof(data::jsonb -> '{key}') = 'number' \
             AND (data::jsonb ->> '{key}') ~ '^[0-9]{{1,18}}$' \
             THEN (data::jsonb ->> '{key}')::BIGINT END"
        )
    },
    is_true: |key| format!("(data::jsonb -> '{key}') = 'true'::jsonb"),
};

/// A count from the database, never negative.
fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or_default()
}

impl Shared {
    /// What `audit stats` reports on the records `filter` selects.
    pub fn audit_tallies(&self, filter: &AuditFilter) -> Result<AuditTallies, SharedError> {
        let client = self.client()?;
        let [counts, ranks, sessions] = queries(&POSTGRES, filter);
        let args = args(filter);
        wait(async {
            let counts = client
                .query(&counts, &args)
                .await?
                .iter()
                .map(|r| {
                    Ok(CountRow {
                        tool: r.try_get(0)?,
                        kind: r.try_get(1)?,
                        code: r.try_get(2)?,
                        approved: r.try_get(3)?,
                        records: unsigned(r.try_get(4)?),
                    })
                })
                .collect::<Result<_, SharedError>>()?;
            let ranks = client
                .query(&ranks, &args)
                .await?
                .iter()
                .map(|r| {
                    Ok(RankRow {
                        metric: r.try_get(0)?,
                        tool: r.try_get(1)?,
                        value: unsigned(r.try_get(2)?),
                        rank: unsigned(r.try_get(3)?),
                        of: unsigned(r.try_get(4)?),
                    })
                })
                .collect::<Result<_, SharedError>>()?;
            let sessions = client
                .query(&sessions, &args)
                .await?
                .iter()
                .map(|r| {
                    Ok(SessionRow {
                        session: r.try_get(0)?,
                        calls: unsigned(r.try_get(1)?),
                        calls_in_turns: unsigned(r.try_get(2)?),
                        turns: unsigned(r.try_get(3)?),
                        longest_repeat: unsigned(r.try_get(4)?),
                    })
                })
                .collect::<Result<_, SharedError>>()?;
            Ok(AuditTallies {
                counts,
                ranks,
                sessions,
            })
        })
    }
}
