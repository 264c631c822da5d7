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
