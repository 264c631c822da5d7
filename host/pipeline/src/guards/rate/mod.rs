//! Rate limits (`[[rate_limit]]`): at most so many calls of some tools in
//! any window of a given length, counted for each caller and each tool (or
//! together). A deny-only guard: a call over a limit is refused with
//! `RATE_LIMITED` before it runs, and a call under every limit takes one
//! unit of each. The units are kept in the store, taken in one transaction
//! that checks and takes every limit's unit at once (under a lock per
//! counted key with a shared store), so hosts sharing a store count the
//! same calls and two of them cannot both take a window's last unit. A
//! unit taken by a call that then does not run (it waits for a person, a
//! later step refuses it) is given back. Calls of tools no limit names
//! never touch the store.

mod section;

pub use section::{MAX_WINDOW_MS, RateLimit, RateLimitSection};

use crate::caller::Caller;
use crate::outcome::{CallError, ErrorCode};
use crate::store::{RateKey, RateTaken, Store, now_ms};
use std::sync::Arc;

/// Every `[[rate_limit]]`, in file order.
#[derive(Clone, Debug, Default)]
pub struct RateLimits(pub Vec<RateLimit>);

/// The units a call took, given back unless it ran.
#[derive(Debug)]
pub struct RateHold {
    store: Arc<Store>,
    units: Vec<i64>,
}

impl RateHold {
    /// The call ran: its units stay counted.
    pub fn keep(mut self) {
        self.units.clear();
    }
}

impl Drop for RateHold {
    fn drop(&mut self) {
        if self.units.is_empty() {
            return;
        }
        // Not given back, a unit counts until its window passes: a call
        // refused later is then counted as made, never the other way.
        if let Err(e) = self.store.give_back_rate(&self.units) {
            tracing::warn!("rate units of a call that did not run stay counted: {e}");
        }
    }
}

impl RateLimits {
    /// Takes a unit of every limit that counts a call of `tool` by
    /// `caller`, or refuses the call if one is used up.
    pub fn take(
        &self,
        store: &Arc<Store>,
        tool: &str,
        caller: Option<&Caller>,
    ) -> Result<Option<RateHold>, CallError> {
        if !self.0.iter().any(|limit| limit.names(tool)) {
            return Ok(None);
        }
        let who = Caller::identity_of(caller);
        let who = who.as_str();
        let counted: Vec<(&RateLimit, RateKey)> = self
            .0
            .iter()
            .filter(|limit| limit.names(tool))
            .map(|limit| (limit, key(limit, tool, who)))
            .collect();
        let keys: Vec<RateKey> = counted.iter().map(|(_, key)| key.clone()).collect();
        let now = now_ms();
        match store.take_rate(&keys, now, now - MAX_WINDOW_MS) {
            Ok(RateTaken::Units(units)) => Ok(Some(RateHold {
                store: Arc::clone(store),
                units,
            })),
            Ok(RateTaken::Full { at, oldest_ms }) => {
                let (limit, _) = counted[at];
                let wait_s = ((oldest_ms + limit.window_ms - now).max(0) as u64).div_ceil(1000);
                Err(CallError::new(
                    ErrorCode::RateLimited,
                    format!(
                        "{} made {} calls{} in the last {}, as many as `[[rate_limit]]`{} allows; \
                         nothing ran. The next one may run in {wait_s} s",
                        if limit.per_caller {
                            who
                        } else {
                            "everyone together"
                        },
                        limit.calls,
                        if limit.per_tool {
                            format!(" of `{tool}`")
                        } else {
                            match &limit.patterns {
                                Some(p) => format!(" of {}", p.join(", ")),
                                None => " of any tool".to_owned(),
                            }
                        },
                        limit.window,
                        limit
                            .line
                            .map(|l| format!(" at line {l}"))
                            .unwrap_or_default(),
                    ),
                ))
            }
            Err(e) => Err(CallError::new(
                ErrorCode::HostError,
                format!("the rate limits could not be counted, so the call did not run: {e}"),
            )),
        }
    }
}

/// What a limit counts a call under: the limit (its tools and window, so
/// that editing one starts it afresh), and the caller and tool if it
/// counts them apart.
fn key(limit: &RateLimit, tool: &str, who: &str) -> RateKey {
    let tools = limit
        .patterns
        .as_ref()
        .map_or_else(|| "*".to_owned(), |p| p.join(","));
    RateKey {
        key: format!(
            "{tools}\u{1f}{}\u{1f}{}\u{1f}{}",
            limit.window_ms,
            if limit.per_caller { who } else { "" },
            if limit.per_tool { tool } else { "" }
        ),
        calls: i64::from(limit.calls),
        window_ms: limit.window_ms,
    }
}
