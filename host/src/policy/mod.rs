//! Allow / ask / deny decisions and the capability grant.
//!
//! Owns the rules from `toolwarden.toml`. [`Policy::evaluate`] says what the
//! rules decide for a tool; [`Policy::authorize`] is the pipeline step
//! `ValidatedCall -> AuthorizedCall`. Default deny: a call no rule matches is
//! denied, and when several rules match the most restrictive wins, whatever
//! their order. It never runs a tool and never asks a person (that is the
//! approval step's job).

mod rule;

pub use rule::{Rule, RuleDef, Verdict};

use crate::capability::{FsAccess, Grant};
use crate::config::SandboxMode;
use crate::outcome::{CallError, ErrorCode};
use crate::schema::ValidatedCall;
use crate::spec::ToolSpec;
use serde::Serialize;

/// The compiled rules.
#[derive(Debug, Default)]
pub struct Policy {
    rules: Vec<Rule>,
}

/// A policy error at load time.
#[derive(Debug)]
pub struct PolicyError {
    pub line: Option<usize>,
    pub message: String,
    pub hint: String,
}

/// What the rules decide for one call, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Decision {
    pub verdict: Verdict,
    /// Indices of the rules that matched (empty: the default applied).
    pub matched: Vec<usize>,
    /// Never empty: the deciding rule's reason, or why the default applied.
    pub reason: String,
}

impl Policy {
    pub fn compile(defs: Vec<RuleDef>) -> Result<Policy, PolicyError> {
        let rules = defs
            .into_iter()
            .enumerate()
            .map(|(i, def)| Rule::compile(i, def))
            .collect::<Result<Vec<_>, _>>()?;
        for (i, a) in rules.iter().enumerate() {
            for b in &rules[..i] {
                if a.same_matchers(b) && a.verdict() != b.verdict() {
                    return Err(PolicyError {
                        line: a.line(),
                        message: format!(
                            "this rule matches exactly what the rule{} matches, but decides `{}` instead of `{}`",
                            b.line()
                                .map(|l| format!(" at line {l}"))
                                .unwrap_or_default(),
                            a.verdict().as_str(),
                            b.verdict().as_str()
                        ),
                        hint: "remove one of the two rules, or narrow one so that they differ"
                            .into(),
                    });
                }
            }
        }
        Ok(Policy { rules })
    }

    /// What the rules decide for a call to the tool `spec` describes.
    pub fn evaluate(&self, spec: &ToolSpec) -> Decision {
        let matched: Vec<&Rule> = self
            .rules
            .iter()
            .filter(|r| r.matches(&spec.name))
            .collect();
        let Some(decisive) = matched.iter().max_by_key(|r| r.verdict()) else {
            return Decision {
                verdict: Verdict::Deny,
                matched: Vec::new(),
                reason: format!(
                    "no policy rule matches `{name}`, and the default is deny; to allow it, add \
                     to toolwarden.toml: [[rule]] tools = [\"{name}\"] decision = \"allow\" \
                     reason = \"why this is safe\"",
                    name = spec.name
                ),
            };
        };
        Decision {
            verdict: decisive.verdict(),
            matched: matched.iter().map(|r| r.index()).collect(),
            reason: decisive.describe(),
        }
    }

    /// Pipeline step: decides the call and computes what it is granted.
    pub fn authorize(
        &self,
        call: ValidatedCall,
        session: SandboxMode,
    ) -> Result<AuthorizedCall, CallError> {
        let tool = call.resolved().tool();
        let decision = self.evaluate(&tool.spec);
        match decision.verdict {
            Verdict::Deny => Err(CallError::new(ErrorCode::PolicyDenied, decision.reason)),
            Verdict::Allow | Verdict::Ask => {
                let grant = Grant {
                    fs: FsAccess::for_tool(tool.spec.filesystem, session),
                };
                Ok(AuthorizedCall {
                    call,
                    decision,
                    grant,
                })
            }
        }
    }
}

/// A call the policy did not deny: allowed, or allowed once a person
/// approves. Only [`Policy::authorize`] makes one.
#[derive(Debug)]
pub struct AuthorizedCall {
    call: ValidatedCall,
    decision: Decision,
    grant: Grant,
}

impl AuthorizedCall {
    pub(crate) fn into_parts(self) -> (ValidatedCall, Decision, Grant) {
        (self.call, self.decision, self.grant)
    }
}

#[cfg(test)]
mod tests;
