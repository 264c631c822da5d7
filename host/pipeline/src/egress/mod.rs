//! Governed egress: what a plugin's HTTP requests may reach, and the host
//! side of every request it sends.
//!
//! Owns the `[network]` and `[credential.NAME]` sections ([`section`]): the
//! operator's [`Allowance`] (which the policy intersects with what a tool
//! declares to grant a call its origins), the per-call [`NetLimits`], an
//! extra CA file, and the [`Credentials`]. At run time a call's store holds
//! [`CallHooks`], the `wasi:http` hooks through which every request the
//! guest hands over passes ([`send`]): checked against the call's grant
//! when it is sent (scheme, host, port, and the deny and ask rules on URLs
//! the policy bound to the call, read as [`crate::canonical_url`] reads
//! them, which is also the form sent), its name resolved by the host and
//! each address checked ([`address`]), connected to that very address,
//! credentials added for their origins only, limited (count, bytes each
//! way, timeouts inside the call's deadline), stopped by cancellation, and
//! recorded ([`RequestRecord`]). Redirects are never followed here.
//!
//! Sits beside the engine, below the pipeline steps: it never decides what
//! a call is granted (policy does) and never runs a guest.

mod address;
mod body;
mod exchange;
mod secrets;
mod section;
mod send;

pub use secrets::Secrets;

pub use section::{CredentialSection, NetworkSection, NetworkSettings, credentials};

use crate::call::CancelToken;
use crate::capability::{GrantedOrigin, Network, NetworkGrant, Reach, UrlRules};
use crate::origin::OriginPattern;
use crate::spec::NetworkNeed;
use rustls_pki_types::CertificateDer;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One entry of an allow list: an origin pattern and the addresses it may
/// be reached at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowEntry {
    pub pattern: OriginPattern,
    pub reach: Reach,
}

/// What the operator allows: `[network] allow` for every plugin, and
/// `[network.plugin."FILE"] allow` for one more. Empty by default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allowance {
    everywhere: Vec<AllowEntry>,
    plugins: BTreeMap<String, Vec<AllowEntry>>,
}

impl Allowance {
    fn entries<'a>(&'a self, plugin: &str) -> impl Iterator<Item = &'a AllowEntry> {
        self.everywhere
            .iter()
            .chain(self.plugins.get(plugin).into_iter().flatten())
    }

    /// What a call of a tool of `plugin` that declares `need` is granted:
    /// every declared origin narrowed to each allow entry it overlaps.
    pub fn grant(&self, plugin: &str, need: Option<&NetworkNeed>) -> Network {
        let Some(need) = need else {
            return Network::Closed;
        };
        let mut origins: Vec<GrantedOrigin> = Vec::new();
        for declared in &need.origins {
            for entry in self.entries(plugin) {
                if let Some(pattern) = declared.intersect(&entry.pattern) {
                    let granted = GrantedOrigin {
                        pattern,
                        reach: entry.reach,
                    };
                    if !origins.contains(&granted) {
                        origins.push(granted);
                    }
                }
            }
        }
        if origins.is_empty() {
            return Network::Closed;
        }
        origins.sort();
        Network::Open(Arc::new(NetworkGrant {
            origins,
            credentials: need.credentials.clone(),
        }))
    }

    /// Declared origins no allow entry overlaps: what `check` reports.
    pub fn unallowed<'a>(&self, plugin: &str, need: &'a NetworkNeed) -> Vec<&'a OriginPattern> {
        need.origins
            .iter()
            .filter(|declared| {
                !self
                    .entries(plugin)
                    .any(|entry| declared.intersect(&entry.pattern).is_some())
            })
            .collect()
    }
}

/// What one call may do on the network, from `[network]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetLimits {
    pub max_requests: u32,
    pub max_sent_bytes: u64,
    pub max_received_bytes: u64,
    pub connect_timeout: Duration,
    pub first_byte_timeout: Duration,
}

impl Default for NetLimits {
    fn default() -> Self {
        NetLimits {
            max_requests: section::DEFAULT_MAX_REQUESTS as u32,
            max_sent_bytes: section::DEFAULT_MAX_SENT_KB << 10,
            max_received_bytes: section::DEFAULT_MAX_RECEIVED_KB << 10,
            connect_timeout: Duration::from_millis(section::DEFAULT_CONNECT_TIMEOUT_MS),
            first_byte_timeout: Duration::from_millis(section::DEFAULT_FIRST_BYTE_TIMEOUT_MS),
        }
    }
}

/// A credential the host adds to requests to its origins: a header whose
/// value (marked sensitive, so `Debug` hides it) no plugin ever sees.
#[derive(Clone)]
pub struct Credential {
    origins: Vec<OriginPattern>,
    header: http::HeaderName,
    value: http::HeaderValue,
    /// The secret alone (the value without its prefix): what is masked
    /// wherever it could come back out.
    secret: String,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("origins", &self.origins)
            .field("header", &self.header)
            .field("value", &"[secret]")
            .finish()
    }
}

/// Every credential the config defines, by name.
#[derive(Clone, Debug, Default)]
pub struct Credentials(BTreeMap<String, Credential>);

impl Credentials {
    pub fn defines(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// The names the config defines, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

/// The egress of one host: limits, credentials and TLS roots for every
/// call's requests.
#[derive(Debug)]
pub struct Egress {
    limits: NetLimits,
    credentials: Credentials,
    extra_roots: Vec<CertificateDer<'static>>,
    /// Built on the first `https` request: loading the system's roots
    /// costs start-up time no host without network should pay.
    tls: OnceLock<Result<Arc<rustls::ClientConfig>, String>>,
    /// Every credential's secret in every form it could come back in;
    /// `None` without credentials.
    secrets: Option<Arc<Secrets>>,
}

impl Egress {
    pub fn new(
        limits: NetLimits,
        credentials: Credentials,
        extra_roots: Vec<CertificateDer<'static>>,
    ) -> Egress {
        let secrets = Secrets::new(
            credentials
                .0
                .iter()
                .map(|(name, credential)| secrets::Known {
                    name,
                    bound: &credential.origins,
                    secret: &credential.secret,
                }),
        )
        .map(Arc::new);
        Egress {
            limits,
            credentials,
            extra_roots,
            tls: OnceLock::new(),
            secrets,
        }
    }

    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// The credentials' secrets, to mask what leaves the sandbox; `None`
    /// when the config defines no credential.
    pub fn secrets(&self) -> Option<&Arc<Secrets>> {
        self.secrets.as_ref()
    }

    /// The `wasi:http` hooks of one call with `network`, stopped by
    /// `cancel` and by `deadline`.
    pub(crate) fn hooks(
        self: &Arc<Self>,
        network: &Network,
        urls: &UrlRules,
        cancel: CancelToken,
        deadline: tokio::time::Instant,
    ) -> CallHooks {
        CallHooks {
            egress: Arc::clone(self),
            network: network.clone(),
            urls: urls.clone(),
            cancel,
            deadline,
            usage: None,
        }
    }
}

impl Default for Egress {
    fn default() -> Self {
        Egress::new(NetLimits::default(), Credentials::default(), Vec::new())
    }
}

/// Whether a request was let out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestDecision {
    Allowed,
    Denied,
}

/// One request a call sent (or tried to), as the audit records it: never a
/// header, a body or a query value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RequestRecord {
    pub method: String,
    pub origin: String,
    /// The path, with every query value replaced by `REDACTED`.
    pub path: String,
    pub decision: RequestDecision,
    /// Why it was denied, or how it failed after it was let out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The policy rule that refused it (1-based), when a URL rule did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The address it was sent to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    pub sent_bytes: u64,
    pub received_bytes: u64,
    /// From the hand-over to the end of the response body (or to the end of
    /// the call, if the plugin stopped reading before).
    pub duration_us: u64,
}

/// A record while its request is under way.
struct Entry {
    record: RequestRecord,
    started: Instant,
    done: bool,
}

/// What one call has used, shared by its requests and their bodies.
#[derive(Default)]
struct Usage {
    log: Mutex<Vec<Entry>>,
    sent: std::sync::atomic::AtomicU64,
    received: std::sync::atomic::AtomicU64,
}

impl Usage {
    fn entries(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.log
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn update(&self, index: usize, change: impl FnOnce(&mut RequestRecord)) {
        if let Some(entry) = self.entries().get_mut(index) {
            change(&mut entry.record);
        }
    }

    /// Why the host refused request `index` while it was under way, if
    /// it did.
    fn refusal(&self, index: usize) -> Option<String> {
        self.entries()
            .get(index)
            .filter(|entry| entry.record.decision == RequestDecision::Denied)
            .and_then(|entry| entry.record.reason.clone())
    }

    fn finish(&self, index: usize, change: impl FnOnce(&mut RequestRecord)) {
        if let Some(entry) = self.entries().get_mut(index)
            && !entry.done
        {
            change(&mut entry.record);
            entry.record.duration_us = entry.started.elapsed().as_micros() as u64;
            entry.done = true;
        }
    }
}

/// The `wasi:http` hooks of one call (see [`send`]).
pub struct CallHooks {
    egress: Arc<Egress>,
    network: Network,
    urls: UrlRules,
    cancel: CancelToken,
    deadline: tokio::time::Instant,
    /// Made by the call's first request: most calls send none.
    usage: Option<Arc<Usage>>,
}

impl CallHooks {
    /// Every request of the call so far, those still under way with the
    /// bytes and time they took until now.
    pub fn requests(&self) -> Vec<RequestRecord> {
        let Some(usage) = &self.usage else {
            return Vec::new();
        };
        usage
            .entries()
            .iter()
            .map(|entry| {
                let mut record = entry.record.clone();
                if !entry.done {
                    record.duration_us = entry.started.elapsed().as_micros() as u64;
                }
                record
            })
            .collect()
    }
}
