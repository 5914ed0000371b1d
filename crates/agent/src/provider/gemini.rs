//! Google Gemini `generateContent` and `streamGenerateContent?alt=sse`
//! (`{base_url}/v1beta/models/{model}:…`), as Google documents them
//! (<https://ai.google.dev/api/generate-content>, function calling:
//! <https://ai.google.dev/gemini-api/docs/function-calling>, thought signatures:
//! <https://ai.google.dev/gemini-api/docs/thought-signatures>).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::CancellationToken;
use tool_core::schema::{self, Provider};

use super::http::{CallIds, Failure, Flow, Http, arguments_object, temperature};
use super::sse::SseEvent;
use super::{
    ChatRequest, ChatResponse, ModelProvider, ProviderConfig, ProviderError, StopReason,
    StreamEvent, StreamSink, Usage,
};
use crate::message::{Message, Part, ToolCall};

/// The start of the ids made up for calls the model gave no id: such ids never go back to the
/// API (results are matched by name and order there).
const GENERATED_PREFIX: &str = "gemini_call_";
/// The placeholder Google documents for a function call whose thought signature is not at
/// hand (history from before a restart, or from another model); Gemini 3 refuses a call in the
/// current turn that has none.
const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";
/// How many thought signatures are remembered (they are only needed for recent turns).
const MAX_SIGNATURES: usize = 512;

/// A model behind the Gemini API.
///
/// Gemini attaches an opaque `thoughtSignature` to function calls and requires it back with
/// the call in later requests. [`ToolCall`] has no room for it, so the provider remembers the
/// signatures of the calls it returned (by call id) and puts them back; a call it has no
/// signature for (the session was resumed) gets Google's documented placeholder.
#[derive(Debug)]
pub struct GeminiProvider {
    http: Http,
    ids: CallIds,
    signatures: Mutex<Signatures>,
}

#[derive(Debug, Default)]
struct Signatures {
    by_call: HashMap<String, String>,
    order: VecDeque<String>,
}

impl Signatures {
    fn insert(&mut self, call_id: String, signature: String) {
        if self.by_call.insert(call_id.clone(), signature).is_none() {
            self.order.push_back(call_id);
        }
        while self.order.len() > MAX_SIGNATURES {
            if let Some(old) = self.order.pop_front() {
                self.by_call.remove(&old);
            }
        }
    }
}

impl GeminiProvider {
    /// Checks `config` (base URL, key) and builds the client; nothing is sent yet.
    pub fn new(config: ProviderConfig) -> Result<GeminiProvider, ProviderError> {
        Ok(GeminiProvider {
            http: Http::new("Gemini", &config, "")?,
            ids: CallIds::new(GENERATED_PREFIX),
            signatures: Mutex::new(Signatures::default()),
        })
    }

    fn url(&self, model: &str, stream: bool) -> String {
        let model = model.trim().trim_start_matches("models/");
        if stream {
            format!(
                "{}/v1beta/models/{model}:streamGenerateContent?alt=sse",
                self.http.base_url()
            )
        } else {
            format!(
                "{}/v1beta/models/{model}:generateContent",
                self.http.base_url()
            )
        }
    }

    /// The request body.
    fn body(&self, request: &ChatRequest) -> Value {
        let mut body = json!({ "contents": self.contents(&request.messages) });
        if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
            body["systemInstruction"] = json!({"parts": [{"text": system}]});
        }
        if !request.tools.is_empty() {
            let declarations: Vec<Value> = request
                .tools
                .iter()
                .map(|spec| schema::export(spec, Provider::Gemini))
                .collect();
            body["tools"] = json!([{ "functionDeclarations": declarations }]);
        }
        let mut config = json!({"maxOutputTokens": request.max_tokens});
        if let Some(t) = request.temperature {
            config["temperature"] = temperature(t);
        }
        body["generationConfig"] = config;
        body
    }

    /// The conversation as `contents`: tool results become `functionResponse` parts (before
    /// the user's text) whose `response` is `{"output": …}` or `{"error": …}`, as the API
    /// reference describes the field; calls become `functionCall` parts with their arguments
    /// as an object and their thought signature.
    fn contents(&self, messages: &[Message]) -> Vec<Value> {
        let signatures = self
            .signatures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = Vec::new();
        for message in messages {
            let (role, parts) = match message {
                Message::User { content } => {
                    let results = content.iter().filter_map(|p| match p {
                        Part::ToolResult(r) => {
                            let key = if r.is_error { "error" } else { "output" };
                            let mut response = json!({
                                "name": r.name,
                                "response": { key: r.content },
                            });
                            if !r.call_id.starts_with(GENERATED_PREFIX) {
                                response["id"] = json!(r.call_id);
                            }
                            Some(json!({ "functionResponse": response }))
                        }
                        _ => None,
                    });
                    let texts = content.iter().filter_map(|p| match p {
                        Part::Text { text } if !text.is_empty() => Some(json!({"text": text})),
                        _ => None,
                    });
                    ("user", results.chain(texts).collect::<Vec<_>>())
                }
                Message::Assistant { content } => {
                    let mut parts = Vec::new();
                    let mut first_call = true;
                    for part in content {
                        match part {
                            Part::Text { text } if !text.is_empty() => {
                                parts.push(json!({"text": text}));
                            }
                            Part::ToolCall(call) => {
                                let mut function_call = json!({
                                    "name": call.name,
                                    "args": Value::Object(arguments_object(&call.arguments)),
                                });
                                if !call.id.starts_with(GENERATED_PREFIX) {
                                    function_call["id"] = json!(call.id);
                                }
                                let mut wire = json!({ "functionCall": function_call });
                                // Only the first call of a step carries a signature.
                                match signatures.by_call.get(&call.id) {
                                    Some(sig) => wire["thoughtSignature"] = json!(sig),
                                    None if first_call => {
                                        wire["thoughtSignature"] = json!(SKIP_SIGNATURE);
                                    }
                                    None => {}
                                }
                                first_call = false;
                                parts.push(wire);
                            }
                            _ => {}
                        }
                    }
                    ("model", parts)
                }
            };
            if !parts.is_empty() {
                out.push(json!({"role": role, "parts": parts}));
            }
        }
        out
    }

    fn remember(&self, call_id: &str, signature: Option<String>) {
        if let Some(signature) = signature.filter(|s| !s.is_empty()) {
            self.signatures
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(call_id.to_owned(), signature);
        }
    }

    fn call_id(&self, id: Option<String>) -> String {
        id.filter(|id| !id.is_empty())
            .unwrap_or_else(|| self.ids.next())
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireResponse {
    #[serde(default)]
    candidates: Option<Vec<Candidate>>,
    #[serde(default)]
    usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<WireContent>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireContent {
    #[serde(default)]
    parts: Vec<WirePart>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePart {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    function_call: Option<WireCall>,
    #[serde(default)]
    thought_signature: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireCall {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    #[serde(default)]
    prompt_token_count: Option<u64>,
    #[serde(default)]
    candidates_token_count: Option<u64>,
    #[serde(default)]
    thoughts_token_count: Option<u64>,
}

impl UsageMetadata {
    /// Thinking tokens are output tokens (they are billed as such), as in OpenAI's count.
    fn usage(&self) -> Usage {
        Usage {
            input_tokens: self.prompt_token_count.unwrap_or(0),
            output_tokens: self.candidates_token_count.unwrap_or(0)
                + self.thoughts_token_count.unwrap_or(0),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

fn stop_reason(finish: Option<&str>, has_calls: bool) -> StopReason {
    match finish {
        Some("STOP") | None if has_calls => StopReason::ToolUse,
        Some("STOP") | None => StopReason::EndTurn,
        Some("MAX_TOKENS") => StopReason::MaxTokens,
        Some(other) => StopReason::Other(other.to_owned()),
    }
}

/// What one response (or stream chunk) adds to the answer.
struct Piece {
    parts: Vec<Part>,
    finish: Option<String>,
    usage: Option<Usage>,
}

impl GeminiProvider {
    /// Reads one `GenerateContentResponse`: answer parts (thought summaries left out), the
    /// finish reason (a blocked prompt's `blockReason` counts as one), usage.
    fn piece(&self, response: WireResponse) -> Piece {
        let mut parts = Vec::new();
        let mut finish = None;
        if let Some(candidate) = response.candidates.and_then(|c| c.into_iter().next()) {
            finish = candidate.finish_reason;
            for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
                if let Some(call) = part.function_call {
                    let id = self.call_id(call.id);
                    self.remember(&id, part.thought_signature);
                    let args = match call.args {
                        Some(args @ Value::Object(_)) => args,
                        _ => json!({}),
                    };
                    parts.push(Part::ToolCall(ToolCall {
                        id,
                        name: call.name,
                        arguments: args.to_string(),
                    }));
                } else if let Some(text) = part.text
                    && part.thought != Some(true)
                    && !text.is_empty()
                {
                    parts.push(Part::Text { text });
                }
            }
        }
        if finish.is_none() {
            finish = response.prompt_feedback.and_then(|f| f.block_reason);
        }
        Piece {
            parts,
            finish,
            usage: response.usage_metadata.map(|u| u.usage()),
        }
    }

    fn parse(&self, body: &[u8]) -> Result<ChatResponse, Failure> {
        let response: WireResponse = self.http.json(body)?;
        if response.candidates.as_ref().is_none_or(Vec::is_empty)
            && response
                .prompt_feedback
                .as_ref()
                .and_then(|f| f.block_reason.as_ref())
                .is_none()
        {
            return Err(Failure::malformed(format!(
                "Gemini sent an answer with no candidates; check that the base URL ({}) points \
                 at the Gemini API.",
                self.http.base_url()
            )));
        }
        let piece = self.piece(response);
        let mut content: Vec<Part> = Vec::new();
        for part in piece.parts {
            push_merged(&mut content, part);
        }
        let has_calls = content.iter().any(|p| matches!(p, Part::ToolCall(_)));
        Ok(ChatResponse {
            stop: stop_reason(piece.finish.as_deref(), has_calls),
            usage: piece.usage.unwrap_or_default(),
            content,
        })
    }
}

/// Appends `part`, joining it to a text part just before it.
fn push_merged(content: &mut Vec<Part>, part: Part) {
    if let (Some(Part::Text { text: last }), Part::Text { text }) = (content.last_mut(), &part) {
        last.push_str(text);
    } else {
        content.push(part);
    }
}

/// The answer as its chunks arrive; the stream has no terminator, so it is complete once a
/// chunk carried a finish reason.
struct Streamed<'a> {
    provider: &'a GeminiProvider,
    sink: StreamSink<'a>,
    model: &'a str,
    content: Vec<Part>,
    finish: Option<String>,
    usage: Usage,
}

impl Streamed<'_> {
    fn on_event(&mut self, event: SseEvent) -> Result<Flow, Failure> {
        let http = &self.provider.http;
        if event.data.trim().is_empty() {
            return Ok(Flow::Continue);
        }
        let value: Value = serde_json::from_str(&event.data)
            .map_err(|e| http.bad_event("a chunk that is not JSON", &e))?;
        if value.get("error").is_some_and(|e| !e.is_null()) {
            return Err(http.stream_error(event.data.as_bytes(), self.model));
        }
        let response: WireResponse =
            serde_json::from_value(value).map_err(|e| http.bad_event("a chunk", &e))?;
        let piece = self.provider.piece(response);
        for part in piece.parts {
            match &part {
                Part::Text { text } => (self.sink)(StreamEvent::Text(text.clone())),
                Part::ToolCall(call) => {
                    (self.sink)(StreamEvent::ToolCallStarted {
                        id: call.id.clone(),
                        name: call.name.clone(),
                    });
                    (self.sink)(StreamEvent::ToolCallArguments {
                        id: call.id.clone(),
                        delta: call.arguments.clone(),
                    });
                }
                Part::ToolResult(_) => {}
            }
            push_merged(&mut self.content, part);
        }
        if let Some(finish) = piece.finish {
            self.finish = Some(finish);
        }
        if let Some(usage) = piece.usage {
            self.usage = usage;
        }
        Ok(Flow::Continue)
    }

    fn finish(self) -> Result<ChatResponse, Failure> {
        let Some(finish) = self.finish else {
            return Err(Failure::broken(
                "The Gemini stream ended before any chunk gave a finishReason.".to_owned(),
            ));
        };
        let has_calls = self.content.iter().any(|p| matches!(p, Part::ToolCall(_)));
        Ok(ChatResponse {
            stop: stop_reason(Some(&finish), has_calls),
            usage: self.usage,
            content: self.content,
        })
    }
}

#[async_trait]
impl ModelProvider for GeminiProvider {
    fn name(&self) -> &'static str {
        "gemini"
    }

    async fn complete(
        &self,
        request: &ChatRequest,
        stream: Option<StreamSink<'_>>,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, ProviderError> {
        let body = &self.body(request);
        let url = &self.url(&request.model, stream.is_some());
        self.http
            .run(cancel, stream, move || async move {
                let mut builder = self.http.post(url, body)?;
                if let Some(key) = self.http.key_header() {
                    builder = builder.header("x-goog-api-key", key.clone());
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
                            content: Vec::new(),
                            finish: None,
                            usage: Usage::default(),
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
