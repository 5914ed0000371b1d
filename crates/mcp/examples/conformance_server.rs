//! A server for the MCP conformance suite's fixture scenarios, built from this crate the way
//! `toolshed mcp` is.
//!
//! The Toolshed tools (`test_simple_text`, `test_image_content`, `test_error_handling`,
//! `test_tool_with_progress`) run through a [`Registry`] and [`McpServer`] exactly as in
//! `toolshed mcp`. [`Fixtures`] wraps that server to show the crate composes with the rest of
//! rmcp: it adds the fixture tools a Toolshed tool cannot express (audio, embedded resources,
//! log messages, sampling and elicitation requests to the client), resources (with templates
//! and subscriptions) and prompts, and is served by [`http::bind_handler`] behind the same
//! DNS-rebinding guard.
//!
//! `cargo run -p toolshed-mcp --example conformance_server [ADDR]` serves streamable HTTP on
//! ADDR (default 127.0.0.1:0) and prints `serving MCP at URL` on stderr.

// Printing the address is this program's one job.
#![allow(clippy::print_stderr)]
// Sampling, logging and `resources/subscribe` are deprecated in protocol 2026-07-28 (rmcp marks
// them so), but the fixture scenarios test them on the earlier versions that have them.
#![allow(deprecated)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    CreateMessageRequestParams, ElicitRequestParams, ElicitationAction, ElicitationSchema,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, JsonObject, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, Prompt, PromptArgument, PromptMessage,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, Role, SamplingMessage, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, SubscribeRequestParams, Tool as RmcpTool, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::schemars::{self, JsonSchema};
use tool_core::{
    Access, Annotations, Limits, Policy, Registry, Stack, Tool, ToolContext, ToolError, ToolOutput,
    Workspace, typed,
};
use toolshed_mcp::McpServer;
use toolshed_mcp::http::{self, HttpOptions};

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

macro_rules! fixture {
    ($ty:ident, $name:literal, $description:literal, |$ctx:ident| $body:expr) => {
        struct $ty;

        #[async_trait]
        impl Tool for $ty {
            const NAME: &'static str = $name;
            type Args = NoArgs;
            fn description(&self) -> String {
                $description.into()
            }
            fn annotations(&self) -> Annotations {
                Annotations::READ_ONLY
            }
            fn access(&self, _: &ToolContext, _: &NoArgs) -> Result<Vec<Access>, ToolError> {
                Ok(vec![])
            }
            async fn call(&self, $ctx: &ToolContext, _: NoArgs) -> Result<ToolOutput, ToolError> {
                $body
            }
        }
    };
}

/// A 1×1 red PNG.
const RED_PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

fixture!(
    SimpleText,
    "test_simple_text",
    "Return a simple text.",
    |_ctx| {
        Ok(ToolOutput::text(
            "This is a simple text response for testing.",
        ))
    }
);
fixture!(Image, "test_image_content", "Return a PNG image.", |_ctx| {
    Ok(ToolOutput::default().with_image("image/png", RED_PIXEL))
});
fixture!(Failing, "test_error_handling", "Always fail.", |_ctx| {
    Err(ToolError::Failed(
        "This tool intentionally returns an error for testing".into(),
    ))
});
fixture!(
    Progress,
    "test_tool_with_progress",
    "Report progress three times.",
    |ctx| {
        for step in ["0/100", "50/100", "100/100"] {
            ctx.emit_output(format!("{step}\n"));
            // Longer than the server's 100 ms progress rate limit, so each step is sent.
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        Ok(ToolOutput::text("Progress tool finished."))
    }
);

/// The tools [`Fixtures`] answers itself, with their input schemas.
fn fixture_tools() -> Vec<RmcpTool> {
    let no_args = || schema(json!({"type": "object", "properties": {}}));
    let one_string = |name: &str, description: &str| {
        schema(json!({
            "type": "object",
            "properties": {name: {"type": "string", "description": description}},
            "required": [name],
        }))
    };
    vec![
        RmcpTool::new("test_audio_content", "Return a WAV sound.", no_args()),
        RmcpTool::new(
            "test_embedded_resource",
            "Return an embedded text resource.",
            no_args(),
        ),
        RmcpTool::new(
            "test_multiple_content_types",
            "Return text, an image and an embedded resource.",
            no_args(),
        ),
        RmcpTool::new(
            "test_tool_with_logging",
            "Send three log messages while running.",
            no_args(),
        ),
        RmcpTool::new(
            "test_sampling",
            "Ask the client's model to answer a prompt.",
            one_string("prompt", "The prompt to send to the LLM"),
        ),
        RmcpTool::new(
            "test_elicitation",
            "Ask the client's user for a name and an e-mail address.",
            one_string("message", "The message to show the user"),
        ),
        RmcpTool::new(
            "test_elicitation_sep1034_defaults",
            "Ask the client's user for a form whose fields have defaults.",
            no_args(),
        ),
    ]
}

fn schema(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// A 1-channel, 8 kHz, 16-bit WAV of eight silent samples.
const SILENT_WAV: &str =
    "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YRAAAAAAAAAAAAAAAAAAAAAAAAAA";

/// An [`McpServer`] plus the conformance fixtures that are not Toolshed tools.
#[derive(Debug, Clone)]
struct Fixtures {
    inner: McpServer,
    tools: Arc<Vec<RmcpTool>>,
    /// Set by `logging/setLevel` (also forwarded to the inner server).
    log_level: Arc<Mutex<Option<LoggingLevel>>>,
    /// The resource URIs this session subscribed to.
    subscriptions: Arc<Mutex<HashSet<String>>>,
}

impl Fixtures {
    fn new(inner: McpServer) -> Fixtures {
        Fixtures {
            inner,
            tools: Arc::new(fixture_tools()),
            log_level: Arc::default(),
            subscriptions: Arc::default(),
        }
    }

    fn for_new_session(&self) -> Fixtures {
        Fixtures {
            inner: self.inner.for_new_session(),
            tools: Arc::clone(&self.tools),
            log_level: Arc::default(),
            subscriptions: Arc::default(),
        }
    }

    /// Runs one of the fixture tools; `None` if `name` is not one.
    async fn call_fixture(
        &self,
        name: &str,
        args: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Option<Result<CallToolResult, ErrorData>> {
        let string_arg = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
        Some(Ok(match name {
            "test_audio_content" => {
                CallToolResult::success(vec![ContentBlock::audio(SILENT_WAV, "audio/wav")])
            }
            "test_embedded_resource" => CallToolResult::success(vec![ContentBlock::resource(
                ResourceContents::text(
                    "This is an embedded resource content.",
                    "test://embedded-resource",
                )
                .with_mime_type("text/plain"),
            )]),
            "test_multiple_content_types" => CallToolResult::success(vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(RED_PIXEL, "image/png"),
                ContentBlock::resource(
                    ResourceContents::text(
                        r#"{"test":"data","value":123}"#,
                        "test://mixed-content-resource",
                    )
                    .with_mime_type("application/json"),
                ),
            ]),
            "test_tool_with_logging" => {
                let steps = [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ];
                for (i, message) in steps.into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    self.log(context, LoggingLevel::Info, message).await;
                }
                CallToolResult::success(vec![ContentBlock::text(
                    "Tool with logging executed successfully.",
                )])
            }
            "test_sampling" => {
                let Some(prompt) = string_arg("prompt") else {
                    return Some(Err(ErrorData::invalid_params("`prompt` is required", None)));
                };
                sample(context, prompt).await
            }
            "test_elicitation" => {
                let Some(message) = string_arg("message") else {
                    return Some(Err(ErrorData::invalid_params(
                        "`message` is required",
                        None,
                    )));
                };
                let form = json!({
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"},
                    },
                    "required": ["username", "email"],
                });
                elicit(context, message, form, "User response").await
            }
            "test_elicitation_sep1034_defaults" => {
                let form = json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "default": "John Doe"},
                        "age": {"type": "integer", "default": 30},
                        "score": {"type": "number", "default": 95.5},
                        "status": {
                            "type": "string",
                            "enum": ["active", "inactive", "pending"],
                            "default": "active",
                        },
                        "verified": {"type": "boolean", "default": true},
                    },
                });
                let message = "Please review and update the form fields with defaults".to_owned();
                elicit(context, message, form, "Elicitation completed").await
            }
            _ => return None,
        }))
    }

    /// Sends a log notification if the client asked for this level.
    async fn log(&self, context: &RequestContext<RoleServer>, level: LoggingLevel, message: &str) {
        let threshold = self.log_level.lock().ok().and_then(|l| *l);
        let Some(threshold) = threshold else { return };
        if severity(level) < severity(threshold) {
            return;
        }
        let param = LoggingMessageNotificationParam::new(level, json!(message))
            .with_logger("conformance_server");
        if let Err(e) = context.peer.notify_logging_message(param).await {
            eprintln!("a log notification could not be sent: {e}");
        }
    }
}

fn severity(level: LoggingLevel) -> u8 {
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

/// `test_sampling`: a `sampling/createMessage` request to the client.
async fn sample(context: &RequestContext<RoleServer>, prompt: String) -> CallToolResult {
    let can = context
        .client_capabilities()
        .is_some_and(|c| c.sampling.is_some());
    if !can {
        return CallToolResult::error(vec![ContentBlock::text(
            "the client does not support sampling",
        )]);
    }
    let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100);
    match context.peer.create_message(params).await {
        Ok(result) => {
            let text: Vec<String> = result
                .message
                .content
                .iter()
                .filter_map(|block| block.as_text().map(|t| t.text.clone()))
                .collect();
            CallToolResult::success(vec![ContentBlock::text(format!(
                "LLM response: {}",
                text.join("\n")
            ))])
        }
        Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
            "the sampling request failed: {e}"
        ))]),
    }
}

/// `test_elicitation*`: an `elicitation/create` request to the client for `form`.
async fn elicit(
    context: &RequestContext<RoleServer>,
    message: String,
    form: Value,
    answer: &str,
) -> CallToolResult {
    let can = context
        .client_capabilities()
        .is_some_and(|c| c.elicitation.is_some());
    if !can {
        return CallToolResult::error(vec![ContentBlock::text(
            "the client does not support elicitation",
        )]);
    }
    let requested_schema = match ElicitationSchema::from_json_schema(schema(form)) {
        Ok(s) => s,
        Err(e) => {
            return CallToolResult::error(vec![ContentBlock::text(format!(
                "the form does not build: {e}"
            ))]);
        }
    };
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    };
    match context.peer.create_elicitation(params).await {
        Ok(result) => {
            let action = match result.action {
                ElicitationAction::Accept => "accept",
                ElicitationAction::Decline => "decline",
                ElicitationAction::Cancel => "cancel",
                _ => "unknown",
            };
            let content = result.content.unwrap_or(Value::Null);
            CallToolResult::success(vec![ContentBlock::text(format!(
                "{answer}: action={action}, content={content}"
            ))])
        }
        Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
            "the elicitation request failed: {e}"
        ))]),
    }
}

/// The URI template of `test://template/{id}/data`, as a prefix and a suffix.
const TEMPLATE: (&str, &str) = ("test://template/", "/data");

fn read(uri: &str) -> Option<ResourceContents> {
    Some(match uri {
        "test://static-text" => {
            ResourceContents::text("This is the content of the static text resource.", uri)
                .with_mime_type("text/plain")
        }
        "test://static-binary" => {
            ResourceContents::blob(RED_PIXEL, uri).with_mime_type("image/png")
        }
        "test://watched-resource" => {
            ResourceContents::text("This resource can be subscribed to.", uri)
                .with_mime_type("text/plain")
        }
        _ => {
            let id = uri
                .strip_prefix(TEMPLATE.0)?
                .strip_suffix(TEMPLATE.1)
                .filter(|id| !id.is_empty() && !id.contains('/'))?;
            let text =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            ResourceContents::text(text.to_string(), uri).with_mime_type("application/json")
        }
    })
}

fn prompt_arg(request: &GetPromptRequestParams, name: &str) -> Result<String, ErrorData> {
    request
        .arguments
        .as_ref()
        .and_then(|args| args.get(name))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            ErrorData::invalid_params(format!("the argument `{name}` is required"), None)
        })
}

fn required(name: &str, description: &str) -> PromptArgument {
    PromptArgument::new(name)
        .with_description(description)
        .with_required(true)
}

impl ServerHandler for Fixtures {
    fn get_info(&self) -> ServerConfig {
        let mut config = self.inner.get_info();
        config.capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .build();
        config
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = self.inner.list_tools(request, context).await?.tools;
        tools.extend(self.tools.iter().cloned());
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<RmcpTool> {
        self.tools
            .iter()
            .find(|t| t.name == name)
            .cloned()
            .or_else(|| self.inner.get_tool(name))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        match self.call_fixture(&request.name, &args, &context).await {
            Some(result) => result.map(Into::into),
            None => self.inner.call_tool(request, context).await,
        }
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut level) = self.log_level.lock() {
            *level = Some(request.level);
        }
        self.inner.set_level(request, context).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new("test://static-text", "Static text")
                .with_description("A static text resource.")
                .with_mime_type("text/plain"),
            Resource::new("test://static-binary", "Static binary")
                .with_description("A static PNG image.")
                .with_mime_type("image/png"),
            Resource::new("test://watched-resource", "Watched resource")
                .with_description("A resource that can be subscribed to.")
                .with_mime_type("text/plain"),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("test://template/{id}/data", "Template data")
                .with_description("Data for one ID.")
                .with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match read(&request.uri) {
            Some(contents) => Ok(ReadResourceResult::new(vec![contents]).into()),
            None => Err(ErrorData::resource_not_found(
                format!("no resource {}", request.uri),
                Some(json!({"uri": request.uri})),
            )),
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut subscriptions) = self.subscriptions.lock() {
            subscriptions.insert(request.uri);
        }
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut subscriptions) = self.subscriptions.lock() {
            subscriptions.remove(&request.uri);
        }
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![
            Prompt::new(
                "test_simple_prompt",
                Some("A prompt without arguments."),
                None,
            ),
            Prompt::new(
                "test_prompt_with_arguments",
                Some("A prompt with two arguments."),
                Some(vec![
                    required("arg1", "First test argument"),
                    required("arg2", "Second test argument"),
                ]),
            ),
            Prompt::new(
                "test_prompt_with_embedded_resource",
                Some("A prompt that embeds a resource."),
                Some(vec![required(
                    "resourceUri",
                    "URI of the resource to embed",
                )]),
            ),
            Prompt::new(
                "test_prompt_with_image",
                Some("A prompt with an image."),
                None,
            ),
        ]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let messages = match request.name.as_str() {
            "test_simple_prompt" => vec![PromptMessage::new_text(
                Role::User,
                "This is a simple prompt for testing.",
            )],
            "test_prompt_with_arguments" => {
                let arg1 = prompt_arg(&request, "arg1")?;
                let arg2 = prompt_arg(&request, "arg2")?;
                vec![PromptMessage::new_text(
                    Role::User,
                    format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"),
                )]
            }
            "test_prompt_with_embedded_resource" => {
                let uri = prompt_arg(&request, "resourceUri")?;
                vec![
                    PromptMessage::new(
                        Role::User,
                        ContentBlock::resource(
                            ResourceContents::text("Embedded resource content for testing.", uri)
                                .with_mime_type("text/plain"),
                        ),
                    ),
                    PromptMessage::new_text(
                        Role::User,
                        "Please process the embedded resource above.",
                    ),
                ]
            }
            "test_prompt_with_image" => vec![
                PromptMessage::new(Role::User, ContentBlock::image(RED_PIXEL, "image/png")),
                PromptMessage::new_text(Role::User, "Please analyze the image above."),
            ],
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no prompt {other}"),
                    None,
                ));
            }
        };
        Ok(GetPromptResult::new(messages).into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into())
        .parse()?;
    let mut registry = Registry::new();
    registry.register_all([
        typed(SimpleText),
        typed(Image),
        typed(Failing),
        typed(Progress),
    ])?;
    let ctx = ToolContext::new(
        Workspace::local(std::env::temp_dir())?,
        Arc::new(Policy::read_only()),
        Arc::new(Limits::default()),
    );
    let fixtures = Fixtures::new(McpServer::new(Stack::new(registry), ctx));
    let bound = http::bind_handler(
        move || fixtures.for_new_session(),
        addr,
        HttpOptions::default(),
    )
    .await?;
    eprintln!("serving MCP at {}", bound.url());
    bound.run().await?;
    Ok(())
}
