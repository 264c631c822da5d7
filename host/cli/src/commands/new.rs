//! `toolwarden new NAME [--dir DIR]`: a plugin crate that builds as it is.
//!
//! The crate depends on the `toolwarden-plugin` SDK by path. The SDK this
//! binary was built with travels inside it and is written out once per
//! version under the data directory (`$XDG_DATA_HOME/toolwarden/sdk/`), so a
//! scaffold builds wherever it is, with the checkout moved or gone, on
//! exactly the contract this host speaks. `--sdk DIR` points at another copy
//! (an SDK checkout being worked on). It never overwrites anything of the
//! person's: the directory must not exist or must be empty.

use crate::ExitStatus;
use crate::error::Error;
use crate::printer::Printer;
use crate::spec::is_valid_name;
use std::path::{Path, PathBuf};

const CARGO_TOML: &str = include_str!("../../templates/plugin/Cargo.toml");
const LIB_RS: &str = include_str!("../../templates/plugin/lib.rs");
const GITIGNORE: &str = include_str!("../../templates/plugin/gitignore");

/// The SDK crate this binary was built with, file by file.
const EMBEDDED_SDK: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../../../../sdk/toolwarden-plugin/Cargo.toml"),
    ),
    (
        "README.md",
        include_str!("../../../../sdk/toolwarden-plugin/README.md"),
    ),
    (
        "src/lib.rs",
        include_str!("../../../../sdk/toolwarden-plugin/src/lib.rs"),
    ),
    (
        "src/http.rs",
        include_str!("../../../../sdk/toolwarden-plugin/src/http.rs"),
    ),
    (
        "src/schema.rs",
        include_str!("../../../../sdk/toolwarden-plugin/src/schema.rs"),
    ),
    ("wit/tool.wit", include_str!("../../../../wit/tool.wit")),
];

/// Writes the embedded SDK under `data_dir` (once per version; a copy whose
/// files differ, say edited by hand, is written afresh) and returns where.
fn embedded_sdk(data_dir: &Path) -> Result<PathBuf, Error> {
    let version = EMBEDDED_SDK[0]
        .1
        .lines()
        .find_map(|line| line.strip_prefix("version = \"")?.strip_suffix('"'))
        .unwrap_or("unversioned");
    let dir = data_dir
        .join("sdk")
        .join(format!("toolwarden-plugin-{version}"));
    for (file, text) in EMBEDDED_SDK {
        let path = dir.join(file);
        if std::fs::read_to_string(&path).is_ok_and(|now| now == *text) {
            continue;
        }
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, text));
        written.map_err(|e| {
            scaffold_error(
                format!("cannot write the SDK to `{}`: {e}", path.display()),
                "check that the data directory is writable, or pass `--sdk DIR` with a \
                 toolwarden-plugin crate",
            )
        })?;
    }
    Ok(dir)
}

fn scaffold_error(message: impl Into<String>, hint: impl Into<String>) -> Error {
    Error::Scaffold {
        message: message.into(),
        hint: hint.into(),
    }
}

fn sdk_dir(given: Option<&Path>, data_dir: &Path) -> Result<PathBuf, Error> {
    let dir = match given {
        Some(dir) => dir.to_owned(),
        None => embedded_sdk(data_dir)?,
    };
    let manifest = dir.join("Cargo.toml");
    let names_the_sdk = std::fs::read_to_string(&manifest)
        .is_ok_and(|text| text.contains("name = \"toolwarden-plugin\""));
    if !names_the_sdk {
        return Err(scaffold_error(
            format!("`{}` is not the toolwarden-plugin SDK crate", dir.display()),
            "pass `--sdk DIR` (or TOOLWARDEN_SDK) with a toolwarden-plugin crate, such as `sdk/toolwarden-plugin` of a toolwarden source tree, or leave it out to use the SDK built into this binary",
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

pub fn run(
    name: &str,
    dir: Option<&Path>,
    sdk: Option<&Path>,
    plugins: &Path,
    data_dir: &Path,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    if !is_valid_name(name) {
        return Err(scaffold_error(
            format!("`{name}` is not a valid plugin name"),
            "use lowercase letters, digits and `_`, starting with a letter, at most 64 \
             characters (it is also the first tool's name, which every model API must accept)",
        ));
    }
    let sdk = sdk_dir(sdk, data_dir)?;
    let dir = empty_dir(dir.unwrap_or(Path::new(name)))?;
    let fill = |template: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{sdk}}", &super::toml_string(&sdk.display().to_string()))
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
    printer.out(format!(
        "Created plugin `{name}` in {dir}, with one tool and its tests. Next:\n\
         \n  cd {dir} && cargo build --release --target wasm32-wasip2\
         \n  toolwarden check {wasm}\
         \n  toolwarden install {wasm}        # into {plugins}\
         \n\nThen allow the tool in your policy and call it:\
         \n  [[rule]]\n  tools = [\"{name}\"]\n  decision = \"allow\"\n  reason = \"pure word counting\"\
         \n\n  toolwarden call {name} '{{\"text\": \"one two three\"}}'",
        dir = dir.display(),
        plugins = plugins.display(),
    ));
    Ok(ExitStatus::Success)
}
