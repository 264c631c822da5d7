//! Where a plugin file came from, proven: SHA-256 pins and minisign
//! signatures (Ed25519, the format of the `minisign` tool), and the
//! `[plugins]` section that asks for them.
//!
//! ```toml
//! [plugins]
//! require_signature = true        # every plugin needs NAME.wasm.minisig by a trusted key
//! trusted_keys = ["RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"]
//!
//! [plugins.pins]                  # these files must have exactly these bytes
//! "calc.wasm" = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
//! ```
//!
//! Checked wherever a plugin file is taken in (at start, on hot reload, at
//! install) with the same [`Provenance::check`]; a signature that is there
//! must verify against a trusted key even when none is required. A plain
//! value library over the bytes it is handed: it never reads the plugins
//! directory and never decides what a tool may do.

use crate::settings::SettingError;
use minisign_verify::{PublicKey, Signature};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// Largest signature file read: a minisign signature is about 300 bytes.
pub const MAX_SIGNATURE_BYTES: usize = 4096;

/// The suffix of a signature file beside its component.
pub const SIGNATURE_SUFFIX: &str = ".minisig";

/// The `[plugins]` table as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginsSection {
    #[serde(default)]
    require_signature: bool,
    #[serde(default)]
    trusted_keys: Vec<String>,
    #[serde(default)]
    pins: BTreeMap<String, String>,
}

/// A trusted minisign public key and the id minisign shows for it.
#[derive(Clone)]
struct TrustedKey {
    id: String,
    key: PublicKey,
}

impl fmt::Debug for TrustedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TrustedKey({})", self.id)
    }
}

/// What a plugin file must prove before it loads.
#[derive(Clone, Debug, Default)]
pub struct Provenance {
    require_signature: bool,
    keys: Vec<TrustedKey>,
    /// File name -> SHA-256 (lower-case hex).
    pins: BTreeMap<String, String>,
}

/// The key id minisign prints for a public key (`minisign -V` says
/// "Signature and comment signature verified" and names the key by it):
/// bytes 2..10 of the decoded key, as a little-endian number in hex
/// (without leading zeros, as minisign prints it).
fn key_id(base64_key: &str) -> Option<String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(base64_key.trim())
        .ok()?;
    let id: [u8; 8] = bytes.get(2..10)?.try_into().ok()?;
    Some(format!("{:X}", u64::from_le_bytes(id)))
}

impl PluginsSection {
    pub const KEYS: &str = "require_signature, trusted_keys, pins.\"FILE.wasm\"";

    pub fn resolve(self) -> Result<Provenance, SettingError> {
        let mut keys = Vec::with_capacity(self.trusted_keys.len());
        for text in &self.trusted_keys {
            // The whole public key file (two lines) or just its key line.
            let line = text
                .lines()
                .map(str::trim)
                .rfind(|l| !l.is_empty())
                .unwrap_or_default();
            let (Ok(key), Some(id)) = (PublicKey::from_base64(line), key_id(line)) else {
                return Err(SettingError::new(
                    format!("`plugins.trusted_keys`: `{line}` is not a minisign public key"),
                    "paste the key line of the signer's minisign.pub (it starts with `RW`)",
                ));
            };
            keys.push(TrustedKey { id, key });
        }
        if self.require_signature && keys.is_empty() {
            return Err(SettingError::new(
                "`plugins.require_signature` is true but `plugins.trusted_keys` is empty, so no plugin could load",
                "list the minisign public keys whose signatures you trust",
            ));
        }
        let mut pins = BTreeMap::new();
        for (file, pin) in self.pins {
            let hex = pin
                .trim()
                .trim_start_matches("sha256:")
                .to_ascii_lowercase();
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(SettingError::new(
                    format!("`plugins.pins.\"{file}\"`: `{pin}` is not a SHA-256 (64 hex digits)"),
                    "write the output of `sha256sum FILE.wasm` (or the digest `toolwarden inspect` prints)",
                ));
            }
            pins.insert(file, hex);
        }
        Ok(Provenance {
            require_signature: self.require_signature,
            keys,
            pins,
        })
    }
}

/// Why a plugin file may not load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unproven {
    pub reason: String,
    pub fix: String,
}

/// What a plugin file proved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Proven {
    /// The id of the trusted key that signed it, if it is signed.
    pub signer: Option<String>,
}

impl Provenance {
    /// Whether plugins must prove anything beyond loading.
    pub fn demands(&self) -> bool {
        self.require_signature || !self.pins.is_empty()
    }

    /// Checks the plugin file `file_name` with `bytes` (whose SHA-256 is
    /// `sha256`) and its signature file's text, if there is one.
    pub fn check(
        &self,
        file_name: &str,
        bytes: &[u8],
        sha256: &str,
        signature: Option<&str>,
    ) -> Result<Proven, Unproven> {
        if let Some(pin) = self.pins.get(file_name)
            && pin != sha256
        {
            return Err(Unproven {
                reason: format!("its SHA-256 is {sha256}, not the {pin} it is pinned to"),
                fix: format!(
                    "restore the pinned build, or pin this one in `[plugins.pins]` (\"{file_name}\" = \"{sha256}\") if you trust it"
                ),
            });
        }
        let Some(text) = signature else {
            if self.require_signature {
                return Err(Unproven {
                    reason: format!(
                        "it is not signed (no `{file_name}{SIGNATURE_SUFFIX}` beside it), and `plugins.require_signature` is set"
                    ),
                    fix: format!(
                        "sign it with a trusted key (`minisign -S -m {file_name}`) and put `{file_name}{SIGNATURE_SUFFIX}` beside it (`toolwarden publish` carries it to a registry, `toolwarden install` back)"
                    ),
                });
            }
            return Ok(Proven::default());
        };
        let signature = Signature::decode(text).map_err(|e| Unproven {
            reason: format!("its signature file is not a minisign signature ({e})"),
            fix: format!(
                "replace `{file_name}{SIGNATURE_SUFFIX}` with the signer's signature, or remove it"
            ),
        })?;
        for trusted in &self.keys {
            if trusted.key.verify(bytes, &signature, false).is_ok() {
                return Ok(Proven {
                    signer: Some(trusted.id.clone()),
                });
            }
        }
        Err(Unproven {
            reason: if self.keys.is_empty() {
                "it carries a signature, and no key is trusted to check it".into()
            } else {
                "its signature does not verify with any trusted key: another key signed it, or the file changed after signing".into()
            },
            fix: "add the signer's public key to `plugins.trusted_keys` if you trust them, or get a build signed by a trusted key".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key pair and a signature made by the `minisign` tool 0.11
    /// (`minisign -G -W`, then `minisign -S -m hello.txt` over `hello\n`).
    const PUBLIC: &str = "RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3";

    fn provenance(toml: &str) -> Result<Provenance, SettingError> {
        let section: PluginsSection =
            toml::from_str(toml).map_err(|e| SettingError::new(e.to_string(), ""))?;
        section.resolve()
    }

    #[test]
    fn nothing_is_demanded_by_default() {
        let p = provenance("").unwrap_or_else(|e| panic!("{}", e.message));
        assert!(!p.demands());
        assert_eq!(p.check("a.wasm", b"x", "00", None), Ok(Proven::default()));
    }

    #[test]
    fn a_pin_must_match_and_a_required_signature_must_be_there() {
        let pin = "a".repeat(64);
        let p = provenance(&format!("[pins]\n\"a.wasm\" = \"sha256:{pin}\"\n")).unwrap();
        assert!(p.check("a.wasm", b"x", &pin, None).is_ok());
        assert!(
            p.check("a.wasm", b"x", &"b".repeat(64), None)
                .unwrap_err()
                .reason
                .contains("pinned")
        );
        assert!(
            p.check("other.wasm", b"x", "b", None).is_ok(),
            "a pin binds its own file only"
        );
        let p = provenance(&format!(
            "require_signature = true\ntrusted_keys = [\"{PUBLIC}\"]\n"
        ))
        .unwrap();
        assert!(
            p.check("a.wasm", b"x", "00", None)
                .unwrap_err()
                .reason
                .contains("not signed")
        );
        assert!(
            p.check("a.wasm", b"x", "00", Some("garbage"))
                .unwrap_err()
                .reason
                .contains("not a minisign")
        );
    }

    #[test]
    fn a_signature_by_a_trusted_key_names_its_signer_and_any_other_is_refused() {
        let signer = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let stranger = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let sign = |pair: &minisign::KeyPair, bytes: &[u8]| {
            minisign::sign(
                None,
                &pair.sk,
                std::io::Cursor::new(bytes),
                Some("file:a.wasm"),
                None,
            )
            .unwrap()
            .to_string()
        };
        let public = signer.pk.to_base64();
        let p = provenance(&format!(
            "require_signature = true\ntrusted_keys = [\"{public}\"]\n"
        ))
        .unwrap();
        let proven = p
            .check(
                "a.wasm",
                b"component",
                "00",
                Some(&sign(&signer, b"component")),
            )
            .unwrap();
        assert_eq!(proven.signer, key_id(&public));
        let changed = p.check(
            "a.wasm",
            b"component!",
            "00",
            Some(&sign(&signer, b"component")),
        );
        assert!(changed.unwrap_err().reason.contains("does not verify"));
        let foreign = p.check(
            "a.wasm",
            b"component",
            "00",
            Some(&sign(&stranger, b"component")),
        );
        assert!(foreign.unwrap_err().reason.contains("does not verify"));
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(provenance("require_signature = true\n").is_err());
        assert!(provenance("trusted_keys = [\"not a key\"]\n").is_err());
        assert!(provenance("[pins]\n\"a.wasm\" = \"abc\"\n").is_err());
        assert!(key_id(PUBLIC).is_some_and(|id| !id.is_empty() && id.len() <= 16));
    }
}
