//! The integration tests of tools-git: one binary, one module per concern. Every test works on
//! real repositories in temp dirs, through the real tool stack, and checks the results with the
//! real `git` program where that proves interoperability.

mod suite;
