//! When a finished call's `Store` is dropped: at once, or, on a thread that
//! asked for it, once that thread has nothing else to do.
//!
//! Dropping a store resets its pool slot (its dirtied pages are zeroed) and
//! costs about a fifth of a call. A thread that answers a client, such as
//! the MCP stdio connection's, can send the answer first and tear down
//! while the client reads it: [`defer_on_this_thread`] makes it keep its
//! calls' stores, and [`finish_deferred`] (called before it goes idle)
//! drops them. Nothing of a call survives it either way: the store is never
//! used again, and its slot goes back to the pool only once it is reset.
//! At most [`MAX_DEFERRED`] stores wait; beyond, a store is dropped at once,
//! so a client that sends request after request without pause does not hold
//! pool slots away from its own calls.

use crate::engine::CallState;
use std::cell::RefCell;
use tokio::sync::OwnedSemaphorePermit;
use wasmtime::Store;

/// Stores one thread keeps for later at most.
const MAX_DEFERRED: usize = 8;

/// A finished call's store and its pool slot, released in that order.
pub(super) struct Teardown {
    _store: Store<CallState>,
    _slot: OwnedSemaphorePermit,
}

impl Teardown {
    /// Keeps nothing a caller waits on: the call's progress sink goes now,
    /// since its last copy going is what tells the MCP server that every
    /// report is out and the answer may follow.
    pub fn new(mut store: Store<CallState>, slot: OwnedSemaphorePermit) -> Teardown {
        store.data_mut().forget_caller();
        Teardown {
            _store: store,
            _slot: slot,
        }
    }
}

thread_local! {
    /// `None`: this thread drops stores at once.
    static DEFERRED: RefCell<Option<Vec<Teardown>>> = const { RefCell::new(None) };
}

/// From now on, this thread keeps the stores of the calls that end on it
/// until it calls [`finish_deferred`].
pub fn defer_on_this_thread() {
    DEFERRED.with(|deferred| {
        deferred
            .borrow_mut()
            .get_or_insert_with(|| Vec::with_capacity(MAX_DEFERRED));
    });
}

/// Drops the stores this thread kept.
pub fn finish_deferred() {
    let kept = DEFERRED.with(|deferred| deferred.borrow_mut().as_mut().map(std::mem::take));
    drop(kept);
}

/// Drops a finished call's store now, or keeps it if this thread defers.
pub(super) fn release(teardown: Teardown) {
    let now = DEFERRED.with(|deferred| match deferred.borrow_mut().as_mut() {
        Some(kept) if kept.len() < MAX_DEFERRED => {
            kept.push(teardown);
            None
        }
        Some(_) | None => Some(teardown),
    });
    drop(now);
}
