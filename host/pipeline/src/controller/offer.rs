//! What the host offers and what its policy makes of a call, asked without
//! running one: the records, the tools a session sees, a tool's decision,
//! an explanation of the rules for given arguments.

use super::Controller;
use crate::materialize::Arguments;
use crate::outcome::CallError;
use crate::policy::{Decision, Explanation, Verdict};
use crate::records::Records;
use crate::registry::Tool;
use crate::workspace::{LocatedPath, Workspace};

impl Controller {
    /// The approval book and the audit log.
    pub fn records(&self) -> &Records {
        &self.records
    }

    /// What plugins change from now on, each once the change is real:
    /// resources announced as changed, tools offered or withdrawn. Whom to
    /// tell is the listener's business: a session hears only of URIs it
    /// subscribed to, which [`Self::check_resource`] let it.
    pub fn plugin_changes(&self) -> tokio::sync::broadcast::Receiver<crate::changes::Change> {
        self.sandbox.changes().listen()
    }

    /// What the policy decides for calls to `tool`, before arguments are
    /// known (`depends_on_args` says whether they could change it).
    pub fn decision(&self, tool: &Tool) -> Decision {
        self.config
            .policy
            .evaluate(&tool.spec, tool.plugin.file_name(), None)
    }

    /// The tools an agent in a session with `profile` is shown, each
    /// through `show`: every tool of its profile the policy could let run
    /// (all of them with `[mcp] list_denied = true`).
    pub fn offered_tools<R>(
        &self,
        profile: Option<&str>,
        mut show: impl FnMut(&Tool) -> R,
    ) -> Vec<R> {
        let list_denied = self.config.mcp_list_denied();
        let set = self.config.tool_set(profile);
        self.registry()
            .tools_in(&set)
            .filter(|tool| {
                let decision = self.decision(tool);
                list_denied || decision.depends_on_args || decision.verdict != Verdict::Deny
            })
            .map(|tool| show(tool))
            .collect()
    }

    /// What every policy rule makes of a call, without running anything:
    /// paths are resolved as for a call, and those that lead elsewhere
    /// than they read are listed with both forms. `caller`: who makes the
    /// call, for rules on the caller; none: whoever it may be.
    pub fn explain(
        &self,
        tool: &str,
        args: &str,
        caller: Option<&crate::caller::Caller>,
    ) -> Result<Explanation, CallError> {
        let args = Arguments::materialize(args)?;
        let resolved = self
            .registry()
            .resolve(tool, args, &crate::profile::ToolSet::All)?;
        let tool = resolved.tool();
        let written = resolved.args().value();
        let paths = self.workspace.paths(&tool.input, written);
        let uris = Workspace::uris(&tool.input, written);
        let rewritten = Workspace::rewrite(written, &paths, &uris);
        let mut explanation = self.config.policy.explain(
            &tool.spec,
            tool.plugin.file_name(),
            Some(rewritten.as_ref().unwrap_or(written)),
            rewritten.as_ref().map(|_| written),
            (
                crate::policy::Caller::Agent,
                caller.map_or(crate::policy::Who::Unknown, |caller| {
                    crate::policy::Who::Known(Some(caller))
                }),
            ),
        );
        explanation.paths = paths.into_iter().filter(LocatedPath::noteworthy).collect();
        Ok(explanation)
    }
}
