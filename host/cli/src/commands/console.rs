//! `toolwarden console [ADDR]`: the web console alone, for people whose
//! agents reach the host over stdio. It reads the same state directory as
//! every other command, so approvals asked anywhere show up, and decides
//! them through the same approval book.

use super::serve::{authority, listen_options, runtime};
use crate::ExitStatus;
use crate::args::ConsoleArgs;
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::printer::Printer;

pub fn run(config: Config, args: ConsoleArgs, printer: Printer) -> Result<ExitStatus, Error> {
    let options = match authority(&config, printer)
        .and_then(|authority| listen_options(args.addr, args.listen, authority, printer))
    {
        Ok(options) => options,
        Err(status) => return Ok(status),
    };
    let signs_in = options
        .authority
        .as_ref()
        .is_some_and(|a| a.settings().console_client_id.is_some());
    if options.token.is_none() && !signs_in && !options.addr.ip().is_loopback() {
        printer.error(
            format!("no console on `{}` without a way to sign in", options.addr),
            Some(
                "give a token with `--token-file FILE`, let people sign in with `[auth] \
                 console_client_id`, or listen on 127.0.0.1",
            ),
        );
        return Ok(ExitStatus::Error);
    }
    let host = Controller::new(config)?;
    let runtime = runtime()?;
    let _guard = runtime.enter();
    let (console, _announced) = super::serve::console_beside(&host, &options);
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(options.addr)
            .await
            .map_err(|e| format!("cannot listen on `{}`: {e}", options.addr))?;
        printer.note(format!("the console is at http://{}/console", options.addr));
        axum::serve(listener, console)
            .await
            .map_err(|e| e.to_string())
    });
    match served {
        Ok(()) => Ok(ExitStatus::Success),
        Err(e) => {
            printer.error(format!("the console stopped: {e}"), None);
            Ok(ExitStatus::Failure)
        }
    }
}
