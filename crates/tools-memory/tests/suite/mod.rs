//! Integration test modules of tools-memory, and their shared fixtures: a temp-dir database
//! behind the real stack, and a deterministic embedding server.

mod basics;
mod concurrency;
mod hostile;
mod hybrid;
mod ranking;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tempfile::TempDir;
use tool_core::{
    ApproveAll, Limits, Policy, Registry, Stack, ToolContext, ToolError, ToolOutput, Workspace,
};
use tools_memory::Config;

/// A database in a temp dir, the memory tools over it, and a context.
pub(crate) struct Fixture {
    pub(crate) dir: TempDir,
    pub(crate) db: PathBuf,
    pub(crate) stack: Stack,
    pub(crate) ctx: ToolContext,
}

impl Fixture {
    /// Keyword-only memory in `<tmp>/data/memory.db`.
    pub(crate) fn new() -> Fixture {
        Fixture::with(|c| c)
    }

    /// Memory with a configuration adjusted by `adjust`.
    pub(crate) fn with(adjust: impl FnOnce(Config) -> Config) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("data").join("memory.db");
        let config = adjust(Config::new(&db));
        let stack = stack(&config);
        let ctx = context(dir.path(), Policy::supervised());
        Fixture {
            dir,
            db,
            stack,
            ctx,
        }
    }

    /// Another stack on the same database with another configuration.
    pub(crate) fn stack_with(&self, adjust: impl FnOnce(Config) -> Config) -> Stack {
        stack(&adjust(Config::new(&self.db)))
    }

    /// Calls `tool` with raw JSON arguments through the whole stack.
    pub(crate) async fn call(&self, tool: &str, args: &str) -> Result<ToolOutput, ToolError> {
        self.stack.call_json(tool, args, self.ctx.for_call()).await
    }

    /// Calls and expects success; returns the output.
    pub(crate) async fn ok(&self, tool: &str, args: &str) -> ToolOutput {
        match self.call(tool, args).await {
            Ok(out) => out,
            Err(e) => panic!("{tool} {args} failed: {e}"),
        }
    }

    /// Calls and expects success; returns the text.
    pub(crate) async fn text(&self, tool: &str, args: &str) -> String {
        self.ok(tool, args).await.joined_text()
    }

    /// Calls and expects an error.
    pub(crate) async fn err(&self, tool: &str, args: &str) -> ToolError {
        match self.call(tool, args).await {
            Ok(out) => panic!("{tool} {args} should fail but gave:\n{}", out.joined_text()),
            Err(e) => e,
        }
    }

    /// Stores a memory with `extra` JSON fields (`"category":"daily"`), expecting success.
    pub(crate) async fn store(&self, key: &str, content: &str, extra: &str) -> ToolOutput {
        let mut args = json!({"key": key, "content": content});
        if !extra.is_empty() {
            let more: Value = serde_json::from_str(&format!("{{{extra}}}")).unwrap();
            for (k, v) in more.as_object().unwrap() {
                args[k] = v.clone();
            }
        }
        self.ok("memory_store", &args.to_string()).await
    }

    /// The structured result of a recall.
    pub(crate) async fn recall(&self, args: Value) -> Value {
        self.ok("memory_recall", &args.to_string())
            .await
            .structured
            .unwrap()
    }

    /// A direct connection to the database, for backdating and inspection.
    pub(crate) fn sql(&self) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open(&self.db).unwrap();
        conn.busy_timeout(Duration::from_secs(5)).unwrap();
        conn
    }
}

/// The keys of a recall or listing's structured result, in order.
pub(crate) fn keys(structured: &Value) -> Vec<String> {
    structured["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["key"].as_str().unwrap().to_string())
        .collect()
}

/// The stack with the memory tools of `config`, approving whatever the policy asks about.
pub(crate) fn stack(config: &Config) -> Stack {
    let mut registry = Registry::new();
    registry.register_all(tools_memory::tools(config)).unwrap();
    Stack::new(registry).with_approver(Arc::new(ApproveAll))
}

/// A context on a workspace at `dir` under `policy`.
pub(crate) fn context(dir: &Path, policy: Policy) -> ToolContext {
    ToolContext::new(
        Workspace::local(dir).unwrap(),
        Arc::new(policy),
        Arc::new(Limits::default()),
    )
}

/// What the embedding server does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Behaviour {
    /// Deterministic embeddings.
    Embed,
    /// HTTP 500.
    Fail,
    /// Vectors of half the dimension.
    WrongDimension,
    /// A 200 whose body is not JSON.
    Malformed,
    /// Waits two seconds before answering.
    Slow,
}

/// The dimension of the server's embeddings.
pub(crate) const DIM: usize = 64;

/// Words the server treats as the same concept, so related wording lands on the same axes.
const SYNONYMS: &[(&str, &str)] = &[
    ("automobile", "car"),
    ("vehicle", "car"),
    ("sedan", "car"),
    ("puppy", "dog"),
    ("canine", "dog"),
    ("hound", "dog"),
];

/// The server's embedding: words (lower case, synonyms folded) hashed into 64 buckets with
/// FNV-1a, counted and normalised.
pub(crate) fn embedding(text: &str) -> Vec<f32> {
    let synonyms: HashMap<&str, &str> = SYNONYMS.iter().copied().collect();
    let mut v = vec![0f32; DIM];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let lower = word.to_lowercase();
        let word = synonyms.get(lower.as_str()).copied().unwrap_or(&lower);
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in word.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        v[(h % DIM as u64) as usize] += 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    } else {
        v[0] = 1.0;
    }
    v
}

#[derive(Clone)]
struct ServerState {
    requests: Arc<AtomicUsize>,
    inputs: Arc<Mutex<Vec<Vec<String>>>>,
    behaviour: Arc<Mutex<Behaviour>>,
    auth: Arc<Mutex<Vec<Option<String>>>>,
}

/// A real OpenAI-compatible embedding server on 127.0.0.1, counting what it receives.
pub(crate) struct EmbedServer {
    pub(crate) addr: SocketAddr,
    state: ServerState,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl EmbedServer {
    pub(crate) async fn start() -> EmbedServer {
        let state = ServerState {
            requests: Arc::new(AtomicUsize::new(0)),
            inputs: Arc::new(Mutex::new(Vec::new())),
            behaviour: Arc::new(Mutex::new(Behaviour::Embed)),
            auth: Arc::new(Mutex::new(Vec::new())),
        };
        let app = axum::Router::new()
            .route("/v1/embeddings", post(embed_handler))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        EmbedServer {
            addr,
            state,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// The base URL to configure.
    pub(crate) fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Requests received so far.
    pub(crate) fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// The `input` arrays received so far.
    pub(crate) fn inputs(&self) -> Vec<Vec<String>> {
        self.state.inputs.lock().unwrap().clone()
    }

    /// The `Authorization` headers received so far.
    pub(crate) fn auth_headers(&self) -> Vec<Option<String>> {
        self.state.auth.lock().unwrap().clone()
    }

    pub(crate) fn set(&self, behaviour: Behaviour) {
        *self.state.behaviour.lock().unwrap() = behaviour;
    }

    /// Stops the server and waits until it has closed every connection.
    pub(crate) async fn shut_down(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
    }
}

async fn embed_handler(
    State(state): State<ServerState>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    state.requests.fetch_add(1, Ordering::SeqCst);
    state.auth.lock().unwrap().push(
        headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    );
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => Vec::new(),
    };
    state.inputs.lock().unwrap().push(inputs.clone());
    let behaviour = *state.behaviour.lock().unwrap();
    match behaviour {
        Behaviour::Fail => (StatusCode::INTERNAL_SERVER_ERROR, "model crashed").into_response(),
        Behaviour::Malformed => (StatusCode::OK, "{\"data\": [oops").into_response(),
        Behaviour::Slow => {
            tokio::time::sleep(Duration::from_secs(2)).await;
            StatusCode::OK.into_response()
        }
        Behaviour::Embed | Behaviour::WrongDimension => {
            let data: Vec<Value> = inputs
                .iter()
                .enumerate()
                .map(|(i, text)| {
                    let mut v = embedding(text);
                    if behaviour == Behaviour::WrongDimension {
                        v.truncate(DIM / 2);
                        v[0] += 1.0;
                    }
                    json!({"object": "embedding", "index": i, "embedding": v})
                })
                .collect();
            let body = json!({"object": "list", "data": data, "model": body["model"]});
            (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                body.to_string(),
            )
                .into_response()
        }
    }
}
