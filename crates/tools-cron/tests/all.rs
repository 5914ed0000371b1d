//! The integration tests of tools-cron: one binary, one module per concern. Jobs live in real
//! SQLite files in temp dirs and every call goes through the real tool stack. The runner here
//! is a recording one, because running commands belongs to the shell crate; the end-to-end
//! tests with the real shell runner live in the workspace's `tests/` crate.

// Fixtures create temp directories with std::fs.
#![allow(clippy::disallowed_methods)]

mod suite;
