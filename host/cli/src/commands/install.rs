//! `toolwarden install`, `publish` and `plugins list|update|remove`.

use crate::ExitStatus;
use crate::args::RegistryArgs;
use crate::config::Config;
use crate::distribution::{self, Access, DistributionError, Installed};
use crate::error::Error;
use crate::printer::Printer;
use std::io::Read;
use std::path::Path;

/// How to reach registries, from the flags (a password or token on stdin).
fn access(args: RegistryArgs, printer: Printer) -> Result<Access, ExitStatus> {
    use oci_client::secrets::RegistryAuth;
    let secret = || {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map(|_| text.trim().to_owned())
            .map_err(|e| {
                printer.error(format!("cannot read the secret from stdin: {e}"), None);
                ExitStatus::Error
            })
    };
    let credentials = match (args.username, args.token_stdin) {
        (Some(user), _) => Some(RegistryAuth::Basic(user, secret()?)),
        (None, true) => Some(RegistryAuth::Bearer(secret()?)),
        (None, false) => None,
    };
    Ok(Access {
        credentials,
        insecure: args.insecure_registry,
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Engine(format!("cannot start the async runtime: {e}")))
}

/// A progress bar on a terminal (nothing elsewhere): bytes while a
/// component downloads, then a spinner while it is checked and compiled.
fn progress() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new_spinner();
    bar.enable_steady_tick(std::time::Duration::from_millis(100));
    bar
}

fn show_bytes(bar: &indicatif::ProgressBar, done: u64, total: u64) {
    if bar.length() != Some(total) {
        bar.set_length(total);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
    }
    bar.set_position(done);
}

fn refused(e: DistributionError, printer: Printer) -> ExitStatus {
    printer.error(e.message, Some(&e.hint));
    ExitStatus::Error
}

/// One installed plugin as `--json` prints it.
#[derive(serde::Serialize)]
struct Report<'a> {
    #[serde(flatten)]
    entry: &'a crate::distribution::Locked,
    tools: &'a [String],
    unchanged: bool,
    format: Option<&'a str>,
}

fn report(installed: &Installed, printer: Printer) {
    let entry = &installed.entry;
    printer.out(format!(
        "{} {} ({}) from {}{}: {}",
        if installed.unchanged {
            "kept"
        } else {
            "installed"
        },
        entry.file,
        &entry.sha256[..16.min(entry.sha256.len())],
        entry.source,
        entry
            .signer
            .as_deref()
            .map(|s| format!(", signed by {s}"))
            .unwrap_or_default(),
        installed.tools.join(", ")
    ));
    if let Some(format) = &installed.format {
        printer.note(format!("  the registry held it as {format}"));
    }
}

/// Installs each source in turn; stops at the first that fails.
fn install_all(
    config: &Config,
    sources: &[(String, Option<String>)],
    access: &Access,
    json: bool,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let runtime = runtime()?;
    let mut reports = Vec::new();
    for (source, name) in sources {
        let bar = progress();
        bar.set_message(format!("fetching {source}"));
        let done = runtime
            .block_on(distribution::download(
                source,
                name.as_deref(),
                access,
                &|done, total| show_bytes(&bar, done, total),
            ))
            .and_then(|download| {
                bar.set_style(indicatif::ProgressStyle::default_spinner());
                bar.set_message(format!("checking and compiling {source}"));
                distribution::install(config, download)
            });
        bar.finish_and_clear();
        match done {
            Ok(installed) if json => reports.push(installed),
            Ok(installed) => report(&installed, printer),
            Err(e) => return Ok(refused(e, printer)),
        }
    }
    if json {
        let shown: Vec<Report> = reports
            .iter()
            .map(|i| Report {
                entry: &i.entry,
                tools: &i.tools,
                unchanged: i.unchanged,
                format: i.format.as_deref(),
            })
            .collect();
        printer.json(&shown);
    }
    Ok(ExitStatus::Success)
}

/// Installs a plugin file built here (`dev`), as `install FILE` would.
pub fn install_built(config: &Config, file: &Path, printer: Printer) -> Result<ExitStatus, Error> {
    let source = file.display().to_string();
    let access = Access {
        credentials: None,
        insecure: false,
    };
    install_all(config, &[(source, None)], &access, false, printer)
}

/// What `install` was asked for.
pub struct Wanted<'a> {
    pub source: Option<&'a str>,
    pub name: Option<&'a str>,
    pub locked: bool,
}

pub fn install(
    config: &Config,
    Wanted {
        source,
        name,
        locked,
    }: Wanted,
    registry: RegistryArgs,
    json: bool,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let access = match access(registry, printer) {
        Ok(access) => access,
        Err(status) => return Ok(status),
    };
    let sources = match (source, locked) {
        (Some(source), false) => vec![(source.to_owned(), name.map(str::to_owned))],
        (None, true) => {
            let file = distribution::lock_file(config.plugins_dir());
            if !file.exists() {
                printer.error(
                    format!("there is no lock file `{}` to install from", file.display()),
                    Some(
                        "`--locked` reproduces what an earlier `toolwarden install` recorded; \
                         install each plugin once without it (that writes the lock file), or \
                         point `--plugins` at the directory that holds plugins.lock",
                    ),
                );
                return Ok(ExitStatus::Error);
            }
            let lock = match distribution::locked(config) {
                Ok(lock) => lock,
                Err(e) => return Ok(refused(e, printer)),
            };
            let mut sources = Vec::with_capacity(lock.plugins.len());
            for entry in &lock.plugins {
                match distribution::locked_source(entry) {
                    Ok(source) => sources.push((source, Some(entry.file.clone()))),
                    Err(e) => return Ok(refused(e, printer)),
                }
            }
            sources
        }
        (Some(_), true) => {
            printer.error(
                "`--locked` installs what plugins.lock records; give no source with it",
                None,
            );
            return Ok(ExitStatus::Error);
        }
        (None, false) => {
            printer.error(
                "what should be installed?",
                Some("give oci://REGISTRY/REPO:TAG or a .wasm file, or --locked"),
            );
            return Ok(ExitStatus::Error);
        }
    };
    // A locked install records the digest it reproduced, and keeps the
    // source as first written.
    let before = distribution::locked(config).ok();
    let status = install_all(config, &sources, &access, json, printer)?;
    if locked
        && status == ExitStatus::Success
        && let Some(before) = before
        && let Err(e) = distribution::restore_sources(config, &before)
    {
        return Ok(refused(e, printer));
    }
    Ok(status)
}

pub fn publish(
    file: &Path,
    target: &str,
    registry: RegistryArgs,
    json: bool,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let access = match access(registry, printer) {
        Ok(access) => access,
        Err(status) => return Ok(status),
    };
    match runtime()?.block_on(distribution::publish(file, target, &access)) {
        Ok(digest) if json => {
            printer.json(&serde_json::json!({
                "file": file,
                "target": target,
                "digest": digest,
            }));
            Ok(ExitStatus::Success)
        }
        Ok(digest) => {
            printer.out(format!(
                "published {} as {target} ({digest})",
                file.display()
            ));
            Ok(ExitStatus::Success)
        }
        Err(e) => Ok(refused(e, printer)),
    }
}

pub fn list(config: &Config, json: bool, printer: Printer) -> Result<ExitStatus, Error> {
    let lock = match distribution::locked(config) {
        Ok(lock) => lock,
        Err(e) => return Ok(refused(e, printer)),
    };
    if json {
        printer.json(&lock.plugins);
        return Ok(ExitStatus::Success);
    }
    if lock.plugins.is_empty() {
        printer.out("no installed plugins (plugins.lock is empty)");
    }
    // Each field on one line whatever the lock file holds: a name with a
    // newline would print a row of its own.
    use crate::presentation::one_line;
    for p in &lock.plugins {
        let present = config.plugins_dir().join(&p.file).exists();
        printer.out(format!(
            "{}  {}  {}{}{}  {}",
            one_line(&p.file),
            one_line(&p.source),
            one_line(p.digest.as_deref().unwrap_or("-")),
            p.signer
                .as_deref()
                .map(|s| format!("  signed by {}", one_line(s)))
                .unwrap_or_default(),
            if present { "" } else { "  (file missing)" },
            one_line(&p.installed)
        ));
    }
    Ok(ExitStatus::Success)
}

pub fn update(
    config: &Config,
    name: Option<&str>,
    registry: RegistryArgs,
    json: bool,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let access = match access(registry, printer) {
        Ok(access) => access,
        Err(status) => return Ok(status),
    };
    let lock = match distribution::locked(config) {
        Ok(lock) => lock,
        Err(e) => return Ok(refused(e, printer)),
    };
    let wanted = name.map(|n| {
        if n.ends_with(".wasm") {
            n.to_owned()
        } else {
            format!("{n}.wasm")
        }
    });
    let sources: Vec<(String, Option<String>)> = lock
        .plugins
        .iter()
        .filter(|p| wanted.as_deref().is_none_or(|w| w == p.file))
        .map(|p| (p.source.clone(), Some(p.file.clone())))
        .collect();
    if sources.is_empty() {
        printer.error(
            format!(
                "no installed plugin {}",
                wanted.as_deref().unwrap_or("at all")
            ),
            Some("`toolwarden plugins list` shows them"),
        );
        return Ok(ExitStatus::Error);
    }
    install_all(config, &sources, &access, json, printer)
}

pub fn remove(
    config: &Config,
    name: &str,
    json: bool,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    match distribution::remove(config, name) {
        Ok(true) if json => {
            printer.json(&serde_json::json!({"removed": name}));
            Ok(ExitStatus::Success)
        }
        Ok(true) => {
            printer.out(format!("removed {name}"));
            Ok(ExitStatus::Success)
        }
        Ok(false) => {
            printer.error(
                format!("there is no plugin `{name}`"),
                Some("`toolwarden plugins list` shows them"),
            );
            Ok(ExitStatus::Failure)
        }
        Err(e) => Ok(refused(e, printer)),
    }
}
