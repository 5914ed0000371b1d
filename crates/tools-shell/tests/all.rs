//! The integration tests of tools-shell: one binary, one module per concern.

mod suite;
