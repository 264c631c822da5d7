//! Components in OCI registries. Pushed in the Wasm OCI artifact format that
//! wasm-pkg-tools (`wkg`) and Wassette use: a manifest whose config has the
//! media type `application/vnd.wasm.config.v0+json` and whose one layer is
//! the component (`application/wasm`, titled with the file's name so `oras
//! pull` writes a named file). Pulled in that format and the others the
//! common tools push ([`component_layer`]): `oras push x.wasm:application/wasm`
//! with oras's default config, and OCI 1.1 artifacts with an
//! `artifactType` and the empty config. A minisign signature travels as a
//! second artifact whose `subject` is the component's manifest (OCI 1.1
//! referrers); for registries without the referrers API it is also listed
//! in the fallback index at the tag `sha256-<digest>`.
//!
//! Talks to registries through `oci-client`; every blob is checked against
//! its digest, and a layer is refused before it is fetched when its
//! manifest says it is larger than a plugin may be. Plain `http` only for
//! loopback registries unless the caller says otherwise.

mod access;
mod formats;

pub use access::Access;
use access::{docker_credentials, is_loopback};
use bytes::Bytes;
use formats::{EMPTY_CONFIG, IMAGE_INDEX, component_layer};
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::{
    ImageIndexEntry, OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageIndex, OciImageManifest,
};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use std::pin::Pin;
use std::task::{Context, Poll};

pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
pub const WASM_LAYER: &str = "application/wasm";
/// The artifact type (and layer media type) of a minisign signature.
pub const SIGNATURE_ARTIFACT: &str = "application/vnd.dev.minisign.signature";
/// The layer annotation `oras pull` names the file it writes after.
const TITLE: &str = "org.opencontainers.image.title";
/// A minisign signature is a few hundred bytes.
const MAX_SIGNATURE_BLOB: usize = 4096;

/// A component as a registry holds it.
pub struct Pulled {
    pub bytes: Vec<u8>,
    /// The manifest's digest.
    pub digest: String,
    /// The signature's text, if the component has one.
    pub signature: Option<String>,
    /// How the component was packaged, for the person to read.
    pub format: String,
}

pub struct Registry {
    client: Client,
    auth: RegistryAuth,
}

impl Registry {
    /// A client for the registry `reference` names.
    pub fn new(reference: &Reference, access: &Access) -> Registry {
        // reqwest is built without a crypto provider of its own: it uses
        // the process's, which is ring, as the host's own TLS does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let registry = reference.resolve_registry().to_owned();
        let protocol = if is_loopback(&registry) || access.insecure {
            ClientProtocol::HttpsExcept(vec![registry.clone()])
        } else {
            ClientProtocol::Https
        };
        let client = Client::new(ClientConfig {
            protocol,
            connect_timeout: Some(std::time::Duration::from_secs(10)),
            read_timeout: Some(std::time::Duration::from_secs(60)),
            ..ClientConfig::default()
        });
        let auth = access
            .credentials
            .clone()
            .or_else(|| docker_credentials(&registry))
            .unwrap_or(RegistryAuth::Anonymous);
        Registry { client, auth }
    }

    /// The component at `reference`, no larger than `max_bytes`, with its
    /// signature if the registry holds one.
    /// `progress` hears the bytes of the component received so far, and how
    /// many there are.
    pub async fn pull(
        &self,
        reference: &Reference,
        max_bytes: u64,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Pulled, String> {
        let (manifest, digest) = self
            .client
            .pull_image_manifest(reference, &self.auth)
            .await
            .map_err(|e| format!("cannot read the manifest of `{reference}`: {e}"))?;
        let (layer, format) = component_layer(&manifest)
            .map_err(|why| format!("`{reference}` cannot be installed: {why}"))?;
        if layer.size < 0 || layer.size as u64 > max_bytes {
            return Err(format!(
                "`{reference}`'s component is {} bytes; plugins may be at most {max_bytes}",
                layer.size
            ));
        }
        let bytes = self
            .blob(reference, layer, max_bytes as usize, progress)
            .await?;
        let pinned = reference.clone_with_digest(digest.clone());
        let signature = self.signature(&pinned).await?;
        Ok(Pulled {
            bytes,
            digest,
            signature,
            format,
        })
    }

    async fn blob(
        &self,
        reference: &Reference,
        layer: &OciDescriptor,
        max: usize,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Vec<u8>, String> {
        let mut out = Bounded {
            bytes: Vec::with_capacity(layer.size.clamp(0, max as i64) as usize),
            max,
            expected: layer.size.max(0) as u64,
            progress,
        };
        self.client
            .pull_blob(reference, layer, &mut out)
            .await
            .map_err(|e| format!("cannot fetch `{}` of `{reference}`: {e}", layer.digest))?;
        Ok(out.bytes)
    }

    /// The minisign signature referring to the manifest `pinned` names.
    async fn signature(&self, pinned: &Reference) -> Result<Option<String>, String> {
        let referrers = self
            .client
            .pull_referrers(pinned, Some(SIGNATURE_ARTIFACT))
            .await
            .map_err(|e| format!("cannot list what refers to `{pinned}`: {e}"))?;
        let Some(entry) = referrers.manifests.first() else {
            return Ok(None);
        };
        let at = pinned.clone_with_digest(entry.digest.clone());
        let (manifest, _) = self
            .client
            .pull_image_manifest(&at, &self.auth)
            .await
            .map_err(|e| format!("cannot read the signature manifest `{at}`: {e}"))?;
        let Some(layer) = manifest.layers.first() else {
            return Ok(None);
        };
        let bytes = self
            .blob(&at, layer, MAX_SIGNATURE_BLOB, &|_, _| {})
            .await?;
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| format!("the signature `{at}` is not text"))
    }

    /// Pushes `component` (and `signature`, if given) to `reference`;
    /// returns the component manifest's digest.
    pub async fn push(
        &self,
        reference: &Reference,
        component: Vec<u8>,
        title: Option<&str>,
        signature: Option<String>,
    ) -> Result<String, String> {
        let layer_digest = sha256(&component);
        let config = serde_json::json!({
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [layer_digest],
        });
        let (digest, size) = self
            .push_artifact(
                reference,
                (Bytes::from(config.to_string()), WASM_CONFIG),
                (Bytes::from(component), WASM_LAYER),
                title,
                None,
            )
            .await
            .map_err(|e| format!("cannot push `{reference}`: {e}"))?;
        if let Some(signature) = signature {
            let subject = OciDescriptor {
                media_type: OCI_IMAGE_MEDIA_TYPE.to_owned(),
                digest: digest.clone(),
                size,
                ..OciDescriptor::default()
            };
            self.push_signature(reference, subject, signature).await?;
        }
        Ok(digest)
    }

    /// Pushes one artifact (a config and one layer) and its manifest, as
    /// the exact bytes whose digest it returns (with the manifest's size).
    /// Tagged when `reference` has a tag, by digest otherwise.
    async fn push_artifact(
        &self,
        reference: &Reference,
        config: (Bytes, &str),
        layer: (Bytes, &str),
        title: Option<&str>,
        subject: Option<OciDescriptor>,
    ) -> Result<(String, i64), String> {
        self.client
            .store_auth_if_needed(reference.resolve_registry(), &self.auth)
            .await;
        let mut descriptors = Vec::with_capacity(2);
        for (data, media_type) in [config, layer] {
            let digest = sha256(&data);
            descriptors.push(OciDescriptor {
                media_type: media_type.to_owned(),
                digest: digest.clone(),
                size: data.len() as i64,
                ..OciDescriptor::default()
            });
            self.client
                .push_blob(reference, data, &digest)
                .await
                .map_err(|e| e.to_string())?;
        }
        let mut layer = descriptors.pop().ok_or("no layer")?;
        layer.annotations =
            title.map(|title| std::iter::once((TITLE.to_owned(), title.to_owned())).collect());
        let config = descriptors.pop().ok_or("no config")?;
        let artifact_type = subject.as_ref().map(|_| SIGNATURE_ARTIFACT.to_owned());
        let manifest = OciImageManifest {
            schema_version: 2,
            media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_owned()),
            config,
            layers: vec![layer],
            subject,
            artifact_type,
            annotations: None,
        };
        let bytes = serde_json::to_vec(&manifest).map_err(|e| e.to_string())?;
        let digest = sha256(&bytes);
        let size = bytes.len() as i64;
        let target = match reference.tag() {
            Some(_) if manifest.subject.is_none() => reference.clone(),
            Some(_) | None => reference.clone_with_digest(digest.clone()),
        };
        self.client
            .push_manifest_raw(
                &target,
                bytes,
                http::HeaderValue::from_static(OCI_IMAGE_MEDIA_TYPE),
            )
            .await
            .map_err(|e| e.to_string())?;
        Ok((digest, size))
    }

    async fn push_signature(
        &self,
        reference: &Reference,
        subject: OciDescriptor,
        signature: String,
    ) -> Result<(), String> {
        // The empty config OCI 1.1 defines for artifacts that need none.
        let (digest, size) = self
            .push_artifact(
                reference,
                (Bytes::from_static(b"{}"), EMPTY_CONFIG),
                (Bytes::from(signature), SIGNATURE_ARTIFACT),
                None,
                Some(subject.clone()),
            )
            .await
            .map_err(|e| format!("cannot push the signature of `{reference}`: {e}"))?;
        // The referrers tag schema, for registries without the referrers API.
        let fallback = Reference::with_tag(
            reference.registry().to_owned(),
            reference.repository().to_owned(),
            subject.digest.replace(':', "-"),
        );
        let mut index = self
            .client
            .pull_referrers(&reference.clone_with_digest(subject.digest.clone()), None)
            .await
            .unwrap_or(OciImageIndex {
                schema_version: 2,
                media_type: None,
                manifests: Vec::new(),
                artifact_type: None,
                annotations: None,
            });
        index.schema_version = 2;
        index.media_type = Some(IMAGE_INDEX.to_owned());
        index.manifests.retain(|m| m.digest != digest);
        index.manifests.push(ImageIndexEntry {
            media_type: OCI_IMAGE_MEDIA_TYPE.to_owned(),
            digest,
            size,
            platform: None,
            annotations: None,
            artifact_type: Some(SIGNATURE_ARTIFACT.to_owned()),
        });
        self.client
            .push_manifest_list(&fallback, &self.auth, index)
            .await
            .map(drop)
            .map_err(|e| {
                format!("cannot list the signature of `{reference}` under `{fallback}`: {e}")
            })
    }
}

fn sha256(bytes: &[u8]) -> String {
    format!(
        "sha256:{}",
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes))
    )
}

/// A sink that refuses more than `max` bytes, so a registry that sends
/// more than it declared cannot grow the host, and reports how far it got.
struct Bounded<'a> {
    bytes: Vec<u8>,
    max: usize,
    expected: u64,
    progress: &'a (dyn Fn(u64, u64) + Sync),
}

impl tokio::io::AsyncWrite for Bounded<'_> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.bytes.len() + buf.len() > self.max {
            return Poll::Ready(Err(std::io::Error::other(format!(
                "more than the {} bytes a plugin may be",
                self.max
            ))));
        }
        self.bytes.extend_from_slice(buf);
        (self.progress)(self.bytes.len() as u64, self.expected);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
