//! The embedding provider is a configured endpoint (`tool_core::net::Endpoint`): its host may
//! be loopback, but no redirect leaves it and its URL carries no user information. Each
//! hostile configuration sits beside a benign twin, against real servers on loopback: the
//! embedding server counts what it receives, and so does a redirector on another port.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::{StatusCode, header};
use tools_memory::EmbeddingConfig;

use super::{EmbedServer, Fixture};

/// A server on its own loopback port that answers every request with `status` and a
/// `Location` of `target`, counting the requests.
struct Redirector {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl Redirector {
    async fn start(status: StatusCode, target: String) -> Redirector {
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
        Redirector { addr, hits }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// Which base URL a row configures.
#[derive(Debug, Clone, Copy)]
enum Base {
    /// The embedding server itself.
    Direct,
    /// The embedding server with `user:secret@` in the authority.
    WithUserInfo,
    /// A redirector on another port, answering with this status to the embedding server.
    RedirectElsewhere(u16),
    /// The embedding server's own `/moved` route: 307 to `/v1/embeddings`, same origin.
    SameOrigin307,
    /// The embedding server's own `/found` route: 302 to `/v1/embeddings`, same origin.
    SameOrigin302,
}

/// What storing one memory must give: the `embedding` state and a fragment of the note.
struct Want {
    embedding: &'static str,
    note: Option<&'static str>,
    /// Requests the embedding server must receive.
    server_requests: usize,
}

#[tokio::test]
async fn redirects_and_user_information_never_take_an_embedding_elsewhere() {
    let stored = |server_requests| Want {
        embedding: "stored",
        note: None,
        server_requests,
    };
    let pending = |note| Want {
        embedding: "pending",
        note: Some(note),
        server_requests: 0,
    };
    let rows: Vec<(Base, Want)> = vec![
        // Twin of every row: the configured server answers and receives the text once.
        (Base::Direct, stored(1)),
        (
            Base::RedirectElsewhere(302),
            pending("redirected elsewhere (HTTP 302"),
        ),
        (
            Base::RedirectElsewhere(307),
            pending("redirected elsewhere (HTTP 307"),
        ),
        (
            Base::RedirectElsewhere(308),
            pending("redirected elsewhere (HTTP 308"),
        ),
        (Base::WithUserInfo, pending("user information")),
        // Same origin: a 307 keeps the method and body and is followed (re-checked)...
        (Base::SameOrigin307, stored(1)),
        // ...a 302 would turn the POST into a bodiless GET, so it is not.
        (Base::SameOrigin302, pending("would resend it as a GET")),
    ];
    for (base, want) in rows {
        let server = EmbedServer::start().await;
        let target = format!("{}/embeddings", server.base_url());
        let mut redirector = None;
        let base_url = match base {
            Base::Direct => server.base_url(),
            Base::WithUserInfo => format!("http://user:secret@{}/v1", server.addr),
            Base::RedirectElsewhere(status) => {
                let r = Redirector::start(StatusCode::from_u16(status).unwrap(), target).await;
                let url = format!("http://{}/v1", r.addr);
                redirector = Some(r);
                url
            }
            Base::SameOrigin307 => format!("http://{}/moved/v1", server.addr),
            Base::SameOrigin302 => format!("http://{}/found/v1", server.addr),
        };
        let f = Fixture::sqlite_with(|c| {
            c.with_embedding(EmbeddingConfig::new(base_url.clone(), "hash-64"))
        });
        let out = f
            .store("note", "The automobile is parked outside.", "")
            .await;
        let text = out.joined_text();
        assert_eq!(
            out.structured.as_ref().unwrap()["embedding"],
            want.embedding,
            "{base:?}: {text}"
        );
        match want.note {
            Some(note) => assert!(
                text.contains(note) && text.contains("the embedding provider"),
                "{base:?}: {text}"
            ),
            None => assert!(!text.contains("Note:"), "{base:?}: {text}"),
        }
        assert!(
            !text.contains("secret"),
            "{base:?} leaked the password: {text}"
        );
        assert_eq!(server.requests(), want.server_requests, "{base:?}");
        if let Some(r) = redirector {
            // The redirector was asked once, and the embedding server behind it never.
            assert_eq!(r.hits(), 1, "{base:?}");
        }
    }
}
