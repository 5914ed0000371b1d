//! What a successful call returns.

use serde::Serialize;
use serde_json::Value;

/// One piece of a tool's output.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Text for the model.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// MIME type such as `image/png`.
        mime_type: String,
        /// Base64 data without a `data:` prefix.
        data: String,
    },
}

/// How much of a tool's output was cut, and how to see the rest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Truncation {
    /// Bytes of output the tool produced.
    pub original_bytes: u64,
    /// Bytes kept in the result.
    pub kept_bytes: u64,
    /// Lines left out (best effort; 0 when unknown).
    pub omitted_lines: u64,
    /// A sentence telling the caller how to see more.
    pub hint: String,
}

/// A successful call's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolOutput {
    /// Text and image parts, in order.
    pub content: Vec<Content>,
    /// A machine-readable form of the result, when the tool has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Set when the output was cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncation>,
}

impl ToolOutput {
    /// Output made of one text part.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![Content::Text { text: text.into() }],
            ..ToolOutput::default()
        }
    }

    /// Adds a structured value.
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured = Some(value);
        self
    }

    /// Adds an image part.
    pub fn with_image(mut self, mime_type: impl Into<String>, data: impl Into<String>) -> Self {
        self.content.push(Content::Image {
            mime_type: mime_type.into(),
            data: data.into(),
        });
        self
    }

    /// All text parts joined by newlines.
    pub fn joined_text(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            if let Content::Text { text } = part {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }

    /// Total bytes of text content.
    pub fn text_bytes(&self) -> usize {
        self.content
            .iter()
            .map(|c| match c {
                Content::Text { text } => text.len(),
                Content::Image { .. } => 0,
            })
            .sum()
    }
}
