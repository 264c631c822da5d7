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

use crate::cli::ExitStatus;
use crate::cli::printer::Printer;
use crate::config::{Config, Standing};
use crate::error::{Error, Untrusted};
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

/// `policy diff`: the change since the file was trusted.
pub fn diff(config: &Config, printer: Printer) -> Result<ExitStatus, Error> {
    let (Some(file), Some(text)) = (config.config_file(), config.config_text()) else {
        printer.out("no config file was read, so there is nothing to trust");
        return Ok(ExitStatus::Success);
    };
    let trusted = match config.trust_standing()? {
        None | Some(Standing::Trusted) => {
            printer.out(format!("`{}` is trusted as it is", file.display()));
            return Ok(ExitStatus::Success);
        }
        Some(Standing::Unrecorded) => {
            printer.out(format!(
                "`{}` was never trusted; all of it is new:",
                file.display()
            ));
            String::new()
        }
        Some(Standing::Changed { trusted }) => trusted,
    };
    let shown = file.display().to_string();
    let unified = similar::TextDiff::from_lines(trusted.as_str(), text)
        .unified_diff()
        .header(&format!("{shown} (trusted)"), &format!("{shown} (now)"))
        .to_string();
    printer.out(unified.trim_end());
    printer.note("hint: if this change is yours, run `toolwarden policy trust`");
    Ok(ExitStatus::Failure)
}

/// `policy trust`: records the file as it is now.
pub fn trust(config: &Config, printer: Printer) -> Result<ExitStatus, Error> {
    let Some(file) = config.config_file() else {
        printer.out("no config file was read, so there is nothing to trust");
        return Ok(ExitStatus::Success);
    };
    config.trust_config()?;
    printer.out(format!("trusted `{}` as it is now", file.display()));
    Ok(ExitStatus::Success)
}
