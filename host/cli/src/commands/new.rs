//! `toolwarden new NAME [--lang rust|python|js] [--dir DIR]`: a plugin
//! project that builds as it is, with one tool that runs with `{}`.
//!
//! A Rust crate depends on the `toolwarden-plugin` SDK by path (the copy
//! this binary carries, written under the data directory by `sdks`, or
//! `--sdk DIR`); a Python or JavaScript project gets its SDK at
//! `toolwarden build` time, from the same place. It never overwrites
//! anything of the person's: the directory must not exist or must be empty.

use super::sdks;
use crate::ExitStatus;
use crate::args::Lang;
use crate::error::Error;
use crate::printer::Printer;
use crate::spec::is_valid_name;
use std::path::{Path, PathBuf};

/// A project's files, as `(path in the project, template)`.
type Template = &'static [(&'static str, &'static str)];

macro_rules! templates {
    ($($file:literal => $template:literal),* $(,)?) => {
        &[$(($file, include_str!(concat!("../../templates/", $template)))),*]
    };
}

const RUST: Template = templates! {
    "Cargo.toml" => "plugin/Cargo.toml",
    "src/lib.rs" => "plugin/lib.rs",
    ".gitignore" => "plugin/gitignore",
};

const PYTHON: Template = templates! {
    "app.py" => "python/app.py",
    "test_app.py" => "python/test_app.py",
    "pyproject.toml" => "python/pyproject.toml",
    ".gitignore" => "python/gitignore",
};

const JS: Template = templates! {
    "app.js" => "js/app.js",
    "app.test.js" => "js/app.test.js",
    "package.json" => "js/package.json",
    ".gitignore" => "js/gitignore",
};

/// `text` as it goes between the quotes of a JSON string.
fn json_text(text: &str) -> String {
    let quoted = serde_json::Value::String(text.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
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
        None => sdks::write(&sdks::RUST, data_dir)?,
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
    std::fs::create_dir_all(dir)
        .and_then(|()| dir.canonicalize())
        .map_err(|e| {
            scaffold_error(
                format!("cannot create `{}`: {e}", dir.display()),
                "check that the parent directory is writable",
            )
        })
}

/// What to run next, per language: set up the toolchain (once), build.
fn next_steps(lang: Lang, dir: &Path, sdk: &Path) -> String {
    let dir = dir.display();
    match lang {
        Lang::Rust => format!(
            "  rustup target add wasm32-wasip2               # once\
             \n  cd {dir} && toolwarden build                   # cargo test runs its tests"
        ),
        Lang::Python => format!(
            "  cd {dir}\
             \n  python3 -m venv .venv && .venv/bin/pip install {componentize} pytest   # once\
             \n  PYTHONPATH={sdk} .venv/bin/python -m pytest   # the tool's tests, in CPython\
             \n  toolwarden build",
            sdk = sdk.display(),
            componentize = super::build::COMPONENTIZE_PY,
        ),
        Lang::Js => format!(
            "  cd {dir} && npm install                      # once: componentize-js, esbuild, the SDK\
             \n  npm test                                       # the tool's tests, in Node\
             \n  toolwarden build"
        ),
    }
}

pub struct New<'a> {
    pub name: &'a str,
    pub lang: Lang,
    pub dir: Option<&'a Path>,
    pub sdk: Option<&'a Path>,
}

pub fn run(
    new: New,
    plugins: &Path,
    data_dir: &Path,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let New {
        name,
        lang,
        dir,
        sdk,
    } = new;
    if !is_valid_name(name) {
        return Err(scaffold_error(
            format!("`{name}` is not a valid plugin name"),
            "use lowercase letters, digits and `_`, starting with a letter, at most 64 \
             characters (it is also the first tool's name, which every model API must accept)",
        ));
    }
    let (template, sdk) = match lang {
        Lang::Rust => (RUST, sdk_dir(sdk, data_dir)?),
        Lang::Python => (PYTHON, sdks::write(&sdks::PYTHON, data_dir)?),
        Lang::Js => (JS, sdks::write(&sdks::JS, data_dir)?),
    };
    let dir = empty_dir(dir.unwrap_or(Path::new(name)))?;
    let fill = |template: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{sdk}}", &super::toml_string(&sdk.display().to_string()))
            .replace(
                "{{sdk_path}}",
                json_text(&sdk.display().to_string()).as_str(),
            )
    };
    for (file, text) in template {
        let path = dir.join(file);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, fill(text)));
        written.map_err(|e| {
            scaffold_error(
                format!("cannot write `{}`: {e}", path.display()),
                "check that the directory is writable and the disk has space",
            )
        })?;
    }
    printer.out(format!(
        "Created plugin `{name}` ({lang}) in {shown}, with one tool and its tests. Next:\n\
         \n{steps}\
         \n  toolwarden check {name}.wasm\
         \n  toolwarden install {name}.wasm        # into {plugins}\
         \n\nThen allow the tool in your policy and call it:\
         \n  [[rule]]\n  tools = [\"{name}\"]\n  decision = \"allow\"\n  reason = \"pure word counting\"\
         \n\n  toolwarden call {name} '{{\"text\": \"one two three\"}}'\
         \n\n`toolwarden dev` in {shown} rebuilds it on save into a running host.",
        lang = lang.as_str(),
        shown = dir.display(),
        steps = next_steps(lang, &dir, &sdk),
        plugins = plugins.display(),
    ));
    Ok(ExitStatus::Success)
}
