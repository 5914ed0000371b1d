//! The integration tests of tools-web: one binary, one module per concern. Every test talks to
//! real HTTP servers on loopback through the real tool stack; the address checks are relaxed
//! for 127.0.0.1 only (`NetConfig::allow_loopback_for_tests`), so every other address, 127.0.0.2
//! included, stands in for the private network the tools must not reach.

// Fixtures write fake browser programs into temp dirs.
#![allow(clippy::disallowed_methods)]

mod suite;
