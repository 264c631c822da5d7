//! One admitted request on its way: connected to the address that was
//! checked, wrapped in TLS with the host's roots, sent in its canonical
//! form with the host-held credentials added, and streamed back within the
//! limits. What to let out is decided before (`send`); nothing here
//! admits or refuses a request.

use super::body::{Counted, Direction, Screened};
use super::secrets::Screen;
use super::{Egress, Usage, address};
use crate::canonical_url::CanonicalUrl;
use crate::capability::GrantedOrigin;
use crate::origin::{Host, Scheme};
use http::{HeaderName, HeaderValue, Request, Response};
use http_body_util::BodyExt;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::net::TcpStream;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

/// What drives a connection after its response headers arrived.
pub(super) type Io = Box<dyn Future<Output = Result<(), Error>> + Send>;

/// A request the grant lets out, and what the host adds to it.
pub(super) struct Admitted {
    pub(super) url: CanonicalUrl,
    pub(super) granted: GrantedOrigin,
    pub(super) credentials: Vec<(HeaderName, HeaderValue)>,
}

/// Why a request did not get through.
pub(super) enum Stop {
    /// The host refused it: the guest sees `HTTP-request-denied`.
    Denied(String),
    /// It was let out and failed on the way.
    Failed(Error, String),
}

impl Stop {
    pub(super) fn failed(error: Error) -> Stop {
        let reason = format!("failed: {error}");
        Stop::Failed(error, reason)
    }
}

/// One admitted request on its way.
pub(super) struct Exchange {
    pub(super) egress: Arc<Egress>,
    pub(super) usage: Arc<Usage>,
    pub(super) index: usize,
    pub(super) admitted: Admitted,
    pub(super) options: Option<RequestOptions>,
}

fn shorter(ours: Duration, theirs: Option<Duration>) -> Duration {
    theirs.map_or(ours, |theirs| theirs.min(ours))
}

trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}

impl<T> Stream for T where T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}

impl Exchange {
    pub(super) async fn run(
        self,
        mut request: Request<WasiBody>,
    ) -> Result<(Response<WasiBody>, Io), Stop> {
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
