//! Numeric limits every call runs under.

use std::num::NonZeroU32;
use std::time::Duration;

/// Limits applied by the layer stack and read by tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// How long a call may run when the tool asks for nothing else.
    pub call_timeout: Duration,
    /// The longest deadline a tool may ask for (e.g. `shell` with `timeout_secs`).
    pub max_timeout: Duration,
    /// Text output above this is cut head + tail.
    pub max_output_bytes: usize,
    /// The largest file a tool reads whole (edits, patches).
    pub max_file_bytes: u64,
    /// The largest content a write accepts.
    pub max_write_bytes: usize,
    /// Calls per minute across all tools, when set.
    pub calls_per_minute: Option<NonZeroU32>,
    /// The deepest JSON nesting accepted in arguments.
    pub max_json_depth: usize,
    /// The largest argument document accepted, in bytes.
    pub max_args_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            call_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            max_output_bytes: 64 * 1024,
            max_file_bytes: 10 * 1024 * 1024,
            max_write_bytes: 10 * 1024 * 1024,
            calls_per_minute: None,
            max_json_depth: 32,
            max_args_bytes: 16 * 1024 * 1024,
        }
    }
}
