//! Where the shared store is and how to log in, checked: a PostgreSQL URL
//! without a password, to a loopback address or a Unix socket, or to
//! another machine over TLS that checks the server (`tls`). The password
//! comes from a file or the environment, never from the URL, and is never
//! shown.

use super::section::Access;
use super::tls::{self, SslMode, Tls};
use crate::settings::SettingError;
use std::path::PathBuf;
use std::str::FromStr;
use tokio_postgres::Config;
use tokio_postgres::config::Host;

/// The store's password, when `[store] password_file` is not set.
pub(super) const PASSWORD_ENV: &str = "TOOLWARDEN_STORE_PASSWORD";

/// Where the shared store is and how to log in.
#[derive(Clone)]
pub struct SharedSettings {
    pub(super) config: Config,
    pub(super) password_file: Option<PathBuf>,
    pub(super) tls: Tls,
    pub(super) shown: String,
}

impl std::fmt::Debug for SharedSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl SharedSettings {
    pub(super) fn new(url: &str, access: Access) -> Result<SharedSettings, SettingError> {
        let mut written = tls::Written::default();
        let url = take_tls_parameters(url, &mut written)?;
        for (key, value) in access.tls {
            written.set(key, value)?;
        }
        let mut config = Config::from_str(&url).map_err(|e| {
            SettingError::new(
                format!("the store URL is not a PostgreSQL URL: {e}"),
                "write it as postgres://USER@HOST:PORT/DB (or with host=/path/to/socket/dir)",
            )
        })?;
        if config.get_password().is_some() {
            return Err(SettingError::new(
                "the store URL holds a password",
                format!(
                    "URLs end up in shell histories and logs: put the password in a file named by \
                     `[store] password_file`, or in {PASSWORD_ENV}"
                ),
            ));
        }
        let hosts = config.get_hosts();
        if hosts.is_empty() {
            return Err(SettingError::new(
                "the store URL names no host",
                "name a loopback address or a Unix socket directory",
            ));
        }
        let remote = hosts.iter().find_map(|host| match host {
            Host::Tcp(name) if !is_loopback(name) => Some(name.clone()),
            _ => None,
        });
        let tls = Tls::resolve(written, remote.as_deref())?;
        config.ssl_mode(match tls.mode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            _ => tokio_postgres::config::SslMode::Require,
        });
        let shown = shown(&config, tls.mode);
        Ok(SharedSettings {
            config,
            password_file: access.password_file,
            tls,
            shown,
        })
    }

    /// The URL without its password, for messages.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

pub(super) fn is_loopback(name: &str) -> bool {
    name == "localhost"
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `url` without the TLS parameters, which go into `written`: in a URL's
/// query (`?sslmode=verify-full&sslrootcert=...`) or among `key=value`
/// words.
fn take_tls_parameters(url: &str, written: &mut tls::Written) -> Result<String, SettingError> {
    let ours = |key: &str| tls::KEYS.contains(&key);
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let Some((base, query)) = url.split_once('?') else {
            return Ok(url.to_owned());
        };
        let mut kept = url::form_urlencoded::Serializer::new(String::new());
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            if ours(&key) {
                written.set(&key, value.into_owned())?;
            } else {
                kept.append_pair(&key, &value);
            }
        }
        let kept = kept.finish();
        return Ok(if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{kept}")
        });
    }
    let mut kept = Vec::new();
    for word in url.split_whitespace() {
        match word.split_once('=') {
            Some((key, value)) if ours(key) => {
                if value.starts_with('\'') {
                    return Err(SettingError::new(
                        format!("`{key}` is quoted in the store URL"),
                        format!("give `{key}` in `[store]` instead"),
                    ));
                }
                written.set(key, value.to_owned())?;
            }
            _ => kept.push(word),
        }
    }
    Ok(kept.join(" "))
}

pub(super) fn shown(config: &Config, mode: SslMode) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let tls = match mode {
        SslMode::Disable => String::new(),
        mode => format!("?sslmode={}", mode.as_str()),
    };
    format!(
        "postgres://{}@{}:{port}/{}{tls}",
        config.get_user().unwrap_or(""),
        hosts.join(","),
        config.get_dbname().unwrap_or("")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str) -> SettingError {
        match SharedSettings::new(url, Access::default()) {
            Ok(settings) => panic!("{url} was accepted as {settings:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn loopback_and_socket_urls_are_accepted_and_shown_without_a_password() {
        for (url, shown) in [
            (
                "postgres://tw@127.0.0.1:5433/book",
                "postgres://tw@127.0.0.1:5433/book",
            ),
            (
                "postgres://tw@localhost/book",
                "postgres://tw@localhost:5432/book",
            ),
            ("postgres://tw@[::1]:7/b", "postgres://tw@::1:7/b"),
            (
                "host=/run/postgresql user=tw dbname=b",
                "postgres://tw@/run/postgresql:5432/b",
            ),
        ] {
            let settings = SharedSettings::new(url, Access::default())
                .unwrap_or_else(|e| panic!("{url}: {}", e.message));
            assert_eq!(settings.shown(), shown);
        }
    }

    #[test]
    fn tls_parameters_are_read_from_the_url_and_the_rest_left_to_postgres() {
        let mut written = tls::Written::default();
        let rest = take_tls_parameters(
            "postgres://tw@db/b?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem",
            &mut written,
        )
        .unwrap();
        assert_eq!(rest, "postgres://tw@db/b?application_name=x");
        assert_eq!(written.sslmode.as_deref(), Some("verify-full"));
        assert_eq!(written.sslrootcert, Some(PathBuf::from("/etc/ca.pem")));
        let mut written = tls::Written::default();
        let rest = take_tls_parameters("host=db user=tw sslmode=require", &mut written).unwrap();
        assert_eq!(rest, "host=db user=tw");
        assert_eq!(written.sslmode.as_deref(), Some("require"));
        let settings = SharedSettings::new(
            "postgres://tw@127.0.0.1:5433/book?sslmode=require",
            Access::default(),
        )
        .unwrap();
        assert_eq!(
            settings.shown(),
            "postgres://tw@127.0.0.1:5433/book?sslmode=require"
        );
    }

    #[test]
    fn a_password_a_remote_host_or_a_bad_url_is_refused_with_what_to_do() {
        let e = refused("postgres://tw:s3cret@127.0.0.1/book");
        assert!(e.message.contains("holds a password"), "{}", e.message);
        assert!(!e.message.contains("s3cret") && !e.hint.contains("s3cret"));
        assert!(e.hint.contains("password_file"));
        let e = refused("postgres://tw@db.example.com/book?sslmode=require");
        assert!(e.message.contains("db.example.com") && e.hint.contains("verify-full"));
        let e = refused("host=10.0.0.5 user=tw sslmode=disable");
        assert!(e.message.contains("another machine"), "{}", e.message);
        let e = refused("postgres://tw@127.0.0.1/book?sslmode=require&sslmode=disable");
        assert!(e.message.contains("twice"), "{}", e.message);
        let e = refused("mysql://tw@127.0.0.1/book");
        assert!(e.message.contains("not a PostgreSQL URL"), "{}", e.message);
    }
}
