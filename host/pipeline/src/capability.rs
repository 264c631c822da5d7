//! What a call is granted: the policy computes a [`Grant`] and the sandbox
//! turns it into preopens and a network gate, in exactly one place each.
//! The default grants nothing. A plain value, like the session's
//! [`SandboxMode`] that caps it.

use crate::canonical_url::{CanonicalUrl, UrlPattern};
use crate::origin::OriginPattern;
use crate::spec::FsNeed;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// The most a session lets tools do to the workspace. Tools get the lesser of
/// what they declare and this.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SandboxMode {
    /// Tools may read the workspace, never change it.
    #[default]
    ReadOnly,
    /// Tools that declare `workspace-write` may change the workspace.
    WorkspaceWrite,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
        }
    }
}

impl FromStr for SandboxMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-only" => Ok(SandboxMode::ReadOnly),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            other => Err(format!(
                "unknown sandbox mode `{other}`; use `read-only` or `workspace-write`"
            )),
        }
    }
}

/// Filesystem access to the workspace for one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FsAccess {
    /// No preopen at all: the guest sees no filesystem.
    #[default]
    None,
    /// The workspace, mapped at `/workspace`, read-only.
    ReadOnly,
    /// The workspace, mapped at `/workspace`, readable and writable.
    ReadWrite,
}

impl FsAccess {
    /// The lesser of what the tool needs and what the session allows.
    pub fn for_tool(need: FsNeed, session: SandboxMode) -> FsAccess {
        match (need, session) {
            (FsNeed::None, _) => FsAccess::None,
            (FsNeed::ReadOnly, _) | (FsNeed::WorkspaceWrite, SandboxMode::ReadOnly) => {
                FsAccess::ReadOnly
            }
            (FsNeed::WorkspaceWrite, SandboxMode::WorkspaceWrite) => FsAccess::ReadWrite,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FsAccess::None => "none",
            FsAccess::ReadOnly => "read-only",
            FsAccess::ReadWrite => "read-write",
        }
    }
}

/// The kinds of address a granted origin may be reached at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reach {
    /// Public addresses only: the default.
    #[default]
    Public,
    /// Also loopback, private, link-local and unique-local addresses (an
    /// allow entry with `private = true`). A cloud metadata address still
    /// needs an entry that names the address itself.
    AlsoPrivate,
}

/// One origin a call may send requests to: what the tool declared,
/// narrowed to what the operator allowed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct GrantedOrigin {
    pub pattern: OriginPattern,
    pub reach: Reach,
}

/// What a call may reach on the network, beyond the closed default.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct NetworkGrant {
    /// Never empty.
    pub origins: Vec<GrantedOrigin>,
    /// The credentials the tool declared; the host adds each to requests to
    /// the origins the operator bound it to.
    pub credentials: Vec<String>,
}

/// The network a call may use.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Network {
    /// No request leaves the host: every one is refused.
    #[default]
    Closed,
    Open(Arc<NetworkGrant>),
}

impl Network {
    pub fn origins(&self) -> &[GrantedOrigin] {
        match self {
            Network::Closed => &[],
            Network::Open(grant) => &grant.origins,
        }
    }

    pub fn credentials(&self) -> &[String] {
        match self {
            Network::Closed => &[],
            Network::Open(grant) => &grant.credentials,
        }
    }
}

/// How a network grant reads to a person and in the approval book: the
/// origins (with the addresses they may be reached at) and the credentials.
/// `none` when closed. Two grants read alike exactly when they are equal.
impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Network::Open(grant) = self else {
            return f.write_str("none");
        };
        for (i, origin) in grant.origins.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            match origin.reach {
                Reach::Public => write!(f, "{sep}{}", origin.pattern)?,
                Reach::AlsoPrivate => write!(f, "{sep}{} (private addresses too)", origin.pattern)?,
            }
        }
        if !grant.credentials.is_empty() {
            write!(f, "; credentials {}", grant.credentials.join(", "))?;
        }
        Ok(())
    }
}

impl Serialize for Network {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Network::Closed => s.serialize_none(),
            Network::Open(grant) => grant.serialize(s),
        }
    }
}

/// A deny or ask rule about URL arguments, bound to every request of a
/// call that the rule's other matchers fit: a request whose URL the
/// pattern matches is refused (unless an ask rule's URL is one a person
/// approved with the call). The policy makes these; the egress layer
/// checks them.
#[derive(Clone, Debug)]
pub struct UrlRule {
    /// 1-based, in file order.
    pub rule: usize,
    /// `deny` or `ask`.
    pub verdict: &'static str,
    /// The rule as the user wrote it (reason, number, line).
    pub description: Arc<str>,
    pub pattern: UrlPattern,
    /// Match keys of the URLs a person approved with the call.
    pub approved: Vec<String>,
}

impl UrlRule {
    /// Whether the rule refuses a request to `url`.
    pub fn refuses(&self, url: &CanonicalUrl) -> bool {
        self.pattern.matches(url) && !self.approved.iter().any(|key| key == url.match_key())
    }
}

/// The URL rules bound to one call; none for most calls.
#[derive(Clone, Debug, Default)]
pub struct UrlRules(pub Arc<[UrlRule]>);

impl UrlRules {
    pub fn iter(&self) -> impl Iterator<Item = &UrlRule> {
        self.0.iter()
    }
}

/// Two sets of URL rules are the same when they bind the same rules to the
/// same approved URLs (the patterns follow from the rule numbers).
impl PartialEq for UrlRules {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(other.0.iter())
                .all(|(a, b)| a.rule == b.rule && a.approved == b.approved)
    }
}

impl Eq for UrlRules {}

impl std::hash::Hash for UrlRules {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        for rule in self.0.iter() {
            rule.rule.hash(state);
            rule.approved.hash(state);
        }
    }
}

/// Everything a call may use beyond its own memory.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Grant {
    pub fs: FsAccess,
    pub net: Network,
    /// Deny and ask rules on URLs, held to every request the call sends.
    #[serde(skip)]
    pub urls: UrlRules,
    /// What the call may ask of the client's model; none: nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<crate::sampling::SamplingGrant>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_grant_is_nothing() {
        assert_eq!(Grant::default().fs, FsAccess::None);
        assert_eq!(Grant::default().net, Network::Closed);
        assert_eq!(Reach::default(), Reach::Public);
        assert_eq!(Grant::default().net.to_string(), "none");
    }

    #[test]
    fn a_network_grant_reads_as_what_it_opens() {
        let grant = Network::Open(Arc::new(NetworkGrant {
            origins: vec![
                GrantedOrigin {
                    pattern: "https://api.github.com".parse().unwrap(),
                    reach: Reach::Public,
                },
                GrantedOrigin {
                    pattern: "http://127.0.0.1:*".parse().unwrap(),
                    reach: Reach::AlsoPrivate,
                },
            ],
            credentials: vec!["github".into()],
        }));
        assert_eq!(
            grant.to_string(),
            "https://api.github.com, http://127.0.0.1:* (private addresses too); credentials github"
        );
    }

    #[test]
    fn session_mode_caps_what_a_tool_gets() {
        use FsNeed::*;
        use SandboxMode as S;
        assert_eq!(FsAccess::for_tool(None, S::WorkspaceWrite), FsAccess::None);
        assert_eq!(
            FsAccess::for_tool(ReadOnly, S::WorkspaceWrite),
            FsAccess::ReadOnly
        );
        assert_eq!(
            FsAccess::for_tool(WorkspaceWrite, S::ReadOnly),
            FsAccess::ReadOnly
        );
        assert_eq!(
            FsAccess::for_tool(WorkspaceWrite, S::WorkspaceWrite),
            FsAccess::ReadWrite
        );
    }
}
