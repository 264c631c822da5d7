//! Who the registry is told we are, and how it is reached: credentials
//! given by the person or found in `~/.docker/config.json`, and plain
//! `http` only to loopback registries unless the person says otherwise.

use oci_client::secrets::RegistryAuth;

/// Who the registry is told we are, and how to reach it.
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// Credentials given on the command line, if any; otherwise those of
    /// `~/.docker/config.json` for the registry, otherwise none.
    pub credentials: Option<RegistryAuth>,
    /// Plain `http` to this registry even though it is not on loopback.
    pub insecure: bool,
}

pub(super) fn is_loopback(registry: &str) -> bool {
    let host = registry
        .rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(registry, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `user:password` from `~/.docker/config.json` for `registry`, if there.
pub(super) fn docker_credentials(registry: &str) -> Option<RegistryAuth> {
    use base64::Engine;
    let home = std::env::var_os("DOCKER_CONFIG")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".docker"))
        })?;
    let text = std::fs::read_to_string(home.join("config.json")).ok()?;
    let config: serde_json::Value = serde_json::from_str(&text).ok()?;
    let entry = config["auths"]
        .as_object()?
        .iter()
        .find(|(key, _)| {
            key.trim_start_matches("https://")
                .trim_start_matches("http://")
                .trim_end_matches('/')
                == registry
        })?
        .1;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(entry["auth"].as_str()?)
        .ok()?;
    let (user, password) = std::str::from_utf8(&decoded).ok()?.split_once(':')?;
    Some(RegistryAuth::Basic(user.to_owned(), password.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::is_loopback;

    #[test]
    fn only_loopback_registries_are_reached_over_plain_http_by_default() {
        for local in [
            "127.0.0.1:5000",
            "localhost:5000",
            "localhost",
            "[::1]:5000",
            "127.1.2.3",
        ] {
            assert!(is_loopback(local), "{local}");
        }
        for remote in [
            "ghcr.io",
            "10.0.0.1:5000",
            "localhost.evil.com",
            "registry:5000",
        ] {
            assert!(!is_loopback(remote), "{remote}");
        }
    }
}
