//! Anthropic Messages, in the shapes of <https://docs.anthropic.com/en/api/messages> and
//! <https://docs.anthropic.com/en/docs/build-with-claude/streaming>.

use serde_json::{Value, json};
use tool_core::schema::{self, Provider};
use toolshed_agent::provider::{ProviderError, ProviderKind, StopReason, StreamEvent, Usage};

use crate::common::{
    Dialect, KEY, after_tool_round, call, calls, hello, provider, retries, shared_tests, specs,
    stream, text,
};
use crate::server::{Reply, Server};

const TEXT_JSON: &str = r#"{
  "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5-20250929",
  "content": [{"type": "text", "text": "Hello there."}],
  "stop_reason": "end_turn",
  "stop_sequence": null,
  "usage": {"input_tokens": 11, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 7}
}"#;

/// An event: `event:` line and JSON data.
fn ev(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn message_start(input_tokens: u64) -> String {
    ev(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message", "role": "assistant",
            "content": [], "model": "claude-sonnet-4-5-20250929", "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1}
        }}),
    )
}

fn text_sse(terminated: bool) -> String {
    let mut body = message_start(11);
    body += &ev(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    body += &ev("ping", json!({"type": "ping"}));
    for piece in ["Hello", " there."] {
        body += &ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
        );
    }
    body += &ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    body += &ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 7}}),
    );
    if terminated {
        body += &ev("message_stop", json!({"type": "message_stop"}));
    }
    body
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn error(status: u16, message: &str) -> String {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}).to_string()
}

pub(crate) static ANTHROPIC: std::sync::LazyLock<Dialect> = std::sync::LazyLock::new(|| Dialect {
    kind: ProviderKind::Anthropic,
    display: "Anthropic",
    model: "claude-sonnet-4-5",
    base_suffix: "",
    text_json: TEXT_JSON,
    text_sse: leak(text_sse(true)),
    unterminated_sse: leak(text_sse(false)),
    error,
});

shared_tests!(*ANTHROPIC);

fn d() -> &'static Dialect {
    &ANTHROPIC
}

/// A text block, then two tool_use blocks whose input arrives in pieces.
fn tool_calls_sse() -> String {
    let mut body = message_start(50);
    body += &ev(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    body += &ev(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "I'll look."}}),
    );
    body += &ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    let tools = [
        (
            1,
            "toolu_01Read",
            "read_file",
            ["", "{\"path\": ", "\"a.txt\"}"],
        ),
        (
            2,
            "toolu_02Grep",
            "grep",
            ["{\"pattern\"", ": \"fn\", ", "\"path\": null}"],
        ),
    ];
    for (index, id, name, pieces) in tools {
        body += &ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        );
        for piece in pieces {
            body += &ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}),
            );
        }
        body += &ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    body += &ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 30}}),
    );
    body += &ev("message_stop", json!({"type": "message_stop"}));
    body
}

fn exported_tools() -> Value {
    specs()
        .iter()
        .map(|s| schema::export(s, Provider::Anthropic))
        .collect()
}

#[tokio::test]
async fn text_answer() {
    let server = Server::start(vec![Reply::ok(TEXT_JSON)]).await;
    let response = call(&*provider(d(), &server), &hello(d())).await.unwrap();
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
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key").as_deref(), Some(KEY));
    assert_eq!(
        request.header("anthropic-version").as_deref(),
        Some("2023-06-01")
    );
    assert_eq!(
        request.header("content-type").as_deref(),
        Some("application/json")
    );
    assert_eq!(request.header("authorization"), None);
    assert_eq!(
        request.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 256,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hello."}]}],
        })
    );
}

#[tokio::test]
async fn streamed_text_answer() {
    let server = Server::start(vec![Reply::sse(d().text_sse)]).await;
    let mut request = hello(d());
    request.temperature = Some(0.7);
    let (result, events) = stream(&*provider(d(), &server), &request).await;
    let response = result.unwrap();
    assert_eq!(text(&response), "Hello there.");
    assert_eq!(response.stop, StopReason::EndTurn);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 11,
            output_tokens: 7
        }
    );
    assert_eq!(
        events,
        [
            StreamEvent::Text("Hello".into()),
            StreamEvent::Text(" there.".into())
        ]
    );
    let body = server.only_request().body;
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["temperature"], json!(0.7));
}

#[tokio::test]
async fn streamed_parallel_tool_calls() {
    let server = Server::start(vec![Reply::sse(&tool_calls_sse())]).await;
    let mut request = hello(d());
    request.tools = specs();
    let (result, events) = stream(&*provider(d(), &server), &request).await;
    let response = result.unwrap();
    assert_eq!(response.stop, StopReason::ToolUse);
    assert_eq!(response.usage.input_tokens, 50);
    assert_eq!(response.usage.output_tokens, 30);
    assert_eq!(text(&response), "I'll look.");
    let got: Vec<_> = calls(&response)
        .into_iter()
        .map(|c| (c.id, c.name, c.arguments))
        .collect();
    assert_eq!(
        got,
        [
            (
                "toolu_01Read".into(),
                "read_file".into(),
                r#"{"path": "a.txt"}"#.into()
            ),
            (
                "toolu_02Grep".into(),
                "grep".into(),
                r#"{"pattern": "fn", "path": null}"#.into()
            ),
        ]
    );
    let started: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStarted { id, name } => Some((id.as_str(), name.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        [("toolu_01Read", "read_file"), ("toolu_02Grep", "grep")]
    );
    let grep_pieces: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallArguments { id, delta } if id == "toolu_02Grep" => {
                Some(delta.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        grep_pieces,
        ["{\"pattern\"", ": \"fn\", ", "\"path\": null}"]
    );
    assert_eq!(server.only_request().body["tools"], exported_tools());
}

#[tokio::test]
async fn parallel_tool_calls() {
    let body = json!({
        "id": "msg_01Aq9w938a90dw8q", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
        "content": [
            {"type": "text", "text": "I'll look."},
            {"type": "tool_use", "id": "toolu_01Read", "name": "read_file", "input": {"path": "a.txt"}},
            {"type": "tool_use", "id": "toolu_02Grep", "name": "grep", "input": {"pattern": "fn"}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 50, "output_tokens": 30}
    });
    let server = Server::start(vec![Reply::ok(&body.to_string())]).await;
    let mut request = hello(d());
    request.tools = specs();
    let response = call(&*provider(d(), &server), &request).await.unwrap();
    assert_eq!(response.stop, StopReason::ToolUse);
    assert_eq!(text(&response), "I'll look.");
    let got: Vec<_> = calls(&response)
        .into_iter()
        .map(|c| {
            (
                c.id,
                c.name,
                serde_json::from_str::<Value>(&c.arguments).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "toolu_01Read".into(),
                "read_file".into(),
                json!({"path": "a.txt"})
            ),
            (
                "toolu_02Grep".into(),
                "grep".into(),
                json!({"pattern": "fn"})
            ),
        ]
    );
    assert_eq!(server.only_request().body["tools"], exported_tools());
}

#[tokio::test]
async fn tool_results_go_back_in_one_user_message() {
    let server = Server::start(vec![Reply::ok(TEXT_JSON)]).await;
    let mut request = hello(d());
    request.messages = after_tool_round("toolu_01Read", "toolu_02Grep");
    call(&*provider(d(), &server), &request).await.unwrap();
    assert_eq!(
        server.only_request().body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Find fn in a.txt."}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "I'll look."},
                {"type": "tool_use", "id": "toolu_01Read", "name": "read_file", "input": {"path": "a.txt"}},
                // Arguments that were not a JSON object go back as `{}`.
                {"type": "tool_use", "id": "toolu_02Grep", "name": "grep", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01Read", "content": "fn main() {}", "is_error": false},
                {"type": "tool_result", "tool_use_id": "toolu_02Grep", "content": "The arguments are not valid JSON; send an object.", "is_error": true},
                {"type": "text", "text": "Be quick."},
            ]},
        ])
    );
}

#[tokio::test]
async fn overloaded_error_event_is_retried() {
    let mut overloaded = message_start(11);
    overloaded += &ev(
        "error",
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    );
    let server = Server::start(vec![Reply::sse(&overloaded), Reply::sse(d().text_sse)]).await;
    let (result, events) = stream(&*provider(d(), &server), &hello(d())).await;
    assert_eq!(text(&result.unwrap()), "Hello there.");
    let retries = retries(&events);
    assert_eq!(retries.len(), 1);
    assert!(retries[0].2.contains("Overloaded"), "{}", retries[0].2);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn status_529_is_retried() {
    let server = Server::start(vec![
        Reply::with_header(529, "retry-after", "0", &error(529, "Overloaded")),
        Reply::ok(TEXT_JSON),
    ])
    .await;
    let response = call(&*provider(d(), &server), &hello(d())).await.unwrap();
    assert_eq!(text(&response), "Hello there.");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn invalid_request_error_event_is_final() {
    let mut body = message_start(11);
    body += &ev(
        "error",
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "messages: text content blocks must be non-empty"}}),
    );
    let server = Server::start(vec![Reply::sse(&body), Reply::sse(d().text_sse)]).await;
    let (result, _) = stream(&*provider(d(), &server), &hello(d())).await;
    assert!(
        matches!(&result, Err(ProviderError::Http { status: 400, message }) if message.contains("must be non-empty")),
        "{result:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_tool_call_without_arguments_gets_an_empty_object() {
    let mut body = message_start(5);
    body += &ev(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "list", "input": {}}}),
    );
    body += &ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    body += &ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}}),
    );
    body += &ev("message_stop", json!({"type": "message_stop"}));
    let server = Server::start(vec![Reply::sse(&body)]).await;
    let (result, _) = stream(&*provider(d(), &server), &hello(d())).await;
    let calls = calls(&result.unwrap());
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].arguments, "{}");
}
