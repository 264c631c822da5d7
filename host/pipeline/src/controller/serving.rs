//! What a front end that serves clients may tune about how the host
//! spends its threads: deferred sandbox teardowns, the audit writer's idle
//! time, and the free sandboxes the soak test counts. None of it orders or
//! decides a call.

use super::Controller;

impl Controller {
    /// Makes this thread answer before it tears down the sandboxes of the
    /// calls it ran, until [`Controller::finish_deferred_teardowns`]: for a
    /// thread that serves a client and has a moment when it would otherwise
    /// wait (see `sandbox::teardown`).
    pub fn defer_teardowns_on_this_thread() {
        crate::sandbox::defer_on_this_thread();
    }

    /// For a host that serves one client whose calls come one at a time
    /// (MCP over stdio): the audit writer then commits only in CPU time no
    /// call and no client wants, so a commit never delays an answer. Not for
    /// a host that many callers keep busy: there the writer would get no CPU
    /// until the callers wait for room in its queue.
    pub fn audit_in_idle_time(&self) {
        self.records.audit_log().write_in_idle_time();
    }

    /// Tears down the sandboxes this thread kept.
    pub fn finish_deferred_teardowns() {
        crate::sandbox::finish_deferred();
    }

    /// Sandbox instances free right now (`limits.max_instances` when no call
    /// runs): lets the soak test prove that no call leaks one.
    #[doc(hidden)]
    pub fn free_instances(&self) -> usize {
        self.sandbox.free_instances()
    }
}
