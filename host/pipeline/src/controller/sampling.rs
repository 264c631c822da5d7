//! The tokens each session's calls have asked the client's model for, held
//! to the policy's `max_session_tokens`. A request is paid for when it
//! leaves the host (the call stops for it), whether or not the client
//! answers. Kept in this host's memory: a restart, or another host of a
//! shared store, starts the count again (see docs/policy.md, Sampling).

use crate::call::SessionId;
use crate::question::{Need, Question};
use std::collections::HashMap;
use std::sync::Mutex;

/// Sessions whose counts are kept; past it the oldest half is forgotten
/// (each entry is a few dozen bytes, and a session idle that long is rare).
const MAX_SESSIONS: usize = 65_536;

#[derive(Debug, Default)]
pub(super) struct SessionTokens(Mutex<HashMap<SessionId, (u64, u64)>>);

impl SessionTokens {
    /// The tokens `session`'s calls asked for so far.
    pub(super) fn used(&self, session: &SessionId) -> u64 {
        let sessions = self.0.lock().unwrap_or_else(|p| p.into_inner());
        sessions.get(session).map_or(0, |(tokens, _)| *tokens)
    }

    /// Pays for the sampling requests a run stopped at.
    pub(super) fn charge(&self, session: &SessionId, stopped_at: &[Question]) {
        let tokens: u64 = stopped_at
            .iter()
            .filter_map(|q| match &q.need {
                Need::Sample(request) => Some(u64::from(request.max_tokens)),
                Need::Form | Need::Roots | Need::SamplingApproval(_) => None,
            })
            .sum();
        if tokens == 0 {
            return;
        }
        let mut sessions = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if sessions.len() >= MAX_SESSIONS && !sessions.contains_key(session) {
            let mut ages: Vec<u64> = sessions.values().map(|(_, at)| *at).collect();
            ages.sort_unstable();
            let cut = ages[ages.len() / 2];
            sessions.retain(|_, (_, at)| *at > cut);
        }
        let stamp = crate::store::now_ms().try_into().unwrap_or(0);
        let entry = sessions.entry(session.clone()).or_insert((0, stamp));
        entry.0 = entry.0.saturating_add(tokens);
        entry.1 = stamp;
    }
}
