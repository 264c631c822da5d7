//! The host's persistent records, without its plugins: the approval book and
//! the audit log in `toolwarden.db`. The `approvals` and `audit` commands use
//! them directly, so reviewing an approval never compiles a plugin; the
//! controller holds the same records for its calls.

use crate::approval::{Approval, ApprovalDecision, Approvals, Decided, Decider};
use crate::audit::{Audit, Event, Record, Redactor, Stats, Subject, Verification};
use crate::caller::Caller;
use crate::config::Config;
use crate::error::Error;
pub use crate::store::{AuditFilter, Copied, DB_FILE, HEAD_FILE, Head};
use crate::store::{Store, StoreError};
use std::sync::Arc;

/// A store failure as the host reports it, naming the database.
fn state_error(source: StoreError) -> Error {
    Error::State {
        path: source.path.clone(),
        source,
    }
}

#[derive(Debug)]
pub struct Records {
    approvals: Approvals,
    audit: Audit,
    store: Arc<Store>,
}

impl Records {
    /// Opens (or creates) the database in the config's state directory.
    pub fn open(config: &Config) -> Result<Records, Error> {
        let shared = config
            .shared_store
            .as_ref()
            .map(Store::connect_shared)
            .transpose()
            .map_err(state_error)?;
        let store = Arc::new(Store::open(&config.state_dir, shared).map_err(state_error)?);
        Ok(Records {
            approvals: Approvals::new(
                Arc::clone(&store),
                config.approvals.ttl,
                config.policy_hash.clone(),
            ),
            audit: Audit::new(
                Arc::clone(&store),
                Redactor::new(config.redact_keys.iter().cloned())
                    .with_secrets(config.egress.secrets().cloned()),
                config.audit_durability,
                config.audit_batch_window,
            )?,
            store,
        })
    }

    /// `toolwarden store migrate`: copies this host's SQLite state (its
    /// approvals, audit chain and executions) into the shared store the
    /// config names, which must be empty. `None` when it names none.
    pub fn migrate_to_shared(config: &Config) -> Result<Option<Copied>, Error> {
        let Some(settings) = &config.shared_store else {
            return Ok(None);
        };
        let local = Store::open(&config.state_dir, None).map_err(state_error)?;
        let shared = Store::connect_shared(settings).map_err(state_error)?;
        shared
            .import(&local)
            .map(Some)
            .map_err(|e| state_error(StoreError::shared(settings, e)))
    }

    pub fn store(&self) -> Arc<Store> {
        Arc::clone(&self.store)
    }

    pub(crate) fn approval_book(&self) -> &Approvals {
        &self.approvals
    }

    pub(crate) fn audit_log(&self) -> &Audit {
        &self.audit
    }

    /// Every approval, newest first.
    pub fn approvals(&self) -> Result<Vec<Approval>, Error> {
        self.approvals.list().map_err(state_error)
    }

    /// A number that changes whenever an approval is asked, decided or
    /// used: cheap enough to poll.
    pub fn approvals_version(&self) -> Result<i64, Error> {
        self.approvals.version().map_err(state_error)
    }

    pub fn approval(&self, id: &str) -> Result<Option<Approval>, Error> {
        self.approvals.get(id).map_err(state_error)
    }

    /// Records `who`'s decision (made at `by`) on a pending approval, and
    /// in the audit log every decision that counted.
    pub fn decide(
        &self,
        id: &str,
        decision: ApprovalDecision,
        reason: Option<&str>,
        (by, who): (Decider, &Caller),
    ) -> Result<Decided, Error> {
        let decided = self
            .approvals
            .decide(id, decision, reason, (by, who))
            .map_err(state_error)?;
        let event = match &decided {
            Decided::Now(_) => Event::ApprovalDecided {
                approval_id: id.to_owned(),
                approved: decision == ApprovalDecision::Approve,
                reason: reason.map(str::to_owned),
                by: by.as_str(),
                approver: who.clone(),
            },
            Decided::Counted {
                approval,
                again: false,
            } => Event::ApprovalCounted {
                approval_id: id.to_owned(),
                by: by.as_str(),
                approver: who.clone(),
                awaiting: approval.awaiting(),
            },
            Decided::Counted { again: true, .. }
            | Decided::Missing
            | Decided::Stale(_)
            | Decided::OwnCall(_) => return Ok(decided),
        };
        if let Some(approval) = decided.approval() {
            let subject = Arc::new(Subject {
                call_id: Arc::from(""),
                session: Arc::from(approval.session.as_str()),
                tool: Arc::from(approval.tool.as_str()),
            });
            self.audit.record_durably(&subject, vec![event])?;
        }
        Ok(decided)
    }

    pub fn audit(&self, filter: &AuditFilter) -> Result<Vec<Record>, Error> {
        self.audit.records(filter).map_err(state_error)
    }

    /// How each tool behaved over the records `filter` selects.
    pub fn stats(&self, filter: &AuditFilter) -> Result<Stats, Error> {
        let tallies = self.audit.tallies(filter).map_err(state_error)?;
        Ok(crate::audit::stats(tallies))
    }

    pub fn verify(&self) -> Result<Verification, Error> {
        self.audit.verify().map_err(state_error)
    }

    /// Moves the audit records that `cut` selects out of the database into
    /// `out` (see [`crate::audit::Audit::export`]); they are removed only
    /// once `sync` put them on disk.
    pub fn export_audit(
        &self,
        cut: crate::audit::Cut,
        out: &mut dyn std::io::Write,
        sync: &dyn Fn() -> std::io::Result<()>,
    ) -> Result<Option<crate::audit::segment::SegmentHeader>, crate::audit::ExportError> {
        self.audit.export(cut, out, sync, "export")
    }

    /// The audit chain's head (records and last hash), for anchoring it
    /// elsewhere; `None` before anything was recorded.
    pub fn audit_head(&self) -> Result<Option<Head>, Error> {
        self.audit.head().map_err(|source| Error::Directory {
            what: "audit head",
            path: self.store().head_path(),
            source,
        })
    }
}
