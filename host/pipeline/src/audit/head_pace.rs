//! How closely the audit head file follows the writer's commits: after
//! each one when calls wait for their commit, and with batched commits at
//! most every [`HEAD_EVERY`], the last head at the latest that long after its
//! commit (see `store/head.rs`). Owns only that pace; the writer decides
//! what to commit, the store how a head is written.

use crate::store::{Head, Store};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// With batched commits, the head file is written at most this often (and
/// when the writer falls idle or stops): writing it is a rename, which cost
/// as much as a third of the writer's work when it followed every commit.
const HEAD_EVERY: Duration = Duration::from_millis(50);

/// When the audit head file follows the commits: after each one when calls
/// wait for their commit, otherwise at most every [`HEAD_EVERY`] (an idle
/// writer writes the last head once that time is up; see `store/head.rs`).
pub(super) struct HeadKeeper<'a> {
    store: &'a Store,
    spaced: bool,
    pending: Option<Head>,
    written: Instant,
}

impl<'a> HeadKeeper<'a> {
    pub(super) fn new(store: &'a Store, spaced: bool) -> Self {
        HeadKeeper {
            store,
            spaced,
            pending: None,
            written: Instant::now(),
        }
    }

    /// The next job, waiting for one as long as it takes; a pending head is
    /// written when its time comes while the writer waits.
    pub(super) fn next_job<J>(&mut self, receiver: &Receiver<J>) -> Option<J> {
        loop {
            if self.pending.is_none() {
                return receiver.recv().ok();
            }
            let due = HEAD_EVERY.saturating_sub(self.written.elapsed());
            match receiver.recv_timeout(due) {
                Ok(job) => return Some(job),
                Err(RecvTimeoutError::Disconnected) => return None,
                Err(RecvTimeoutError::Timeout) => self.write_pending(),
            }
        }
    }

    /// A commit appended up to `head` (`None`: no rows).
    pub(super) fn committed(&mut self, head: Option<Head>) {
        if let Some(head) = head {
            self.pending = Some(head);
        }
        if !self.spaced || self.written.elapsed() >= HEAD_EVERY {
            self.write_pending();
        }
    }

    pub(super) fn write_pending(&mut self) {
        if let Some(head) = self.pending.take() {
            self.store.advance_head_or_warn(&head);
            self.written = Instant::now();
        }
    }
}
