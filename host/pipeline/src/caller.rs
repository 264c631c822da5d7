//! Who made a call, as far as the channel it came by can prove: a plain
//! value the edges fill in (the HTTP server from an access token, the CLI
//! from the operating system) and the steps only read.
//!
//! It never checks anything itself: a `Caller` is only as good as the
//! check that made it, and [`Proof`] says which check that was.

use std::collections::BTreeMap;

/// The identity behind a request.
#[derive(Clone, Debug, PartialEq)]
pub struct Caller {
    /// Who: the access token's `sub`, or the name the channel knows.
    pub subject: String,
    /// How it was proven.
    pub proof: Proof,
    /// The scopes the token granted (empty for other proofs).
    pub scopes: Vec<String>,
    /// The claims `[auth] claims` names, as the token carried them.
    pub claims: BTreeMap<String, serde_json::Value>,
}

/// What vouches for a [`Caller`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Proof {
    /// An access token from this issuer, its signature and claims checked.
    AccessToken { issuer: String },
    /// The server's one shared token (`--token-file`): whoever holds it.
    SharedToken,
}

impl Caller {
    /// The holder of the shared token: one identity for everyone who has it.
    pub fn shared_token() -> Caller {
        Caller {
            subject: "shared-token".into(),
            proof: Proof::SharedToken,
            scopes: Vec::new(),
            claims: BTreeMap::new(),
        }
    }
}
