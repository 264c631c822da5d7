//! The host side of one request a guest hands to `wasi:http`: admitted
//! against the call's grant when it is sent, then resolved, checked,
//! connected, sent and streamed back by the host itself, or refused with
//! `HTTP-request-denied`. Every attempt leaves a [`RequestRecord`]. This
//! file admits and records; `exchange` carries an admitted request out.
//!
//! Why the host sends requests itself instead of leaving it to wasi-http's
//! default sender: the check has to hold for the address the connection is
//! made to (the default resolves the name again inside `connect`, so a
//! name could resolve to a public address for the check and a private one
//! for the connection), credentials must be added after the guest let go of
//! the request, and limits and cancellation must reach into the body.

use super::exchange::{Admitted, Exchange, Io, Stop};
use super::{CallHooks, Entry, RequestDecision, RequestRecord};
use crate::canonical_url::CanonicalUrl;
use crate::capability::Network;
use http::{Request, Response};
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

type Sent = Box<dyn Future<Output = Result<(Response<WasiBody>, Io), Error>> + Send>;

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
