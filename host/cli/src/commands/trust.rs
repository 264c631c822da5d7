//! Trust on first use for the config file: the gate every command passes
//! (`gate`), `policy diff` and `policy trust`. See `config::trust` for
//! the records.
//!
//! Commands that run calls under the policy (`call`, `turn`, `serve`) need
//! a trusted file: a file never trusted is trusted with `--trust-config`,
//! or after a person at a terminal read it and said yes; a file that
//! changed since it was trusted needs `policy trust`, whatever the flags.
//! Commands that only read it (`list`, `policy explain`, ...) work on an
//! untrusted file and say so.

use crate::ExitStatus;
use crate::config::{Config, Standing};
use crate::error::{Error, Untrusted};
use crate::printer::Printer;
use std::io::{BufRead, IsTerminal, Write};

/// Whether a command acts on the config's policy (runs calls under it) or
/// only reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    Acts,
    Reads,
}

/// Lets a command go on with `config`, trusting it first where allowed.
pub fn gate(
    config: &Config,
    trust_flag: bool,
    purpose: Use,
    printer: Printer,
) -> Result<(), Error> {
    let Some(file) = config.config_file() else {
        return Ok(());
    };
    let why = match config.trust_standing()? {
        None | Some(Standing::Trusted) => return Ok(()),
        Some(Standing::Unrecorded) if trust_flag => {
            config.trust_config()?;
            printer.note(format!(
                "toolwarden: trusting `{}` on first use (`--trust-config`)",
                file.display()
            ));
            return Ok(());
        }
        Some(Standing::Unrecorded) => Untrusted::NeverTrusted,
        Some(Standing::Changed { .. }) => Untrusted::Changed,
    };
    let refused = Error::ConfigUntrusted {
        path: file.to_owned(),
        why,
    };
    match (purpose, why) {
        (Use::Reads, _) => {
            printer.note(format!(
                "toolwarden: warning: {refused}; `call`, `turn` and `serve` will refuse it"
            ));
            Ok(())
        }
        (Use::Acts, Untrusted::NeverTrusted) if interactive() => {
            if ask(config, printer) {
                config.trust_config()
            } else {
                Err(refused)
            }
        }
        (
            Use::Acts,
            Untrusted::NeverTrusted | Untrusted::Changed | Untrusted::ChangedSinceStart,
        ) => Err(refused),
    }
}

fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Shows the file to the person at the terminal and asks (default No).
fn ask(config: &Config, printer: Printer) -> bool {
    let file = config.config_file().map(|f| f.display().to_string());
    printer.note(format!(
        "toolwarden: `{}` has not been trusted yet. It says:\n",
        file.unwrap_or_default()
    ));
    printer.note(config.config_text().unwrap_or_default());
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "Trust this config and run under it? [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    matches!(answer.trim().to_lowercase().as_str(), "y" | "yes")
}

/// `policy diff` and `policy trust` under `--json`.
#[derive(serde::Serialize)]
struct TrustReport {
    config_file: Option<std::path::PathBuf>,
    /// `trusted`, `never-trusted`, `changed`, or `no-config-file`.
    standing: &'static str,
    /// A unified diff from the trusted text (empty when trusted).
    diff: String,
}

/// What `policy diff` and `policy trust` say when no config file was read.
fn no_config_file(json: bool, printer: Printer) -> ExitStatus {
    if json {
        printer.json(&TrustReport {
            config_file: None,
            standing: "no-config-file",
            diff: String::new(),
        });
    } else {
        printer.out("no config file was read, so there is nothing to trust");
    }
    ExitStatus::Success
}

/// `policy diff`: the change since the file was trusted.
pub fn diff(config: &Config, json: bool, printer: Printer) -> Result<ExitStatus, Error> {
    let (Some(file), Some(text)) = (config.config_file(), config.config_text()) else {
        return Ok(no_config_file(json, printer));
    };
    let (standing, trusted) = match config.trust_standing()? {
        None | Some(Standing::Trusted) => ("trusted", None),
        Some(Standing::Unrecorded) => ("never-trusted", Some(String::new())),
        Some(Standing::Changed { trusted }) => ("changed", Some(trusted)),
    };
    let shown = file.display().to_string();
    let unified = trusted
        .map(|trusted| {
            similar::TextDiff::from_lines(trusted.as_str(), text)
                .unified_diff()
                .header(&format!("{shown} (trusted)"), &format!("{shown} (now)"))
                .to_string()
        })
        .unwrap_or_default();
    let status = if standing == "trusted" {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    };
    if json {
        printer.json(&TrustReport {
            config_file: Some(file.to_owned()),
            standing,
            diff: unified,
        });
        return Ok(status);
    }
    match standing {
        "trusted" => printer.out(format!("`{shown}` is trusted as it is")),
        "never-trusted" => printer.out(format!("`{shown}` was never trusted; all of it is new:")),
        _ => {}
    }
    if standing != "trusted" {
        printer.out(unified.trim_end());
        printer.note("hint: if this change is yours, run `toolwarden policy trust`");
    }
    Ok(status)
}

/// `policy trust`: records the file as it is now.
pub fn trust(config: &Config, json: bool, printer: Printer) -> Result<ExitStatus, Error> {
    let Some(file) = config.config_file() else {
        return Ok(no_config_file(json, printer));
    };
    config.trust_config()?;
    if json {
        printer.json(&TrustReport {
            config_file: Some(file.to_owned()),
            standing: "trusted",
            diff: String::new(),
        });
    } else {
        printer.out(format!("trusted `{}` as it is now", file.display()));
    }
    Ok(ExitStatus::Success)
}
