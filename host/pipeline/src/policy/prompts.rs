//! The decision about a prompt (contract 0.3.0): the rules with `prompts`
//! alone decide it, default deny, the most restrictive matching rule wins.
//! A rule about prompts never decides a tool call (`rule/mod.rs`).

use super::{Approvers, Decision, Policy, RuleNumbers, Verdict, Who};
use crate::policy::Rule;

impl Policy {
    /// What the rules about prompts decide for prompt `prompt` of the
    /// plugin file `plugin`, requested by `who` (`Who::Unknown` when
    /// listing: a rule on the caller then counts as matching only when it
    /// denies, so a list never offers what a request would be refused).
    /// Default deny; the most restrictive matching rule wins.
    pub fn decide_prompt(&self, prompt: &str, plugin: &str, who: Who<'_>) -> Decision {
        let mut deciding: Option<&Rule> = None;
        let mut matched = RuleNumbers::new();
        let mut depends_on_args = false;
        for rule in self.rules.iter().filter(|r| r.is_about_prompts()) {
            let fits = match who {
                Who::Unknown if rule.has_caller() => {
                    depends_on_args = true;
                    rule.verdict() == Verdict::Deny
                        && rule.matches_prompt(prompt, plugin, Who::Unknown)
                }
                _ => rule.matches_prompt(prompt, plugin, who),
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
                    "no policy rule allows prompt `{prompt}`, and the default is deny; to allow \
                     it, add to toolwarden.toml:\n\n[[rule]]\nprompts = [\"{prompt}\"]\n\
                     decision = \"allow\"\nreason = \"...\""
                ),
            ),
        }
    }
}
