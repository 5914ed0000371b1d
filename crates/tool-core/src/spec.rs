//! What a tool says about itself.

use serde::Serialize;
use serde_json::Value;

/// The MCP-style behaviour hints of a tool.
///
/// They are hints for clients and models; the [`crate::Policy`] decides from the call's
/// [`crate::Access`] list, never from these flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Annotations {
    /// The tool never changes anything.
    pub read_only: bool,
    /// The tool may destroy or overwrite data.
    pub destructive: bool,
    /// Repeating a call with the same arguments has no further effect.
    pub idempotent: bool,
    /// The tool talks to things outside the machine (network, devices).
    pub open_world: bool,
}

impl Annotations {
    /// A tool that only reads local state.
    pub const READ_ONLY: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };

    /// A tool that creates or changes local state without destroying anything.
    pub const ADDITIVE: Annotations = Annotations {
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: false,
    };

    /// A tool that may overwrite or delete local state.
    pub const DESTRUCTIVE: Annotations = Annotations {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: false,
    };

    /// Returns a copy with `idempotent` set.
    pub const fn idempotent(mut self, yes: bool) -> Self {
        self.idempotent = yes;
        self
    }

    /// Returns a copy with `open_world` set.
    pub const fn open_world(mut self, yes: bool) -> Self {
        self.open_world = yes;
        self
    }
}

/// A tool's public description: name, text, input schema and hints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The name models call it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The normalised JSON schema of its arguments (an object schema).
    pub input_schema: Value,
    /// Behaviour hints.
    pub annotations: Annotations,
}
