//! A small blocking HTTP client for tools that declare network.
//!
//! Requests go out through `wasi:http/outgoing-handler`; the host checks
//! each one against what the call was granted (origin, the address the
//! name resolves to, the per-call limits) and adds the credentials the tool
//! declared. A request the host refuses comes back as
//! [`HttpError::Denied`]. Redirects are not followed: a tool that follows
//! one sends a new request, which the host checks anew.
//!
//! ```ignore
//! use toolwarden_plugin::http::{Request, send};
//! let response = send(&Request::get("https://api.github.com/zen"), 64 << 10)?;
//! ```

use std::fmt;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, Scheme,
};
use wasip2::io::streams::StreamError;

/// Bytes written to the request body per host call.
const WRITE_CHUNK: usize = 4096;
/// Bytes asked for per read of the response body.
const READ_CHUNK: u64 = 64 << 10;

/// One request to send.
#[derive(Clone, Debug)]
pub struct Request {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    pub fn new(method: &str, url: &str) -> Request {
        Request {
            method: method.to_ascii_uppercase(),
            url: url.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub fn get(url: &str) -> Request {
        Request::new("GET", url)
    }

    pub fn post(url: &str, body: impl Into<Vec<u8>>) -> Request {
        Request::new("POST", url).body(body)
    }

    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Request {
        self.body = body.into();
        self
    }

    pub fn url(&self) -> &str {
        &self.url
    }
}

/// A response, its body read up to the limit the caller gave.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
    /// The body was longer than the limit; `body` holds its start.
    pub truncated: bool,
}

impl Response {
    /// The first value of header `name` (case-insensitive), as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    }
}

/// Why a request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// The URL is not `http(s)://host/...`.
    InvalidUrl(String),
    /// The host refused the request: its origin or address is not granted
    /// to this call, or the call used up its network limits.
    Denied,
    /// Anything else on the way (DNS, connection, TLS, protocol, timeouts,
    /// a response bigger than the host allows).
    Failed(String),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::InvalidUrl(why) => write!(f, "invalid URL: {why}"),
            HttpError::Denied => f.write_str(
                "the host denied the request (HTTP-request-denied): its origin or address is \
                 not granted to this call, or the call's network limits are used up",
            ),
            HttpError::Failed(why) => write!(f, "request failed: {why}"),
        }
    }
}

impl std::error::Error for HttpError {}

fn from_code(code: ErrorCode) -> HttpError {
    match code {
        ErrorCode::HttpRequestDenied => HttpError::Denied,
        other => HttpError::Failed(format!("{other:?}")),
    }
}

/// `scheme://authority/path?query` split the way the request needs it; the
/// fragment is not sent.
fn split(url: &str) -> Result<(Scheme, &str, &str), HttpError> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| HttpError::InvalidUrl(format!("`{url}` has no scheme")))?;
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "https" => Scheme::Https,
        "http" => Scheme::Http,
        other => {
            return Err(HttpError::InvalidUrl(format!(
                "unsupported scheme `{other}`"
            )));
        }
    };
    let rest = rest.split('#').next().unwrap_or_default();
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.is_empty() {
        return Err(HttpError::InvalidUrl(format!("`{url}` has no host")));
    }
    Ok((scheme, authority, if path.is_empty() { "/" } else { path }))
}

fn method(name: &str) -> Method {
    match name {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "PATCH" => Method::Patch,
        "OPTIONS" => Method::Options,
        other => Method::Other(other.to_owned()),
    }
}

/// Writes the whole request body and finishes it.
fn write_body(body: OutgoingBody, bytes: &[u8]) -> Result<(), HttpError> {
    {
        let stream = body
            .write()
            .map_err(|()| HttpError::Failed("the request body was taken twice".into()))?;
        for chunk in bytes.chunks(WRITE_CHUNK) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| HttpError::Failed(format!("writing the body: {e:?}")))?;
        }
    }
    OutgoingBody::finish(body, None).map_err(from_code)
}

/// Sends `request` and reads at most `max_body` bytes of the response body.
pub fn send(request: &Request, max_body: usize) -> Result<Response, HttpError> {
    let (scheme, authority, path) = split(&request.url)?;
    let headers = Fields::new();
    let mut named_length = false;
    for (name, value) in &request.headers {
        named_length |= name.eq_ignore_ascii_case("content-length");
        headers
            .append(name, value.as_bytes())
            .map_err(|e| HttpError::InvalidUrl(format!("header `{name}`: {e:?}")))?;
    }
    // A known length spares servers that read no chunked bodies.
    if !request.body.is_empty() && !named_length {
        headers
            .append("content-length", request.body.len().to_string().as_bytes())
            .map_err(|e| HttpError::InvalidUrl(format!("content-length: {e:?}")))?;
    }
    let outgoing = OutgoingRequest::new(headers);
    let refused = |what: &str| HttpError::InvalidUrl(format!("{what} refused by the request"));
    outgoing
        .set_method(&method(&request.method))
        .map_err(|()| refused("method"))?;
    outgoing
        .set_scheme(Some(&scheme))
        .map_err(|()| refused("scheme"))?;
    outgoing
        .set_authority(Some(authority))
        .map_err(|()| refused("host"))?;
    outgoing
        .set_path_with_query(Some(path))
        .map_err(|()| refused("path"))?;
    let body = outgoing.body().map_err(|()| refused("body"))?;
    // Sent before the body is written: a body larger than what wasi-http
    // buffers would otherwise wait for a request that was never started.
    let pending = outgoing_handler::handle(outgoing, None).map_err(from_code)?;
    let written = write_body(body, &request.body);
    // The host's answer first: a request it refused has its body closed,
    // and the refusal, not the closed body, is what the tool should see.
    let response = loop {
        match pending.get() {
            Some(Ok(result)) => break result.map_err(from_code)?,
            Some(Err(())) => return Err(HttpError::Failed("the response was taken twice".into())),
            None => pending.subscribe().block(),
        }
    };
    written?;
    let status = response.status();
    let headers = response.headers().entries();
    let incoming = response
        .consume()
        .map_err(|()| HttpError::Failed("the response body was taken twice".into()))?;
    let mut body = Vec::new();
    let mut truncated = false;
    {
        let stream = incoming
            .stream()
            .map_err(|()| HttpError::Failed("the response body was taken twice".into()))?;
        loop {
            match stream.blocking_read(READ_CHUNK) {
                Ok(chunk) => {
                    let room = max_body - body.len();
                    if chunk.len() > room {
                        body.extend_from_slice(&chunk[..room]);
                        truncated = true;
                        break;
                    }
                    body.extend_from_slice(&chunk);
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => {
                    let code = wasip2::http::types::http_error_code(&e);
                    return Err(match code {
                        Some(code) => from_code(code),
                        None => HttpError::Failed(e.to_debug_string()),
                    });
                }
            }
        }
    }
    if !truncated {
        drop(IncomingBody::finish(incoming));
    }
    Ok(Response {
        status,
        headers,
        body,
        truncated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_what_the_request_needs() {
        let (scheme, authority, path) = split("https://api.github.com/repos?q=1#frag").unwrap();
        assert!(matches!(scheme, Scheme::Https));
        assert_eq!((authority, path), ("api.github.com", "/repos?q=1"));
        let (_, authority, path) = split("http://127.0.0.1:8080").unwrap();
        assert_eq!((authority, path), ("127.0.0.1:8080", "/"));
        let (_, authority, path) = split("http://h?x=1").unwrap();
        assert_eq!((authority, path), ("h", "?x=1"));
        assert!(split("ftp://x/").is_err());
        assert!(split("https:///x").is_err());
        assert!(split("no-scheme").is_err());
    }
}
