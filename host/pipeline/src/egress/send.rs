//! The host side of one request a guest hands to `wasi:http`: admitted
//! against the call's grant when it is sent, then resolved, checked,
//! connected, sent and streamed back by the host itself, or refused with
//! `HTTP-request-denied`. Every attempt leaves a [`RequestRecord`].
//!
//! Why the host sends requests itself instead of leaving it to wasi-http's
//! default sender: the check has to hold for the address the connection is
//! made to (the default resolves the name again inside `connect`, so a
//! name could resolve to a public address for the check and a private one
//! for the connection), credentials must be added after the guest let go of
//! the request, and limits and cancellation must reach into the body.

use super::body::{Counted, Direction, Screened};
use super::secrets::Screen;
use super::{CallHooks, Egress, Entry, RequestDecision, RequestRecord, Usage, address};
use crate::canonical_url::CanonicalUrl;
use crate::capability::{GrantedOrigin, Network};
use crate::origin::{Host, Scheme};
use http::{HeaderName, HeaderValue, Request, Response};
use http_body_util::BodyExt;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

/// What drives a connection after its response headers arrived.
type Io = Box<dyn Future<Output = Result<(), Error>> + Send>;
type Sent = Box<dyn Future<Output = Result<(Response<WasiBody>, Io), Error>> + Send>;

/// A request the grant lets out, and what the host adds to it.
struct Admitted {
    url: CanonicalUrl,
    granted: GrantedOrigin,
    credentials: Vec<(HeaderName, HeaderValue)>,
}

/// Why a request did not get through.
enum Stop {
    /// The host refused it: the guest sees `HTTP-request-denied`.
    Denied(String),
    /// It was let out and failed on the way.
    Failed(Error, String),
}

impl Stop {
    fn failed(error: Error) -> Stop {
        let reason = format!("failed: {error}");
        Stop::Failed(error, reason)
    }
}

/// The path and query as the audit keeps them: query values replaced, so
/// a token put in a URL by a tool does not end up in the log.
fn redacted_path(url: &CanonicalUrl) -> String {
    let (path, query) = url.path_and_query();
    match query {
        None => path.to_owned(),
        Some(query) => {
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) => format!("{key}=REDACTED"),
                    None => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", pairs.join("&"))
        }
    }
}

/// The request's URL in its one canonical form (see
/// [`crate::canonical_url`]): what is checked, recorded and sent.
fn url_of(uri: &http::Uri) -> Result<CanonicalUrl, String> {
    let scheme = uri.scheme_str().unwrap_or_default();
    let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
    if authority.contains('@') {
        return Err("a user name or password in the URL is not allowed".into());
    }
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    CanonicalUrl::parse(&format!("{scheme}://{authority}{path}"))
        .ok_or_else(|| format!("`{scheme}://{authority}` is not an http(s) origin"))
}

impl CallHooks {
    fn admit(
        &self,
        url: CanonicalUrl,
        request: &Request<WasiBody>,
        attempts: usize,
    ) -> Result<Admitted, Refusal> {
        let origin = url.origin().clone();
        let max = self.egress.limits.max_requests as usize;
        if attempts >= max {
            return Err(Refusal::plain(format!(
                "the call already sent {max} requests (`network.max_requests`)"
            )));
        }
        let Network::Open(grant) = &self.network else {
            return Err(Refusal::plain(format!(
                "`{origin}`: this call was granted no network (the tool declares none, or the \
                 operator allows none of what it declares)"
            )));
        };
        let granted = grant
            .origins
            .iter()
            .find(|granted| granted.pattern.matches(&origin))
            .ok_or_else(|| {
                Refusal::plain(format!(
                    "`{origin}` is not among the origins this call was granted ({})",
                    self.network
                ))
            })?;
        if let Some(rule) = self.urls.iter().find(|rule| rule.refuses(&url)) {
            return Err(Refusal {
                reason: format!(
                    "`{url}` matches {} of a rule that says `{}` about this call's URLs: {}; \
                     a URL rule holds every request of the call, redirects and URLs the tool \
                     builds included",
                    rule.pattern, rule.verdict, rule.description
                ),
                rule: Some(rule.rule),
            });
        }
        if let Some(secrets) = self.egress.secrets() {
            let carried = [
                request.uri().to_string().as_bytes(),
                url.as_str().as_bytes(),
            ]
            .into_iter()
            .chain(
                request
                    .headers()
                    .iter()
                    .flat_map(|(name, value)| [name.as_str().as_bytes(), value.as_bytes()]),
            )
            .find_map(|bytes| secrets.carried(bytes, &origin));
            if let Some(name) = carried {
                return Err(Refusal::plain(format!(
                    "the request to `{origin}` carries the credential `{name}`, which is not \
                     bound to that origin"
                )));
            }
        }
        let credentials = grant
            .credentials
            .iter()
            .filter_map(|name| self.egress.credentials.0.get(name))
            .filter(|credential| credential.origins.iter().any(|p| p.matches(&origin)))
            .map(|credential| (credential.header.clone(), credential.value.clone()))
            .collect();
        Ok(Admitted {
            url,
            granted: granted.clone(),
            credentials,
        })
    }
}

/// Why the host refused a request before sending it.
struct Refusal {
    reason: String,
    /// The policy rule that refused it, when a URL rule did.
    rule: Option<usize>,
}

impl Refusal {
    fn plain(reason: String) -> Refusal {
        Refusal { reason, rule: None }
    }
}

impl WasiHttpHooks for CallHooks {
    fn send_request(
        &mut self,
        request: Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Sent {
        let url = url_of(request.uri());
        let record = RequestRecord {
            method: request.method().to_string(),
            origin: url.as_ref().map_or_else(
                |_| request.uri().to_string(),
                |url| url.origin().to_string(),
            ),
            path: url.as_ref().map_or_else(|_| String::new(), redacted_path),
            decision: RequestDecision::Allowed,
            reason: None,
            rule: None,
            status: None,
            address: None,
            sent_bytes: 0,
            received_bytes: 0,
            duration_us: 0,
        };
        let usage = Arc::clone(self.usage.get_or_insert_default());
        let mut log = usage.entries();
        let attempts = log.len();
        let admitted = url
            .map_err(Refusal::plain)
            .and_then(|url| self.admit(url, &request, attempts));
        let admitted = match admitted {
            Ok(admitted) => admitted,
            Err(Refusal { reason, rule }) => {
                // Past the limit, one refusal says so; a plugin that keeps
                // trying does not grow the record without end.
                if attempts <= self.egress.limits.max_requests as usize {
                    tracing::info!(origin = record.origin, "request denied: {reason}");
                    log.push(Entry {
                        record: RequestRecord {
                            decision: RequestDecision::Denied,
                            reason: Some(reason),
                            rule,
                            ..record
                        },
                        started: Instant::now(),
                        done: true,
                    });
                }
                return Box::new(std::future::ready(Err(Error::HttpRequestDenied)));
            }
        };
        let index = log.len();
        log.push(Entry {
            record,
            started: Instant::now(),
            done: false,
        });
        drop(log);
        let exchange = Exchange {
            egress: Arc::clone(&self.egress),
            usage: Arc::clone(&usage),
            index,
            admitted,
            options,
        };
        let cancel = self.cancel.clone();
        let deadline = self.deadline;
        Box::new(async move {
            let usage = Arc::clone(&exchange.usage);
            let outcome = tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(Stop::Failed(Error::ConnectionTerminated, "stopped: the call was cancelled".into())),
                _ = tokio::time::sleep_until(deadline) => Err(Stop::Failed(Error::ConnectionTimeout, "stopped: the call's deadline passed".into())),
                sent = exchange.run(request) => sent,
            };
            match outcome {
                Ok((response, io)) => Ok((response, watched(io, cancel, deadline))),
                Err(stop) => {
                    let (error, decision, reason) = match stop {
                        Stop::Denied(reason) => {
                            (Error::HttpRequestDenied, RequestDecision::Denied, reason)
                        }
                        Stop::Failed(error, reason) => (error, RequestDecision::Allowed, reason),
                    };
                    tracing::info!("request stopped: {reason}");
                    usage.finish(index, |record| {
                        record.decision = decision;
                        record.reason = Some(reason);
                    });
                    Err(error)
                }
            }
        }) as Sent
    }
}

/// The connection's driver, stopped with the call.
fn watched(io: Io, cancel: crate::call::CancelToken, deadline: tokio::time::Instant) -> Io {
    Box::new(async move {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(Error::ConnectionTerminated),
            _ = tokio::time::sleep_until(deadline) => Err(Error::ConnectionTimeout),
            done = Pin::from(io) => done,
        }
    })
}

/// One admitted request on its way.
struct Exchange {
    egress: Arc<Egress>,
    usage: Arc<Usage>,
    index: usize,
    admitted: Admitted,
    options: Option<RequestOptions>,
}

fn shorter(ours: Duration, theirs: Option<Duration>) -> Duration {
    theirs.map_or(ours, |theirs| theirs.min(ours))
}

trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}
impl<T> Stream for T where T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}

impl Exchange {
    async fn run(self, mut request: Request<WasiBody>) -> Result<(Response<WasiBody>, Io), Stop> {
        let limits = self.egress.limits;
        let connect_timeout = shorter(
            limits.connect_timeout,
            self.options.and_then(|o| o.connect_timeout),
        );
        let first_byte = shorter(
            limits.first_byte_timeout,
            self.options.and_then(|o| o.first_byte_timeout),
        );
        let connecting = async {
            let tcp = self.connect().await?;
            let stream: Box<dyn Stream> = match self.admitted.url.origin().scheme {
                Scheme::Http => Box::new(tcp),
                Scheme::Https => Box::new(self.tls(tcp).await?),
            };
            hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|e| Stop::failed(e.into()))
        };
        let (mut sender, conn) = tokio::time::timeout(connect_timeout, connecting)
            .await
            .map_err(|_| Stop::failed(Error::ConnectionTimeout))??;

        // The request line carries the path only (scheme and authority are
        // for a proxy), in the canonical form the rules were checked on, so
        // the server reads what was decided, not another spelling of it;
        // `Host` likewise names the canonical host.
        let url = &self.admitted.url;
        let path = match url.path_and_query() {
            (path, Some(query)) => format!("{path}?{query}"),
            (path, None) => path.to_owned(),
        };
        *request.uri_mut() = path
            .parse::<http::Uri>()
            .map_err(|_| Stop::Denied("the request's path is not valid".into()))?;
        let host = HeaderValue::from_str(&url.authority())
            .map_err(|_| Stop::Denied("the request's host is not valid".into()))?;
        request.headers_mut().insert(http::header::HOST, host);
        for (name, value) in &self.admitted.credentials {
            request.headers_mut().insert(name.clone(), value.clone());
        }
        let usage = Arc::clone(&self.usage);
        let index = self.index;
        let origin = self.admitted.url.origin();
        let screen = self
            .egress
            .secrets()
            .filter(|secrets| secrets.foreign_to(origin))
            .map(|secrets| Screen {
                secrets: Arc::clone(secrets),
                origin: origin.clone(),
            });
        let request = request.map(|body| {
            let counted = Counted::new(
                body,
                Arc::clone(&usage),
                index,
                Direction::Sent,
                limits.max_sent_bytes,
            );
            match screen {
                Some(screen) => {
                    Screened::new(counted, screen, Arc::clone(&usage), index).boxed_unsync()
                }
                None => counted.boxed_unsync(),
            }
        });

        let mut conn = Some(conn);
        let mut send = std::pin::pin!(tokio::time::timeout(
            first_byte,
            sender.send_request(request)
        ));
        // Waits for the response while driving the connection, as
        // wasi-http's own sender does: the connection's task is only spawned
        // once the response is there.
        let response = std::future::poll_fn(|cx| match send.as_mut().poll(cx) {
            Poll::Ready(sent) => Poll::Ready(sent),
            Poll::Pending => {
                let Some(driver) = conn.as_mut() else {
                    return Poll::Pending;
                };
                let ended = std::task::ready!(Pin::new(driver).poll(cx));
                conn = None;
                match ended {
                    Ok(()) => send.as_mut().poll(cx),
                    Err(e) => Poll::Ready(Ok(Err(e))),
                }
            }
        })
        .await
        .map_err(|_| Stop::failed(Error::ConnectionReadTimeout))?
        .map_err(|e| match usage.refusal(index) {
            // The body was stopped by the host (it carried a credential):
            // the guest hears that it was denied, not a protocol error.
            Some(reason) => Stop::Denied(reason),
            None => Stop::failed(e.into()),
        })?;

        let status = response.status().as_u16();
        usage.update(index, |record| record.status = Some(status));
        let response = response.map(|body| {
            Counted::new(
                body,
                Arc::clone(&usage),
                index,
                Direction::Received,
                limits.max_received_bytes,
            )
            .boxed_unsync()
        });
        let io: Io = Box::new(async move {
            match conn {
                Some(driver) => driver.await.map_err(Error::from),
                None => Ok(()),
            }
        });
        Ok((response, io))
    }

    /// Resolves the host (names by the host's resolver, never the guest's)
    /// and connects to the first address the granted origin may reach.
    async fn connect(&self) -> Result<TcpStream, Stop> {
        let Admitted { url, granted, .. } = &self.admitted;
        let origin = url.origin();
        let port = origin.port;
        let addresses: Vec<IpAddr> = match &origin.host {
            Host::Ip(ip) => vec![*ip],
            Host::Name(name) => tokio::net::lookup_host((name.as_str(), port))
                .await
                .map_err(|e| {
                    Stop::Failed(
                        Error::DnsError {
                            rcode: Some(e.to_string()),
                            info_code: None,
                        },
                        format!("failed: `{name}` does not resolve: {e}"),
                    )
                })?
                .map(|socket| socket.ip())
                .collect(),
        };
        let mut refused = Vec::new();
        let mut failure = None;
        for ip in addresses {
            if let Err(kind) =
                address::reachable(ip, granted.reach, granted.pattern.names_address(ip))
            {
                refused.push(format!("{ip} ({})", kind.as_str()));
                continue;
            }
            let target = SocketAddr::new(ip, port);
            match TcpStream::connect(target).await {
                Ok(stream) => {
                    // Requests are written whole; waiting for more would
                    // only delay them.
                    let _ = stream.set_nodelay(true);
                    self.usage.update(self.index, |record| {
                        record.address = Some(target.to_string())
                    });
                    return Ok(stream);
                }
                Err(e) => failure = Some((target, e)),
            }
        }
        match failure {
            Some((target, e)) => Err(Stop::Failed(
                Error::ConnectionRefused,
                format!("failed: cannot connect to {target}: {e}"),
            )),
            None if !refused.is_empty() => Err(Stop::Denied(format!(
                "`{origin}` resolves to {}, which the grant may not reach; an allow entry must \
                 say `private = true` for loopback and private addresses (and name a cloud \
                 metadata address itself)",
                refused.join(", ")
            ))),
            None => Err(Stop::failed(Error::DestinationNotFound)),
        }
    }

    async fn tls(
        &self,
        tcp: TcpStream,
    ) -> Result<tokio_rustls::client::TlsStream<TcpStream>, Stop> {
        let config = self
            .egress
            .tls()
            .map_err(|why| Stop::Failed(Error::TlsCertificateError, format!("failed: {why}")))?;
        let name = match &self.admitted.url.origin().host {
            Host::Ip(ip) => rustls_pki_types::ServerName::IpAddress((*ip).into()),
            Host::Name(name) => rustls_pki_types::ServerName::try_from(name.clone())
                .map_err(|_| Stop::Denied(format!("`{name}` is not a name TLS can verify")))?,
        };
        tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await
            .map_err(|e| Stop::Failed(Error::TlsProtocolError, format!("failed: TLS: {e}")))
    }
}

impl Egress {
    /// The TLS client: the system's roots and the configured CA file.
    fn tls(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        self.tls
            .get_or_init(|| {
                let mut roots = rustls::RootCertStore::empty();
                let native = rustls_native_certs::load_native_certs();
                for error in &native.errors {
                    tracing::warn!("a system root certificate could not be read: {error}");
                }
                roots.add_parsable_certificates(native.certs);
                for cert in &self.extra_roots {
                    roots
                        .add(cert.clone())
                        .map_err(|e| format!("`network.ca_file` holds an unusable certificate: {e}"))?;
                }
                if roots.is_empty() {
                    return Err("no root certificates: the system has none and `network.ca_file` is not set".into());
                }
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let mut config = rustls::ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .map_err(|e| e.to_string())?
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                config.alpn_protocols = vec![b"http/1.1".to_vec()];
                Ok(Arc::new(config))
            })
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_never_reach_the_record() {
        let url = CanonicalUrl::parse("https://a.org/search?q=secret&page=2&flag").unwrap();
        assert_eq!(redacted_path(&url), "/search?q=REDACTED&page=REDACTED&flag");
        let url = CanonicalUrl::parse("https://a.org/x").unwrap();
        assert_eq!(redacted_path(&url), "/x");
    }

    #[test]
    fn requests_are_read_as_a_browser_would_and_in_one_form() {
        let uri: http::Uri = "https://API.Example.org:443/x".parse().unwrap();
        assert_eq!(
            url_of(&uri).unwrap().origin().to_string(),
            "https://api.example.org"
        );
        let uri: http::Uri = "http://0x7f.1:8080/".parse().unwrap();
        assert_eq!(
            url_of(&uri).unwrap().origin().to_string(),
            "http://127.0.0.1:8080"
        );
        let uri: http::Uri = "http://localhost.:8080/%61dmin/./x".parse().unwrap();
        assert_eq!(
            url_of(&uri).unwrap().as_str(),
            "http://localhost:8080/admin/x"
        );
        let uri: http::Uri = "https://user@a.org/".parse().unwrap();
        assert!(url_of(&uri).is_err());
    }
}
