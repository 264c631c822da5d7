//! Who made a call, as far as the channel it came by can prove: a plain
//! value the edges fill in (the HTTP server from an access token, the CLI
//! from the operating system) and the steps only read.
//!
//! It never checks anything itself: a `Caller` is only as good as the
//! check that made it, and [`Proof`] says which check that was.

use serde::Serialize;
use std::collections::BTreeMap;

/// The identity behind a request, as the audit records it with each call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Caller {
    /// Who: the access token's `sub`, or the name the channel knows.
    pub subject: String,
    /// How it was proven.
    #[serde(flatten)]
    pub proof: Proof,
    /// The scopes the token granted (empty for other proofs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// The claims `[auth] claims` names, as the token carried them.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub claims: BTreeMap<String, serde_json::Value>,
}

/// What vouches for a [`Caller`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "proof", rename_all = "snake_case")]
pub enum Proof {
    /// An access token from this issuer, its signature and claims checked.
    AccessToken { issuer: String },
    /// A person signed in to the console with this issuer (authorization
    /// code and PKCE, the ID token's signature, audience and nonce checked).
    SignIn { issuer: String },
    /// The server's one shared token (`--token-file`): whoever holds it.
    SharedToken,
    /// The operating-system user this process runs as (its effective uid,
    /// named by the system's user database): who is at the CLI, or who
    /// started a host serving over stdio.
    OsUser,
}

impl Caller {
    /// Who the caller is, as one text two callers share only if they are
    /// the same: the issuer and subject of a token (issuers are URLs, so
    /// the space cannot be part of one), or the shared token. What a
    /// session is bound to (see the `ownership` step).
    pub fn identity(&self) -> String {
        match &self.proof {
            // One person, whether their agent calls with an access token or
            // they sign in to the console: the issuer names them the same.
            Proof::AccessToken { issuer } | Proof::SignIn { issuer } => {
                format!("{issuer} {}", self.subject)
            }
            Proof::SharedToken => "shared-token".into(),
            Proof::OsUser => format!("os-user {}", self.subject),
        }
    }

    /// Who asks, as [`Caller::identity`] reads: `caller`, or without a
    /// proven one the OS user this process runs as (stdio, the CLI and the
    /// library run as whoever started them).
    pub fn identity_of(caller: Option<&Caller>) -> String {
        caller.map_or_else(|| Caller::os_user().identity(), Caller::identity)
    }

    /// The operating-system user this process runs as. Read once: a
    /// process's effective user does not change under it.
    pub fn os_user() -> Caller {
        static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        let name = NAME.get_or_init(|| {
            whoami::username()
                .unwrap_or_else(|_| format!("uid {}", rustix::process::geteuid().as_raw()))
        });
        Caller {
            subject: name.clone(),
            proof: Proof::OsUser,
            scopes: Vec::new(),
            claims: BTreeMap::new(),
        }
    }

    /// How it was proven, in a word: what a person reviewing is shown.
    pub fn proof_name(&self) -> &'static str {
        match self.proof {
            Proof::AccessToken { .. } => "access token",
            Proof::SignIn { .. } => "console sign-in",
            Proof::SharedToken => "shared token",
            Proof::OsUser => "os user",
        }
    }

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
