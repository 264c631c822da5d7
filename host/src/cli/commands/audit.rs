//! `toolwarden audit [--json] [--since] [--tool] [--call]`, `audit show`,
//! `audit verify`, `audit head` and `audit stats`.

use crate::audit::{HeadCheck, Verification};
use crate::cli::ExitStatus;
use crate::cli::args::AuditArgs;
use crate::cli::printer::{Printer, timestamp};
use crate::config::Config;
use crate::controller::Controller;
use crate::error::Error;
use crate::presentation::visible;
use crate::records::{AuditFilter, Records};

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
        Verification::Intact { records, head } => {
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
                printer.out(format!(
                    "audit log intact: {records} records, every hash and link checks out, {head}"
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
