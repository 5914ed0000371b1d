//! OpenAI Chat Completions, in the shapes of <https://platform.openai.com/docs/api-reference/chat>.

use serde_json::{Value, json};
use tool_core::schema::{self, Provider};
use toolshed_agent::provider::{ProviderKind, StopReason, StreamEvent, Usage, connect};

use crate::common::{
    Dialect, KEY, after_tool_round, call, calls, config, hello, provider, shared_tests, specs,
    stream, text,
};
use crate::server::{Reply, Server};

const TEXT_JSON: &str = r#"{
  "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-4.1-mini-2025-04-14",
  "choices": [
    {
      "index": 0,
      "message": {"role": "assistant", "content": "Hello there.", "refusal": null, "annotations": []},
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default",
  "system_fingerprint": "fp_44709d6fcb"
}"#;

const TEXT_SSE: &str = concat!(
    r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4.1-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4.1-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4.1-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":" there."},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4.1-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4.1-mini","system_fingerprint":"fp_44709d6fcb","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}"#,
    "\n\n",
    "data: [DONE]\n\n",
);

/// [`TEXT_SSE`] without `data: [DONE]`.
const UNTERMINATED_SSE: &str = concat!(
    r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4.1-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}],"usage":null}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4.1-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}"#,
    "\n\n",
);

fn error(status: u16, message: &str) -> String {
    let (kind, code) = match status {
        401 => ("invalid_request_error", "invalid_api_key"),
        403 => (
            "invalid_request_error",
            "unsupported_country_region_territory",
        ),
        404 => ("invalid_request_error", "model_not_found"),
        429 => ("requests", "rate_limit_exceeded"),
        _ => ("server_error", "server_error"),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}}).to_string()
}

pub(crate) const OPENAI: Dialect = Dialect {
    kind: ProviderKind::OpenAi,
    display: "OpenAI",
    model: "gpt-4.1-mini",
    base_suffix: "/v1",
    text_json: TEXT_JSON,
    text_sse: TEXT_SSE,
    unterminated_sse: UNTERMINATED_SSE,
    error,
};

shared_tests!(OPENAI);

/// A chunk of the tool-call stream: `delta` inside the documented envelope.
fn chunk(delta: Value, finish: Option<&str>) -> String {
    let chunk = json!({
        "id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1694268190,
        "model": "gpt-4.1-mini", "system_fingerprint": "fp_44709d6fcb",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        "usage": null,
    });
    format!("data: {chunk}\n\n")
}

fn args(index: u64, piece: &str) -> String {
    chunk(
        json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
        None,
    )
}

/// Two parallel calls; their argument pieces interleave, and the second starts before the
/// first is complete.
fn parallel_calls_sse() -> String {
    let mut body = String::new();
    body += &chunk(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"index": 0, "id": "call_read", "type": "function", "function": {"name": "read_file", "arguments": ""}}
        ]}),
        None,
    );
    body += &args(0, r#"{"pa"#);
    body += &chunk(
        json!({"tool_calls": [
            {"index": 1, "id": "call_grep", "type": "function", "function": {"name": "grep", "arguments": ""}}
        ]}),
        None,
    );
    body += &args(1, r#"{"pattern":"#);
    body += &args(0, r#"th":"a.txt"}"#);
    body += &args(1, r#""fn","path":null}"#);
    body += &chunk(json!({}), Some("tool_calls"));
    body += r#"data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4.1-mini","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":30,"total_tokens":80}}"#;
    body += "\n\ndata: [DONE]\n\n";
    body
}

#[tokio::test]
async fn text_answer() {
    let server = Server::start(vec![Reply::ok(TEXT_JSON)]).await;
    let response = call(&*provider(&OPENAI, &server), &hello(&OPENAI))
        .await
        .unwrap();
    assert_eq!(text(&response), "Hello there.");
    assert_eq!(response.stop, StopReason::EndTurn);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 11,
            output_tokens: 7
        }
    );
    let request = server.only_request();
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization").as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        request.header("content-type").as_deref(),
        Some("application/json")
    );
    // A server that is not api.openai.com gets `max_tokens`, which every compatible server
    // knows.
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-4.1-mini",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Say hello."},
            ],
            "max_tokens": 256,
        })
    );
}

#[tokio::test]
async fn streamed_text_answer() {
    let server = Server::start(vec![Reply::sse(TEXT_SSE)]).await;
    let mut request = hello(&OPENAI);
    request.temperature = Some(0.2);
    let (result, events) = stream(&*provider(&OPENAI, &server), &request).await;
    let response = result.unwrap();
    assert_eq!(text(&response), "Hello there.");
    assert_eq!(response.stop, StopReason::EndTurn);
    assert_eq!(response.usage.input_tokens, 11);
    assert_eq!(response.usage.output_tokens, 7);
    assert_eq!(
        events,
        [
            StreamEvent::Text("Hello".into()),
            StreamEvent::Text(" there.".into())
        ]
    );
    let body = server.only_request().body;
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["temperature"], json!(0.2));
}

#[tokio::test]
async fn no_key_sends_no_authorization_header() {
    let server = Server::start(vec![Reply::ok(TEXT_JSON)]).await;
    let provider = connect(config(&OPENAI, &server, None)).unwrap();
    call(&*provider, &hello(&OPENAI)).await.unwrap();
    assert_eq!(server.only_request().header("authorization"), None);
}

#[tokio::test]
async fn streamed_parallel_tool_calls_keep_their_order() {
    let server = Server::start(vec![Reply::sse(&parallel_calls_sse())]).await;
    let mut request = hello(&OPENAI);
    request.tools = specs();
    let (result, events) = stream(&*provider(&OPENAI, &server), &request).await;
    let response = result.unwrap();
    assert_eq!(response.stop, StopReason::ToolUse);
    assert_eq!(response.usage.input_tokens, 50);
    assert_eq!(response.usage.output_tokens, 30);
    let calls = calls(&response);
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (
            calls[0].id.as_str(),
            calls[0].name.as_str(),
            calls[0].arguments.as_str()
        ),
        ("call_read", "read_file", r#"{"path":"a.txt"}"#)
    );
    assert_eq!(
        (
            calls[1].id.as_str(),
            calls[1].name.as_str(),
            calls[1].arguments.as_str()
        ),
        ("call_grep", "grep", r#"{"pattern":"fn","path":null}"#)
    );
    let started = |id: &str, name: &str| StreamEvent::ToolCallStarted {
        id: id.into(),
        name: name.into(),
    };
    let piece = |id: &str, delta: &str| StreamEvent::ToolCallArguments {
        id: id.into(),
        delta: delta.into(),
    };
    assert_eq!(
        events,
        [
            started("call_read", "read_file"),
            piece("call_read", r#"{"pa"#),
            started("call_grep", "grep"),
            piece("call_grep", r#"{"pattern":"#),
            piece("call_read", r#"th":"a.txt"}"#),
            piece("call_grep", r#""fn","path":null}"#),
        ]
    );
    let tools: Vec<Value> = specs()
        .iter()
        .map(|s| schema::export(s, Provider::OpenAi))
        .collect();
    assert_eq!(server.only_request().body["tools"], Value::Array(tools));
}

#[tokio::test]
async fn parallel_tool_calls() {
    let body = json!({
        "id": "chatcmpl-3", "object": "chat.completion", "created": 1741569952, "model": "gpt-4.1-mini",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "I'll look.",
                "refusal": null,
                "tool_calls": [
                    {"id": "call_read", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}},
                    {"id": "call_grep", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\":\"fn\",\"path\":null}"}}
                ]
            },
            "logprobs": null,
            "finish_reason": "tool_calls"
        }],
        "usage": {"prompt_tokens": 50, "completion_tokens": 30, "total_tokens": 80}
    });
    let server = Server::start(vec![Reply::ok(&body.to_string())]).await;
    let mut request = hello(&OPENAI);
    request.tools = specs();
    let response = call(&*provider(&OPENAI, &server), &request).await.unwrap();
    assert_eq!(response.stop, StopReason::ToolUse);
    assert_eq!(text(&response), "I'll look.");
    let calls = calls(&response);
    let got: Vec<_> = calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("call_read", "read_file", r#"{"path":"a.txt"}"#),
            ("call_grep", "grep", r#"{"pattern":"fn","path":null}"#),
        ]
    );
    let tools: Vec<Value> = specs()
        .iter()
        .map(|s| schema::export(s, Provider::OpenAi))
        .collect();
    assert_eq!(server.only_request().body["tools"], Value::Array(tools));
}

#[tokio::test]
async fn tool_results_go_back_as_tool_messages() {
    let server = Server::start(vec![Reply::ok(TEXT_JSON)]).await;
    let mut request = hello(&OPENAI);
    request.messages = after_tool_round("call_read", "call_grep");
    call(&*provider(&OPENAI, &server), &request).await.unwrap();
    assert_eq!(
        server.only_request().body["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Find fn in a.txt."},
            {
                "role": "assistant",
                "content": "I'll look.",
                "tool_calls": [
                    {"id": "call_read", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}},
                    // Arguments that were not a JSON object go back as `{}`.
                    {"id": "call_grep", "type": "function", "function": {"name": "grep", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "call_read", "content": "fn main() {}"},
            {"role": "tool", "tool_call_id": "call_grep", "content": "The arguments are not valid JSON; send an object."},
            {"role": "user", "content": "Be quick."},
        ])
    );
}

#[tokio::test]
async fn calls_numbered_alike_are_told_apart_by_id() {
    // Ollama streams each call of a parallel batch whole, all at index 0.
    let mut body = String::new();
    body += &chunk(
        json!({"role": "assistant", "content": "", "tool_calls": [
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}}
        ]}),
        None,
    );
    body += &chunk(
        json!({"tool_calls": [
            {"index": 0, "id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"b.txt\"}"}}
        ]}),
        None,
    );
    body += &chunk(json!({}), Some("tool_calls"));
    body += "data: [DONE]\n\n";
    let server = Server::start(vec![Reply::sse(&body)]).await;
    let (result, _) = stream(&*provider(&OPENAI, &server), &hello(&OPENAI)).await;
    let calls = calls(&result.unwrap());
    let got: Vec<_> = calls
        .iter()
        .map(|c| (c.id.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("call_a", r#"{"path":"a.txt"}"#),
            ("call_b", r#"{"path":"b.txt"}"#)
        ]
    );
}

#[tokio::test]
async fn an_error_chunk_in_the_stream_is_retried_when_transient() {
    let error_chunk = "data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n";
    let server = Server::start(vec![Reply::sse(error_chunk), Reply::sse(TEXT_SSE)]).await;
    let (result, events) = stream(&*provider(&OPENAI, &server), &hello(&OPENAI)).await;
    assert_eq!(text(&result.unwrap()), "Hello there.");
    let retries = crate::common::retries(&events);
    assert_eq!(retries.len(), 1);
    assert!(
        retries[0].2.contains("The server had an error"),
        "{}",
        retries[0].2
    );
}

#[tokio::test]
async fn exhausted_quota_is_not_retried() {
    let body = json!({"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}});
    let server = Server::start(vec![Reply::status(429, &body.to_string())]).await;
    let error = call(&*provider(&OPENAI, &server), &hello(&OPENAI))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, toolshed_agent::provider::ProviderError::Http { status: 429, message } if message.contains("OPENAI_API_KEY") && message.contains("quota")),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 1);
}
