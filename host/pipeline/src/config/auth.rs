//! The `[auth]` section: which OAuth 2.1 authorization server vouches for
//! the people and agents calling over HTTP, and what their access tokens
//! must say. Read here, like `[mcp]`, because the servers that check tokens
//! are crates above the library; they take the result from the
//! [`super::Config`]. Checking a token is theirs (`toolwarden-auth`); this
//! only makes sure the settings can be checked against safely.

use crate::settings::SettingError;
use serde::Deserialize;
use url::Url;

/// Who issues the access tokens `serve --http` accepts, for whom, and what
/// they must carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthSettings {
    /// The issuer's identifier, exactly as written, as its tokens' `iss`
    /// and its metadata's `issuer` must say it (a URL, kept as text: a
    /// parsed URL would gain a trailing `/` the issuer never wrote).
    pub issuer: String,
    /// What a token's `aud` must hold: the MCP server's resource URL for
    /// issuers that follow the MCP spec's resource indicators, or the API
    /// identifier the issuer was told to use.
    pub audience: String,
    /// The protected resource's URL as clients reach it (RFC 9728's
    /// `resource`): `audience` when that is a URL, unless set apart (a
    /// proxy in front, an issuer with API identifiers).
    pub resource: Option<Url>,
    /// Scopes every token must grant.
    pub scopes: Vec<String>,
    /// Claims kept with the caller besides its subject (for the audit, and
    /// rules later): `groups`, `email`, ...
    pub claims: Vec<String>,
    /// Seconds of clock difference tolerated on `exp` and `nbf`.
    pub leeway_seconds: u64,
    /// The console's client at the issuer (a public client: authorization
    /// code with PKCE, no secret): people sign in to the console with it.
    pub console_client_id: Option<String>,
    /// Where the issuer sends people back to (`.../console/login/callback`),
    /// when the console cannot tell from the request (a proxy in front).
    pub console_redirect_uri: Option<Url>,
}

pub const DEFAULT_LEEWAY_SECONDS: u64 = 60;

const MAX_LEEWAY_SECONDS: u64 = 300;

/// The `[auth]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AuthSection {
    issuer: String,
    audience: String,
    resource: Option<String>,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    claims: Vec<String>,
    leeway_seconds: Option<u64>,
    console_client_id: Option<String>,
    console_redirect_uri: Option<String>,
}

/// Where the console's sign-in comes back to, under any origin.
pub const CONSOLE_CALLBACK_PATH: &str = "/console/login/callback";

impl AuthSection {
    pub(super) const KEYS: &str = "issuer, audience, resource, scopes, claims, leeway_seconds, \
                                   console_client_id, console_redirect_uri";

    pub(super) fn resolve(self) -> Result<AuthSettings, SettingError> {
        let parsed = web_url("issuer", &self.issuer)?;
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(SettingError::new(
                format!("`auth.issuer` `{}` has a query or fragment", self.issuer),
                "an issuer identifier is a plain https URL (RFC 8414 section 2)",
            ));
        }
        let resource = self
            .resource
            .as_deref()
            .map(|text| web_url("resource", text))
            .transpose()?;
        if self.audience.trim().is_empty() {
            return Err(SettingError::new(
                "`auth.audience` is empty",
                "name what the issuer puts in `aud` for this server, e.g. its URL \
                 `https://tools.example.org/mcp`",
            ));
        }
        for scope in &self.scopes {
            if scope.is_empty() || scope.contains(char::is_whitespace) {
                return Err(SettingError::new(
                    format!("`auth.scopes` holds `{scope}`, which is not a scope"),
                    "a scope is one word without spaces, e.g. `tools:call`",
                ));
            }
        }
        let leeway_seconds = match self.leeway_seconds {
            None => DEFAULT_LEEWAY_SECONDS,
            Some(seconds) if seconds <= MAX_LEEWAY_SECONDS => seconds,
            Some(seconds) => {
                return Err(SettingError::new(
                    format!(
                        "`auth.leeway_seconds` is {seconds}; it must be at most {MAX_LEEWAY_SECONDS}"
                    ),
                    "a larger leeway would accept expired tokens for minutes; fix the clocks instead",
                ));
            }
        };
        if let Some(id) = &self.console_client_id
            && (id.trim().is_empty() || id.chars().any(char::is_control))
        {
            return Err(SettingError::new(
                "`auth.console_client_id` is empty or holds control characters",
                "name the client registered at the issuer for the console, e.g. `toolwarden-console`",
            ));
        }
        let console_redirect_uri = match self.console_redirect_uri.as_deref() {
            None => None,
            Some(_) if self.console_client_id.is_none() => {
                return Err(SettingError::new(
                    "`auth.console_redirect_uri` is set without `auth.console_client_id`",
                    "name the console's client too, or remove the redirect URI",
                ));
            }
            Some(text) => {
                let url = web_url("console_redirect_uri", text)?;
                if url.path() != CONSOLE_CALLBACK_PATH || url.query().is_some() {
                    return Err(SettingError::new(
                        format!(
                            "`auth.console_redirect_uri` `{text}` is not the console's callback"
                        ),
                        format!(
                            "write the console's URL as people reach it, ending in `{CONSOLE_CALLBACK_PATH}`"
                        ),
                    ));
                }
                Some(url)
            }
        };
        Ok(AuthSettings {
            issuer: self.issuer,
            audience: self.audience,
            resource,
            scopes: self.scopes,
            claims: self.claims,
            leeway_seconds,
            console_client_id: self.console_client_id,
            console_redirect_uri,
        })
    }
}

/// `text` as an `https` URL, or plain `http` to a loopback address (an
/// issuer or server on this machine, as in tests and one-person setups):
/// over plain HTTP anyone on the path could swap the issuer's keys.
fn web_url(key: &str, text: &str) -> Result<Url, SettingError> {
    let url = Url::parse(text).map_err(|e| {
        SettingError::new(
            format!("`auth.{key}` `{text}` is not a URL: {e}"),
            "write it as `https://login.example.org/realms/tools`",
        )
    })?;
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        "http" => Err(SettingError::new(
            format!("`auth.{key}` `{text}` is plain HTTP to another machine"),
            "use https: over plain HTTP anyone on the path could change what it says \
             (plain http is accepted for loopback addresses only)",
        )),
        other => Err(SettingError::new(
            format!("`auth.{key}` `{text}` has the scheme `{other}`"),
            "write an https URL",
        )),
    }
}

/// A rule's `caller` may name `subject`, `issuer`, `proof` or a claim
/// `[auth] claims` keeps: a caller carries no other, so a rule naming one
/// could never match. The line and the mistake of the first that does.
pub(super) fn unknown_caller_key(
    rules: &[crate::policy::RuleDef],
    auth: Option<&AuthSettings>,
) -> Option<(Option<usize>, SettingError)> {
    let kept = auth.map(|a| a.claims.as_slice()).unwrap_or_default();
    rules.iter().find_map(|rule| {
        let key = rule.caller.as_ref()?.keys().find(|key| {
            !matches!(key.as_str(), "subject" | "issuer" | "proof") && !kept.contains(key)
        })?;
        Some((
            rule.line,
            SettingError::new(
                format!(
                    "`caller.{key}`: callers carry no claim `{key}`, so this rule could never match"
                ),
                format!(
                    "match on `subject`, `issuer` or `proof`, or keep the claim: \
                     [auth] claims = [\"{key}\"]"
                ),
            ),
        ))
    })
}

/// Whether `url` names this machine: a loopback address or `localhost`.
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(issuer: &str) -> AuthSection {
        AuthSection {
            issuer: issuer.into(),
            audience: "https://tools.example.org/mcp".into(),
            resource: None,
            scopes: vec!["tools:call".into()],
            claims: vec![],
            leeway_seconds: None,
            console_client_id: None,
            console_redirect_uri: None,
        }
    }

    #[test]
    fn an_issuer_is_https_or_loopback() {
        assert!(
            section("https://login.example.org/realms/t")
                .resolve()
                .is_ok()
        );
        assert!(section("http://127.0.0.1:9000").resolve().is_ok());
        assert!(section("http://localhost:9000/").resolve().is_ok());
        assert!(section("http://[::1]:9000/").resolve().is_ok());
        let refused = section("http://login.example.org").resolve().unwrap_err();
        assert!(refused.message.contains("plain HTTP"), "{refused:?}");
        assert!(section("ftp://login.example.org").resolve().is_err());
        assert!(section("login.example.org").resolve().is_err());
        assert!(section("https://login.example.org/?a=b").resolve().is_err());
    }

    #[test]
    fn a_rule_may_name_only_claims_callers_carry() {
        let rule = |key: &str| crate::policy::RuleDef {
            line: Some(7),
            caller: Some([(key.to_owned(), vec!["x".to_owned()])].into()),
            ..Default::default()
        };
        let mut auth = section("https://login.example.org").resolve().unwrap();
        auth.claims = vec!["groups".into()];
        for key in ["subject", "issuer", "proof", "groups"] {
            assert!(
                unknown_caller_key(&[rule(key)], Some(&auth)).is_none(),
                "{key}"
            );
        }
        let (line, mistake) = unknown_caller_key(&[rule("email")], Some(&auth)).unwrap();
        assert_eq!(line, Some(7));
        assert!(mistake.hint.contains("claims = [\"email\"]"), "{mistake:?}");
        assert!(unknown_caller_key(&[rule("groups")], None).is_some());
    }

    #[test]
    fn scopes_are_words_and_leeway_is_bounded() {
        let mut spaced = section("https://login.example.org");
        spaced.scopes = vec!["tools call".into()];
        assert!(spaced.resolve().is_err());
        let mut long = section("https://login.example.org");
        long.leeway_seconds = Some(3_600);
        assert!(long.resolve().is_err());
        let mut empty = section("https://login.example.org");
        empty.audience = " ".into();
        assert!(empty.resolve().is_err());
    }

    #[test]
    fn the_console_comes_back_to_its_own_callback() {
        let with = |id: Option<&str>, uri: Option<&str>| {
            let mut s = section("https://login.example.org");
            s.console_client_id = id.map(str::to_owned);
            s.console_redirect_uri = uri.map(str::to_owned);
            s.resolve()
        };
        let good = with(
            Some("console"),
            Some("https://tools.example.org/console/login/callback"),
        )
        .unwrap();
        assert_eq!(good.console_client_id.as_deref(), Some("console"));
        assert!(
            with(Some("console"), None)
                .unwrap()
                .console_redirect_uri
                .is_none()
        );
        for wrong in [
            "https://tools.example.org/elsewhere",
            "https://tools.example.org/console/login/callback?next=x",
            "http://tools.example.org/console/login/callback",
        ] {
            assert!(with(Some("console"), Some(wrong)).is_err(), "{wrong}");
        }
        assert!(
            with(
                None,
                Some("https://tools.example.org/console/login/callback")
            )
            .is_err(),
            "a redirect without a client"
        );
        assert!(with(Some(" "), None).is_err());
    }
}
