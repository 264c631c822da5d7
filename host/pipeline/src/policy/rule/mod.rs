//! One policy rule: what it matches, what it decides, and why.
//!
//! A rule matches a call when every matcher it has matches (a matcher that is
//! left out matches everything): `tools` (name globs), `plugin` (file-name
//! globs), `risk` (any of), `effects` (the tool declares all of them),
//! `filesystem` (any of), `network` (what the call may reach), `nested`
//! (whether a tool made the call through `compose`), `parent` (name globs
//! of the tool that made it; only nested calls match), `caller` (who the
//! agent is, as its channel proved it: the token's subject, issuer, or a
//! claim `[auth] claims` names) and `when` (argument values by JSON
//! pointer). An `ask` rule may also say who must approve: `approvers`
//! (distinct people) and `self_approval` (whether the caller may).
//!
//! A rule with `prompts` (name globs) decides which prompts a session may
//! get instead, one with `resources` (URI globs) which resources it may
//! read, and neither ever a tool call: beside them only `plugin` and
//! `caller` make sense, and they allow or deny (a person fetches a prompt or
//! a resource in their own client, so there is nobody else to ask).

use super::PolicyError;
use crate::canonical_url::{CanonicalUrl, UrlPattern};
use crate::capability::{Network, UrlRule};
use crate::origin::OriginPattern;
use crate::spec::{Effect, FsNeed, Risk, ToolSpec};
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

mod approvers;
mod compile;
mod identity;
mod matched;
mod offered;
mod shown;
mod when;

pub use approvers::{Approvers, MAX_APPROVERS};
use identity::CallerMatcher;
pub use identity::Who;
pub use matched::{Miss, RuleMatch};
pub use offered::{Offered, SamplingCaps};
pub use when::ArgPattern;
use when::Compiled;

/// A decision. Ordered from least to most restrictive, so `max` is the rule
/// "most restrictive wins".
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Allow,
    Ask,
    /// The closed decision.
    #[default]
    Deny,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }
}

/// What a `network` matcher asks of the call's network grant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetMatch {
    /// `network = true`: the call may reach some origin; `false`: none.
    Reaches(bool),
    /// `network = ["https://*.github.com"]`: a deny or ask rule matches a
    /// call that may reach any origin these overlap; an allow rule only a
    /// call all of whose origins lie within them.
    Origins(Vec<OriginPattern>),
}

/// Who made a call, as far as the policy can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller<'a> {
    /// An agent (CLI, MCP, library): not nested.
    Agent,
    /// The tool named here, through `compose`.
    Tool(&'a str),
    /// Not known: the policy is read without a call (`check`), so a rule
    /// that matches on the caller may apply.
    Unknown,
}

/// A rule as written in the config file.
#[derive(Clone, Debug, Default)]
pub struct RuleDef {
    pub line: Option<usize>,
    pub tools: Option<Vec<String>>,
    /// Makes the rule one about prompts (`prompts/get`), by name globs.
    pub prompts: Option<Vec<String>>,
    /// Makes the rule one about resources (`resources/read`), by URI globs.
    pub resources: Option<Vec<String>>,
    /// Makes the rule one about which tools may ask the client's model
    /// (sampling), by tool name globs.
    pub sampling: Option<Vec<String>>,
    /// What an allow rule about sampling caps.
    pub sampling_caps: SamplingCaps,
    pub plugin: Option<Vec<String>>,
    pub risk: Option<Vec<Risk>>,
    pub effects: Option<Vec<Effect>>,
    pub filesystem: Option<Vec<FsNeed>>,
    pub network: Option<NetMatch>,
    /// Only calls a tool made (`true`) or an agent made (`false`).
    pub nested: Option<bool>,
    /// Only calls made by a tool these globs match.
    pub parent: Option<Vec<String>>,
    /// Only calls whose caller's `subject`, `issuer`, `proof` or named
    /// claim matches one of the globs given for it, for every key given.
    pub caller: Option<BTreeMap<String, Vec<String>>>,
    pub when: BTreeMap<String, ArgPattern>,
    pub verdict: Verdict,
    /// Who must approve, for an `ask` rule.
    pub approvers: Approvers,
    pub reason: String,
}

/// A compiled rule.
#[derive(Debug)]
pub struct Rule {
    index: usize,
    def: RuleDef,
    /// The rule as the user wrote it, for messages and the audit log.
    /// Shared with every decision it makes.
    description: Arc<str>,
    tools: Option<GlobSet>,
    prompts: Option<GlobSet>,
    resources: Option<GlobSet>,
    sampling: Option<GlobSet>,
    plugin: Option<GlobSet>,
    parent: Option<GlobSet>,
    caller: CallerMatcher,
    when: Vec<(String, Compiled)>,
    /// The `when` entries (by position) whose pattern is about URLs: what
    /// a deny or ask rule binds to every request of a call.
    url_entries: Vec<(usize, UrlPattern)>,
}

pub(super) type ErrorFn<'a> = dyn Fn(String, &str) -> PolicyError + 'a;

fn globs(patterns: &[String], what: &str, error: &ErrorFn<'_>) -> Result<GlobSet, PolicyError> {
    if patterns.is_empty() {
        return Err(error(
            format!("`{what}` is empty, so the rule matches nothing"),
            "list at least one name or glob, or leave the key out",
        ));
    }
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern).map_err(|e| {
            error(
                format!("`{pattern}` in `{what}` is not a valid glob: {e}"),
                "use `*` and `?` wildcards, e.g. \"fs_*\"",
            )
        })?;
        set.add(glob);
    }
    set.build().map_err(|e| {
        error(
            format!("cannot build the `{what}` globs: {e}"),
            "simplify the globs",
        )
    })
}

impl Rule {
    pub fn index(&self) -> usize {
        self.index
    }

    pub fn line(&self) -> Option<usize> {
        self.def.line
    }

    /// The `tools` globs as written; none when the rule names no tool.
    pub(super) fn tool_patterns(&self) -> Option<&[String]> {
        self.def.tools.as_deref()
    }

    pub fn verdict(&self) -> Verdict {
        self.def.verdict
    }

    pub fn approvers(&self) -> Approvers {
        self.def.approvers
    }

    /// Whether the rule lists `tool` by its exact name (not only by a glob).
    pub fn names(&self, tool: &str) -> bool {
        self.def
            .tools
            .as_ref()
            .is_some_and(|t| t.iter().any(|n| n == tool))
    }

    /// Every matcher but `when` against a call: `None` when they all
    /// match, else how the rule missed.
    fn check_call(
        &self,
        spec: &ToolSpec,
        plugin: &str,
        network: &Network,
        (caller, who): (Caller<'_>, Who<'_>),
    ) -> Option<RuleMatch> {
        if self.offers().is_some() {
            return Some(RuleMatch::Missed(Miss::NotAboutCalls));
        }
        if let Some(tools) = &self.tools
            && !tools.is_match(&spec.name)
        {
            return Some(RuleMatch::Missed(Miss::Tools));
        }
        if let Some(globs) = &self.plugin
            && !globs.is_match(plugin)
        {
            return Some(RuleMatch::Missed(Miss::Plugin));
        }
        if let Some(risks) = &self.def.risk
            && !risks.contains(&spec.risk)
        {
            return Some(RuleMatch::Missed(Miss::Risk));
        }
        if let Some(effects) = &self.def.effects
            && let Some(missing) = effects.iter().find(|e| !spec.effects.contains(**e))
        {
            return Some(RuleMatch::Missed(Miss::Effect(*missing)));
        }
        if let Some(fs) = &self.def.filesystem
            && !fs.contains(&spec.filesystem)
        {
            return Some(RuleMatch::Missed(Miss::Filesystem));
        }
        if let Some(matcher) = &self.def.network
            && !self.network_matches(matcher, network)
        {
            return Some(RuleMatch::Missed(Miss::Network));
        }
        let on_caller = self.def.nested.is_some() || self.parent.is_some();
        match caller {
            _ if !on_caller => {}
            Caller::Unknown => return Some(RuleMatch::NeedsArgs),
            Caller::Agent => {
                if self.def.nested == Some(true) || self.parent.is_some() {
                    return Some(RuleMatch::Missed(Miss::Caller));
                }
            }
            Caller::Tool(parent) => {
                if self.def.nested == Some(false)
                    || self.parent.as_ref().is_some_and(|p| !p.is_match(parent))
                {
                    return Some(RuleMatch::Missed(Miss::Caller));
                }
            }
        }
        self.caller.check(who)
    }

    /// Checks the rule against a call; `args` is `None` when only the tool is
    /// known (listing tools). `written` is the arguments as the caller wrote
    /// them when resolving paths changed them (`args` has the resolved
    /// form): a deny or ask rule that matches either form applies, an allow
    /// rule only one that matches where the paths really lead.
    pub fn check(
        &self,
        spec: &ToolSpec,
        plugin: &str,
        args: Option<&Value>,
        written: Option<&Value>,
        network: &Network,
        made_by: (Caller<'_>, Who<'_>),
    ) -> RuleMatch {
        if let Some(missed) = self.check_call(spec, plugin, network, made_by) {
            return missed;
        }
        if self.when.is_empty() {
            return RuleMatch::Matched;
        }
        let Some(args) = args else {
            return RuleMatch::NeedsArgs;
        };
        let written = match self.verdict() {
            Verdict::Allow => None,
            Verdict::Ask | Verdict::Deny => written,
        };
        match self.when.iter().position(|(pointer, pattern)| {
            !(pattern.matches(args.pointer(pointer))
                || written.is_some_and(|w| pattern.matches(w.pointer(pointer))))
        }) {
            Some(at) => RuleMatch::Missed(Miss::When(at)),
            None => RuleMatch::Matched,
        }
    }

    /// What this rule, if it denies or asks on URL arguments, binds to a
    /// call it did not stop: for each of its URL entries whose other
    /// matchers all fit the call, the URL pattern, which every request the
    /// call sends is then held to (see [`UrlRule`]). `approved`: a person
    /// approves the call, so the URLs its arguments hold at that entry are
    /// let out.
    pub(super) fn bind_urls(
        &self,
        call: (&ToolSpec, &str, &Network, (Caller<'_>, Who<'_>)),
        args: &Value,
        written: Option<&Value>,
        approved: bool,
        out: &mut Vec<UrlRule>,
    ) {
        if self.url_entries.is_empty() || self.verdict() == Verdict::Allow {
            return;
        }
        let (spec, plugin, network, made_by) = call;
        if self.check_call(spec, plugin, network, made_by).is_some() {
            return;
        }
        let fits = |pointer: &str, pattern: &Compiled| {
            pattern.matches(args.pointer(pointer))
                || written.is_some_and(|w| pattern.matches(w.pointer(pointer)))
        };
        for (at, url_pattern) in &self.url_entries {
            let others_fit = self
                .when
                .iter()
                .enumerate()
                .all(|(i, (pointer, pattern))| i == *at || fits(pointer, pattern));
            if !others_fit {
                continue;
            }
            let pointer = &self.when[*at].0;
            let approved = if approved {
                [Some(args), written]
                    .into_iter()
                    .flatten()
                    .filter_map(|value| value.pointer(pointer)?.as_str())
                    .filter_map(CanonicalUrl::parse)
                    .map(|url| url.match_key().to_owned())
                    .collect()
            } else {
                Vec::new()
            };
            out.push(UrlRule {
                rule: self.index + 1,
                verdict: self.verdict().as_str(),
                description: self.describe(),
                pattern: url_pattern.clone(),
                approved,
            });
        }
    }

    /// A `network` matcher against the call's grant: overlapping is
    /// enough for deny and ask, allow needs every granted origin inside.
    fn network_matches(&self, matcher: &NetMatch, network: &Network) -> bool {
        match matcher {
            NetMatch::Reaches(reaches) => network.origins().is_empty() != *reaches,
            NetMatch::Origins(listed) => match self.verdict() {
                Verdict::Allow => {
                    !network.origins().is_empty()
                        && network
                            .origins()
                            .iter()
                            .all(|granted| listed.iter().any(|p| granted.pattern.within(p)))
                }
                Verdict::Ask | Verdict::Deny => network.origins().iter().any(|granted| {
                    listed
                        .iter()
                        .any(|p| granted.pattern.intersect(p).is_some())
                }),
            },
        }
    }
}
