//! The MCP server driven by rmcp's own client over an in-memory pipe, with test tools that
//! stream output, ask for approval, fail and return images.

// Test fixtures build real files directly.
#![allow(clippy::disallowed_methods)]
// Logging is deprecated in protocol 2026-07-28 (SEP-2577) but tested here on purpose.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::schemars::{self, JsonSchema};
use tool_core::{
    Access, Annotations, Limits, Policy, Registry, Stack, Tool, ToolContext, ToolError, ToolOutput,
    Workspace, typed,
};
use toolshed_mcp::McpServer;

// ---------------------------------------------------------------------------------------------
// Test tools.

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EchoArgs {
    /// What to echo.
    text: String,
}

/// Echoes text, with a 1×1 PNG and a structured copy.
struct Echo;

#[async_trait]
impl Tool for Echo {
    const NAME: &'static str = "echo";
    type Args = EchoArgs;
    fn description(&self) -> String {
        "Echo the text back.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }
    fn access(&self, _ctx: &ToolContext, _args: &EchoArgs) -> Result<Vec<Access>, ToolError> {
        Ok(vec![])
    }
    async fn call(&self, _ctx: &ToolContext, args: EchoArgs) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(args.text.clone())
            .with_image("image/png", PNG)
            .with_structured(json!({"echoed": args.text})))
    }
}

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TickArgs {
    /// How many ticks.
    ticks: u32,
    /// Milliseconds between ticks.
    interval_ms: u64,
}

/// Emits `tick N` output events, observing cancellation.
struct Ticker;

#[async_trait]
impl Tool for Ticker {
    const NAME: &'static str = "ticker";
    type Args = TickArgs;
    fn description(&self) -> String {
        "Tick slowly.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }
    fn access(&self, _ctx: &ToolContext, _args: &TickArgs) -> Result<Vec<Access>, ToolError> {
        Ok(vec![])
    }
    async fn call(&self, ctx: &ToolContext, args: TickArgs) -> Result<ToolOutput, ToolError> {
        for i in 0..args.ticks {
            ctx.emit_output(format!("tick {i}\n"));
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(args.interval_ms)) => {}
                () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            }
        }
        Ok(ToolOutput::text(format!("{} ticks", args.ticks)))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FetchArgs {
    /// The host.
    host: String,
}

/// Touches the network, which the supervised policy asks about.
struct Fetch;

#[async_trait]
impl Tool for Fetch {
    const NAME: &'static str = "fetch";
    type Args = FetchArgs;
    fn description(&self) -> String {
        "Pretend to fetch from a host.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY.open_world(true)
    }
    fn access(&self, _ctx: &ToolContext, args: &FetchArgs) -> Result<Vec<Access>, ToolError> {
        Ok(vec![Access::Network {
            host: args.host.clone(),
        }])
    }
    async fn call(&self, _ctx: &ToolContext, args: FetchArgs) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("fetched {}", args.host)))
    }
}

fn server(dir: &std::path::Path) -> McpServer {
    let mut registry = Registry::new();
    registry
        .register_all([typed(Echo), typed(Ticker), typed(Fetch)])
        .unwrap();
    let ctx = ToolContext::new(
        Workspace::local(dir).unwrap(),
        Arc::new(Policy::supervised()),
        Arc::new(Limits::default()),
    );
    // Even a stack built to approve everything must not approve silently over MCP.
    McpServer::new(
        Stack::new(registry).with_approver(Arc::new(tool_core::ApproveAll)),
        ctx,
    )
}

// ---------------------------------------------------------------------------------------------
// The client.

#[derive(Debug, Clone, Default)]
struct Client {
    /// `None`: no elicitation capability; `Some(yes)`: answer every approval with `yes`.
    approve: Option<bool>,
    asked: Arc<Mutex<Vec<String>>>,
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    logs: Arc<Mutex<Vec<LoggingMessageNotificationParam>>>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.approve.is_some() {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("test-client", "0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.asked.lock().unwrap().push(message);
        }
        let yes = self.approve.unwrap_or(false);
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": yes})))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().unwrap().push(params);
    }
}

async fn connect(server: McpServer, client: Client) -> RunningService<RoleClient, Client> {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = server.serve(tokio::io::split(server_io)).await.unwrap();
        let _ = running.waiting().await;
    });
    client.serve(tokio::io::split(client_io)).await.unwrap()
}

fn call(name: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_string()).with_arguments(args.as_object().unwrap().clone())
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn lists_tools_with_schemas_and_hints() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(server(dir.path()), Client::default()).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["echo", "fetch", "ticker"]);
    let echo = &tools[0];
    assert_eq!(echo.input_schema["required"], json!(["text"]));
    assert_eq!(echo.input_schema["additionalProperties"], json!(false));
    let hints = echo.annotations.as_ref().unwrap();
    assert_eq!(hints.read_only_hint, Some(true));
    assert_eq!(hints.destructive_hint, Some(false));
    assert_eq!(hints.idempotent_hint, Some(true));
    assert_eq!(hints.open_world_hint, Some(false));
    assert_eq!(
        tools[1].annotations.as_ref().unwrap().open_world_hint,
        Some(true)
    );
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "toolshed");
    assert!(info.capabilities.tools.is_some());
    assert!(info.capabilities.logging.is_some());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn calls_return_text_images_and_structured_content() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(server(dir.path()), Client::default()).await;
    let result = client
        .call_tool(call("echo", json!({"text": "hello"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(text(&result), "hello");
    let image = result.content.iter().find_map(|c| c.as_image()).unwrap();
    assert_eq!(image.mime_type, "image/png");
    assert_eq!(image.data, PNG);
    assert_eq!(result.structured_content, Some(json!({"echoed": "hello"})));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn tool_errors_are_results_and_unknown_tools_are_protocol_errors() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(server(dir.path()), Client::default()).await;

    // Invalid arguments: a result the model can read, naming the field.
    let bad = client
        .call_tool(call("echo", json!({"text": 5})))
        .await
        .unwrap();
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).starts_with("invalid_args: "), "{}", text(&bad));
    assert_eq!(
        bad.structured_content.as_ref().unwrap()["error"]["kind"],
        "invalid_args"
    );

    // Unknown tool: JSON-RPC -32602.
    let err = client.call_tool(call("ecoh", json!({}))).await.unwrap_err();
    match err {
        rmcp::ServiceError::McpError(e) => {
            assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            assert!(e.message.contains("Unknown tool: ecoh"), "{}", e.message);
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn asks_without_elicitation_fail_with_needs_approval() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(server(dir.path()), Client::default()).await;
    let result = client
        .call_tool(call("fetch", json!({"host": "example.com"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).starts_with("needs_approval: "),
        "{}",
        text(&result)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn asks_go_to_the_client_through_elicitation() {
    let dir = tempfile::tempdir().unwrap();
    let yes = Client {
        approve: Some(true),
        ..Client::default()
    };
    let asked = Arc::clone(&yes.asked);
    let client = connect(server(dir.path()), yes).await;
    let result = client
        .call_tool(call("fetch", json!({"host": "example.com"})))
        .await
        .unwrap();
    assert_eq!(text(&result), "fetched example.com");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].contains("`fetch`") && asked[0].contains("example.com"),
        "{}",
        asked[0]
    );
    client.cancel().await.unwrap();

    let no = Client {
        approve: Some(false),
        ..Client::default()
    };
    let client = connect(server(dir.path()), no).await;
    let result = client
        .call_tool(call("fetch", json!({"host": "example.com"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).starts_with("denied: The user refused"),
        "{}",
        text(&result)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn output_events_become_rate_limited_progress() {
    let dir = tempfile::tempdir().unwrap();
    let c = Client::default();
    let progress = Arc::clone(&c.progress);
    let client = connect(server(dir.path()), c).await;
    // 30 ticks 10 ms apart: ~300 ms, so at most ~4 notifications at one per 100 ms.
    let result = client
        .call_tool(call("ticker", json!({"ticks": 30, "interval_ms": 10})))
        .await
        .unwrap();
    assert_eq!(text(&result), "30 ticks");
    let progress = progress.lock().unwrap().clone();
    assert!(!progress.is_empty(), "no progress notifications");
    assert!(progress.len() <= 6, "not rate-limited: {}", progress.len());
    assert!(progress.windows(2).all(|w| w[0].progress < w[1].progress));
    let first = progress[0].message.as_deref().unwrap();
    assert!(first.starts_with("tick 0\n"), "{first}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn cancellation_stops_the_running_tool_and_is_audited() {
    let dir = tempfile::tempdir().unwrap();
    let c = Client::default();
    let logs = Arc::clone(&c.logs);
    let client = connect(server(dir.path()), c).await;
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .unwrap();

    // A call that would take 100 s, abandoned after 300 ms: rmcp's client sends
    // notifications/cancelled when the request future is dropped.
    let slow = client.call_tool(call("ticker", json!({"ticks": 1000, "interval_ms": 100})));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), slow)
            .await
            .is_err()
    );
    // The audit record of the cancelled call arrives as a log notification.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let record = loop {
        let found = logs
            .lock()
            .unwrap()
            .iter()
            .find(|l| l.data["tool"] == "ticker")
            .cloned();
        if let Some(found) = found {
            break found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no audit log for the cancelled call"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(record.data["outcome"], "cancelled");
    assert_eq!(record.logger.as_deref(), Some("toolshed.audit"));
    assert!(record.data["duration_ms"].as_u64().unwrap() < 5_000);

    // Successful calls log at info; the server still answers.
    let ok = client
        .call_tool(call("echo", json!({"text": "still here"})))
        .await
        .unwrap();
    assert_eq!(text(&ok), "still here");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn no_log_notifications_without_set_level() {
    let dir = tempfile::tempdir().unwrap();
    let c = Client::default();
    let logs = Arc::clone(&c.logs);
    let client = connect(server(dir.path()), c).await;
    client
        .call_tool(call("echo", json!({"text": "x"})))
        .await
        .unwrap();
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Error))
        .await
        .unwrap();
    client
        .call_tool(call("echo", json!({"text": "y"})))
        .await
        .unwrap();
    assert!(
        logs.lock().unwrap().is_empty(),
        "{:?}",
        logs.lock().unwrap()
    );
    client.cancel().await.unwrap();
}
