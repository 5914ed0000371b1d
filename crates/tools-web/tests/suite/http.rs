//! http_request against loopback servers: methods, headers, redirects, caps and deadlines.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect};
use axum::routing::{any, get};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tool_core::{Policy, ToolError};
use tools_web::Config;

use super::{Fixture, LOOPBACK, net, policy, serve};

fn url(addr: SocketAddr, path: &str) -> String {
    format!("http://site.test:{}{path}", addr.port())
}

async fn echo(method: Method, headers: HeaderMap, body: Bytes) -> impl IntoResponse {
    let seen = json!({
        "method": method.as_str(),
        "accept": headers.get("accept").and_then(|v| v.to_str().ok()),
        "authorization": headers.get("authorization").and_then(|v| v.to_str().ok()),
        "body": String::from_utf8_lossy(&body),
    });
    (
        [
            (header::SET_COOKIE, "session=s3cr3t-cookie"),
            (header::HeaderName::from_static("x-api-key"), "sk-live-123"),
            (header::HeaderName::from_static("x-request-id"), "req-42"),
            (header::CONTENT_TYPE, "application/json"),
        ],
        seen.to_string(),
    )
}

#[tokio::test]
async fn get_shows_status_headers_and_body_with_secrets_redacted() {
    let addr = serve(Router::new().route("/echo", any(echo))).await;
    let fx = Fixture::new();
    let args = json!({"url": url(addr, "/echo"), "headers": {"Accept": "application/json"}});
    let out = fx.ok("http_request", &args.to_string()).await;
    let text = out.joined_text();
    assert!(text.starts_with("HTTP 200 OK\n"), "{text}");
    assert!(text.contains("x-request-id: req-42"), "{text}");
    assert!(text.contains("\"accept\":\"application/json\""), "{text}");
    assert!(!text.contains("s3cr3t-cookie"), "{text}");
    assert!(!text.contains("sk-live-123"), "{text}");
    assert!(text.contains("set-cookie: [redacted, 21 bytes]"), "{text}");
    let s = out.structured.unwrap();
    assert_eq!(s["status"], 200);
    assert!(!s.to_string().contains("sk-live-123"));
}

#[tokio::test]
async fn post_sends_method_and_body() {
    let addr = serve(Router::new().route("/echo", any(echo))).await;
    let fx = Fixture::new();
    for method in ["POST", "put", "PATCH", "DELETE"] {
        let args = json!({"url": url(addr, "/echo"), "method": method, "body": "{\"n\":1}",
                          "headers": {"Content-Type": "application/json"}});
        let text = fx.ok("http_request", &args.to_string()).await.joined_text();
        let upper = method.to_ascii_uppercase();
        assert!(text.contains(&format!("\"method\":\"{upper}\"")), "{text}");
        assert!(text.contains(r#""body":"{\"n\":1}""#), "{text}");
    }
}

/// Redirects: followed by hand within the allow list, POST turned into GET on 303,
/// credentials dropped across origins, loops stopped, and hops off the allow list left alone.
#[tokio::test]
async fn redirects() {
    let app = Router::new()
        .route("/a", get(|| async { Redirect::temporary("/b") }))
        .route("/b", get(|| async { Redirect::permanent("/echo") }))
        .route("/see-other", any(|| async { Redirect::to("/echo") }))
        .route("/loop", get(|| async { Redirect::temporary("/loop") }))
        .route("/echo", any(echo));
    let addr = serve(app).await;
    let fx = Fixture::new();

    let args = json!({"url": url(addr, "/a")});
    let out = fx.ok("http_request", &args.to_string()).await;
    let text = out.joined_text();
    assert!(text.contains("\"method\":\"GET\""), "{text}");
    assert!(text.contains("Followed 2 redirect(s)"), "{text}");
    assert_eq!(
        out.structured.unwrap()["redirects"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let args = json!({"url": url(addr, "/see-other"), "method": "POST", "body": "x"});
    let text = fx.ok("http_request", &args.to_string()).await.joined_text();
    assert!(
        text.contains("\"method\":\"GET\"") && text.contains("\"body\":\"\""),
        "{text}"
    );

    let args = json!({"url": url(addr, "/loop")});
    let out = fx.ok("http_request", &args.to_string()).await;
    let text = out.joined_text();
    assert!(text.starts_with("HTTP 307"), "{text}");
    assert!(text.contains("at most 5 are followed"), "{text}");

    // other.test is the same server under a name the allow list does not cover.
    let off_list = Router::new()
        .route(
            "/away",
            get(move || async move {
                Redirect::temporary(&format!("http://other.test:{}/echo", addr.port()))
            }),
        )
        .route("/echo", any(echo));
    let addr2 = serve(off_list).await;
    let args = json!({"url": url(addr2, "/away"), "headers": {"Authorization": "Bearer t0ken"}});
    let text = fx.ok("http_request", &args.to_string()).await.joined_text();
    assert!(text.starts_with("HTTP 307"), "{text}");
    assert!(
        text.contains("other.test is not on the host allow list"),
        "{text}"
    );
    assert!(!text.contains("t0ken"), "{text}");

    // In full autonomy the hop is followed, without the Authorization header.
    let mut full = Policy::full();
    full.allow_http = true;
    let fx_full = Fixture::with(Config::new().with_net(net()), full);
    let text = fx_full
        .ok("http_request", &args.to_string())
        .await
        .joined_text();
    assert!(text.starts_with("HTTP 200"), "{text}");
    assert!(text.contains("\"authorization\":null"), "{text}");
    // Same origin keeps it.
    let args = json!({"url": url(addr, "/a"), "headers": {"Authorization": "Bearer t0ken"}});
    let text = fx.ok("http_request", &args.to_string()).await.joined_text();
    assert!(
        text.contains("\"authorization\":\"Bearer t0ken\""),
        "{text}"
    );
}

/// A raw TCP server: each connection is handed to `handle`.
async fn raw_server<F, Fut>(handle: F) -> SocketAddr
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind((LOOPBACK, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = Arc::new(handle);
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let handle = Arc::clone(&handle);
            tokio::spawn(async move {
                // Read the request head before answering.
                let mut buf = vec![0u8; 8192];
                let mut seen = Vec::new();
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                handle(stream).await;
            });
        }
    });
    addr
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// A gzip bomb (64 MiB of zeros in ~64 KiB) is cut at the decompressed cap; a small gzip body
/// (the benign twin) arrives whole and decompressed.
#[tokio::test]
async fn gzip_bomb_is_cut_at_the_cap() {
    let bomb = Arc::new(gzip(&vec![b'0'; 64 << 20]));
    let small = Arc::new(gzip(b"hello, compressed world"));
    assert!(bomb.len() < 200_000, "bomb is {} bytes", bomb.len());
    let addr = raw_server(move |mut s| {
        let (bomb, small) = (Arc::clone(&bomb), Arc::clone(&small));
        async move {
            // Alternate: the first connection gets the bomb, later ones the small body.
            static N: AtomicUsize = AtomicUsize::new(0);
            let body = if N.fetch_add(1, Ordering::SeqCst) == 0 { bomb } else { small };
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(&body).await;
        }
    })
    .await;
    let fx = Fixture::with(
        Config::new()
            .with_net(net())
            .with_max_response_bytes(100_000),
        policy(),
    );
    let args = json!({"url": url(addr, "/bomb")});
    let out = fx.ok("http_request", &args.to_string()).await;
    let s = out.structured.clone().unwrap();
    assert_eq!(s["body_bytes"], 100_000);
    assert!(
        s["cut"].as_str().unwrap().contains("100000-byte limit"),
        "{s}"
    );
    let text = fx.ok("http_request", &args.to_string()).await.joined_text();
    assert!(text.contains("hello, compressed world"), "{text}");
    assert!(!text.contains("limit"), "{text}");
}

/// A body that trickles in forever is cut at the deadline and returned; a server that never
/// answers is a timeout; the benign twin answers at once.
#[tokio::test]
async fn slow_bodies_and_silent_servers_meet_the_deadline() {
    let trickle = raw_server(|mut s| async move {
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
            .await;
        for _ in 0..100 {
            if s.write_all(b"1\r\nx\r\n").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    let fx = Fixture::new();
    let args = json!({"url": url(trickle, "/"), "timeout_secs": 1});
    let out = fx.ok("http_request", &args.to_string()).await;
    let text = out.joined_text();
    assert!(text.contains("still sending after 1 s"), "{text}");
    assert!(text.contains("xx"), "{text}");

    let silent = raw_server(|s| async move {
        // Hold the connection open without a word.
        let _held = s;
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    let args = json!({"url": url(silent, "/"), "timeout_secs": 1});
    match fx.err("http_request", &args.to_string()).await {
        ToolError::Timeout(m) => assert!(m.contains("did not answer within 1 s"), "{m}"),
        e => panic!("{e:?}"),
    }

    let quick = serve(Router::new().route("/", get(|| async { "quick" }))).await;
    let args = json!({"url": url(quick, "/"), "timeout_secs": 1});
    let text = fx.ok("http_request", &args.to_string()).await.joined_text();
    assert!(text.ends_with("quick"), "{text}");
}

#[tokio::test]
async fn binary_bodies_are_described_not_shown() {
    let addr = serve(Router::new().route(
        "/img",
        get(|| async {
            (
                [(header::CONTENT_TYPE, "image/png")],
                vec![0x89u8, b'P', 0xff, 0xfe, 0],
            )
        }),
    ))
    .await;
    let fx = Fixture::new();
    let text = fx
        .ok(
            "http_request",
            &json!({"url": url(addr, "/img")}).to_string(),
        )
        .await
        .joined_text();
    assert!(
        text.contains("The body is 5 bytes of binary data (image/png)"),
        "{text}"
    );
}

#[tokio::test]
async fn error_statuses_are_results_not_errors() {
    let addr = serve(Router::new().route(
        "/missing",
        get(|| async { (StatusCode::NOT_FOUND, "no such thing") }),
    ))
    .await;
    let fx = Fixture::new();
    let text = fx
        .ok(
            "http_request",
            &json!({"url": url(addr, "/missing")}).to_string(),
        )
        .await
        .joined_text();
    assert!(text.starts_with("HTTP 404 Not Found"), "{text}");
    assert!(text.contains("no such thing"), "{text}");
}

/// Hostile arguments beside benign twins.
#[tokio::test]
async fn argument_table() {
    let addr = serve(Router::new().route("/echo", any(echo))).await;
    let u = url(addr, "/echo");
    let rows: Vec<(&str, serde_json::Value, Option<&str>)> = vec![
        (
            "host header",
            json!({"url": u, "headers": {"Host": "admin.test"}}),
            Some("/headers/Host"),
        ),
        (
            "benign header",
            json!({"url": u, "headers": {"X-Trace": "1"}}),
            None,
        ),
        (
            "crlf in value",
            json!({"url": u, "headers": {"X-A": "1\r\nHost: admin.test"}}),
            Some("/headers/X-A"),
        ),
        (
            "benign value",
            json!({"url": u, "headers": {"X-A": "1 Host admin.test"}}),
            None,
        ),
        (
            "content-length",
            json!({"url": u, "headers": {"Content-Length": "0"}}),
            Some("/headers/Content-Length"),
        ),
        (
            "transfer-encoding",
            json!({"url": u, "headers": {"Transfer-Encoding": "chunked"}}),
            Some("/headers/Transfer-Encoding"),
        ),
        (
            "proxy header",
            json!({"url": u, "headers": {"Proxy-Authorization": "x"}}),
            Some("/headers/Proxy-Authorization"),
        ),
        (
            "bad header name",
            json!({"url": u, "headers": {"X A": "1"}}),
            Some("/headers/X A"),
        ),
        (
            "unknown method",
            json!({"url": u, "method": "TRACE"}),
            Some("/method"),
        ),
        ("benign method", json!({"url": u, "method": "head"}), None),
        ("body on GET", json!({"url": u, "body": "x"}), Some("/body")),
        (
            "body on POST",
            json!({"url": u, "method": "POST", "body": "x"}),
            None,
        ),
        (
            "timeout 0",
            json!({"url": u, "timeout_secs": 0}),
            Some("/timeout_secs"),
        ),
        (
            "timeout 301",
            json!({"url": u, "timeout_secs": 301}),
            Some("/timeout_secs"),
        ),
        ("timeout 300", json!({"url": u, "timeout_secs": 300}), None),
        ("not a URL", json!({"url": "site.test/echo"}), Some("/url")),
    ];
    let fx = Fixture::new();
    for (label, args, refused_at) in rows {
        let result = fx.call("http_request", &args.to_string()).await;
        match (refused_at, result) {
            (None, Ok(_)) => {}
            (Some(path), Err(ToolError::InvalidArgs { path: p, .. })) => {
                assert_eq!(p, path, "{label}")
            }
            (want, got) => panic!("{label}: wanted refusal at {want:?}, got {got:?}"),
        }
    }
}
