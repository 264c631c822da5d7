//! The tokens each session's calls have asked the client's model for, held
//! to the policy's `max_session_tokens`. A request is paid for when it
//! leaves the host (the call stops for it), whether or not the client
//! answers. Kept in the store (`sampling_tokens`), so a restart does not
//! reset a session's count, and hosts sharing a store count it together.

use super::Controller;
use crate::call::SessionId;
use crate::question::{Need, Question};

/// The tokens `stopped_at`'s sampling requests ask for.
fn asked_for(stopped_at: &[Question]) -> u64 {
    stopped_at
        .iter()
        .filter_map(|q| match &q.need {
            Need::Sample(request) => Some(u64::from(request.max_tokens)),
            Need::Form | Need::Roots | Need::SamplingApproval(_) => None,
        })
        .sum()
}

impl Controller {
    /// The tokens `session`'s calls asked for so far. A store that cannot
    /// say counts as a spent budget: sampling fails closed.
    pub(super) fn sampled_tokens(&self, session: &SessionId) -> u64 {
        self.blocking_on_the_store(|| self.records.store().sampled_tokens(session.as_str()))
            .unwrap_or_else(|e| {
                tracing::error!("cannot read the session's sampling tokens, so none are left: {e}");
                u64::MAX
            })
    }

    /// Pays for the sampling requests a run stopped at.
    pub(super) fn charge_sampled_tokens(&self, session: &SessionId, stopped_at: &[Question]) {
        let tokens = asked_for(stopped_at);
        if tokens == 0 {
            return;
        }
        let now = crate::store::now_ms();
        let charged = self.blocking_on_the_store(|| {
            self.records
                .store()
                .charge_sampled_tokens(session.as_str(), tokens, now)
        });
        if let Err(e) = charged {
            tracing::error!("cannot count {tokens} sampling tokens of the session: {e}");
        }
    }
}
