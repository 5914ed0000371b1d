//! Integration test modules of tools-fs.

mod vfs;
