//! LLM providers over their real wire formats: OpenAI Chat Completions (and every compatible
//! server), Anthropic Messages, Gemini generateContent. Only this module knows those formats.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tool_core::{CancellationToken, ToolSpec};

use crate::message::Part;

pub mod anthropic;
pub mod gemini;
mod http;
pub mod openai;
mod sse;

/// What one model call is asked.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// The model name (`gpt-4.1-mini`, `claude-sonnet-4-5`, `gemini-2.5-flash`…).
    pub model: String,
    /// The system prompt.
    pub system: Option<String>,
    /// The conversation so far; it starts with a user message.
    pub messages: Vec<crate::message::Message>,
    /// The tools the model may call, exported in the provider's dialect with
    /// `tool_core::schema::export`.
    pub tools: Vec<ToolSpec>,
    /// The most tokens the answer may have.
    pub max_tokens: u32,
    /// Sampling temperature, when set.
    pub temperature: Option<f32>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its turn.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It ran into `max_tokens`.
    MaxTokens,
    /// Anything else the provider said (content filter, recitation…), verbatim.
    Other(String),
}

/// Tokens counted by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// The model's answer: text and tool-call parts, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// `Part::Text` and `Part::ToolCall` parts.
    pub content: Vec<Part>,
    /// Why it stopped.
    pub stop: StopReason,
    /// Tokens used by this call.
    pub usage: Usage,
}

/// Progress while an answer streams in.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// More answer text.
    Text(String),
    /// A tool call began (its arguments follow).
    ToolCallStarted {
        /// The call's id.
        id: String,
        /// The tool name.
        name: String,
    },
    /// More of a tool call's argument JSON.
    ToolCallArguments {
        /// The call's id.
        id: String,
        /// The next piece of JSON text.
        delta: String,
    },
    /// The request failed in a way worth retrying; it is sent again after `after`. Text
    /// streamed so far belongs to the abandoned attempt.
    Retrying {
        /// 1 for the first retry.
        attempt: u32,
        /// The wait (from `Retry-After` when the provider sent one).
        after: Duration,
        /// What went wrong, as a sentence.
        reason: String,
    },
}

/// Where stream events go.
pub type StreamSink<'a> = &'a (dyn Fn(StreamEvent) + Send + Sync);

/// A failed model call, after retries. Every message is a sentence that says what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The key was missing, wrong or lacks access (401/403).
    #[error("{0}")]
    Auth(String),
    /// The provider answered with an error status (after retries, for 429 and 5xx).
    #[error("{message}")]
    Http {
        /// The HTTP status.
        status: u16,
        /// The provider's error, as a sentence.
        message: String,
    },
    /// The provider did not answer in time.
    #[error("{0}")]
    Timeout(String),
    /// The provider could not be reached.
    #[error("{0}")]
    Connect(String),
    /// The answer did not follow the provider's format.
    #[error("{0}")]
    Malformed(String),
    /// The caller cancelled.
    #[error("the model call was cancelled")]
    Cancelled,
}

/// A model behind a wire format.
#[async_trait]
pub trait ModelProvider: Send + Sync + fmt::Debug {
    /// `openai`, `anthropic` or `gemini`.
    fn name(&self) -> &'static str;

    /// One model call. With `stream`, the answer is requested as a server-sent event stream
    /// and its pieces reported as they arrive; the returned response is the whole answer
    /// either way. Transient failures (connection errors, 429 and 5xx, a stream cut short)
    /// are retried with backoff honouring `Retry-After`.
    async fn complete(
        &self,
        request: &ChatRequest,
        stream: Option<StreamSink<'_>>,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, ProviderError>;
}

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI Chat Completions, and every server that speaks it (Ollama, llama.cpp, vLLM,
    /// LM Studio, OpenRouter).
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini generateContent.
    Gemini,
}

impl ProviderKind {
    /// Every kind.
    pub const ALL: [ProviderKind; 3] = [
        ProviderKind::OpenAi,
        ProviderKind::Anthropic,
        ProviderKind::Gemini,
    ];

    /// `openai`, `anthropic` or `gemini`.
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
        }
    }

    /// The public endpoint.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::Gemini => "https://generativelanguage.googleapis.com",
        }
    }

    /// The environment variable the key is read from by default.
    pub fn default_key_env(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            ProviderKind::Gemini => "GEMINI_API_KEY",
        }
    }
}

impl std::str::FromStr for ProviderKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProviderKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("unknown provider `{s}`; use openai, anthropic or gemini"))
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An API key. Its `Debug` never shows it; it is sent only in the provider's auth header.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    /// The key itself, for the auth header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// How to reach a provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// The wire format.
    pub kind: ProviderKind,
    /// The endpoint base (`https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`…).
    pub base_url: String,
    /// The key, when the endpoint needs one (local OpenAI-compatible servers often do not).
    pub api_key: Option<ApiKey>,
    /// The variable the key came from, for error messages (`OPENAI_API_KEY`).
    pub api_key_env: String,
    /// The deadline of one HTTP attempt, streaming included (120 s).
    pub timeout: Duration,
    /// Retries after the first attempt for transient failures (3).
    pub max_retries: u32,
    /// The longest wait between attempts, `Retry-After` included (30 s).
    pub max_backoff: Duration,
}

impl ProviderConfig {
    /// The defaults for `kind`: its public endpoint, no key, its usual key variable.
    pub fn new(kind: ProviderKind) -> ProviderConfig {
        ProviderConfig {
            kind,
            base_url: kind.default_base_url().to_owned(),
            api_key: None,
            api_key_env: kind.default_key_env().to_owned(),
            timeout: Duration::from_secs(120),
            max_retries: 3,
            max_backoff: Duration::from_secs(30),
        }
    }
}

/// The provider `config.kind` names, ready to call. Fails only when the configuration cannot
/// work (a base URL that is not http(s), a key no HTTP header can carry); a missing key is
/// reported by the provider's answer, with the variable to set.
pub fn connect(config: ProviderConfig) -> Result<std::sync::Arc<dyn ModelProvider>, ProviderError> {
    Ok(match config.kind {
        ProviderKind::OpenAi => std::sync::Arc::new(openai::OpenAiProvider::new(config)?),
        ProviderKind::Anthropic => std::sync::Arc::new(anthropic::AnthropicProvider::new(config)?),
        ProviderKind::Gemini => std::sync::Arc::new(gemini::GeminiProvider::new(config)?),
    })
}
