//! # `toolwarden-web` (host/web)
//!
//! The one piece the two browser-facing servers (MCP over HTTP, the
//! console) share. Depends on axum and on the pipeline library's
//! `presentation` only.
//!
//! Which web origins may talk to the host's HTTP endpoints (`/mcp` and the
//! console). A browser sends `Origin` with every cross-site request it
//! makes on a page's behalf; the MCP transport spec says a server MUST
//! answer 403 to an `Origin` it does not accept, so that a page the person
//! happens to visit cannot drive a local MCP server (DNS rebinding, or a
//! plain cross-site `fetch`). A request without `Origin` (every non-browser
//! client) is not a browser's and goes on to the other checks.
//!
//! By default the accepted origins are the server's own: the address it
//! listens on, the loopback names at its port, and each `--allow-host`
//! (over `http` and `https`, as a proxy in front may terminate TLS).
//! `--allow-origin` adds more. An opaque origin (`null`) is never accepted.
//!
//! Decides nothing else; the edges apply it.

#![deny(clippy::print_stdout, clippy::print_stderr)]

// The library's modules, by the names this code knew them under when it
// was one crate with them.
use toolwarden::presentation;

use std::net::SocketAddr;

/// The origins a listener accepts, each as browsers serialize it
/// (`scheme://host[:port]`, lower case, the default port left out).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowedOrigins {
    origins: Vec<String>,
}

/// The origin of `text` as browsers serialize it; `None` for anything that
/// is not a tuple origin (an opaque `null`, a malformed value).
fn serialized(text: &str) -> Option<String> {
    let url = url::Url::parse(text.trim()).ok()?;
    match url.origin() {
        origin @ url::Origin::Tuple(..) => Some(origin.ascii_serialization()),
        url::Origin::Opaque(_) => None,
    }
}

impl AllowedOrigins {
    /// The listener's own origins at `addr`, each of `allowed_hosts` (a
    /// host, or `host:port`) and the `extra` origins as written.
    pub fn for_listener(
        addr: SocketAddr,
        allowed_hosts: &[String],
        extra: &[String],
    ) -> Result<AllowedOrigins, String> {
        let port = addr.port();
        let mut hosts: Vec<String> = vec![
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
            addr.to_string(),
        ];
        for host in allowed_hosts {
            hosts.push(host.clone());
            if !host.contains(':') || host.ends_with(']') {
                hosts.push(format!("{host}:{port}"));
            }
        }
        let mut origins: Vec<String> = hosts
            .iter()
            .flat_map(|host| [format!("http://{host}"), format!("https://{host}")])
            .filter_map(|text| serialized(&text))
            .collect();
        for text in extra {
            let origin = serialized(text).ok_or_else(|| {
                format!("`{text}` is not a web origin; write it as `https://host[:port]`")
            })?;
            origins.push(origin);
        }
        origins.sort();
        origins.dedup();
        Ok(AllowedOrigins { origins })
    }

    /// Whether a request with this `Origin` header may go on.
    pub fn admits(&self, origin: Option<&[u8]>) -> bool {
        let Some(origin) = origin else {
            return true;
        };
        std::str::from_utf8(origin)
            .ok()
            .and_then(serialized)
            .is_some_and(|origin| self.origins.contains(&origin))
    }
}

/// Middleware: refuses (403) a request whose `Origin` `allowed` does not
/// admit, before any route sees it.
pub async fn guard(
    allowed: std::sync::Arc<AllowedOrigins>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let origin = request.headers().get(axum::http::header::ORIGIN);
    if allowed.admits(origin.map(|v| v.as_bytes())) {
        return next.run(request).await;
    }
    let shown = origin
        .map(|v| crate::presentation::one_line(&String::from_utf8_lossy(v.as_bytes())))
        .unwrap_or_default();
    (
        axum::http::StatusCode::FORBIDDEN,
        format!(
            "toolwarden: requests from the web origin `{shown}` are refused\n\
             hint: if a page there should reach this server, start it with `--allow-origin ORIGIN`\n"
        ),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_accepts_its_own_origins_and_no_other() {
        let addr: SocketAddr = "127.0.0.1:8765".parse().unwrap();
        let allowed = AllowedOrigins::for_listener(
            addr,
            &["tools.example.org".into()],
            &["https://console.example.com".into()],
        )
        .unwrap();
        for origin in [
            None,
            Some("http://127.0.0.1:8765"),
            Some("http://LOCALHOST:8765"),
            Some("http://[::1]:8765"),
            Some("https://tools.example.org"),
            Some("http://tools.example.org:8765"),
            Some("https://console.example.com:443"),
        ] {
            assert!(allowed.admits(origin.map(str::as_bytes)), "{origin:?}");
        }
        for origin in [
            "http://evil.example",
            "http://127.0.0.1:9999",
            "http://localhost",
            "null",
            "http://127.0.0.1:8765.evil.example",
            "not an origin",
            "file:///etc/passwd",
        ] {
            assert!(!allowed.admits(Some(origin.as_bytes())), "{origin}");
        }
        assert!(!allowed.admits(Some(b"\xff\xfe")));
        assert!(AllowedOrigins::for_listener(addr, &[], &["evil".into()]).is_err());
    }
}
