//! # `toolwarden-cli` (host/cli): the `toolwarden` binary
//!
//! Owns the command line (clap), the printer, the templates `init` and
//! `new` write, and the pieces only the CLI uses (`turn`, `export`). Depends
//! on every other host crate; it is the only place that puts them together
//! (`serve` mounts the console beside MCP). Never holds a rule of its own.
//!
//! The `toolwarden` command line: parses arguments, builds a config, calls
//! the controller, prints. Exit codes (stable): 0 success, 1 an error or
//! denied call result, 2 a usage or config error, 3 approval pending or
//! unavailable.
//!
//! It only talks to `config` and `controller`; every rule lives in the
//! library.

#![deny(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod commands;
mod export;
mod printer;
mod turn;

// The library's modules, by the names this code knew them under when it
// was one crate with them.
use toolwarden::{
    approval, audit, call, caller, capability, check, config, console_url, content, controller,
    error, outcome, policy, presentation, private_file, question, records, registry, spec, suggest,
    when,
};
use toolwarden_console as console;
use toolwarden_distribution as distribution;
use toolwarden_mcp as mcp;
use toolwarden_web as web_origin;

pub use args::Cli;

use crate::approval::ApprovalDecision;
use crate::call::Tracing;
use crate::config::{Config, ConfigBuilder, default_plugins_dir};
use crate::error::Error;
use crate::outcome::Status;
use args::{
    ApprovalsCommand, AuditCommand, Command, GlobalArgs, PluginsCommand, PolicyCommand,
    StoreCommand,
};
use clap::Parser;
use commands::trust::Use;
use printer::Printer;
use std::io::IsTerminal;
use std::process::ExitCode;

/// How a command ended, mapped to the process exit code in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    Success,
    /// The call ran or was refused, and did not succeed.
    Failure,
    /// Bad usage, config or plugins: nothing was attempted.
    Error,
    /// The call waits for, or could not get, a person's approval.
    Pending,
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> ExitCode {
        ExitCode::from(match status {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Error => 2,
            ExitStatus::Pending => 3,
        })
    }
}

impl From<Status> for ExitStatus {
    fn from(status: Status) -> ExitStatus {
        match status {
            Status::Ok => ExitStatus::Success,
            Status::Error | Status::Denied => ExitStatus::Failure,
            Status::PendingApproval => ExitStatus::Pending,
        }
    }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.global.verbose);
    let printer = Printer::new(cli.command.wants_json());
    match run(cli, printer) {
        Ok(status) => status.into(),
        Err(error) => {
            printer.coded_error(Some(error.code()), &error, Some(&error.hint()));
            ExitStatus::Error.into()
        }
    }
}

/// Colour on a terminal only, and never with `NO_COLOR` set
/// (<https://no-color.org>): escape codes in a log file are noise.
fn colour_on_stderr() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLWARDEN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour_on_stderr())
        .with_target(false)
        .try_init();
}

fn load_config(global: &GlobalArgs, purpose: Use, printer: Printer) -> Result<Config, Error> {
    let config = build_config(global)?;
    commands::trust::gate(&config, global.trust_config, purpose, printer)?;
    Ok(config)
}

/// The workspace named, else the current directory if it is a project.
fn workspace(global: &GlobalArgs) -> Result<std::path::PathBuf, Error> {
    match &global.workspace {
        Some(dir) => Ok(dir.clone()),
        None => crate::config::current_project(),
    }
}

/// Where the SDKs this binary carries are written out (`commands::sdks`).
fn sdk_home() -> Result<std::path::PathBuf, Error> {
    crate::config::data_home("plugin SDK", "--sdk", "TOOLWARDEN_SDK")
}

fn plugins_dir(global: &GlobalArgs) -> Result<std::path::PathBuf, Error> {
    match &global.plugins {
        Some(dir) => Ok(dir.clone()),
        None => default_plugins_dir(),
    }
}

fn build_config(global: &GlobalArgs) -> Result<Config, Error> {
    let workspace = workspace(global)?;
    let mut builder = ConfigBuilder::new(&workspace).sandbox(global.sandbox);
    if let Some(dir) = &global.plugins {
        builder = builder.plugins_dir(dir);
    }
    if let Some(file) = &global.config {
        builder = builder.config_file(file);
    }
    if let Some(dir) = &global.state {
        builder = builder.state_dir(dir);
    }
    if std::io::stderr().is_terminal() {
        builder = builder.load_progress(load_progress());
    }
    builder.build()
}

/// A bar on the terminal while plugins load, shown only once loading has
/// taken a second (compiling plugins never seen before): a start from the
/// cache is over before anything is drawn.
fn load_progress() -> impl Fn(usize, usize) + Send + Sync + 'static {
    let started = std::time::Instant::now();
    let bar: std::sync::Mutex<Option<indicatif::ProgressBar>> = Default::default();
    move |done, total| {
        let mut bar = bar
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if bar.is_none() && started.elapsed() < std::time::Duration::from_secs(1) {
            return;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{msg} [{bar:30}] {pos}/{len} plugins ({elapsed})",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message("compiling");
            bar
        });
        bar.set_position(done as u64);
        if done == total {
            bar.finish_with_message("compiled");
        }
    }
}

fn run(cli: Cli, printer: Printer) -> Result<ExitStatus, Error> {
    // Loaded only by the commands that use it: scaffolding a plugin must
    // work before any plugins directory or policy exists.
    let config = || load_config(&cli.global, Use::Reads, printer);
    let acting = || load_config(&cli.global, Use::Acts, printer);
    match cli.command {
        Command::Init { json } => commands::init::run(
            &workspace(&cli.global)?,
            cli.global.config.as_deref(),
            &plugins_dir(&cli.global)?,
            || build_config(&cli.global),
            json,
            printer,
        ),
        Command::McpConfig { client, json } => {
            commands::mcp_config::run(&config()?, client, json, printer)
        }
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "toolwarden",
                &mut std::io::stdout(),
            );
            Ok(ExitStatus::Success)
        }
        Command::Man { dir } => commands::man::write(&dir, printer),
        Command::New {
            name,
            lang,
            dir,
            sdk,
        } => {
            let data_dir = match (&sdk, lang) {
                (Some(_), args::Lang::Rust) => std::path::PathBuf::new(),
                _ => sdk_home()?,
            };
            let new = commands::new::New {
                name: &name,
                lang,
                dir: dir.as_deref(),
                sdk: sdk.as_deref(),
            };
            commands::new::run(new, &plugins_dir(&cli.global)?, &data_dir, printer)
        }
        Command::Build { dir, json } => {
            commands::build::run_command(&dir, &sdk_home()?, json, printer)
        }
        Command::Dev { dir } => commands::dev::run(&dir, &sdk_home()?, &config()?, printer),
        Command::List { json, profile } => {
            commands::list::run(config()?, json, profile.profile, printer)
        }
        Command::Inspect { file, json } => commands::inspect::run(&config()?, &file, json, printer),
        Command::Policy {
            command:
                PolicyCommand::Explain {
                    tool,
                    args,
                    caller,
                    json,
                },
        } => commands::policy::explain(
            config()?,
            (&tool, args.as_deref().unwrap_or("{}")),
            &caller,
            json,
            printer,
        ),
        Command::Policy {
            command: PolicyCommand::Diff { json },
        } => commands::trust::diff(&build_config(&cli.global)?, json, printer),
        Command::Policy {
            command: PolicyCommand::Trust { json },
        } => commands::trust::trust(&build_config(&cli.global)?, json, printer),
        Command::Call {
            tool,
            args,
            json,
            session,
            approval,
            trace,
            profile,
        } => {
            let tracing = if trace { Tracing::Steps } else { Tracing::Off };
            commands::call::run(
                acting()?,
                commands::call::Options {
                    tool,
                    args,
                    session,
                    approval,
                    json,
                    tracing,
                    profile: profile.profile,
                },
                printer,
            )
        }
        Command::Serve(args) => match acting() {
            Ok(config) => commands::serve::run(config, args, printer),
            // Where a client starts it: the client's roots may name one.
            Err(error @ Error::NoWorkspace { .. })
                if args.http.is_none() && !std::io::stdin().is_terminal() =>
            {
                let global = cli.global;
                let load = move |workspace: &std::path::Path| {
                    let global = GlobalArgs {
                        workspace: Some(workspace.to_owned()),
                        ..global
                    };
                    load_config(&global, Use::Acts, printer)
                };
                commands::serve::on_roots(&error, load, args, printer)
            }
            Err(error) => {
                if args.http.is_none() {
                    commands::serve::refuse_the_client(&error);
                }
                Err(error)
            }
        },
        Command::Console(args) => commands::console::run(config()?, args, printer),
        Command::Install {
            source,
            name,
            locked,
            registry,
            json,
        } => commands::install::install(
            &config()?,
            commands::install::Wanted {
                source: source.as_deref(),
                name: name.as_deref(),
                locked,
            },
            registry,
            json,
            printer,
        ),
        Command::Publish {
            file,
            target,
            registry,
            json,
        } => commands::install::publish(&file, &target, registry, json, printer),
        Command::Plugins { command } => match command {
            PluginsCommand::List { json } => commands::install::list(&config()?, json, printer),
            PluginsCommand::Update {
                name,
                registry,
                json,
            } => commands::install::update(&config()?, name.as_deref(), registry, json, printer),
            PluginsCommand::Remove { name, json } => {
                commands::install::remove(&config()?, &name, json, printer)
            }
        },
        Command::Check {
            target,
            json,
            policy,
        } => commands::check::run(&config()?, target.as_deref(), json, policy, printer),
        Command::Turn {
            input,
            json,
            session,
            profile,
        } => commands::turn::run(acting()?, &input, session, profile.profile, json, printer),
        Command::Schemas { format, profile } => {
            commands::schemas::run(config()?, format, profile.profile, printer)
        }
        Command::Store {
            command: StoreCommand::Migrate { json },
        } => commands::store::migrate(&config()?, json, printer),
        Command::Approvals { command } => match command {
            ApprovalsCommand::List { json } => commands::approvals::list(&config()?, json, printer),
            ApprovalsCommand::Show { id, json } => {
                commands::approvals::show(&config()?, &id, json, printer)
            }
            ApprovalsCommand::Approve { id, reason, json } => commands::approvals::decide(
                &config()?,
                &id,
                (ApprovalDecision::Approve, reason),
                json,
                printer,
            ),
            ApprovalsCommand::Deny { id, reason, json } => commands::approvals::decide(
                &config()?,
                &id,
                (ApprovalDecision::Deny, reason),
                json,
                printer,
            ),
        },
        Command::Audit {
            command: Some(AuditCommand::Verify { json, file: None }),
            ..
        } => commands::audit::verify(&config()?, json, printer),
        Command::Audit {
            command:
                Some(AuditCommand::Verify {
                    json,
                    file: Some(file),
                }),
            ..
        } => commands::audit::verify_file(&file, json, printer),
        Command::Audit {
            command:
                Some(AuditCommand::Export {
                    before,
                    keep,
                    output,
                }),
            ..
        } => commands::audit::export(
            &config()?,
            before.as_deref(),
            keep,
            output.as_deref(),
            printer,
        ),
        Command::Audit {
            command: Some(AuditCommand::Head { json }),
            ..
        } => commands::audit::head(&config()?, json, printer),
        Command::Audit {
            command: Some(AuditCommand::Show { id, json }),
            ..
        } => commands::audit::show(config()?, &id, json, printer),
        Command::Audit {
            command: Some(AuditCommand::Stats { json, since, tool }),
            ..
        } => commands::audit::stats(&config()?, json, since.as_deref(), tool, printer),
        Command::Audit {
            command: None,
            filter,
        } => commands::audit::list(&config()?, &filter, printer),
    }
}
