//! `jsonwebtoken`'s signature checks, done by ring.
//!
//! jsonwebtoken leaves its cryptography to a provider chosen by feature
//! (aws-lc-rs, which builds C with cmake, or RustCrypto's RSA and curve
//! crates, a few dozen more crates). ring is linked already, for rustls,
//! and verifies every asymmetric algorithm an issuer signs access tokens
//! with. Only verification is provided: the host never signs a token, and
//! HMAC is refused outright (a shared-secret "signature" made with the
//! issuer's public key is the key-confusion attack).

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{ErrorKind, Result};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, DecodingKeyKind, EncodingKey};
use ring::signature as ring_sig;

static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: no_signer,
    verifier_factory: verifier,
    key_utils: KeyUtils::new_unimplemented(),
};

/// Makes ring the process's jsonwebtoken provider (once; later calls, and
/// a provider someone installed first, leave it as it is).
pub(crate) fn install() {
    if CryptoProvider::install_default(&PROVIDER).is_err() {
        tracing::debug!("a jsonwebtoken crypto provider was installed already");
    }
}

fn no_signer(_: &Algorithm, _: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    Err(ErrorKind::Provider("toolwarden only verifies tokens; it never signs one".into()).into())
}

fn verifier(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    if key.family() != algorithm.family() || algorithm.family() == AlgorithmFamily::Hmac {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    Ok(Box::new(RingVerifier {
        algorithm: *algorithm,
        key: key.kind().clone(),
    }))
}

struct RingVerifier {
    algorithm: Algorithm,
    key: DecodingKeyKind,
}

impl JwtVerifier for RingVerifier {
    fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
}

impl signature::Verifier<Vec<u8>> for RingVerifier {
    fn verify(
        &self,
        message: &[u8],
        signature: &Vec<u8>,
    ) -> std::result::Result<(), signature::Error> {
        let checked = match (
            &self.key,
            rsa_params(self.algorithm),
            point_params(self.algorithm),
        ) {
            (DecodingKeyKind::RsaModulusExponent { n, e }, Some(params), _) => {
                ring_sig::RsaPublicKeyComponents { n, e }.verify(params, message, signature)
            }
            (DecodingKeyKind::SecretOrDer(point), None, Some(params)) => {
                ring_sig::UnparsedPublicKey::new(params, point).verify(message, signature)
            }
            _ => return Err(signature::Error::new()),
        };
        checked.map_err(|_| signature::Error::new())
    }
}

/// ring's parameters for an RSA algorithm (keys of 2048 bits and up).
fn rsa_params(algorithm: Algorithm) -> Option<&'static ring_sig::RsaParameters> {
    Some(match algorithm {
        Algorithm::RS256 => &ring_sig::RSA_PKCS1_2048_8192_SHA256,
        Algorithm::RS384 => &ring_sig::RSA_PKCS1_2048_8192_SHA384,
        Algorithm::RS512 => &ring_sig::RSA_PKCS1_2048_8192_SHA512,
        Algorithm::PS256 => &ring_sig::RSA_PSS_2048_8192_SHA256,
        Algorithm::PS384 => &ring_sig::RSA_PSS_2048_8192_SHA384,
        Algorithm::PS512 => &ring_sig::RSA_PSS_2048_8192_SHA512,
        _ => return None,
    })
}

/// ring's parameters for a curve algorithm, whose key is a point: the
/// uncompressed `04 || x || y` for ECDSA, `x` for Ed25519.
fn point_params(algorithm: Algorithm) -> Option<&'static dyn ring_sig::VerificationAlgorithm> {
    Some(match algorithm {
        Algorithm::ES256 => &ring_sig::ECDSA_P256_SHA256_FIXED,
        Algorithm::ES384 => &ring_sig::ECDSA_P384_SHA384_FIXED,
        Algorithm::EdDSA => &ring_sig::ED25519,
        _ => return None,
    })
}
