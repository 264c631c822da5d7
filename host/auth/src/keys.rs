//! The issuer's published signing keys (its JWK set), each with the
//! algorithms it may verify.
//!
//! A key verifies only what its type and curve allow, narrowed to its own
//! `alg` when it names one: an RSA key never checks an `ES256` token, and
//! nothing checks an HMAC one. Symmetric keys (`oct`), encryption keys and
//! key types nobody signs tokens with are left out, each with a log line,
//! so that one odd key does not lose the others.

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use std::collections::HashMap;
use std::sync::Arc;

/// One published key, ready to verify with.
pub(crate) struct Key {
    pub decoding: DecodingKey,
    pub algorithms: Vec<Algorithm>,
}

/// A JWK set, by key id.
#[derive(Default)]
pub(crate) struct KeySet {
    by_id: HashMap<String, Arc<Key>>,
    /// Keys without a `kid`: a token that names none may use one of them.
    unnamed: Vec<Arc<Key>>,
}

const RSA: [Algorithm; 6] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
];

impl KeySet {
    /// The keys of a JWK set document (`{"keys": [...]}`).
    pub fn parse(document: &[u8]) -> Result<KeySet, String> {
        #[derive(serde::Deserialize)]
        struct Document {
            keys: Vec<serde_json::Value>,
        }
        let document: Document = serde_json::from_slice(document)
            .map_err(|e| format!("the issuer's key set is not a JWK set: {e}"))?;
        let mut set = KeySet::default();
        for (at, value) in document.keys.into_iter().enumerate() {
            let key = serde_json::from_value::<Jwk>(value)
                .map_err(|e| e.to_string())
                .and_then(|jwk| usable(&jwk).map(|key| (jwk.common.key_id, key)));
            match key {
                Ok((Some(id), key)) => {
                    set.by_id.insert(id, Arc::new(key));
                }
                Ok((None, key)) => set.unnamed.push(Arc::new(key)),
                Err(why) => tracing::debug!("key {at} of the issuer's set is not used: {why}"),
            }
        }
        Ok(set)
    }

    /// The key a token signed with `algorithm` names (`kid`), if the set
    /// has it and it may verify that algorithm. A token without a `kid` may
    /// use the set's one unnamed key that fits.
    pub fn find(&self, id: Option<&str>, algorithm: Algorithm) -> Option<Arc<Key>> {
        let fits = |key: &&Arc<Key>| key.algorithms.contains(&algorithm);
        match id {
            Some(id) => self.by_id.get(id).filter(fits).cloned(),
            None => {
                let mut fitting = self.unnamed.iter().filter(fits);
                match (fitting.next(), fitting.next()) {
                    (Some(only), None) => Some(Arc::clone(only)),
                    _ => None,
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.by_id.len() + self.unnamed.len()
    }
}

/// `jwk` as a key that verifies signatures, or why it cannot be one.
fn usable(jwk: &Jwk) -> Result<Key, String> {
    if let Some(usage) = &jwk.common.public_key_use
        && *usage != PublicKeyUse::Signature
    {
        return Err("it is not a signing key (`use`)".into());
    }
    let family: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => RSA.to_vec(),
        AlgorithmParameters::EllipticCurve(params) => match params.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => return Err("its curve signs no algorithm this server accepts".into()),
        },
        AlgorithmParameters::OctetKeyPair(params) if params.curve == EllipticCurve::Ed25519 => {
            vec![Algorithm::EdDSA]
        }
        AlgorithmParameters::OctetKey(_) => {
            return Err("a shared-secret key (`oct`) never verifies an access token".into());
        }
        _ => return Err("its key type signs no algorithm this server accepts".into()),
    };
    let algorithms = match jwk.common.key_algorithm {
        None => family,
        Some(named) => {
            let named = Algorithm::try_from(named)
                .map_err(|_| format!("its `alg` `{named}` is not a signing algorithm"))?;
            if !family.contains(&named) {
                return Err(format!("its `alg` `{named:?}` does not fit its key type"));
            }
            vec![named]
        }
    };
    let decoding = DecodingKey::from_jwk(jwk).map_err(|e| e.to_string())?;
    Ok(Key {
        decoding,
        algorithms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_verify_only_what_their_type_allows() {
        let set = KeySet::parse(
            br#"{"keys":[
                {"kty":"EC","crv":"P-256","kid":"ec","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
                {"kty":"oct","kid":"secret","k":"c2VjcmV0"},
                {"kty":"RSA","kid":"enc","use":"enc","n":"AQAB","e":"AQAB"},
                {"kty":"XYZ","kid":"odd"}
            ]}"#,
        )
        .unwrap();
        assert_eq!(set.len(), 1);
        assert!(set.find(Some("ec"), Algorithm::ES256).is_some());
        assert!(set.find(Some("ec"), Algorithm::RS256).is_none());
        assert!(set.find(Some("secret"), Algorithm::HS256).is_none());
        assert!(set.find(Some("enc"), Algorithm::RS256).is_none());
        assert!(set.find(None, Algorithm::ES256).is_none());
    }

    #[test]
    fn a_set_that_is_not_json_is_an_error() {
        assert!(KeySet::parse(b"<html>").is_err());
        assert!(KeySet::parse(br#"{"keys": 3}"#).is_err());
    }
}
