//! `toolwarden new NAME [--dir DIR]`: a plugin crate that builds as it is.
//!
//! The crate depends on the `toolwarden-plugin` SDK by path: the SDK is not
//! on crates.io yet, and a path keeps the plugin on exactly the contract
//! this host was built with. It never overwrites anything: the directory
//! must not exist or must be empty.

use crate::cli::ExitStatus;
use crate::cli::printer::Printer;
use crate::error::Error;
use crate::spec::is_valid_name;
use std::path::{Path, PathBuf};

const CARGO_TOML: &str = include_str!("../../../templates/plugin/Cargo.toml");
const LIB_RS: &str = include_str!("../../../templates/plugin/lib.rs");
const GITIGNORE: &str = include_str!("../../../templates/plugin/gitignore");

/// The SDK in the source tree this binary was built from.
const BUILT_WITH_SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk/toolwarden-plugin");

fn scaffold_error(message: impl Into<String>, hint: impl Into<String>) -> Error {
    Error::Scaffold {
        message: message.into(),
        hint: hint.into(),
    }
}

fn sdk_dir(given: Option<&Path>) -> Result<PathBuf, Error> {
    let dir = given.unwrap_or(Path::new(BUILT_WITH_SDK));
    let manifest = dir.join("Cargo.toml");
    let names_the_sdk = std::fs::read_to_string(&manifest)
        .is_ok_and(|text| text.contains("name = \"toolwarden-plugin\""));
    if !names_the_sdk {
        return Err(scaffold_error(
            format!("`{}` is not the toolwarden-plugin SDK crate", dir.display()),
            "pass `--sdk DIR` (or TOOLWARDEN_SDK) with the `sdk/toolwarden-plugin` directory of a toolwarden source tree",
        ));
    }
    dir.canonicalize().map_err(|e| {
        scaffold_error(
            format!("cannot resolve `{}`: {e}", dir.display()),
            "check the path given by `--sdk`",
        )
    })
}

/// The directory to write into, created if needed; refused if it has files.
fn empty_dir(dir: &Path) -> Result<PathBuf, Error> {
    let occupied = std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some());
    if occupied || (dir.exists() && !dir.is_dir()) {
        return Err(scaffold_error(
            format!("`{}` already exists and is not empty", dir.display()),
            "choose a new directory with `--dir DIR`; nothing was written",
        ));
    }
    std::fs::create_dir_all(dir.join("src"))
        .and_then(|()| dir.canonicalize())
        .map_err(|e| {
            scaffold_error(
                format!("cannot create `{}`: {e}", dir.display()),
                "check that the parent directory is writable",
            )
        })
}

fn toml_string(path: &Path) -> String {
    path.display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
}

pub fn run(
    name: &str,
    dir: Option<&Path>,
    sdk: Option<&Path>,
    plugins: &Path,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    if !is_valid_name(name) {
        return Err(scaffold_error(
            format!("`{name}` is not a valid plugin name"),
            "use lowercase letters, digits and `_`, starting with a letter, at most 64 \
             characters (it is also the first tool's name, which every model API must accept)",
        ));
    }
    let sdk = sdk_dir(sdk)?;
    let dir = empty_dir(dir.unwrap_or(Path::new(name)))?;
    let fill = |template: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{sdk}}", &toml_string(&sdk))
    };
    for (file, text) in [
        ("Cargo.toml", fill(CARGO_TOML)),
        ("src/lib.rs", fill(LIB_RS)),
        (".gitignore", GITIGNORE.to_owned()),
    ] {
        std::fs::write(dir.join(file), text).map_err(|e| {
            scaffold_error(
                format!("cannot write `{}`: {e}", dir.join(file).display()),
                "check that the directory is writable and the disk has space",
            )
        })?;
    }
    let wasm = format!("target/wasm32-wasip2/release/{name}.wasm");
    let plugins = plugins.display();
    printer.out(format!(
        "Created plugin `{name}` in {dir}, with one tool and its tests. Next:\n\
         \n  cd {dir} && cargo build --release --target wasm32-wasip2\
         \n  toolwarden check {wasm}\
         \n  cp {wasm} {plugins}/\
         \n\nThen allow the tool in your policy and call it:\
         \n  [[rule]]\n  tools = [\"{name}\"]\n  decision = \"allow\"\n  reason = \"pure word counting\"\
         \n\n  toolwarden call {name} '{{\"text\": \"one two three\"}}'",
        dir = dir.display(),
    ));
    Ok(ExitStatus::Success)
}
