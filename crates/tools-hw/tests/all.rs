//! The integration tests of tools-hw: one binary, one module per tool. Serial runs over a real
//! pseudo-terminal pair, memory windows over real files, probe-rs as a real (absent or scripted)
//! program, screenshots under a real Xvfb; I2C and SPI, which have no bus here, run the real tool
//! code against a fake device layer that records every byte.

// Fixtures create device stand-ins and window files, inspect them directly, and start Xvfb and
// this test binary again as child processes.
#![allow(clippy::disallowed_methods)]
// Tests that cannot run in some setting print why (a skip reason the runner shows).
#![allow(clippy::print_stdout)]

mod suite;
