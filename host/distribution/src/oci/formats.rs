//! Which manifests hold a component: the Wasm OCI artifact format (what
//! `publish` pushes), `oras push x.wasm:application/wasm` with oras's
//! default config, and OCI 1.1 artifacts with an `artifactType` and the
//! empty config; anything else is refused, saying what the manifest holds.

use super::{SIGNATURE_ARTIFACT, WASM_CONFIG, WASM_LAYER};
use oci_client::manifest::{OciDescriptor, OciImageManifest};

pub(super) const IMAGE_INDEX: &str = "application/vnd.oci.image.index.v1+json";

pub(super) const EMPTY_CONFIG: &str = "application/vnd.oci.empty.v1+json";

/// The config `oras push` writes when given none (image-spec 1.0 mode).
const ORAS_UNKNOWN_CONFIG: &str = "application/vnd.unknown.config.v1+json";

/// Layer media types that hold a component: the Wasm OCI format's, and
/// the one wasm-to-oci and early registries used.
const COMPONENT_LAYERS: [&str; 2] = [WASM_LAYER, "application/vnd.wasm.content.layer.v1+wasm"];

/// The layer of `manifest` that holds the component, and how it was
/// packaged; an error that says what the manifest is otherwise.
pub(super) fn component_layer(
    manifest: &OciImageManifest,
) -> Result<(&OciDescriptor, String), String> {
    if manifest.artifact_type.as_deref() == Some(SIGNATURE_ARTIFACT) {
        return Err("it is a signature, not a component".into());
    }
    let config = manifest.config.media_type.as_str();
    let format = match (config, manifest.artifact_type.as_deref()) {
        (WASM_CONFIG, _) => "a Wasm OCI artifact (wkg, Wassette)".to_owned(),
        (EMPTY_CONFIG | ORAS_UNKNOWN_CONFIG, Some(kind)) => {
            format!("an OCI artifact of type `{kind}`")
        }
        (ORAS_UNKNOWN_CONFIG | EMPTY_CONFIG, None) => "an ORAS artifact".to_owned(),
        (other, _) => {
            return Err(format!(
                "its config is `{other}`, which is neither a Wasm component artifact \
                 (`{WASM_CONFIG}`) nor an artifact without a config (`{EMPTY_CONFIG}`, \
                 `{ORAS_UNKNOWN_CONFIG}`)"
            ));
        }
    };
    let components: Vec<&OciDescriptor> = manifest
        .layers
        .iter()
        .filter(|layer| COMPONENT_LAYERS.contains(&layer.media_type.as_str()))
        .collect();
    match components.as_slice() {
        [layer] => Ok((layer, format)),
        [] => Err(format!(
            "none of its {} layers is a component (`{WASM_LAYER}`): {}",
            manifest.layers.len(),
            manifest
                .layers
                .iter()
                .map(|l| format!("`{}`", l.media_type))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        many => Err(format!(
            "it has {} component layers; install takes an artifact with one",
            many.len()
        )),
    }
}
