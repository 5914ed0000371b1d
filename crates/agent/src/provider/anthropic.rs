//! Anthropic Messages (`POST {base_url}/v1/messages`), as Anthropic documents it
//! (<https://docs.anthropic.com/en/api/messages>, streaming:
//! <https://docs.anthropic.com/en/docs/build-with-claude/streaming>).

use std::collections::BTreeMap;

use async_trait::async_trait;
use reqwest::header::HeaderValue;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::CancellationToken;
use tool_core::schema::{self, Provider};

use super::http::{Failure, Flow, Http, arguments_object, temperature};
use super::sse::SseEvent;
use super::{
    ChatRequest, ChatResponse, ModelProvider, ProviderConfig, ProviderError, StopReason,
    StreamEvent, StreamSink, Usage,
};
use crate::message::{Message, Part, ToolCall};

/// The API version this module speaks.
const API_VERSION: &str = "2023-06-01";

/// A model behind the Anthropic Messages API.
#[derive(Debug)]
pub struct AnthropicProvider {
    http: Http,
    url: String,
}

impl AnthropicProvider {
    /// Checks `config` (base URL, key) and builds the client; nothing is sent yet.
    pub fn new(config: ProviderConfig) -> Result<AnthropicProvider, ProviderError> {
        let http = Http::new("Anthropic", &config, "")?;
        let url = format!("{}/v1/messages", http.base_url());
        Ok(AnthropicProvider { http, url })
    }

    /// The request body.
    fn body(&self, request: &ChatRequest, stream: bool) -> Value {
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": messages(&request.messages),
        });
        if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
            body["system"] = json!(system);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|spec| schema::export(spec, Provider::Anthropic))
                .collect();
        }
        if let Some(t) = request.temperature {
            body["temperature"] = temperature(t);
        }
        if stream {
            body["stream"] = json!(true);
        }
        body
    }
}

/// The conversation as Messages content blocks. The tool results of a turn go in one user
/// message, before its text (the API wants `tool_result` blocks first); a call whose
/// arguments are not a JSON object goes back with `input: {}`. Empty text blocks, which the
/// API refuses, are left out, and so is a message left with no block.
fn messages(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            Message::User { content } => {
                let results = content.iter().filter_map(|p| match p {
                    Part::ToolResult(r) => {
                        let mut block = json!({
                            "type": "tool_result",
                            "tool_use_id": r.call_id,
                            "is_error": r.is_error,
                        });
                        if !r.content.is_empty() {
                            block["content"] = json!(r.content);
                        }
                        Some(block)
                    }
                    _ => None,
                });
                let texts = content.iter().filter_map(|p| match p {
                    Part::Text { text } if !text.is_empty() => {
                        Some(json!({"type": "text", "text": text}))
                    }
                    _ => None,
                });
                ("user", results.chain(texts).collect::<Vec<_>>())
            }
            Message::Assistant { content } => {
                let blocks = content
                    .iter()
                    .filter_map(|p| match p {
                        Part::Text { text } if !text.is_empty() => {
                            Some(json!({"type": "text", "text": text}))
                        }
                        Part::ToolCall(call) => Some(json!({
                            "type": "tool_use",
                            "id": call.id,
                            "name": call.name,
                            "input": Value::Object(arguments_object(&call.arguments)),
                        })),
                        _ => None,
                    })
                    .collect::<Vec<_>>();
                ("assistant", blocks)
            }
        };
        if !blocks.is_empty() {
            out.push(json!({"role": role, "content": blocks}));
        }
    }
    out
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

impl WireUsage {
    /// Prompt tokens including those written to or read from the prompt cache, which the API
    /// counts apart; `None` when the event carried no input count.
    fn input(&self) -> Option<u64> {
        self.input_tokens.map(|n| {
            n + self.cache_creation_input_tokens.unwrap_or(0)
                + self.cache_read_input_tokens.unwrap_or(0)
        })
    }
}

fn stop_reason(reason: Option<&str>, has_calls: bool) -> StopReason {
    match reason {
        Some("end_turn" | "stop_sequence") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        None if has_calls => StopReason::ToolUse,
        None => StopReason::EndTurn,
        Some(other) => StopReason::Other(other.to_owned()),
    }
}

/// A `text` or `tool_use` content block; other kinds (thinking…) are not part of the answer.
fn block_part(block: &Value) -> Result<Option<Part>, String> {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => {
            let text = block
                .get("text")
                .and_then(Value::as_str)
                .ok_or("a text block without `text`")?;
            Ok((!text.is_empty()).then(|| Part::Text {
                text: text.to_owned(),
            }))
        }
        Some("tool_use") => {
            let field = |name: &str| {
                block
                    .get(name)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or(format!("a tool_use block without `{name}`"))
            };
            let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
            Ok(Some(Part::ToolCall(ToolCall {
                id: field("id")?,
                name: field("name")?,
                arguments: input.to_string(),
            })))
        }
        Some(_) => Ok(None),
        None => Err("a content block without `type`".to_owned()),
    }
}

impl AnthropicProvider {
    fn parse(&self, body: &[u8]) -> Result<ChatResponse, Failure> {
        let message: WireMessage = self.http.json(body)?;
        let mut content = Vec::new();
        for block in &message.content {
            let part = block_part(block).map_err(|what| {
                Failure::malformed(format!(
                    "Anthropic sent {what}; check that the base URL ({}) points at the \
                     Anthropic API.",
                    self.http.base_url()
                ))
            })?;
            content.extend(part);
        }
        let has_calls = content.iter().any(|p| matches!(p, Part::ToolCall(_)));
        let usage = message.usage.unwrap_or_default();
        Ok(ChatResponse {
            content,
            stop: stop_reason(message.stop_reason.as_deref(), has_calls),
            usage: Usage {
                input_tokens: usage.input().unwrap_or(0),
                output_tokens: usage.output_tokens.unwrap_or(0),
            },
        })
    }
}

/// A content block being streamed.
#[derive(Debug)]
enum Block {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
    },
    /// A kind that is not part of the answer (thinking…).
    Other,
}

/// The answer as its events arrive.
struct Streamed<'a> {
    provider: &'a AnthropicProvider,
    sink: StreamSink<'a>,
    model: &'a str,
    blocks: BTreeMap<u64, Block>,
    stop: Option<String>,
    usage: Usage,
    done: bool,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: Value,
    },
    ContentBlockDelta {
        index: u64,
        delta: Value,
    },
    ContentBlockStop {},
    MessageDelta {
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop {},
    Ping {},
    Error {},
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

impl Streamed<'_> {
    fn on_event(&mut self, event: SseEvent) -> Result<Flow, Failure> {
        let http = &self.provider.http;
        if event.event == "error" {
            return Err(http.stream_error(event.data.as_bytes(), self.model));
        }
        let wire: WireEvent = serde_json::from_str(&event.data)
            .map_err(|e| http.bad_event(&format!("event `{}`", event.event), &e))?;
        match wire {
            WireEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.usage.input_tokens = usage.input().unwrap_or(0);
                    self.usage.output_tokens = usage.output_tokens.unwrap_or(0);
                }
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = content_block
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned();
                        if !text.is_empty() {
                            (self.sink)(StreamEvent::Text(text.clone()));
                        }
                        Block::Text(text)
                    }
                    Some("tool_use") => {
                        let field = |name: &str| {
                            content_block
                                .get(name)
                                .and_then(Value::as_str)
                                .map(str::to_owned)
                                .ok_or_else(|| {
                                    http.bad_event(
                                        "content_block_start",
                                        &format!("a tool_use block without `{name}`"),
                                    )
                                })
                        };
                        let (id, name) = (field("id")?, field("name")?);
                        (self.sink)(StreamEvent::ToolCallStarted {
                            id: id.clone(),
                            name: name.clone(),
                        });
                        Block::Tool {
                            id,
                            name,
                            json: String::new(),
                        }
                    }
                    _ => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            WireEvent::ContentBlockDelta { index, delta } => {
                let kind = delta.get("type").and_then(Value::as_str);
                match (self.blocks.get_mut(&index), kind) {
                    (Some(Block::Text(text)), Some("text_delta")) => {
                        let piece = delta.get("text").and_then(Value::as_str).unwrap_or("");
                        if !piece.is_empty() {
                            text.push_str(piece);
                            (self.sink)(StreamEvent::Text(piece.to_owned()));
                        }
                    }
                    (Some(Block::Tool { id, json, .. }), Some("input_json_delta")) => {
                        let piece = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        if !piece.is_empty() {
                            json.push_str(piece);
                            (self.sink)(StreamEvent::ToolCallArguments {
                                id: id.clone(),
                                delta: piece.to_owned(),
                            });
                        }
                    }
                    (None, _) => {
                        return Err(http.bad_event(
                            "content_block_delta",
                            &format!("block {index} was never started"),
                        ));
                    }
                    // Thinking, signature and citation deltas are not part of the answer.
                    _ => {}
                }
            }
            WireEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop = Some(reason);
                }
                if let Some(usage) = usage {
                    if let Some(input) = usage.input() {
                        self.usage.input_tokens = input;
                    }
                    if let Some(output) = usage.output_tokens {
                        self.usage.output_tokens = output;
                    }
                }
            }
            WireEvent::MessageStop {} => {
                self.done = true;
                return Ok(Flow::Stop);
            }
            WireEvent::Error {} => {
                return Err(http.stream_error(event.data.as_bytes(), self.model));
            }
            // New event types may appear; the documented advice is to ignore them.
            WireEvent::ContentBlockStop {} | WireEvent::Ping {} | WireEvent::Unknown => {}
        }
        Ok(Flow::Continue)
    }

    fn finish(self) -> Result<ChatResponse, Failure> {
        if !self.done {
            return Err(Failure::broken(
                "The Anthropic stream ended before `message_stop`.".to_owned(),
            ));
        }
        let mut content = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                Block::Text(text) if !text.is_empty() => content.push(Part::Text { text }),
                Block::Tool { id, name, json } => content.push(Part::ToolCall(ToolCall {
                    id,
                    name,
                    // A call without arguments streams no `input_json_delta` at all.
                    arguments: if json.is_empty() {
                        "{}".to_owned()
                    } else {
                        json
                    },
                })),
                Block::Text(_) | Block::Other => {}
            }
        }
        let has_calls = content.iter().any(|p| matches!(p, Part::ToolCall(_)));
        Ok(ChatResponse {
            content,
            stop: stop_reason(self.stop.as_deref(), has_calls),
            usage: self.usage,
        })
    }
}

#[async_trait]
impl ModelProvider for AnthropicProvider {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    async fn complete(
        &self,
        request: &ChatRequest,
        stream: Option<StreamSink<'_>>,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, ProviderError> {
        let body = &self.body(request, stream.is_some());
        self.http
            .run(cancel, stream, move || async move {
                let mut builder = self
                    .http
                    .post(&self.url, body)?
                    .header("anthropic-version", HeaderValue::from_static(API_VERSION));
                if let Some(key) = self.http.key_header() {
                    builder = builder.header("x-api-key", key.clone());
                }
                let response = self.http.send(builder, &request.model).await?;
                match stream {
                    None => {
                        let body = self.http.body(response).await?;
                        self.parse(&body)
                    }
                    Some(sink) => {
                        let mut state = Streamed {
                            provider: self,
                            sink,
                            model: &request.model,
                            blocks: BTreeMap::new(),
                            stop: None,
                            usage: Usage::default(),
                            done: false,
                        };
                        self.http
                            .events(response, |event| state.on_event(event))
                            .await?;
                        state.finish()
                    }
                }
            })
            .await
    }
}
