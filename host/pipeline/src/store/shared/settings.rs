//! Where the shared store is and how to log in, checked: a PostgreSQL URL
//! to a loopback address or a Unix socket, without a password. The
//! password comes from a file or the environment, never from the URL, and
//! is never shown.

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
    pub(super) shown: String,
}

impl std::fmt::Debug for SharedSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl SharedSettings {
    pub(super) fn new(
        url: &str,
        password_file: Option<PathBuf>,
    ) -> Result<SharedSettings, SettingError> {
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
