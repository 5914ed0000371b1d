//! The integration tests of tool-core: one binary, one module per concern.

// Test fixtures build real files, links and processes directly, to attack the workspace from outside.
#![allow(clippy::disallowed_methods)]

mod suite;
