//! How a rule is shown and told apart: why it missed a call, whether two
//! rules match the same calls, its fingerprint and its one-line description.

use super::{ArgPattern, Compiled, Miss, NetMatch, Rule};
use crate::canonical_url::CanonicalUrl;
use crate::capability::Network;
use crate::spec::{FsNeed, Risk, ToolSpec};
use serde_json::Value;
use std::sync::Arc;

pub(super) fn sorted<T: Ord + Clone>(list: &Option<Vec<T>>) -> Option<Vec<T>> {
    list.as_ref().map(|l| {
        let mut l = l.clone();
        l.sort();
        l.dedup();
        l
    })
}

/// A `network` matcher in an order of its own, for comparing rules.
pub(super) fn network_key(matcher: &Option<NetMatch>) -> Value {
    match matcher {
        None => Value::Null,
        Some(NetMatch::Reaches(reaches)) => Value::Bool(*reaches),
        Some(NetMatch::Origins(list)) => {
            let mut shown: Vec<String> = list.iter().map(ToString::to_string).collect();
            shown.sort();
            shown.dedup();
            serde_json::json!(shown)
        }
    }
}

pub(super) fn names<T: Copy>(list: &[T], name: fn(T) -> &'static str) -> String {
    list.iter().map(|x| name(*x)).collect::<Vec<_>>().join(", ")
}

impl Rule {
    pub fn miss_note(
        &self,
        miss: Miss,
        spec: &ToolSpec,
        plugin: &str,
        args: Option<&Value>,
        network: &Network,
    ) -> String {
        match miss {
            Miss::Tools => format!("`tools` does not match `{}`", spec.name),
            Miss::NotAboutCalls => {
                "it decides prompts, resources or sampling (`prompts`, `resources`, `sampling`), not tool \
                 calls"
                    .into()
            }
            Miss::Plugin => format!("`plugin` does not match `{plugin}`"),
            Miss::Risk => format!(
                "`risk` is not {}",
                names(self.def.risk.as_deref().unwrap_or_default(), Risk::as_str)
            ),
            Miss::Effect(missing) => format!(
                "the tool does not declare the effect `{}`",
                missing.as_str()
            ),
            Miss::Filesystem => format!(
                "`filesystem` is not {}",
                names(
                    self.def.filesystem.as_deref().unwrap_or_default(),
                    FsNeed::as_str
                )
            ),
            Miss::Network => {
                format!("`network` does not match what the call may reach ({network})")
            }
            Miss::Caller => match (self.def.nested, &self.def.parent) {
                (Some(false), _) => "`nested = false`, and a tool made the call".to_owned(),
                (_, Some(parent)) => format!(
                    "`parent` is {}, and the call was not made by such a tool",
                    parent.join(", ")
                ),
                _ => "`nested = true`, and an agent made the call".to_owned(),
            },
            Miss::Identity => {
                let wanted: Vec<String> = self
                    .def
                    .caller
                    .iter()
                    .flatten()
                    .map(|(key, globs)| format!("{key} {}", globs.join(" or ")))
                    .collect();
                format!(
                    "`caller` wants {}, and the call's caller is not that (or was not proven)",
                    wanted.join(", ")
                )
            }
            Miss::When(at) => {
                let (pointer, pattern) = self
                    .when
                    .get(at)
                    .map_or(("", None), |(p, c)| (p.as_str(), Some(c)));
                let value = args.and_then(|a| a.pointer(pointer));
                let shown = value.map_or_else(|| "missing".to_owned(), |v| v.to_string());
                // A URL is matched in its canonical form: say so when that
                // is not how it was written.
                let read = pattern
                    .and_then(Compiled::url_pattern)
                    .and(value)
                    .and_then(Value::as_str)
                    .and_then(|text| Some((text, CanonicalUrl::parse(text)?)))
                    .filter(|(text, url)| url.as_str() != *text)
                    .map(|(_, url)| format!(", read as `{url}`"))
                    .unwrap_or_default();
                format!("`when.\"{pointer}\"` does not match (the argument is {shown}{read})")
            }
        }
    }

    /// Two rules that match exactly the same calls by construction.
    pub(in crate::policy) fn same_matchers(&self, other: &Rule) -> bool {
        let (a, b) = (&self.def, &other.def);
        sorted(&a.tools) == sorted(&b.tools)
            && sorted(&a.prompts) == sorted(&b.prompts)
            && sorted(&a.resources) == sorted(&b.resources)
            && sorted(&a.sampling) == sorted(&b.sampling)
            && sorted(&a.plugin) == sorted(&b.plugin)
            && sorted(&a.risk) == sorted(&b.risk)
            && sorted(&a.effects) == sorted(&b.effects)
            && sorted(&a.filesystem) == sorted(&b.filesystem)
            && network_key(&a.network) == network_key(&b.network)
            && a.nested == b.nested
            && sorted(&a.parent) == sorted(&b.parent)
            && callers(&a.caller) == callers(&b.caller)
            && a.when == b.when
    }

    /// What the rule matches and decides, as canonical JSON: neither its
    /// line nor the file's comments and layout are part of it.
    pub(in crate::policy) fn fingerprint(&self) -> String {
        fn pattern(p: &ArgPattern) -> Value {
            match p {
                ArgPattern::Glob(glob) => serde_json::json!({ "glob": glob }),
                ArgPattern::Exact(value) => serde_json::json!({ "exact": value }),
                ArgPattern::Not(inner) => serde_json::json!({ "not": pattern(inner) }),
            }
        }
        let d = &self.def;
        let when: serde_json::Map<String, Value> = d
            .when
            .iter()
            .map(|(pointer, p)| (pointer.clone(), pattern(p)))
            .collect();
        let mut fingerprint = serde_json::json!({
            "tools": sorted(&d.tools),
            "plugin": sorted(&d.plugin),
            "risk": sorted(&d.risk),
            "effects": sorted(&d.effects),
            "filesystem": sorted(&d.filesystem),
            "network": network_key(&d.network),
            "when": when,
            "decision": d.verdict,
            "reason": d.reason,
        });
        // Only when set, so that a policy written before these matchers
        // existed keeps its fingerprint (and the approvals bound to it).
        if let Some(object) = fingerprint.as_object_mut() {
            if let Some(nested) = d.nested {
                object.insert("nested".into(), Value::Bool(nested));
            }
            if let Some(parent) = sorted(&d.parent) {
                object.insert("parent".into(), serde_json::json!(parent));
            }
            if let Some(caller) = callers(&d.caller) {
                object.insert("caller".into(), serde_json::json!(caller));
            }
            if let Some(prompts) = sorted(&d.prompts) {
                object.insert("prompts".into(), serde_json::json!(prompts));
            }
            if let Some(resources) = sorted(&d.resources) {
                object.insert("resources".into(), serde_json::json!(resources));
            }
            if let Some(sampling) = sorted(&d.sampling) {
                let caps = d.sampling_caps;
                object.insert("sampling".into(), serde_json::json!(sampling));
                object.insert(
                    "sampling_caps".into(),
                    serde_json::json!([
                        caps.max_requests,
                        caps.max_tokens,
                        caps.max_session_tokens
                    ]),
                );
            }
            if !d.approvers.is_default() {
                object.insert("approvers".into(), serde_json::json!(d.approvers));
            }
        }
        fingerprint.to_string()
    }

    /// The rule as the user wrote it, for messages and the audit log;
    /// shared with every decision it makes.
    pub(in crate::policy) fn describe(&self) -> Arc<str> {
        Arc::clone(&self.description)
    }
}

/// A `caller` matcher with each key's globs sorted, to compare and print.
fn callers(
    caller: &Option<std::collections::BTreeMap<String, Vec<String>>>,
) -> Option<std::collections::BTreeMap<String, Vec<String>>> {
    caller.as_ref().map(|keys| {
        keys.iter()
            .map(|(key, globs)| {
                (
                    key.clone(),
                    sorted(&Some(globs.clone())).unwrap_or_default(),
                )
            })
            .collect()
    })
}
