//! One access token checked: its algorithm, its signature by a key the
//! issuer publishes, then its claims (issuer, audience, expiry, not-before,
//! subject) and the scopes `[auth]` requires. The signature is checked
//! before any claim is believed, so a forged token learns nothing about
//! which claim would have passed. A token that passed is taken on trust
//! for a minute at most, and never past its expiry (`remembered`).

mod remembered;

use crate::Refusal;
use crate::issuer::Issuer;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, AlgorithmFamily, Validation};
use serde_json::{Map, Value};
use toolwarden::caller::{Caller, Proof};
use toolwarden::config::AuthSettings;

/// The longest token read; real ones are a few kilobytes.
const MAX_TOKEN: usize = 16 << 10;

/// Checks access tokens against one issuer.
pub struct Authority {
    settings: AuthSettings,
    issuer: Issuer,
    remembered: remembered::Remembered,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Authority {
    pub fn new(settings: AuthSettings) -> Result<Authority, String> {
        crate::ring_verifier::install();
        let issuer = Issuer::new(&settings.issuer)?;
        Ok(Authority {
            settings,
            issuer,
            remembered: Default::default(),
        })
    }

    #[cfg(test)]
    pub(crate) fn with_keys(settings: AuthSettings, keys: crate::keys::KeySet) -> Authority {
        crate::ring_verifier::install();
        let issuer = Issuer::with_keys(&settings.issuer, keys);
        Authority {
            settings,
            issuer,
            remembered: Default::default(),
        }
    }

    pub fn settings(&self) -> &AuthSettings {
        &self.settings
    }

    /// Who `token` says the caller is, if every check holds.
    pub async fn check(&self, token: &str) -> Result<Caller, Refusal> {
        if token.len() > MAX_TOKEN {
            return Err(Refusal::Malformed(format!(
                "it is longer than {MAX_TOKEN} bytes"
            )));
        }
        if let Some(caller) = self.remembered.get(token) {
            return Ok(caller);
        }
        self.verify(token).await
    }

    /// Every check of `token`, and if it passes, remembering it.
    async fn verify(&self, token: &str) -> Result<Caller, Refusal> {
        let claims = self.decode(token, &self.settings.audience).await?;
        let scopes = scopes_of(&claims);
        if let Some(missing) = self
            .settings
            .scopes
            .iter()
            .find(|needed| !scopes.contains(needed))
        {
            return Err(Refusal::Scope(missing.clone()));
        }
        let caller = self.caller(
            &claims,
            Proof::AccessToken {
                issuer: self.settings.issuer.clone(),
            },
            scopes,
        )?;
        self.remembered
            .keep(token, &caller, claims.get("exp").and_then(Value::as_u64));
        Ok(caller)
    }

    /// Who an OpenID Connect ID token says signed in (OpenID Connect Core
    /// 3.1.3.7): signed by the issuer, issued by it to `client_id` (and, when
    /// it names several audiences, authorized for it, `azp`), not expired,
    /// and carrying the `nonce` the sign-in sent, so a token from another
    /// sign-in cannot be passed off as this one's.
    pub(crate) async fn check_id_token(
        &self,
        token: &str,
        client_id: &str,
        nonce: &str,
    ) -> Result<Caller, Refusal> {
        if token.len() > MAX_TOKEN {
            return Err(Refusal::Malformed(format!(
                "it is longer than {MAX_TOKEN} bytes"
            )));
        }
        let claims = self.decode(token, client_id).await?;
        let several = matches!(claims.get("aud"), Some(Value::Array(all)) if all.len() > 1);
        let azp = claims.get("azp").and_then(Value::as_str);
        if (several || azp.is_some()) && azp != Some(client_id) {
            return Err(Refusal::Audience(client_id.to_owned()));
        }
        match claims.get("nonce").and_then(Value::as_str) {
            Some(said) if crate::resource::same_secret(said, nonce) => {}
            _ => return Err(Refusal::Nonce),
        }
        self.caller(
            &claims,
            Proof::SignIn {
                issuer: self.settings.issuer.clone(),
            },
            Vec::new(),
        )
    }

    /// `token`'s claims once its signature, issuer, `audience`, expiry and
    /// not-before hold.
    async fn decode(&self, token: &str, audience: &str) -> Result<Map<String, Value>, Refusal> {
        let algorithm = algorithm_of(token)?;
        let header = jsonwebtoken::decode_header(token).map_err(|e| malformed(&e))?;
        let key = self.issuer.key(header.kid.as_deref(), algorithm).await?;
        let mut validation = Validation::new(algorithm);
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = self.settings.leeway_seconds;
        jsonwebtoken::decode::<Map<String, Value>>(token, &key.decoding, &validation)
            .map(|data| data.claims)
            .map_err(|e| refusal(e, &self.settings.issuer, audience))
    }

    /// The caller `claims` name, with the claims `[auth]` keeps.
    fn caller(
        &self,
        claims: &Map<String, Value>,
        proof: Proof,
        scopes: Vec<String>,
    ) -> Result<Caller, Refusal> {
        let subject = match claims.get("sub") {
            Some(Value::String(subject)) if !subject.is_empty() => subject.clone(),
            _ => return Err(Refusal::MissingClaim("sub".into())),
        };
        let kept = self
            .settings
            .claims
            .iter()
            .filter_map(|name| Some((name.clone(), claims.get(name)?.clone())))
            .collect();
        Ok(Caller {
            subject,
            proof,
            scopes,
            claims: kept,
        })
    }

    /// The issuer, for the sign-in's endpoints and token requests.
    pub(crate) fn issuer(&self) -> &Issuer {
        &self.issuer
    }
}

/// The token's `alg`, read before anything else so that `none` and HMAC
/// are named as what they are rather than as unreadable tokens.
fn algorithm_of(token: &str) -> Result<Algorithm, Refusal> {
    use base64::Engine;
    let header = token
        .split('.')
        .next()
        .and_then(|part| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(part)
                .ok()
        })
        .and_then(|bytes| serde_json::from_slice::<Map<String, Value>>(&bytes).ok())
        .ok_or_else(|| Refusal::Malformed("it is not a JWT (header.payload.signature)".into()))?;
    let named = match header.get("alg") {
        Some(Value::String(named)) => named.as_str(),
        _ => return Err(Refusal::Malformed("its header names no `alg`".into())),
    };
    // Asymmetric algorithms only. An HMAC algorithm would let anyone who
    // has the issuer's public key (that is, anyone) "sign" a token with
    // it; `none` is no signature at all.
    named
        .parse::<Algorithm>()
        .ok()
        .filter(|algorithm| algorithm.family() != AlgorithmFamily::Hmac)
        .ok_or_else(|| Refusal::Algorithm(named.to_owned()))
}

/// The scopes a token grants: `scope` (space-separated, RFC 9068) or
/// `scp` (a list, or one string, as some issuers write it).
fn scopes_of(claims: &Map<String, Value>) -> Vec<String> {
    let words = |text: &str| {
        text.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(scope)), _) => words(scope),
        (_, Some(Value::Array(list))) => list
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        (_, Some(Value::String(scope))) => words(scope),
        _ => Vec::new(),
    }
}

fn malformed(e: &jsonwebtoken::errors::Error) -> Refusal {
    Refusal::Malformed(e.to_string())
}

fn refusal(e: jsonwebtoken::errors::Error, issuer: &str, audience: &str) -> Refusal {
    match e.kind() {
        ErrorKind::InvalidSignature => Refusal::Signature,
        ErrorKind::InvalidAlgorithm => Refusal::Algorithm("a key of another type".into()),
        ErrorKind::ExpiredSignature => Refusal::Expired,
        ErrorKind::ImmatureSignature => Refusal::NotYetValid,
        ErrorKind::InvalidIssuer => Refusal::Issuer(issuer.to_owned()),
        ErrorKind::InvalidAudience => Refusal::Audience(audience.to_owned()),
        ErrorKind::MissingRequiredClaim(claim) => Refusal::MissingClaim(claim.clone()),
        _ => malformed(&e),
    }
}

#[cfg(test)]
mod tests;
