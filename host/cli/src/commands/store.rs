//! `toolwarden store migrate`.

use crate::ExitStatus;
use crate::config::Config;
use crate::error::Error;
use crate::printer::Printer;
use crate::records::Records;

pub fn migrate(config: &Config, json: bool, printer: Printer) -> Result<ExitStatus, Error> {
    let Some(copied) = Records::migrate_to_shared(config)? else {
        printer.error(
            "no shared store is configured: there is nothing to migrate into",
            Some(
                "set `[store] url` (and `password_file`) in the config, or TOOLWARDEN_STORE_URL, \
                 then run this again",
            ),
        );
        return Ok(ExitStatus::Failure);
    };
    if json {
        printer.json(&copied);
        return Ok(ExitStatus::Success);
    }
    printer.out(format!(
        "copied {} approvals, {} audit records and {} executions into the shared store",
        copied.approvals, copied.records, copied.executions
    ));
    if let Some((seq, hash)) = &copied.tail {
        printer.out(format!(
            "the chain ends at record {seq} ({hash}); `toolwarden audit verify` now checks it there"
        ));
    }
    Ok(ExitStatus::Success)
}
