//! One reading of a URL for every layer that decides on one: the policy's
//! URL globs, the guard that holds URL arguments to the call's grant, the
//! egress layer that checks each request a plugin sends, approvals and the
//! audit. Two readings would be a gap between them (a rule that compared the
//! text `localhost.` while the egress layer connected to `localhost` was
//! one), so there is exactly one: [`CanonicalUrl::parse`].
//!
//! The reading is the WHATWG URL standard's, which browsers and the `url`
//! crate share (scheme and host in lower case, IDNA to punycode, every IPv4
//! spelling to dotted decimal, the default port dropped, backslashes as
//! slashes, tabs and newlines removed, `.` and `..` segments resolved, their
//! `%2e` spellings included), and then what RFC 3986 says is the same
//! resource that WHATWG leaves apart: a host name's trailing dots are
//! dropped (`localhost.` is `localhost`), percent-encoded unreserved
//! characters are decoded (`/%61dmin` is `/admin`) and the hex digits of the
//! remaining escapes are upper case.
//!
//! Globs are matched against [`CanonicalUrl::match_key`]: scheme, host,
//! an explicit port (so a glob's `:*` also covers the default port), path
//! and query; never the user name or password, never the fragment (which
//! no request carries). [`UrlGlob`] brings a rule's glob to the same form.
//!
//! What no reading can know is how a server maps URLs to resources: a
//! server that treats `/ADMIN` as `/admin`, decodes `%2F` into a separator,
//! or answers the same page under two host names is outside what a URL
//! rule can see. README.md says so.
//!
//! This module never decides anything: it reads, and matches when asked.

use crate::origin::Origin;
use globset::{GlobBuilder, GlobMatcher};
use std::fmt;
use std::sync::Arc;

/// An `http(s)` URL with a host, in its one canonical form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CanonicalUrl {
    url: url::Url,
    origin: Origin,
    key: String,
}

/// Characters RFC 3986 calls unreserved: percent-encoding them changes
/// nothing about the resource, so they are always decoded.
fn unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// Decodes every escape of an unreserved character and upper-cases the hex
/// digits of every other escape, in one pass (`%2561` stays `%2561`).
fn decode_unreserved(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(&hi), Some(&lo)) = (bytes.get(i + 1), bytes.get(i + 2))
            && let (Some(h), Some(l)) = (hex_value(hi), hex_value(lo))
        {
            let byte = h * 16 + l;
            if unreserved(byte) {
                out.push(byte as char);
            } else {
                out.push('%');
                out.push(hi.to_ascii_uppercase() as char);
                out.push(lo.to_ascii_uppercase() as char);
            }
            i += 3;
            continue;
        }
        let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
        out.push(ch);
        i += ch.len_utf8().max(1);
    }
    out
}

impl CanonicalUrl {
    /// Reads `text` as a URL; `None` unless it is `http` or `https` with a
    /// host.
    pub fn parse(text: &str) -> Option<CanonicalUrl> {
        let mut url = url::Url::parse(text).ok()?;
        if !matches!(url.scheme(), "http" | "https") {
            return None;
        }
        if let Some(url::Host::Domain(name)) = url.host() {
            let trimmed = name.trim_end_matches('.');
            if trimmed.is_empty() {
                return None;
            }
            if trimmed.len() != name.len() {
                let trimmed = trimmed.to_owned();
                url.set_host(Some(&trimmed)).ok()?;
            }
        }
        let path = decode_unreserved(url.path());
        if path != url.path() {
            url.set_path(&path);
        }
        if let Some(query) = url.query().map(decode_unreserved) {
            url.set_query(Some(&query));
        }
        if let Some(fragment) = url.fragment().map(decode_unreserved) {
            url.set_fragment(Some(&fragment));
        }
        let origin = Origin::of_url(&url)?;
        let key = format!(
            "{}://{}:{}{}{}{}",
            url.scheme(),
            url.host_str()?,
            origin.port,
            url.path(),
            if url.query().is_some() { "?" } else { "" },
            url.query().unwrap_or_default()
        );
        Some(CanonicalUrl { url, origin, key })
    }

    /// The canonical text: what the plugin receives for a URL argument,
    /// what approvals show and the audit keeps.
    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }

    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The path and the query (without its `?`).
    pub fn path_and_query(&self) -> (&str, Option<&str>) {
        (self.url.path(), self.url.query())
    }

    /// `host` or `host:port` (the port only when it is not the scheme's).
    pub fn authority(&self) -> String {
        let host = self.url.host_str().unwrap_or_default();
        match self.url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        }
    }

    /// Whether the URL names a user or a password.
    pub fn has_credentials(&self) -> bool {
        !self.url.username().is_empty() || self.url.password().is_some()
    }

    /// What URL globs are matched against: `scheme://host:port/path?query`,
    /// the port always written, no user, no fragment.
    pub fn match_key(&self) -> &str {
        &self.key
    }
}

impl fmt::Display for CanonicalUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Characters that make a glob more than a literal.
fn has_wildcard(text: &str) -> bool {
    text.contains(['*', '?', '[', ']', '{', '}'])
}

/// A rule's URL glob, brought to the form of [`CanonicalUrl::match_key`]
/// and compiled once. `*` stays within one segment, `**` crosses segments.
#[derive(Clone, Debug)]
pub struct UrlGlob {
    /// The glob as written, for messages.
    written: Arc<str>,
    matcher: Arc<GlobMatcher>,
}

/// Why a URL glob cannot be used.
#[derive(Debug, PartialEq, Eq)]
pub struct UrlGlobError(pub String);

impl UrlGlob {
    /// Whether `glob` is a URL glob at all: it starts with `http://` or
    /// `https://`, in any case.
    pub fn is_url_glob(glob: &str) -> bool {
        ["http://", "https://"].iter().any(|scheme| {
            glob.get(..scheme.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
        })
    }

    /// Compiles a URL glob; `Ok(None)` when it is not one (see
    /// [`UrlGlob::is_url_glob`]).
    pub fn new(glob: &str) -> Result<Option<UrlGlob>, UrlGlobError> {
        let Some(canonical) = canonical_glob(glob)? else {
            return Ok(None);
        };
        let matcher = GlobBuilder::new(&canonical)
            .literal_separator(true)
            .build()
            .map_err(|e| UrlGlobError(format!("`{glob}` is not a valid glob: {e}")))?
            .compile_matcher();
        Ok(Some(UrlGlob {
            written: Arc::from(glob),
            matcher: Arc::new(matcher),
        }))
    }

    pub fn written(&self) -> &str {
        &self.written
    }

    pub fn matches(&self, url: &CanonicalUrl) -> bool {
        self.matcher.is_match(url.match_key())
    }
}

/// A URL glob, or its negation, as a `when` entry of a rule holds it:
/// what the egress layer checks each request of a call against.
#[derive(Clone, Debug)]
pub enum UrlPattern {
    Glob(UrlGlob),
    Not(Box<UrlPattern>),
}

impl UrlPattern {
    pub fn matches(&self, url: &CanonicalUrl) -> bool {
        match self {
            UrlPattern::Glob(glob) => glob.matches(url),
            UrlPattern::Not(inner) => !inner.matches(url),
        }
    }
}

impl fmt::Display for UrlPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlPattern::Glob(glob) => write!(f, "`{}`", glob.written()),
            UrlPattern::Not(inner) => write!(f, "not {inner}"),
        }
    }
}

/// `glob` in the form of a match key: scheme and host as a URL would read
/// them, the scheme's port where none is written, `/` for an empty path,
/// escapes of unreserved characters decoded.
fn canonical_glob(glob: &str) -> Result<Option<String>, UrlGlobError> {
    if !UrlGlob::is_url_glob(glob) {
        return Ok(None);
    }
    let after_scheme = glob.find("://").map_or(glob.len(), |i| i + 3);
    let scheme = glob[..after_scheme - 3].to_ascii_lowercase();
    let rest = &glob[after_scheme..];
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.contains('@') {
        return Err(UrlGlobError(format!(
            "`{glob}` names a user; a URL glob matches scheme, host, port, path and query only"
        )));
    }
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => (&authority[..i], Some(&authority[i + 1..])),
        Some(_) | None => (authority, None),
    };
    let host = host.to_ascii_lowercase();
    let host = host.trim_end_matches('.');
    if host.is_empty() {
        return Err(UrlGlobError(format!("`{glob}` names no host")));
    }
    let host = if has_wildcard(host) {
        host.split('.')
            .map(|label| {
                if has_wildcard(label) || label.is_ascii() {
                    Ok(label.to_owned())
                } else {
                    match url::Host::parse(label) {
                        Ok(url::Host::Domain(ascii)) => Ok(ascii),
                        Ok(_) | Err(_) => Err(UrlGlobError(format!(
                            "`{glob}`: `{label}` is not a valid host name label"
                        ))),
                    }
                }
            })
            .collect::<Result<Vec<_>, _>>()?
            .join(".")
    } else {
        let read = CanonicalUrl::parse(&format!("{scheme}://{host}/"))
            .ok_or_else(|| UrlGlobError(format!("`{glob}`: `{host}` is not a valid host")))?;
        read.url.host_str().unwrap_or(host).to_owned()
    };
    let port = match port {
        Some(port) if !port.is_empty() => port.to_owned(),
        Some(_) | None => {
            if scheme == "https" {
                "443".to_owned()
            } else {
                "80".to_owned()
            }
        }
    };
    let path = if path.is_empty() {
        "/".to_owned()
    } else {
        decode_unreserved(path)
    };
    Ok(Some(format!("{scheme}://{host}:{port}{path}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> String {
        CanonicalUrl::parse(text)
            .unwrap_or_else(|| panic!("{text}"))
            .match_key()
            .to_owned()
    }

    fn glob(text: &str) -> UrlGlob {
        UrlGlob::new(text).unwrap().unwrap()
    }

    #[test]
    fn spellings_of_one_resource_read_alike() {
        let admin = "http://localhost:8080/admin/x";
        for spelling in [
            "http://localhost.:8080/admin/x",
            "http://localhost..:8080/admin/x",
            "HTTP://LocalHost:8080/admin/x",
            "http://localhost:8080/%61dmin/x",
            "http://localhost:8080/%61%64%6D%69%6E/x",
            "http://localhost:8080/public/../admin/x",
            "http://localhost:8080/public/%2e%2E/admin/x",
            "http://localhost:8080/./admin/./x",
            "http://localhost:8080\\admin\\x",
            "http://user:pw@localhost:8080/admin/x",
            "http://localhost:8080/admin/x#top",
            "http://local\thost:8080/admin/x",
        ] {
            assert_eq!(key(spelling), admin, "{spelling}");
        }
        assert_eq!(key("http://0x7f.1/a"), "http://127.0.0.1:80/a");
        assert_eq!(key("https://docs.rs/"), "https://docs.rs:443/");
        assert_eq!(key("https://docs.rs:443"), "https://docs.rs:443/");
        assert_eq!(
            key("https://bücher.example/"),
            "https://xn--bcher-kva.example:443/"
        );
        assert_eq!(key("http://[::1]:9/a?q=%7e%2f"), "http://[::1]:9/a?q=~%2F");
    }

    #[test]
    fn the_canonical_form_reads_back_as_itself() {
        for text in [
            "http://localhost.:8080/%61dmin/x?a=%7E#f",
            "https://bücher.example/%2561/%2f",
            "http://0x7f.1/../a/./b",
        ] {
            let once = CanonicalUrl::parse(text).unwrap();
            let twice = CanonicalUrl::parse(once.as_str()).unwrap();
            assert_eq!(once, twice, "{text}");
        }
        assert_eq!(
            CanonicalUrl::parse("http://localhost.:8080/%61dmin/x")
                .unwrap()
                .as_str(),
            "http://localhost:8080/admin/x"
        );
    }

    #[test]
    fn only_http_urls_with_a_host_are_read() {
        for text in [
            "ftp://a.org/",
            "file:///etc/passwd",
            "not a url",
            "http://./x",
            "mailto:a@b",
        ] {
            assert!(CanonicalUrl::parse(text).is_none(), "{text}");
        }
    }

    #[test]
    fn globs_are_brought_to_the_match_form() {
        assert_eq!(
            canonical_glob("HTTPS://Docs.RS/A/**").unwrap().as_deref(),
            Some("https://docs.rs:443/A/**")
        );
        assert_eq!(
            canonical_glob("https://docs.rs").unwrap().as_deref(),
            Some("https://docs.rs:443/")
        );
        assert_eq!(
            canonical_glob("http://localhost.:*/%61dmin/**")
                .unwrap()
                .as_deref(),
            Some("http://localhost:*/admin/**")
        );
        assert_eq!(
            canonical_glob("https://*.Bücher.example/**")
                .unwrap()
                .as_deref(),
            Some("https://*.xn--bcher-kva.example:443/**")
        );
        assert_eq!(
            canonical_glob("http://[::1]:8080/x").unwrap().as_deref(),
            Some("http://[::1]:8080/x")
        );
        assert_eq!(canonical_glob("src/**").unwrap(), None);
        assert_eq!(canonical_glob("ftp://x/**").unwrap(), None);
        assert!(canonical_glob("https://user@docs.rs/**").is_err());
    }

    #[test]
    fn a_glob_matches_every_spelling_of_what_it_names() {
        let admin = glob("http://localhost:*/admin/**");
        for url in [
            "http://localhost.:8080/admin/x",
            "http://localhost:8080/%61dmin/x",
            "http://LOCALHOST/admin/x",
            "http://localhost:80/admin/x?y=1",
            "http://localhost:8080/a/../admin/x",
        ] {
            assert!(admin.matches(&CanonicalUrl::parse(url).unwrap()), "{url}");
        }
        for url in [
            "http://localhost:8080/public/x",
            "http://127.0.0.1:8080/admin/x",
        ] {
            assert!(!admin.matches(&CanonicalUrl::parse(url).unwrap()), "{url}");
        }
        let docs = glob("https://docs.rs/**");
        assert!(docs.matches(&CanonicalUrl::parse("https://docs.rs:443/a").unwrap()));
        assert!(!docs.matches(&CanonicalUrl::parse("https://docs.rs:8443/a").unwrap()));
        assert!(!docs.matches(&CanonicalUrl::parse("https://docs.rs.evil.com/a").unwrap()));
        assert!(!docs.matches(&CanonicalUrl::parse("https://docs.rs@evil.com/a").unwrap()));
    }
}
