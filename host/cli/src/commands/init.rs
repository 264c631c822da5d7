//! `toolwarden init`: makes a project folder ready to govern. It creates
//! the plugins directory (mode 0700), writes a short commented
//! `toolwarden.toml` where none exists, shows it and trusts it, and says
//! what to run next.
//!
//! It never overwrites a file, and never trusts a config file it did not
//! write (someone else's file is shown with the command that trusts it), so
//! running it twice changes nothing.

use crate::ExitStatus;
use crate::config::{Config, DEFAULT_CONFIG_FILE, Standing};
use crate::error::Error;
use crate::printer::Printer;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The config `init` writes: default deny, one allow and one ask rule.
pub const STARTER_CONFIG: &str = include_str!("../../templates/toolwarden.toml");

/// What `init` found and did, as `--json` prints it.
#[derive(Debug, serde::Serialize)]
pub struct Report {
    pub workspace: PathBuf,
    pub plugins_dir: PathBuf,
    pub config_file: PathBuf,
    /// Whether `init` wrote the config file now (else it was there).
    pub wrote_config: bool,
    /// `trusted`, `trusted-now` or `untrusted` (review and trust it yourself).
    pub trust: &'static str,
}

/// Writes the starter config at `path` unless a file is there; `Ok(false)`
/// when one was.
fn write_starter(path: &Path) -> Result<bool, Error> {
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path);
    match created {
        Ok(mut file) => file
            .write_all(STARTER_CONFIG.as_bytes())
            .map(|()| true)
            .map_err(|source| Error::ConfigRead {
                path: path.to_owned(),
                source,
            }),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(source) => Err(Error::ConfigRead {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Prepares the plugins directory and the config file, then builds the
/// config with `build` (which checks every directory as any command would).
pub fn run(
    workspace: &Path,
    config_file: Option<&Path>,
    plugins_dir: &Path,
    build: impl FnOnce() -> Result<Config, Error>,
    json: bool,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    crate::private_file::create_dir(plugins_dir).map_err(|source| Error::Directory {
        what: "plugins directory",
        path: plugins_dir.to_owned(),
        source,
    })?;
    let file = config_file
        .map(Path::to_owned)
        .unwrap_or_else(|| workspace.join(DEFAULT_CONFIG_FILE));
    let wrote_config = write_starter(&file)?;
    let config = build()?;
    let trust = match config.trust_standing()? {
        None | Some(Standing::Trusted) => "trusted",
        Some(Standing::Unrecorded) if wrote_config => {
            config.trust_config()?;
            "trusted-now"
        }
        Some(Standing::Unrecorded | Standing::Changed { .. }) => "untrusted",
    };
    let report = Report {
        workspace: config.workspace().to_owned(),
        plugins_dir: config.plugins_dir().to_owned(),
        config_file: config.config_file().unwrap_or(&file).to_owned(),
        wrote_config,
        trust,
    };
    if json {
        printer.json(&report);
    } else {
        show(&report, &config, printer);
    }
    Ok(ExitStatus::Success)
}

fn show(report: &Report, config: &Config, printer: Printer) {
    let file = report.config_file.display();
    printer.out(format!("workspace  {}", report.workspace.display()));
    printer.out(format!(
        "plugins    {} (only you can read or write it)",
        report.plugins_dir.display()
    ));
    if report.wrote_config {
        printer.out(format!("config     {file} (new). It says:\n"));
        printer.out(
            config
                .config_text()
                .unwrap_or_default()
                .lines()
                .map(|line| format!("    {line}"))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        printer.out("");
    } else {
        printer.out(format!("config     {file} (kept as it was)"));
    }
    match report.trust {
        "trusted-now" => printer.out(format!(
            "Trusted {file} as shown: agents run under it. When you edit it, \
             `toolwarden policy diff` shows the change and `toolwarden policy trust` accepts it."
        )),
        "untrusted" => printer.out(format!(
            "{file} is not trusted yet: read it, then run `toolwarden policy trust` \
             (`toolwarden policy diff` shows what changed)."
        )),
        _ => printer.out(format!("{file} is trusted as it is.")),
    }
    printer.out(format!(
        "\nNext:\n  \
         toolwarden install PLUGIN.wasm        # or oci://REGISTRY/REPO:TAG; into {}\n  \
         toolwarden list                       # the tools, and what the policy decides for each\n  \
         toolwarden call TOOL '{{\"arg\": 1}}'     # one governed call",
        report.plugins_dir.display()
    ));
}
