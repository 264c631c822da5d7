//! The two ways an MCP client lets a person decide on an approval: a form
//! elicitation mid-call (legacy clients that declared it), or, for a
//! 2026-07-28 client, an `input_required` result whose retry carries the
//! answer. Either way the answer goes through the approval book; this
//! module never runs a call.

use super::{ELICITATION_TIMEOUT, Server, input};
use crate::approval::{ApprovalDecision, Decided};
use crate::call::CallRequest;
use crate::outcome::{CallResult, ErrorCode};
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitRequest, ElicitRequestParams, InputRequest,
    InputRequiredResult,
};
use rmcp::service::{Peer, RequestContext};
use toolwarden::caller::Caller;

impl Server {
    /// What the person behind `caller`'s client is shown to decide on
    /// approval `id`; none when their decision could add nothing (they
    /// decided already, or the rules want someone other than the caller),
    /// so they are not asked again and again.
    pub(super) fn approval_question(
        &self,
        id: &str,
        caller: Option<&Caller>,
    ) -> Option<ElicitRequestParams> {
        let approval = self.host.records().approval(id).ok()??;
        if !approval.awaits(&Caller::identity_of(caller)) {
            return None;
        }
        input::approval_form(
            format!(
                "toolwarden asks you to approve one call (approval {}).\n\ntool: {}\narguments: {}\ncapability: filesystem {}, network {}\nwhy the policy asks: {}\n\nChoose \"Approve this one call\" to let it run once, or \"Deny\".",
                approval.id,
                crate::presentation::one_line(&approval.tool),
                crate::presentation::visible(&approval.args.to_string()),
                approval.capability,
                approval.network,
                crate::presentation::visible(&approval.reason),
            ),
            input::Approving::Call,
        )
    }

    /// Records the answer of the person behind the client to approval
    /// `id`: the request's caller as its token proved it, or over stdio
    /// the OS user who started this server. `true` when the call should be
    /// tried again: the answer decided the approval, or someone else had
    /// (the retry says how). `false` when it waits for others, counted
    /// towards a quorum or not counted at all: asking this person again
    /// would not change that.
    pub(super) fn record_answer(
        &self,
        id: &str,
        decision: ApprovalDecision,
        caller: Option<&Caller>,
    ) -> bool {
        let reason = match decision {
            ApprovalDecision::Approve => "approved by the user of the MCP client",
            ApprovalDecision::Deny => "declined by the user of the MCP client",
        };
        let who = caller.cloned().unwrap_or_else(Caller::os_user);
        match self.host.records().decide(
            id,
            decision,
            Some(reason),
            (crate::approval::Decider::Mcp, &who),
        ) {
            Ok(Decided::Now(_)) => true,
            Ok(Decided::Counted { approval, .. }) => {
                tracing::info!(
                    "approval {id} counted the client's answer and waits for {} more",
                    approval.awaiting()
                );
                false
            }
            Ok(Decided::OwnCall(_)) => {
                tracing::warn!(
                    "approval {id} needs someone other than its caller; the client's answer was not counted"
                );
                false
            }
            Ok(Decided::Stale(_)) => true,
            Ok(Decided::Missing) => false,
            Err(e) => {
                tracing::error!("cannot record the answer to approval {id}: {e}");
                false
            }
        }
    }

    /// Asks the person behind a legacy client about a pending approval,
    /// mid-call, and records the answer. `false` when there was no answer.
    pub(super) async fn elicit(
        &self,
        peer: &Peer<RoleServer>,
        id: &str,
        caller: Option<&Caller>,
    ) -> bool {
        let Some(params) = self.approval_question(id, caller) else {
            return false;
        };
        let answer = match tokio::time::timeout(
            ELICITATION_TIMEOUT,
            peer.create_elicitation(params),
        )
        .await
        {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                tracing::warn!("elicitation for approval {id} failed: {e}");
                return false;
            }
            Err(_) => return false,
        };
        match input::decision(&answer.action, answer.content.as_ref()) {
            Some(decision) => self.record_answer(id, decision, caller),
            None => false,
        }
    }

    /// For a 2026-07-28 client that can show a form: an `input_required`
    /// result asking about approval `id`, with a single-use request state.
    /// `None` when the client cannot be asked.
    pub(super) fn ask_to_retry(
        &self,
        cx: &RequestContext<RoleServer>,
        id: String,
        request: &CallRequest,
    ) -> Option<CallToolResponse> {
        cx.client_capabilities()?.elicitation.as_ref()?;
        let question = self.approval_question(&id, request.caller.as_deref())?;
        let state = self.states.issue(input::Pending::Approval {
            approval_id: id,
            session: request.session.clone(),
            tool: request.tool.clone(),
        })?;
        let requests = [(
            input::APPROVAL_INPUT.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(question)),
        )]
        .into();
        Some(CallToolResponse::InputRequired(InputRequiredResult::new(
            Some(requests),
            Some(state),
        )))
    }

    /// A 2026-07-28 client's retry with the person's answer to approval
    /// `approval_id` (its request state already redeemed): records the
    /// answer and makes `request` carry the approval and the session that
    /// asked. `Err` is the refusal to return; nothing runs then.
    pub(super) fn resume(
        &self,
        approval_id: String,
        session: crate::call::SessionId,
        tool: &str,
        params: &CallToolRequestParams,
        request: &mut CallRequest,
    ) -> Result<(), Box<CallResult>> {
        if tool != params.name {
            let error = crate::outcome::CallError::new(
                ErrorCode::ApprovalInvalid,
                "the request state belongs to a call of another tool; nothing ran",
            );
            return Err(Box::new(self.host.refuse(request.clone(), error)));
        }
        let decision = params
            .input_responses
            .as_ref()
            .and_then(|r| r.get(input::APPROVAL_INPUT))
            .and_then(input::reply_decision);
        if let Some(decision) = decision {
            self.record_answer(&approval_id, decision, request.caller.as_deref());
        }
        request.session = session;
        request.approval = Some(approval_id);
        Ok(())
    }
}
