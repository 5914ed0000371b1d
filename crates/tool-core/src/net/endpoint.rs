//! Configured endpoints: URLs from the user's trusted configuration (a webhook, an embeddings
//! service, an LLM provider's base URL), as opposed to URLs a model wrote.
//!
//! The configured host is the user's decision, so it may be loopback or private (a local
//! Ollama, a relay on the LAN) and the address checks of [`Net`](super::Net) do not apply to
//! it. Everything else stays closed:
//!
//! - the URL is `http://` or `https://`, has a host, carries no user information and no
//!   control characters;
//! - the client resolves only the configured name (any other name is refused by its resolver)
//!   and connects only to the addresses that lookup returned; no environment proxy is used;
//! - reqwest follows no redirect. [`Endpoint::send`] follows a redirect only within the same
//!   origin (scheme, host and port), re-checked, at most [`NetConfig::with_max_redirects`]
//!   times, and only when the method and body survive it (any redirect of a `GET`/`HEAD`; `307`
//!   and `308` of anything else). A redirect to another origin is never followed: the caller
//!   gets an error saying where it pointed, and the other origin receives nothing;
//! - bodies are read to a byte cap, the exchange runs under one deadline and the caller's
//!   cancellation.
//!
//! Streaming callers (the agent's providers) take [`Endpoint::client`] — the same client,
//! redirects off — and call [`Endpoint::check`] on every URL before sending to it.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header;
use reqwest::{Method, StatusCode};
use tokio::time::Instant;
use url::{Host, Origin, Url};

use super::{Fetched, Lookup, NetConfig, Request, error_chain, read_body};
use crate::{CancellationToken, ToolError};

/// Why a configured endpoint was not set up or did not answer. Its text is a sentence naming
/// the endpoint and saying what to do next; [`EndpointError::detail`] is the same without the
/// endpoint's name in front, for callers that put their own subject first.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{} {detail}", capitalised(.label))]
pub struct EndpointError {
    kind: EndpointErrorKind,
    label: String,
    detail: String,
}

/// The stable kinds of [`EndpointError`].
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointErrorKind {
    /// The configured URL is refused (user information, another scheme, not a URL), or its
    /// client could not be built. Fix the configuration.
    Config,
    /// A request was for a URL outside the configured origin, or with user information.
    Refused,
    /// The endpoint redirected to another origin, or in a way that is not followed.
    Redirected,
    /// The deadline passed.
    Timeout,
    /// No connection could be made.
    Connect,
    /// The request failed after it was sent.
    Request,
    /// The caller cancelled.
    Cancelled,
}

impl EndpointError {
    fn new(kind: EndpointErrorKind, label: &str, detail: String) -> EndpointError {
        EndpointError {
            kind,
            label: label.to_owned(),
            detail,
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> EndpointErrorKind {
        self.kind
    }

    /// The sentence without the endpoint's name: `could not be reached at http://…; check…`.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl From<EndpointError> for ToolError {
    fn from(e: EndpointError) -> ToolError {
        match e.kind {
            EndpointErrorKind::Timeout => ToolError::Timeout(e.to_string()),
            EndpointErrorKind::Cancelled => ToolError::Cancelled,
            EndpointErrorKind::Refused => ToolError::Denied(e.to_string()),
            _ => ToolError::Failed(e.to_string()),
        }
    }
}

/// A URL from trusted configuration and the one client allowed to reach it.
pub struct Endpoint {
    /// What the endpoint is, in sentences: `the webhook`, `the embedding service`, `OpenAI`.
    label: String,
    url: Url,
    origin: Origin,
    client: reqwest::Client,
    max_redirects: u8,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("label", &self.label)
            .field("origin", &self.origin.ascii_serialization())
            .field("max_redirects", &self.max_redirects)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// Parses and checks the configured URL `raw` and builds its client. `label` names the
    /// endpoint in error sentences (`the webhook`, `OpenAI`).
    pub fn new(label: &str, raw: &str, config: &NetConfig) -> Result<Endpoint, EndpointError> {
        let url =
            parse(raw).map_err(|d| EndpointError::new(EndpointErrorKind::Config, label, d))?;
        let host = match url.host() {
            Some(Host::Domain(name)) => Some(normalise(name)),
            _ => None,
        };
        // The one place besides `Net` that builds a client: no redirects, no proxy, a resolver
        // that knows only the configured name.
        #[allow(clippy::disallowed_methods)]
        let mut builder = reqwest::Client::builder();
        builder = builder
            .dns_resolver(Arc::new(PinnedResolver {
                host,
                lookup: Arc::clone(&config.lookup),
            }))
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .retry(reqwest::retry::never())
            .connect_timeout(config.connect_timeout)
            .pool_idle_timeout(Duration::from_secs(30))
            .user_agent(config.user_agent.clone());
        let setup = |detail: String| EndpointError::new(EndpointErrorKind::Config, label, detail);
        for pem in &config.root_certificates {
            let cert = reqwest::Certificate::from_pem(pem).map_err(|e| {
                setup(format!(
                    "cannot be set up: a configured root certificate is not valid PEM ({e}); fix or remove it."
                ))
            })?;
            builder = builder.add_root_certificate(cert);
        }
        let client = builder.build().map_err(|e| {
            setup(format!(
                "cannot be set up: the HTTP client failed to build ({}); check the TLS setup of this machine.",
                error_chain(&e)
            ))
        })?;
        Ok(Endpoint {
            label: label.to_owned(),
            origin: url.origin(),
            url,
            client,
            max_redirects: config.max_redirects,
        })
    }

    /// The configured URL, as parsed.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The configured client, for callers that stream the answer: redirects off, no proxy,
    /// the connect timeout and user agent of the [`NetConfig`], resolving only the configured
    /// name. Call [`Endpoint::check`] on every URL before sending to it.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    fn error(&self, kind: EndpointErrorKind, detail: String) -> EndpointError {
        EndpointError::new(kind, &self.label, detail)
    }

    /// Whether `url` may be sent to: the configured origin (scheme, host and port), no user
    /// information.
    pub fn check(&self, url: &Url) -> Result<(), EndpointError> {
        if !url.username().is_empty() || url.password().is_some() {
            return Err(self.error(
                EndpointErrorKind::Refused,
                "was not sent a request whose URL carries user information (`user@host`); send credentials in a header instead.".into(),
            ));
        }
        if url.origin() != self.origin {
            return Err(self.error(
                EndpointErrorKind::Refused,
                format!(
                    "was not sent a request for {}: that is not the configured origin {}, and only the configured endpoint is reached.",
                    origin_of(url),
                    self.origin.ascii_serialization()
                ),
            ));
        }
        Ok(())
    }

    /// Sends `req` (whose URL must pass [`Endpoint::check`]), following same-origin redirects
    /// as the module documents, and reads the body up to `req.max_bytes`. A body cut short is
    /// returned with [`Fetched::cut`] set; the caller decides whether that is an error.
    pub async fn send(
        &self,
        cancel: &CancellationToken,
        req: Request,
    ) -> Result<Fetched, EndpointError> {
        self.check(&req.url)?;
        let deadline = Instant::now() + req.timeout;
        let Request {
            method,
            mut url,
            headers,
            body,
            timeout,
            max_bytes,
        } = req;
        let mut redirects = Vec::new();
        loop {
            tracing::debug!(url = %super::redact::url(&url), %method, "configured endpoint request");
            let mut builder = self
                .client
                .request(method.clone(), url.clone())
                .headers(headers.clone());
            if let Some(b) = &body {
                builder = builder.body(b.clone());
            }
            let response = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(self.cancelled()),
                r = tokio::time::timeout_at(deadline, builder.send()) => match r {
                    Err(_) => return Err(self.timed_out(timeout)),
                    Ok(r) => r.map_err(|e| self.request_error(&e))?,
                },
            };
            let status = response.status();
            let location = status
                .is_redirection()
                .then(|| response.headers().get(header::LOCATION))
                .flatten()
                .and_then(|l| l.to_str().ok())
                .and_then(|l| url.join(l).ok());
            if let Some(next) = location {
                self.redirect_refusal(status, &method, &next, redirects.len())?;
                redirects.push(next.clone());
                url = next;
                continue;
            }
            let headers = response.headers().clone();
            let (body, cut) = read_body(cancel, response, max_bytes, deadline, timeout)
                .await
                .map_err(|_| self.cancelled())?;
            if cut == Some(super::Cut::Time(timeout)) {
                return Err(self.timed_out(timeout));
            }
            return Ok(Fetched {
                status,
                headers,
                url,
                body,
                cut,
                redirects,
                unfollowed: None,
            });
        }
    }

    fn cancelled(&self) -> EndpointError {
        self.error(
            EndpointErrorKind::Cancelled,
            "was not waited for: the call was cancelled.".into(),
        )
    }

    fn timed_out(&self, timeout: Duration) -> EndpointError {
        self.error(
            EndpointErrorKind::Timeout,
            format!(
                "did not answer within {} s; try again later, or raise its timeout.",
                timeout.as_secs_f64()
            ),
        )
    }

    /// Why the redirect to `next` is not followed, as the caller's error; `Ok` to follow it.
    fn redirect_refusal(
        &self,
        status: StatusCode,
        method: &Method,
        next: &Url,
        followed: usize,
    ) -> Result<(), EndpointError> {
        let code = status.as_u16();
        let refuse = |detail: String| Err(self.error(EndpointErrorKind::Redirected, detail));
        if next.origin() != self.origin {
            return refuse(format!(
                "redirected elsewhere (HTTP {code} to {}, another origin than the configured {}) and the redirect was not followed; if the service has moved, change the configured URL.",
                super::redact::url(next),
                self.origin.ascii_serialization()
            ));
        }
        if !next.username().is_empty() || next.password().is_some() {
            return refuse(format!(
                "redirected (HTTP {code}) to a URL with user information, which is refused and was not followed; check the configured URL."
            ));
        }
        if followed >= usize::from(self.max_redirects) {
            return refuse(format!(
                "redirected more than {} times, and the last redirect was not followed; check the configured URL.",
                self.max_redirects
            ));
        }
        let keeps_request = matches!(
            status,
            StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
        ) || *method == Method::GET
            || *method == Method::HEAD;
        if !keeps_request {
            return refuse(format!(
                "answered HTTP {code} to a {method}, which would resend it as a GET without its body, so the redirect to {} was not followed; set the configured URL to that address.",
                super::redact::url(next)
            ));
        }
        Ok(())
    }

    fn request_error(&self, e: &reqwest::Error) -> EndpointError {
        let why = error_chain(e);
        if e.is_timeout() {
            self.error(
                EndpointErrorKind::Timeout,
                format!("did not answer in time ({why}); try again later."),
            )
        } else if e.is_connect() {
            self.error(
                EndpointErrorKind::Connect,
                format!(
                    "could not be reached at {} ({why}); check the configured URL, or try again later.",
                    self.origin.ascii_serialization()
                ),
            )
        } else {
            self.error(
                EndpointErrorKind::Request,
                format!(
                    "failed to answer the request ({why}); check the configured URL, or try again later."
                ),
            )
        }
    }
}

/// Parses a configured URL and refuses what a configured endpoint may not be; the error is the
/// predicate of a sentence about the endpoint.
fn parse(raw: &str) -> Result<Url, String> {
    if let Some((at, c)) = raw.char_indices().find(|(_, c)| c.is_control()) {
        return Err(format!(
            "is configured with a URL that contains the control character U+{:04X} at byte {at}; remove it from the configuration.",
            u32::from(c)
        ));
    }
    let url = Url::parse(raw.trim()).map_err(|e| {
        format!(
            "is configured with `{}`, which is not an absolute URL ({e}); write a full address such as https://example.com/path.",
            crate::truncate::cut_line(raw, 200)
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "is configured with a `{}:` URL; only http:// and https:// are supported.",
            url.scheme()
        ));
    }
    if url.host().is_none() {
        return Err(
            "is configured with a URL without a host; write a full address such as https://example.com/path.".into(),
        );
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "is configured with a URL that carries user information (`user@host`), which is refused: it hides the real host and leaks the credential into logs. Remove it and configure the credential as a key instead.".into(),
        );
    }
    Ok(url)
}

/// `scheme://host:port` of `url`, or the URL itself when it has no tuple origin.
fn origin_of(url: &Url) -> String {
    match url.origin() {
        o @ Origin::Tuple(..) => o.ascii_serialization(),
        Origin::Opaque(_) => super::redact::url(url),
    }
}

fn normalise(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// `the webhook` → `The webhook`.
fn capitalised(label: &str) -> String {
    let mut chars = label.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The resolver of a configured endpoint's client: it resolves the configured name only, and
/// hands reqwest exactly the addresses that lookup returned.
#[derive(Debug)]
struct PinnedResolver {
    /// The configured host name (`None` when the URL names an address, which reqwest connects
    /// to without asking a resolver).
    host: Option<String>,
    lookup: Arc<dyn Lookup>,
}

impl reqwest::dns::Resolve for PinnedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let asked = normalise(name.as_str());
        let allowed = self.host.clone();
        let lookup = Arc::clone(&self.lookup);
        Box::pin(async move {
            if allowed.as_deref() != Some(asked.as_str()) {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("{asked} is not the configured host; only the configured endpoint is reached"),
                )
                .into());
            }
            let addrs = lookup.lookup(&asked).await?;
            if addrs.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{asked} resolves to no address"),
                )
                .into());
            }
            let addrs: Vec<SocketAddr> = addrs.into_iter().map(|ip| (ip, 0).into()).collect();
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_urls_are_checked_before_any_client_exists() {
        let config = NetConfig::default();
        // (URL, a fragment the refusal must contain; None for a URL that is accepted)
        let rows: &[(&str, Option<&str>)] = &[
            ("http://127.0.0.1:11434/v1", None),
            ("https://hooks.example/notify", None),
            ("http://[::1]:8080/", None),
            (
                "https://user:pw@hooks.example/notify",
                Some("user information"),
            ),
            (
                "https://user@hooks.example/notify",
                Some("user information"),
            ),
            ("ftp://hooks.example/notify", Some("`ftp:`")),
            ("hooks.example/notify", Some("not an absolute URL")),
            (
                "https://hooks.example/\nHost: evil",
                Some("control character"),
            ),
        ];
        for (raw, refusal) in rows {
            let got = Endpoint::new("the webhook", raw, &config);
            match (refusal, got) {
                (None, Ok(e)) => assert_eq!(
                    e.url().as_str().trim_end_matches('/'),
                    raw.trim_end_matches('/')
                ),
                (Some(want), Err(e)) => {
                    assert_eq!(e.kind(), EndpointErrorKind::Config, "{raw}");
                    let text = e.to_string();
                    assert!(text.contains(want), "{raw}: {text}");
                    assert!(text.starts_with("The webhook "), "{raw}: {text}");
                }
                (None, Err(e)) => panic!("{raw} refused: {e}"),
                (Some(_), Ok(_)) => panic!("{raw} accepted"),
            }
        }
    }

    #[test]
    fn check_keeps_requests_on_the_configured_origin() {
        let e = Endpoint::new("OpenAI", "http://127.0.0.1:8080/v1", &NetConfig::default()).unwrap();
        let ok = Url::parse("http://127.0.0.1:8080/v1/chat/completions").unwrap();
        assert!(e.check(&ok).is_ok());
        for other in [
            "http://127.0.0.1:8081/v1/chat/completions",
            "https://127.0.0.1:8080/v1/chat/completions",
            "http://localhost:8080/v1/chat/completions",
            "http://x@127.0.0.1:8080/v1/chat/completions",
        ] {
            let err = e.check(&Url::parse(other).unwrap()).unwrap_err();
            assert_eq!(err.kind(), EndpointErrorKind::Refused, "{other}");
            assert!(err.to_string().starts_with("OpenAI "), "{other}: {err}");
        }
    }
}
