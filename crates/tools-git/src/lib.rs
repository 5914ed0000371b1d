//! The git family: one tool, `git_operations`, that works on the workspace's repository through
//! libgit2 (the `git2` crate).
//!
//! No `git` program is ever started. libgit2 runs no hooks, no pager, no editor, no fsmonitor, no
//! textconv or external diff, and no clean/smudge filter drivers from the repository's config, so
//! a hostile `.git/config` or `.gitattributes` cannot make a call run a program.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use tool_core::{Limits, Policy, Registry, Stack, ToolContext, Workspace};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let mut registry = Registry::new();
//! registry.register_all(tools_git::tools(&tools_git::Config::default()))?;
//! let stack = Stack::new(registry);
//! let ctx = ToolContext::new(
//!     Workspace::local(dir.path())?,
//!     Arc::new(Policy::full()),
//!     Arc::new(Limits::default()),
//! );
//!
//! stack.call_json("git_operations", r#"{"operation": "init"}"#, ctx.for_call()).await?;
//! std::fs::write(dir.path().join("hello.txt"), "hello\n")?;
//! let status = stack
//!     .call_json("git_operations", r#"{"operation": "status"}"#, ctx.for_call())
//!     .await?;
//! assert!(status.joined_text().contains("hello.txt"));
//! # Ok(())
//! # }
//! ```

mod git_ops;
mod ops;

use std::sync::Arc;

use tool_core::{Alias, DynTool, typed};

pub use git_ops::{GitOperations, GitOperationsArgs, Operation, StashAction};

/// Settings of the git tool (limits live in [`tool_core::Limits`]).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Config {}

/// Every tool of this crate.
pub fn tools(_config: &Config) -> Vec<Arc<dyn DynTool>> {
    vec![typed(GitOperations)]
}

/// Seed-compatible names of this crate's tools (see TOOLS.md, "Seed-compatible names").
pub const ALIASES: &[Alias] = &[Alias {
    profile: "nullclaw",
    name: "git_operations",
    target: "git_operations",
    renames: &[],
}];
