//! Approval through MCP elicitation, and audit records captured per call.
//!
//! One [`Stack`](tool_core::Stack) serves every connection, but an approval must go to the
//! client that made the call. The stack polls the tool, the approver and the audit sink on the
//! caller's task, so each `tools/call` runs inside a task-local [`CallScope`] naming its peer;
//! the approver and the audit sink look it up there.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, Peer, RoleServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tool_core::{Approval, ApprovalRequest, Approver, AuditRecord, AuditSink, TracingAudit};

/// How long a human has to answer an approval request.
const APPROVAL_TIMEOUT: Duration = Duration::from_secs(600);

tokio::task_local! {
    static SCOPE: Arc<CallScope>;
}

/// How the current call's client can be asked for an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AskMode {
    /// It cannot: it did not declare the elicitation capability.
    No,
    /// Send it an `elicitation/create` request (protocols before 2026-07-28).
    Elicit,
    /// Answer the call with an `InputRequiredResult` carrying the elicitation, and run it again
    /// when the client retries with the answer (2026-07-28, where servers send no requests).
    InputRequired,
}

/// What the approver and the audit sink need to know about the call running on this task.
#[derive(Debug)]
pub(crate) struct CallScope {
    /// The client that made the call.
    pub(crate) peer: Peer<RoleServer>,
    /// How that client can be asked.
    pub(crate) ask: AskMode,
    /// Cancelled when the client cancels the call.
    pub(crate) cancel: CancellationToken,
    /// The answer the client already gave for this call (a retried `InputRequired` round).
    pub(crate) preset: Mutex<Option<Approval>>,
    /// The approval the approver could not ask for in place ([`AskMode::InputRequired`]).
    pub(crate) wanted: Mutex<Option<ApprovalRequest>>,
    /// The call's audit record, once the stack has written it.
    pub(crate) audit: Mutex<Option<AuditRecord>>,
}

impl CallScope {
    /// A scope for a call from `peer`.
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        ask: AskMode,
        cancel: CancellationToken,
        preset: Option<Approval>,
    ) -> Arc<CallScope> {
        Arc::new(CallScope {
            peer,
            ask,
            cancel,
            preset: Mutex::new(preset),
            wanted: Mutex::new(None),
            audit: Mutex::new(None),
        })
    }

    /// Runs `fut` with `scope` as the current call.
    pub(crate) async fn run<F: Future>(scope: Arc<CallScope>, fut: F) -> F::Output {
        SCOPE.scope(scope, fut).await
    }

    fn current() -> Option<Arc<CallScope>> {
        SCOPE.try_with(Arc::clone).ok()
    }

    /// Takes the audit record the stack wrote.
    pub(crate) fn take_audit(&self) -> Option<AuditRecord> {
        self.audit.lock().ok().and_then(|mut a| a.take())
    }

    /// Takes the approval request that has to go back to the client as input required.
    pub(crate) fn take_wanted(&self) -> Option<ApprovalRequest> {
        self.wanted.lock().ok().and_then(|mut w| w.take())
    }
}

/// The yes/no form a human answers.
pub(crate) fn approval_form(request: &ApprovalRequest) -> Option<ElicitRequestParams> {
    let schema = json!({
        "type": "object",
        "properties": {
            "approve": {
                "type": "boolean",
                "title": "Approve",
                "description": "Allow this one call to run.",
                "default": false,
            }
        },
        "required": ["approve"],
    });
    let schema = match ElicitationSchema::from_json_schema(schema.as_object()?.clone()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "the approval form schema does not build");
            return None;
        }
    };
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!(
            "Toolshed asks before running `{}`: {}.\n  {}\nApprove this call?",
            request.tool_label(),
            request.reason,
            request.summary.join("\n  ")
        ),
        requested_schema: schema,
    })
}

/// What an elicitation answer means for the approval.
pub(crate) fn approval_of(result: &ElicitResult) -> Approval {
    match result.action {
        ElicitationAction::Accept => {
            let yes = result
                .content
                .as_ref()
                .and_then(|c| c.get("approve"))
                .and_then(serde_json::Value::as_bool)
                == Some(true);
            if yes {
                Approval::Approved
            } else {
                Approval::Refused(None)
            }
        }
        ElicitationAction::Decline => Approval::Refused(Some("declined".into())),
        ElicitationAction::Cancel => {
            Approval::Refused(Some("the approval request was dismissed".into()))
        }
        // A future action this build does not know is not a yes.
        _ => Approval::Refused(None),
    }
}

/// Asks the calling client's user through a form elicitation (one yes/no field).
///
/// Without a current call or the client's elicitation capability, or when the request fails
/// (transport, timeout), the answer is [`Approval::Unavailable`]: the call fails with
/// `needs_approval`. On 2026-07-28 the request is recorded for an `InputRequiredResult`
/// instead, and the call ends with `needs_approval` until the client retries with the answer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ElicitApprover;

#[async_trait]
impl Approver for ElicitApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let Some(scope) = CallScope::current() else {
            return Approval::Unavailable;
        };
        if let Some(answer) = scope.preset.lock().ok().and_then(|mut p| p.take()) {
            return answer;
        }
        match scope.ask {
            AskMode::No => return Approval::Unavailable,
            AskMode::InputRequired => {
                if let Ok(mut wanted) = scope.wanted.lock() {
                    *wanted = Some(request.clone());
                }
                return Approval::Unavailable;
            }
            AskMode::Elicit => {}
        }
        if !scope
            .peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            return Approval::Unavailable;
        }
        let Some(form) = approval_form(request) else {
            return Approval::Unavailable;
        };
        let ask = scope
            .peer
            .create_elicitation_with_timeout(form, Some(APPROVAL_TIMEOUT));
        let answer = tokio::select! {
            answer = ask => answer,
            () = scope.cancel.cancelled() => {
                return Approval::Refused(Some("the call was cancelled while waiting for approval".into()));
            }
        };
        match answer {
            Ok(result) => approval_of(&result),
            Err(e) => {
                tracing::warn!(error = %e, tool = %request.tool, "elicitation for approval failed");
                Approval::Unavailable
            }
        }
    }
}

/// Writes every record to `tracing` and keeps it for the current call's log notification.
#[derive(Debug, Default)]
pub(crate) struct ScopedAudit {
    inner: TracingAudit,
}

impl AuditSink for ScopedAudit {
    fn record(&self, record: &AuditRecord) {
        self.inner.record(record);
        if let Some(scope) = CallScope::current()
            && let Ok(mut slot) = scope.audit.lock()
        {
            *slot = Some(record.clone());
        }
    }
}
