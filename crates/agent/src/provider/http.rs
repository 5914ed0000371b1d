//! What the three providers share over HTTP: the client, the per-attempt deadline, retries with
//! jittered exponential backoff that honour `Retry-After`, cancellation, reading bodies and
//! event streams, and turning error statuses into [`ProviderError`] sentences.
//!
//! The client is the configured endpoint's ([`tool_core::net::Endpoint::client`]): no proxy
//! from the environment, no redirects (a 3xx is an error that names where it pointed), and
//! every request URL is checked to be on the configured base URL's origin before it is sent.

use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;
use tool_core::CancellationToken;
use tool_core::net::{Endpoint, NetConfig, Url};

use super::sse::{SseEvent, SseParser};
use super::{ApiKey, ProviderConfig, ProviderError, StreamEvent, StreamSink};

/// The most bytes of a successful answer that are read (a runaway body is an error).
const MAX_BODY: usize = 64 * 1024 * 1024;
/// The most bytes of an error body that are read for its message.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// The first backoff; each retry doubles it, before jitter and the cap.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// Why an attempt failed, and whether another one may succeed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Worth another attempt.
    Retry {
        /// What went wrong, as a sentence (it becomes [`StreamEvent::Retrying::reason`]).
        reason: String,
        /// The wait the provider asked for (`Retry-After`).
        after: Option<Duration>,
        /// What error it becomes when no retry is left.
        kind: RetryKind,
    },
    /// Final.
    Fatal(ProviderError),
}

/// The error a transient failure turns into once retries are exhausted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RetryKind {
    /// An error status (429, 5xx…).
    Status(u16),
    /// The attempt ran past its deadline.
    Timeout,
    /// The provider could not be reached, or the connection broke.
    Connect,
}

impl Failure {
    /// A transient failure of the connection or of a stream.
    pub(crate) fn broken(reason: String) -> Failure {
        Failure::Retry {
            reason,
            after: None,
            kind: RetryKind::Connect,
        }
    }

    /// A final [`ProviderError::Malformed`].
    pub(crate) fn malformed(message: String) -> Failure {
        Failure::Fatal(ProviderError::Malformed(message))
    }
}

/// Whether to keep reading an event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Read on.
    Continue,
    /// The provider sent its terminator; stop reading.
    Stop,
}

/// The HTTP side of one provider: client, endpoint, key, deadline and retry settings.
pub(crate) struct Http {
    /// The base URL's endpoint: its client and the origin every request must stay on.
    endpoint: Endpoint,
    /// The provider's name in sentences: `OpenAI`, `Anthropic`, `Gemini`.
    provider: &'static str,
    base_url: String,
    key_env: String,
    /// The auth header value (with its scheme prefix), marked sensitive.
    key_header: Option<HeaderValue>,
    /// Kept only to scrub it out of error text a server might echo.
    key: Option<ApiKey>,
    timeout: Duration,
    max_retries: u32,
    max_backoff: Duration,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("key_env", &self.key_env)
            .field("has_key", &self.key.is_some())
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("max_backoff", &self.max_backoff)
            .finish()
    }
}

impl Http {
    /// Checks `config` and builds the client. `key_prefix` goes before the key in its header
    /// (`Bearer ` for OpenAI).
    pub(crate) fn new(
        provider: &'static str,
        config: &ProviderConfig,
        key_prefix: &str,
    ) -> Result<Http, ProviderError> {
        let base_url = config.base_url.trim().trim_end_matches('/').to_owned();
        match reqwest::Url::parse(&base_url) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => {}
            Ok(_) | Err(_) => {
                return Err(ProviderError::Connect(format!(
                    "The {provider} base URL `{base_url}` is not an http(s) URL; set it to \
                     something like `{}`.",
                    config.kind.default_base_url()
                )));
            }
        }
        let key = config
            .api_key
            .clone()
            .filter(|k| !k.expose().trim().is_empty());
        let key_header = match &key {
            None => None,
            Some(k) => {
                let mut value =
                    HeaderValue::from_str(&format!("{key_prefix}{}", k.expose().trim())).map_err(
                        |_| {
                            ProviderError::Auth(format!(
                                "The {provider} API key has characters an HTTP header cannot carry \
                             (a line break?); check {}.",
                                config.api_key_env
                            ))
                        },
                    )?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        let net =
            NetConfig::default().with_connect_timeout(config.timeout.min(Duration::from_secs(30)));
        let endpoint = Endpoint::new(provider, &base_url, &net)
            .map_err(|e| ProviderError::Connect(e.to_string()))?;
        Ok(Http {
            endpoint,
            provider,
            base_url,
            key_env: config.api_key_env.clone(),
            key_header,
            key,
            timeout: config.timeout,
            max_retries: config.max_retries,
            max_backoff: config.max_backoff,
        })
    }

    /// The endpoint base, without a trailing slash.
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The auth header value, when a key was configured.
    pub(crate) fn key_header(&self) -> Option<&HeaderValue> {
        self.key_header.as_ref()
    }

    /// A POST of `body` as JSON to `url`, which must be on the base URL's origin.
    pub(crate) fn post(&self, url: &str, body: &Value) -> Result<reqwest::RequestBuilder, Failure> {
        let parsed = Url::parse(url).map_err(|e| {
            Failure::Fatal(ProviderError::Connect(format!(
                "The {} request URL `{url}` is not a URL ({e}); check the base URL ({}).",
                self.provider, self.base_url
            )))
        })?;
        self.endpoint
            .check(&parsed)
            .map_err(|e| Failure::Fatal(ProviderError::Connect(e.to_string())))?;
        Ok(self.endpoint.client().post(parsed).json(body))
    }

    /// Runs `attempt` until it succeeds, fails for good, retries run out or `cancel` fires.
    /// Each attempt has the configured deadline; the waits between attempts observe `cancel`.
    pub(crate) async fn run<T, F>(
        &self,
        cancel: &CancellationToken,
        sink: Option<StreamSink<'_>>,
        mut attempt: impl FnMut() -> F,
    ) -> Result<T, ProviderError>
    where
        F: Future<Output = Result<T, Failure>>,
    {
        let mut retries = 0u32;
        loop {
            if cancel.is_cancelled() {
                return Err(ProviderError::Cancelled);
            }
            let outcome = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ProviderError::Cancelled),
                outcome = tokio::time::timeout(self.timeout, attempt()) => outcome,
            };
            let failure = match outcome {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(failure)) => failure,
                Err(_elapsed) => Failure::Retry {
                    reason: format!(
                        "{} did not answer within {}.",
                        self.provider,
                        seconds(self.timeout)
                    ),
                    after: None,
                    kind: RetryKind::Timeout,
                },
            };
            let (reason, after, kind) = match failure {
                Failure::Fatal(error) => return Err(error),
                Failure::Retry {
                    reason,
                    after,
                    kind,
                } => (reason, after, kind),
            };
            if retries >= self.max_retries {
                return Err(self.exhausted(reason, kind, retries + 1));
            }
            retries += 1;
            let wait = after
                .unwrap_or_else(|| backoff(retries, jitter()))
                .min(self.max_backoff);
            tracing::warn!(
                provider = self.provider,
                attempt = retries,
                wait_ms = wait.as_millis() as u64,
                "{reason} Retrying."
            );
            if let Some(sink) = sink {
                sink(StreamEvent::Retrying {
                    attempt: retries,
                    after: wait,
                    reason,
                });
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ProviderError::Cancelled),
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    fn exhausted(&self, reason: String, kind: RetryKind, attempts: u32) -> ProviderError {
        let tries = if attempts == 1 {
            "It was not retried (max_retries is 0)".to_owned()
        } else {
            format!("Gave up after {attempts} attempts")
        };
        match kind {
            RetryKind::Status(429) => ProviderError::Http {
                status: 429,
                message: format!(
                    "{reason} {tries}; wait a minute or check the rate limits of the account \
                     behind {}, then try again.",
                    self.key_env
                ),
            },
            RetryKind::Status(status) => ProviderError::Http {
                status,
                message: format!("{reason} {tries}; try again later."),
            },
            RetryKind::Timeout => ProviderError::Timeout(format!(
                "{reason} {tries}; try again later, or raise the timeout."
            )),
            RetryKind::Connect => ProviderError::Connect(format!(
                "{reason} {tries}; check the base URL ({}) and the network, then try again.",
                self.base_url
            )),
        }
    }

    /// Sends `request`; an error status becomes a [`Failure`] with the provider's message.
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
        model: &str,
    ) -> Result<reqwest::Response, Failure> {
        let mut response = request.send().await.map_err(|e| self.transport(&e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        if status.is_redirection() {
            return Err(Failure::Fatal(self.redirected(status, response.headers())));
        }
        let after = retry_after(response.headers(), SystemTime::now());
        let mut body = Vec::new();
        // The error body only supplies the message; a broken one leaves the status to speak.
        while body.len() < MAX_ERROR_BODY {
            match response.chunk().await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) | Err(_) => break,
            }
        }
        Err(self.status_failure(status, after, &body, model))
    }

    /// Reads a whole successful body.
    pub(crate) async fn body(&self, mut response: reqwest::Response) -> Result<Vec<u8>, Failure> {
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            Failure::broken(format!(
                "The answer from {} broke off: {}.",
                self.provider,
                self.scrub(&error_chain(&e))
            ))
        })? {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(Failure::malformed(format!(
                    "{} sent an answer larger than {} MiB; check that the base URL points at \
                     the {} API.",
                    self.provider,
                    MAX_BODY >> 20,
                    self.provider
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// Reads an event stream, handing each event to `on_event` until it says [`Flow::Stop`] or
    /// the stream ends. Returns whether `on_event` stopped it (saw the terminator).
    pub(crate) async fn events(
        &self,
        mut response: reqwest::Response,
        mut on_event: impl FnMut(SseEvent) -> Result<Flow, Failure>,
    ) -> Result<bool, Failure> {
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
        if is_json {
            let body = self.body(response).await?;
            let detail = ErrorDetail::parse(&body);
            return Err(Failure::malformed(format!(
                "{} answered with plain JSON instead of an event stream{}; check that the base \
                 URL points at the {} API, or turn streaming off.",
                self.provider,
                detail.suffix(|s| self.scrub(s)),
                self.provider
            )));
        }
        let mut parser = SseParser::new();
        let mut received = 0usize;
        loop {
            let chunk = response.chunk().await.map_err(|e| {
                Failure::broken(format!(
                    "The {} stream broke off: {}.",
                    self.provider,
                    self.scrub(&error_chain(&e))
                ))
            })?;
            let Some(chunk) = chunk else {
                return Ok(false);
            };
            received += chunk.len();
            if received > MAX_BODY {
                return Err(Failure::malformed(format!(
                    "The {} stream went past {} MiB; check that the base URL points at the {} \
                     API.",
                    self.provider,
                    MAX_BODY >> 20,
                    self.provider
                )));
            }
            for event in parser.feed(&chunk) {
                if on_event(event)? == Flow::Stop {
                    return Ok(true);
                }
            }
        }
    }

    /// Parses a JSON body, or says the answer was not the provider's format.
    pub(crate) fn json<T: serde::de::DeserializeOwned>(&self, body: &[u8]) -> Result<T, Failure> {
        serde_json::from_slice(body).map_err(|e| {
            Failure::malformed(format!(
                "{} sent an answer that is not its documented JSON ({e}); check that the base \
                 URL ({}) points at the {} API.",
                self.provider, self.base_url, self.provider
            ))
        })
    }

    /// The failure for a stream event that is not the provider's format.
    pub(crate) fn bad_event(&self, what: &str, error: &dyn std::fmt::Display) -> Failure {
        Failure::malformed(format!(
            "{} sent a stream event that is not its documented format ({what}: {error}); check \
             that the base URL ({}) points at the {} API.",
            self.provider, self.base_url, self.provider
        ))
    }

    /// The failure for an error the provider reported inside a stream (Anthropic `event:
    /// error`, an OpenAI `error` chunk).
    pub(crate) fn stream_error(&self, body: &[u8], model: &str) -> Failure {
        let detail = ErrorDetail::parse(body);
        let code = detail.code.as_deref().unwrap_or_default();
        let status = match code {
            "overloaded_error" => 529,
            "rate_limit_error" | "rate_limit_exceeded" => 429,
            "authentication_error" | "invalid_api_key" => 401,
            "permission_error" => 403,
            "not_found_error" | "model_not_found" => 404,
            "invalid_request_error" => 400,
            "request_too_large" => 413,
            // `api_error`, `server_error` and anything unnamed: the server's side broke.
            _ => 500,
        };
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let failure = self.status_failure(status, None, body, model);
        match failure {
            Failure::Retry {
                reason,
                after,
                kind,
            } => Failure::Retry {
                reason: format!("The {} stream reported an error: {reason}", self.provider),
                after,
                kind,
            },
            fatal => fatal,
        }
    }

    /// The error for a redirect: the client follows none, so the provider's answer is final.
    fn redirected(&self, status: StatusCode, headers: &HeaderMap) -> ProviderError {
        let location = headers
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .map(|l| self.scrub(l));
        let to = match &location {
            Some(l) => format!(" to {}", truncate(l, 300)),
            None => String::new(),
        };
        ProviderError::Connect(format!(
            "{} at {} redirected elsewhere (HTTP {}{to}) and the redirect was not followed: \
             requests stay on the configured base URL. If the API has moved, set the base URL \
             to its new address.",
            self.provider,
            self.base_url,
            status.as_u16()
        ))
    }

    fn transport(&self, e: &reqwest::Error) -> Failure {
        let chain = self.scrub(&error_chain(e));
        if e.is_builder() {
            return Failure::Fatal(ProviderError::Connect(format!(
                "Could not build the request to {}: {chain}; check the base URL ({}).",
                self.provider, self.base_url
            )));
        }
        if e.is_timeout() {
            return Failure::Retry {
                reason: format!("{} did not answer in time: {chain}.", self.provider),
                after: None,
                kind: RetryKind::Timeout,
            };
        }
        Failure::broken(format!(
            "Could not reach {} at {}: {chain}.",
            self.provider, self.base_url
        ))
    }

    /// Classifies an error status: auth, transient (retried) or a final HTTP error.
    pub(crate) fn status_failure(
        &self,
        status: StatusCode,
        after: Option<Duration>,
        body: &[u8],
        model: &str,
    ) -> Failure {
        let detail = ErrorDetail::parse(body);
        let code = status.as_u16();
        let answered = format!(
            "{} answered {}{}",
            self.provider,
            status_text(status),
            detail.suffix(|s| self.scrub(s))
        );
        if matches!(code, 401 | 403) || detail.key_invalid() {
            let message = if self.key.is_none() {
                format!(
                    "{answered}: it needs an API key and none was given; set {}.",
                    self.key_env
                )
            } else {
                format!(
                    "{} refused the API key ({code}{}); check {}.",
                    self.provider,
                    detail.message_suffix(": ", |s| self.scrub(s)),
                    self.key_env
                )
            };
            return Failure::Fatal(ProviderError::Auth(message));
        }
        if code == 429 && detail.code.as_deref() == Some("insufficient_quota") {
            return Failure::Fatal(ProviderError::Http {
                status: code,
                message: format!(
                    "{answered}: the account behind {} has no quota left; add credit or use \
                     another key.",
                    self.key_env
                ),
            });
        }
        if matches!(code, 408 | 409 | 429) || status.is_server_error() {
            return Failure::Retry {
                reason: format!("{answered}."),
                after,
                kind: RetryKind::Status(code),
            };
        }
        let mentions_model = detail
            .message
            .as_deref()
            .is_some_and(|m| m.to_ascii_lowercase().contains("model"));
        let hint = if code == 404 {
            format!(
                "check --model (`{model}`) and the base URL ({})",
                self.base_url
            )
        } else if mentions_model {
            format!("check --model (`{model}`)")
        } else {
            "fix what it names and try again".to_owned()
        };
        Failure::Fatal(ProviderError::Http {
            status: code,
            message: format!("{answered}; {hint}."),
        })
    }

    /// Removes the key from text a server sent back.
    fn scrub(&self, text: &str) -> String {
        match &self.key {
            Some(key) if key.expose().trim().len() >= 4 => {
                text.replace(key.expose().trim(), "[redacted]")
            }
            _ => text.to_owned(),
        }
    }
}

/// Ids for tool calls that arrive without one: `{prefix}{process nonce}_{n}`, unique within
/// the process and, through the nonce, very likely across sessions.
#[derive(Debug)]
pub(crate) struct CallIds {
    prefix: String,
    next: std::sync::atomic::AtomicU64,
}

impl CallIds {
    /// A source of ids starting with `prefix`.
    pub(crate) fn new(prefix: &str) -> CallIds {
        let nonce = (jitter() * f64::from(1u32 << 24)) as u32;
        CallIds {
            prefix: format!("{prefix}{nonce:06x}_"),
            next: std::sync::atomic::AtomicU64::new(1),
        }
    }

    /// The next id.
    pub(crate) fn next(&self) -> String {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{}{n}", self.prefix)
    }
}

/// Arguments as JSON text when they are a JSON object, else `{}`: a call the model wrote
/// badly was already answered with an error result, and providers (and the chat templates of
/// local servers) reject history whose arguments are not an object.
pub(crate) fn arguments_object(arguments: &str) -> serde_json::Map<String, Value> {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    }
}

/// A temperature as JSON: through its shortest decimal form, so `0.2f32` goes out as `0.2`
/// rather than `0.20000000298023224`.
pub(crate) fn temperature(t: f32) -> Value {
    let decimal = t.to_string().parse::<f64>().unwrap_or(f64::from(t));
    serde_json::Number::from_f64(decimal).map_or(Value::Null, Value::Number)
}

/// What an error body says, in the shape all three providers share:
/// `{"error": {"message", "type" | "code" | "status", "details"}}`.
#[derive(Debug, Default)]
struct ErrorDetail {
    message: Option<String>,
    /// OpenAI `error.code`/`error.type`, Anthropic `error.type`, Gemini `error.status`.
    code: Option<String>,
    /// Gemini `error.details[].reason`.
    reasons: Vec<String>,
}

impl ErrorDetail {
    fn parse(body: &[u8]) -> ErrorDetail {
        let Ok(value) = serde_json::from_slice::<Value>(body) else {
            let text = String::from_utf8_lossy(body);
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            return ErrorDetail {
                message: (!text.is_empty()).then(|| truncate(&text, 300)),
                ..ErrorDetail::default()
            };
        };
        // Gemini's streaming endpoint wraps the error in a one-element array.
        let value = match value {
            Value::Array(mut items) if !items.is_empty() => items.swap_remove(0),
            other => other,
        };
        let error = value.get("error").unwrap_or(&value);
        let text = |key: &str| error.get(key).and_then(Value::as_str).map(str::to_owned);
        let message = match error {
            Value::String(s) => Some(s.clone()),
            _ => text("message"),
        };
        let code = error
            .get("code")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| text("type"))
            .or_else(|| text("status"));
        let reasons = error
            .get("details")
            .and_then(Value::as_array)
            .map(|details| {
                details
                    .iter()
                    .filter_map(|d| d.get("reason").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        ErrorDetail {
            message: message.map(|m| truncate(m.trim(), 1000)),
            code,
            reasons,
        }
    }

    /// Gemini answers 400 `API_KEY_INVALID` for a wrong key.
    fn key_invalid(&self) -> bool {
        self.reasons.iter().any(|r| r == "API_KEY_INVALID")
    }

    /// ` (message)` or nothing.
    fn suffix(&self, scrub: impl Fn(&str) -> String) -> String {
        match &self.message {
            Some(m) if !m.is_empty() => format!(" ({})", scrub(m).trim_end_matches('.')),
            _ => String::new(),
        }
    }

    fn message_suffix(&self, sep: &str, scrub: impl Fn(&str) -> String) -> String {
        match &self.message {
            Some(m) if !m.is_empty() => format!("{sep}{}", scrub(m).trim_end_matches('.')),
            _ => String::new(),
        }
    }
}

fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

fn status_text(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None if status.as_u16() == 529 => "529 Overloaded".to_owned(),
        None => status.as_u16().to_string(),
    }
}

fn seconds(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0} s")
    } else {
        format!("{secs:.1} s")
    }
}

/// An error and its sources, joined with `: ` (reqwest's own message is terse).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = s.source();
    }
    text
}

/// The wait before retry `retry` (1 for the first): 0.5 s doubled each time, scaled by
/// `jitter` in [0, 1) to between 75 % and 125 %, so clients that failed together do not retry
/// together. The caller caps it at `max_backoff`.
pub(crate) fn backoff(retry: u32, jitter: f64) -> Duration {
    let base = FIRST_BACKOFF.as_secs_f64() * 2f64.powi(retry.saturating_sub(1).min(20) as i32);
    Duration::from_secs_f64(base * (0.75 + 0.5 * jitter.clamp(0.0, 1.0)))
}

/// A number in [0, 1) from the standard library's per-process random hash keys.
fn jitter() -> f64 {
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// The wait a response asks for: `retry-after-ms` (OpenAI), else `Retry-After` as seconds or
/// an HTTP-date (RFC 9110 §10.2.3).
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Parses the three HTTP-date forms RFC 9110 §5.6.7 says a recipient must accept:
/// `Sun, 06 Nov 1994 08:49:37 GMT`, `Sunday, 06-Nov-94 08:49:37 GMT` and
/// `Sun Nov  6 08:49:37 1994`.
pub(crate) fn parse_http_date(text: &str) -> Option<SystemTime> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let mut month = None;
    let mut time = None;
    let mut numbers = Vec::new();
    for token in text
        .split([' ', ',', '-'])
        .filter(|t| !t.is_empty())
        .skip(1)
    {
        let lower = token.to_ascii_lowercase();
        if let Some(m) = MONTHS.iter().position(|m| *m == lower) {
            month = Some(m as u32 + 1);
        } else if token.contains(':') {
            let mut parts = token.split(':').map(|p| p.parse::<u32>().ok());
            let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
            if parts.next().is_some() || h > 23 || m > 59 || s > 60 {
                return None;
            }
            time = Some(h * 3600 + m * 60 + s);
        } else if token.bytes().all(|b| b.is_ascii_digit()) {
            numbers.push((token.len(), token.parse::<u32>().ok()?));
        } else if lower != "gmt" && lower != "utc" {
            return None;
        }
    }
    let [(_, day), (year_len, year)] = numbers[..] else {
        return None;
    };
    let year = match year_len {
        2 if year < 70 => 2000 + year,
        2 => 1900 + year,
        4 => year,
        _ => return None,
    };
    let (month, time) = (month?, time?);
    if !(1..=31).contains(&day) {
        return None;
    }
    let days = days_from_civil(i64::from(year), month, day);
    let secs = days * 86_400 + i64::from(time);
    let secs = u64::try_from(secs).ok()?;
    UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let month = i64::from(month);
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_in_seconds() {
        let now = SystemTime::now();
        assert_eq!(
            retry_after(&headers(&[("retry-after", "7")]), now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", " 0.5 ")]), now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "-3")]), now), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }

    #[test]
    fn retry_after_ms_wins_over_retry_after() {
        let h = headers(&[("retry-after-ms", "1250"), ("retry-after", "9")]);
        assert_eq!(
            retry_after(&h, SystemTime::now()),
            Some(Duration::from_millis(1250))
        );
    }

    #[test]
    fn retry_after_as_an_http_date_counts_from_now() {
        // 784111777 is Sun, 06 Nov 1994 08:49:37 GMT (RFC 9110's example).
        let date = UNIX_EPOCH + Duration::from_secs(784_111_777);
        for form in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(parse_http_date(form), Some(date), "{form}");
        }
        let now = date - Duration::from_secs(30);
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]),
                now
            ),
            Some(Duration::from_secs(30))
        );
        // A date in the past means "now".
        let later = date + Duration::from_secs(5);
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]),
                later
            ),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn http_dates_across_leap_years_and_centuries() {
        let at = |s: &str| {
            parse_http_date(s)
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_secs())
        };
        assert_eq!(at("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(at("Tue, 29 Feb 2000 12:00:00 GMT"), Some(951_825_600));
        assert_eq!(at("Wed, 21 Oct 2015 07:28:00 GMT"), Some(1_445_412_480));
        assert_eq!(at("Wed, 21 Foo 2015 07:28:00 GMT"), None);
        assert_eq!(at("Wed, 21 Oct 2015 25:28:00 GMT"), None);
        assert_eq!(at("Wed, 21 Oct 2015"), None);
    }

    #[test]
    fn backoff_doubles_within_its_jitter_band() {
        assert_eq!(backoff(1, 0.5), Duration::from_millis(500));
        assert_eq!(backoff(2, 0.5), Duration::from_secs(1));
        assert_eq!(backoff(3, 0.0), Duration::from_millis(1500));
        assert_eq!(backoff(3, 1.0), Duration::from_millis(2500));
        assert!(backoff(1000, 0.9) > Duration::from_secs(3600));
        let j = jitter();
        assert!((0.0..1.0).contains(&j));
    }

    #[test]
    fn error_details_of_each_provider() {
        let openai = br#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        let d = ErrorDetail::parse(openai);
        assert_eq!(d.message.as_deref(), Some("Incorrect API key provided"));
        assert_eq!(d.code.as_deref(), Some("invalid_api_key"));
        let anthropic =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let d = ErrorDetail::parse(anthropic);
        assert_eq!(d.code.as_deref(), Some("overloaded_error"));
        let gemini = br#"[{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}]"#;
        let d = ErrorDetail::parse(gemini);
        assert!(d.key_invalid());
        assert_eq!(d.code.as_deref(), Some("INVALID_ARGUMENT"));
        let html = b"<html>\n  <body>Bad   Gateway</body></html>";
        assert_eq!(
            ErrorDetail::parse(html).message.as_deref(),
            Some("<html> <body>Bad Gateway</body></html>")
        );
    }
}
