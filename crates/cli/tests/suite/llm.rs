//! A scripted LLM server on loopback that answers in the real wire formats of OpenAI Chat
//! Completions, Anthropic Messages and Gemini generateContent — whole JSON or server-sent
//! events, as the request asks — from a script of turns, with faults on demand, and records
//! every request body.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// One answer of the model.
#[derive(Debug, Clone, Default)]
pub(crate) struct Turn {
    pub(crate) text: Option<String>,
    /// (name, arguments as JSON text — possibly malformed)
    pub(crate) calls: Vec<(String, String)>,
}

impl Turn {
    pub(crate) fn text(t: &str) -> Step {
        Step::Reply(Turn {
            text: Some(t.into()),
            calls: Vec::new(),
        })
    }

    pub(crate) fn calls(calls: &[(&str, &str)]) -> Step {
        Step::Reply(Turn {
            text: None,
            calls: calls
                .iter()
                .map(|(n, a)| (n.to_string(), a.to_string()))
                .collect(),
        })
    }
}

/// What the server does with the next request.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    Reply(Turn),
    /// HTTP 429 with `Retry-After: secs`.
    TooMany(u64),
    /// The stream of this turn, closed half-way (no terminator).
    Cut(Turn),
    /// HTTP 400 with this error message.
    BadRequest(String),
    /// HTTP 500 with this error message (retried).
    Unavailable(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    OpenAi,
    Anthropic,
    Gemini,
}

impl Wire {
    pub(crate) const ALL: [Wire; 3] = [Wire::OpenAi, Wire::Anthropic, Wire::Gemini];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Wire::OpenAi => "openai",
            Wire::Anthropic => "anthropic",
            Wire::Gemini => "gemini",
        }
    }

    /// The `--base-url` for a server at `addr`.
    pub(crate) fn base_url(self, addr: SocketAddr) -> String {
        match self {
            Wire::OpenAi => format!("http://{addr}/v1"),
            Wire::Anthropic | Wire::Gemini => format!("http://{addr}"),
        }
    }
}

#[derive(Default)]
struct Inner {
    script: Mutex<VecDeque<Step>>,
    requests: Mutex<Vec<(String, Value)>>,
}

/// A running scripted server.
pub(crate) struct Llm {
    pub(crate) addr: SocketAddr,
    inner: Arc<Inner>,
}

impl Llm {
    pub(crate) async fn start(script: Vec<Step>) -> Llm {
        let inner = Arc::new(Inner {
            script: Mutex::new(script.into()),
            requests: Mutex::default(),
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&inner));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Llm { addr, inner }
    }

    /// (path, body) of every request so far.
    pub(crate) fn requests(&self) -> Vec<(String, Value)> {
        self.inner.requests.lock().unwrap().clone()
    }
}

async fn handle(
    State(inner): State<Arc<Inner>>,
    uri: Uri,
    _headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    inner
        .requests
        .lock()
        .unwrap()
        .push((uri.to_string(), body.clone()));
    let (wire, stream) = if path.ends_with("/chat/completions") {
        (Wire::OpenAi, body["stream"] == true)
    } else if path.ends_with("/v1/messages") {
        (Wire::Anthropic, body["stream"] == true)
    } else if path.contains(":streamGenerateContent") {
        (Wire::Gemini, true)
    } else if path.contains(":generateContent") {
        (Wire::Gemini, false)
    } else {
        return (StatusCode::NOT_FOUND, "no such endpoint").into_response();
    };
    let step = inner
        .script
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_else(|| Turn::text("(script exhausted)"));
    match step {
        Step::BadRequest(message) => (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            json!({"error": {"message": message, "type": "invalid_request_error"}}).to_string(),
        )
            .into_response(),
        Step::Unavailable(message) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "application/json")],
            json!({"error": {"message": message, "type": "server_error"}}).to_string(),
        )
            .into_response(),
        Step::TooMany(secs) => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, secs.to_string())],
            json!({"error": {"message": "Rate limit reached", "type": "rate_limit_error", "code": 429}}).to_string(),
        )
            .into_response(),
        Step::Reply(turn) if !stream => (
            [(header::CONTENT_TYPE, "application/json")],
            whole(wire, &turn).to_string(),
        )
            .into_response(),
        Step::Reply(turn) => sse(wire, &turn, false),
        Step::Cut(turn) => sse(wire, &turn, true),
    }
}

fn args_value(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or(json!({}))
}

fn whole(wire: Wire, turn: &Turn) -> Value {
    match wire {
        Wire::OpenAi => {
            let calls: Vec<Value> = turn
                .calls
                .iter()
                .enumerate()
                .map(|(i, (n, a))| json!({"id": format!("call_{i}"), "type": "function", "function": {"name": n, "arguments": a}}))
                .collect();
            let mut message = json!({"role": "assistant", "content": turn.text});
            if !calls.is_empty() {
                message["tool_calls"] = Value::Array(calls);
            }
            json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "scripted",
                "choices": [{"index": 0, "message": message,
                             "finish_reason": if turn.calls.is_empty() { "stop" } else { "tool_calls" }}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            })
        }
        Wire::Anthropic => {
            let mut content = Vec::new();
            if let Some(t) = &turn.text {
                content.push(json!({"type": "text", "text": t}));
            }
            for (i, (n, a)) in turn.calls.iter().enumerate() {
                content.push(json!({"type": "tool_use", "id": format!("toolu_{i}"), "name": n, "input": args_value(a)}));
            }
            json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": "scripted",
                "content": content,
                "stop_reason": if turn.calls.is_empty() { "end_turn" } else { "tool_use" },
                "stop_sequence": null,
                "usage": {"input_tokens": 10, "output_tokens": 5}
            })
        }
        Wire::Gemini => {
            let mut parts = Vec::new();
            if let Some(t) = &turn.text {
                parts.push(json!({"text": t}));
            }
            for (n, a) in &turn.calls {
                parts.push(json!({"functionCall": {"name": n, "args": args_value(a)}}));
            }
            json!({
                "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
            })
        }
    }
}

/// The events of a streamed answer, as `(event name, data)`.
fn events(wire: Wire, turn: &Turn) -> Vec<(Option<&'static str>, String)> {
    let halves = |s: &str| {
        let mid = s
            .char_indices()
            .nth(s.chars().count() / 2)
            .map_or(s.len(), |(i, _)| i);
        (s[..mid].to_owned(), s[mid..].to_owned())
    };
    let mut out: Vec<(Option<&'static str>, String)> = Vec::new();
    match wire {
        Wire::OpenAi => {
            let chunk = |delta: Value, finish: Value| {
                json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "scripted",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
                .to_string()
            };
            out.push((
                None,
                chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            ));
            if let Some(t) = &turn.text {
                let (a, b) = halves(t);
                out.push((None, chunk(json!({"content": a}), Value::Null)));
                out.push((None, chunk(json!({"content": b}), Value::Null)));
            }
            for (i, (n, a)) in turn.calls.iter().enumerate() {
                out.push((None, chunk(json!({"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function", "function": {"name": n, "arguments": ""}}]}), Value::Null)));
                let (x, y) = halves(a);
                for piece in [x, y] {
                    out.push((
                        None,
                        chunk(
                            json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                            Value::Null,
                        ),
                    ));
                }
            }
            let finish = if turn.calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            };
            out.push((None, chunk(json!({}), json!(finish))));
            out.push((None, json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "scripted", "choices": [],
                                   "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).to_string()));
            out.push((None, "[DONE]".into()));
        }
        Wire::Anthropic => {
            out.push((Some("message_start"), json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "scripted", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}).to_string()));
            let mut index = 0;
            if let Some(t) = &turn.text {
                out.push((Some("content_block_start"), json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}).to_string()));
                let (a, b) = halves(t);
                for piece in [a, b] {
                    out.push((Some("content_block_delta"), json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}).to_string()));
                }
                out.push((
                    Some("content_block_stop"),
                    json!({"type": "content_block_stop", "index": index}).to_string(),
                ));
                index += 1;
            }
            for (i, (n, a)) in turn.calls.iter().enumerate() {
                out.push((Some("content_block_start"), json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": format!("toolu_{i}"), "name": n, "input": {}}}).to_string()));
                let (x, y) = halves(a);
                for piece in [x, y] {
                    out.push((Some("content_block_delta"), json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}).to_string()));
                }
                out.push((
                    Some("content_block_stop"),
                    json!({"type": "content_block_stop", "index": index}).to_string(),
                ));
                index += 1;
            }
            let stop = if turn.calls.is_empty() {
                "end_turn"
            } else {
                "tool_use"
            };
            out.push((Some("message_delta"), json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}).to_string()));
            out.push((
                Some("message_stop"),
                json!({"type": "message_stop"}).to_string(),
            ));
        }
        Wire::Gemini => {
            if let Some(t) = &turn.text {
                let (a, b) = halves(t);
                for piece in [a, b] {
                    out.push((None, json!({"candidates": [{"content": {"role": "model", "parts": [{"text": piece}]}, "index": 0}]}).to_string()));
                }
            }
            for (n, a) in &turn.calls {
                out.push((None, json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": n, "args": args_value(a)}}]}, "index": 0}]}).to_string()));
            }
            out.push((None, json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}],
                                   "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}).to_string()));
        }
    }
    out
}

fn sse(wire: Wire, turn: &Turn, cut: bool) -> Response {
    let mut events = events(wire, turn);
    if cut {
        let keep = (events.len() / 2).max(1);
        events.truncate(keep);
    }
    let mut text = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            text.push_str(&format!("event: {name}\n"));
        }
        text.push_str(&format!("data: {data}\n\n"));
    }
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from(text))
        .unwrap()
}
