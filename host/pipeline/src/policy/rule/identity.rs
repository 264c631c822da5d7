//! The `caller` matcher's side of a call: who the agent behind it is, and
//! what each key of the matcher names of it.

use super::{ErrorFn, Miss, RuleMatch, globs};
use crate::caller::{Caller as Identity, Proof};
use crate::policy::PolicyError;
use globset::GlobSet;
use serde_json::Value;
use std::collections::BTreeMap;

/// Who the agent behind a call is, as far as the policy can tell.
#[derive(Clone, Copy, Debug)]
pub enum Who<'a> {
    /// What its channel proved (an access token, the shared token); `None`
    /// when nothing was (stdio, the CLI, the library): no `caller` rule
    /// matches such a call.
    Known(Option<&'a Identity>),
    /// Not known: tools are being listed or checked, so a rule on the
    /// caller may apply.
    Unknown,
}

/// A rule's `caller` matcher, compiled: each key with its globs (none:
/// the rule has no `caller`).
#[derive(Debug, Default)]
pub(super) struct CallerMatcher(Vec<(String, GlobSet)>);

impl CallerMatcher {
    pub fn compile(
        keys: Option<&BTreeMap<String, Vec<String>>>,
        error: &ErrorFn<'_>,
    ) -> Result<CallerMatcher, PolicyError> {
        let Some(keys) = keys else {
            return Ok(CallerMatcher::default());
        };
        if keys.is_empty() {
            return Err(error(
                "`caller` is empty, so the rule would match any caller".into(),
                "name what the caller must be, e.g. caller = { subject = [\"alice\"] }, or \
                 leave the key out",
            ));
        }
        keys.iter()
            .map(|(key, patterns)| {
                Ok((
                    key.clone(),
                    globs(patterns, &format!("caller.{key}"), error)?,
                ))
            })
            .collect::<Result<_, _>>()
            .map(CallerMatcher)
    }

    /// `None` when the caller fits (or the rule has no `caller`), else how
    /// the rule missed, or that it depends on a caller not known yet.
    pub fn check(&self, who: Who<'_>) -> Option<RuleMatch> {
        if self.0.is_empty() {
            return None;
        }
        match who {
            Who::Unknown => Some(RuleMatch::NeedsArgs),
            Who::Known(None) => Some(RuleMatch::Missed(Miss::Identity)),
            Who::Known(Some(identity)) => {
                let fits = self.0.iter().all(|(key, globs)| {
                    values(identity, key)
                        .iter()
                        .any(|value| globs.is_match(value.as_ref()))
                });
                (!fits).then_some(RuleMatch::Missed(Miss::Identity))
            }
        }
    }
}

/// What a `caller` key names of a caller: its `subject`, `issuer` (of an
/// access token), `proof` (`access_token`, `shared_token`, `os_user`), or the claim
/// of that name (each string of a list claim; a number or boolean as its
/// JSON text). Nothing for a claim the caller does not carry.
fn values<'a>(identity: &'a Identity, key: &str) -> Vec<std::borrow::Cow<'a, str>> {
    use std::borrow::Cow;
    let scalar = |value: &'a Value| match value {
        Value::String(text) => Some(Cow::Borrowed(text.as_str())),
        Value::Number(_) | Value::Bool(_) => Some(Cow::Owned(value.to_string())),
        _ => None,
    };
    match key {
        "subject" => vec![Cow::Borrowed(identity.subject.as_str())],
        "issuer" => match &identity.proof {
            Proof::AccessToken { issuer } | Proof::SignIn { issuer } => {
                vec![Cow::Borrowed(issuer.as_str())]
            }
            Proof::SharedToken | Proof::OsUser => Vec::new(),
        },
        "proof" => vec![Cow::Borrowed(match identity.proof {
            Proof::AccessToken { .. } => "access_token",
            Proof::SignIn { .. } => "sign_in",
            Proof::SharedToken => "shared_token",
            Proof::OsUser => "os_user",
        })],
        claim => match identity.claims.get(claim) {
            Some(Value::Array(items)) => items.iter().filter_map(scalar).collect(),
            Some(value) => scalar(value).into_iter().collect(),
            None => Vec::new(),
        },
    }
}
