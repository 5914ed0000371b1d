//! The MCP server: rmcp's `ServerHandler` over a Toolshed [`Stack`].

// MCP logging (`logging/setLevel`, `notifications/message`) is deprecated by SEP-2577 in
// protocol 2026-07-28 and rmcp marks its types deprecated, but every earlier protocol version
// (which most clients still negotiate) has it, and the server supports it on purpose.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
    ElicitResult, Implementation, InputRequest, InputRequests, InputRequiredResult,
    ListToolsResult, LoggingLevel, LoggingMessageNotificationParam, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, SetLevelRequestParams, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tool_core::{
    Approval, ApprovalRequest, AuditRecord, Content, Provider, Stack, ToolContext, ToolError,
    ToolOutput, ToolSpec, schema,
};

use crate::McpError;
use crate::approve::{AskMode, CallScope, ElicitApprover, ScopedAudit, approval_form, approval_of};
use crate::progress::Progress;

/// Serves a [`Stack`] over MCP. Cheap to clone; clones share the session state (the log
/// level) — use [`McpServer::for_new_session`] for a new connection.
#[derive(Debug, Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
    session: Arc<SessionState>,
}

#[derive(Debug)]
struct Shared {
    stack: Stack,
    ctx: ToolContext,
    tools: Vec<Tool>,
    by_name: HashMap<String, Tool>,
    /// Approvals sent as `InputRequiredResult`, by the `requestState` handed out with them.
    pending: Mutex<HashMap<String, Pending>>,
}

/// An approval asked for through an `InputRequiredResult`: the answer counts only for a retry
/// of the same call, once, within [`PENDING_TTL`].
#[derive(Debug)]
struct Pending {
    tool: String,
    args: Value,
    asked: Instant,
}

/// How long an approval asked through `InputRequiredResult` stays answerable.
const PENDING_TTL: Duration = Duration::from_secs(600);
/// The most approvals waiting at once (the oldest are forgotten first).
const PENDING_MAX: usize = 256;
/// The key of the approval form in `inputRequests`.
const APPROVAL_KEY: &str = "toolshed_approval";

/// What one connection chose.
#[derive(Debug, Default)]
struct SessionState {
    /// Set by `logging/setLevel`; `None`: no log notifications.
    log_level: Mutex<Option<LoggingLevel>>,
}

impl McpServer {
    /// A server over `stack`; every call gets `ctx.for_call()` (a new call id and a child of
    /// `ctx.cancel`).
    ///
    /// The stack's approver is replaced by one that asks the calling client through
    /// elicitation (and answers "unavailable" when it cannot), and its audit sink by one that
    /// writes to `tracing` and feeds log notifications: whoever built the stack cannot make
    /// the server approve anything silently.
    pub fn new(stack: Stack, ctx: ToolContext) -> McpServer {
        let stack = stack
            .with_approver(Arc::new(ElicitApprover))
            .with_audit(Arc::new(ScopedAudit::default()));
        let tools: Vec<Tool> = stack
            .registry()
            .specs()
            .into_iter()
            .filter_map(mcp_tool)
            .collect();
        let by_name = tools
            .iter()
            .map(|t| (t.name.to_string(), t.clone()))
            .collect();
        McpServer {
            shared: Arc::new(Shared {
                stack,
                ctx,
                tools,
                by_name,
                pending: Mutex::default(),
            }),
            session: Arc::default(),
        }
    }

    /// The same server with fresh per-connection state (for each HTTP session).
    pub fn for_new_session(&self) -> McpServer {
        McpServer {
            shared: Arc::clone(&self.shared),
            session: Arc::default(),
        }
    }

    /// The tools as `tools/list` returns them.
    pub fn tools(&self) -> &[Tool] {
        &self.shared.tools
    }

    /// Runs one call through the stack, with cancellation and progress wired to `context`.
    /// Returns the result, the audit record, and the approval the client still has to give
    /// through an `InputRequiredResult` (2026-07-28 only).
    async fn run(
        &self,
        name: &str,
        args: Value,
        context: &RequestContext<RoleServer>,
        preset: Option<Approval>,
    ) -> (
        Result<ToolOutput, ToolError>,
        Option<AuditRecord>,
        Option<ApprovalRequest>,
    ) {
        let mut ctx = self.shared.ctx.for_call();
        let mut progress = match context.meta.get_progress_token() {
            Some(token) => {
                let (forwarder, sink) = Progress::new(context.peer.clone(), token);
                ctx.events = sink;
                Some(forwarder)
            }
            None => None,
        };
        let cancel = ctx.cancel.clone();
        let scope = CallScope::new(
            context.peer.clone(),
            ask_mode(context),
            context.ct.clone(),
            preset,
        );
        let result = CallScope::run(Arc::clone(&scope), async {
            let call = self.shared.stack.call(name, args, ctx);
            tokio::pin!(call);
            let mut cancelled = false;
            loop {
                tokio::select! {
                    biased;
                    result = &mut call => break result,
                    () = context.ct.cancelled(), if !cancelled => {
                        // The stack notices, stops the tool and returns `Cancelled`.
                        cancelled = true;
                        cancel.cancel();
                    }
                    () = step(progress.as_mut()) => {}
                }
            }
        })
        .await;
        let wanted = match &result {
            Err(ToolError::NeedsApproval(_)) => scope.take_wanted(),
            _ => None,
        };
        (result, scope.take_audit(), wanted)
    }

    /// The answer a retried call carries for the approval it was asked for, if its
    /// `requestState` names an approval this server asked for this same call.
    fn redeem(
        &self,
        request: &CallToolRequestParams,
        name: &str,
        args: &Value,
    ) -> Option<Approval> {
        let state = request.request_state.as_deref()?;
        let pending = self.shared.pending.lock().ok()?.remove(state)?;
        if pending.tool != name || &pending.args != args || pending.asked.elapsed() > PENDING_TTL {
            tracing::warn!(
                tool = name,
                "an approval answer did not match the call it was asked for"
            );
            return None;
        }
        let answer = request.input_responses.as_ref()?.get(APPROVAL_KEY)?;
        match serde_json::from_value::<ElicitResult>(answer.clone()) {
            Ok(result) => Some(approval_of(&result)),
            Err(e) => {
                tracing::warn!(tool = name, error = %e, "an approval answer does not parse");
                None
            }
        }
    }

    /// The `InputRequiredResult` asking the client to approve `request`; remembers the call so
    /// that its retry can be matched.
    fn input_required(
        &self,
        request: &ApprovalRequest,
        name: &str,
        args: Value,
    ) -> Option<InputRequiredResult> {
        let form = approval_form(request)?;
        let state = uuid::Uuid::new_v4().simple().to_string();
        let mut pending = self.shared.pending.lock().ok()?;
        pending.retain(|_, p| p.asked.elapsed() <= PENDING_TTL);
        while pending.len() >= PENDING_MAX {
            let oldest = pending
                .iter()
                .min_by_key(|(_, p)| p.asked)
                .map(|(k, _)| k.clone())?;
            pending.remove(&oldest);
        }
        pending.insert(
            state.clone(),
            Pending {
                tool: name.to_string(),
                args,
                asked: Instant::now(),
            },
        );
        let mut requests = InputRequests::new();
        requests.insert(
            APPROVAL_KEY.to_string(),
            InputRequest::Elicitation(ElicitRequest::new(form)),
        );
        Some(InputRequiredResult::new(Some(requests), Some(state)))
    }

    /// Sends the call's audit record as a log notification, if the client opted in.
    async fn log_audit(&self, context: &RequestContext<RoleServer>, record: &AuditRecord) {
        let threshold = context
            .meta
            .log_level()
            .or_else(|| self.session.log_level.lock().ok().and_then(|level| *level));
        let Some(threshold) = threshold else { return };
        let level = match record.outcome.as_str() {
            "ok" => LoggingLevel::Info,
            "internal" => LoggingLevel::Error,
            _ => LoggingLevel::Warning,
        };
        if rank(level) < rank(threshold) {
            return;
        }
        let data = serde_json::to_value(record).unwrap_or(Value::Null);
        let param = LoggingMessageNotificationParam::new(level, data).with_logger("toolshed.audit");
        if let Err(e) = context.peer.notify_logging_message(param).await {
            tracing::debug!(error = %e, "a log notification could not be sent");
        }
    }
}

async fn step(progress: Option<&mut Progress>) {
    match progress {
        Some(p) => p.step().await,
        None => std::future::pending().await,
    }
}

/// How this request's client can be asked: not at all (no elicitation capability), with an
/// elicitation request, or (2026-07-28, which forbids server-to-client requests) through an
/// `InputRequiredResult`.
fn ask_mode(context: &RequestContext<RoleServer>) -> AskMode {
    let can = context
        .client_capabilities()
        .is_some_and(|c| c.elicitation.is_some());
    let modern = context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    match (can, modern) {
        (false, _) => AskMode::No,
        (true, false) => AskMode::Elicit,
        (true, true) => AskMode::InputRequired,
    }
}

fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// The `tools/list` entry of `spec`.
fn mcp_tool(spec: &ToolSpec) -> Option<Tool> {
    match serde_json::from_value::<Tool>(schema::export(spec, Provider::Mcp)) {
        Ok(tool) => Some(tool),
        Err(e) => {
            tracing::error!(tool = %spec.name, error = %e, "a tool cannot be listed over MCP");
            None
        }
    }
}

/// A successful call's result: text and image parts, and the structured value.
pub(crate) fn success(out: ToolOutput) -> CallToolResult {
    let content = out
        .content
        .into_iter()
        .filter_map(|part| match part {
            Content::Text { text } => Some(ContentBlock::text(text)),
            Content::Image { mime_type, data } => Some(ContentBlock::image(data, mime_type)),
            _ => None,
        })
        .collect();
    let mut result = CallToolResult::success(content);
    result.structured_content = out.structured;
    result
}

/// A failed call's result: `isError: true`, the text `kind: sentence`, and the same two
/// fields as structured content.
pub(crate) fn failure(error: &ToolError) -> CallToolResult {
    let kind = error.kind().as_str();
    let message = match error {
        // tool-core's sentence speaks of `--yes`, which an MCP client has no way to pass.
        ToolError::NeedsApproval(request) => format!(
            "`{}` needs approval ({}): {}. No one could be asked through this MCP client (it \
             does not support elicitation, or the request failed); allow the call with a rule \
             in toolshed.toml ([policy.rules]), or use a client that supports elicitation.",
            request.tool_label(),
            request.reason,
            request.summary.join("; ")
        ),
        other => other.to_string(),
    };
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!("{kind}: {message}"))]);
    result.structured_content = Some(json!({"error": {"kind": kind, "message": message}}));
    result
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
        let mut implementation = Implementation::new("toolshed", env!("CARGO_PKG_VERSION"));
        implementation.title = Some("Toolshed".into());
        ServerConfig::new(capabilities)
            .with_server_info(implementation)
            .with_instructions(
                "Toolshed's tools: files, search, patches, git and more, confined to one \
                 workspace and checked by one policy. A refused call comes back as an error \
                 result that says why and what to do instead.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.shared.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared.by_name.get(name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        // An unknown tool is a protocol error (-32602) in every version of the specification;
        // everything that goes wrong once the tool is known is a result the model can read.
        if self.shared.stack.registry().spec(name).is_none() {
            let names = self.shared.stack.registry().names();
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {name}"),
                Some(json!({"tools": names})),
            ));
        }
        // Parsed by rmcp already, so duplicate keys were merged before they got here (only
        // `Stack::call_json` refuses them); the depth limit and the schema still apply.
        let args = request
            .arguments
            .clone()
            .map(Value::Object)
            .unwrap_or(json!({}));
        let preset = self.redeem(&request, name, &args);
        let (result, record, wanted) = self.run(name, args.clone(), &context, preset).await;
        if let Some(record) = &record {
            self.log_audit(&context, record).await;
        }
        if let Some(wanted) = wanted
            && let Some(input) = self.input_required(&wanted, name, args)
        {
            return Ok(input.into());
        }
        Ok(match result {
            Ok(out) => success(out),
            Err(e) => failure(&e),
        }
        .into())
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut level) = self.session.log_level.lock() {
            *level = Some(request.level);
        }
        Ok(())
    }
}

/// Serves `server` on standard input and output until the client closes them.
pub async fn serve_stdio(server: McpServer) -> Result<(), McpError> {
    let running = server
        .serve(rmcp::transport::stdio_pipes())
        .await
        .map_err(|e| McpError::Start(format!("the MCP handshake on stdio failed: {e}")))?;
    let reason = running
        .waiting()
        .await
        .map_err(|e| McpError::Serve(format!("the MCP stdio service stopped: {e}")))?;
    tracing::debug!(?reason, "MCP stdio service finished");
    Ok(())
}
