//! Rules about prompts, resources and sampling (contract 0.3.0): what such
//! a rule may say, and whether it applies to a prompt's name, a resource's
//! URI or the tool that asks the client's model. A rule with `prompts`,
//! `resources` or `sampling` never decides a tool call.

use super::{Rule, RuleDef, RuleMatch, Verdict, Who};

/// What a rule decides when it does not decide tool calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offered {
    /// `prompts/get`, by prompt name.
    Prompt,
    /// `resources/read`, by URI.
    Resource,
    /// A tool's requests to the client's model, by tool name.
    Sampling,
}

/// The caps an allow rule about sampling sets; each one left out is
/// [`crate::sampling::SamplingGrant::DEFAULT`]'s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SamplingCaps {
    pub max_requests: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_session_tokens: Option<u64>,
}

impl SamplingCaps {
    fn any(&self) -> bool {
        *self != SamplingCaps::default()
    }

    /// Both rules' caps at once: of each, the lower where both set it.
    pub fn narrowed(self, other: SamplingCaps) -> SamplingCaps {
        fn lower<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        }
        SamplingCaps {
            max_requests: lower(self.max_requests, other.max_requests),
            max_tokens: lower(self.max_tokens, other.max_tokens),
            max_session_tokens: lower(self.max_session_tokens, other.max_session_tokens),
        }
    }

    /// The grant these caps make.
    pub fn grant(&self) -> crate::sampling::SamplingGrant {
        let default = crate::sampling::SamplingGrant::DEFAULT;
        crate::sampling::SamplingGrant {
            max_requests: self.max_requests.unwrap_or(default.max_requests),
            max_tokens: self.max_tokens.unwrap_or(default.max_tokens),
            max_session_tokens: self
                .max_session_tokens
                .unwrap_or(default.max_session_tokens),
            ask: false,
        }
    }
}

impl Offered {
    /// The rule key that makes a rule about it.
    pub fn key(self) -> &'static str {
        match self {
            Offered::Prompt => "prompts",
            Offered::Resource => "resources",
            Offered::Sampling => "sampling",
        }
    }

    /// What it is called in a message.
    pub fn what(self) -> &'static str {
        match self {
            Offered::Prompt => "prompt",
            Offered::Resource => "resource",
            Offered::Sampling => "sampling by tool",
        }
    }
}

/// Caps only in an allow rule about sampling, and none of them 0.
pub(super) fn check_sampling_caps(def: &RuleDef) -> Result<(), (String, &'static str)> {
    let caps = def.sampling_caps;
    if !caps.any() {
        return Ok(());
    }
    if def.sampling.is_none() || def.verdict == Verdict::Deny {
        return Err((
            "`max_requests`, `max_tokens` and `max_session_tokens` cap what a rule allowing \
             `sampling` grants, and this rule is not one"
                .into(),
            "move the caps to a rule with `sampling = [...]` and `decision = \"allow\"` (or \
             \"ask\")",
        ));
    }
    if caps.max_requests == Some(0)
        || caps.max_tokens == Some(0)
        || caps.max_session_tokens == Some(0)
    {
        return Err((
            "a sampling cap of 0 allows nothing".into(),
            "deny sampling with `decision = \"deny\"` instead",
        ));
    }
    Ok(())
}

/// What a rule about prompts or resources may not say: the matchers about
/// tool calls, the other of the two, and `ask`.
pub(super) fn check_offer_rule(def: &RuleDef, key: &str) -> Result<(), (String, &'static str)> {
    let kinds = [&def.prompts, &def.resources, &def.sampling]
        .iter()
        .filter(|k| k.is_some())
        .count();
    if kinds > 1 {
        return Err((
            "a rule decides one of prompts, resources and sampling, not several".into(),
            "write one rule for each",
        ));
    }
    let about_calls = [
        ("tools", def.tools.is_some()),
        ("risk", def.risk.is_some()),
        ("effects", def.effects.is_some()),
        ("filesystem", def.filesystem.is_some()),
        ("network", def.network.is_some()),
        ("nested", def.nested.is_some()),
        ("parent", def.parent.is_some()),
        ("when", !def.when.is_empty()),
    ];
    if about_calls.iter().any(|(_, set)| *set) {
        return Err((
            format!(
                "a rule with `{key}` decides {key}, so `{}` (about tool calls) has no place in it",
                about_calls
                    .iter()
                    .find(|(_, set)| *set)
                    .map_or("", |(k, _)| k)
            ),
            "write a separate rule for the tools; beside `prompts`, `resources` or `sampling` a \
             rule may say `plugin` and `caller`",
        ));
    }
    if def.verdict == Verdict::Ask && def.sampling.is_none() {
        return Err((
            format!(
                "a rule with `{key}` cannot `ask`: a person fetches these in their own client, \
                 so there is nobody else to ask"
            ),
            "decide `allow` or `deny`",
        ));
    }
    Ok(())
}

impl Rule {
    /// What the rule decides instead of tool calls, if anything.
    pub(in crate::policy) fn offers(&self) -> Option<Offered> {
        match (&self.prompts, &self.resources, &self.sampling) {
            (Some(_), _, _) => Some(Offered::Prompt),
            (None, Some(_), _) => Some(Offered::Resource),
            (None, None, Some(_)) => Some(Offered::Sampling),
            (None, None, None) => None,
        }
    }

    /// What the rule grants when it allows sampling.
    pub(in crate::policy) fn sampling_caps(&self) -> SamplingCaps {
        self.def.sampling_caps
    }

    /// Whether the rule matches on who the caller is.
    pub(in crate::policy) fn has_caller(&self) -> bool {
        self.def.caller.is_some()
    }

    /// Whether the rule applies to `name` (a prompt name or a resource
    /// URI, as `kind` says) of the plugin file `plugin` requested by
    /// `who`; false for a rule about anything else.
    pub(in crate::policy) fn matches_offered(
        &self,
        kind: Offered,
        name: &str,
        plugin: &str,
        who: Who<'_>,
    ) -> bool {
        let globs = match kind {
            Offered::Prompt => &self.prompts,
            Offered::Resource => &self.resources,
            Offered::Sampling => &self.sampling,
        };
        globs.as_ref().is_some_and(|g| g.is_match(name))
            && self.plugin.as_ref().is_none_or(|p| p.is_match(plugin))
            && match self.caller.check(who) {
                None => true,
                Some(RuleMatch::NeedsArgs) => true,
                Some(_) => false,
            }
    }
}
