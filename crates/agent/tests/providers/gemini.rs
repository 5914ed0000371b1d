//! Gemini, in the shapes of <https://ai.google.dev/api/generate-content> and
//! <https://ai.google.dev/gemini-api/docs/function-calling>.

use serde_json::{Value, json};
use tool_core::schema::{self, Provider};
use toolshed_agent::message::{Message, Part, ToolResult};
use toolshed_agent::provider::{ProviderError, ProviderKind, StopReason, StreamEvent, Usage};

use crate::common::{
    Dialect, KEY, after_tool_round, call, calls, hello, provider, shared_tests, specs, stream, text,
};
use crate::server::{Reply, Server};

const TEXT_JSON: &str = r#"{
  "candidates": [
    {
      "content": {"parts": [{"text": "Hello there."}], "role": "model"},
      "finishReason": "STOP",
      "index": 0
    }
  ],
  "usageMetadata": {
    "promptTokenCount": 11, "candidatesTokenCount": 7, "totalTokenCount": 18,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 11}]
  },
  "modelVersion": "gemini-2.5-flash",
  "responseId": "8w2XaKrEIsvYz7IPzeLWqQk"
}"#;

/// Google ends each event with CRLF CRLF.
const TEXT_SSE: &str = concat!(
    r#"data: {"candidates": [{"content": {"parts": [{"text": "Hello"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 11,"totalTokenCount": 11,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 11}]},"modelVersion": "gemini-2.5-flash","responseId": "8w2XaKrEIsvYz7IPzeLWqQk"}"#,
    "\r\n\r\n",
    r#"data: {"candidates": [{"content": {"parts": [{"text": " there."}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 11,"candidatesTokenCount": 7,"totalTokenCount": 18,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 11}]},"modelVersion": "gemini-2.5-flash","responseId": "8w2XaKrEIsvYz7IPzeLWqQk"}"#,
    "\r\n\r\n",
);

/// The first chunk only: no finishReason.
const UNTERMINATED_SSE: &str = concat!(
    r#"data: {"candidates": [{"content": {"parts": [{"text": "Hello"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 11,"totalTokenCount": 11},"modelVersion": "gemini-2.5-flash"}"#,
    "\r\n\r\n",
);

fn error(status: u16, message: &str) -> String {
    let kind = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    };
    json!({"error": {"code": status, "message": message, "status": kind}}).to_string()
}

pub(crate) const GEMINI: Dialect = Dialect {
    kind: ProviderKind::Gemini,
    display: "Gemini",
    model: "gemini-2.5-flash",
    base_suffix: "",
    text_json: TEXT_JSON,
    text_sse: TEXT_SSE,
    unterminated_sse: UNTERMINATED_SSE,
    error,
};

shared_tests!(GEMINI);

fn exported_tools() -> Value {
    let declarations: Vec<Value> = specs()
        .iter()
        .map(|s| schema::export(s, Provider::Gemini))
        .collect();
    json!([{ "functionDeclarations": declarations }])
}

/// Two function calls without ids, as Gemini 2.5 sends them; the first carries the step's
/// thought signature.
const CALLS_JSON: &str = r#"{
  "candidates": [
    {
      "content": {
        "parts": [
          {"text": "I'll look."},
          {"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}, "thoughtSignature": "c2lnbmF0dXJlLTE="},
          {"functionCall": {"name": "grep", "args": {"pattern": "fn"}}}
        ],
        "role": "model"
      },
      "finishReason": "STOP",
      "index": 0
    }
  ],
  "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 30, "totalTokenCount": 92, "thoughtsTokenCount": 12},
  "modelVersion": "gemini-2.5-flash"
}"#;

#[tokio::test]
async fn text_answer() {
    let server = Server::start(vec![Reply::ok(TEXT_JSON)]).await;
    let response = call(&*provider(&GEMINI, &server), &hello(&GEMINI))
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
    assert_eq!(
        request.path,
        "/v1beta/models/gemini-2.5-flash:generateContent"
    );
    assert_eq!(request.header("x-goog-api-key").as_deref(), Some(KEY));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(
        request.body,
        json!({
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "contents": [{"role": "user", "parts": [{"text": "Say hello."}]}],
            "generationConfig": {"maxOutputTokens": 256},
        })
    );
}

#[tokio::test]
async fn streamed_text_answer() {
    let server = Server::start(vec![Reply::sse(TEXT_SSE)]).await;
    let mut request = hello(&GEMINI);
    request.temperature = Some(1.0);
    request.model = "models/gemini-2.5-flash".to_owned();
    let (result, events) = stream(&*provider(&GEMINI, &server), &request).await;
    let response = result.unwrap();
    assert_eq!(text(&response), "Hello there.");
    assert_eq!(response.content.len(), 1, "the pieces make one text part");
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
    let request = server.only_request();
    assert_eq!(
        request.path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        request.body["generationConfig"],
        json!({"maxOutputTokens": 256, "temperature": 1.0})
    );
}

#[tokio::test]
async fn parallel_function_calls_get_distinct_ids() {
    let server = Server::start(vec![Reply::ok(CALLS_JSON)]).await;
    let mut request = hello(&GEMINI);
    request.tools = specs();
    let response = call(&*provider(&GEMINI, &server), &request).await.unwrap();
    assert_eq!(response.stop, StopReason::ToolUse);
    assert_eq!(text(&response), "I'll look.");
    // Thinking tokens count as output.
    assert_eq!(response.usage.output_tokens, 42);
    let calls = calls(&response);
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0].id, calls[1].id);
    assert!(calls.iter().all(|c| !c.id.is_empty()));
    let got: Vec<_> = calls
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                serde_json::from_str::<Value>(&c.arguments).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("read_file", json!({"path": "a.txt"})),
            ("grep", json!({"pattern": "fn"}))
        ]
    );
    assert_eq!(server.only_request().body["tools"], exported_tools());
}

#[tokio::test]
async fn streamed_parallel_function_calls() {
    let body = concat!(
        r#"data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "read_file","args": {"path": "a.txt"}},"thoughtSignature": "c2lnbmF0dXJlLTE="}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 50,"totalTokenCount": 50},"modelVersion": "gemini-2.5-flash"}"#,
        "\r\n\r\n",
        r#"data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "grep","args": {"pattern": "fn"}}}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 50,"totalTokenCount": 50},"modelVersion": "gemini-2.5-flash"}"#,
        "\r\n\r\n",
        r#"data: {"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 50,"candidatesTokenCount": 30,"totalTokenCount": 80},"modelVersion": "gemini-2.5-flash"}"#,
        "\r\n\r\n",
    );
    let server = Server::start(vec![Reply::sse(body)]).await;
    let mut request = hello(&GEMINI);
    request.tools = specs();
    let (result, events) = stream(&*provider(&GEMINI, &server), &request).await;
    let response = result.unwrap();
    assert_eq!(response.stop, StopReason::ToolUse);
    assert_eq!(response.usage.output_tokens, 30);
    let calls = calls(&response);
    let names: Vec<_> = calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["read_file", "grep"]);
    assert_eq!(
        events,
        [
            StreamEvent::ToolCallStarted {
                id: calls[0].id.clone(),
                name: "read_file".into()
            },
            StreamEvent::ToolCallArguments {
                id: calls[0].id.clone(),
                delta: r#"{"path":"a.txt"}"#.into()
            },
            StreamEvent::ToolCallStarted {
                id: calls[1].id.clone(),
                name: "grep".into()
            },
            StreamEvent::ToolCallArguments {
                id: calls[1].id.clone(),
                delta: r#"{"pattern":"fn"}"#.into()
            },
        ]
    );
    assert_eq!(server.only_request().body["tools"], exported_tools());
}

#[tokio::test]
async fn function_responses_and_signatures_go_back() {
    let server = Server::start(vec![Reply::ok(CALLS_JSON), Reply::ok(TEXT_JSON)]).await;
    let provider = provider(&GEMINI, &server);
    let mut request = hello(&GEMINI);
    request.messages = vec![Message::user("Find fn in a.txt.")];
    let first = call(&*provider, &request).await.unwrap();
    let ids: Vec<String> = calls(&first).into_iter().map(|c| c.id).collect();
    request.messages = after_tool_round(&ids[0], &ids[1]);
    call(&*provider, &request).await.unwrap();
    let second = &server.requests()[1];
    assert_eq!(
        second.body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Find fn in a.txt."}]},
            {"role": "model", "parts": [
                {"text": "I'll look."},
                // The ids were made up here, so they do not go back; the signature does.
                {"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}, "thoughtSignature": "c2lnbmF0dXJlLTE="},
                // Arguments that were not a JSON object go back as `{}`.
                {"functionCall": {"name": "grep", "args": {}}},
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "read_file", "response": {"output": "fn main() {}"}}},
                {"functionResponse": {"name": "grep", "response": {"error": "The arguments are not valid JSON; send an object."}}},
                {"text": "Be quick."},
            ]},
        ])
    );
}

#[tokio::test]
async fn ids_the_model_gave_are_echoed() {
    // Newer models name their calls; a call whose signature is not known here (history from
    // before a restart) gets the documented placeholder.
    let server = Server::start(vec![Reply::ok(TEXT_JSON)]).await;
    let mut request = hello(&GEMINI);
    request.messages = vec![
        Message::user("List."),
        Message::Assistant {
            content: vec![Part::ToolCall(toolshed_agent::message::ToolCall {
                id: "fc_7x".into(),
                name: "list".into(),
                arguments: "{}".into(),
            })],
        },
        Message::User {
            content: vec![Part::ToolResult(ToolResult {
                call_id: "fc_7x".into(),
                name: "list".into(),
                content: "a.txt".into(),
                is_error: false,
            })],
        },
    ];
    call(&*provider(&GEMINI, &server), &request).await.unwrap();
    assert_eq!(
        server.only_request().body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "List."}]},
            {"role": "model", "parts": [
                {"functionCall": {"id": "fc_7x", "name": "list", "args": {}}, "thoughtSignature": "skip_thought_signature_validator"},
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"id": "fc_7x", "name": "list", "response": {"output": "a.txt"}}},
            ]},
        ])
    );
}

#[tokio::test]
async fn an_invalid_key_is_an_auth_error() {
    // Gemini answers a wrong key with 400, not 401.
    let body = json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT",
        "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
                     "metadata": {"service": "generativelanguage.googleapis.com"}}]}});
    let server = Server::start(vec![Reply::status(400, &body.to_string())]).await;
    let error = call(&*provider(&GEMINI, &server), &hello(&GEMINI))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ProviderError::Auth(m) if m.contains("GEMINI_API_KEY") && m.contains("API key not valid")),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_blocked_prompt_stops_with_its_reason() {
    let body = r#"{"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []}, "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}, "modelVersion": "gemini-2.5-flash"}"#;
    let server = Server::start(vec![Reply::ok(body)]).await;
    let response = call(&*provider(&GEMINI, &server), &hello(&GEMINI))
        .await
        .unwrap();
    assert!(response.content.is_empty());
    assert_eq!(response.stop, StopReason::Other("SAFETY".into()));
    assert_eq!(response.usage.input_tokens, 9);
}

#[tokio::test]
async fn max_tokens_and_other_finish_reasons() {
    for (finish, stop) in [
        ("MAX_TOKENS", StopReason::MaxTokens),
        ("RECITATION", StopReason::Other("RECITATION".into())),
    ] {
        let body = json!({"candidates": [{"content": {"parts": [{"text": "Hel"}], "role": "model"}, "finishReason": finish, "index": 0}],
                          "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}});
        let server = Server::start(vec![Reply::ok(&body.to_string())]).await;
        let response = call(&*provider(&GEMINI, &server), &hello(&GEMINI))
            .await
            .unwrap();
        assert_eq!(response.stop, stop);
        assert_eq!(text(&response), "Hel");
    }
}
