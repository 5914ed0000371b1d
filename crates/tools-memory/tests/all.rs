//! The integration tests of tools-memory: one binary, one module per concern. Every test works
//! on a real SQLite file in a temp dir, through the real tool stack; hybrid recall talks to a
//! real HTTP embedding server on loopback.

// Fixtures inspect the database file and its directory directly.
#![allow(clippy::disallowed_methods)]

mod suite;
