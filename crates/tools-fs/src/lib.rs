//! The file and search family: read, write, edit, append, list, make and delete, over any
//! [`tool_core::workspace::Backend`] (the local directory or a virtual filesystem).
//!
//! Every path goes through [`tool_core::Workspace`]; no tool here opens a path itself.

mod append;
mod delete;
mod edit;
mod find;
mod grep;
mod image_edit;
mod image_info;
mod imaging;
mod list;
mod mkdir;
mod patch;
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
