//! The integration tests of tools-shell: one binary, one module per concern.

// Test fixtures build real files and inspect real processes directly.
#![allow(clippy::disallowed_methods)]

mod suite;
