//! A call read back: its records give the arguments and value the audit log
//! kept, and the tool's plugin is asked, in a sandbox with nothing to reach,
//! how they look (`show.show-result`). The approval's preview, when the call
//! had one, comes from the approval it was asked or ran under. Nothing here
//! runs the tool or writes a record: reading a call back changes nothing.

use super::Controller;
use crate::audit::Record;
use crate::call::CallId;
use crate::error::Error;
use crate::presentation::Rendered;
use crate::store::AuditFilter;
use serde::Serialize;

/// A finished call as a person reads it back.
#[derive(Clone, Debug, Serialize)]
pub struct ShownCall {
    pub call_id: String,
    pub tool: String,
    /// How it ended: a stable code, or `ok`; none while it has not ended.
    pub outcome: Option<String>,
    /// What the person asked to approve it was shown, if it was asked about
    /// and previewed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<Rendered>,
    /// The tool's view of the result (or why it failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Rendered>,
    /// Why there is no view of the result, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_result: Option<String>,
    /// The loaded build of the tool's plugin is not the one that ran the
    /// call: the view is the newer build's account of the old result.
    pub other_build: bool,
}

impl Controller {
    /// Reads call `call_id` back from the audit log and asks its tool how
    /// its result looks. `Ok(None)`: the log has no such call.
    pub async fn show_call(&self, call_id: &str) -> Result<Option<ShownCall>, Error> {
        let filter = AuditFilter {
            call_id: Some(call_id.to_owned()),
            ..AuditFilter::default()
        };
        let records = self.records.audit(&filter)?;
        self.show_records(call_id, &records).await
    }

    /// [`Controller::show_call`] from records already read: every record
    /// of the call (records of other calls among them are passed over).
    pub async fn show_records(
        &self,
        call_id: &str,
        records: &[Record],
    ) -> Result<Option<ShownCall>, Error> {
        let records: Vec<&Record> = records
            .iter()
            .filter(|record| record.call_id == call_id)
            .collect();
        let Some(first) = records.first() else {
            return Ok(None);
        };
        let of_kind = |kind: &str| records.iter().rev().find(|record| record.kind == kind);
        let end = records
            .iter()
            .rev()
            .find(|record| record.kind == "outcome" || record.kind == "refused");
        let mut shown = ShownCall {
            call_id: call_id.to_owned(),
            tool: first.tool.clone(),
            outcome: end.map(|end| {
                end.data["code"]
                    .as_str()
                    .or(end.data["status"].as_str())
                    .unwrap_or(&end.kind)
                    .to_owned()
            }),
            preview: None,
            result: None,
            no_result: None,
            other_build: false,
        };
        let approval = of_kind("approval_consumed")
            .or_else(|| of_kind("approval_asked"))
            .and_then(|record| record.data["approval_id"].as_str());
        if let Some(id) = approval {
            shown.preview = self.records.approval(id)?.and_then(|a| a.preview);
        }
        let value = end
            .filter(|end| end.kind == "outcome" && end.data["status"] == "ok")
            .map(|end| &end.data["value"])
            .filter(|value| !value.is_null());
        let (Some(value), Some(call)) = (value, of_kind("call")) else {
            shown.no_result = Some("the call returned no value to show".into());
            return Ok(Some(shown));
        };
        let registry = self.registry();
        let Some(tool) = registry.get(&shown.tool) else {
            shown.no_result = Some(format!(
                "no loaded plugin has the tool `{}` any more",
                shown.tool
            ));
            return Ok(Some(shown));
        };
        if !tool.plugin.loaded.shows() {
            shown.no_result = Some("its plugin does not show results".into());
            return Ok(Some(shown));
        }
        shown.other_build = end
            .and_then(|end| end.data["plugin"]["sha256"].as_str())
            .is_some_and(|ran_on| ran_on != tool.plugin.sha256());
        let args = call.data["args"].to_string();
        let viewed = self
            .sandbox
            .show_result(
                tool,
                &args,
                &value.to_string(),
                &CallId::from(call_id.to_owned()),
            )
            .await;
        match viewed {
            Ok(Some(presentation)) => shown.result = Some(Rendered::result(presentation)),
            Ok(None) => shown.no_result = Some("the tool has no view of this result".into()),
            Err(error) => {
                shown.result = Some(Rendered::Failed {
                    reason: format!("{}: {}", error.code, error.message),
                })
            }
        }
        Ok(Some(shown))
    }
}
