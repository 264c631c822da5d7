//! The `[store]` table: where the shared store is and how to log in. The
//! password comes from a file or the environment, never from the URL, and
//! is never shown.

use crate::settings::SettingError;
use serde::Deserialize;
use std::path::PathBuf;
use std::str::FromStr;
use tokio_postgres::Config;
use tokio_postgres::config::Host;

/// The URL of the shared store, overriding `[store] url`.
pub(super) const URL_ENV: &str = "TOOLWARDEN_STORE_URL";
/// Its password, when `[store] password_file` is not set.
pub(super) const PASSWORD_ENV: &str = "TOOLWARDEN_STORE_PASSWORD";

/// The `[store]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSection {
    url: Option<String>,
    password_file: Option<PathBuf>,
}

impl StoreSection {
    pub const KEYS: &str = "url, password_file";

    /// The shared store the section (or [`URL_ENV`]) names, if any.
    pub fn resolve(self) -> Result<Option<SharedSettings>, SettingError> {
        let url = std::env::var(URL_ENV).ok().filter(|u| !u.is_empty());
        match url.or(self.url) {
            None if self.password_file.is_some() => Err(SettingError::new(
                "`[store] password_file` is set but no `url`",
                format!(
                    "add `url = \"postgres://USER@HOST:PORT/DB\"` to `[store]`, or set {URL_ENV}"
                ),
            )),
            None => Ok(None),
            Some(url) => SharedSettings::new(&url, self.password_file).map(Some),
        }
    }

    /// No `[store]` table: the environment may still name one.
    pub fn absent() -> Result<Option<SharedSettings>, SettingError> {
        StoreSection {
            url: None,
            password_file: None,
        }
        .resolve()
    }
}

/// Where the shared store is and how to log in.
#[derive(Clone)]
pub struct SharedSettings {
    pub(super) config: Config,
    pub(super) password_file: Option<PathBuf>,
    pub(super) shown: String,
}

impl std::fmt::Debug for SharedSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl SharedSettings {
    fn new(url: &str, password_file: Option<PathBuf>) -> Result<SharedSettings, SettingError> {
        let config = Config::from_str(url).map_err(|e| {
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
        for host in hosts {
            if let Host::Tcp(name) = host
                && !is_loopback(name)
            {
                return Err(SettingError::new(
                    format!("the store URL names `{name}`, which is not a loopback address"),
                    "toolwarden does not speak TLS to PostgreSQL yet: reach the database through \
                     a Unix socket or a loopback address (an SSH or TLS tunnel to a remote one)",
                ));
            }
        }
        let shown = shown(&config);
        Ok(SharedSettings {
            config,
            password_file,
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

pub(super) fn shown(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "postgres://{}@{}:{port}/{}",
        config.get_user().unwrap_or(""),
        hosts.join(","),
        config.get_dbname().unwrap_or("")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str) -> SettingError {
        match SharedSettings::new(url, None) {
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
            let settings =
                SharedSettings::new(url, None).unwrap_or_else(|e| panic!("{url}: {}", e.message));
            assert_eq!(settings.shown(), shown);
        }
    }

    #[test]
    fn a_password_a_remote_host_or_a_bad_url_is_refused_with_what_to_do() {
        let e = refused("postgres://tw:s3cret@127.0.0.1/book");
        assert!(e.message.contains("holds a password"), "{}", e.message);
        assert!(!e.message.contains("s3cret") && !e.hint.contains("s3cret"));
        assert!(e.hint.contains("password_file"));
        let e = refused("postgres://tw@db.example.com/book");
        assert!(e.message.contains("db.example.com") && e.hint.contains("TLS"));
        let e = refused("postgres://tw@10.0.0.5/book");
        assert!(e.message.contains("not a loopback"));
        let e = refused("mysql://tw@127.0.0.1/book");
        assert!(e.message.contains("not a PostgreSQL URL"), "{}", e.message);
    }
}
