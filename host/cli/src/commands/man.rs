//! `toolwarden man DIR`: man pages from the same clap definitions as
//! `--help`, so they cannot drift from the binary: `toolwarden.1` and one
//! page per command (`toolwarden-call.1`, ...), as clap_mangen renders them.

use crate::error::Error;
use crate::printer::Printer;
use crate::{Cli, ExitStatus};
use clap::CommandFactory;
use std::path::Path;

pub fn write(dir: &Path, printer: Printer) -> Result<ExitStatus, Error> {
    let failed = |source| Error::Directory {
        what: "man page directory",
        path: dir.to_owned(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(failed)?;
    let root = Cli::command();
    let mut written = 0;
    let mut pages = vec![(root.get_name().to_owned(), root.clone())];
    for sub in root.get_subcommands() {
        let name = format!("{}-{}", root.get_name(), sub.get_name());
        pages.push((name.clone(), sub.clone().name(name)));
    }
    for (name, command) in pages {
        let mut page = Vec::new();
        clap_mangen::Man::new(command)
            .render(&mut page)
            .and_then(|()| std::fs::write(dir.join(format!("{name}.1")), page))
            .map_err(failed)?;
        written += 1;
    }
    printer.out(format!(
        "wrote {written} man pages into {}; `man toolwarden` reads them once the directory is on MANPATH",
        dir.display()
    ));
    Ok(ExitStatus::Success)
}
