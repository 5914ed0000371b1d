//! Serve a Toolshed [`Stack`](tool_core::Stack) over the Model Context Protocol.
//!
//! [`McpServer`] adapts a stack and a base [`ToolContext`](tool_core::ToolContext) to rmcp's
//! `ServerHandler`:
//!
//! - `tools/list` exports every spec with [`Provider::Mcp`](tool_core::Provider::Mcp): the
//!   canonical input schema and the four hints (`readOnlyHint`, `destructiveHint`,
//!   `idempotentHint`, `openWorldHint`);
//! - `tools/call` runs through the same layer stack as `toolshed call`. Every
//!   [`ToolError`](tool_core::ToolError) becomes an `isError: true` result whose text is
//!   `kind: sentence`, so the model can read it; only an unknown tool name is a protocol error
//!   (`-32602`), as the specification asks;
//! - when the policy says *Ask*, the client is asked through elicitation if it declared the
//!   capability (an `elicitation/create` request; on protocol 2026-07-28, which forbids
//!   server-to-client requests, an `InputRequiredResult` whose answer counts once, for a retry
//!   of the same call); otherwise the call fails with `needs_approval`. Nothing is approved
//!   silently;
//! - `notifications/cancelled` cancels the running call; a progress token turns the tool's
//!   output events into rate-limited `notifications/progress`; `logging/setLevel` opts in to
//!   one `notifications/message` per finished call (its audit record).
//!
//! [`serve_stdio`] and [`http::serve`] run it over stdio and streamable HTTP.
//!
//! [`remote::RemoteServer`] goes the other way: it imports another MCP server's tools as
//! `server__tool`, open-world tools the policy asks about.
//!
//! # Example
//!
//! Serving a registry over stdio, as `toolshed mcp` does (not run here: it waits for a client
//! on standard input):
//!
//! ```no_run
//! use std::sync::Arc;
//! use tool_core::{Limits, Policy, Registry, Stack, ToolContext, Workspace};
//! use toolshed_mcp::{McpServer, serve_stdio};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Registry::new(); // register tool families here
//! let ctx = ToolContext::new(
//!     Workspace::local(".")?,
//!     Arc::new(Policy::supervised()),
//!     Arc::new(Limits::default()),
//! );
//! serve_stdio(McpServer::new(Stack::new(registry), ctx)).await?;
//! # Ok(())
//! # }
//! ```

mod approve;
pub mod http;
mod progress;
pub mod remote;
mod server;
#[cfg(feature = "postgres")]
pub mod sessions;

pub use server::{McpServer, serve_stdio};

/// Errors of the transports.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server could not start (bind, handshake).
    #[error("{0}")]
    Start(String),
    /// The connection failed while serving.
    #[error("{0}")]
    Serve(String),
    /// The options are not allowed (e.g. a non-loopback bind without a token).
    #[error("{0}")]
    Config(String),
}
