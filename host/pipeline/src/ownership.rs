//! Sessions belong to their caller. A session holds what its caller has
//! spent and earned: budgets, the duplicate guard, keyed calls' outcomes,
//! approvals. A caller with a proven identity (an access token, the shared
//! token; see [`crate::caller`]) that names a session claims it unless it
//! is claimed; a call naming a session another caller claimed is refused
//! (`SESSION_NOT_YOURS`) before anything of the session is looked at, and
//! the refusal is audited with the caller. Claims live in the store, so
//! hosts sharing one agree on them, and are remembered here (a claim never
//! changes hands, so remembering one can never be stale).
//!
//! Not checked: sessions this process made ([`SessionId::new`], a
//! connection's own), whose ids are random and known only to their
//! connection and to the people supervising the host; and calls without a
//! proven caller (stdio, the CLI, the library), whose makers run the host.
//! Decides nothing else about a call.

use crate::call::SessionId;
use crate::caller::Caller;
use crate::outcome::{CallError, ErrorCode};
use crate::store::{Store, now_ms};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Claims remembered at most; past it the memory starts over (the store
/// still has every claim).
const MAX_REMEMBERED: usize = 4_096;

/// Who owns which named session.
#[derive(Debug)]
pub struct Owners {
    store: Arc<Store>,
    remembered: Mutex<HashMap<Arc<str>, Arc<str>>>,
}

impl Owners {
    pub fn new(store: Arc<Store>) -> Owners {
        Owners {
            store,
            remembered: Mutex::default(),
        }
    }

    /// Whether `caller` may use `session`: yes if the session is its own
    /// (claimed now, or before) or one this process made.
    pub fn check(&self, session: &SessionId, caller: &Caller) -> Result<(), CallError> {
        if session.is_new() {
            return Ok(());
        }
        let identity = caller.identity();
        let owner = match self.remembered(session) {
            Some(owner) => owner,
            None => {
                let owner: Arc<str> = self
                    .store
                    .claim_session(session.as_str(), &identity, now_ms())
                    .map_err(|e| {
                        CallError::new(
                            ErrorCode::HostError,
                            format!(
                                "whose session this is could not be read, so the call did not run: {e}"
                            ),
                        )
                    })?
                    .into();
                self.remember(session, Arc::clone(&owner));
                owner
            }
        };
        if *owner == *identity {
            return Ok(());
        }
        Err(CallError::new(
            ErrorCode::SessionNotYours,
            format!(
                "the session `{}` belongs to another caller; name a session of your own (or \
                 none); nothing ran",
                session.as_str()
            ),
        ))
    }

    fn remembered(&self, session: &SessionId) -> Option<Arc<str>> {
        self.remembered
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(session.as_str())
            .cloned()
    }

    fn remember(&self, session: &SessionId, owner: Arc<str>) {
        let mut remembered = self
            .remembered
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if remembered.len() >= MAX_REMEMBERED {
            remembered.clear();
        }
        remembered.insert(session.shared(), owner);
    }
}
