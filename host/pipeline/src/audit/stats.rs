//! How each tool behaves, computed from audit records alone (so it works on
//! any segment of the log): calls and how they ended, refusals for
//! duplicates and budgets, retries, approvals, and the spread of duration, fuel and
//! output size; per session, calls and the longest run of the same call
//! repeated (a model that makes no progress). Reads records; never writes.

use super::Record;
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
    fn of(mut samples: Vec<u64>) -> Spread {
        if samples.is_empty() {
            return Spread::default();
        }
        samples.sort_unstable();
        let rank = |p: usize| samples[(samples.len() * p).div_ceil(100).max(1) - 1];
        Spread {
            p50: rank(50),
            p95: rank(95),
            p99: rank(99),
        }
    }
}

#[derive(Default)]
struct Samples {
    duration_us: Vec<u64>,
    fuel: Vec<u64>,
    output_bytes: Vec<u64>,
}

/// A session's last call (tool and argument digest) and how often in a
/// row it came.
#[derive(Default)]
struct Streak {
    last: Option<(String, String)>,
    length: u64,
}

/// Stats over `records`, in the order they were appended.
pub fn stats(records: &[Record]) -> Stats {
    let mut stats = Stats::default();
    let mut samples: BTreeMap<String, Samples> = BTreeMap::new();
    let mut streaks: BTreeMap<String, Streak> = BTreeMap::new();
    // Per session: its turns, and the calls that came in one.
    let mut turns: BTreeMap<String, (std::collections::BTreeSet<String>, u64)> = BTreeMap::new();
    for record in records {
        let tool = stats.tools.entry(record.tool.clone()).or_default();
        let text = |key: &str| record.data.get(key).and_then(|v| v.as_str());
        let number = |key: &str| record.data.get(key).and_then(|v| v.as_u64());
        let ended = match record.kind.as_str() {
            "outcome" => {
                let taken = samples.entry(record.tool.clone()).or_default();
                taken.duration_us.extend(number("duration_us"));
                taken.fuel.extend(number("fuel_used"));
                taken.output_bytes.extend(number("output_bytes"));
                Some(text("code").unwrap_or("ok").to_owned())
            }
            "refused" => Some(text("code").unwrap_or("HOST_ERROR").to_owned()),
            "approval_asked" => {
                tool.approvals.asked += 1;
                None
            }
            "retried" => {
                tool.retries += 1;
                None
            }
            "approval_decided" => {
                match record.data.get("approved").and_then(|v| v.as_bool()) {
                    Some(true) => tool.approvals.approved += 1,
                    _ => tool.approvals.denied += 1,
                }
                None
            }
            "call" => {
                let digest = text("args_digest").unwrap_or_default().to_owned();
                let streak = streaks.entry(record.session.clone()).or_default();
                let this = (record.tool.clone(), digest);
                streak.length = if streak.last.as_ref() == Some(&this) {
                    streak.length + 1
                } else {
                    1
                };
                streak.last = Some(this);
                if let Some(turn) = text("turn") {
                    let (seen, calls) = turns.entry(record.session.clone()).or_default();
                    seen.insert(turn.to_owned());
                    *calls += 1;
                }
                let session = stats.sessions.entry(record.session.clone()).or_default();
                session.calls += 1;
                session.longest_repeat = session.longest_repeat.max(streak.length);
                None
            }
            _ => None,
        };
        if let Some(outcome) = ended {
            tool.calls += 1;
            match outcome.as_str() {
                "DUPLICATE_CALL" => tool.duplicates_refused += 1,
                "BUDGET_EXCEEDED" => tool.budget_stops += 1,
                "APPROVAL_EXPIRED" => tool.approvals.expired += 1,
                _ => {}
            }
            *tool.outcomes.entry(outcome).or_default() += 1;
        }
    }
    for (id, (seen, calls)) in turns {
        if let Some(session) = stats.sessions.get_mut(&id) {
            session.turns = seen.len() as u64;
            session.calls_in_turns = calls;
            session.calls_per_turn = (calls as f64 / seen.len() as f64 * 100.0).round() / 100.0;
        }
    }
    for (name, tool) in &mut stats.tools {
        let calls = tool.calls.max(1) as f64;
        tool.rates = tool
            .outcomes
            .iter()
            .map(|(outcome, n)| (outcome.clone(), (*n as f64 / calls * 1e4).round() / 1e4))
            .collect();
        if let Some(taken) = samples.remove(name) {
            tool.duration_us = Spread::of(taken.duration_us);
            tool.fuel = Spread::of(taken.fuel);
            tool.output_bytes = Spread::of(taken.output_bytes);
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(session: &str, tool: &str, kind: &str, data: serde_json::Value) -> Record {
        Record {
            seq: 0,
            ts_ms: 0,
            call_id: "c".into(),
            session: session.into(),
            tool: tool.into(),
            kind: kind.into(),
            data,
            hash: String::new(),
        }
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        assert_eq!(Spread::of(vec![]), Spread::default());
        let spread = Spread::of((1..=100).rev().collect());
        assert_eq!((spread.p50, spread.p95, spread.p99), (50, 95, 99));
        let one = Spread::of(vec![7]);
        assert_eq!((one.p50, one.p99), (7, 7));
    }

    #[test]
    fn outcomes_refusals_approvals_and_repeats_are_counted() {
        let call = |digest: &str| record("s", "t", "call", json!({ "args_digest": digest }));
        let ran = |us: u64| {
            record(
                "s",
                "t",
                "outcome",
                json!({ "status": "ok", "code": null, "duration_us": us, "fuel_used": 10, "output_bytes": 3 }),
            )
        };
        let refused = |code: &str| record("s", "t", "refused", json!({ "code": code }));
        let records = vec![
            call("a"),
            ran(100),
            call("a"),
            record(
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
            record("s", "t", "approval_asked", json!({})),
            record("", "t", "approval_decided", json!({ "approved": false })),
            call("b"),
            refused("APPROVAL_EXPIRED"),
        ];
        let stats = stats(&records);
        let t = &stats.tools["t"];
        assert_eq!(t.calls, 5);
        assert_eq!(t.outcomes["ok"], 2);
        assert_eq!(t.rates["ok"], 0.4);
        assert_eq!((t.duplicates_refused, t.budget_stops, t.retries), (1, 1, 1));
        assert_eq!(
            t.approvals,
            ApprovalStats {
                asked: 1,
                approved: 0,
                denied: 1,
                expired: 1
            }
        );
        assert_eq!((t.duration_us.p50, t.duration_us.p99), (100, 300));
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
    }

    #[test]
    fn calls_per_turn_count_only_calls_that_came_in_a_turn() {
        let in_turn = |turn: &str| {
            record(
                "s",
                "t",
                "call",
                json!({ "args_digest": turn, "turn": turn }),
            )
        };
        let alone = record("s", "t", "call", json!({ "args_digest": "x" }));
        let records = vec![
            in_turn("1"),
            in_turn("1"),
            in_turn("1"),
            alone,
            in_turn("2"),
        ];
        let session = &stats(&records).sessions["s"];
        assert_eq!(
            (session.calls, session.turns, session.calls_in_turns),
            (5, 2, 4)
        );
        assert_eq!(session.calls_per_turn, 2.0);
    }
}
