//! The decision about a prompt, a resource or a tool's sampling (contract
//! 0.3.0): the rules with `prompts` (`resources`, `sampling`) alone decide
//! it, default deny, the most restrictive matching rule wins. Such a rule
//! never decides a tool call (`rule/mod.rs`).

use super::rule::{Offered, SamplingCaps};
use super::{Approvers, Decision, Policy, RuleNumbers, Verdict, Who};
use crate::policy::Rule;
use crate::sampling::SamplingGrant;

impl Policy {
    /// What the rules about `kind` decide for `name` (a prompt's name, a
    /// resource's URI) of the plugin file `plugin`, requested by `who` (`Who::Unknown` when
    /// listing: a rule on the caller then counts as matching only when it
    /// denies, so a list never offers what a request would be refused).
    /// Default deny; the most restrictive matching rule wins.
    pub fn decide_offered(
        &self,
        kind: Offered,
        name: &str,
        plugin: &str,
        who: Who<'_>,
    ) -> Decision {
        let mut deciding: Option<&Rule> = None;
        let mut matched = RuleNumbers::new();
        let mut depends_on_args = false;
        for rule in self.rules.iter().filter(|r| r.offers() == Some(kind)) {
            let fits = match who {
                Who::Unknown if rule.has_caller() => {
                    depends_on_args = true;
                    rule.verdict() == Verdict::Deny
                        && rule.matches_offered(kind, name, plugin, Who::Unknown)
                }
                _ => rule.matches_offered(kind, name, plugin, who),
            };
            if fits {
                matched.push(rule.index() + 1);
                if deciding.is_none_or(|d| rule.verdict() > d.verdict()) {
                    deciding = Some(rule);
                }
            }
        }
        match deciding {
            Some(rule) => Decision {
                verdict: rule.verdict(),
                matched,
                reason: rule.describe(),
                depends_on_args,
                approvers: Approvers::default(),
            },
            None => Decision::by_default(
                matched,
                depends_on_args,
                format!(
                    "no policy rule allows {what} `{name}`, and the default is deny; to allow \
                     it, add to toolwarden.toml:\n\n[[rule]]\n{key} = [\"{name}\"]\n\
                     decision = \"allow\"\nreason = \"...\"",
                    what = kind.what(),
                    key = kind.key(),
                ),
            ),
        }
    }

    /// What the policy lets `tool` (of the plugin file `plugin`, called by
    /// `who`) ask of the client's model in one call: `Err` with the reason
    /// when no rule allows it or one denies it; a grant that needs the
    /// person's yes to each request when an `ask` rule matches (and none
    /// denies). Every cap a matching allow
    /// rule sets holds, so the lowest of each wins; a cap no matching rule
    /// sets is the default.
    pub fn sampling_grant(
        &self,
        tool: &str,
        plugin: &str,
        who: Who<'_>,
    ) -> Result<SamplingGrant, std::sync::Arc<str>> {
        let decision = self.decide_offered(Offered::Sampling, tool, plugin, who);
        if decision.verdict == Verdict::Deny {
            return Err(decision.reason);
        }
        let caps = self
            .rules
            .iter()
            .filter(|r| {
                r.offers() == Some(Offered::Sampling)
                    && r.matches_offered(Offered::Sampling, tool, plugin, who)
            })
            .map(|rule| rule.sampling_caps())
            .fold(SamplingCaps::default(), SamplingCaps::narrowed);
        Ok(SamplingGrant {
            ask: decision.verdict == Verdict::Ask,
            ..caps.grant()
        })
    }
}
