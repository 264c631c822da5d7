//! TLS to PostgreSQL, in the words every PostgreSQL user knows (libpq's):
//! `sslmode` = `disable`, `require`, `verify-ca` or `verify-full`, with
//! `sslrootcert` (the CAs to trust, PEM; the system's when not given),
//! `sslcert` and `sslkey` (a client certificate, PEM). The files are read
//! when the config is, so a missing or broken one is a config error.
//!
//! Unlike libpq, there is no `prefer` or `allow` (a connection that may
//! silently go without TLS): without `sslmode`, a loopback address or a
//! Unix socket is reached without TLS and any other address with
//! `verify-full`, the only mode a database on another machine is reached
//! with (anything less lets whoever is on the path read the traffic or
//! stand in for the server).

use crate::settings::SettingError;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The parameters read here, from the URL or `[store]`.
pub(super) const KEYS: [&str; 4] = ["sslmode", "sslrootcert", "sslcert", "sslkey"];

/// How the server is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SslMode {
    Disable,
    /// Encrypted; the server's certificate is not checked.
    Require,
    /// Encrypted, the certificate signed by a trusted CA, for any name.
    VerifyCa,
    /// Encrypted, the certificate signed by a trusted CA for the host named.
    VerifyFull,
}

impl SslMode {
    fn parse(text: &str) -> Result<SslMode, SettingError> {
        match text {
            "disable" => Ok(SslMode::Disable),
            "require" => Ok(SslMode::Require),
            "verify-ca" => Ok(SslMode::VerifyCa),
            "verify-full" => Ok(SslMode::VerifyFull),
            "prefer" | "allow" => Err(SettingError::new(
                format!("`sslmode={text}` may connect without TLS and no one would know"),
                "choose `verify-full` (or `disable` on loopback, where nothing is on the path)",
            )),
            other => Err(SettingError::new(
                format!("`sslmode={other}` is not a TLS mode"),
                "write `disable`, `require`, `verify-ca` or `verify-full`",
            )),
        }
    }

    pub(super) fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// The TLS parameters as written (each at most once).
#[derive(Debug, Default)]
pub(super) struct Written {
    pub sslmode: Option<String>,
    pub sslrootcert: Option<PathBuf>,
    pub sslcert: Option<PathBuf>,
    pub sslkey: Option<PathBuf>,
}

impl Written {
    /// Sets `key` (one of [`KEYS`]) once.
    pub(super) fn set(&mut self, key: &str, value: String) -> Result<(), SettingError> {
        let slot_taken = match key {
            "sslmode" => self.sslmode.replace(value).is_some(),
            "sslrootcert" => self.sslrootcert.replace(value.into()).is_some(),
            "sslcert" => self.sslcert.replace(value.into()).is_some(),
            _ => self.sslkey.replace(value.into()).is_some(),
        };
        if slot_taken {
            return Err(SettingError::new(
                format!("`{key}` is given twice"),
                format!("set `{key}` once: in the store URL or in `[store]`, not both"),
            ));
        }
        Ok(())
    }
}

/// How connections to the store are made.
#[derive(Clone)]
pub(super) struct Tls {
    pub mode: SslMode,
    /// `None` for [`SslMode::Disable`].
    pub connector: Option<MakeRustlsConnect>,
}

impl Tls {
    /// The TLS `written` asks for, for a store on `remote` (not loopback)
    /// hosts or not.
    pub(super) fn resolve(written: Written, remote: Option<&str>) -> Result<Tls, SettingError> {
        let mode = match (written.sslmode.as_deref(), remote) {
            (Some(text), _) => SslMode::parse(text)?,
            (None, Some(_)) => SslMode::VerifyFull,
            (None, None) => SslMode::Disable,
        };
        if let Some(host) = remote
            && mode != SslMode::VerifyFull
        {
            return Err(SettingError::new(
                format!(
                    "the store is on `{host}`, another machine, with `sslmode={}`",
                    mode.as_str()
                ),
                "reach a database on another machine with `sslmode=verify-full` (the default \
                 there), so the server is the one named and no one on the path can read along",
            ));
        }
        if mode == SslMode::Disable {
            if written.sslrootcert.is_some() || written.sslcert.is_some() {
                return Err(SettingError::new(
                    "certificates are given with `sslmode=disable`",
                    "choose an `sslmode` that uses them (`verify-full`), or remove them",
                ));
            }
            return Ok(Tls {
                mode,
                connector: None,
            });
        }
        let config = client_config(mode, &written)?;
        Ok(Tls {
            mode,
            connector: Some(MakeRustlsConnect::new(config)),
        })
    }
}

fn client_config(mode: SslMode, written: &Written) -> Result<ClientConfig, SettingError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error(&e.to_string()))?;
    let lenient = |chain| {
        Arc::new(Lenient {
            chain,
            provider: Arc::clone(&provider),
        })
    };
    let builder = match mode {
        SslMode::Require => builder
            .dangerous()
            .with_custom_certificate_verifier(lenient(None)),
        _ => {
            let roots = Arc::new(roots(written.sslrootcert.as_deref())?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(&provider))
                .build()
                .map_err(|e| tls_error(&e.to_string()))?;
            if mode == SslMode::VerifyCa {
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(lenient(Some(webpki)))
            } else {
                builder.with_webpki_verifier(webpki)
            }
        }
    };
    match (&written.sslcert, &written.sslkey) {
        (None, None) => Ok(builder.with_no_client_auth()),
        (Some(cert), Some(key)) => {
            let chain = certificates(cert, "sslcert")?;
            let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                SettingError::new(
                    format!(
                        "cannot read the client key `sslkey` `{}`: {e}",
                        key.display()
                    ),
                    "name a PEM private key (PKCS#8, PKCS#1 or SEC1) readable by this user",
                )
            })?;
            builder.with_client_auth_cert(chain, key).map_err(|e| {
                SettingError::new(
                    format!("the client certificate and key do not go together: {e}"),
                    "`sslcert` and `sslkey` must be the two halves of one certificate",
                )
            })
        }
        _ => Err(SettingError::new(
            "only one of `sslcert` and `sslkey` is given",
            "a client certificate needs both: the certificate and its private key",
        )),
    }
}

fn tls_error(message: &str) -> SettingError {
    SettingError::new(
        format!("cannot set up TLS to the store: {message}"),
        "check the store's TLS settings",
    )
}

fn certificates(path: &Path, key: &str) -> Result<Vec<CertificateDer<'static>>, SettingError> {
    let unreadable = |e: &dyn std::fmt::Display| {
        SettingError::new(
            format!("cannot read `{key}` `{}`: {e}", path.display()),
            "name a PEM file of certificates readable by this user",
        )
    };
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|e| unreadable(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unreadable(&e))?;
    if certificates.is_empty() {
        return Err(unreadable(&"it holds no certificate"));
    }
    Ok(certificates)
}

/// The CAs `sslrootcert` names, or the system's.
fn roots(sslrootcert: Option<&Path>) -> Result<RootCertStore, SettingError> {
    let mut roots = RootCertStore::empty();
    match sslrootcert {
        Some(path) => {
            for certificate in certificates(path, "sslrootcert")? {
                roots.add(certificate).map_err(|e| {
                    SettingError::new(
                        format!(
                            "`sslrootcert` `{}` holds a certificate rustls refuses: {e}",
                            path.display()
                        ),
                        "name the PEM file of the CA that signed the server's certificate",
                    )
                })?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
        }
    }
    if roots.is_empty() {
        return Err(SettingError::new(
            "no CA to check the store's certificate against",
            "name the CA's PEM file with `sslrootcert`",
        ));
    }
    Ok(roots)
}

/// `verify-ca` and `require`: what `verify-full` checks, less the name
/// (`verify-ca`, `chain` set) or the whole certificate (`require`, as libpq
/// without a root file). The handshake's signatures are checked either way.
#[derive(Debug)]
struct Lenient {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            checked => checked,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Why a connection failed, in words that say what to do when it was the
/// server's certificate; other failures as PostgreSQL reported them.
pub(super) fn explain(error: tokio_postgres::Error) -> super::SharedError {
    let message = match refused_certificate(&error) {
        Some(why) => format!("{error}: {why}"),
        None => return super::SharedError::Postgres(error),
    };
    super::SharedError::Setup(message)
}

/// What was wrong with the server's certificate, if that was the failure.
fn refused_certificate(error: &tokio_postgres::Error) -> Option<&'static str> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        let rustls = e.downcast_ref::<rustls::Error>().or_else(|| {
            e.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(rustls::Error::InvalidCertificate(why)) = rustls {
            return Some(match why {
                CertificateError::UnknownIssuer | CertificateError::BadSignature => {
                    "the server's certificate is not signed by a CA `sslrootcert` trusts"
                }
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => {
                    "the server's certificate is not for the host the store URL names \
                     (`verify-full` checks the name; connect by the name on the certificate)"
                }
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    "the server's certificate has expired"
                }
                _ => "the server's certificate was not accepted",
            });
        }
        source = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(mode: Option<&str>, remote: Option<&str>) -> Result<SslMode, SettingError> {
        let written = Written {
            sslmode: mode.map(str::to_owned),
            ..Written::default()
        };
        Tls::resolve(written, remote).map(|tls| tls.mode)
    }

    #[test]
    fn another_machine_is_reached_with_verify_full_only() {
        assert_eq!(resolve(None, None).unwrap(), SslMode::Disable);
        assert_eq!(resolve(Some("require"), None).unwrap(), SslMode::Require);
        for weaker in ["disable", "require", "verify-ca"] {
            let e = resolve(Some(weaker), Some("db.example.com")).unwrap_err();
            assert!(e.message.contains("db.example.com") && e.hint.contains("verify-full"));
        }
        for silent in ["prefer", "allow"] {
            assert!(resolve(Some(silent), None).is_err(), "{silent}");
        }
        assert!(resolve(Some("verify_full"), None).is_err());
    }

    #[test]
    fn certificates_are_read_at_load_and_go_in_pairs() {
        let mut written = Written::default();
        written.set("sslmode", "disable".into()).unwrap();
        assert!(written.set("sslmode", "require".into()).is_err(), "twice");
        let missing = Written {
            sslmode: Some("verify-full".into()),
            sslrootcert: Some("/nonexistent/ca.pem".into()),
            ..Written::default()
        };
        let e = Tls::resolve(missing, None).err().unwrap();
        assert!(e.message.contains("/nonexistent/ca.pem"), "{}", e.message);
        let half = Written {
            sslmode: Some("require".into()),
            sslcert: Some("/nonexistent/client.pem".into()),
            ..Written::default()
        };
        let e = Tls::resolve(half, None).err().unwrap();
        assert!(e.message.contains("only one of"), "{}", e.message);
    }
}
