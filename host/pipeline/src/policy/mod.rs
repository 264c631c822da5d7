//! Allow / ask / deny decisions and the capability grant.
//!
//! Owns the rules from `toolwarden.toml`. [`Policy::explain`] says what every
//! rule makes of a call; [`Policy::authorize`] is the pipeline step
//! `LocatedCall -> AuthorizedCall`. Default deny: a call no rule matches is
//! denied; when several rules match the most restrictive wins, whatever their
//! order; a `dangerous` tool can be allowed (or asked for) only by a rule
//! that names it exactly, never by a glob alone. It never runs a tool and
//! never asks a person (that is the approval step's job).

mod index;
mod offered;
mod rule;
mod section;

pub use rule::{
    Approvers, Caller, MAX_APPROVERS, Miss, Offered, Rule, RuleDef, RuleMatch, Verdict, Who,
};
#[cfg(test)]
pub use rule::{ArgPattern, NetMatch};
pub use section::RuleSection;

use crate::capability::SandboxMode;
use crate::capability::{FsAccess, Grant, Network, UrlRules};
use crate::egress::Allowance;
use crate::outcome::{CallError, ErrorCode};
use crate::spec::{Risk, ToolSpec};
use crate::validation::ValidatedCall;
use crate::workspace::{LocatedCall, LocatedPath};
use serde::Serialize;
use serde_json::Value;
use smallvec::SmallVec;
use std::sync::Arc;

/// The compiled rules, and what the operator allows tools to reach.
#[derive(Debug, Default)]
pub struct Policy {
    rules: Vec<Rule>,
    /// Which rules can match a tool name (`index.rs`).
    index: index::ToolIndex,
    allowance: Allowance,
    /// Whether any rule is about sampling: without one, no call is granted
    /// any, and no call looks.
    samples: bool,
}

/// A policy error at load time.
#[derive(Debug)]
pub struct PolicyError {
    pub line: Option<usize>,
    pub message: String,
    pub hint: String,
}

/// Rule numbers a decision holds inline: a call copies its decision into
/// the audit trail, and most calls match a rule or two.
pub type RuleNumbers = SmallVec<[usize; 4]>;

/// What the rules decide for one call, and why. Cheap to copy: the reason
/// is shared with the rule that gave it.
#[derive(Clone, Debug, Serialize)]
pub struct Decision {
    pub verdict: Verdict,
    /// Numbers (1-based, in file order) of the rules that matched; empty
    /// when the default applied.
    pub matched: RuleNumbers,
    /// Never empty: the deciding rule's reason, or why the default applied.
    pub reason: Arc<str>,
    /// Some rules depend on argument values, so a call may be decided
    /// differently than this (only when no arguments were given).
    pub depends_on_args: bool,
    /// For `ask`: who must approve, as every matching `ask` rule wants it.
    #[serde(skip_serializing_if = "Approvers::is_default")]
    pub approvers: Approvers,
}

impl Decision {
    /// The default's decision (deny) when no rule decided: `reason` says
    /// why, and what to add to allow it.
    pub(super) fn by_default(
        matched: RuleNumbers,
        depends_on_args: bool,
        reason: String,
    ) -> Decision {
        Decision {
            verdict: Verdict::Deny,
            matched,
            reason: Arc::from(reason),
            depends_on_args,
            approvers: Approvers::default(),
        }
    }
}

/// What one rule made of a call, once the dangerous-tool rule is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    Matched,
    /// It matched, but a dangerous tool needs a rule that names it exactly.
    SetAside,
    Missed(Miss),
    NeedsArgs,
}

/// What `explain` hears of each rule as a call is decided.
type EachRule<'a> = dyn FnMut(&Rule, Seen, &Network) + 'a;

/// One rule's view of a call, for `policy explain`.
#[derive(Clone, Debug, Serialize)]
pub struct RuleReport {
    pub rule: usize,
    pub line: Option<usize>,
    pub verdict: Verdict,
    pub matched: bool,
    /// Everything but `when` matched, and there were no arguments to check
    /// it against (listing or checking tools, never a call).
    #[serde(skip)]
    pub needs_args: bool,
    /// Why it did not match, or why a match was set aside.
    pub note: Option<String>,
}

/// Every rule's view of a call, and the decision.
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    pub rules: Vec<RuleReport>,
    pub decision: Decision,
    /// Path arguments that lead somewhere other than they read, or nowhere
    /// inside the workspace (filled in by whoever located them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<LocatedPath>,
}

impl Policy {
    /// The rules, deciding calls whose network grant is what each tool
    /// declares narrowed to `allowance`.
    pub fn compile(defs: Vec<RuleDef>, allowance: Allowance) -> Result<Policy, PolicyError> {
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
        let index = index::ToolIndex::new(&rules);
        let samples = rules.iter().any(|r| r.offers() == Some(Offered::Sampling));
        Ok(Policy {
            rules,
            index,
            allowance,
            samples,
        })
    }

    /// What a call of `spec` from the plugin file `plugin` may reach: what
    /// the tool declares, narrowed to what the operator allows it.
    pub fn network(&self, spec: &ToolSpec, plugin: &str) -> Network {
        self.allowance.grant(plugin, spec.network.as_ref())
    }

    /// The origins a tool declares that the operator allows nowhere.
    pub fn unallowed<'a>(
        &self,
        spec: &'a ToolSpec,
        plugin: &str,
    ) -> Vec<&'a crate::origin::OriginPattern> {
        spec.network
            .as_ref()
            .map(|need| self.allowance.unallowed(plugin, need))
            .unwrap_or_default()
    }

    /// SHA-256 over the compiled rules, in an order of their own: what an
    /// approval is bound to. Editing a comment, the layout or the order of
    /// the rules leaves it as it is; changing what any rule matches or
    /// decides changes it.
    pub fn fingerprint(&self) -> String {
        let mut rules: Vec<String> = self.rules.iter().map(Rule::fingerprint).collect();
        rules.sort();
        let mut hasher = <sha2::Sha256 as sha2::Digest>::new();
        for rule in &rules {
            sha2::Digest::update(&mut hasher, rule.as_bytes());
            sha2::Digest::update(&mut hasher, b"\n");
        }
        hex::encode(sha2::Digest::finalize(hasher))
    }

    /// How many rules the policy has.
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// The config line rule `index` (0-based) was written on.
    pub fn rule_line(&self, index: usize) -> Option<usize> {
        self.rules.get(index).and_then(Rule::line)
    }

    /// What every rule makes of a call to `spec` (from the plugin file named
    /// `plugin`) with `args`; `None` when only the tool is known. `written`:
    /// the arguments as written, when resolving their paths changed them.
    pub fn explain(
        &self,
        spec: &ToolSpec,
        plugin: &str,
        args: Option<&Value>,
        written: Option<&Value>,
        made_by: (Caller<'_>, Who<'_>),
    ) -> Explanation {
        let mut reports = Vec::with_capacity(self.rules.len());
        let mut report = |rule: &Rule, seen: Seen, network: &Network| {
            let note = match seen {
                Seen::Matched => None,
                Seen::SetAside => Some(format!(
                    "set aside: `{}` is dangerous and this rule does not name it exactly",
                    spec.name
                )),
                Seen::Missed(miss) => Some(rule.miss_note(miss, spec, plugin, args, network)),
                Seen::NeedsArgs => Some(
                    "depends on argument values (`when`) or on who calls (`caller`)".to_owned(),
                ),
            };
            reports.push(RuleReport {
                rule: rule.index() + 1,
                line: rule.line(),
                verdict: rule.verdict(),
                matched: seen == Seen::Matched,
                needs_args: seen == Seen::NeedsArgs,
                note,
            });
        };
        let (decision, _) = self.decide(spec, plugin, args, written, made_by, Some(&mut report));
        Explanation {
            rules: reports,
            decision,
            paths: Vec::new(),
        }
    }

    /// What the rules decide for a call an agent makes, whoever it is (a
    /// rule on the caller makes the decision depend on it).
    pub fn evaluate(&self, spec: &ToolSpec, plugin: &str, args: Option<&Value>) -> Decision {
        self.decide(
            spec,
            plugin,
            args,
            None,
            (Caller::Agent, Who::Unknown),
            None,
        )
        .0
    }

    /// Decides a call, showing `each` (if any) what every rule made of it
    /// (with what the call may reach). Shared by the pipeline (which needs
    /// only the decision and the network grant, so only the rules that may
    /// match its tool are checked) and `explain`.
    fn decide(
        &self,
        spec: &ToolSpec,
        plugin: &str,
        args: Option<&Value>,
        written: Option<&Value>,
        made_by: (Caller<'_>, Who<'_>),
        mut each: Option<&mut EachRule<'_>>,
    ) -> (Decision, Network) {
        let network = self.network(spec, plugin);
        let dangerous = spec.risk == Risk::Dangerous;
        let mut deciding: Option<&Rule> = None;
        let mut approvers = Approvers::default();
        let mut matched = RuleNumbers::new();
        let mut depends_on_args = false;
        let checked: Vec<usize> = if each.is_some() {
            (0..self.rules.len()).collect()
        } else {
            self.index.candidates(&spec.name)
        };
        for rule in checked.iter().filter_map(|&at| self.rules.get(at)) {
            let seen = match rule.check(spec, plugin, args, written, &network, made_by) {
                RuleMatch::Matched
                    if dangerous && rule.verdict() != Verdict::Deny && !rule.names(&spec.name) =>
                {
                    Seen::SetAside
                }
                RuleMatch::Matched => Seen::Matched,
                RuleMatch::Missed(miss) => Seen::Missed(miss),
                RuleMatch::NeedsArgs => {
                    depends_on_args = true;
                    Seen::NeedsArgs
                }
            };
            if seen == Seen::Matched {
                matched.push(rule.index() + 1);
                if rule.verdict() == Verdict::Ask {
                    approvers = approvers.stricter(rule.approvers());
                }
                if deciding.is_none_or(|d| rule.verdict() > d.verdict()) {
                    deciding = Some(rule);
                }
            }
            if let Some(each) = each.as_mut() {
                each(rule, seen, &network);
            }
        }
        let decision = match deciding {
            Some(rule) => Decision {
                verdict: rule.verdict(),
                matched,
                reason: rule.describe(),
                depends_on_args,
                approvers: if rule.verdict() == Verdict::Ask {
                    approvers
                } else {
                    Approvers::default()
                },
            },
            None if dangerous => Decision::by_default(
                matched,
                depends_on_args,
                format!(
                    "`{name}` is a dangerous tool and no rule names it exactly, so it is denied; \
                     to let a person approve each call, add to toolwarden.toml (a glob is not \
                     enough):\n\n{}",
                    suggested_rule(&spec.name, "ask"),
                    name = spec.name
                ),
            ),
            None => Decision::by_default(
                matched,
                depends_on_args,
                format!(
                    "no policy rule matches `{name}`, and the default is deny; to allow it, add \
                     to toolwarden.toml:\n\n{}",
                    suggested_rule(&spec.name, "allow"),
                    name = spec.name
                ),
            ),
        };
        (decision, network)
    }

    /// Pipeline step: decides the call on where its paths lead (and, for
    /// deny and ask rules, on how they were written too) and computes what
    /// it is granted.
    pub fn authorize(
        &self,
        call: LocatedCall,
        session: SandboxMode,
        made_by: (Caller<'_>, Who<'_>),
    ) -> Result<AuthorizedCall, Denied> {
        let resolved = call.call().resolved();
        let tool = resolved.tool();
        let (decision, network) = self.decide(
            &tool.spec,
            tool.plugin.file_name(),
            Some(resolved.args().value()),
            call.written(),
            made_by,
            None,
        );
        match decision.verdict {
            Verdict::Deny => Err(Denied { decision }),
            verdict @ (Verdict::Allow | Verdict::Ask) => {
                let clearance = if verdict == Verdict::Allow {
                    Clearance::Allowed
                } else {
                    Clearance::NeedsApproval
                };
                let urls = match &network {
                    Network::Closed => UrlRules::default(),
                    Network::Open(_) => self.url_rules(
                        (&tool.spec, tool.plugin.file_name(), &network, made_by),
                        resolved.args().value(),
                        call.written(),
                        verdict == Verdict::Ask,
                    ),
                };
                // Only a plugin that imports `client` can sample: every
                // other call skips the sampling rules.
                let sampling = (self.samples && tool.plugin.loaded.samples())
                    .then(|| {
                        self.sampling_grant(&tool.spec.name, tool.plugin.file_name(), made_by.1)
                            .ok()
                    })
                    .flatten();
                let grant = Grant {
                    fs: FsAccess::for_tool(tool.spec.filesystem, session),
                    net: network,
                    urls,
                    sampling,
                };
                Ok(AuthorizedCall {
                    call,
                    clearance,
                    decision,
                    grant,
                })
            }
        }
    }
}

impl Policy {
    /// The deny and ask rules on URLs that bind every request of a call
    /// the policy let through (see [`Rule::bind_urls`]): a rule on a URL
    /// argument covers the redirects the tool follows and the URLs it
    /// builds itself, not only the argument.
    fn url_rules(
        &self,
        call: (&ToolSpec, &str, &Network, (Caller<'_>, Who<'_>)),
        args: &Value,
        written: Option<&Value>,
        approved: bool,
    ) -> UrlRules {
        let mut bound = Vec::new();
        for at in self.index.candidates(&call.0.name) {
            if let Some(rule) = self.rules.get(at) {
                rule.bind_urls(call, args, written, approved, &mut bound);
            }
        }
        UrlRules(bound.into())
    }
}

/// A call the policy denied, with the decision that denied it (the rules
/// that matched and the reason), so that the audit records it.
#[derive(Debug)]
pub struct Denied {
    pub decision: Decision,
}

impl Denied {
    pub fn error(&self) -> CallError {
        CallError::new(ErrorCode::PolicyDenied, self.decision.reason.to_string())
    }
}

/// What the policy lets a call it did not deny do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clearance {
    /// It may run.
    Allowed,
    /// It may run once a person approves it.
    NeedsApproval,
}

/// A call the policy did not deny: allowed, or allowed once a person
/// approves. Only [`Policy::authorize`] makes one.
#[derive(Debug)]
pub struct AuthorizedCall {
    call: LocatedCall,
    clearance: Clearance,
    decision: Decision,
    grant: Grant,
}

impl AuthorizedCall {
    pub fn call(&self) -> &LocatedCall {
        &self.call
    }

    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    pub(crate) fn into_parts(self) -> (ValidatedCall, Clearance, Decision, Grant) {
        (
            self.call.into_validated(),
            self.clearance,
            self.decision,
            self.grant,
        )
    }
}

/// A rule for `tool` as TOML that parses when pasted into toolwarden.toml,
/// one key per line (the form every suggestion of the host takes).
pub fn suggested_rule(tool: &str, decision: &str) -> String {
    let quoted = |text: &str| toml::Value::String(text.to_owned()).to_string();
    let reason = match decision {
        "ask" => "a person approves each call",
        _ => "why this is safe",
    };
    format!(
        "[[rule]]\ntools = [{}]\ndecision = {}\nreason = {}\n",
        quoted(tool),
        quoted(decision),
        quoted(reason)
    )
}

#[cfg(test)]
mod tests;
