//! The controller: the one place that orders the pipeline, and the only path
//! from a request to a plugin.
//!
//! materialize -> resolve -> validate -> authorize -> admit -> run -> check.
//! Each step takes the previous step's type by value and returns the next,
//! so the order is checked by the compiler; this file only wires them and
//! turns the outcome into a [`CallResult`]. It holds no rule of its own.

use crate::approval;
use crate::call::{Arguments, CallRequest};
use crate::config::Config;
use crate::error::Error;
use crate::outcome::{CallError, CallResult, Status};
use crate::output::{self, CheckedOutput};
use crate::policy::{Decision, Explanation};
use crate::registry::{Plugin, Registry, Tool};
use crate::sandbox::{RunContext, Sandbox};
use crate::schema;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// A loaded host: config, registry and sandbox.
#[derive(Debug)]
pub struct Controller {
    config: Config,
    registry: Registry,
    sandbox: Sandbox,
}

/// What `inspect` reports about one plugin file.
#[derive(Debug)]
pub struct Inspection {
    pub plugin: Arc<Plugin>,
    pub tools: Vec<Tool>,
}

impl Controller {
    /// Sets up the sandbox and loads every plugin. A plugin that fails is
    /// skipped and listed in [`Registry::failures`]; a duplicate tool name
    /// is an error.
    pub fn new(config: Config) -> Result<Controller, Error> {
        let sandbox = Sandbox::new(&config.workspace, &config.state_dir, &config.limits)?;
        let registry = Registry::load(&config.plugins_dir, &sandbox)?;
        Ok(Controller {
            config,
            registry,
            sandbox,
        })
    }

    /// Loads one plugin file on its own, without the plugins directory.
    pub fn inspect(config: &Config, file: &Path) -> Result<Inspection, Error> {
        let sandbox = Sandbox::new(&config.workspace, &config.state_dir, &config.limits)?;
        let (plugin, tools) =
            Registry::load_file(file, &sandbox).map_err(|source| Error::Plugin {
                file: file.to_owned(),
                source,
            })?;
        Ok(Inspection { plugin, tools })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// What the policy decides for calls to `tool`, before arguments are
    /// known (`depends_on_args` says whether they could change it).
    pub fn decision(&self, tool: &Tool) -> Decision {
        self.config
            .policy
            .evaluate(&tool.spec, &tool.plugin.file_name(), None)
    }

    /// What every policy rule makes of a call, without running anything.
    pub fn explain(&self, tool: &str, args: &str) -> Result<Explanation, CallError> {
        let args = Arguments::materialize(args)?;
        let resolved = self.registry.resolve(tool, args)?;
        let tool = resolved.tool();
        Ok(self.config.policy.explain(
            &tool.spec,
            &tool.plugin.file_name(),
            Some(resolved.args().value()),
        ))
    }

    /// Runs one call through the whole pipeline. Always returns a result.
    pub async fn handle(&self, request: CallRequest) -> CallResult {
        let started = Instant::now();
        let mut fuel_used = None;
        let outcome = self.pipeline(&request, &mut fuel_used).await;
        let duration_us = started.elapsed().as_micros() as u64;
        let (status, value, content, error) = match outcome {
            Ok(checked) => {
                let (value, content) = checked.into_parts();
                (Status::Ok, Some(value), Some(content), None)
            }
            Err(error) => (error.code.status(), None, None, Some(error)),
        };
        tracing::debug!(call = %request.call_id, tool = request.tool, ?status, duration_us, "call finished");
        CallResult {
            call_id: request.call_id.to_string(),
            tool: request.tool,
            status,
            value,
            content,
            error,
            approval_id: None,
            duration_us,
            fuel_used,
        }
    }

    async fn pipeline(
        &self,
        request: &CallRequest,
        fuel_used: &mut Option<u64>,
    ) -> Result<CheckedOutput, CallError> {
        let args = Arguments::materialize(&request.args)?;
        let resolved = self.registry.resolve(&request.tool, args)?;
        let validated = schema::validate(resolved)?;
        let authorized = self
            .config
            .policy
            .authorize(validated, self.config.sandbox)?;
        let prepared = approval::admit(authorized)?;
        let tool = Arc::clone(prepared.tool());
        let cx = RunContext {
            call_id: request.call_id.clone(),
            session: request.session.clone(),
            cancel: request.cancel.clone(),
            progress: request.progress.clone(),
        };
        let execution = self.sandbox.run(prepared, cx).await;
        *fuel_used = execution.fuel_used;
        output::check(
            &tool,
            execution.result?,
            self.config.limits.max_output_bytes,
        )
    }
}
