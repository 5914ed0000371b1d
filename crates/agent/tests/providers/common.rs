//! What the provider tests share: configs, requests, tool specs, event capture, and the
//! retry and error tests every provider must pass (instantiated per provider by
//! [`shared_tests!`]).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::json;
use tool_core::schema;
use tool_core::{Annotations, CancellationToken, ToolSpec};
use toolshed_agent::message::{Message, Part, ToolCall, ToolResult};
use toolshed_agent::provider::{
    ApiKey, ChatRequest, ChatResponse, ModelProvider, ProviderConfig, ProviderError, ProviderKind,
    StreamEvent, connect,
};

use crate::server::{Reply, Server};

/// The key the tests configure; no error message may contain it.
pub(crate) const KEY: &str = "sk-test-0123456789-secret";

/// What differs between providers in the shared tests.
pub(crate) struct Dialect {
    pub(crate) kind: ProviderKind,
    /// The provider's name in error sentences.
    pub(crate) display: &'static str,
    pub(crate) model: &'static str,
    /// Appended to the server URL to make the base URL (`/v1` for OpenAI).
    pub(crate) base_suffix: &'static str,
    /// A documented non-streaming answer: "Hello there.", 11 tokens in, 7 out.
    pub(crate) text_json: &'static str,
    /// The same answer as a documented event stream.
    pub(crate) text_sse: &'static str,
    /// That stream without its terminator (it ends cleanly, but too early).
    pub(crate) unterminated_sse: &'static str,
    /// A documented error body for a status and message.
    pub(crate) error: fn(u16, &str) -> String,
}

/// A config for the dialect's provider at `server`, with fast retry settings.
pub(crate) fn config(d: &Dialect, server: &Server, key: Option<&str>) -> ProviderConfig {
    let mut config = ProviderConfig::new(d.kind);
    config.base_url = format!("{}{}", server.url, d.base_suffix);
    config.api_key = key.map(ApiKey::new);
    config.timeout = Duration::from_secs(10);
    config.max_retries = 2;
    config.max_backoff = Duration::from_millis(1500);
    config
}

/// The dialect's provider at `server` with [`KEY`].
pub(crate) fn provider(d: &Dialect, server: &Server) -> std::sync::Arc<dyn ModelProvider> {
    connect(config(d, server, Some(KEY))).expect("connect")
}

/// "Say hello." with a system prompt and no tools.
pub(crate) fn hello(d: &Dialect) -> ChatRequest {
    ChatRequest {
        model: d.model.to_owned(),
        system: Some("Be brief.".to_owned()),
        messages: vec![Message::user("Say hello.")],
        tools: Vec::new(),
        max_tokens: 256,
        temperature: None,
    }
}

/// Two tools: one with a required field, one with an optional one (so each provider's
/// export differs from the canonical schema).
pub(crate) fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read_file".to_owned(),
            description: "Read a file of the workspace.".to_owned(),
            input_schema: schema::normalize(json!({
                "type": "object",
                "properties": {"path": {"type": "string", "description": "The file."}},
                "required": ["path"],
            })),
            annotations: Annotations::READ_ONLY,
        },
        ToolSpec {
            name: "grep".to_owned(),
            description: "Search files for a pattern.".to_owned(),
            input_schema: schema::normalize(json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": ["string", "null"], "default": null},
                },
                "required": ["pattern"],
            })),
            annotations: Annotations::READ_ONLY,
        },
    ]
}

/// The conversation after one tool round: the model said a sentence and made two calls (the
/// second with arguments that are not valid JSON), the loop answered both (the second with an
/// error) and the user added a line.
pub(crate) fn after_tool_round(read_id: &str, grep_id: &str) -> Vec<Message> {
    vec![
        Message::user("Find fn in a.txt."),
        Message::Assistant {
            content: vec![
                Part::Text {
                    text: "I'll look.".to_owned(),
                },
                Part::ToolCall(ToolCall {
                    id: read_id.to_owned(),
                    name: "read_file".to_owned(),
                    arguments: r#"{"path":"a.txt"}"#.to_owned(),
                }),
                Part::ToolCall(ToolCall {
                    id: grep_id.to_owned(),
                    name: "grep".to_owned(),
                    arguments: r#"{"pattern": "fn""#.to_owned(),
                }),
            ],
        },
        Message::User {
            content: vec![
                Part::ToolResult(ToolResult {
                    call_id: read_id.to_owned(),
                    name: "read_file".to_owned(),
                    content: "fn main() {}".to_owned(),
                    is_error: false,
                }),
                Part::ToolResult(ToolResult {
                    call_id: grep_id.to_owned(),
                    name: "grep".to_owned(),
                    content: "The arguments are not valid JSON; send an object.".to_owned(),
                    is_error: true,
                }),
                Part::Text {
                    text: "Be quick.".to_owned(),
                },
            ],
        },
    ]
}

/// The text parts of an answer, joined.
pub(crate) fn text(response: &ChatResponse) -> String {
    response
        .content
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The tool calls of an answer.
pub(crate) fn calls(response: &ChatResponse) -> Vec<ToolCall> {
    response
        .content
        .iter()
        .filter_map(|p| match p {
            Part::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .collect()
}

/// Runs one call with a sink and returns its result and the events it emitted.
pub(crate) async fn stream(
    provider: &dyn ModelProvider,
    request: &ChatRequest,
) -> (Result<ChatResponse, ProviderError>, Vec<StreamEvent>) {
    let events = Mutex::new(Vec::new());
    let sink = |event: StreamEvent| events.lock().unwrap().push(event);
    let result = provider
        .complete(request, Some(&sink), &CancellationToken::new())
        .await;
    (result, events.into_inner().unwrap())
}

/// One call without streaming.
pub(crate) async fn call(
    provider: &dyn ModelProvider,
    request: &ChatRequest,
) -> Result<ChatResponse, ProviderError> {
    provider
        .complete(request, None, &CancellationToken::new())
        .await
}

/// The `Retrying` events, as (attempt, after, reason).
pub(crate) fn retries(events: &[StreamEvent]) -> Vec<(u32, Duration, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying {
                attempt,
                after,
                reason,
            } => Some((*attempt, *after, reason.clone())),
            _ => None,
        })
        .collect()
}

/// The text events after the last `Retrying` event, joined.
pub(crate) fn text_after_last_retry(events: &[StreamEvent]) -> String {
    let start = events
        .iter()
        .rposition(|e| matches!(e, StreamEvent::Retrying { .. }))
        .map_or(0, |i| i + 1);
    events[start..]
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

pub(crate) async fn retry_after_429_is_honoured(d: &Dialect) {
    let server = Server::start(vec![
        Reply::with_header(
            429,
            "retry-after",
            "1",
            &(d.error)(429, "Rate limit reached"),
        ),
        Reply::sse(d.text_sse),
    ])
    .await;
    let (result, events) = stream(&*provider(d, &server), &hello(d)).await;
    let response = result.expect("the retry succeeds");
    assert_eq!(text(&response), "Hello there.");
    let retries = retries(&events);
    assert_eq!(retries.len(), 1, "{events:?}");
    let (attempt, after, reason) = &retries[0];
    assert_eq!(*attempt, 1);
    assert_eq!(*after, Duration::from_secs(1));
    assert!(reason.contains("429"), "{reason}");
    assert!(reason.contains("Rate limit reached"), "{reason}");
    assert!(
        matches!(events[0], StreamEvent::Retrying { .. }),
        "{events:?}"
    );
    assert_eq!(server.requests().len(), 2);
}

pub(crate) async fn server_error_then_success(d: &Dialect) {
    let server = Server::start(vec![
        Reply::status(500, &(d.error)(500, "Internal error")),
        Reply::ok(d.text_json),
    ])
    .await;
    let response = call(&*provider(d, &server), &hello(d))
        .await
        .expect("the retry succeeds");
    assert_eq!(text(&response), "Hello there.");
    assert_eq!(server.requests().len(), 2);
    // The retry is the same request.
    let requests = server.requests();
    assert_eq!(requests[0].body, requests[1].body);
}

pub(crate) async fn cut_stream_is_retried(d: &Dialect) {
    let server = Server::start(vec![
        Reply::sse_cut(d.text_sse, d.text_sse.len() * 2 / 3),
        Reply::sse(d.text_sse),
    ])
    .await;
    let (result, events) = stream(&*provider(d, &server), &hello(d)).await;
    let response = result.expect("the retry succeeds");
    assert_eq!(text(&response), "Hello there.");
    assert_eq!(response.usage.input_tokens, 11);
    let retries = retries(&events);
    assert_eq!(retries.len(), 1, "{events:?}");
    assert!(retries[0].2.contains(d.display), "{}", retries[0].2);
    // The first attempt streamed some text before the connection broke.
    assert!(
        matches!(events.first(), Some(StreamEvent::Text(t)) if t == "Hello"),
        "{events:?}"
    );
    assert_eq!(text_after_last_retry(&events), "Hello there.");
    assert_eq!(server.requests().len(), 2);
}

pub(crate) async fn unterminated_stream_is_retried(d: &Dialect) {
    let server = Server::start(vec![Reply::sse(d.unterminated_sse), Reply::sse(d.text_sse)]).await;
    let (result, events) = stream(&*provider(d, &server), &hello(d)).await;
    assert_eq!(text(&result.expect("the retry succeeds")), "Hello there.");
    let retries = retries(&events);
    assert_eq!(retries.len(), 1, "{events:?}");
    assert!(retries[0].2.contains("ended"), "{}", retries[0].2);
    assert_eq!(server.requests().len(), 2);
}

pub(crate) async fn malformed_answers_are_not_retried(d: &Dialect) {
    for body in ["{\"choices\": [", "{}", "[1, 2]"] {
        let server = Server::start(vec![Reply::ok(body), Reply::ok(d.text_json)]).await;
        let error = call(&*provider(d, &server), &hello(d))
            .await
            .expect_err("malformed");
        match &error {
            ProviderError::Malformed(message) => {
                assert!(message.contains(d.display), "{message}");
                assert!(message.contains("base URL"), "{message}");
            }
            other => panic!("{body}: expected Malformed, got {other:?}"),
        }
        assert_eq!(server.requests().len(), 1, "{body}");
    }
}

pub(crate) async fn malformed_stream_event_is_not_retried(d: &Dialect) {
    let body = "data: {\"not\": json\n\n";
    let server = Server::start(vec![Reply::sse(body), Reply::sse(d.text_sse)]).await;
    let (result, events) = stream(&*provider(d, &server), &hello(d)).await;
    assert!(
        matches!(result, Err(ProviderError::Malformed(_))),
        "{result:?}"
    );
    assert!(retries(&events).is_empty());
    assert_eq!(server.requests().len(), 1);
}

pub(crate) async fn unauthorized_names_the_variable(d: &Dialect) {
    let var = d.kind.default_key_env();
    // A server that echoes the key: the error must not repeat it.
    let body = (d.error)(401, &format!("Invalid API key {KEY}"));
    let server = Server::start(vec![Reply::status(401, &body), Reply::ok(d.text_json)]).await;
    let error = call(&*provider(d, &server), &hello(d))
        .await
        .expect_err("401");
    let ProviderError::Auth(message) = &error else {
        panic!("expected Auth, got {error:?}");
    };
    assert!(message.contains(var), "{message}");
    assert!(message.contains(d.display), "{message}");
    assert!(message.contains("check"), "{message}");
    assert!(!message.contains(KEY), "{message}");
    assert!(!format!("{error:?}").contains(KEY));
    assert_eq!(server.requests().len(), 1);

    // Without a key, the sentence says which variable to set.
    let server = Server::start(vec![Reply::status(401, &(d.error)(401, "No key"))]).await;
    let provider = connect(config(d, &server, None)).expect("connect");
    let error = call(&*provider, &hello(d)).await.expect_err("401");
    let ProviderError::Auth(message) = &error else {
        panic!("expected Auth, got {error:?}");
    };
    assert!(message.contains(&format!("set {var}")), "{message}");
}

pub(crate) async fn forbidden_is_an_auth_error(d: &Dialect) {
    let server = Server::start(vec![Reply::status(
        403,
        &(d.error)(403, "Permission denied"),
    )])
    .await;
    let error = call(&*provider(d, &server), &hello(d))
        .await
        .expect_err("403");
    assert!(
        matches!(&error, ProviderError::Auth(m) if m.contains("Permission denied")),
        "{error:?}"
    );
}

pub(crate) async fn cancelled_during_a_slow_answer(d: &Dialect) {
    for streaming in [false, true] {
        let server = Server::start(vec![Reply::Hang]).await;
        let provider = provider(d, &server);
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            trigger.cancel();
        });
        let sink: &(dyn Fn(StreamEvent) + Send + Sync) = &|_| {};
        let started = Instant::now();
        let result = provider
            .complete(&hello(d), streaming.then_some(sink), &cancel)
            .await;
        assert!(
            matches!(result, Err(ProviderError::Cancelled)),
            "{result:?}"
        );
        // The server holds the answer for a minute; the call must not have waited for it.
        assert!(started.elapsed() < Duration::from_secs(30));
        assert_eq!(server.requests().len(), 1);
    }
}

pub(crate) async fn cancelled_while_waiting_to_retry(d: &Dialect) {
    let server = Server::start(vec![Reply::with_header(
        503,
        "retry-after",
        "30",
        &(d.error)(503, "Busy"),
    )])
    .await;
    let mut config = config(d, &server, Some(KEY));
    config.max_backoff = Duration::from_secs(60);
    let provider = connect(config).unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let sink = move |event: StreamEvent| {
        if let StreamEvent::Retrying { after, .. } = event {
            assert_eq!(after, Duration::from_secs(30));
            trigger.cancel();
        }
    };
    let started = Instant::now();
    let result = provider.complete(&hello(d), Some(&sink), &cancel).await;
    assert!(
        matches!(result, Err(ProviderError::Cancelled)),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(25));
    assert_eq!(server.requests().len(), 1);
}

pub(crate) async fn retries_run_out(d: &Dialect) {
    let busy = || Reply::with_header(503, "retry-after", "0", &(d.error)(503, "Overloaded now"));
    let server = Server::start(vec![busy(), busy(), busy(), Reply::ok(d.text_json)]).await;
    let (result, events) = stream(&*provider(d, &server), &hello(d)).await;
    match result {
        Err(ProviderError::Http { status, message }) => {
            assert_eq!(status, 503);
            assert!(message.contains("3 attempts"), "{message}");
            assert!(message.contains("Overloaded now"), "{message}");
        }
        other => panic!("expected Http 503, got {other:?}"),
    }
    let attempts: Vec<u32> = retries(&events).iter().map(|r| r.0).collect();
    assert_eq!(attempts, [1, 2]);
    assert_eq!(server.requests().len(), 3);
}

pub(crate) async fn unknown_model_is_not_retried(d: &Dialect) {
    let server = Server::start(vec![
        Reply::status(404, &(d.error)(404, "The model `nope` does not exist")),
        Reply::ok(d.text_json),
    ])
    .await;
    let mut request = hello(d);
    request.model = "nope".to_owned();
    let error = call(&*provider(d, &server), &request)
        .await
        .expect_err("404");
    match &error {
        ProviderError::Http { status, message } => {
            assert_eq!(*status, 404);
            assert!(
                message.contains("The model `nope` does not exist"),
                "{message}"
            );
            assert!(message.contains("--model (`nope`)"), "{message}");
        }
        other => panic!("expected Http 404, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
}

pub(crate) async fn attempts_time_out(d: &Dialect) {
    let server = Server::start(vec![Reply::Hang, Reply::Hang]).await;
    let mut config = config(d, &server, Some(KEY));
    config.timeout = Duration::from_millis(300);
    config.max_retries = 1;
    let provider = connect(config).unwrap();
    let error = call(&*provider, &hello(d)).await.expect_err("timeout");
    assert!(
        matches!(&error, ProviderError::Timeout(m) if m.contains("0.3 s") && m.contains("2 attempts")),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 2);
}

pub(crate) async fn unreachable_server_is_a_connect_error(d: &Dialect) {
    // A port nobody listens on: bind one, then free it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let mut config = ProviderConfig::new(d.kind);
    config.base_url = url.clone();
    config.max_retries = 1;
    config.max_backoff = Duration::from_millis(50);
    let provider = connect(config).unwrap();
    let (result, events) = stream(&*provider, &hello(d)).await;
    assert!(
        matches!(&result, Err(ProviderError::Connect(m)) if m.contains(&url) && m.contains("2 attempts")),
        "{result:?}"
    );
    assert_eq!(retries(&events).len(), 1);
}

/// The base URL is a configured endpoint: requests never leave its origin. Each hostile
/// configuration beside its benign twin, against real servers on loopback: `target` is the
/// real provider, `front` stands where the base URL points.
pub(crate) async fn redirects_and_user_information_are_refused(d: &Dialect) {
    #[derive(Debug, Clone, Copy)]
    enum Base {
        /// Twin: the base URL is the provider itself.
        Direct,
        /// `front` answers this status with a Location on `target` (another port).
        RedirectElsewhere(u16),
        /// `front` answers 307 with a Location on itself: not followed either, since the
        /// streaming client follows no redirect at all.
        RedirectSameOrigin,
        /// The provider's URL with `user:pw@` in it.
        WithUserInfo,
    }
    // (base, Ok(()) when the target must answer, or Err(fragment of the Connect error))
    let rows: &[(Base, Result<(), &str>)] = &[
        (Base::Direct, Ok(())),
        (
            Base::RedirectElsewhere(302),
            Err("redirected elsewhere (HTTP 302"),
        ),
        (
            Base::RedirectElsewhere(307),
            Err("redirected elsewhere (HTTP 307"),
        ),
        (
            Base::RedirectElsewhere(308),
            Err("redirected elsewhere (HTTP 308"),
        ),
        (
            Base::RedirectSameOrigin,
            Err("redirected elsewhere (HTTP 307"),
        ),
        (Base::WithUserInfo, Err("user information")),
    ];
    for (base, want) in rows {
        let target = Server::start(vec![Reply::ok(d.text_json)]).await;
        let front_reply = match base {
            Base::RedirectElsewhere(status) => Some(Reply::with_header(
                *status,
                "location",
                &format!("{}{}/anything", target.url, d.base_suffix),
                "",
            )),
            Base::RedirectSameOrigin => Some(Reply::with_header(307, "location", "/elsewhere", "")),
            _ => None,
        };
        let front = Server::start(front_reply.into_iter().collect()).await;
        let mut config = config(d, &target, Some(KEY));
        config.max_retries = 0;
        match base {
            Base::Direct => {}
            Base::RedirectElsewhere(_) | Base::RedirectSameOrigin => {
                config.base_url = format!("{}{}", front.url, d.base_suffix);
            }
            Base::WithUserInfo => {
                config.base_url = config.base_url.replace("http://", "http://user:pw@");
            }
        }
        let result = match connect(config) {
            Err(e) => Err(e),
            Ok(provider) => call(&*provider, &hello(d)).await,
        };
        match (want, result) {
            (Ok(()), Ok(response)) => {
                assert_eq!(text(&response), "Hello there.", "{base:?}");
                assert_eq!(target.requests().len(), 1, "{base:?}");
            }
            (Err(fragment), Err(ProviderError::Connect(message))) => {
                assert!(message.contains(fragment), "{base:?}: {message}");
                assert!(message.starts_with(d.display), "{base:?}: {message}");
                assert!(
                    !message.contains(KEY) && !message.contains(":pw"),
                    "{base:?}: {message}"
                );
                assert!(
                    target.requests().is_empty(),
                    "{base:?}: the target was reached"
                );
                // The redirect is final: one request to the front, no retry.
                let expected_front = usize::from(!matches!(base, Base::WithUserInfo));
                assert_eq!(front.requests().len(), expected_front, "{base:?}");
            }
            (want, got) => panic!("{base:?}: wanted {want:?}, got {got:?}"),
        }
    }
}

/// The shared tests, as `#[tokio::test]`s for one dialect.
macro_rules! shared_tests {
    ($dialect:expr) => {
        shared_tests!(@each $dialect;
            retry_after_429_is_honoured,
            server_error_then_success,
            cut_stream_is_retried,
            unterminated_stream_is_retried,
            malformed_answers_are_not_retried,
            malformed_stream_event_is_not_retried,
            unauthorized_names_the_variable,
            forbidden_is_an_auth_error,
            cancelled_during_a_slow_answer,
            cancelled_while_waiting_to_retry,
            retries_run_out,
            unknown_model_is_not_retried,
            attempts_time_out,
            unreachable_server_is_a_connect_error,
            redirects_and_user_information_are_refused,
        );
    };
    (@each $dialect:expr; $($name:ident,)*) => {
        $(
            #[tokio::test]
            async fn $name() {
                crate::common::$name(&$dialect).await;
            }
        )*
    };
}
pub(crate) use shared_tests;
