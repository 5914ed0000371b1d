//! The integration tests of tool-core: one binary, one module per concern.

mod suite;
