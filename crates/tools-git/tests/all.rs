//! The integration tests of tools-git: one binary, one module per concern. Every test works on
//! real repositories in temp dirs, through the real tool stack, and checks the results with the
//! real `git` program where that proves interoperability.

// Test fixtures build real repositories and run the real git to check interop.
#![allow(clippy::disallowed_methods)]

mod suite;
