//! One module per subcommand.

pub mod approvals;
pub mod audit;
pub mod build;
pub mod call;
pub mod check;
pub mod console;
pub mod dev;
pub mod init;
pub mod inspect;
pub mod install;
pub mod list;
pub mod man;
pub mod mcp_config;
pub mod new;
pub mod policy;
pub mod schemas;
pub mod sdks;
pub mod serve;
pub mod store;
pub mod trust;
pub mod turn;

use crate::ExitStatus;
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::printer::Printer;
use std::sync::Arc;

/// A host for a command that shows a session's tools: the controller and
/// the profile it was given, or the exit status when the profile is not
/// defined.
type Profiled = Result<(Arc<Controller>, Option<Arc<str>>), ExitStatus>;

fn profiled_host(
    config: Config,
    profile: Option<String>,
    printer: Printer,
) -> Result<Profiled, Error> {
    Ok(match profile_of(&config, profile, printer) {
        Ok(profile) => Ok((Controller::new(config)?, profile)),
        Err(status) => Err(status),
    })
}

/// The profile a command was given, once the config is known to define
/// it: at the command line a typo is a mistake to point out, where an
/// agent's session would only see no tools.
fn profile_of(
    config: &Config,
    profile: Option<String>,
    printer: Printer,
) -> Result<Option<Arc<str>>, ExitStatus> {
    defined_profile(config, profile).map_err(|(message, hint)| {
        printer.error(message, Some(&hint));
        ExitStatus::Error
    })
}

/// The profile named, if the config defines it; else what is wrong and
/// what to do.
fn defined_profile(
    config: &Config,
    profile: Option<String>,
) -> Result<Option<Arc<str>>, (String, String)> {
    let Some(name) = profile else {
        return Ok(None);
    };
    if config.profile_names().any(|defined| defined == name) {
        return Ok(Some(Arc::from(name)));
    }
    let defined: Vec<_> = config.profile_names().map(|n| format!("`{n}`")).collect();
    let hint = if defined.is_empty() {
        "define it in the config, e.g.\n\n[profile.review]\ntools = [\"read_file\"]\n".to_owned()
    } else {
        format!("the config defines {}", defined.join(", "))
    };
    let message = format!(
        "the config defines no profile `{name}`{}",
        crate::suggest::did_you_mean(&name, config.profile_names())
    );
    Err((message, hint))
}

/// `text` as a TOML string literal, quotes and escapes included: how the
/// CLI writes a path or value into a file or snippet meant to be pasted.
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}
