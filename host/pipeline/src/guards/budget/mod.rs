//! Per-session budgets and the duplicate-call guard, counted over the calls
//! that actually executed in the session (denied or pending calls never
//! count, so asking for approval does not make the approved run a duplicate).
//!
//! On a host of its own, the counts live in memory, loaded from the
//! `executions` table the first time a session is seen (so a new process,
//! such as each CLI call, carries on where the last one stopped) and written
//! back through the audit writer. Passing the guard reserves the call's unit
//! under the same lock that checked it, so two concurrent calls of one
//! session can never both take the last unit; a reservation whose call does
//! not run (refused later, or waiting for approval) is released when
//! dropped. Run time is known only after a call, so concurrent calls may
//! together overrun `max_run_ms`. A session id this process minted has no
//! history, so it is never looked up; for the same reason its totals are
//! kept in memory for as long as anyone still holds the id (an MCP
//! connection does), however many other sessions come and go.
//!
//! With a shared store (several hosts), a named session is not counted in
//! memory: each check tests what every host executed or holds reserved for
//! it and reserves the unit, in one transaction under the session's lock
//! (see `store::SharedBudget`), so the limits hold across hosts as on one.
//! A call no limit or duplicate check could refuse reserves nothing there,
//! and a session this process made is counted here as on a host of its own:
//! no other host can name it.

mod forget;
mod limits;
mod section;
mod totals;

use crate::call::SessionId;
use crate::outcome::{CallError, ErrorCode};
use crate::registry::Tool;
use crate::store::{ExecutionRow, NewReservation, SharedBudget, Store, UnitLimits, now_ms};
use limits::{check, repeats_checked};
pub use section::{Budget, BudgetSection};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use totals::{Map, SessionTotals};

/// Sessions whose totals stay in memory; beyond it, idle sessions that can
/// be read back from the database (or never come back) are dropped.
pub const MAX_RESIDENT_SESSIONS: usize = 4096;

/// The sessions in memory, and when to look for ones to drop.
#[derive(Debug)]
struct Sessions {
    totals: Map<Arc<str>, SessionTotals>,
    /// Size at which idle sessions are next dropped: twice what a sweep
    /// kept, so that many live sessions do not make every new one sweep.
    sweep_at: usize,
}

impl Sessions {
    /// Drops the sessions that are idle and either named (the database
    /// has their history) or minted and no longer held by anyone: the map's
    /// key is then the id's last copy, so the session cannot come back.
    fn sweep(&mut self) {
        self.totals
            .retain(|id, t| t.in_flight > 0 || (t.minted && Arc::strong_count(id) > 1));
        self.sweep_at = (self.totals.len() * 2).max(MAX_RESIDENT_SESSIONS);
    }
}

/// Every session's totals, shared by the guard and the reservations it hands out.
#[derive(Debug)]
pub(super) struct Ledger {
    sessions: Mutex<Sessions>,
    store: Arc<Store>,
    /// How long a unit reserved in a shared store stays reserved.
    lease: Duration,
    _forgetter: forget::Forgetter,
}

/// A call's unit of its session's budget, held from the guard until the
/// call runs. Dropped without [`Reservation::executed`], it is given back.
#[derive(Debug)]
pub struct Reservation {
    ledger: Arc<Ledger>,
    session: Arc<str>,
    tool: Arc<str>,
    digest: Arc<str>,
    /// The call was counted under its digest too.
    per_args: bool,
    spent: bool,
    /// The unit's id in a shared store, which counts it there until its
    /// execution is stored or it is given back.
    shared: Option<i64>,
    /// The session's run time is limited: a shared unit is given its
    /// call's run time as soon as it is known.
    timed: bool,
    /// The call's units of the rate limits that count it (see
    /// `guards::rate`): kept once it runs, given back with this if not.
    rate: Option<super::rate::RateHold>,
}

impl Reservation {
    /// The call ran for `ran_for`: the unit stays spent, the time is added,
    /// and the row to persist is returned.
    pub fn executed(self, ran_for: Duration) -> ExecutionRow {
        self.settle(ran_for, false)
    }

    /// Holds the call's rate units with its budget unit.
    pub(in crate::guards) fn with_rate(mut self, rate: Option<super::rate::RateHold>) -> Self {
        self.rate = rate;
        self
    }

    /// The call ran for `ran_for`; `asked`: it stopped at a question.
    fn settle(mut self, ran_for: Duration, asked: bool) -> ExecutionRow {
        self.spent = true;
        if let Some(rate) = self.rate.take() {
            rate.keep();
        }
        let us = ran_for.as_micros().min(i64::MAX as u128) as u64;
        if let Some(totals) = self.ledger.lock().totals.get_mut(&self.session) {
            totals.run_us += us;
            totals.in_flight = totals.in_flight.saturating_sub(1);
        }
        // A shared unit stands for the execution until the audit writer
        // stores it, so another host's check must see what this one would.
        if let Some(id) = self.shared
            && (self.timed || (asked && self.per_args))
            && let Some(store) = self.ledger.store.shared_budget()
        {
            let digest = if self.per_args && !asked {
                &*self.digest
            } else {
                ""
            };
            if let Err(e) = store.settle(id, us as i64, digest) {
                tracing::warn!("a budget unit counts without its run time until stored: {e}");
            }
        }
        ExecutionRow {
            session: Arc::clone(&self.session),
            tool: Arc::clone(&self.tool),
            args_digest: Arc::clone(&self.digest),
            duration_us: us as i64,
            ts_ms: now_ms(),
            reservation: self.shared.take(),
        }
    }

    /// The call ran for `ran_for` and stopped at a question for a person
    /// (`INPUT_REQUIRED`): it counts as a call and its time as run time,
    /// but not as a run with these arguments, because its rerun with the
    /// answer goes on with the same call rather than repeating it. Its row
    /// keeps an empty digest, so a session reloaded from the store agrees.
    pub fn stopped_to_ask(mut self, ran_for: Duration) -> ExecutionRow {
        if self.per_args
            && let Some(totals) = self.ledger.lock().totals.get_mut(&self.session)
            && let Some(n) = totals
                .tools
                .get_mut(&*self.tool)
                .and_then(|t| t.per_args.get_mut(&*self.digest))
        {
            *n = n.saturating_sub(1);
        }
        self.digest = Arc::from("");
        self.settle(ran_for, true)
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(id) = self.shared.take() {
            // Not given back, the unit lapses with its lease.
            if let Some(Err(e)) = self.ledger.store.shared_budget().map(|b| b.release(id)) {
                tracing::warn!("a budget unit stays reserved until its lease ends: {e}");
            }
            return;
        }
        if !self.spent
            && let Some(totals) = self.ledger.lock().totals.get_mut(&self.session)
        {
            let digest = self.per_args.then_some(&*self.digest);
            totals.remove_one(&self.tool, digest);
            totals.in_flight = totals.in_flight.saturating_sub(1);
        }
    }
}

impl Ledger {
    pub(super) fn new(store: Arc<Store>, lease: Duration, forget_after: Duration) -> Ledger {
        Ledger {
            _forgetter: forget::Forgetter::start(Arc::clone(&store), forget_after),
            sessions: Mutex::new(Sessions {
                totals: Map::default(),
                sweep_at: MAX_RESIDENT_SESSIONS,
            }),
            store,
            lease,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Sessions> {
        // Totals are plain counters: a panic elsewhere cannot leave them torn.
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn load(&self, session: &SessionId) -> Result<SessionTotals, CallError> {
        if session.is_new() {
            return Ok(SessionTotals {
                minted: true,
                ..SessionTotals::default()
            });
        }
        let groups = self
            .store
            .session_executions(session.as_str())
            .map_err(|e| {
                CallError::new(
                    ErrorCode::HostError,
                    format!("cannot read the session's history, so the call did not run: {e}"),
                )
            })?;
        Ok(SessionTotals::from_groups(groups))
    }

    /// Checks the call against the session's budget and, if it fits,
    /// reserves its unit in the same step.
    pub(super) fn reserve(
        self: &Arc<Self>,
        budget: &Budget,
        session: &SessionId,
        tool: &Tool,
        digest: Arc<str>,
    ) -> Result<Reservation, CallError> {
        let per_args = repeats_checked(budget, tool);
        // A session this process made is known to no other host (its id is
        // random and never leaves the process), so it is counted here, with
        // no round trip to a shared store.
        let shared = match self.store.shared_budget().filter(|_| !session.is_new()) {
            Some(store) => self.reserve_shared(&store, budget, session, tool, &digest, per_args)?,
            None => {
                self.reserve_here(budget, session, tool, &digest, per_args)?;
                None
            }
        };
        // Made only once the unit is counted: a dropped reservation gives it back.
        Ok(Reservation {
            ledger: Arc::clone(self),
            session: session.shared(),
            tool: Arc::clone(&tool.name),
            digest,
            per_args,
            spent: false,
            shared,
            timed: budget.max_run_time.is_some(),
            rate: None,
        })
    }

    /// Counts the call's unit in this process's totals of its session.
    fn reserve_here(
        &self,
        budget: &Budget,
        session: &SessionId,
        tool: &Tool,
        digest: &Arc<str>,
        per_args: bool,
    ) -> Result<(), CallError> {
        let mut sessions = self.lock();
        let sessions = &mut *sessions;
        let totals = match sessions.totals.get_mut(session.as_str()) {
            Some(totals) => totals,
            None => {
                let loaded = self.load(session)?;
                if sessions.totals.len() >= sessions.sweep_at {
                    sessions.sweep();
                }
                sessions.totals.entry(session.shared()).or_insert(loaded)
            }
        };
        check(budget, totals, tool, per_args.then_some(&**digest))?;
        totals.add(&tool.name, per_args.then_some(digest), 1);
        totals.in_flight += 1;
        Ok(())
    }

    /// Reserves the call's unit in the shared store, unless no limit or
    /// duplicate check could refuse it; the unit's id there.
    fn reserve_shared(
        &self,
        store: &SharedBudget<'_>,
        budget: &Budget,
        session: &SessionId,
        tool: &Tool,
        digest: &str,
        per_args: bool,
    ) -> Result<Option<i64>, CallError> {
        let could_refuse = per_args
            || budget.max_calls.is_some()
            || budget.max_calls_per_tool.is_some()
            || budget.max_run_time.is_some();
        if !could_refuse {
            return Ok(None);
        }
        let now = now_ms();
        let unit = NewReservation {
            session: session.as_str(),
            tool: &tool.name,
            args_digest: if per_args { digest } else { "" },
            expires_ms: now.saturating_add(self.lease.as_millis() as i64),
            limits: UnitLimits {
                max_calls: budget.max_calls.map(saturating_i64),
                max_calls_per_tool: budget.max_calls_per_tool.map(saturating_i64),
                max_run_us: budget
                    .max_run_time
                    .map(|max| i64::try_from(max.as_micros()).unwrap_or(i64::MAX)),
            },
        };
        let digest = per_args.then_some(digest);
        let admitted = store
            .reserve(&unit, now, |groups| {
                check(budget, &SessionTotals::from_groups(groups), tool, digest)
            })
            .map_err(|e| {
                CallError::new(
                    ErrorCode::HostError,
                    format!(
                        "the session's budget could not be checked in the shared store, so the \
                         call did not run: {e}"
                    ),
                )
            })?;
        Ok(Some(admitted?))
    }
}

fn saturating_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
