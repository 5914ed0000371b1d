//! The conversation, independent of any provider's wire format.

use serde::{Deserialize, Serialize};

/// One turn of the conversation. The system prompt is not a message: it travels beside them
/// ([`crate::provider::ChatRequest::system`]), as Anthropic and Gemini require.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// What the user (or the loop, on the user's side) says: text and tool results.
    User {
        /// Text parts and tool results.
        content: Vec<Part>,
    },
    /// What the model said: text and tool calls.
    Assistant {
        /// Text parts and tool calls.
        content: Vec<Part>,
    },
}

impl Message {
    /// A user message of one text part.
    pub fn user(text: impl Into<String>) -> Message {
        Message::User {
            content: vec![Part::Text { text: text.into() }],
        }
    }

    /// The parts of the message.
    pub fn parts(&self) -> &[Part] {
        match self {
            Message::User { content } | Message::Assistant { content } => content,
        }
    }

    /// The text parts joined by newlines.
    pub fn text(&self) -> String {
        self.parts()
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The tool calls in the message.
    pub fn tool_calls(&self) -> Vec<&ToolCall> {
        self.parts()
            .iter()
            .filter_map(|p| match p {
                Part::ToolCall(call) => Some(call),
                _ => None,
            })
            .collect()
    }
}

/// A piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// The model asks for a tool call (assistant messages only).
    ToolCall(ToolCall),
    /// The result of a tool call (user messages only), in the order of the calls.
    ToolResult(ToolResult),
}

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call (generated when the provider has none, as Gemini's older
    /// models), echoed in the result.
    pub id: String,
    /// The tool name as the model wrote it (it may not exist).
    pub name: String,
    /// The arguments as the model wrote them: JSON text, possibly malformed.
    pub arguments: String,
}

/// The result of a tool call, fed back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The tool name of the call (Gemini matches results by name).
    pub name: String,
    /// What the model reads: the output, or the error sentence.
    pub content: String,
    /// Whether the call failed.
    pub is_error: bool,
}
