//! Integration test modules of tools-fs.

mod find;
mod grep;
mod ignore_files;
mod image;
mod patch;
mod special;
mod vfs;
#[cfg(feature = "postgres")]
mod vfs_pg;
