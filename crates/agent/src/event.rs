//! What a run reports while it works, for a terminal, a log or a test.

use std::time::Duration;

/// Progress of a run. `depth` is 0 for the top agent, 1 for its subagents, and so on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// Answer text as it streams in.
    Text {
        /// Nesting depth.
        depth: u32,
        /// The next piece.
        delta: String,
    },
    /// The model's turn ended (after its text streamed, before its tool calls run).
    TurnEnd {
        /// Nesting depth.
        depth: u32,
    },
    /// A tool call is about to run.
    ToolCall {
        /// Nesting depth.
        depth: u32,
        /// The tool.
        name: String,
        /// Its arguments as the model wrote them.
        arguments: String,
    },
    /// A tool call ended.
    ToolResult {
        /// Nesting depth.
        depth: u32,
        /// The tool.
        name: String,
        /// Whether it failed.
        is_error: bool,
        /// What the model reads (already cut to the result limit).
        content: String,
    },
    /// The provider will retry a failed request.
    Retrying {
        /// Nesting depth.
        depth: u32,
        /// 1 for the first retry.
        attempt: u32,
        /// The wait.
        after: Duration,
        /// Why.
        reason: String,
    },
    /// A subagent started (`delegate` or `spawn`).
    SubagentStarted {
        /// The subagent's depth.
        depth: u32,
        /// Its agent name or label.
        label: String,
    },
    /// The `message` tool's console channel.
    Message {
        /// Nesting depth.
        depth: u32,
        /// The message.
        content: String,
    },
}

/// Where events go.
pub type EventSink = std::sync::Arc<dyn Fn(AgentEvent) + Send + Sync>;
