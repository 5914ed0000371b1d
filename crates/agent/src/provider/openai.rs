//! OpenAI Chat Completions (`POST {base_url}/chat/completions`), as OpenAI documents it
//! (<https://platform.openai.com/docs/api-reference/chat>) and as compatible servers (Ollama,
//! llama.cpp, vLLM, LM Studio, OpenRouter) serve it.

use async_trait::async_trait;
use reqwest::header::AUTHORIZATION;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::CancellationToken;
use tool_core::schema::{self, Provider};

use super::http::{CallIds, Failure, Flow, Http, temperature};
use super::sse::SseEvent;
use super::{
    ChatRequest, ChatResponse, ModelProvider, ProviderConfig, ProviderError, StopReason,
    StreamEvent, StreamSink, Usage,
};
use crate::message::{Message, Part, ToolCall};

/// A model behind the OpenAI Chat Completions API or a server compatible with it.
///
/// The answer limit goes out as `max_completion_tokens` to `api.openai.com` (where `max_tokens`
/// is deprecated and refused by reasoning models) and as `max_tokens` to every other server,
/// since Ollama, llama.cpp and older vLLM only know that one.
#[derive(Debug)]
pub struct OpenAiProvider {
    http: Http,
    url: String,
    max_completion_tokens: bool,
    ids: CallIds,
}

impl OpenAiProvider {
    /// Checks `config` (base URL, key) and builds the client; nothing is sent yet.
    pub fn new(config: ProviderConfig) -> Result<OpenAiProvider, ProviderError> {
        let http = Http::new("OpenAI", &config, "Bearer ")?;
        let url = format!("{}/chat/completions", http.base_url());
        let max_completion_tokens = reqwest::Url::parse(http.base_url())
            .ok()
            .and_then(|u| {
                u.host_str()
                    .map(|h| h.eq_ignore_ascii_case("api.openai.com"))
            })
            .unwrap_or(false);
        Ok(OpenAiProvider {
            http,
            url,
            max_completion_tokens,
            ids: CallIds::new("call_"),
        })
    }

    /// The request body.
    fn body(&self, request: &ChatRequest, stream: bool) -> Value {
        let mut body = json!({
            "model": request.model,
            "messages": messages(request),
        });
        let limit = if self.max_completion_tokens {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body[limit] = json!(request.max_tokens);
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|spec| schema::export(spec, Provider::OpenAi))
                .collect();
        }
        if let Some(t) = request.temperature {
            body["temperature"] = temperature(t);
        }
        if stream {
            body["stream"] = json!(true);
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    }
}

/// The conversation as Chat Completions messages: the system prompt first; each tool result
/// as its own `tool` message right after the assistant message that called it, then the user's
/// text.
fn messages(request: &ChatRequest) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        match message {
            Message::User { content } => {
                let mut texts = Vec::new();
                for part in content {
                    match part {
                        Part::ToolResult(result) => out.push(json!({
                            "role": "tool",
                            "tool_call_id": result.call_id,
                            "content": result.content,
                        })),
                        Part::Text { text } => texts.push(text.as_str()),
                        // Calls are the model's; a user message has none to send.
                        Part::ToolCall(_) => {}
                    }
                }
                if !texts.is_empty() {
                    out.push(json!({"role": "user", "content": texts.join("\n")}));
                }
            }
            Message::Assistant { content } => {
                let mut texts = Vec::new();
                let mut calls = Vec::new();
                for part in content {
                    match part {
                        Part::Text { text } if !text.is_empty() => texts.push(text.as_str()),
                        Part::ToolCall(call) => calls.push(json!({
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": object_text(&call.arguments),
                            },
                        })),
                        Part::Text { .. } | Part::ToolResult(_) => {}
                    }
                }
                if texts.is_empty() && calls.is_empty() {
                    continue;
                }
                let mut m = json!({
                    "role": "assistant",
                    "content": if texts.is_empty() { Value::Null } else { json!(texts.join("\n")) },
                });
                if !calls.is_empty() {
                    m["tool_calls"] = Value::Array(calls);
                }
                out.push(m);
            }
        }
    }
    out
}

#[derive(Debug, Deserialize)]
struct Completion {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    message: WireMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
}

#[derive(Debug, Deserialize)]
struct WireCall {
    #[serde(default)]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Debug, Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(&self) -> Usage {
        Usage {
            input_tokens: self.prompt_tokens.unwrap_or(0),
            output_tokens: self.completion_tokens.unwrap_or(0),
        }
    }
}

/// The arguments as the model wrote them when they are a JSON object, else `{}` (see
/// `http::arguments_object`); kept verbatim so that the model sees its own text again.
fn object_text(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(_)) => arguments.to_owned(),
        _ => "{}".to_owned(),
    }
}

/// Message content: a string, or (some servers) an array of `{"type":"text","text"}` parts.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Arguments are JSON text; a server that sends an object gets it written out.
fn arguments_text(arguments: Option<&Value>) -> String {
    match arguments {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    }
}

fn stop_reason(finish: Option<&str>, has_calls: bool) -> StopReason {
    match finish {
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        // Some compatible servers say `stop` after tool calls.
        Some("stop") | None if has_calls => StopReason::ToolUse,
        Some("stop") | None => StopReason::EndTurn,
        Some(other) => StopReason::Other(other.to_owned()),
    }
}

impl OpenAiProvider {
    fn parse(&self, body: &[u8]) -> Result<ChatResponse, Failure> {
        let completion: Completion = self.http.json(body)?;
        let Some(choice) = completion.choices.into_iter().next() else {
            return Err(Failure::malformed(
                "OpenAI sent an answer with no choices; check that the base URL points at a \
                 Chat Completions API."
                    .to_owned(),
            ));
        };
        let mut content = Vec::new();
        let mut text = content_text(choice.message.content.as_ref());
        if text.is_empty()
            && let Some(refusal) = choice.message.refusal
        {
            text = refusal;
        }
        if !text.is_empty() {
            content.push(Part::Text { text });
        }
        for call in choice.message.tool_calls.unwrap_or_default() {
            content.push(Part::ToolCall(ToolCall {
                id: call
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| self.ids.next()),
                name: call.function.name,
                arguments: arguments_text(call.function.arguments.as_ref()),
            }));
        }
        let has_calls = content.iter().any(|p| matches!(p, Part::ToolCall(_)));
        Ok(ChatResponse {
            stop: stop_reason(choice.finish_reason.as_deref(), has_calls),
            usage: completion.usage.map(|u| u.usage()).unwrap_or_default(),
            content,
        })
    }
}

/// One tool call being streamed.
#[derive(Debug)]
struct Slot {
    index: u64,
    id: String,
    name: String,
    arguments: String,
    /// Whether `ToolCallStarted` went out (it waits for the name).
    started: bool,
}

/// The answer as its chunks arrive.
struct Streamed<'a> {
    provider: &'a OpenAiProvider,
    sink: StreamSink<'a>,
    model: &'a str,
    text: String,
    slots: Vec<Slot>,
    finish: Option<String>,
    usage: Usage,
    done: bool,
}

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    index: u64,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Debug, Deserialize)]
struct CallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

impl Streamed<'_> {
    fn on_event(&mut self, event: SseEvent) -> Result<Flow, Failure> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Flow::Stop);
        }
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        let value: Value = serde_json::from_str(data)
            .map_err(|e| self.provider.http.bad_event("a chunk that is not JSON", &e))?;
        if value.get("error").is_some_and(|e| !e.is_null()) {
            return Err(self.provider.http.stream_error(data.as_bytes(), self.model));
        }
        let chunk: Chunk = serde_json::from_value(value)
            .map_err(|e| self.provider.http.bad_event("a chunk", &e))?;
        if let Some(usage) = &chunk.usage {
            self.usage = usage.usage();
        }
        // Only the first choice is asked for (`n` is never sent).
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(delta) = choice.delta {
                self.delta(delta);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(reason);
            }
        }
        Ok(Flow::Continue)
    }

    fn delta(&mut self, delta: Delta) {
        let mut text = content_text(delta.content.as_ref());
        if text.is_empty()
            && let Some(refusal) = delta.refusal
        {
            text = refusal;
        }
        if !text.is_empty() {
            self.text.push_str(&text);
            (self.sink)(StreamEvent::Text(text));
        }
        for call in delta.tool_calls.unwrap_or_default() {
            let id = call.id.filter(|id| !id.is_empty());
            let index = call.index.unwrap_or_else(|| {
                // Without an index, a new id opens a new call and anything else continues
                // the last one.
                match (&id, self.slots.last()) {
                    (None, Some(last)) => last.index,
                    _ => self.slots.iter().map(|s| s.index + 1).max().unwrap_or(0),
                }
            });
            let found = self.slots.iter().rposition(|s| s.index == index);
            // Some servers (Ollama) number every call of a parallel batch 0 and tell them
            // apart by id only.
            let pos = match (found, &id) {
                (Some(pos), Some(id)) if self.slots[pos].id != *id => None,
                (found, _) => found,
            };
            let pos = match pos {
                Some(pos) => pos,
                None => {
                    self.slots.push(Slot {
                        index,
                        id: id.clone().unwrap_or_else(|| self.provider.ids.next()),
                        name: String::new(),
                        arguments: String::new(),
                        started: false,
                    });
                    self.slots.len() - 1
                }
            };
            let (name, arguments) = match call.function {
                Some(f) => (f.name, arguments_text(f.arguments.as_ref())),
                None => (None, String::new()),
            };
            let slot = &mut self.slots[pos];
            if let Some(name) = name.filter(|n| !n.is_empty())
                && slot.name.is_empty()
            {
                slot.name = name;
            }
            slot.arguments.push_str(&arguments);
            if !slot.started && !slot.name.is_empty() {
                slot.started = true;
                (self.sink)(StreamEvent::ToolCallStarted {
                    id: slot.id.clone(),
                    name: slot.name.clone(),
                });
                if !slot.arguments.is_empty() {
                    (self.sink)(StreamEvent::ToolCallArguments {
                        id: slot.id.clone(),
                        delta: slot.arguments.clone(),
                    });
                }
            } else if slot.started && !arguments.is_empty() {
                (self.sink)(StreamEvent::ToolCallArguments {
                    id: slot.id.clone(),
                    delta: arguments,
                });
            }
        }
    }

    fn finish(mut self) -> Result<ChatResponse, Failure> {
        if !self.done {
            return Err(Failure::broken(
                "The OpenAI stream ended before `data: [DONE]`.".to_owned(),
            ));
        }
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(Part::Text {
                text: std::mem::take(&mut self.text),
            });
        }
        // Stable: calls that share an index keep their arrival order.
        self.slots.sort_by_key(|s| s.index);
        let has_calls = !self.slots.is_empty();
        content.extend(self.slots.into_iter().map(|s| {
            Part::ToolCall(ToolCall {
                id: s.id,
                name: s.name,
                arguments: s.arguments,
            })
        }));
        Ok(ChatResponse {
            content,
            stop: stop_reason(self.finish.as_deref(), has_calls),
            usage: self.usage,
        })
    }
}

#[async_trait]
impl ModelProvider for OpenAiProvider {
    fn name(&self) -> &'static str {
        "openai"
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
                let mut builder = self.http.post(&self.url, body)?;
                if let Some(key) = self.http.key_header() {
                    builder = builder.header(AUTHORIZATION, key.clone());
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
                            text: String::new(),
                            slots: Vec::new(),
                            finish: None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderKind;

    fn body_for(base_url: &str) -> Value {
        let mut config = ProviderConfig::new(ProviderKind::OpenAi);
        config.base_url = base_url.to_owned();
        let request = ChatRequest {
            model: "gpt-5-mini".to_owned(),
            system: None,
            messages: vec![Message::user("hi")],
            tools: Vec::new(),
            max_tokens: 100,
            temperature: None,
        };
        OpenAiProvider::new(config).unwrap().body(&request, false)
    }

    #[test]
    fn the_answer_limit_field_depends_on_the_server() {
        let openai = body_for("https://api.openai.com/v1");
        assert_eq!(openai["max_completion_tokens"], json!(100));
        assert!(openai.get("max_tokens").is_none());
        let ollama = body_for("http://127.0.0.1:11434/v1/");
        assert_eq!(ollama["max_tokens"], json!(100));
        assert!(ollama.get("max_completion_tokens").is_none());
    }

    #[test]
    fn stop_reasons() {
        assert_eq!(stop_reason(Some("stop"), false), StopReason::EndTurn);
        assert_eq!(stop_reason(Some("stop"), true), StopReason::ToolUse);
        assert_eq!(stop_reason(Some("tool_calls"), true), StopReason::ToolUse);
        assert_eq!(stop_reason(Some("length"), false), StopReason::MaxTokens);
        assert_eq!(
            stop_reason(Some("content_filter"), false),
            StopReason::Other("content_filter".into())
        );
    }
}
