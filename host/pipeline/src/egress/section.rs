//! The `[network]` and `[credential.NAME]` tables of `toolwarden.toml`:
//! what the operator allows (globally and per plugin), the per-call limits,
//! an extra CA file, and the credentials the host adds to requests. Egress
//! owns both tables; `config` hands them here with their lines.
//!
//! ```toml
//! [network]
//! allow = ["https://api.github.com", { origin = "http://127.0.0.1:*", private = true }]
//! ca_file = "/etc/toolwarden/extra-ca.pem"
//! max_requests = 32
//!
//! [network.plugin."http_fetch.wasm"]
//! allow = ["https://docs.rs"]
//!
//! [credential.github]
//! env = "GITHUB_TOKEN"              # or file = "/path/to/token" (mode 0600)
//! origins = ["https://api.github.com"]
//! header = "Authorization"
//! prefix = "Bearer "
//! ```

use super::{AllowEntry, Allowance, Credential, Credentials, NetLimits};
use crate::capability::Reach;
use crate::origin::OriginPattern;
use crate::settings::{SettingError, bounded};
use crate::spec::is_valid_credential_name;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Requests one call may send (redirects a tool follows count).
pub const DEFAULT_MAX_REQUESTS: u64 = 32;
/// Request bodies one call may send, in KiB.
pub const DEFAULT_MAX_SENT_KB: u64 = 1024;
/// Response bodies one call may receive, in KiB: a response past what is
/// left is cut off with an error, never buffered whole.
pub const DEFAULT_MAX_RECEIVED_KB: u64 = 16 * 1024;
/// How long a connection (DNS, TCP and TLS together) may take.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 5_000;
/// How long the first byte of a response may take once the request is sent.
pub const DEFAULT_FIRST_BYTE_TIMEOUT_MS: u64 = 15_000;

const MAX_REQUESTS: u64 = 100_000;
const MAX_TRANSFER_KB: u64 = 4 * 1024 * 1024;
const MAX_TIMEOUT_MS: u64 = 600_000;
/// Largest credential secret read from a file or the environment.
const MAX_SECRET_BYTES: usize = 16 << 10;

/// The `[network]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    #[serde(default)]
    allow: Vec<toml::Value>,
    #[serde(default)]
    plugin: BTreeMap<String, PluginSection>,
    ca_file: Option<PathBuf>,
    max_requests: Option<u64>,
    max_sent_kb: Option<u64>,
    max_received_kb: Option<u64>,
    connect_timeout_ms: Option<u64>,
    first_byte_timeout_ms: Option<u64>,
}

/// `[network.plugin."FILE.wasm"]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PluginSection {
    allow: Vec<toml::Value>,
}

/// One `[credential.NAME]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialSection {
    env: Option<String>,
    file: Option<PathBuf>,
    origins: Vec<String>,
    header: String,
    #[serde(default)]
    prefix: String,
}

/// What `[network]` resolves to; the default allows nothing.
#[derive(Default)]
pub struct NetworkSettings {
    pub allowance: Allowance,
    pub limits: NetLimits,
    pub extra_roots: Vec<CertificateDer<'static>>,
}

impl NetworkSection {
    pub const KEYS: &str = "allow, plugin.\"FILE.wasm\".allow, ca_file, max_requests, \
                            max_sent_kb, max_received_kb, connect_timeout_ms, first_byte_timeout_ms";

    pub fn resolve(self) -> Result<NetworkSettings, SettingError> {
        let everywhere = entries("network.allow", &self.allow)?;
        let mut plugins = BTreeMap::new();
        for (file, section) in self.plugin {
            let key = format!("network.plugin.\"{file}\".allow");
            plugins.insert(file, entries(&key, &section.allow)?);
        }
        let kb = |key, value, default| -> Result<u64, SettingError> {
            Ok(bounded("network", key, value, default, MAX_TRANSFER_KB)? << 10)
        };
        let ms = |key, value, default| -> Result<Duration, SettingError> {
            Ok(Duration::from_millis(bounded(
                "network",
                key,
                value,
                default,
                MAX_TIMEOUT_MS,
            )?))
        };
        let limits = NetLimits {
            max_requests: bounded(
                "network",
                "max_requests",
                self.max_requests,
                DEFAULT_MAX_REQUESTS,
                MAX_REQUESTS,
            )? as u32,
            max_sent_bytes: kb("max_sent_kb", self.max_sent_kb, DEFAULT_MAX_SENT_KB)?,
            max_received_bytes: kb(
                "max_received_kb",
                self.max_received_kb,
                DEFAULT_MAX_RECEIVED_KB,
            )?,
            connect_timeout: ms(
                "connect_timeout_ms",
                self.connect_timeout_ms,
                DEFAULT_CONNECT_TIMEOUT_MS,
            )?,
            first_byte_timeout: ms(
                "first_byte_timeout_ms",
                self.first_byte_timeout_ms,
                DEFAULT_FIRST_BYTE_TIMEOUT_MS,
            )?,
        };
        let extra_roots = match &self.ca_file {
            None => Vec::new(),
            Some(path) => ca_certificates(path)?,
        };
        Ok(NetworkSettings {
            allowance: Allowance {
                everywhere,
                plugins,
            },
            limits,
            extra_roots,
        })
    }
}

fn pattern(key: &str, text: &str) -> Result<OriginPattern, SettingError> {
    text.parse().map_err(|e: crate::origin::PatternError| {
        SettingError::new(format!("`{key}`: {}", e.message), e.hint)
    })
}

/// An allow list: origins as strings, or `{ origin = "...", private = true }`
/// for an origin that may also be reached at internal addresses.
fn entries(key: &str, values: &[toml::Value]) -> Result<Vec<AllowEntry>, SettingError> {
    let mut out = Vec::with_capacity(values.len());
    for value in values {
        let entry = match value {
            toml::Value::String(text) => AllowEntry {
                pattern: pattern(key, text)?,
                reach: Reach::Public,
            },
            toml::Value::Table(table) => {
                let unknown: Vec<&str> = table
                    .keys()
                    .map(String::as_str)
                    .filter(|k| !matches!(*k, "origin" | "private"))
                    .collect();
                let origin = table.get("origin").and_then(toml::Value::as_str);
                let private = match table.get("private") {
                    None => Some(false),
                    Some(value) => value.as_bool(),
                };
                let (Some(origin), Some(private), true) = (origin, private, unknown.is_empty())
                else {
                    return Err(SettingError::new(
                        format!("`{key}`: `{value}` is not an allow entry"),
                        "write an origin string, or { origin = \"http://10.0.0.5:8080\", private = true } \
                         to allow loopback and private addresses too",
                    ));
                };
                AllowEntry {
                    pattern: pattern(key, origin)?,
                    reach: if private {
                        Reach::AlsoPrivate
                    } else {
                        Reach::Public
                    },
                }
            }
            other => {
                return Err(SettingError::new(
                    format!("`{key}`: `{other}` is not an origin"),
                    "write origins as strings, e.g. allow = [\"https://api.github.com\"]",
                ));
            }
        };
        out.push(entry);
    }
    Ok(out)
}

fn ca_certificates(path: &PathBuf) -> Result<Vec<CertificateDer<'static>>, SettingError> {
    let unreadable = |why: String| {
        SettingError::new(
            format!("`network.ca_file` `{}`: {why}", path.display()),
            "name a PEM file of CA certificates (`-----BEGIN CERTIFICATE-----`)",
        )
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| unreadable(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unreadable(e.to_string()))?;
    if certs.is_empty() {
        return Err(unreadable("it holds no certificate".into()));
    }
    Ok(certs)
}

impl CredentialSection {
    pub const KEYS: &str = "env or file, origins, header, prefix";

    /// The credential `name`, its secret read now from the environment or
    /// its file.
    pub fn resolve(self, name: &str) -> Result<Credential, SettingError> {
        let key = format!("credential.{name}");
        let fail =
            |message: String, hint: &str| SettingError::new(format!("`{key}`: {message}"), hint);
        if !is_valid_credential_name(name) {
            return Err(fail(
                "the name must match `[a-z][a-z0-9_-]*` (at most 64 characters)".into(),
                "rename the table, and the credential in the tools that declare it",
            ));
        }
        if self.origins.is_empty() {
            return Err(fail(
                "`origins` is empty, so the credential would be sent nowhere".into(),
                "list the origins it is for, e.g. origins = [\"https://api.github.com\"]",
            ));
        }
        let origins = self
            .origins
            .iter()
            .map(|text| pattern(&format!("{key}.origins"), text))
            .collect::<Result<Vec<_>, _>>()?;
        let header = http::HeaderName::from_bytes(self.header.as_bytes()).map_err(|_| {
            fail(
                format!("`{}` is not an HTTP header name", self.header),
                "e.g. header = \"Authorization\"",
            )
        })?;
        let secret = match (&self.env, &self.file) {
            (Some(var), None) => std::env::var(var).map_err(|_| {
                fail(
                    format!("the environment variable `{var}` is not set (or not UTF-8)"),
                    "set it in the host's environment, or read the secret from a file with `file`",
                )
            })?,
            (None, Some(path)) => secret_file(path).map_err(|why| {
                fail(
                    format!("`{}`: {why}", path.display()),
                    "keep the secret in a file only its owner can read (`chmod 600`)",
                )
            })?,
            (Some(_), Some(_)) | (None, None) => {
                return Err(fail(
                    "say where the secret is: exactly one of `env` and `file`".into(),
                    "env = \"GITHUB_TOKEN\" or file = \"/path/to/token\"",
                ));
            }
        };
        let secret = secret.trim_end_matches(['\n', '\r']);
        if secret.is_empty() || secret.len() > MAX_SECRET_BYTES {
            return Err(fail(
                format!(
                    "the secret is empty or longer than {} KiB",
                    MAX_SECRET_BYTES >> 10
                ),
                "check the variable or file it is read from",
            ));
        }
        let mut value =
            http::HeaderValue::from_str(&format!("{}{secret}", self.prefix)).map_err(|_| {
                fail(
                    "the prefix and secret do not make a valid header value (control characters?)"
                        .into(),
                    "check the variable or file it is read from",
                )
            })?;
        value.set_sensitive(true);
        Ok(Credential {
            origins,
            header,
            value,
            secret: secret.to_owned(),
        })
    }
}

/// A secret file must be readable by its owner alone, like the state
/// directory's files.
fn secret_file(path: &PathBuf) -> Result<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "group or others may read it (mode {:o})",
            meta.permissions().mode() & 0o777
        ));
    }
    if meta.len() > MAX_SECRET_BYTES as u64 {
        return Err(format!("larger than {} KiB", MAX_SECRET_BYTES >> 10));
    }
    std::fs::read_to_string(path).map_err(|e| e.to_string())
}

/// Every `[credential.NAME]` table, resolved; an error names the table.
pub fn credentials(
    tables: BTreeMap<String, CredentialSection>,
) -> Result<Credentials, (String, SettingError)> {
    let mut out = BTreeMap::new();
    for (name, table) in tables {
        let credential = table.resolve(&name).map_err(|e| (name.clone(), e))?;
        out.insert(name, credential);
    }
    Ok(Credentials(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str) -> Result<NetworkSettings, SettingError> {
        let section: NetworkSection =
            toml::from_str(text).map_err(|e| SettingError::new(e.to_string(), ""))?;
        section.resolve()
    }

    #[test]
    fn nothing_is_allowed_by_default_and_limits_are_bounded() {
        let settings = section("").unwrap_or_else(|e| panic!("{}", e.message));
        assert!(settings.allowance.everywhere.is_empty());
        assert!(settings.allowance.plugins.is_empty());
        assert_eq!(settings.limits, NetLimits::default());
        for bad in [
            "max_requests = 0",
            "max_received_kb = 0",
            "connect_timeout_ms = 9999999",
        ] {
            assert!(section(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn allow_entries_are_origins_or_tables_that_say_private() {
        let settings = section(
            "allow = [\"https://api.github.com\", { origin = \"http://127.0.0.1:*\", private = true }]\n\
             [plugin.\"f.wasm\"]\nallow = [\"https://docs.rs\"]\n",
        )
        .unwrap_or_else(|e| panic!("{}", e.message));
        let reaches: Vec<Reach> = settings
            .allowance
            .everywhere
            .iter()
            .map(|e| e.reach)
            .collect();
        assert_eq!(reaches, [Reach::Public, Reach::AlsoPrivate]);
        assert_eq!(settings.allowance.plugins["f.wasm"].len(), 1);
        for bad in [
            "allow = [\"*\"]",
            "allow = [\"api.github.com\"]",
            "allow = [{ origin = \"https://a.org\", privat = true }]",
            "allow = [{ origin = \"https://a.org\", private = \"yes\" }]",
            "allow = [3]",
        ] {
            let e = section(bad)
                .err()
                .unwrap_or_else(|| panic!("{bad} was accepted"));
            assert!(e.message.contains("network.allow"), "{bad}: {}", e.message);
        }
    }

    fn credential(text: &str) -> Result<Credential, SettingError> {
        let table: CredentialSection =
            toml::from_str(text).map_err(|e| SettingError::new(e.to_string(), ""))?;
        table.resolve("token")
    }

    #[test]
    fn credentials_need_a_secret_origins_and_a_header() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret");
        std::fs::write(&file, "s3cret\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let text = format!(
            "file = {:?}\norigins = [\"https://api.example.org\"]\nheader = \"Authorization\"\nprefix = \"Bearer \"\n",
            file.display().to_string()
        );
        let made = credential(&text).unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(made.value.to_str().unwrap(), "Bearer s3cret");
        assert!(made.value.is_sensitive());
        assert!(!format!("{made:?}").contains("s3cret"), "{made:?}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(
            credential(&text)
                .unwrap_err()
                .message
                .contains("group or others")
        );
        let e = credential(
            "env = \"TOOLWARDEN_TEST_UNSET_VARIABLE\"\norigins = [\"https://a.org\"]\nheader = \"X-Key\"\n",
        );
        assert!(
            e.unwrap_err()
                .message
                .contains("TOOLWARDEN_TEST_UNSET_VARIABLE")
        );
        assert!(credential("origins = [\"https://a.org\"]\nheader = \"X-Key\"\n").is_err());
        assert!(credential("env = \"HOME\"\norigins = []\nheader = \"X-Key\"\n").is_err());
        assert!(
            credential("env = \"HOME\"\norigins = [\"https://a.org\"]\nheader = \"bad header\"\n")
                .is_err()
        );
    }
}
