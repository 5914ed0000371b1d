//! End-to-end tests of the `toolshed` binary: the stack proven by use.

// Test fixtures build real files and start the real binary directly.
#![allow(clippy::disallowed_methods)]

mod suite;
