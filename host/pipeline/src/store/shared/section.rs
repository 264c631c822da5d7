//! The `[store]` table as written, and the environment that overrides it.
//! Read with or without the `postgres` feature, so that a build without it
//! refuses a config naming a shared store instead of ignoring it.

use super::SharedSettings;
use crate::settings::SettingError;
use serde::Deserialize;
use std::path::PathBuf;

/// The URL of the shared store, overriding `[store] url`.
pub(super) const URL_ENV: &str = "TOOLWARDEN_STORE_URL";

/// The `[store]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSection {
    url: Option<String>,
    password_file: Option<PathBuf>,
    sslmode: Option<String>,
    sslrootcert: Option<String>,
    sslcert: Option<String>,
    sslkey: Option<String>,
}

/// How to log in to the store, besides its URL: the password's file, and
/// TLS parameters (`sslmode`, ...) given as keys rather than in the URL.
// A build without PostgreSQL refuses every `url` before reading the rest.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
#[derive(Debug, Default)]
pub(super) struct Access {
    pub password_file: Option<PathBuf>,
    pub tls: Vec<(&'static str, String)>,
}

impl StoreSection {
    pub const KEYS: &str = "url, password_file, sslmode, sslrootcert, sslcert, sslkey";

    /// The shared store the section (or [`URL_ENV`]) names, if any.
    pub fn resolve(self) -> Result<Option<SharedSettings>, SettingError> {
        let url = std::env::var(URL_ENV).ok().filter(|u| !u.is_empty());
        let tls: Vec<(&'static str, String)> = [
            ("sslmode", self.sslmode),
            ("sslrootcert", self.sslrootcert),
            ("sslcert", self.sslcert),
            ("sslkey", self.sslkey),
        ]
        .into_iter()
        .filter_map(|(key, value)| Some((key, value?)))
        .collect();
        match url.or(self.url) {
            None if self.password_file.is_some() || !tls.is_empty() => Err(SettingError::new(
                "`[store]` says how to log in but names no `url`",
                format!(
                    "add `url = \"postgres://USER@HOST:PORT/DB\"` to `[store]`, or set {URL_ENV}"
                ),
            )),
            None => Ok(None),
            Some(url) => SharedSettings::new(
                &url,
                Access {
                    password_file: self.password_file,
                    tls,
                },
            )
            .map(Some),
        }
    }

    /// No `[store]` table: the environment may still name one.
    pub fn absent() -> Result<Option<SharedSettings>, SettingError> {
        StoreSection {
            url: None,
            password_file: None,
            sslmode: None,
            sslrootcert: None,
            sslcert: None,
            sslkey: None,
        }
        .resolve()
    }
}

#[cfg(all(test, not(feature = "postgres")))]
mod tests {
    use super::*;

    #[test]
    fn a_build_without_postgres_refuses_a_store_url_and_says_what_to_do() {
        let section: StoreSection =
            toml::from_str("url = \"postgres://tw@127.0.0.1/book\"").unwrap();
        let Err(e) = section.resolve() else {
            panic!("a store URL was accepted by a build that cannot reach it")
        };
        assert!(e.message.contains("without PostgreSQL"), "{}", e.message);
        assert!(e.hint.contains("remove `[store]`") && e.hint.contains("postgres"));
        let empty: StoreSection = toml::from_str("").unwrap();
        assert!(matches!(empty.resolve(), Ok(None)));
    }
}
