//! The `message` tool's webhook channel is a configured endpoint (`tool_core::net::Endpoint`):
//! its host may be loopback (a relay the user runs), but no redirect takes the message to
//! another origin and a URL with user information is refused. Each hostile configuration sits
//! beside a benign twin, against real HTTP servers on loopback that count what they receive.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::http::{StatusCode, header};
use axum::routing::post;
use tool_core::{ApproveAll, Policy};
use toolshed_agent::{AgentSpec, Channels, Message};

use super::{Scripted, call, context, results, runtime, text, tools};

/// The webhook receiver: `POST /hook` records the `content` it is sent; `/moved` answers 307
/// and `/found` 302, both to `/hook` on the same origin.
struct Receiver {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<String>>>,
}

impl Receiver {
    async fn start() -> Receiver {
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        let app = axum::Router::new()
            .route(
                "/hook",
                post(move |body: axum::body::Bytes| {
                    let log = Arc::clone(&log);
                    async move {
                        let value: serde_json::Value =
                            serde_json::from_slice(&body).unwrap_or_default();
                        let content = value["content"].as_str().unwrap_or_default().to_owned();
                        log.lock().unwrap().push(content);
                        StatusCode::NO_CONTENT
                    }
                }),
            )
            .route(
                "/moved",
                post(|| async {
                    (
                        StatusCode::TEMPORARY_REDIRECT,
                        [(header::LOCATION, "/hook")],
                    )
                }),
            )
            .route(
                "/found",
                post(|| async { (StatusCode::FOUND, [(header::LOCATION, "/hook")]) }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Receiver { addr, received }
    }

    fn received(&self) -> Vec<String> {
        self.received.lock().unwrap().clone()
    }
}

/// A server on its own loopback port that answers everything with `status` and a `Location`
/// of `target`, counting the requests.
async fn redirector(status: StatusCode, target: String) -> (SocketAddr, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    let app = axum::Router::new().fallback(move || {
        let counter = Arc::clone(&counter);
        let target = target.clone();
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            (status, [(header::LOCATION, target)])
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, hits)
}

/// Which webhook URL a row configures.
#[derive(Debug, Clone, Copy)]
enum Hook {
    /// The receiver's `/hook`.
    Direct,
    /// The receiver's `/hook` with `user:secret@` in the authority.
    WithUserInfo,
    /// A redirector on another port that answers with this status, pointing at `/hook`.
    RedirectElsewhere(u16),
    /// The receiver's `/moved`: 307 to `/hook`, same origin.
    SameOrigin307,
    /// The receiver's `/found`: 302 to `/hook`, same origin.
    SameOrigin302,
}

#[tokio::test]
async fn the_webhook_is_never_redirected_elsewhere_and_refuses_user_information() {
    // (webhook, Ok(()) when the receiver must get the message once, or Err(fragment of the
    // error the model reads) when nobody may receive it)
    let rows: &[(Hook, Result<(), &str>)] = &[
        (Hook::Direct, Ok(())),
        (
            Hook::RedirectElsewhere(302),
            Err("redirected elsewhere (HTTP 302"),
        ),
        (
            Hook::RedirectElsewhere(307),
            Err("redirected elsewhere (HTTP 307"),
        ),
        (
            Hook::RedirectElsewhere(308),
            Err("redirected elsewhere (HTTP 308"),
        ),
        (Hook::WithUserInfo, Err("user information")),
        // Same origin: a 307 keeps the POST and its body, so it is followed (and re-checked)...
        (Hook::SameOrigin307, Ok(())),
        // ...a 302 would resend the POST as a bodiless GET, so it is not followed.
        (Hook::SameOrigin302, Err("would resend it as a GET")),
    ];
    for (hook, want) in rows {
        let receiver = Receiver::start().await;
        let target = format!("http://{}/hook", receiver.addr);
        let mut redirected = None;
        let url = match hook {
            Hook::Direct => target,
            Hook::WithUserInfo => format!("http://user:secret@{}/hook", receiver.addr),
            Hook::RedirectElsewhere(status) => {
                let (addr, hits) = redirector(StatusCode::from_u16(*status).unwrap(), target).await;
                redirected = Some(hits);
                format!("http://{addr}/notify")
            }
            Hook::SameOrigin307 => format!("http://{}/moved", receiver.addr),
            Hook::SameOrigin302 => format!("http://{}/found", receiver.addr),
        };
        let model = Scripted::new(vec![
            vec![call(
                "m1",
                "message",
                r#"{"content":"Build finished.","channel":"webhook"}"#,
            )],
            vec![text("Told the user.")],
        ]);
        let (registry, _) = tools();
        let (rt, _events) = runtime(Arc::clone(&model), registry);
        let rt = Arc::new(
            rt.with_channels(Channels {
                file: None,
                webhook: Some(url),
            })
            .with_approver(Arc::new(ApproveAll)),
        );
        let dir = tempfile::tempdir().unwrap();
        let ctx = context(dir.path(), Policy::supervised());
        let mut messages = vec![Message::user("tell me when the build is done")];
        rt.run(&AgentSpec::default_agent(), &mut messages, &ctx, None)
            .await
            .unwrap();
        let requests = model.requests();
        let result = &results(&requests[1])[0];
        match want {
            Ok(()) => {
                assert!(!result.is_error, "{hook:?}: {}", result.content);
                assert_eq!(receiver.received(), ["Build finished."], "{hook:?}");
            }
            Err(fragment) => {
                assert!(result.is_error, "{hook:?}: {}", result.content);
                assert!(
                    result.content.contains(fragment) && result.content.contains("console instead"),
                    "{hook:?}: {}",
                    result.content
                );
                assert!(
                    !result.content.contains("secret"),
                    "{hook:?}: {}",
                    result.content
                );
                assert!(receiver.received().is_empty(), "{hook:?}");
            }
        }
        if let Some(hits) = redirected {
            assert_eq!(hits.load(Ordering::SeqCst), 1, "{hook:?}");
        }
    }
}
