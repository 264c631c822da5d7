//! How each tool behaves, from the audit records a filter selects: calls
//! and how they ended, refusals for duplicates and budgets, retries,
//! approvals, and the spread of duration, fuel and output size; per
//! session, calls and the longest run of the same call repeated (a model
//! that makes no progress). The database counts (`store/tallies.rs`: memory
//! stays flat however many records there are); this module makes the
//! report of its rows. Reads; never writes.

use crate::store::{AuditTallies, PERCENTILES, nearest_rank};
use serde::Serialize;
use std::collections::BTreeMap;

/// Everything `toolwarden audit stats` reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    pub tools: BTreeMap<String, ToolStats>,
    pub sessions: BTreeMap<String, SessionStats>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ToolStats {
    /// Calls that ended (ran, or were refused before running).
    pub calls: u64,
    /// How they ended: `ok` or the error code, with counts and shares.
    pub outcomes: BTreeMap<String, u64>,
    pub rates: BTreeMap<String, f64>,
    pub duplicates_refused: u64,
    pub budget_stops: u64,
    /// Calls refused by a `[[rate_limit]]`.
    pub rate_limited: u64,
    /// Attempts that failed and were run again (`[retry]`).
    pub retries: u64,
    pub approvals: ApprovalStats,
    /// Of the calls that ran.
    pub duration_us: Spread,
    pub fuel: Spread,
    pub output_bytes: Spread,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ApprovalStats {
    pub asked: u64,
    pub approved: u64,
    pub denied: u64,
    /// Calls refused because the approval they brought had expired.
    pub expired: u64,
}

/// Percentiles by the nearest-rank method; all zero without samples.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Spread {
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SessionStats {
    pub calls: u64,
    /// Model turns its calls came in (`turn`, or a library batch); calls
    /// made one at a time (MCP, `call`) belong to none.
    pub turns: u64,
    /// Calls that came in a turn.
    pub calls_in_turns: u64,
    /// `calls_in_turns / turns`; 0 without turns.
    pub calls_per_turn: f64,
    /// The most times in a row one tool was called with the same
    /// arguments.
    pub longest_repeat: u64,
}

impl Spread {
    /// Sets the percentiles that the value at `rank` (1-based, of `of`)
    /// is the nearest rank of.
    fn place(&mut self, value: u64, rank: u64, of: u64) {
        for p in PERCENTILES {
            if nearest_rank(of, p) == rank {
                match p {
                    50 => self.p50 = value,
                    95 => self.p95 = value,
                    _ => self.p99 = value,
                }
            }
        }
    }
}

/// The report from what the database counted (see `store/tallies.rs`).
pub fn stats(tallies: AuditTallies) -> Stats {
    let mut stats = Stats::default();
    for count in tallies.counts {
        let tool = stats.tools.entry(count.tool).or_default();
        let n = count.records;
        let ended = match count.kind.as_deref() {
            Some("outcome") => Some(count.code.unwrap_or_else(|| "ok".to_owned())),
            Some("refused") => Some(count.code.unwrap_or_else(|| "HOST_ERROR".to_owned())),
            Some("approval_asked") => {
                tool.approvals.asked += n;
                None
            }
            Some("retried") => {
                tool.retries += n;
                None
            }
            Some("approval_decided") => {
                match count.approved {
                    Some(true) => tool.approvals.approved += n,
                    _ => tool.approvals.denied += n,
                }
                None
            }
            _ => None,
        };
        if let Some(outcome) = ended {
            tool.calls += n;
            match outcome.as_str() {
                "DUPLICATE_CALL" => tool.duplicates_refused += n,
                "BUDGET_EXCEEDED" => tool.budget_stops += n,
                "RATE_LIMITED" => tool.rate_limited += n,
                "APPROVAL_EXPIRED" => tool.approvals.expired += n,
                _ => {}
            }
            *tool.outcomes.entry(outcome).or_default() += n;
        }
    }
    for tool in stats.tools.values_mut() {
        let calls = tool.calls.max(1) as f64;
        tool.rates = tool
            .outcomes
            .iter()
            .map(|(outcome, n)| (outcome.clone(), (*n as f64 / calls * 1e4).round() / 1e4))
            .collect();
    }
    for rank in tallies.ranks {
        let Some(tool) = stats.tools.get_mut(&rank.tool) else {
            continue;
        };
        let spread = match rank.metric.as_str() {
            "duration_us" => &mut tool.duration_us,
            "fuel_used" => &mut tool.fuel,
            _ => &mut tool.output_bytes,
        };
        spread.place(rank.value, rank.rank, rank.of);
    }
    for session in tallies.sessions {
        let calls_per_turn = if session.turns == 0 {
            0.0
        } else {
            (session.calls_in_turns as f64 / session.turns as f64 * 100.0).round() / 100.0
        };
        stats.sessions.insert(
            session.session,
            SessionStats {
                calls: session.calls,
                turns: session.turns,
                calls_in_turns: session.calls_in_turns,
                calls_per_turn,
                longest_repeat: session.longest_repeat,
            },
        );
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{AuditFilter, NewAuditRow, Store};
    use serde_json::{Value, json};
    use std::borrow::Cow;

    /// The report on `records` (session, tool, kind, data), counted by a
    /// real SQLite store.
    fn stats_of(records: &[(&str, &str, &str, Value)]) -> Stats {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).unwrap();
        let rows: Vec<NewAuditRow> = records
            .iter()
            .map(|(session, tool, kind, data)| NewAuditRow {
                ts_ms: 0,
                call_id: "c".into(),
                session: (*session).into(),
                tool: (*tool).into(),
                kind: Cow::Owned((*kind).to_owned()),
                data: data.to_string(),
            })
            .collect();
        store
            .append(&rows, &|seq, _, _| seq.to_string(), &[])
            .unwrap();
        stats(store.audit_tallies(&AuditFilter::default()).unwrap())
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let ran = |us: u64| ("s", "t", "outcome", json!({ "duration_us": us }));
        let hundred: Vec<_> = (1..=100).rev().map(ran).collect();
        let spread = &stats_of(&hundred).tools["t"].duration_us;
        assert_eq!((spread.p50, spread.p95, spread.p99), (50, 95, 99));
        let one = &stats_of(&[ran(7)]).tools["t"].duration_us;
        assert_eq!((one.p50, one.p99), (7, 7));
        // Values that are not non-negative integers are not samples.
        let odd = stats_of(&[
            ran(3),
            ("s", "t", "outcome", json!({ "duration_us": -4 })),
            ("s", "t", "outcome", json!({ "duration_us": "9" })),
            ("s", "t", "outcome", json!({ "duration_us": 2.5 })),
        ]);
        assert_eq!(odd.tools["t"].duration_us.p99, 3);
        assert_eq!(odd.tools["t"].calls, 4);
    }

    #[test]
    fn outcomes_refusals_approvals_and_repeats_are_counted() {
        let call = |digest: &str| ("s", "t", "call", json!({ "args_digest": digest }));
        let ran = |us: u64| {
            (
                "s",
                "t",
                "outcome",
                json!({ "status": "ok", "code": null, "duration_us": us, "fuel_used": 10, "output_bytes": 3 }),
            )
        };
        let refused = |code: &str| ("s", "t", "refused", json!({ "code": code }));
        let stats = stats_of(&[
            call("a"),
            ran(100),
            call("a"),
            (
                "s",
                "t",
                "retried",
                json!({ "attempt": 1, "code": "TOOL_FAILED" }),
            ),
            ran(300),
            call("a"),
            refused("DUPLICATE_CALL"),
            call("b"),
            refused("BUDGET_EXCEEDED"),
            refused("RATE_LIMITED"),
            ("s", "t", "approval_asked", json!({})),
            ("", "t", "approval_decided", json!({ "approved": false })),
            ("", "t", "approval_decided", json!({ "approved": true })),
            call("b"),
            refused("APPROVAL_EXPIRED"),
            ("s", "u", "policy", json!({})),
        ]);
        let t = &stats.tools["t"];
        assert_eq!(t.calls, 6);
        assert_eq!(t.outcomes["ok"], 2);
        assert_eq!(t.rates["ok"], 0.3333, "rounded to four places");
        assert_eq!(
            (
                t.duplicates_refused,
                t.budget_stops,
                t.rate_limited,
                t.retries
            ),
            (1, 1, 1, 1)
        );
        assert_eq!(
            t.approvals,
            ApprovalStats {
                asked: 1,
                approved: 1,
                denied: 1,
                expired: 1
            }
        );
        assert_eq!((t.duration_us.p50, t.duration_us.p99), (100, 300));
        assert_eq!((t.fuel.p50, t.output_bytes.p99), (10, 3));
        assert_eq!(
            stats.sessions["s"],
            SessionStats {
                calls: 5,
                turns: 0,
                calls_in_turns: 0,
                calls_per_turn: 0.0,
                longest_repeat: 3
            }
        );
        // A tool with records but no ended call is listed, with nothing counted.
        assert_eq!(stats.tools["u"].calls, 0);
    }

    #[test]
    fn a_repeat_is_the_same_tool_with_the_same_arguments_in_one_session() {
        let call = |session: &'static str, tool: &'static str| {
            (session, tool, "call", json!({ "args_digest": "a" }))
        };
        let records = [
            call("s", "t"),
            call("other", "t"),
            call("s", "t"),
            call("s", "u"),
            call("s", "u"),
            call("s", "u"),
            call("s", "t"),
        ];
        let stats = stats_of(&records);
        assert_eq!(stats.sessions["s"].longest_repeat, 3);
        assert_eq!(stats.sessions["other"].longest_repeat, 1);
    }

    #[test]
    fn calls_per_turn_count_only_calls_that_came_in_a_turn() {
        let in_turn = |turn: &str| {
            (
                "s",
                "t",
                "call",
                json!({ "args_digest": turn, "turn": turn }),
            )
        };
        let alone = ("s", "t", "call", json!({ "args_digest": "x" }));
        let session = &stats_of(&[
            in_turn("1"),
            in_turn("1"),
            in_turn("1"),
            alone,
            in_turn("2"),
        ])
        .sessions["s"];
        assert_eq!(
            (session.calls, session.turns, session.calls_in_turns),
            (5, 2, 4)
        );
        assert_eq!(session.calls_per_turn, 2.0);
    }
}
