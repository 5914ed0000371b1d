//! A server with the tools the MCP conformance suite's fixture scenarios call
//! (`tools-call-simple-text`, `tools-call-image`, `tools-call-error`,
//! `tools-call-with-progress`), built from this crate the way `toolshed mcp` is.
//!
//! `cargo run -p toolshed-mcp --example conformance_server [ADDR]` serves streamable HTTP on
//! ADDR (default 127.0.0.1:0) and prints `serving MCP at URL` on stderr.

// Printing the address is this program's one job.
#![allow(clippy::print_stderr)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
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
    let server = McpServer::new(Stack::new(registry), ctx);
    let bound = http::bind(server, addr, HttpOptions::default()).await?;
    eprintln!("serving MCP at {}", bound.url());
    bound.run().await?;
    Ok(())
}
