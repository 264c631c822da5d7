//! The shared store in a build without the `postgres` feature: none can
//! be named, so none is ever open.
//!
//! [`SharedSettings::new`] refuses every store URL with the way to a build
//! that has PostgreSQL; [`SharedSettings`] and [`Shared`] are then types
//! without values, and their methods (the same as the real ones, so the
//! store's code reads the same in both builds) can never be called. This
//! is how wasmtime builds without a feature (its `gc/disabled` types): the
//! compiler, not a runtime check, shows the code behind them is unreachable.

use super::{Copied, NewReservation, SharedError};
use crate::settings::SettingError;
use crate::store::{
    ApprovalRow, AuditFilter, AuditRow, Checkpoint, Consumed, Decided, ExecutionGroup,
    ExecutionRow, KeyState, NewAuditRow, RateKey, RateTaken, Store, TaskRow, TaskSignal, TaskWrite,
    Vote,
};
use std::ops::ControlFlow;

/// Where a shared store would be: never, in this build.
#[derive(Clone, Debug)]
pub enum SharedSettings {}

impl SharedSettings {
    pub(super) fn new(
        _url: &str,
        _access: super::section::Access,
    ) -> Result<SharedSettings, SettingError> {
        Err(SettingError::new(
            "this toolwarden was built without PostgreSQL, so it cannot use a shared store",
            "remove `[store]` (and TOOLWARDEN_STORE_URL) to keep state in this host's SQLite, \
             or use a build with the `postgres` feature (the `toolwarden` binary has it)",
        ))
    }

    pub fn shown(&self) -> &str {
        match *self {}
    }
}

/// A shared store: never open, in this build.
#[derive(Debug)]
pub enum Shared {}

impl Shared {
    pub fn open(settings: &SharedSettings) -> Result<Shared, SharedError> {
        match *settings {}
    }

    pub fn shown(&self) -> &str {
        match *self {}
    }

    pub fn another(&self) -> Result<Shared, SharedError> {
        match *self {}
    }

    pub fn insert_approval(&self, _: &ApprovalRow) -> Result<(), SharedError> {
        match *self {}
    }

    pub fn approval(&self, _: &str) -> Result<Option<ApprovalRow>, SharedError> {
        match *self {}
    }

    pub fn matching_approval(
        &self,
        _: &ApprovalRow,
        _: i64,
    ) -> Result<Option<ApprovalRow>, SharedError> {
        match *self {}
    }

    pub fn approvals(&self) -> Result<Vec<ApprovalRow>, SharedError> {
        match *self {}
    }

    pub fn approvals_version(&self) -> Result<i64, SharedError> {
        match *self {}
    }

    pub fn set_preview(&self, _: &str, _: &str, _: &str) -> Result<(), SharedError> {
        match *self {}
    }

    pub fn retire_approval(&self, _: &str, _: i64) -> Result<(), SharedError> {
        match *self {}
    }

    pub fn decide_approval(&self, _: &str, _: &Vote, _: i64) -> Result<Decided, SharedError> {
        match *self {}
    }

    pub fn votes(&self, _: Option<&str>) -> Result<Vec<(String, Vote)>, SharedError> {
        match *self {}
    }

    pub fn take_rate(&self, _: &[RateKey], _: i64, _: i64) -> Result<RateTaken, SharedError> {
        match *self {}
    }

    pub fn give_back_rate(&self, _: &[i64]) -> Result<(), SharedError> {
        match *self {}
    }

    pub fn consume_approval(
        &self,
        _: &str,
        _: &ApprovalRow,
        _: i64,
    ) -> Result<Consumed, SharedError> {
        match *self {}
    }

    pub fn append(
        &self,
        _: &[NewAuditRow],
        _: &dyn Fn(i64, &NewAuditRow, &str) -> String,
        _: &[ExecutionRow],
    ) -> Result<(i64, String), SharedError> {
        match *self {}
    }

    pub fn audit_checkpoint(&self) -> Result<Option<Checkpoint>, SharedError> {
        match *self {}
    }

    pub fn audit_head(&self) -> Result<Option<(i64, String)>, SharedError> {
        match *self {}
    }

    pub fn seq_and_hash(&self, _: &str, _: i64) -> Result<Option<(i64, String)>, SharedError> {
        match *self {}
    }

    pub fn scan_audit(
        &self,
        _: i64,
        _: Option<i64>,
        _: &mut dyn FnMut(AuditRow) -> ControlFlow<()>,
    ) -> Result<(), SharedError> {
        match *self {}
    }

    pub fn cut_audit(
        &self,
        _: &Checkpoint,
        _: &NewAuditRow,
        _: &dyn Fn(i64, &NewAuditRow, &str) -> String,
    ) -> Result<Option<(i64, String)>, SharedError> {
        match *self {}
    }

    pub fn audit_rows(&self, _: &AuditFilter) -> Result<Vec<AuditRow>, SharedError> {
        match *self {}
    }

    pub fn audit_tallies(
        &self,
        _: &AuditFilter,
    ) -> Result<crate::store::AuditTallies, SharedError> {
        match *self {}
    }

    pub fn session_executions(&self, _: &str) -> Result<Vec<ExecutionGroup>, SharedError> {
        match *self {}
    }

    pub fn reserve<E>(
        &self,
        _: &NewReservation<'_>,
        _: i64,
        _: impl Fn(Vec<ExecutionGroup>) -> Result<(), E>,
    ) -> Result<Result<i64, E>, SharedError> {
        match *self {}
    }

    pub fn settle(&self, _: i64, _: i64, _: &str) -> Result<(), SharedError> {
        match *self {}
    }

    pub fn release(&self, _: i64) -> Result<(), SharedError> {
        match *self {}
    }

    pub fn claim_key(
        &self,
        _: &str,
        _: &str,
        _: i64,
        _: i64,
        _: i64,
    ) -> Result<KeyState, SharedError> {
        match *self {}
    }

    pub fn complete_key(&self, _: &str, _: &str, _: &str) -> Result<(), SharedError> {
        match *self {}
    }

    pub fn release_key(&self, _: &str, _: &str) -> Result<(), SharedError> {
        match *self {}
    }

    pub fn import(&self, _: &Store) -> Result<Copied, SharedError> {
        match *self {}
    }

    pub fn claim_session(&self, _: &str, _: &str, _: i64) -> Result<String, SharedError> {
        match *self {}
    }

    pub fn sampled_tokens(&self, _: &str) -> Result<u64, SharedError> {
        match *self {}
    }

    pub fn charge_sampled_tokens(&self, _: &str, _: i64, _: i64) -> Result<(), SharedError> {
        match *self {}
    }

    pub fn put_request_state(&self, _: &str, _: &str, _: i64, _: i64) -> Result<(), SharedError> {
        match *self {}
    }

    pub fn take_request_state(&self, _: &str, _: i64) -> Result<Option<String>, SharedError> {
        match *self {}
    }

    pub fn put_task(&self, _: TaskWrite<'_>, _: i64) -> Result<bool, SharedError> {
        match *self {}
    }

    pub fn task(&self, _: &str, _: i64) -> Result<Option<TaskRow>, SharedError> {
        match *self {}
    }

    pub fn answer_task(&self, _: &str, _: &str, _: i64) -> Result<bool, SharedError> {
        match *self {}
    }

    pub fn cancel_task(&self, _: &str, _: i64) -> Result<bool, SharedError> {
        match *self {}
    }

    pub fn renew_tasks(&self, _: &str, _: i64) -> Result<Vec<TaskSignal>, SharedError> {
        match *self {}
    }

    pub fn fail_orphaned_task(&self, _: &str, _: &str, _: i64) -> Result<bool, SharedError> {
        match *self {}
    }

    pub fn forget_idle_sessions(&self, _: i64) -> Result<u64, SharedError> {
        match *self {}
    }
}
