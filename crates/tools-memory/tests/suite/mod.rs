//! Integration test modules of tools-memory, and their shared fixtures: the memory tools behind
//! the real stack on each backend — a temp-dir SQLite file always, and a fresh PostgreSQL
//! schema when the crate is built with `postgres` and `TOOLSHED_TEST_PG` names a database —
//! and a deterministic embedding server.
//!
//! A test that holds for every backend loops over [`fixtures`] (tool level) or [`backends`]
//! (store level); one about SQLite's file (its mode, WAL, the header) uses [`Fixture::sqlite`].

mod basics;
mod concurrency;
mod endpoint;
mod frames;
mod hostile;
mod hybrid;
#[cfg(feature = "postgres")]
mod postgres;
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
use tools_memory::{Config, KvStore, MemoryStore, SqliteStore};

/// Where a fixture's memories live.
pub(crate) enum Db {
    /// An SQLite file (not created until the first call).
    Sqlite(PathBuf),
    /// A fresh schema of the test database, dropped with the fixture.
    #[cfg(feature = "postgres")]
    Postgres(tool_core::pg::PgPool),
}

/// A store-level backend: its name and both stores (one object for both traits).
pub(crate) struct Backend {
    pub(crate) name: &'static str,
    pub(crate) memory: Arc<dyn MemoryStore>,
    pub(crate) kv: Arc<dyn KvStore>,
    /// Keeps the SQLite file's directory, or drops the PostgreSQL schema, at the end.
    _keep: Keep,
}

/// What a backend or fixture cleans up when dropped.
enum Keep {
    // Never read: it is held only to be dropped last.
    Dir(#[allow(dead_code)] TempDir),
    #[cfg(feature = "postgres")]
    Schema(tool_core::pg::PgPool),
}

impl Drop for Keep {
    fn drop(&mut self) {
        #[cfg(feature = "postgres")]
        if let Keep::Schema(pool) = self {
            // Best effort: a test database collects no leftovers, but a failed drop fails no test.
            let _ = pool.drop_schema();
        }
    }
}

/// Every backend this build and environment can test: SQLite, then PostgreSQL when
/// `TOOLSHED_TEST_PG` is set (with the `postgres` feature).
pub(crate) fn backends() -> Vec<Backend> {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Arc::new(SqliteStore::new(dir.path().join("memory.db")));
    #[allow(unused_mut)] // Only the PostgreSQL build adds a second backend.
    let mut out = vec![Backend {
        name: "sqlite",
        memory: Arc::clone(&sqlite) as Arc<dyn MemoryStore>,
        kv: sqlite,
        _keep: Keep::Dir(dir),
    }];
    #[cfg(feature = "postgres")]
    if let Some(pool) = tool_core::pg::test_pool("memory_store") {
        let store = Arc::new(tools_memory::PgStore::open(pool.clone()).unwrap());
        out.push(Backend {
            name: "postgres",
            memory: Arc::clone(&store) as Arc<dyn MemoryStore>,
            kv: store,
            _keep: Keep::Schema(pool),
        });
    }
    out
}

/// The memory tools over one backend, and a context.
pub(crate) struct Fixture {
    /// `sqlite` or `postgres`.
    pub(crate) backend: &'static str,
    pub(crate) dir: TempDir,
    pub(crate) db: Db,
    pub(crate) stack: Stack,
    pub(crate) ctx: ToolContext,
    _keep: Option<Keep>,
}

/// A fixture with the default configuration on every backend.
pub(crate) fn fixtures() -> Vec<Fixture> {
    fixtures_with(|c| c)
}

/// A fixture with a configuration adjusted by `adjust` on every backend (see [`backends`]).
pub(crate) fn fixtures_with(adjust: impl Fn(Config) -> Config) -> Vec<Fixture> {
    backend_names()
        .into_iter()
        .map(|name| Fixture::on(name, &adjust))
        .collect()
}

/// The backends this build and environment can test, for [`Fixture::on`]: `sqlite`, then
/// `postgres` with the `postgres` feature when `TOOLSHED_TEST_PG` is set (and a failure when
/// `TOOLSHED_REQUIRE_PG` is set but it is not).
pub(crate) fn backend_names() -> Vec<&'static str> {
    #[allow(unused_mut)] // Only the PostgreSQL build adds a second backend.
    let mut out = vec!["sqlite"];
    #[cfg(feature = "postgres")]
    if std::env::var(tool_core::pg::TEST_URL_VAR).is_ok_and(|u| !u.trim().is_empty())
        || tool_core::pg::test_pool("memory_probe").is_some()
    {
        out.push("postgres");
    }
    out
}

impl Fixture {
    /// Keyword-only memory in `<tmp>/data/memory.db`.
    pub(crate) fn sqlite() -> Fixture {
        Fixture::sqlite_with(|c| c)
    }

    /// SQLite memory with a configuration adjusted by `adjust`.
    pub(crate) fn sqlite_with(adjust: impl FnOnce(Config) -> Config) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("data").join("memory.db");
        let stack = stack(&adjust(Config::new(&db)));
        let ctx = context(dir.path(), Policy::supervised());
        announce("sqlite");
        Fixture {
            backend: "sqlite",
            dir,
            db: Db::Sqlite(db),
            stack,
            ctx,
            _keep: None,
        }
    }

    /// Memory on the backend named `backend` (one of [`backend_names`]), with a configuration
    /// adjusted by `adjust`.
    pub(crate) fn on(backend: &str, adjust: impl FnOnce(Config) -> Config) -> Fixture {
        match backend {
            "sqlite" => Fixture::sqlite_with(adjust),
            #[cfg(feature = "postgres")]
            "postgres" => Fixture::postgres(
                tool_core::pg::test_pool("memory_tools").expect("TOOLSHED_TEST_PG is set"),
                adjust,
            ),
            other => panic!("no backend {other} in this build"),
        }
    }

    /// PostgreSQL memory in the schema of `pool` (dropped with the fixture).
    #[cfg(feature = "postgres")]
    fn postgres(pool: tool_core::pg::PgPool, adjust: impl FnOnce(Config) -> Config) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let stack = pg_stack(&pool, &adjust(Config::new("")));
        let ctx = context(dir.path(), Policy::supervised());
        announce("postgres");
        Fixture {
            backend: "postgres",
            dir,
            db: Db::Postgres(pool.clone()),
            stack,
            ctx,
            _keep: Some(Keep::Schema(pool)),
        }
    }

    /// The SQLite file (for the tests about the file itself).
    pub(crate) fn sqlite_path(&self) -> &Path {
        match &self.db {
            Db::Sqlite(path) => path,
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => panic!("this fixture is not on SQLite"),
        }
    }

    /// Another stack on the same memories with another configuration: for SQLite another
    /// connection to the file, for PostgreSQL another pool on the schema (another replica).
    pub(crate) fn stack_with(&self, adjust: impl FnOnce(Config) -> Config) -> Stack {
        match &self.db {
            Db::Sqlite(path) => stack(&adjust(Config::new(path))),
            #[cfg(feature = "postgres")]
            Db::Postgres(pool) => pg_stack(&replica(pool), &adjust(Config::new(""))),
        }
    }

    /// Calls `tool` with raw JSON arguments through the whole stack.
    pub(crate) async fn call(&self, tool: &str, args: &str) -> Result<ToolOutput, ToolError> {
        self.stack.call_json(tool, args, self.ctx.for_call()).await
    }

    /// Calls and expects success; returns the output.
    pub(crate) async fn ok(&self, tool: &str, args: &str) -> ToolOutput {
        match self.call(tool, args).await {
            Ok(out) => out,
            Err(e) => panic!("{}: {tool} {args} failed: {e}", self.backend),
        }
    }

    /// Calls and expects success; returns the text.
    pub(crate) async fn text(&self, tool: &str, args: &str) -> String {
        self.ok(tool, args).await.joined_text()
    }

    /// Calls and expects an error.
    pub(crate) async fn err(&self, tool: &str, args: &str) -> ToolError {
        match self.call(tool, args).await {
            Ok(out) => panic!(
                "{}: {tool} {args} should fail but gave:\n{}",
                self.backend,
                out.joined_text()
            ),
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

    /// A direct connection to the SQLite file, for the tests about the file.
    pub(crate) fn sql(&self) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open(self.sqlite_path()).unwrap();
        conn.busy_timeout(Duration::from_secs(5)).unwrap();
        conn
    }

    /// Runs one statement of SQL both backends understand (backdating, say) on the database
    /// directly; returns the rows it changed.
    pub(crate) fn execute(&self, sql: &str) -> u64 {
        match &self.db {
            Db::Sqlite(_) => self.sql().execute(sql, []).unwrap() as u64,
            #[cfg(feature = "postgres")]
            Db::Postgres(pool) => tool_core::pg::off_runtime(|| {
                pool.get()
                    .unwrap()
                    .execute(sql, &[])
                    .unwrap_or_else(|e| panic!("{sql}: {e}"))
            }),
        }
    }

    /// The first column of every row of a query both backends understand, as text.
    pub(crate) fn column(&self, sql: &str) -> Vec<String> {
        match &self.db {
            Db::Sqlite(_) => {
                let conn = self.sql();
                let mut stmt = conn.prepare(sql).unwrap();
                stmt.query_map([], |r| {
                    Ok(match r.get_ref(0)? {
                        rusqlite::types::ValueRef::Integer(i) => i.to_string(),
                        rusqlite::types::ValueRef::Text(t) => {
                            String::from_utf8_lossy(t).into_owned()
                        }
                        other => format!("{other:?}"),
                    })
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(pool) => {
                let sql = format!("SELECT CAST(v AS text) FROM ({sql}) AS t(v)");
                tool_core::pg::off_runtime(|| {
                    pool.get()
                        .unwrap()
                        .query(&sql, &[])
                        .unwrap_or_else(|e| panic!("{sql}: {e}"))
                        .iter()
                        .map(|r| r.get::<_, String>(0))
                        .collect()
                })
            }
        }
    }

    /// A count (`SELECT count(*) …`) both backends understand.
    pub(crate) fn count(&self, sql: &str) -> i64 {
        let column = self.column(sql);
        assert_eq!(column.len(), 1, "{sql} gave {column:?}");
        column[0].parse().unwrap()
    }
}

/// Names the backend in the test's output, so a failure in a loop over backends says which.
#[allow(clippy::print_stderr)] // Test output, shown only when the test fails.
fn announce(backend: &str) {
    eprintln!("--- on {backend}");
}

/// Another pool on the schema of `pool`: what a second Toolshed process would open.
#[cfg(feature = "postgres")]
pub(crate) fn replica(pool: &tool_core::pg::PgPool) -> tool_core::pg::PgPool {
    let url = std::env::var(tool_core::pg::TEST_URL_VAR).unwrap();
    let mut config = tool_core::pg::PgConfig::new(url).with_schema(pool.schema());
    config.pool_size = 4;
    tool_core::pg::PgPool::connect(&config).unwrap()
}

/// The memory tools of `config` over a [`tools_memory::PgStore`] on `pool`.
#[cfg(feature = "postgres")]
fn pg_stack(pool: &tool_core::pg::PgPool, config: &Config) -> Stack {
    let store = Arc::new(tools_memory::PgStore::open(pool.clone()).unwrap());
    let mut registry = Registry::new();
    registry
        .register_all(tools_memory::tools_with_stores(
            config,
            Arc::clone(&store) as Arc<dyn MemoryStore>,
            store,
        ))
        .unwrap();
    Stack::new(registry).with_approver(Arc::new(ApproveAll))
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
            // Same-origin redirects to the real route, for the endpoint tests.
            .route(
                "/moved/v1/embeddings",
                post(|| async {
                    (
                        StatusCode::TEMPORARY_REDIRECT,
                        [(axum::http::header::LOCATION, "/v1/embeddings")],
                    )
                }),
            )
            .route(
                "/found/v1/embeddings",
                post(|| async {
                    (
                        StatusCode::FOUND,
                        [(axum::http::header::LOCATION, "/v1/embeddings")],
                    )
                }),
            )
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
