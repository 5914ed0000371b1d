//! Streamable HTTP: rmcp's `StreamableHttpService` (sessions, SSE, resumption from its
//! in-memory cache) on axum, behind a guard against DNS rebinding and an optional bearer token.
//!
//! The guard, in order:
//! 1. **Host**: on a loopback bind only `localhost`, `127.0.0.1` and `[::1]` with the bound port
//!    are accepted, so a page on `evil.example` that re-resolves its name to 127.0.0.1 is
//!    refused (403);
//! 2. **Origin**: absent (not a browser), or the same origin as the `Host` (403 otherwise);
//! 3. **Authorization**: with a token, `Authorization: Bearer TOKEN` (or a `token=TOKEN` query
//!    parameter, for clients that can only be given a URL) is required (401). The comparison
//!    hashes both sides with a per-process random key and compares the digests, so its time
//!    depends neither on the token's length nor on how much of it a guess got right.
//!
//! Binding a non-loopback address is refused unless `allow_remote` is set *and* a token is
//! given; then any `Host` is accepted (the token is the protection), and Origin still has to
//! be same-origin.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::store::SessionStore;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::{McpError, McpServer};

/// The path the MCP endpoint is served on.
pub const PATH: &str = "/mcp";

/// A fresh random token (244 bits, hexadecimal), for a server started without one.
pub fn new_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// A token, kept only as a keyed digest so that checking a guess takes the same time whatever
/// the guess.
struct Secret {
    key: [u8; 32],
    digest: [u8; 32],
}

impl Secret {
    fn new(token: &str) -> Secret {
        let mut key = [0u8; 32];
        key[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        key[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        let digest = Secret::hash(&key, token.as_bytes());
        Secret { key, digest }
    }

    fn hash(key: &[u8; 32], value: &[u8]) -> [u8; 32] {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        h.update(key);
        h.update((value.len() as u64).to_le_bytes());
        h.update(value);
        h.finalize().into()
    }

    fn matches(&self, guess: &[u8]) -> bool {
        let other = Secret::hash(&self.key, guess);
        self.digest
            .iter()
            .zip(other.iter())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// How to serve over HTTP.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct HttpOptions {
    /// Require `Authorization: Bearer <token>` on every request.
    pub token: Option<String>,
    /// Allow a non-loopback bind (only together with a token).
    pub allow_remote: bool,
    /// Where sessions are kept besides this process's memory, so that another replica can
    /// restore them (see [`crate::sessions`] with feature `postgres`).
    pub session_store: Option<Arc<dyn SessionStore>>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("allow_remote", &self.allow_remote)
            .field("session_store", &self.session_store.is_some())
            .finish()
    }
}

impl HttpOptions {
    /// Options with an optional token and the remote switch.
    pub fn new(token: Option<String>, allow_remote: bool) -> Self {
        HttpOptions {
            token,
            allow_remote,
            session_store: None,
        }
    }

    /// The same options with sessions also kept in `store`.
    pub fn with_session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.session_store = Some(store);
        self
    }
}

/// A bound, not yet serving, HTTP server.
#[derive(Debug)]
pub struct Bound {
    listener: tokio::net::TcpListener,
    local_addr: SocketAddr,
    router: axum::Router,
    cancel: CancellationToken,
}

impl Bound {
    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The endpoint's URL.
    pub fn url(&self) -> String {
        format!("http://{}{PATH}", self.local_addr)
    }

    /// Cancelling this token stops the server and closes every session.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Serves until the cancellation token is cancelled.
    pub async fn run(self) -> Result<(), McpError> {
        let cancel = self.cancel.clone();
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(async move { cancel.cancelled_owned().await })
            .await
            .map_err(|e| McpError::Serve(format!("the MCP HTTP server stopped: {e}")))
    }
}

/// Binds `addr` and prepares the service; see the module documentation for the checks.
pub async fn bind(
    server: McpServer,
    addr: SocketAddr,
    options: HttpOptions,
) -> Result<Bound, McpError> {
    bind_handler(move || server.for_new_session(), addr, options).await
}

/// [`bind`] for any rmcp `ServerHandler` (for instance one that wraps an [`McpServer`] and
/// adds resources or prompts), behind the same checks; `new_session` makes the handler of
/// each new HTTP session.
pub async fn bind_handler<S, F>(
    new_session: F,
    addr: SocketAddr,
    options: HttpOptions,
) -> Result<Bound, McpError>
where
    S: rmcp::ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    let token = options.token.filter(|t| !t.is_empty());
    let loopback = addr.ip().is_loopback();
    let allowed = loopback || (options.allow_remote && token.is_some());
    if !allowed {
        return Err(McpError::Config(format!(
            "refusing to serve MCP on {addr}, which is not a loopback address: anyone who can \
             reach it could run tools. Bind 127.0.0.1, or pass --allow-remote together with \
             --token (or TOOLSHED_MCP_TOKEN)"
        )));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| McpError::Start(format!("cannot listen on {addr}: {e}")))?;
    let local_addr = listener
        .local_addr()
        .map_err(|e| McpError::Start(format!("cannot read the bound address: {e}")))?;
    let port = local_addr.port();
    let cancel = CancellationToken::new();

    let hosts = loopback.then(|| {
        ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .map(|h| format!("{h}:{port}"))
            .collect::<Vec<_>>()
    });
    // rmcp's own Host/Origin validation, configured the same way (defence in depth).
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(cancel.clone());
    config = match &hosts {
        Some(hosts) => config
            .with_allowed_hosts(hosts.clone())
            .with_allowed_origins(hosts.iter().map(|h| format!("http://{h}")))
            .enforce_origin_validation(),
        None => config.disable_allowed_hosts().disable_allowed_origins(),
    };
    config.session_store = options.session_store;
    let service = StreamableHttpService::new(
        move || Ok(new_session()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let guard = Arc::new(Guard {
        hosts,
        token: token.as_deref().map(Secret::new),
    });
    let router = axum::Router::new()
        .nest_service(PATH, service)
        .layer(axum::middleware::from_fn_with_state(guard, check));
    Ok(Bound {
        listener,
        local_addr,
        router,
        cancel,
    })
}

/// Binds and serves until the process ends.
pub async fn serve(
    server: McpServer,
    addr: SocketAddr,
    options: HttpOptions,
) -> Result<(), McpError> {
    bind(server, addr, options).await?.run().await
}

#[derive(Debug)]
struct Guard {
    /// Accepted `host:port` authorities, lower case; `None`: any.
    hosts: Option<Vec<String>>,
    token: Option<Secret>,
}

impl Guard {
    /// The response refusing a request with these headers and query, if it is refused.
    fn refusal(&self, headers: &HeaderMap, query: Option<&str>) -> Option<Response> {
        let forbidden =
            |why: &str| (StatusCode::FORBIDDEN, format!("Forbidden: {why}\n")).into_response();
        let Some(host) = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(|h| h.trim().to_ascii_lowercase())
        else {
            return Some(forbidden("a Host header is required"));
        };
        if let Some(hosts) = &self.hosts
            && !hosts.contains(&host)
        {
            tracing::warn!(%host, "refused an MCP request for a foreign Host (DNS rebinding?)");
            return Some(forbidden("the Host header is not allowed"));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let same = origin
                .to_str()
                .ok()
                .map(|o| o.trim().to_ascii_lowercase())
                .and_then(|o| o.strip_prefix("http://").map(str::to_string))
                .is_some_and(|authority| authority == host);
            if !same {
                tracing::warn!(?origin, %host, "refused a cross-origin MCP request");
                return Some(forbidden("the Origin header is not allowed"));
            }
        }
        if let Some(token) = &self.token {
            let header = headers
                .get(header::AUTHORIZATION)
                .and_then(|h| h.to_str().ok())
                .and_then(|h| h.strip_prefix("Bearer "))
                .map(str::trim);
            let param =
                query.and_then(|q| q.split('&').find_map(|pair| pair.strip_prefix("token=")));
            let given = header.or(param);
            if !given.is_some_and(|g| token.matches(g.as_bytes())) {
                return Some(
                    (
                        StatusCode::UNAUTHORIZED,
                        [(header::WWW_AUTHENTICATE, "Bearer")],
                        "Unauthorized: this server requires its token; send Authorization: Bearer <token> (printed by `toolshed mcp --http` at start, or given with --token/--token-file)\n",
                    )
                        .into_response(),
                );
            }
        }
        None
    }
}

async fn check(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    if let Some(refusal) = guard.refusal(request.headers(), request.uri().query()) {
        return refusal;
    }
    let delete = request.method() == Method::DELETE;
    let mut response = next.run(request).await;
    // rmcp answers a session's DELETE with 202; the reference clients expect 200 or 204 and
    // log a failure otherwise. The session is gone either way.
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn guard(token: Option<&str>) -> Guard {
        Guard {
            hosts: Some(vec![
                "localhost:8080".into(),
                "127.0.0.1:8080".into(),
                "[::1]:8080".into(),
            ]),
            token: token.map(Secret::new),
        }
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    impl Guard {
        fn refusal_h(&self, headers: &HeaderMap) -> Option<Response> {
            self.refusal(headers, None)
        }
    }

    fn status(r: Option<Response>) -> Option<StatusCode> {
        r.map(|r| r.status())
    }

    #[test]
    fn loopback_hosts_with_the_bound_port_pass() {
        let g = guard(None);
        for host in [
            "localhost:8080",
            "127.0.0.1:8080",
            "[::1]:8080",
            "LOCALHOST:8080",
        ] {
            assert_eq!(
                status(g.refusal_h(&headers(&[(header::HOST, host)]))),
                None,
                "{host}"
            );
        }
    }

    #[test]
    fn foreign_hosts_and_ports_are_forbidden() {
        let g = guard(None);
        for host in [
            "evil.example:8080",
            "localhost:8081",
            "localhost",
            "127.0.0.2:8080",
        ] {
            assert_eq!(
                status(g.refusal_h(&headers(&[(header::HOST, host)]))),
                Some(StatusCode::FORBIDDEN),
                "{host}"
            );
        }
        assert_eq!(
            status(g.refusal_h(&HeaderMap::new())),
            Some(StatusCode::FORBIDDEN)
        );
    }

    #[test]
    fn origin_must_be_absent_or_the_same() {
        let g = guard(None);
        let ok = headers(&[
            (header::HOST, "localhost:8080"),
            (header::ORIGIN, "http://localhost:8080"),
        ]);
        assert_eq!(status(g.refusal_h(&ok)), None);
        for origin in [
            "http://evil.example",
            "http://127.0.0.1:8080",
            "null",
            "https://localhost:8080",
        ] {
            let h = headers(&[(header::HOST, "localhost:8080"), (header::ORIGIN, origin)]);
            assert_eq!(
                status(g.refusal_h(&h)),
                Some(StatusCode::FORBIDDEN),
                "{origin}"
            );
        }
    }

    #[test]
    fn the_token_is_required_when_set() {
        let g = guard(Some("s3cret"));
        let host = (header::HOST, "127.0.0.1:8080");
        assert_eq!(
            status(g.refusal_h(&headers(std::slice::from_ref(&host)))),
            Some(StatusCode::UNAUTHORIZED)
        );
        let wrong = headers(&[host.clone(), (header::AUTHORIZATION, "Bearer nope")]);
        assert_eq!(status(g.refusal_h(&wrong)), Some(StatusCode::UNAUTHORIZED));
        let right = headers(&[host.clone(), (header::AUTHORIZATION, "Bearer s3cret")]);
        assert_eq!(status(g.refusal_h(&right)), None);
        // Guesses of other lengths, prefixes and extensions are refused; the query parameter
        // works like the header.
        let only_host = headers(std::slice::from_ref(&host));
        for (query, refused) in [
            ("token=s3cret", false),
            ("a=1&token=s3cret", false),
            ("token=s3cre", true),
            ("token=s3cret2", true),
            ("token=", true),
            ("xtoken=s3cret", true),
            ("token=S3CRET", true),
        ] {
            assert_eq!(
                status(g.refusal(&only_host, Some(query))).is_some(),
                refused,
                "{query}"
            );
        }
        for guess in ["", "s", "s3cre", "s3cret ", "s3cret\0", "s3crets3cret"] {
            assert!(
                !g.token.as_ref().unwrap().matches(guess.as_bytes()),
                "{guess:?}"
            );
        }
        assert!(g.token.as_ref().unwrap().matches(b"s3cret"));
        // Generated tokens are long and differ.
        let (a, b) = (new_token(), new_token());
        assert!(a.len() >= 64 && a != b, "{a} {b}");
    }

    #[tokio::test]
    async fn non_loopback_binds_need_allow_remote_and_a_token() {
        let server = || {
            let ws = tool_core::Workspace::local(std::env::temp_dir()).unwrap();
            let ctx = tool_core::ToolContext::new(
                ws,
                Arc::new(tool_core::Policy::read_only()),
                Arc::new(tool_core::Limits::default()),
            );
            McpServer::new(tool_core::Stack::new(tool_core::Registry::new()), ctx)
        };
        let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
        for opts in [
            HttpOptions::new(None, false),
            HttpOptions::new(None, true),
            HttpOptions::new(Some("t".into()), false),
            HttpOptions::new(Some(String::new()), true),
        ] {
            let err = bind(server(), any, opts.clone()).await.unwrap_err();
            assert!(
                err.to_string().contains("--allow-remote"),
                "{opts:?}: {err}"
            );
        }
        let bound = bind(server(), any, HttpOptions::new(Some("t".into()), true))
            .await
            .unwrap();
        assert_ne!(bound.local_addr().port(), 0);
    }
}
