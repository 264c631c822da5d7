//! The decision about a prompt or a resource (contract 0.3.0): the rules
//! with `prompts` (or `resources`) alone decide it, default deny, the most
//! restrictive matching rule wins. Such a rule never decides a tool call
//! (`rule/mod.rs`).

use super::rule::Offered;
use super::{Approvers, Decision, Policy, RuleNumbers, Verdict, Who};
use crate::policy::Rule;

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
                    what = match kind {
                        Offered::Prompt => "prompt",
                        Offered::Resource => "resource",
                    },
                    key = kind.key(),
                ),
            ),
        }
    }
}
