//! People signing in to the console with the `[auth]` issuer: the OAuth
//! 2.1 authorization code flow with PKCE (RFC 7636, S256) and OpenID
//! Connect's ID token, for a public client (`[auth] console_client_id`).
//!
//! [`SignIn::start`] makes a sign-in: a `state` (which the console also
//! keeps in a cookie of the browser that started it), a `nonce` and a
//! code verifier, and the issuer's authorization URL to send the person
//! to. [`SignIn::finish`] takes the `state` and `code` the issuer sent
//! back, redeems the code with the verifier at the token endpoint, and
//! checks the ID token (signature by the issuer's keys, issuer, audience =
//! the client, expiry, the nonce). Each sign-in can be finished once and
//! only for [`PENDING_FOR`]; at most [`MAX_PENDING`] wait at once.
//!
//! Owns no session: who stays signed in, and how, is the console's.

use crate::{Authority, Caller, Refusal};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use url::Url;

/// How long a person has between starting a sign-in and coming back.
pub const PENDING_FOR: Duration = Duration::from_secs(600);

/// Sign-ins waiting at once; past it the oldest is forgotten, so a flood
/// of started sign-ins cannot grow the server.
pub const MAX_PENDING: usize = 256;

/// What the console asks the issuer for: who the person is, no more.
const SCOPES: &str = "openid profile";

/// Why a sign-in did not end with a person.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    #[error(
        "this sign-in is unknown, used or older than {} minutes; start again",
        PENDING_FOR.as_secs() / 60
    )]
    Unknown,
    #[error("the issuer did not sign you in: {0}")]
    Refused(String),
    #[error("the issuer cannot be reached: {0}")]
    Unreachable(String),
    #[error("the issuer's ID token was not accepted: {0}")]
    IdToken(Refusal),
}

impl SignInError {
    pub fn code(&self) -> &'static str {
        match self {
            SignInError::Unknown => "SIGNIN_UNKNOWN",
            SignInError::Refused(_) => "SIGNIN_REFUSED",
            SignInError::Unreachable(_) => "SIGNIN_ISSUER_UNREACHABLE",
            SignInError::IdToken(refusal) => refusal.code(),
        }
    }
}

/// A sign-in started: where to send the person, and the `state` to keep
/// in their browser until they come back.
#[derive(Debug)]
pub struct Started {
    pub state: String,
    pub location: Url,
}

struct Pending {
    verifier: String,
    nonce: String,
    redirect_uri: String,
    made: Instant,
}

/// The sign-ins started and not yet finished, by `state`.
#[derive(Default)]
struct Book {
    pending: Mutex<HashMap<String, Pending>>,
}

impl Book {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Keeps `pending` under `state`, making room as [`MAX_PENDING`] says.
    fn keep(&self, state: String, pending: Pending) {
        let mut book = self.lock();
        book.retain(|_, p| p.made.elapsed() < PENDING_FOR);
        if book.len() >= MAX_PENDING
            && let Some(oldest) = book
                .iter()
                .min_by_key(|(_, p)| p.made)
                .map(|(state, _)| state.clone())
        {
            book.remove(&oldest);
        }
        book.insert(state, pending);
    }

    /// The sign-in `state` names, taken out: it can be finished once.
    fn take(&self, state: &str) -> Option<Pending> {
        self.lock()
            .remove(state)
            .filter(|p| p.made.elapsed() < PENDING_FOR)
    }
}

/// The console's client of the `[auth]` issuer.
pub struct SignIn {
    authority: Arc<Authority>,
    client_id: String,
    redirect_uri: Option<Url>,
    book: Book,
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIn")
            .field("client_id", &self.client_id)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

impl SignIn {
    /// The sign-in `[auth] console_client_id` asks for, if any.
    pub fn of(authority: &Arc<Authority>) -> Option<SignIn> {
        let settings = authority.settings();
        let client_id = settings.console_client_id.clone()?;
        Some(SignIn {
            authority: Arc::clone(authority),
            client_id,
            redirect_uri: settings.console_redirect_uri.clone(),
            book: Book::default(),
        })
    }

    /// The issuer people sign in with, as `[auth]` names it.
    pub fn issuer(&self) -> &str {
        &self.authority.settings().issuer
    }

    /// The configured redirect URI, if `[auth]` fixes one.
    pub fn redirect_uri(&self) -> Option<&Url> {
        self.redirect_uri.as_ref()
    }

    /// A new sign-in coming back to `redirect_uri`.
    pub async fn start(&self, redirect_uri: &str) -> Result<Started, SignInError> {
        let endpoints = self
            .authority
            .issuer()
            .endpoints()
            .await
            .map_err(SignInError::Unreachable)?;
        let (state, nonce, verifier) = match (secret(), secret(), secret()) {
            (Some(state), Some(nonce), Some(verifier)) => (state, nonce, verifier),
            _ => {
                return Err(SignInError::Unreachable(
                    "the system's random generator failed".into(),
                ));
            }
        };
        let challenge = B64.encode(Sha256::digest(verifier.as_bytes()));
        let mut location = endpoints.authorization.clone();
        location
            .query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("scope", SCOPES)
            .append_pair("state", &state)
            .append_pair("nonce", &nonce)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256");
        self.book.keep(
            state.clone(),
            Pending {
                verifier,
                nonce,
                redirect_uri: redirect_uri.to_owned(),
                made: Instant::now(),
            },
        );
        Ok(Started { state, location })
    }

    /// The person the issuer signed in for `state`, given the `code` it sent
    /// back. The sign-in is used up whatever the outcome.
    pub async fn finish(&self, state: &str, code: &str) -> Result<Caller, SignInError> {
        let pending = self.book.take(state).ok_or(SignInError::Unknown)?;
        let issuer = self.authority.issuer();
        let endpoints = issuer.endpoints().await.map_err(SignInError::Unreachable)?;
        let answer = issuer
            .post_form(
                &endpoints.token,
                &[
                    ("grant_type", "authorization_code"),
                    ("code", code),
                    ("redirect_uri", &pending.redirect_uri),
                    ("client_id", &self.client_id),
                    ("code_verifier", &pending.verifier),
                ],
            )
            .await
            .map_err(SignInError::Refused)?;
        #[derive(serde::Deserialize)]
        struct Tokens {
            id_token: Option<String>,
        }
        let tokens: Tokens = serde_json::from_slice(&answer)
            .map_err(|e| SignInError::Refused(format!("the token endpoint's answer: {e}")))?;
        let id_token = tokens.id_token.ok_or_else(|| {
            SignInError::Refused(
                "the token endpoint sent no ID token (is `openid` allowed for the client?)".into(),
            )
        })?;
        self.authority
            .check_id_token(&id_token, &self.client_id, &pending.nonce)
            .await
            .map_err(|refusal| match refusal {
                Refusal::IssuerUnreachable(why) => SignInError::Unreachable(why),
                refusal => SignInError::IdToken(refusal),
            })
    }
}

/// 32 random bytes, URL-safe: a state, nonce or verifier (RFC 7636 asks
/// for 43 to 128 characters; this gives 43).
fn secret() -> Option<String> {
    let mut bytes = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).ok()?;
    Some(B64.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_long_enough_for_pkce_and_differ() {
        let (a, b) = (secret().unwrap(), secret().unwrap());
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
    }

    fn pending(made: Instant) -> Pending {
        Pending {
            verifier: "v".into(),
            nonce: "n".into(),
            redirect_uri: "http://127.0.0.1/console/login/callback".into(),
            made,
        }
    }

    #[test]
    fn a_sign_in_is_finished_once_and_a_flood_forgets_the_oldest() {
        let book = Book::default();
        let start = Instant::now();
        book.keep("first".into(), pending(start));
        assert!(book.take("first").is_some());
        assert!(book.take("first").is_none(), "taken twice");
        assert!(book.take("never").is_none());
        book.keep("oldest".into(), pending(start));
        for i in 0..MAX_PENDING * 4 {
            book.keep(
                format!("s{i}"),
                pending(start + Duration::from_millis(i as u64 + 1)),
            );
        }
        assert_eq!(book.lock().len(), MAX_PENDING);
        assert!(book.take("oldest").is_none(), "the oldest went first");
        assert!(book.take(&format!("s{}", MAX_PENDING * 4 - 1)).is_some());
        if let Some(long_ago) = start.checked_sub(PENDING_FOR + Duration::from_secs(1)) {
            book.keep("stale".into(), pending(long_ago));
            assert!(book.take("stale").is_none(), "older than PENDING_FOR");
        }
    }
}
