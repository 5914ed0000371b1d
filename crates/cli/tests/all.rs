//! End-to-end tests of the `toolshed` binary: the stack proven by use.

mod suite;
