//! `toolwarden audit [--json] [--since] [--tool] [--call]`, `audit show`,
//! `audit verify`, `audit head` and `audit stats`.

use crate::ExitStatus;
use crate::args::AuditArgs;
use crate::audit::segment::{SegmentCheck, verify_segment};
use crate::audit::{Cut, HeadCheck, Verification};
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::presentation::visible;
use crate::printer::{Printer, timestamp};
use crate::records::{AuditFilter, Records};
use std::os::fd::AsFd;
use std::path::Path;

/// `--since`, read; `Err` once the mistake is printed.
fn since(text: Option<&str>, printer: &Printer) -> Result<Option<i64>, ExitStatus> {
    match text.map(|s| (s, crate::when::since_ms(s))) {
        None => Ok(None),
        Some((_, Some(ms))) => Ok(Some(ms)),
        Some((text, None)) => {
            printer.error(
                format!("`--since {text}` is not a time"),
                Some("use 30s, 10m, 2h, 7d, or milliseconds since the epoch"),
            );
            Err(ExitStatus::Error)
        }
    }
}

pub fn list(config: &Config, args: &AuditArgs, printer: Printer) -> Result<ExitStatus, Error> {
    let since = match since(args.since.as_deref(), &printer) {
        Ok(since) => since,
        Err(status) => return Ok(status),
    };
    let filter = AuditFilter {
        since_ms: since,
        tool: args.tool.clone(),
        call_id: args.call.clone(),
        ..AuditFilter::default()
    };
    let records = Records::open(config)?.audit(&filter)?;
    if args.json {
        printer.json(&records);
        return Ok(ExitStatus::Success);
    }
    for r in &records {
        let mut data = r.data.clone();
        if let Some(map) = data.as_object_mut() {
            map.remove("kind");
        }
        let mut summary = data.to_string();
        if let Some((cut, _)) = summary.char_indices().nth(160) {
            summary.truncate(cut);
            summary.push('…');
        }
        let call: String = r.call_id.chars().take(13).collect();
        printer.out(format!(
            "{:>6}  {}  {:13}  {:20}  {:17}  {summary}",
            r.seq,
            timestamp(r.ts_ms),
            call,
            r.tool,
            r.kind
        ));
    }
    Ok(ExitStatus::Success)
}

pub fn show(config: Config, id: &str, json: bool, printer: Printer) -> Result<ExitStatus, Error> {
    let host = Controller::new(config)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Engine(format!("cannot start the async runtime: {e}")))?;
    let Some(call) = runtime.block_on(host.show_call(id))? else {
        printer.error(
            format!("the audit log has no call `{}`", visible(id)),
            Some("`toolwarden audit` lists the calls it has, with their ids"),
        );
        return Ok(ExitStatus::Error);
    };
    if json {
        printer.json(&call);
        return Ok(ExitStatus::Success);
    }
    printer.out(format!("call       {}", call.call_id));
    printer.out(format!("tool       {}", call.tool));
    printer.out(format!(
        "outcome    {}",
        call.outcome.as_deref().unwrap_or("not ended")
    ));
    if let Some(preview) = &call.preview {
        printer.rendered(preview, "asked", "preview");
    }
    if let Some(result) = &call.result {
        printer.rendered(result, "shows", "view");
    }
    if let Some(why) = &call.no_result {
        printer.out(format!("view       none: {why}"));
    }
    if call.other_build {
        printer.out(
            "note       the plugin loaded now is not the build that ran the call; \
             the view is the newer build's",
        );
    }
    Ok(ExitStatus::Success)
}

pub fn stats(
    config: &Config,
    json: bool,
    since_text: Option<&str>,
    tool: Option<String>,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let since_ms = match since(since_text, &printer) {
        Ok(since) => since,
        Err(status) => return Ok(status),
    };
    let filter = AuditFilter {
        since_ms,
        tool,
        ..AuditFilter::default()
    };
    let stats = Records::open(config)?.stats(&filter)?;
    if json {
        printer.json(&stats);
        return Ok(ExitStatus::Success);
    }
    if stats.tools.is_empty() {
        printer.out("no calls recorded");
        return Ok(ExitStatus::Success);
    }
    printer.out(format!(
        "{:24} {:>6} {:>7}  {:>9} {:>9} {:>9}  {:>5} {:>6} {:>7} {:>8}  outcomes",
        "tool",
        "calls",
        "ok",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "dups",
        "budget",
        "retries",
        "approvals"
    ));
    let ms = |us: u64| format!("{:.2}", us as f64 / 1e3);
    for (name, t) in &stats.tools {
        let ok = t.rates.get("ok").copied().unwrap_or(0.0);
        let outcomes: Vec<String> = t
            .outcomes
            .iter()
            .filter(|(outcome, _)| *outcome != "ok")
            .map(|(outcome, n)| format!("{outcome} {n}"))
            .collect();
        let a = &t.approvals;
        printer.out(format!(
            "{name:24} {:>6} {:>6.1}%  {:>9} {:>9} {:>9}  {:>5} {:>6} {:>7} {:>8}  {}",
            t.calls,
            ok * 100.0,
            ms(t.duration_us.p50),
            ms(t.duration_us.p95),
            ms(t.duration_us.p99),
            t.duplicates_refused,
            t.budget_stops,
            t.retries,
            format!("{}/{}/{}/{}", a.asked, a.approved, a.denied, a.expired),
            outcomes.join(", ")
        ));
    }
    let turns: u64 = stats.sessions.values().map(|s| s.turns).sum();
    if turns > 0 {
        let in_turns: u64 = stats.sessions.values().map(|s| s.calls_in_turns).sum();
        printer.out(format!(
            "model turns: {turns}, {:.2} calls per turn",
            in_turns as f64 / turns as f64
        ));
    }
    let repeating: Vec<String> = stats
        .sessions
        .iter()
        .filter(|(_, s)| s.longest_repeat > 2)
        .map(|(id, s)| {
            format!(
                "{id} ({} calls, the same call {} times in a row)",
                s.calls, s.longest_repeat
            )
        })
        .collect();
    if !repeating.is_empty() {
        printer.out(format!(
            "sessions repeating themselves: {}",
            repeating.join("; ")
        ));
    }
    printer.out("approvals: asked/approved/denied/expired; `--json` for every figure (fuel, output size, per session)");
    Ok(ExitStatus::Success)
}

pub fn verify(config: &Config, json: bool, printer: Printer) -> Result<ExitStatus, Error> {
    let verification = Records::open(config)?.verify()?;
    if json {
        printer.json(&verification);
    }
    match verification {
        Verification::Intact {
            records,
            head,
            cut_through,
        } => {
            if !json {
                let head = match head {
                    HeadCheck::Matches => "its head matches".to_owned(),
                    HeadCheck::Lags { head_records } => format!(
                        "its head counts {head_records} (it lags after a crash; the next commit moves it)"
                    ),
                    HeadCheck::Missing => {
                        "it has no head yet, so records cut off its end cannot be detected"
                            .to_owned()
                    }
                };
                let from = match cut_through {
                    Some(cut) => format!(
                        " (records up to {cut} were exported or pruned; the chain checks from there)"
                    ),
                    None => String::new(),
                };
                printer.out(format!(
                    "audit log intact: {records} records{from}, every hash and link checks out, {head}"
                ));
            }
            Ok(ExitStatus::Success)
        }
        Verification::Broken { seq, problem } => {
            if !json {
                printer.error(format!("the audit log is broken at record {seq}: {problem}"), Some("records from this one on cannot be trusted; keep the database file as evidence"));
            }
            Ok(ExitStatus::Failure)
        }
    }
}

/// `audit verify --file`: an exported segment, on its own.
pub fn verify_file(file: &Path, json: bool, printer: Printer) -> Result<ExitStatus, Error> {
    let checked = std::fs::File::open(file)
        .and_then(|f| verify_segment(std::io::BufReader::new(f)))
        .map_err(|source| Error::Directory {
            what: "audit segment",
            path: file.to_owned(),
            source,
        })?;
    if json {
        printer.json(&checked);
    }
    match checked {
        SegmentCheck::Intact {
            first_seq,
            last_seq,
            records,
            prev_hash,
            ..
        } => {
            if !json {
                printer.out(format!(
                    "audit segment intact: records {first_seq} to {last_seq} ({records}), every \
                     hash and link checks out; it hangs on the record with hash {prev_hash}"
                ));
            }
            Ok(ExitStatus::Success)
        }
        SegmentCheck::Broken { line, problem } => {
            if !json {
                printer.error(
                    format!("the audit segment is broken at line {line}: {problem}"),
                    Some("records from this line on cannot be trusted"),
                );
            }
            Ok(ExitStatus::Failure)
        }
    }
}

/// `audit export`: the records leave the database only once the file that
/// holds them is on disk.
pub fn export(
    config: &Config,
    before: Option<&str>,
    keep: Option<u32>,
    output: Option<&Path>,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let cut = match (before, keep) {
        (_, Some(keep)) => Cut::Keeping {
            records: i64::from(keep),
        },
        (before, None) => match since(before, &printer) {
            Ok(Some(ms)) => Cut::Before { ms },
            Ok(None) => {
                printer.error("say which records: --before WHEN or --keep N", None);
                return Ok(ExitStatus::Error);
            }
            Err(status) => return Ok(status),
        },
    };
    let (mut file, shown) = match output {
        Some(path) => {
            let file = crate::private_file::options()
                .write(true)
                .create_new(true)
                .open(path)
                .map_err(|source| Error::Directory {
                    what: "export file",
                    path: path.to_owned(),
                    source,
                })?;
            (file, path.display().to_string())
        }
        None => {
            let stdout = std::io::stdout()
                .as_fd()
                .try_clone_to_owned()
                .map(std::fs::File::from);
            match stdout {
                Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => {
                    (file, "standard output".to_owned())
                }
                _ => {
                    printer.error(
                        "standard output is not a file: the records are removed from the \
                         database only once the file holding them is on disk",
                        Some("redirect it (`toolwarden audit export --before 30d > old.jsonl`) or give --output FILE"),
                    );
                    return Ok(ExitStatus::Error);
                }
            }
        }
    };
    let records = Records::open(config)?;
    let sync_target = file.try_clone().map_err(|source| Error::Directory {
        what: "export file",
        path: output.map(Path::to_owned).unwrap_or_default(),
        source,
    })?;
    let sync = || sync_target.sync_all();
    match records.export_audit(cut, &mut file, &sync) {
        Ok(Some(header)) => {
            printer.note(format!(
                "exported records {} to {} ({}) to {shown}; the log now starts after record {} \
                 (`toolwarden audit verify --file` checks the export)",
                header.first_seq, header.last_seq, header.records, header.last_seq
            ));
            Ok(ExitStatus::Success)
        }
        Ok(None) => {
            printer.note("no record is that old: nothing was exported");
            if let Some(path) = output {
                let _ = std::fs::remove_file(path);
            }
            Ok(ExitStatus::Success)
        }
        Err(e) => {
            if let Some(path) = output {
                let _ = std::fs::remove_file(path);
            }
            printer.error(
                format!("{e} ({}); nothing was removed", e.code()),
                Some("the database is as it was; `toolwarden audit verify` checks it"),
            );
            Ok(ExitStatus::Failure)
        }
    }
}

pub fn head(config: &Config, json: bool, printer: Printer) -> Result<ExitStatus, Error> {
    let head = Records::open(config)?.audit_head()?;
    if json {
        printer.json(&head);
        return Ok(ExitStatus::Success);
    }
    match head {
        Some(head) => printer.out(format!("records {}\nhash {}", head.records, head.hash)),
        None => printer.out("no audit head yet: nothing has been recorded"),
    }
    Ok(ExitStatus::Success)
}
