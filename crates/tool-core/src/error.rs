//! The one error type every tool returns.

use std::fmt;

/// Why a tool call did not produce output.
///
/// Every variant except [`ToolError::Internal`] is *model-visible*: its text is sent back to the
/// model (or printed by the CLI) and is written as a sentence that says what to do next.
/// `Internal` wraps faults the model cannot act on; callers log the source and show only a
/// generic sentence.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments do not match the tool's schema or its preconditions.
    #[error("Invalid arguments{}: {message}", fmt_path(.path))]
    InvalidArgs {
        /// JSON pointer of the offending field (`/edits/0/old_string`), empty for the whole object.
        path: String,
        /// What was wrong and how to fix it.
        message: String,
    },
    /// The policy refused the call.
    #[error("{0}")]
    Denied(String),
    /// The call needs a human's approval and none could be asked for.
    #[error("{}", .0.refusal_message())]
    NeedsApproval(ApprovalRequest),
    /// The tool, file, job or key named by the call does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The call ran out of time and was stopped.
    #[error("{0}")]
    Timeout(String),
    /// The call was cancelled by its caller.
    #[error(
        "The call was cancelled before it finished; nothing after the cancellation point was done."
    )]
    Cancelled,
    /// The tool ran and failed in a way the model can act on.
    #[error("{0}")]
    Failed(String),
    /// A fault inside Toolshed. Logged with its source, never echoed to the model.
    #[error(
        "An internal error stopped the call; it has been logged. Try again, or report it if it persists."
    )]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
}

fn fmt_path(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at `{path}`")
    }
}

/// The stable, machine-readable kind of a [`ToolError`], as printed by `toolshed call --json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// See [`ToolError::InvalidArgs`].
    InvalidArgs,
    /// See [`ToolError::Denied`].
    Denied,
    /// See [`ToolError::NeedsApproval`].
    NeedsApproval,
    /// See [`ToolError::NotFound`].
    NotFound,
    /// See [`ToolError::Timeout`].
    Timeout,
    /// See [`ToolError::Cancelled`].
    Cancelled,
    /// See [`ToolError::Failed`].
    Failed,
    /// See [`ToolError::Internal`].
    Internal,
}

impl ErrorKind {
    /// The snake_case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgs => "invalid_args",
            ErrorKind::Denied => "denied",
            ErrorKind::NeedsApproval => "needs_approval",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Failed => "failed",
            ErrorKind::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ToolError {
    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ToolError::InvalidArgs { .. } => ErrorKind::InvalidArgs,
            ToolError::Denied(_) => ErrorKind::Denied,
            ToolError::NeedsApproval(_) => ErrorKind::NeedsApproval,
            ToolError::NotFound(_) => ErrorKind::NotFound,
            ToolError::Timeout(_) => ErrorKind::Timeout,
            ToolError::Cancelled => ErrorKind::Cancelled,
            ToolError::Failed(_) => ErrorKind::Failed,
            ToolError::Internal(_) => ErrorKind::Internal,
        }
    }

    /// Shorthand for an [`ToolError::InvalidArgs`] error.
    pub fn invalid(path: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError::InvalidArgs {
            path: path.into(),
            message: message.into(),
        }
    }

    /// Shorthand for an [`ToolError::Internal`] error.
    pub fn internal(err: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        ToolError::Internal(err.into())
    }

    /// The text the model (or a user) may see. Identical to `Display`.
    pub fn model_message(&self) -> String {
        self.to_string()
    }
}

/// What a call wants that needs a human's yes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ApprovalRequest {
    /// The tool being called, by its canonical name (`file_write`), whatever a profile calls it.
    pub tool: String,
    /// The name the call used when it was not the canonical one (a profile's `write_file`).
    pub called_as: Option<String>,
    /// One line per access that needs approval, e.g. `delete src/old (recursive)`.
    pub summary: Vec<String>,
    /// Why the policy asks rather than allows.
    pub reason: String,
    /// The `[policy.rules]` lines that would allow this call without asking.
    pub rules: Vec<String>,
}

impl ApprovalRequest {
    /// The tool for a human: `file_write`, or `file_write` (called as `write_file`).
    pub fn tool_label(&self) -> String {
        match &self.called_as {
            Some(alias) => format!("{} (called as {alias})", self.tool),
            None => self.tool.clone(),
        }
    }

    fn refusal_message(&self) -> String {
        let rules = if self.rules.is_empty() {
            String::new()
        } else {
            format!(
                ", or allow such calls in their own configuration under [policy.rules] with {}",
                self.rules.join(" and ")
            )
        };
        format!(
            "`{}` needs approval ({}): {}. No one could be asked here. Ask the user: they can \
             approve it (toolshed call --yes, or an MCP client that answers approval \
             requests){rules}.",
            self.tool,
            self.reason,
            self.summary.join("; ")
        )
    }
}
