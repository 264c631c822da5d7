//! `toolwarden approvals list|show|approve|deny`.

use crate::ExitStatus;
use crate::approval::{Approval, ApprovalDecision, Decided};
use crate::caller::Caller;
use crate::config::Config;
use crate::error::Error;
use crate::printer::{Printer, timestamp};
use crate::records::Records;

fn state(approval: &Approval) -> &'static str {
    if approval.expired {
        "expired"
    } else {
        approval.state
    }
}

pub fn list(config: &Config, json: bool, printer: Printer) -> Result<ExitStatus, Error> {
    let approvals = Records::open(config)?.approvals()?;
    if json {
        printer.json(&approvals);
        return Ok(ExitStatus::Success);
    }
    if approvals.is_empty() {
        printer.out("no approvals");
        return Ok(ExitStatus::Success);
    }
    printer.out(format!(
        "{:36}  {:9}  {:9}  {:24}  {:20}  EXPIRES",
        "ID", "STATE", "APPROVED", "TOOL", "CREATED"
    ));
    for a in &approvals {
        let approved = a.decisions.iter().filter(|d| d.approved).count();
        printer.out(format!(
            "{:36}  {:9}  {:9}  {:24}  {:20}  {}",
            a.id,
            state(a),
            format!("{approved}/{}", a.approvers_needed),
            a.tool,
            timestamp(a.created_ms),
            timestamp(a.expires_ms)
        ));
    }
    Ok(ExitStatus::Success)
}

pub fn show(config: &Config, id: &str, json: bool, printer: Printer) -> Result<ExitStatus, Error> {
    let Some(a) = Records::open(config)?.approval(id)? else {
        printer.error(
            format!("there is no approval `{id}`"),
            Some("`toolwarden approvals list` shows them all"),
        );
        return Ok(ExitStatus::Error);
    };
    if json {
        printer.json(&a);
        return Ok(ExitStatus::Success);
    }
    printer.out(format!("approval   {}", a.id));
    printer.out(format!("state      {}", state(&a)));
    printer.out(format!("tool       {}", a.tool));
    printer.out(format!(
        "arguments  {}",
        serde_json::to_string_pretty(&a.args)
            .unwrap_or_default()
            .replace('\n', "\n           ")
    ));
    printer.out(format!("capability filesystem {}", a.capability));
    printer.out(format!("network    {}", a.network));
    printer.out(format!("session    {}", a.session));
    if let Some(profile) = &a.profile {
        printer.out(format!("profile    {profile}"));
    }
    printer.out(format!("plugin     sha256 {}", a.plugin_sha256));
    if let Some(preview) = &a.preview {
        printer.rendered(preview, "would", "preview");
    }
    let files = || crate::presentation::one_line(&a.bound_files.join(", "));
    if a.rehearsed.is_some() {
        printer.out(format!(
            "applies    exactly the change shown ({}): the approved call runs again in a fresh \
             copy of the workspace, and if it would change anything else, nothing is changed",
            if a.bound_files.is_empty() {
                "nothing".to_owned()
            } else {
                files()
            }
        ));
    } else if !a.bound_files.is_empty() {
        printer.out(format!(
            "held to    the current content of {} (if it changes, the approved call is refused)",
            files()
        ));
    }
    printer.out(format!("reason     {}", a.reason));
    printer.out(format!(
        "created    {}{}",
        timestamp(a.created_ms),
        a.asked_by
            .as_ref()
            .map(|who| format!(" by {who}"))
            .unwrap_or_default()
    ));
    if a.approvers_needed > 1 || !a.self_approval {
        printer.out(format!("approvers  {}", a.approvers()));
    }
    for d in &a.decisions {
        printer.out(format!(
            "{}   {} ({}, {}) at {}{}",
            if d.approved { "approved" } else { "denied  " },
            d.name,
            d.proof,
            d.channel,
            timestamp(d.decided_ms),
            d.reason
                .as_ref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ));
    }
    printer.out(format!("expires    {}", timestamp(a.expires_ms)));
    if let Some(why) = &a.decided_reason {
        printer.out(format!("decided    {why}"));
    }
    Ok(ExitStatus::Success)
}

pub fn decide(
    config: &Config,
    id: &str,
    (decision, reason): (ApprovalDecision, Option<String>),
    json: bool,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let records = Records::open(config)?;
    let at_cli = (crate::approval::Decider::Cli, &Caller::os_user());
    match records.decide(id, decision, reason.as_deref(), at_cli)? {
        Decided::Missing => {
            printer.error(
                format!("there is no approval `{id}`"),
                Some("`toolwarden approvals list` shows them all"),
            );
            Ok(ExitStatus::Error)
        }
        Decided::Stale(a) => {
            printer.error(
                format!("approval `{id}` is {}; nothing changed", state(&a)),
                Some("only a pending, unexpired approval can be decided"),
            );
            Ok(ExitStatus::Failure)
        }
        Decided::OwnCall(a) => {
            printer.error(
                format!(
                    "you asked for this call (as {}), and the policy wants {} to approve it; \
                     nothing changed",
                    a.asked_by.as_deref().unwrap_or("its caller"),
                    a.approvers()
                ),
                Some("another person approves it, with their own account"),
            );
            Ok(ExitStatus::Failure)
        }
        Decided::Counted { approval: a, .. } | Decided::Now(a) if json => {
            printer.json(&a);
            Ok(ExitStatus::Success)
        }
        Decided::Counted { approval: a, again } => {
            printer.out(format!(
                "{} `{id}` as {}; the policy wants {}, so `{}` waits for {} more",
                if again {
                    "you had already approved"
                } else {
                    "counted your approval of"
                },
                Caller::os_user().subject,
                a.approvers(),
                a.tool,
                a.awaiting()
            ));
            Ok(ExitStatus::Success)
        }
        Decided::Now(a) if decision == ApprovalDecision::Approve => {
            printer.out(format!(
                "approved `{id}`: `{}` may run once with exactly these arguments, in session `{}`, until {}.\n\
                 Run it with: toolwarden call {} '{}' --approval {id}",
                a.tool,
                a.session,
                timestamp(a.expires_ms),
                a.tool,
                a.args
            ));
            Ok(ExitStatus::Success)
        }
        Decided::Now(a) => {
            printer.out(format!(
                "denied `{id}`: `{}` will not run with these arguments",
                a.tool
            ));
            Ok(ExitStatus::Success)
        }
    }
}
