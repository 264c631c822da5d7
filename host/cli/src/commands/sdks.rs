//! The authoring SDKs this binary carries: the Rust crate, the Python
//! package, the JavaScript package and the WIT the last two build against.
//!
//! Each is written out once per version under the data directory
//! (`$XDG_DATA_HOME/toolwarden/sdk/`), so `new` and `build` work wherever a
//! project is, with the checkout moved or gone, on exactly the contract this
//! host speaks. A copy whose files differ (edited by hand, or written by
//! another build of the same version) is written afresh. Never writes
//! anywhere else.

use crate::error::Error;
use std::path::{Path, PathBuf};

/// One SDK: its directory name under `sdk/` and its files.
pub struct Sdk {
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
}

/// The SDKs' version is the newest contract's, read from the Rust crate's
/// manifest (the Python and JavaScript SDKs build against 0.2.0, which
/// every later host loads; `sdk/wit/tool.wit`).
fn version() -> &'static str {
    RUST.files[0]
        .1
        .lines()
        .find_map(|line| line.strip_prefix("version = \"")?.strip_suffix('"'))
        .unwrap_or("unversioned")
}

macro_rules! files {
    ($root:literal: $($file:literal),* $(,)?) => {
        &[$(($file, include_str!(concat!("../../../../", $root, "/", $file)))),*]
    };
}

pub const RUST: Sdk = Sdk {
    name: "toolwarden-plugin",
    files: files!("sdk/toolwarden-plugin":
        "Cargo.toml", "README.md", "src/lib.rs", "src/args.rs", "src/client.rs", "src/context.rs", "src/export.rs", "src/http.rs", "src/prompts.rs", "src/resources.rs", "src/schema.rs", "src/tools.rs",
        "wit/tool.wit"),
};

pub const PYTHON: Sdk = Sdk {
    name: "python",
    files: files!("sdk/python":
        "pyproject.toml", "README.md", "toolwarden_plugin/__init__.py",
        "toolwarden_plugin/schema.py", "toolwarden_plugin/component.py",
        "toolwarden_plugin/_exports.py", "toolwarden_plugin/http.py",
        "toolwarden_plugin/describe.py"),
};

pub const JS: Sdk = Sdk {
    name: "js",
    files: files!("sdk/js": "package.json", "README.md", "index.js", "component.js"),
};

/// The contract with the worlds the Python and JavaScript toolchains build
/// against, and the WASI packages `http-plugin` imports from.
pub const WIT: Sdk = Sdk {
    name: "wit",
    files: files!("sdk/wit":
        "tool.wit", "guest.wit", "deps/cli.wit", "deps/clocks.wit", "deps/filesystem.wit",
        "deps/http.wit", "deps/io.wit", "deps/random.wit", "deps/sockets.wit"),
};

/// Writes `sdk` under `data_dir` (unless an identical copy is there) and
/// returns where.
pub fn write(sdk: &Sdk, data_dir: &Path) -> Result<PathBuf, Error> {
    let dir = data_dir
        .join("sdk")
        .join(format!("{}-{}", sdk.name, version()));
    for (file, text) in sdk.files {
        let path = dir.join(file);
        if std::fs::read_to_string(&path).is_ok_and(|now| now == *text) {
            continue;
        }
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, text));
        written.map_err(|e| Error::Scaffold {
            message: format!("cannot write the SDK to `{}`: {e}", path.display()),
            hint: "check that the data directory ($XDG_DATA_HOME/toolwarden, else \
                   ~/.local/share/toolwarden) is writable"
                .into(),
        })?;
    }
    Ok(dir)
}
