//! A scripted HTTP server on loopback: it answers each request with the next scripted reply
//! and records what it was sent.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use futures_util::StreamExt;
use serde_json::Value;

/// One scripted answer.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// A complete body with a status and extra headers.
    Json {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// An event stream sent in pieces; with `cut`, the connection is broken after them.
    Sse { pieces: Vec<Vec<u8>>, cut: bool },
    /// Nothing for a minute.
    Hang,
}

impl Reply {
    /// 200 with `body`.
    pub(crate) fn ok(body: &str) -> Reply {
        Reply::status(200, body)
    }

    /// `status` with `body`.
    pub(crate) fn status(status: u16, body: &str) -> Reply {
        Reply::Json {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
        }
    }

    /// `status` with `body` and one extra header.
    pub(crate) fn with_header(status: u16, header: &'static str, value: &str, body: &str) -> Reply {
        Reply::Json {
            status,
            headers: vec![(header, value.to_owned())],
            body: body.to_owned(),
        }
    }

    /// A complete event stream, delivered in pieces of 23 bytes so that lines and UTF-8
    /// sequences are split across reads.
    pub(crate) fn sse(body: &str) -> Reply {
        Reply::Sse {
            pieces: split(body.as_bytes(), 23),
            cut: false,
        }
    }

    /// The first `keep` bytes of an event stream, then a broken connection.
    pub(crate) fn sse_cut(body: &str, keep: usize) -> Reply {
        Reply::Sse {
            pieces: split(&body.as_bytes()[..keep], 23),
            cut: true,
        }
    }
}

fn split(body: &[u8], size: usize) -> Vec<Vec<u8>> {
    body.chunks(size).map(<[u8]>::to_vec).collect()
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) method: String,
    /// Path and query.
    pub(crate) path: String,
    pub(crate) headers: HeaderMap,
    /// The body as JSON (`Null` when it was not JSON).
    pub(crate) body: Value,
}

impl Recorded {
    /// A header's value, when sent.
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap_or("<not text>").to_owned())
    }
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
}

/// The server; it stops with the test's runtime.
pub(crate) struct Server {
    /// `http://127.0.0.1:{port}`.
    pub(crate) url: String,
    shared: Arc<Shared>,
}

impl Server {
    /// Starts a server that answers with `replies`, in order (500 once they run out).
    pub(crate) async fn start(replies: Vec<Reply>) -> Server {
        let shared = Arc::new(Shared {
            replies: Mutex::new(replies.into()),
            requests: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Server { url, shared }
    }

    /// Every request so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The only request so far (the test fails when there were more or none).
    pub(crate) fn only_request(&self) -> Recorded {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "expected one request, got {requests:#?}");
        requests.into_iter().next().unwrap()
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    shared.requests.lock().unwrap().push(Recorded {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default(),
        headers: parts.headers,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    });
    let reply = shared.replies.lock().unwrap().pop_front();
    match reply {
        None => Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(Body::from("the test script ran out of replies"))
            .unwrap(),
        Some(Reply::Json {
            status,
            headers,
            body,
        }) => {
            let mut builder = Response::builder()
                .status(status)
                .header("content-type", "application/json");
            for (name, value) in headers {
                builder = builder.header(name, value);
            }
            builder.body(Body::from(body)).unwrap()
        }
        Some(Reply::Sse { pieces, cut }) => {
            let mut items: Vec<Result<Bytes, std::io::Error>> =
                pieces.into_iter().map(|p| Ok(Bytes::from(p))).collect();
            if cut {
                items.push(Err(std::io::Error::other("the test cut the connection")));
            }
            // A short pause before each piece makes each one its own write, so the client
            // really sees a stream (and the pieces before a cut really arrive).
            let stream = futures_util::stream::iter(items).then(|item| async {
                tokio::time::sleep(Duration::from_millis(2)).await;
                item
            });
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .header("cache-control", "no-cache")
                .body(Body::from_stream(stream))
                .unwrap()
        }
        Some(Reply::Hang) => {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Response::builder()
                .status(200)
                .body(Body::from("{}"))
                .unwrap()
        }
    }
}
