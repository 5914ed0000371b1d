//! The integration tests of tools-fs: one binary, one module per concern.

// Test fixtures build real files and links directly.
#![allow(clippy::disallowed_methods)]

mod suite;
