//! Rules about prompts and resources (contract 0.3.0): what such a rule
//! may say, and whether it applies to a prompt's name or a resource's URI.
//! A rule with `prompts` or `resources` never decides a tool call.

use super::{Rule, RuleDef, RuleMatch, Verdict, Who};

/// What a rule decides when it does not decide tool calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offered {
    /// `prompts/get`, by prompt name.
    Prompt,
    /// `resources/read`, by URI.
    Resource,
}

impl Offered {
    /// The rule key that makes a rule about it.
    pub fn key(self) -> &'static str {
        match self {
            Offered::Prompt => "prompts",
            Offered::Resource => "resources",
        }
    }
}

/// What a rule about prompts or resources may not say: the matchers about
/// tool calls, the other of the two, and `ask`.
pub(super) fn check_offer_rule(def: &RuleDef, key: &str) -> Result<(), (String, &'static str)> {
    if def.prompts.is_some() && def.resources.is_some() {
        return Err((
            "a rule decides prompts or resources, not both".into(),
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
            "write a separate rule for the tools; beside `prompts` or `resources` a rule may say \
             `plugin` and `caller`",
        ));
    }
    if def.verdict == Verdict::Ask {
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
        match (&self.prompts, &self.resources) {
            (Some(_), _) => Some(Offered::Prompt),
            (None, Some(_)) => Some(Offered::Resource),
            (None, None) => None,
        }
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
