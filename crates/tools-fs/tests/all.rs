//! The integration tests of tools-fs: one binary, one module per concern.

mod suite;
