//! What the issuer publishes, fetched and kept: its metadata (found the
//! OpenID Connect way, then the RFC 8414 way), the key set it names and
//! the endpoints the console's sign-in sends people and codes to.
//!
//! Keys are fetched when first needed and again when a token names a key
//! the set lacks (the issuer rotated its keys) or the set is an hour old,
//! but at most once every [`MIN_REFETCH`], so a stream of tokens naming
//! made-up keys cannot turn into a stream of requests to the issuer. When a
//! fetch fails, the keys fetched before stay in use. The metadata must name
//! the configured issuer exactly (RFC 8414 section 3.3: a document that
//! names another issuer is not its own), and every URL fetched must be
//! https, or plain http to a loopback address.

use crate::Refusal;
use crate::keys::{Key, KeySet};
use jsonwebtoken::Algorithm;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use url::Url;

/// The least time between two fetches of the key set.
pub(crate) const MIN_REFETCH: Duration = Duration::from_secs(10);

/// How long a fetched key set is used before it is fetched again.
const MAX_AGE: Duration = Duration::from_secs(3_600);

/// The most a metadata document or key set may weigh.
const MAX_DOCUMENT: usize = 1 << 20;

/// How long one request to the issuer may take.
const TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct Issuer {
    issuer: String,
    client: reqwest::Client,
    snapshot: RwLock<Snapshot>,
    /// Held while fetching, with the key set's URL once discovered.
    fetching: tokio::sync::Mutex<Option<Url>>,
    /// Where people sign in and codes are redeemed, once discovered.
    endpoints: RwLock<Option<Arc<Endpoints>>>,
}

/// The issuer's endpoints for the authorization code flow.
#[derive(Debug)]
pub(crate) struct Endpoints {
    pub authorization: Url,
    pub token: Url,
}

/// The parts of the issuer's metadata the host reads.
struct Metadata {
    jwks_uri: Url,
    endpoints: Option<Arc<Endpoints>>,
}

#[derive(Clone, Default)]
struct Snapshot {
    keys: Arc<KeySet>,
    /// When the keys were last fetched, or tried to be.
    attempted: Option<Instant>,
    /// When `keys` was fetched.
    fetched: Option<Instant>,
}

impl Issuer {
    pub fn new(issuer: &str) -> Result<Issuer, String> {
        // reqwest is built without a crypto provider of its own (as for
        // the OCI client); ring is the one rustls uses here.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot make an HTTP client for the issuer: {e}"))?;
        Ok(Issuer {
            issuer: issuer.to_owned(),
            client,
            snapshot: RwLock::default(),
            fetching: tokio::sync::Mutex::new(None),
            endpoints: RwLock::default(),
        })
    }

    /// Issuer keys of `keys` as if fetched now (tests check tokens without
    /// an issuer to fetch from).
    #[cfg(test)]
    pub fn with_keys(issuer: &str, keys: KeySet) -> Issuer {
        let issuer = Issuer::new(issuer).unwrap_or_else(|e| panic!("{e}"));
        let now = Some(Instant::now());
        *issuer.snapshot.write().unwrap_or_else(|e| e.into_inner()) = Snapshot {
            keys: Arc::new(keys),
            attempted: now,
            fetched: now,
        };
        issuer
    }

    fn snapshot(&self) -> Snapshot {
        self.snapshot
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The key a token names, fetching the set again when it lacks it.
    pub async fn key(&self, id: Option<&str>, algorithm: Algorithm) -> Result<Arc<Key>, Refusal> {
        let seen = self.snapshot();
        let fresh = seen.fetched.is_some_and(|at| at.elapsed() < MAX_AGE);
        if fresh && let Some(key) = seen.keys.find(id, algorithm) {
            return Ok(key);
        }
        let keys = if seen.attempted.is_some_and(|at| at.elapsed() < MIN_REFETCH) {
            seen.keys
        } else {
            self.refetch(seen.attempted).await?
        };
        keys.find(id, algorithm).ok_or_else(|| Refusal::UnknownKey {
            id: id.map(str::to_owned),
            algorithm: format!("{algorithm:?}"),
        })
    }

    /// Fetches the key set, unless another request did while this one
    /// waited for its turn (`seen` is when the set it looked at was tried).
    async fn refetch(&self, seen: Option<Instant>) -> Result<Arc<KeySet>, Refusal> {
        let mut jwks_uri = self.fetching.lock().await;
        let now = self.snapshot();
        if now.attempted != seen {
            return Ok(now.keys);
        }
        let attempted = Instant::now();
        let fetched = self.fetch(&mut jwks_uri).await;
        let mut snapshot = self
            .snapshot
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        snapshot.attempted = Some(attempted);
        match fetched {
            Ok(keys) => {
                tracing::info!("fetched {} signing keys of `{}`", keys.len(), self.issuer);
                snapshot.keys = Arc::new(keys);
                snapshot.fetched = Some(attempted);
                Ok(Arc::clone(&snapshot.keys))
            }
            Err(why) if snapshot.fetched.is_some() => {
                tracing::warn!("{why}; the keys fetched before stay in use");
                Ok(Arc::clone(&snapshot.keys))
            }
            Err(why) => Err(Refusal::IssuerUnreachable(why)),
        }
    }

    async fn fetch(&self, jwks_uri: &mut Option<Url>) -> Result<KeySet, String> {
        let uri = match jwks_uri.clone() {
            Some(uri) => uri,
            None => self.discover().await?.jwks_uri,
        };
        match self.get(&uri).await.and_then(|body| KeySet::parse(&body)) {
            Ok(keys) => {
                *jwks_uri = Some(uri);
                Ok(keys)
            }
            Err(why) => {
                // The metadata may have moved the keys: look again next time.
                *jwks_uri = None;
                Err(why)
            }
        }
    }

    /// Where the authorization code flow goes: read from the metadata the
    /// first time it is needed, and again until that works.
    pub async fn endpoints(&self) -> Result<Arc<Endpoints>, String> {
        if let Some(known) = self.known_endpoints() {
            return Ok(known);
        }
        self.discover().await?;
        self.known_endpoints().ok_or_else(|| {
            format!(
                "the issuer `{}` publishes no `authorization_endpoint` and `token_endpoint`, \
                 so people cannot sign in with it",
                self.issuer
            )
        })
    }

    fn known_endpoints(&self) -> Option<Arc<Endpoints>> {
        self.endpoints
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The issuer's metadata; the endpoints it names are kept.
    async fn discover(&self) -> Result<Metadata, String> {
        let mut tried = Vec::new();
        for url in metadata_urls(&self.issuer)? {
            let document = match self.get(&url).await {
                Ok(document) => document,
                Err(why) => {
                    tried.push(why);
                    continue;
                }
            };
            #[derive(serde::Deserialize)]
            struct Published {
                issuer: String,
                jwks_uri: Option<String>,
                authorization_endpoint: Option<String>,
                token_endpoint: Option<String>,
            }
            let published: Published = serde_json::from_slice(&document)
                .map_err(|e| format!("the issuer's metadata at {url} is not valid: {e}"))?;
            if published.issuer != self.issuer {
                return Err(format!(
                    "the metadata at {url} is for the issuer `{}`, not `{}` (`[auth] issuer` must be \
                     exactly what the issuer calls itself)",
                    published.issuer, self.issuer
                ));
            }
            let jwks_uri = published
                .jwks_uri
                .ok_or_else(|| format!("the issuer's metadata at {url} names no `jwks_uri`"))?;
            let endpoints = match (published.authorization_endpoint, published.token_endpoint) {
                (Some(authorization), Some(token)) => Some(Arc::new(Endpoints {
                    authorization: safe_url(&authorization)?,
                    token: safe_url(&token)?,
                })),
                _ => None,
            };
            let metadata = Metadata {
                jwks_uri: safe_url(&jwks_uri)?,
                endpoints,
            };
            if let Some(found) = &metadata.endpoints {
                *self
                    .endpoints
                    .write()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(Arc::clone(found));
            }
            return Ok(metadata);
        }
        Err(format!(
            "cannot read the metadata of the issuer `{}`: {}",
            self.issuer,
            tried.join("; ")
        ))
    }

    /// The body of a `200` answer to a GET of `url`, at most [`MAX_DOCUMENT`].
    async fn get(&self, url: &Url) -> Result<Vec<u8>, String> {
        let request = self
            .client
            .get(url.clone())
            .header("accept", "application/json");
        self.send("GET", url, request).await
    }

    /// The body of a `200` answer to a form POSTed to `url` (the token
    /// endpoint), at most [`MAX_DOCUMENT`]; a refusal's body is in the error.
    pub async fn post_form(&self, url: &Url, form: &[(&str, &str)]) -> Result<Vec<u8>, String> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let request = self
            .client
            .post(url.clone())
            .header("accept", "application/json")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        self.send("POST", url, request).await
    }

    async fn send(
        &self,
        method: &str,
        url: &Url,
        request: reqwest::RequestBuilder,
    ) -> Result<Vec<u8>, String> {
        let mut response = request
            .send()
            .await
            .map_err(|e| format!("{method} {url}: {e}"))?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("{method} {url}: {e}"))?
        {
            if body.len() + chunk.len() > MAX_DOCUMENT {
                return Err(format!(
                    "{method} {url}: the answer is larger than {MAX_DOCUMENT} bytes"
                ));
            }
            body.extend_from_slice(&chunk);
        }
        if status != reqwest::StatusCode::OK {
            let said: String = String::from_utf8_lossy(&body).chars().take(300).collect();
            return Err(format!("{method} {url}: {status} {}", said.trim()));
        }
        Ok(body)
    }
}

/// Where an issuer's metadata may be: OpenID Connect's well-known URL
/// (appended to the issuer), then RFC 8414's (inserted before its path).
fn metadata_urls(issuer: &str) -> Result<Vec<Url>, String> {
    let url = safe_url(issuer)?;
    let path = url.path().trim_end_matches('/').to_owned();
    let mut oidc = url.clone();
    oidc.set_path(&format!("{path}/.well-known/openid-configuration"));
    let mut rfc8414 = url;
    rfc8414.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
    Ok(vec![oidc, rfc8414])
}

/// `text` as a URL the host may fetch keys from: https, or plain http to
/// this machine.
fn safe_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
    match url.scheme() {
        "https" => Ok(url),
        "http" if toolwarden::config::is_loopback(&url) => Ok(url),
        _ => Err(format!(
            "`{text}` is neither https nor plain http to this machine; the issuer's keys are \
             never fetched over a channel anyone on the path could change"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_both_ways() {
        let urls = metadata_urls("https://login.example.org/realms/tools").unwrap();
        assert_eq!(
            urls[0].as_str(),
            "https://login.example.org/realms/tools/.well-known/openid-configuration"
        );
        assert_eq!(
            urls[1].as_str(),
            "https://login.example.org/.well-known/oauth-authorization-server/realms/tools"
        );
        let root = metadata_urls("http://127.0.0.1:9000/").unwrap();
        assert_eq!(
            root[0].as_str(),
            "http://127.0.0.1:9000/.well-known/openid-configuration"
        );
    }

    #[test]
    fn keys_come_over_https_or_from_this_machine() {
        assert!(safe_url("https://login.example.org/jwks").is_ok());
        assert!(safe_url("http://127.0.0.1:9/jwks").is_ok());
        assert!(safe_url("http://login.example.org/jwks").is_err());
        assert!(safe_url("file:///etc/passwd").is_err());
    }
}
