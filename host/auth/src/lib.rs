//! # `toolwarden-auth` (host/auth)
//!
//! Who is calling over HTTP. With `[auth]` configured, `serve --http` is
//! an OAuth 2.1 resource server as the MCP authorization spec describes it
//! (2025-11-25 and 2026-07-28): it publishes Protected Resource Metadata
//! (RFC 9728) naming its issuer, answers a request without a valid access
//! token `401` with `WWW-Authenticate: Bearer resource_metadata=...`, and
//! checks each token against the keys the issuer publishes (signature,
//! issuer, audience, expiry, not-before, subject, scopes). The server's
//! shared token (`--token-file`) keeps working beside it.
//!
//! With `[auth] console_client_id`, people also sign in to the console
//! with the same issuer ([`SignIn`]: authorization code and PKCE, the ID
//! token checked like an access token, for the console's client).
//!
//! Depends on the pipeline library for the `[auth]` settings and the
//! [`Caller`] it produces; decides nothing about calls (that is the
//! policy's, with the caller in hand) and never signs a token.

#![deny(clippy::print_stdout, clippy::print_stderr)]

mod issuer;
mod keys;
mod resource;
mod ring_verifier;
pub mod sign_in;
mod token;

pub use resource::{Gate, guard, metadata_routes, same_secret};
pub use sign_in::{SignIn, SignInError, Started};
pub use token::Authority;
pub use toolwarden::caller::Caller;

/// Why a request's credentials were not accepted. Each has a stable code
/// ([`Refusal::code`]) that the answer's body and the log carry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no access token: send `Authorization: Bearer <token>`")]
    Missing,
    #[error("the access token cannot be read: {0}")]
    Malformed(String),
    #[error("the access token is signed with `{0}`, which this server does not accept")]
    Algorithm(String),
    #[error("the access token names a key the issuer does not publish (kid {id:?}, {algorithm})")]
    UnknownKey {
        id: Option<String>,
        algorithm: String,
    },
    #[error("the access token's signature does not verify")]
    Signature,
    #[error("the access token was not issued by `{0}`")]
    Issuer(String),
    #[error("the access token is not meant for `{0}` (its `aud`)")]
    Audience(String),
    #[error("the access token has expired")]
    Expired,
    #[error("the access token is not valid yet (`nbf`)")]
    NotYetValid,
    #[error("the access token has no `{0}` claim")]
    MissingClaim(String),
    #[error("the access token does not grant the scope `{0}`")]
    Scope(String),
    #[error("the token cannot be checked now: {0}")]
    IssuerUnreachable(String),
    #[error("the ID token does not carry the nonce this sign-in sent")]
    Nonce,
}

impl Refusal {
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Missing => "AUTH_TOKEN_MISSING",
            Refusal::Malformed(_) => "AUTH_TOKEN_MALFORMED",
            Refusal::Algorithm(_) => "AUTH_ALGORITHM_REFUSED",
            Refusal::UnknownKey { .. } => "AUTH_KEY_UNKNOWN",
            Refusal::Signature => "AUTH_SIGNATURE_INVALID",
            Refusal::Issuer(_) => "AUTH_ISSUER_WRONG",
            Refusal::Audience(_) => "AUTH_AUDIENCE_WRONG",
            Refusal::Expired => "AUTH_TOKEN_EXPIRED",
            Refusal::NotYetValid => "AUTH_TOKEN_NOT_YET_VALID",
            Refusal::MissingClaim(_) => "AUTH_CLAIM_MISSING",
            Refusal::Scope(_) => "AUTH_SCOPE_MISSING",
            Refusal::IssuerUnreachable(_) => "AUTH_ISSUER_UNREACHABLE",
            Refusal::Nonce => "AUTH_NONCE_WRONG",
        }
    }
}
