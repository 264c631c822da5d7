//! The HTTP side: the gate in front of `/mcp`, and the metadata that tells
//! a client where to get a token for it.
//!
//! A request is let in with the server's shared token or with an access
//! token the [`Authority`] accepts, and carries its [`Caller`] on (as a
//! request extension). Refused, it gets what RFC 6750 and the MCP spec
//! describe: `401` (`403` for a missing scope, `503` when the issuer cannot
//! be reached to check) with `WWW-Authenticate: Bearer` naming the
//! Protected Resource Metadata, the error and the scopes to ask for, and a
//! body with the refusal's stable code.

use crate::{Authority, Caller, Refusal};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// Where the RFC 9728 metadata is served: the well-known name, then the
/// protected path (`/mcp`), as clients look for it first, and the bare
/// well-known name that older clients try.
const METADATA: &str = "/.well-known/oauth-protected-resource";

/// Who may pass to the protected endpoint at `path`.
pub struct Gate {
    shared_token: Option<String>,
    authority: Option<Arc<Authority>>,
    path: &'static str,
}

impl Gate {
    pub fn new(
        shared_token: Option<String>,
        authority: Option<Arc<Authority>>,
        path: &'static str,
    ) -> Gate {
        Gate {
            shared_token,
            authority,
            path,
        }
    }

    /// Whether anything is asked of a request (a gate with neither a
    /// shared token nor an issuer lets everyone in).
    pub fn guards(&self) -> bool {
        self.shared_token.is_some() || self.authority.is_some()
    }

    async fn admit(&self, headers: &HeaderMap) -> Result<Caller, Refusal> {
        let Some(given) = bearer(headers) else {
            return Err(Refusal::Missing);
        };
        if let Some(shared) = &self.shared_token
            && same_secret(given, shared)
        {
            return Ok(Caller::shared_token());
        }
        match &self.authority {
            Some(authority) => authority.check(given).await,
            None => Err(Refusal::Malformed(
                "it is not this server's token (`--token-file`)".into(),
            )),
        }
    }

    /// The protected resource's URL: configured, or the audience when that
    /// is a URL, or this server as the request reached it.
    fn resource(&self, headers: &HeaderMap) -> String {
        if let Some(settings) = self.authority.as_ref().map(|a| a.settings()) {
            if let Some(resource) = &settings.resource {
                return resource.to_string();
            }
            if let Ok(url) = url::Url::parse(&settings.audience)
                && matches!(url.scheme(), "http" | "https")
            {
                return settings.audience.clone();
            }
        }
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost");
        format!("http://{host}{}", self.path)
    }

    /// The metadata's URL for `resource`: the well-known name inserted
    /// between its origin and its path (RFC 9728 section 3.1).
    fn metadata_url(resource: &str) -> String {
        match url::Url::parse(resource) {
            Ok(url) => {
                let origin = url.origin().ascii_serialization();
                let path = url.path().trim_end_matches('/');
                format!("{origin}{METADATA}{path}")
            }
            Err(_) => METADATA.to_owned(),
        }
    }

    fn refused(&self, refusal: &Refusal, headers: &HeaderMap) -> Response {
        let resource = self.resource(headers);
        let mut challenge = format!(
            "Bearer resource_metadata=\"{}\"",
            Gate::metadata_url(&resource)
        );
        let status = match refusal {
            Refusal::Missing => StatusCode::UNAUTHORIZED,
            Refusal::Scope(_) => {
                challenge.push_str(", error=\"insufficient_scope\"");
                StatusCode::FORBIDDEN
            }
            Refusal::IssuerUnreachable(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => {
                challenge.push_str(", error=\"invalid_token\"");
                StatusCode::UNAUTHORIZED
            }
        };
        if !matches!(refusal, Refusal::Missing | Refusal::IssuerUnreachable(_)) {
            // A quoted-string may not hold `"` or `\` unescaped; the code
            // and a plain message are enough for a person reading it.
            let description: String = format!("{}: {refusal}", refusal.code())
                .chars()
                .map(|c| if c == '"' || c == '\\' { '\'' } else { c })
                .collect();
            challenge.push_str(&format!(", error_description=\"{description}\""));
        }
        if let Some(authority) = &self.authority
            && !authority.settings().scopes.is_empty()
        {
            challenge.push_str(&format!(
                ", scope=\"{}\"",
                authority.settings().scopes.join(" ")
            ));
        }
        tracing::info!(
            "refused a request to {}: {} {refusal}",
            self.path,
            refusal.code()
        );
        let mut response = (
            status,
            format!("toolwarden: {}: {refusal}\n", refusal.code()),
        )
            .into_response();
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// Lets a request in with its [`Caller`], or answers why not.
pub async fn guard(gate: Arc<Gate>, mut request: Request, next: Next) -> Response {
    match gate.admit(request.headers()).await {
        Ok(caller) => {
            request.extensions_mut().insert(Arc::new(caller));
            next.run(request).await
        }
        Err(refusal) => gate.refused(&refusal, request.headers()),
    }
}

/// The Protected Resource Metadata (RFC 9728) for `gate`'s endpoint, at
/// both well-known URLs; nothing when no issuer is configured.
pub fn metadata_routes(gate: Arc<Gate>) -> axum::Router {
    let Some(authority) = gate.authority.clone() else {
        return axum::Router::new();
    };
    let path = gate.path;
    let document = move |headers: HeaderMap| {
        let gate = Arc::clone(&gate);
        let authority = Arc::clone(&authority);
        async move {
            let settings = authority.settings();
            let mut body = serde_json::json!({
                "resource": gate.resource(&headers),
                "authorization_servers": [settings.issuer],
                "bearer_methods_supported": ["header"],
                "resource_name": "toolwarden",
            });
            if !settings.scopes.is_empty() {
                body["scopes_supported"] = serde_json::json!(settings.scopes);
            }
            (
                [(header::CONTENT_TYPE, "application/json")],
                body.to_string(),
            )
        }
    };
    axum::Router::new()
        .route(METADATA, axum::routing::get(document.clone()))
        .route(&format!("{METADATA}{path}"), axum::routing::get(document))
}

/// The bearer token a request sends (the scheme's name is
/// case-insensitive, RFC 7235).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|token| !token.is_empty())
}

/// Whether `given` is the secret `expected` (never an empty one),
/// comparing digests so the time taken does not say where they differ.
pub fn same_secret(given: &str, expected: &str) -> bool {
    !expected.is_empty() && Sha256::digest(given.as_bytes()) == Sha256::digest(expected.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(authorization: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(authorization).unwrap(),
        );
        headers
    }

    #[test]
    fn the_bearer_scheme_is_read_whatever_its_case() {
        assert_eq!(bearer(&headers("Bearer abc")), Some("abc"));
        assert_eq!(bearer(&headers("bearer abc")), Some("abc"));
        assert_eq!(bearer(&headers("Basic abc")), None);
        assert_eq!(bearer(&headers("Bearer ")), None);
        assert_eq!(bearer(&HeaderMap::new()), None);
    }

    #[test]
    fn shared_tokens_must_match_exactly() {
        assert!(same_secret("secret", "secret"));
        assert!(!same_secret("secret ", "secret"));
        assert!(!same_secret("", "secret"));
        assert!(!same_secret("", ""), "an empty secret never matches");
    }

    #[test]
    fn metadata_sits_between_origin_and_path() {
        assert_eq!(
            Gate::metadata_url("https://tools.example.org/mcp"),
            "https://tools.example.org/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            Gate::metadata_url("http://127.0.0.1:8080/"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource"
        );
    }
}
