//! Tokens minted here with ring (ES256), checked against a key set that
//! holds the minting key: each claim and header broken in turn.

use super::*;
use crate::keys::KeySet;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::json;

const ISSUER: &str = "https://login.example.org/realms/tools";
const AUDIENCE: &str = "https://tools.example.org/mcp";
const CONSOLE: &str = "toolwarden-console";

struct Minter {
    pair: EcdsaKeyPair,
    rng: SystemRandom,
}

impl Minter {
    fn new() -> Minter {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Minter { pair, rng }
    }

    fn jwk(&self, kid: &str) -> serde_json::Value {
        let point = self.pair.public_key().as_ref();
        json!({"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256",
               "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..65])})
    }

    fn sign(&self, header: serde_json::Value, claims: serde_json::Value) -> String {
        let message = format!(
            "{}.{}",
            B64.encode(header.to_string()),
            B64.encode(claims.to_string())
        );
        let signature = self.pair.sign(&self.rng, message.as_bytes()).unwrap();
        format!("{message}.{}", B64.encode(signature.as_ref()))
    }
}

fn now() -> i64 {
    jsonwebtoken::get_current_timestamp() as i64
}

fn claims() -> serde_json::Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now() + 300,
           "iat": now(), "scope": "tools:call profile", "groups": ["oncall"]})
}

fn header() -> serde_json::Value {
    json!({"alg": "ES256", "typ": "at+jwt", "kid": "k1"})
}

fn authority(minter: &Minter) -> Authority {
    with_leeway(minter, 60)
}

fn with_leeway(minter: &Minter, leeway_seconds: u64) -> Authority {
    let set = json!({"keys": [minter.jwk("k1")]}).to_string();
    Authority::with_keys(
        AuthSettings {
            issuer: ISSUER.into(),
            audience: AUDIENCE.into(),
            resource: None,
            scopes: vec!["tools:call".into()],
            claims: vec!["groups".into()],
            leeway_seconds,
            console_client_id: Some(CONSOLE.into()),
            console_redirect_uri: None,
        },
        KeySet::parse(set.as_bytes()).unwrap(),
    )
}

fn with(change: impl FnOnce(&mut serde_json::Value)) -> serde_json::Value {
    let mut claims = claims();
    change(&mut claims);
    claims
}

#[tokio::test]
async fn a_good_token_names_its_caller() {
    let minter = Minter::new();
    let caller = authority(&minter)
        .check(&minter.sign(header(), claims()))
        .await
        .unwrap();
    assert_eq!(caller.subject, "alice");
    assert_eq!(caller.scopes, ["tools:call", "profile"]);
    assert_eq!(caller.claims["groups"], json!(["oncall"]));
    assert_eq!(
        caller.proof,
        Proof::AccessToken {
            issuer: ISSUER.into()
        }
    );
}

#[tokio::test]
async fn every_broken_claim_is_refused_for_what_it_is() {
    let minter = Minter::new();
    let authority = authority(&minter);
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (
            with(|c| c["exp"] = json!(now() - 600)),
            "AUTH_TOKEN_EXPIRED",
        ),
        (
            with(|c| c["nbf"] = json!(now() + 600)),
            "AUTH_TOKEN_NOT_YET_VALID",
        ),
        (
            with(|c| c["iss"] = json!("https://evil.example")),
            "AUTH_ISSUER_WRONG",
        ),
        (
            with(|c| c["aud"] = json!("https://other.example/mcp")),
            "AUTH_AUDIENCE_WRONG",
        ),
        (
            with(|c| c["scope"] = json!("profile")),
            "AUTH_SCOPE_MISSING",
        ),
        (
            with(|c| {
                c.as_object_mut().unwrap().remove("sub");
            }),
            "AUTH_CLAIM_MISSING",
        ),
        (
            with(|c| {
                c.as_object_mut().unwrap().remove("exp");
            }),
            "AUTH_CLAIM_MISSING",
        ),
        (with(|c| c["sub"] = json!("")), "AUTH_CLAIM_MISSING"),
    ];
    for (claims, code) in cases {
        let refused = authority
            .check(&minter.sign(header(), claims.clone()))
            .await
            .unwrap_err();
        assert_eq!(refused.code(), code, "{claims}: {refused}");
    }
    // A list of audiences is fine when it holds ours; `scp` counts as scope.
    let listed = with(|c| {
        c["aud"] = json!(["https://other.example", AUDIENCE]);
        c.as_object_mut().unwrap().remove("scope");
        c["scp"] = json!(["tools:call"]);
    });
    assert!(
        authority
            .check(&minter.sign(header(), listed))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn forged_tokens_are_refused() {
    let minter = Minter::new();
    let authority = authority(&minter);
    let good = minter.sign(header(), claims());
    let (message, _) = good.rsplit_once('.').unwrap();

    // Signed by another key under the published key's id.
    let other = Minter::new();
    let refused = authority
        .check(&other.sign(header(), claims()))
        .await
        .unwrap_err();
    assert_eq!(refused, Refusal::Signature);

    // The claims changed after signing.
    let (head, _) = message.split_once('.').unwrap();
    let rich = with(|c| c["sub"] = json!("admin"));
    let tampered = format!(
        "{head}.{}.{}",
        B64.encode(rich.to_string()),
        good.rsplit_once('.').unwrap().1
    );
    assert_eq!(
        authority.check(&tampered).await.unwrap_err(),
        Refusal::Signature
    );

    // No signature at all.
    let none = format!(
        "{}.{}.",
        B64.encode(json!({"alg": "none", "kid": "k1"}).to_string()),
        B64.encode(claims().to_string())
    );
    assert_eq!(
        authority.check(&none).await.unwrap_err().code(),
        "AUTH_ALGORITHM_REFUSED"
    );

    // Key confusion: HMAC "signed" with the public key as the secret.
    let public = minter.jwk("k1").to_string();
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, public.as_bytes());
    let hs_message = format!(
        "{}.{}",
        B64.encode(json!({"alg": "HS256", "kid": "k1"}).to_string()),
        B64.encode(claims().to_string())
    );
    let tag = ring::hmac::sign(&key, hs_message.as_bytes());
    let confused = format!("{hs_message}.{}", B64.encode(tag.as_ref()));
    assert_eq!(
        authority.check(&confused).await.unwrap_err(),
        Refusal::Algorithm("HS256".into())
    );

    // The right key, the wrong algorithm family: no key fits it.
    let rs = minter.sign(json!({"alg": "RS256", "kid": "k1"}), claims());
    assert_eq!(
        authority.check(&rs).await.unwrap_err().code(),
        "AUTH_KEY_UNKNOWN"
    );

    // A key the issuer does not publish (the set was fetched a moment
    // ago, so it is not fetched again).
    let unknown = minter.sign(json!({"alg": "ES256", "kid": "k9"}), claims());
    assert_eq!(
        authority.check(&unknown).await.unwrap_err().code(),
        "AUTH_KEY_UNKNOWN"
    );
}

#[tokio::test]
async fn what_is_not_a_token_is_malformed() {
    let minter = Minter::new();
    let authority = authority(&minter);
    for garbage in ["", "abc", "a.b.c", "....", "\u{1F600}.x.y"] {
        let refused = authority.check(garbage).await.unwrap_err();
        assert_eq!(
            refused.code(),
            "AUTH_TOKEN_MALFORMED",
            "{garbage:?}: {refused}"
        );
    }
    let huge = minter.sign(header(), with(|c| c["pad"] = json!("x".repeat(20_000))));
    assert_eq!(
        authority.check(&huge).await.unwrap_err().code(),
        "AUTH_TOKEN_MALFORMED"
    );
}

#[tokio::test]
async fn a_checked_token_is_taken_on_trust_until_it_expires_and_no_further() {
    let minter = Minter::new();
    let strict = with_leeway(&minter, 0);
    let token = minter.sign(header(), with(|c| c["exp"] = json!(now() + 2)));
    assert_eq!(strict.check(&token).await.unwrap().subject, "alice");
    assert_eq!(strict.remembered.len(), 1);
    let again = strict.check(&token).await.unwrap();
    assert_eq!(again.claims["groups"], json!(["oncall"]), "the same caller");
    // One byte changed is another token: checked, and refused.
    let mut tampered = token.clone().into_bytes();
    let last = tampered.len() - 2;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    assert!(strict.check(&tampered).await.is_err());
    tokio::time::sleep(std::time::Duration::from_millis(3100)).await;
    assert!(
        matches!(strict.check(&token).await, Err(Refusal::Expired)),
        "remembered no longer than its exp"
    );

    // A token accepted only thanks to the leeway is not taken on trust.
    let lenient = authority(&minter);
    let lapsed = minter.sign(header(), with(|c| c["exp"] = json!(now() - 5)));
    assert!(lenient.check(&lapsed).await.is_ok());
    assert_eq!(lenient.remembered.len(), 0);
}

fn id_token(change: impl FnOnce(&mut serde_json::Value)) -> serde_json::Value {
    let mut claims = json!({"iss": ISSUER, "aud": CONSOLE, "sub": "alice", "exp": now() + 300,
                            "iat": now(), "nonce": "n-1", "groups": ["oncall"]});
    change(&mut claims);
    claims
}

#[tokio::test]
async fn an_id_token_signs_a_person_in_only_for_the_console_and_this_nonce() {
    let minter = Minter::new();
    let authority = authority(&minter);
    let header = json!({"alg": "ES256", "typ": "JWT", "kid": "k1"});
    let sign = |claims| minter.sign(header.clone(), claims);
    let person = authority
        .check_id_token(&sign(id_token(|_| {})), CONSOLE, "n-1")
        .await
        .unwrap();
    assert_eq!(person.subject, "alice");
    assert_eq!(
        person.proof,
        Proof::SignIn {
            issuer: ISSUER.into()
        }
    );
    assert_eq!(person.identity(), format!("{ISSUER} alice"));
    assert_eq!(person.claims["groups"], json!(["oncall"]));

    let refused = |claims: serde_json::Value, nonce: &'static str| {
        let token = sign(claims);
        let authority = &authority;
        async move {
            authority
                .check_id_token(&token, CONSOLE, nonce)
                .await
                .unwrap_err()
        }
    };
    assert_eq!(refused(id_token(|_| {}), "n-2").await, Refusal::Nonce);
    assert_eq!(
        refused(
            id_token(|c| c.as_object_mut().unwrap().retain(|k, _| k != "nonce")),
            "n-1"
        )
        .await,
        Refusal::Nonce
    );
    // An access token for the MCP server is not a sign-in to the console.
    assert_eq!(
        refused(id_token(|c| c["aud"] = json!(AUDIENCE)), "n-1").await,
        Refusal::Audience(CONSOLE.into())
    );
    // Several audiences: the console must be the one it was issued to.
    assert_eq!(
        refused(id_token(|c| c["aud"] = json!([CONSOLE, "other"])), "n-1").await,
        Refusal::Audience(CONSOLE.into())
    );
    assert_eq!(
        refused(id_token(|c| c["azp"] = json!("other")), "n-1").await,
        Refusal::Audience(CONSOLE.into())
    );
    assert!(
        authority
            .check_id_token(
                &sign(id_token(|c| {
                    c["aud"] = json!([CONSOLE, "other"]);
                    c["azp"] = json!(CONSOLE);
                })),
                CONSOLE,
                "n-1"
            )
            .await
            .is_ok()
    );
    assert_eq!(
        refused(id_token(|c| c["exp"] = json!(now() - 3_600)), "n-1").await,
        Refusal::Expired
    );
    assert_eq!(
        refused(
            id_token(|c| c["iss"] = json!("https://evil.example.org")),
            "n-1"
        )
        .await,
        Refusal::Issuer(ISSUER.into())
    );
    let forged = Minter::new().sign(header.clone(), id_token(|_| {}));
    assert_eq!(
        authority
            .check_id_token(&forged, CONSOLE, "n-1")
            .await
            .unwrap_err(),
        Refusal::Signature
    );
}
