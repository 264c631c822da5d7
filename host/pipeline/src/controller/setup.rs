//! Making and remaking a host: setting up the sandbox, opening the records,
//! loading the plugins and the workspace; checking and inspecting plugins
//! without serving them. Orders no call.

use super::{Controller, Inspection, REHEARSALS_DIR};
use crate::config::Config;
use crate::error::Error;
use crate::guards::Guards;
use crate::idempotency::Keys;
use crate::ownership::Owners;
use crate::records::Records;
use crate::registry::Registry;
use crate::sandbox::Sandbox;
use crate::workspace::Workspace;
use std::path::Path;
use std::sync::{Arc, RwLock};

impl Controller {
    /// Sets up the sandbox, opens the records and loads every plugin. A
    /// plugin that fails is skipped and listed in [`Registry::failures`]; a
    /// duplicate tool name is an error. Shared from the start, because the
    /// calls a tool makes through `compose` run on the same host.
    pub fn new(config: Config) -> Result<Arc<Controller>, Error> {
        let records = Records::open(&config)?;
        records
            .audit_log()
            .start_retention(&config.audit_retention)?;
        let engine = config.engine()?;
        let registry = Registry::load(
            &config.plugins_dir,
            &engine,
            config.load_progress.as_ref().map(|p| &*p.0),
        )?;
        let sandbox = Sandbox::new(
            engine,
            config.retry,
            config.state_dir.join(REHEARSALS_DIR),
            config.approvals.rehearsal,
        );
        let guards = Guards::new(
            config.sandbox,
            (config.budget.clone(), config.rate_limits.clone()),
            records.store(),
            Arc::clone(&config.egress),
            config.limits.longest_hold(),
        );
        let workspace = open_workspace(&config)?;
        let keys = Keys::new(
            records.store(),
            config.idempotency_window,
            config.limits.longest_hold(),
        );
        let owners = Owners::new(records.store());
        Ok(Arc::new_cyclic(|me| Controller {
            me: me.clone(),
            keys,
            owners,
            config,
            registry: RwLock::new(Arc::new(registry)),
            workspace,
            guards,
            records,
            sandbox,
        }))
    }

    /// Loads plugins and policy as a host would and lists every problem,
    /// running no tool (see [`crate::check`]).
    pub fn check(
        config: &Config,
        target: Option<&Path>,
        scope: crate::check::Scope,
    ) -> Result<crate::check::Report, Error> {
        crate::check::check(config, target, scope)
    }

    /// Loads one plugin file on its own, without the plugins directory.
    pub fn inspect(config: &Config, file: &Path) -> Result<Inspection, Error> {
        let engine = config.engine()?;
        let (plugin, tools) =
            Registry::load_file(file, &engine).map_err(|source| Error::Plugin {
                file: file.to_owned(),
                source,
            })?;
        Ok(Inspection { plugin, tools })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The tools being served now.
    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(
            &self
                .registry
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }

    /// Loads the plugins directory again and swaps the registry in one step,
    /// unless the config file changed since the host started (refused with
    /// `CONFIG_UNTRUSTED`).
    /// Plugins already serving keep their tools; a new file that fails to
    /// load or claims a name already served is rejected (and listed in the
    /// new registry's failures) while the rest keep serving. Blocks while new
    /// plugins compile. Returns whether the set of tools changed.
    pub fn reload(&self) -> Result<bool, Error> {
        // A changed policy file means someone rewrote what governs this
        // host; it keeps serving what it has, and loads nothing new.
        self.config.still_as_started()?;
        let current = self.registry();
        let next = Registry::reload(&self.config.plugins_dir, self.sandbox.engine(), &current)?;
        let changed = next.fingerprint() != current.fingerprint();
        for failure in next.failures() {
            tracing::warn!("{failure}");
        }
        *self
            .registry
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(next);
        Ok(changed)
    }
}

/// Opens the workspace with the host's own files marked as out of reach:
/// the config file it read, the one it would read by default, and its state
/// and plugins directories.
fn open_workspace(config: &Config) -> Result<Workspace, Error> {
    let default_config = config.workspace.join(crate::config::DEFAULT_CONFIG_FILE);
    let mut protected: Vec<(&Path, &'static str)> = vec![
        (&default_config, "config file"),
        (&config.state_dir, "state directory"),
        (&config.plugins_dir, "plugins directory"),
    ];
    if let Some(file) = &config.config_file {
        protected.push((file, "config file"));
    }
    Ok(Workspace::open(
        &config.workspace,
        config.sandbox,
        &protected,
    )?)
}
