//! Network origins: the patterns tools declare and operators allow
//! (`https://*.wikipedia.org`, `http://127.0.0.1:*`), and the concrete
//! origin a URL or a request goes to.
//!
//! A plain value library, as `capability` is: parsing is strict (anything
//! it cannot read is an error that shows the right form, never a wider
//! pattern), and patterns are closed under intersection, so what a call is
//! granted (declared ∩ allowed) is again a list of patterns that people can
//! read in approvals and the audit. It never resolves a name and never
//! decides whether anything may be reached.

use serde::{Serialize, Serializer};
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// The schemes a tool may use. Plain `http` is only reachable where an
/// allow entry says `http://` itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scheme {
    Https,
    Http,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Https => "https",
            Scheme::Http => "http",
        }
    }

    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Https => 443,
            Scheme::Http => 80,
        }
    }

    fn parse(text: &str) -> Option<Scheme> {
        match text.to_ascii_lowercase().as_str() {
            "https" => Some(Scheme::Https),
            "http" => Some(Scheme::Http),
            _ => None,
        }
    }
}

/// Which hosts a pattern covers.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HostPattern {
    /// `*`: any host, names and addresses alike.
    Any,
    /// `*.example.org`: every name below `example.org`, not the name itself.
    /// Holds `example.org`.
    Subdomains(String),
    /// Exactly this name (lower case, no trailing dot).
    Name(String),
    /// Exactly this address.
    Ip(IpAddr),
}

/// Which ports a pattern covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PortPattern {
    Any,
    Is(u16),
}

/// `scheme://host[:port]` with wildcards: what a tool declares and an
/// operator allows.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OriginPattern {
    pub scheme: Scheme,
    pub host: HostPattern,
    pub port: PortPattern,
}

/// The host of a concrete origin.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Host {
    Name(String),
    Ip(IpAddr),
}

/// Where one request goes: scheme, host and port, nothing else.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    pub scheme: Scheme,
    pub host: Host,
    pub port: u16,
}

/// Why a pattern cannot be read, with the form that would work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError {
    pub message: String,
    pub hint: &'static str,
}

const FORM: &str = "write `scheme://host[:port]`, e.g. `https://api.github.com`, \
                    `https://*.wikipedia.org` or `http://127.0.0.1:8080`; `*` as the host \
                    allows any host, `:*` any port";

fn refuse(message: String) -> PatternError {
    PatternError {
        message,
        hint: FORM,
    }
}

/// A host name as DNS spells it: ASCII letters, digits and `-` in dot-separated
/// labels. Anything else (an `@`, a `/`, a space, a non-ASCII letter) would
/// mean something else to a URL parser than to this pattern.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

fn parse_host(text: &str) -> Result<HostPattern, PatternError> {
    if text == "*" {
        return Ok(HostPattern::Any);
    }
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        return inner
            .parse::<std::net::Ipv6Addr>()
            .map(|ip| HostPattern::Ip(IpAddr::V6(ip)))
            .map_err(|_| refuse(format!("`[{inner}]` is not an IPv6 address")));
    }
    if let Ok(ip) = text.parse::<std::net::Ipv4Addr>() {
        return Ok(HostPattern::Ip(IpAddr::V4(ip)));
    }
    let lower = text.to_ascii_lowercase();
    let lower = lower.strip_suffix('.').unwrap_or(&lower);
    if !lower.is_ascii() {
        return Err(PatternError {
            message: format!("`{text}` is not an ASCII host name"),
            hint: "write an international name in its ASCII form (`xn--...`)",
        });
    }
    if let Some(parent) = lower.strip_prefix("*.") {
        return if valid_name(parent) {
            Ok(HostPattern::Subdomains(parent.to_owned()))
        } else {
            Err(refuse(format!("`{text}` is not `*.` before a host name")))
        };
    }
    if lower.contains('*') {
        return Err(refuse(format!(
            "`{text}`: `*` may only stand for the whole host or for its subdomains (`*.example.org`)"
        )));
    }
    if valid_name(lower) {
        Ok(HostPattern::Name(lower.to_owned()))
    } else {
        Err(refuse(format!("`{text}` is not a host name")))
    }
}

impl FromStr for OriginPattern {
    type Err = PatternError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err(refuse(if text == "*" {
                "`*` alone names no scheme; `https://*` allows every host over https, \
                 `http://*:*` every host and port over plain http"
                    .into()
            } else {
                format!("`{text}` has no scheme")
            }));
        };
        let scheme = Scheme::parse(scheme).ok_or_else(|| {
            refuse(format!(
                "`{scheme}` is not a scheme a tool may use; use `https` or `http`"
            ))
        })?;
        if rest.contains(['/', '?', '#', '@', '\\']) || rest.chars().any(char::is_whitespace) {
            return Err(refuse(format!(
                "`{text}` is more than an origin: no user, path, query or fragment"
            )));
        }
        // The port is after the last `:`, unless that `:` is inside an IPv6
        // address's brackets.
        let (host, port) = match rest.rfind(':') {
            Some(at) if !rest[at..].contains(']') => (&rest[..at], Some(&rest[at + 1..])),
            Some(_) | None => (rest, None),
        };
        let port = match port {
            None => PortPattern::Is(scheme.default_port()),
            Some("*") => PortPattern::Any,
            Some(digits) => match digits.parse::<u16>() {
                Ok(port) if port > 0 && digits.bytes().all(|b| b.is_ascii_digit()) => {
                    PortPattern::Is(port)
                }
                Ok(_) | Err(_) => {
                    return Err(refuse(format!("`{digits}` in `{text}` is not a port")));
                }
            },
        };
        Ok(OriginPattern {
            scheme,
            host: parse_host(host)?,
            port,
        })
    }
}

fn write_host(f: &mut fmt::Formatter<'_>, host: &Host) -> fmt::Result {
    match host {
        Host::Name(name) => f.write_str(name),
        Host::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
        Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
    }
}

impl fmt::Display for OriginPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme.as_str())?;
        match &self.host {
            HostPattern::Any => f.write_str("*")?,
            HostPattern::Subdomains(parent) => write!(f, "*.{parent}")?,
            HostPattern::Name(name) => write_host(f, &Host::Name(name.clone()))?,
            HostPattern::Ip(ip) => write_host(f, &Host::Ip(*ip))?,
        }
        match self.port {
            PortPattern::Any => f.write_str(":*"),
            PortPattern::Is(port) if port == self.scheme.default_port() => Ok(()),
            PortPattern::Is(port) => write!(f, ":{port}"),
        }
    }
}

impl Serialize for OriginPattern {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme.as_str())?;
        write_host(f, &self.host)?;
        if self.port != self.scheme.default_port() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

impl Serialize for Origin {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Origin {
    /// The origin of a URL as the WHATWG URL standard reads it (the reading
    /// browsers and the `url` crate share), or `None` when it is not an
    /// `http(s)` URL with a host.
    pub fn of_url(url: &url::Url) -> Option<Origin> {
        let scheme = Scheme::parse(url.scheme())?;
        let host = match url.host()? {
            url::Host::Domain(name) => Host::Name(name.strip_suffix('.').unwrap_or(name).into()),
            url::Host::Ipv4(ip) => Host::Ip(IpAddr::V4(ip)),
            url::Host::Ipv6(ip) => Host::Ip(IpAddr::V6(ip)),
        };
        let port = url.port().unwrap_or(scheme.default_port());
        Some(Origin { scheme, host, port })
    }
}

impl HostPattern {
    fn covers(&self, host: &Host) -> bool {
        match (self, host) {
            (HostPattern::Any, _) => true,
            (HostPattern::Name(want), Host::Name(name)) => want == name,
            (HostPattern::Subdomains(parent), Host::Name(name)) => is_below(name, parent),
            (HostPattern::Ip(want), Host::Ip(ip)) => want == ip,
            (HostPattern::Name(_) | HostPattern::Subdomains(_), Host::Ip(_))
            | (HostPattern::Ip(_), Host::Name(_)) => false,
        }
    }

    fn intersect(&self, other: &HostPattern) -> Option<HostPattern> {
        use HostPattern::*;
        match (self, other) {
            (Any, x) | (x, Any) => Some(x.clone()),
            (Name(a), Name(b)) => (a == b).then(|| Name(a.clone())),
            (Ip(a), Ip(b)) => (a == b).then_some(Ip(*a)),
            (Subdomains(parent), Name(name)) | (Name(name), Subdomains(parent)) => {
                is_below(name, parent).then(|| Name(name.clone()))
            }
            (Subdomains(a), Subdomains(b)) => {
                if a == b || is_below(a, b) {
                    Some(Subdomains(a.clone()))
                } else if is_below(b, a) {
                    Some(Subdomains(b.clone()))
                } else {
                    None
                }
            }
            (Ip(_), Name(_) | Subdomains(_)) | (Name(_) | Subdomains(_), Ip(_)) => None,
        }
    }
}

/// `name` is a subdomain of `parent` (not `parent` itself).
fn is_below(name: &str, parent: &str) -> bool {
    name.len() > parent.len() + 1
        && name.ends_with(parent)
        && name.as_bytes()[name.len() - parent.len() - 1] == b'.'
}

impl PortPattern {
    fn intersect(self, other: PortPattern) -> Option<PortPattern> {
        match (self, other) {
            (PortPattern::Any, p) | (p, PortPattern::Any) => Some(p),
            (PortPattern::Is(a), PortPattern::Is(b)) => (a == b).then_some(PortPattern::Is(a)),
        }
    }
}

impl OriginPattern {
    /// Whether a request to `origin` is covered.
    pub fn matches(&self, origin: &Origin) -> bool {
        self.scheme == origin.scheme
            && match self.port {
                PortPattern::Any => true,
                PortPattern::Is(port) => port == origin.port,
            }
            && self.host.covers(&origin.host)
    }

    /// The origins both patterns cover, as one pattern, if any.
    pub fn intersect(&self, other: &OriginPattern) -> Option<OriginPattern> {
        if self.scheme != other.scheme {
            return None;
        }
        Some(OriginPattern {
            scheme: self.scheme,
            host: self.host.intersect(&other.host)?,
            port: self.port.intersect(other.port)?,
        })
    }

    /// Whether every origin this pattern covers is covered by `other`.
    pub fn within(&self, other: &OriginPattern) -> bool {
        self.intersect(other).as_ref() == Some(self)
    }

    /// Whether the pattern names exactly this address (as opposed to
    /// covering it with a wildcard): only such a pattern reaches a cloud
    /// metadata address.
    pub fn names_address(&self, ip: IpAddr) -> bool {
        self.host == HostPattern::Ip(ip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> OriginPattern {
        text.parse()
            .unwrap_or_else(|e: PatternError| panic!("{text}: {}", e.message))
    }

    fn origin(url: &str) -> Origin {
        Origin::of_url(&url::Url::parse(url).unwrap()).unwrap()
    }

    #[test]
    fn patterns_read_back_in_their_canonical_form() {
        for (text, shown) in [
            ("https://api.github.com", "https://api.github.com"),
            ("HTTPS://API.GitHub.com.", "https://api.github.com"),
            ("https://api.github.com:443", "https://api.github.com"),
            ("https://*.wikipedia.org", "https://*.wikipedia.org"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("http://[::1]:*", "http://[::1]:*"),
            ("https://*", "https://*"),
            ("http://*:*", "http://*:*"),
        ] {
            assert_eq!(pattern(text).to_string(), shown, "{text}");
        }
    }

    #[test]
    fn anything_but_an_origin_is_refused() {
        for bad in [
            "*",
            "api.github.com",
            "ftp://example.org",
            "https://example.org/path",
            "https://user@example.org",
            "https://example.org?x",
            "https://a.*.org",
            "https://*example.org",
            "https://exa mple.org",
            "https://exämple.org",
            "https://example.org:0",
            "https://example.org:99999",
            "https://example.org:+80",
            "https://",
            "https://[::1",
            "https://evil.com\\@good.org",
            "https://a..b",
        ] {
            assert!(bad.parse::<OriginPattern>().is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn subdomain_wildcards_cover_subdomains_only() {
        let wiki = pattern("https://*.wikipedia.org");
        assert!(wiki.matches(&origin("https://en.wikipedia.org/wiki/X")));
        assert!(wiki.matches(&origin("https://a.b.wikipedia.org")));
        assert!(!wiki.matches(&origin("https://wikipedia.org")));
        assert!(!wiki.matches(&origin("https://evilwikipedia.org")));
        assert!(!wiki.matches(&origin("https://en.wikipedia.org.evil.com")));
        assert!(!wiki.matches(&origin("http://en.wikipedia.org")));
        assert!(!wiki.matches(&origin("https://en.wikipedia.org:8443")));
    }

    #[test]
    fn urls_are_read_as_browsers_read_them() {
        assert_eq!(
            origin("https://docs.rs\\@evil.com/"),
            origin("https://docs.rs/@evil.com/")
        );
        assert_eq!(
            origin("http://0x7f.1/").host,
            Host::Ip("127.0.0.1".parse().unwrap())
        );
        assert_eq!(
            origin("https://user:pw@EXAMPLE.org./x").to_string(),
            "https://example.org"
        );
        assert!(Origin::of_url(&url::Url::parse("file:///etc/passwd").unwrap()).is_none());
    }

    #[test]
    fn intersections_are_exact() {
        let cases = [
            (
                "https://*",
                "https://api.github.com",
                Some("https://api.github.com"),
            ),
            (
                "https://*:*",
                "https://api.github.com:8443",
                Some("https://api.github.com:8443"),
            ),
            (
                "https://*.wikipedia.org",
                "https://en.wikipedia.org",
                Some("https://en.wikipedia.org"),
            ),
            (
                "https://*.org",
                "https://*.wikipedia.org",
                Some("https://*.wikipedia.org"),
            ),
            ("https://*.wikipedia.org", "https://wikipedia.org", None),
            ("https://*", "http://*", None),
            (
                "http://127.0.0.1:*",
                "http://*:8080",
                Some("http://127.0.0.1:8080"),
            ),
            ("http://127.0.0.1:*", "http://localhost:*", None),
            ("https://a.org", "https://a.org:8443", None),
        ];
        for (a, b, both) in cases {
            let got = pattern(a).intersect(&pattern(b)).map(|p| p.to_string());
            assert_eq!(got.as_deref(), both, "{a} ∩ {b}");
            let got = pattern(b).intersect(&pattern(a)).map(|p| p.to_string());
            assert_eq!(got.as_deref(), both, "{b} ∩ {a}");
        }
        assert!(pattern("https://en.wikipedia.org").within(&pattern("https://*.wikipedia.org")));
        assert!(!pattern("https://*.wikipedia.org").within(&pattern("https://en.wikipedia.org")));
        assert!(!pattern("https://*:*").within(&pattern("https://*")));
    }
}
