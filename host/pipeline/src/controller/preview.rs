//! What a person asked about a call is shown, kept with the approval.
//!
//! A call that may change the workspace is rehearsed in a private copy of
//! it and shown as the change it made there (see `sandbox::rehearse`); the
//! approval binds that change. One that cannot be rehearsed (it may reach
//! the network or call other tools, or the workspace is too large to copy)
//! is shown as such: the plugin's own account, if it has a preview, marked
//! as not verified by the host, or else that nothing can be shown. A call
//! that cannot change the workspace is shown as its plugin previews it, if
//! it declares that it changes the workspace (as before rehearsals). None
//! of this decides anything or stops the approval from being asked.

use super::Controller;
use super::trail::Trail;
use crate::call::CallRequest;
use crate::capability::Grant;
use crate::presentation::{MAX_PREVIEW_BYTES, Rendered, View};
use crate::registry::Tool;
use crate::sandbox::{RunContext, changes_the_workspace};
use crate::spec::Effect;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A call the policy asks about, as it would run.
pub(super) struct Previewed {
    pub tool: Arc<Tool>,
    /// Canonical, validated.
    pub args: String,
    pub grant: Grant,
}

impl Controller {
    /// Shows the person asked about approval `id` what the call does, and
    /// holds the approval to it.
    pub(super) async fn preview(
        &self,
        request: &CallRequest,
        id: &str,
        previewed: Previewed,
        trail: &mut Trail,
    ) {
        trail.begin("preview");
        if !changes_the_workspace(&previewed.grant) {
            if previewed
                .tool
                .spec
                .effects
                .contains(Effect::MutatesWorkspace)
            {
                self.plugins_account(request, id, &previewed, None, trail)
                    .await;
            } else {
                trail.end(|| "the call cannot change the workspace".into());
            }
            return;
        }
        let cx = RunContext {
            call_id: request.call_id.clone(),
            session: request.session.clone(),
            cancel: request.cancel.clone(),
            answers: Arc::new(request.answers.clone()),
            ..RunContext::default()
        };
        let rehearsed = self
            .sandbox
            .rehearse(
                &previewed.tool,
                &previewed.args,
                &previewed.grant,
                &cx,
                &self.workspace,
            )
            .await;
        let rehearsal = match rehearsed {
            Ok(rehearsal) => rehearsal,
            Err(why) => {
                self.plugins_account(request, id, &previewed, Some(&why), trail)
                    .await;
                return;
            }
        };
        let title = match &rehearsal.failed {
            None => "what this call changes, rehearsed in a private copy of the workspace".into(),
            Some(error) if error.code == crate::outcome::ErrorCode::InputRequired => {
                "this call stops to ask a question when rehearsed in a private copy of the \
                 workspace; once it is answered, the call is asked about again with what it \
                 then changes. What it changed in the copy before it asked:"
                    .into()
            }
            Some(error) => format!(
                "this call fails when rehearsed in a private copy of the workspace ({}: {}), so \
                 approving it changes nothing; what it changed in the copy before it stopped:",
                error.code, error.message
            ),
        };
        let shown = Rendered::Shown {
            view: View::Diff,
            title: crate::presentation::cut_to(title, 1024),
            path: None,
            text: rehearsal.shown,
        };
        if let Err(e) = self
            .records
            .approval_book()
            .attach_rehearsal(id, &shown, &rehearsal.change)
        {
            tracing::warn!(approval = id, "the rehearsal could not be kept: {e}");
        }
        trail.end(|| {
            format!(
                "rehearsed in a copy: {} path(s) changed",
                rehearsal.change.changes.len()
            )
        });
    }

    /// Shows the plugin's own preview (when it has one), marked as not
    /// verified by the host when the call could change the workspace but
    /// was not rehearsed (`unrehearsed`, why). A `diff` it names is
    /// rendered against the file as it is now, and the approval held to it.
    async fn plugins_account(
        &self,
        request: &CallRequest,
        id: &str,
        previewed: &Previewed,
        unrehearsed: Option<&str>,
        trail: &mut Trail,
    ) {
        let tool = &previewed.tool;
        let mut bound = BTreeMap::new();
        let preview = if tool.plugin.loaded.presents() {
            match self
                .sandbox
                .preview(tool, &previewed.args, &request.call_id, &request.session)
                .await
            {
                Ok(None) => None,
                Ok(Some(presentation)) => {
                    let file = presentation
                        .path
                        .as_deref()
                        .filter(|_| presentation.view == View::Diff);
                    let current = file.and_then(|path| {
                        bound.insert(path.to_owned(), self.workspace.digest(path));
                        self.workspace.read(path, MAX_PREVIEW_BYTES)
                    });
                    Some(Rendered::preview(presentation, current.as_deref()))
                }
                Err(error) => Some(Rendered::Failed {
                    reason: format!("{}: {}", error.code, error.message),
                }),
            }
        } else {
            None
        };
        let preview = match (unrehearsed, preview) {
            (None, None) => {
                trail.end(|| "the tool has no preview".into());
                return;
            }
            (None, Some(preview)) => preview,
            (
                Some(why),
                Some(Rendered::Shown {
                    view,
                    title,
                    path,
                    text,
                }),
            ) => Rendered::Shown {
                view,
                title: format!(
                    "not verified by the host, which could not rehearse this call ({why}); the \
                     plugin's own account: {title}"
                ),
                path,
                text,
            },
            (Some(why), Some(Rendered::Failed { .. } | Rendered::Unverified { .. }) | None) => {
                Rendered::Unverified {
                    reason: why.to_owned(),
                }
            }
        };
        if let Err(e) = self
            .records
            .approval_book()
            .attach_preview(id, &preview, &bound)
        {
            tracing::warn!(approval = id, "the preview could not be kept: {e}");
        }
        trail.end(|| match &preview {
            Rendered::Shown { title, .. } => format!("previewed: {title}"),
            Rendered::Failed { reason } => format!("the preview failed: {reason}"),
            Rendered::Unverified { reason } => format!("not rehearsed: {reason}"),
        });
    }
}
