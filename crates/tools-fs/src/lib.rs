//! The file and search family: read, write, edit, append, list, make and delete, over any
//! [`tool_core::workspace::Backend`] (the local directory or a virtual filesystem).
//!
//! Every path goes through [`tool_core::Workspace`]; no tool here opens a path itself.
//!
//! Virtual filesystems: [`sqlite_workspace`] keeps a workspace in one SQLite file; with the
//! cargo feature `postgres`, `pg_workspace` (and `PgFs`) keeps named volumes of workspaces in a
//! PostgreSQL schema that several processes and hosts share, through `tool_core::pg::PgPool`.
//!
//! # Example
//!
//! The tools run through a [`tool_core::Stack`], which validates the arguments, asks the policy
//! and confines every path to the workspace:
//!
//! ```
//! use std::sync::Arc;
//! use tool_core::{Limits, Policy, Registry, Stack, ToolContext, Workspace};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\ngamma\n")?;
//!
//! let mut registry = Registry::new();
//! registry.register_all(tools_fs::tools(&tools_fs::Config::default()))?;
//! let stack = Stack::new(registry);
//! let ctx = ToolContext::new(
//!     Workspace::local(dir.path())?,
//!     Arc::new(Policy::read_only()),
//!     Arc::new(Limits::default()),
//! );
//!
//! let out = stack
//!     .call_json("grep", r#"{"pattern": "^b", "output_mode": "content"}"#, ctx.for_call())
//!     .await?;
//! assert!(out.joined_text().contains("beta"));
//!
//! // Read-only mode refuses writes before the tool runs.
//! let refused = stack
//!     .call_json("file_write", r#"{"path": "x.txt", "content": "x"}"#, ctx.for_call())
//!     .await;
//! assert!(refused.is_err());
//! assert!(!dir.path().join("x.txt").exists());
//! # Ok(())
//! # }
//! ```

mod append;
mod delete;
mod edit;
mod find;
mod grep;
mod ignore_rules;
mod image_edit;
mod image_info;
mod imaging;
mod list;
mod mkdir;
mod patch;
mod problems;
mod read;
mod text;
mod vfs;
mod walk;
mod write;

use std::sync::Arc;

use tool_core::{Alias, DynTool, typed};

pub use append::FileAppend;
pub use delete::DeleteFile;
pub use edit::FileEdit;
pub use find::{FindFiles, FindFilesArgs};
pub use grep::{Grep, GrepArgs, OutputMode};
pub use image_edit::ImageEdit;
pub use image_info::ImageInfo;
pub use list::ListDir;
pub use mkdir::MakeDir;
pub use patch::PatchApply;
pub use read::FileRead;
#[cfg(feature = "postgres")]
pub use vfs::{PgFs, pg_workspace};
pub use vfs::{SqliteFs, sqlite_workspace};
pub use write::FileWrite;

/// Settings of the file tools (limits live in [`tool_core::Limits`]).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Config {}

/// Every tool of this crate.
pub fn tools(_config: &Config) -> Vec<Arc<dyn DynTool>> {
    vec![
        typed(FileRead),
        typed(FileWrite),
        typed(FileEdit),
        typed(FileAppend),
        typed(ListDir),
        typed(MakeDir),
        typed(DeleteFile),
        typed(PatchApply),
        typed(FindFiles),
        typed(Grep),
        typed(ImageInfo),
        typed(ImageEdit),
    ]
}

/// Seed-compatible names of this crate's tools (see TOOLS.md, "Seed-compatible names").
pub const ALIASES: &[Alias] = &[
    // SneakyCode.
    Alias {
        profile: "sneakycode",
        name: "read_file",
        target: "file_read",
        renames: &[("file_path", "path")],
    },
    Alias {
        profile: "sneakycode",
        name: "write_file",
        target: "file_write",
        renames: &[("file_path", "path")],
    },
    Alias {
        profile: "sneakycode",
        name: "str_replace",
        target: "file_edit",
        renames: &[
            ("file_path", "path"),
            ("old_str", "old_string"),
            ("new_str", "new_string"),
        ],
    },
    Alias {
        profile: "sneakycode",
        name: "list_dir",
        target: "list_dir",
        renames: &[("directory_path", "path")],
    },
    Alias {
        profile: "sneakycode",
        name: "make_dir",
        target: "make_dir",
        renames: &[("directory_path", "path")],
    },
    Alias {
        profile: "sneakycode",
        name: "delete_file",
        target: "delete_file",
        renames: &[("file_path", "path")],
    },
    Alias {
        profile: "sneakycode",
        name: "patch_apply",
        target: "patch_apply",
        renames: &[("file_path", "path")],
    },
    Alias {
        profile: "sneakycode",
        name: "grep_files",
        target: "grep",
        renames: &[("file_pattern", "include")],
    },
    Alias {
        profile: "sneakycode",
        name: "find_files",
        target: "find_files",
        renames: &[],
    },
    // pig.
    Alias {
        profile: "pig",
        name: "read_file",
        target: "file_read",
        renames: &[],
    },
    Alias {
        profile: "pig",
        name: "write_file",
        target: "file_write",
        renames: &[],
    },
    Alias {
        profile: "pig",
        name: "list_directory",
        target: "list_dir",
        renames: &[],
    },
    Alias {
        profile: "pig",
        name: "delete_file",
        target: "delete_file",
        renames: &[],
    },
    Alias {
        profile: "pig",
        name: "grep",
        target: "grep",
        renames: &[],
    },
    // hrns.
    Alias {
        profile: "hrns",
        name: "read_file",
        target: "file_read",
        renames: &[("fileName", "path")],
    },
    Alias {
        profile: "hrns",
        name: "write_file",
        target: "file_edit",
        renames: &[
            ("fileName", "path"),
            ("oldString", "old_string"),
            ("newString", "new_string"),
        ],
    },
    Alias {
        profile: "hrns",
        name: "list_files",
        target: "find_files",
        renames: &[("dir", "path"), ("globPattern", "pattern")],
    },
    // NullClaw's names are the canonical ones.
    Alias {
        profile: "nullclaw",
        name: "file_read",
        target: "file_read",
        renames: &[],
    },
    Alias {
        profile: "nullclaw",
        name: "file_write",
        target: "file_write",
        renames: &[],
    },
    Alias {
        profile: "nullclaw",
        name: "file_edit",
        target: "file_edit",
        renames: &[],
    },
    Alias {
        profile: "nullclaw",
        name: "file_append",
        target: "file_append",
        renames: &[],
    },
];
