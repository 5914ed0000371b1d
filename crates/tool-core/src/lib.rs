//! The core of Toolshed: one trait, one validator, one policy engine, one path-confinement layer
//! and one layer stack that every tool family, the agent and the MCP server share.
//!
//! A tool author implements [`Tool`] with typed arguments (deriving `Deserialize` and
//! `JsonSchema`), declares what a call touches in [`Tool::access`], and registers it with
//! [`typed`]. Everything else — schema derivation and export, argument validation, the policy,
//! approval, rate limiting, timeouts and truncation — happens in the [`Stack`].
//!
//! See `examples/custom_tool.rs` for a complete tool in under 100 lines.
//!
//! # Cargo features
//!
//! - `net` (off by default): `tool_core::net`, the one outbound HTTP path — `net::Net::send`
//!   for URLs a model wrote, `net::Endpoint` for URLs from trusted configuration. Every crate
//!   that sends HTTP enables it; none builds a client of its own.
//! - `postgres` (off by default): `pg`, PostgreSQL pools for the store backends.
//!
//! # Example
//!
//! Every path a tool touches is resolved inside the workspace, and the policy decides from the
//! accesses a call declares:
//!
//! ```
//! use tool_core::{Access, Decision, ErrorKind, Policy, Workspace};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let ws = Workspace::local(dir.path())?;
//!
//! // Paths inside the root resolve; `..` out of it is refused before any I/O.
//! let notes = ws.resolve("notes/today.md")?;
//! assert_eq!(ws.resolve("../etc/passwd").unwrap_err().kind(), ErrorKind::Denied);
//!
//! // Read-only mode allows reads and refuses writes.
//! let policy = Policy::read_only();
//! let read = policy.decide("file_read", &[Access::Read(notes.clone())]);
//! let write = policy.decide("file_write", &[Access::Write(notes)]);
//! assert_eq!(read.decision, Decision::Allow);
//! assert_eq!(write.decision, Decision::Deny);
//! # Ok(())
//! # }
//! ```

pub mod approve;
pub mod args;
pub mod context;
pub mod error;
pub mod frame;
pub mod limits;
#[cfg(feature = "net")]
pub mod net;
pub mod output;
#[cfg(feature = "postgres")]
pub mod pg;
pub mod policy;
pub mod process;
pub mod registry;
pub mod runner;
pub mod schema;
pub mod spec;
pub mod stack;
pub mod tool;
pub mod truncate;
pub mod workspace;

pub use approve::{Approval, ApproveAll, Approver, NoApprover};
pub use context::{Event, EventSink, ToolContext};
pub use error::{ApprovalRequest, ErrorKind, ToolError};
pub use limits::Limits;
pub use output::{Content, ToolOutput, Truncation};
pub use policy::{Access, Autonomy, Decision, Policy, Risk, Rule, Verdict};
pub use registry::{Alias, PROFILES, Registry, RegistryError};
pub use runner::{JobAction, JobRunner, RunReport};
pub use schema::Provider;
pub use spec::{Annotations, ToolSpec};
pub use stack::{AuditRecord, AuditSink, MemoryAudit, Stack, TracingAudit};
pub use tool::{DynTool, PreparedCall, Tool, typed};
pub use workspace::{Workspace, WsPath};

/// Re-exported so tool crates derive schemas with the same version.
pub use schemars;
/// Re-exported so tool crates observe cancellation without their own dependency.
pub use tokio_util::sync::CancellationToken;

/// Runs blocking work (file I/O, SQLite, git2) off the async runtime, returning early with
/// [`ToolError::Cancelled`] if the call is cancelled first.
pub async fn blocking<T, F>(ctx: &ToolContext, f: F) -> Result<T, ToolError>
where
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    let task = tokio::task::spawn_blocking(f);
    tokio::select! {
        joined = task => joined.map_err(|e| {
            if e.is_panic() {
                ToolError::internal("a blocking task panicked")
            } else {
                ToolError::Cancelled
            }
        })?,
        () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
    }
}
