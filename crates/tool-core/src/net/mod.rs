//! The one outbound HTTP path of Toolshed (cargo feature `net`).
//!
//! Every request a tool, the agent or a store sends goes through this module: [`Net::send`] for
//! URLs a model wrote, [`Endpoint`] for URLs from the user's trusted configuration (a webhook,
//! an embeddings service, an LLM provider). Nothing else builds a `reqwest::Client`: clippy
//! refuses `reqwest::Client::new`/`builder` outside this module, and an invariant test refuses
//! the text in any crate's sources.
//!
//! # URLs a model wrote: [`Net`]
//!
//! One URL parser (the `url` crate, which reqwest itself uses) reads the URL for the checks and
//! for the request, so the two cannot disagree about the host. A request goes out only when:
//!
//! 1. the scheme is `https`, or `http` and the policy sets `allow_http`;
//! 2. the URL carries no user information (`https://allowed@evil` hides its real host);
//! 3. the host is not on the policy's deny list;
//! 4. the host, if an address literal (in any spelling the URL standard accepts: `2130706433`,
//!    `0x7f.1`, `0177.0.0.1`, `127.1`, `[::ffff:127.0.0.1]`), is public;
//! 5. every address the host name resolves to is public (the checked resolver), and the
//!    connection goes to one of exactly those addresses.
//!
//! Redirects are not followed by reqwest: [`Net::send`] follows at most `max_redirects` by hand,
//! and every hop passes the same checks. A hop to a host the allow list does not cover (when the
//! policy is not `full`) is not followed; the caller gets the redirect and says so. Bodies are
//! read chunk by chunk after decompression and cut at a byte cap; the whole exchange runs under
//! one deadline and the caller's cancellation. No proxy from the environment is used: a proxy
//! would resolve names itself.
//!
//! # URLs from configuration: [`Endpoint`]
//!
//! The configured host may be loopback or private (the user's decision), but the request never
//! leaves it: no redirect to another origin is followed, user information is refused, no proxy
//! is used, the client resolves only the configured name, bodies are capped, and the deadline
//! and cancellation hold. See the [`Endpoint`] documentation for the redirect rules.

pub mod addr;
mod endpoint;
pub mod redact;
mod resolve;

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::{Autonomy, CancellationToken, Policy, ToolContext, ToolError};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;
use url::Host;

pub use endpoint::{Endpoint, EndpointError, EndpointErrorKind};
/// Re-exported so that callers name methods, statuses, headers and URLs with the versions this
/// module sends with, without a dependency of their own.
pub use reqwest::{Method, StatusCode, header};
pub use resolve::{Lookup, LookupFuture, StaticLookup, SystemLookup};
pub use url::Url;

use resolve::Blocked;
use resolve::{CheckedResolver, Exempt};

/// How requests reach the network: the resolver, loopback exemptions for tests, redirect
/// limit, connect timeout, user agent and extra root certificates. Shared by [`Net`] and
/// [`Endpoint`].
#[derive(Debug, Clone)]
pub struct NetConfig {
    pub(crate) lookup: Arc<dyn Lookup>,
    pub(crate) exempt: Vec<IpAddr>,
    pub(crate) max_redirects: u8,
    pub(crate) connect_timeout: Duration,
    pub(crate) user_agent: String,
    pub(crate) root_certificates: Vec<Vec<u8>>,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            lookup: Arc::new(SystemLookup),
            exempt: Vec::new(),
            max_redirects: 5,
            connect_timeout: Duration::from_secs(10),
            user_agent: concat!("toolshed/", env!("CARGO_PKG_VERSION")).to_owned(),
            root_certificates: Vec::new(),
        }
    }
}

impl NetConfig {
    /// Resolves host names with `lookup` instead of the operating system.
    pub fn with_lookup(mut self, lookup: Arc<dyn Lookup>) -> Self {
        self.lookup = lookup;
        self
    }

    /// For tests against servers on this machine: lets these loopback addresses through the
    /// address checks (and nothing else: every other private, local or special address stays
    /// refused). Fails, naming the address, for anything outside `127.0.0.0/8` and `::1`.
    pub fn allow_loopback_for_tests(mut self, addrs: &[IpAddr]) -> Result<Self, String> {
        for addr in addrs {
            let loopback = match addr {
                IpAddr::V4(v4) => v4.is_loopback(),
                IpAddr::V6(v6) => v6.is_loopback(),
            };
            if !loopback {
                return Err(format!(
                    "{addr} is not a loopback address; only 127.0.0.0/8 and ::1 can be exempted, for tests"
                ));
            }
        }
        self.exempt = addrs.to_vec();
        Ok(self)
    }

    /// The most redirects followed per request (5 by default; 0 follows none).
    pub fn with_max_redirects(mut self, n: u8) -> Self {
        self.max_redirects = n;
        self
    }

    /// Adds a trusted root certificate (PEM), e.g. a company CA or a test server's.
    pub fn with_root_certificate_pem(mut self, pem: Vec<u8>) -> Self {
        self.root_certificates.push(pem);
        self
    }

    /// How long to wait for a connection (10 s by default).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The `User-Agent` header sent with every request.
    pub fn with_user_agent(mut self, agent: impl Into<String>) -> Self {
        self.user_agent = agent.into();
        self
    }
}

/// The HTTP client for URLs a model wrote (the web tools), with the address checks, built on
/// first use. See the module documentation for what [`Net::send`] enforces.
#[derive(Debug)]
pub struct Net {
    config: NetConfig,
    client: OnceLock<Result<reqwest::Client, String>>,
}

/// One request, before the checks.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method; redirects may turn it into a `GET` (see [`Net::send`]).
    pub method: Method,
    /// Where it goes.
    pub url: Url,
    /// The request headers (credential headers are dropped when a redirect changes origin).
    pub headers: HeaderMap,
    /// The body, if any.
    pub body: Option<Vec<u8>>,
    /// The deadline for the whole exchange, body included.
    pub timeout: Duration,
    /// The most body bytes kept (after decompression).
    pub max_bytes: usize,
}

impl Request {
    /// A `GET` of `url` with no headers, under `timeout`, keeping at most `max_bytes`.
    pub fn get(url: Url, timeout: Duration, max_bytes: usize) -> Self {
        Request::new(Method::GET, url, timeout, max_bytes)
    }

    /// A `method` request to `url` with no headers and no body.
    pub fn new(method: Method, url: Url, timeout: Duration, max_bytes: usize) -> Self {
        Request {
            method,
            url,
            headers: HeaderMap::new(),
            body: None,
            timeout,
            max_bytes,
        }
    }

    /// Adds a header; a value that carries a credential (by the header's name) is marked
    /// sensitive so it never shows in debug output.
    pub fn header(mut self, name: HeaderName, value: &str) -> Result<Self, ToolError> {
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            ToolError::Failed(format!(
                "The value for the {name} header is not a valid header value; check the configured key."
            ))
        })?;
        if redact::is_secret_name(name.as_str()) {
            value.set_sensitive(true);
        }
        self.headers.insert(name, value);
        Ok(self)
    }

    /// Sets `body` as the JSON body, with its content type.
    pub fn json(mut self, body: &serde_json::Value) -> Self {
        self.headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        self.body = Some(body.to_string().into_bytes());
        self
    }
}

/// Why a body was cut short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cut {
    /// It was longer than the cap (bytes).
    Size(usize),
    /// The deadline passed while it was still arriving.
    Time(Duration),
    /// The connection broke (or the compressed stream was corrupt) part way.
    Broken(String),
}

impl Cut {
    /// A sentence for the model.
    pub fn describe(&self) -> String {
        match self {
            Cut::Size(n) => format!("the body was cut at the {n}-byte limit"),
            Cut::Time(d) => format!(
                "the server was still sending after {} s, so the body was cut there",
                d.as_secs()
            ),
            Cut::Broken(why) => format!("the body broke off part way ({why})"),
        }
    }
}

/// A redirect that was not followed, and why.
#[derive(Debug, Clone)]
pub struct Unfollowed {
    /// Where the redirect pointed.
    pub location: Url,
    /// Why it was not followed, as a clause for a sentence.
    pub why: String,
    /// Whether the policy refused the hop (its host is not on the allow list), as opposed to
    /// a limit (too many redirects): a tool that fails on it reports a `Denied`.
    pub by_policy: bool,
}

/// A response, after redirects.
#[derive(Debug)]
pub struct Fetched {
    /// The status of the last response.
    pub status: StatusCode,
    /// The headers of the last response.
    pub headers: HeaderMap,
    /// The URL of the last response (after the redirects followed).
    pub url: Url,
    /// The body, at most the request's `max_bytes`.
    pub body: Vec<u8>,
    /// Why the body is incomplete, when it is.
    pub cut: Option<Cut>,
    /// The URLs redirected through, in order (the first request's URL not included).
    pub redirects: Vec<Url>,
    /// A redirect that was not followed, when the last response is one.
    pub unfollowed: Option<Unfollowed>,
}

impl Fetched {
    /// The media type without parameters, lower case (`text/html`).
    pub fn media_type(&self) -> Option<String> {
        let ct = self.headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
        Some(ct.split(';').next()?.trim().to_ascii_lowercase())
    }

    /// The `charset` parameter of the content type.
    pub fn charset(&self) -> Option<String> {
        let ct = self.headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
        ct.split(';').skip(1).find_map(|p| {
            let (k, v) = p.split_once('=')?;
            (k.trim().eq_ignore_ascii_case("charset"))
                .then(|| v.trim().trim_matches('"').to_ascii_lowercase())
        })
    }
}

/// Parses and checks `raw`, a URL a model wrote (the static half of the checks: scheme, user
/// information, deny list, address literals). `field` is the argument's JSON pointer for error messages.
pub fn check_url(
    raw: &str,
    policy: &Policy,
    config: &NetConfig,
    field: &str,
) -> Result<Url, ToolError> {
    let invalid = |message: String| ToolError::InvalidArgs {
        path: field.to_owned(),
        message,
    };
    // The URL parser silently removes tabs and line breaks anywhere and other control
    // characters at the ends, so `https://a.example/x\r\nHost: b` would be fetched as some
    // other URL than the one written. Refuse them before parsing; percent-encoded ones are data.
    if let Some((at, c)) = raw.char_indices().find(|(_, c)| c.is_control()) {
        let encoded: String = c
            .encode_utf8(&mut [0; 4])
            .bytes()
            .map(|b| format!("%{b:02X}"))
            .collect();
        return Err(invalid(format!(
            "the URL contains the control character U+{:04X} ({}) at byte {at}; remove it (a URL is one line, with no raw tabs or line breaks), or write it percent-encoded ({encoded}) if it belongs in the URL",
            u32::from(c),
            control_name(c),
        )));
    }
    let url = Url::parse(raw.trim()).map_err(|e| {
        invalid(format!(
            "`{}` is not an absolute URL ({e}); give a full address such as https://example.com/page",
            shorten(raw)
        ))
    })?;
    check_parsed(&url, policy, config).map_err(|e| match e {
        ToolError::Denied(m) => ToolError::Denied(m),
        ToolError::InvalidArgs { message, .. } => invalid(message),
        other => other,
    })?;
    Ok(url)
}

fn check_parsed(url: &Url, policy: &Policy, config: &NetConfig) -> Result<(), ToolError> {
    let invalid = |message: String| ToolError::InvalidArgs {
        path: String::new(),
        message,
    };
    match url.scheme() {
        "https" => {}
        "http" if policy.allow_http => {}
        "http" => {
            return Err(ToolError::Denied(format!(
                "plain http:// is refused by the policy; use https://{}, or ask the user to set policy.allow_http",
                url.as_str().trim_start_matches("http://")
            )));
        }
        other => {
            return Err(invalid(format!(
                "the scheme `{other}:` is not supported; web tools fetch https:// URLs{}",
                if policy.allow_http {
                    " (and http://)"
                } else {
                    ""
                }
            )));
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ToolError::Denied(
            "URLs with user information (`user@host`) are refused: it hides the real host; send credentials in a header instead".into(),
        ));
    }
    let host = url
        .host()
        .ok_or_else(|| invalid("the URL has no host".into()))?;
    let name = host_name(url);
    if policy.host_denied(&name) {
        return Err(ToolError::Denied(format!(
            "{name} is on the denied host list (policy.denied_hosts)"
        )));
    }
    let exempt = Exempt(config.exempt.clone());
    let literal = match host {
        Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
        Host::Ipv6(v6) => Some(IpAddr::V6(v6)),
        Host::Domain(d) => {
            let d = d.trim_end_matches('.');
            if d == "localhost" || d.ends_with(".localhost") {
                return Err(ToolError::Denied(format!(
                    "{d} always means this machine; web tools only reach public addresses"
                )));
            }
            None
        }
    };
    if let Some(ip) = literal {
        exempt
            .check(&ip.to_string(), ip)
            .map_err(|b| ToolError::Denied(b.to_string()))?;
    }
    Ok(())
}

/// A short name for a control character in messages.
fn control_name(c: char) -> &'static str {
    match c {
        '\0' => "NUL",
        '\t' => "tab",
        '\n' => "line feed",
        '\r' => "carriage return",
        '\u{1b}' => "escape",
        '\u{7f}' => "delete",
        c if u32::from(c) < 0x20 => "a C0 control",
        _ => "a C1 control",
    }
}

/// The host as the policy sees it: lower case, punycode, IPv6 without brackets.
pub fn host_name(url: &Url) -> String {
    match url.host() {
        Some(Host::Ipv6(v6)) => v6.to_string(),
        Some(h) => h.to_string(),
        None => String::new(),
    }
}

fn shorten(s: &str) -> String {
    crate::truncate::cut_line(s, 200).into_owned()
}

impl Net {
    /// A client with `config`; nothing is built or resolved until the first request.
    pub fn new(config: NetConfig) -> Self {
        Net {
            config,
            client: OnceLock::new(),
        }
    }

    /// The configuration this client was made with.
    pub fn config(&self) -> &NetConfig {
        &self.config
    }

    fn client(&self) -> Result<&reqwest::Client, ToolError> {
        let built = self.client.get_or_init(|| {
            // The one client for URLs a model wrote: the checked resolver, no proxy, no
            // automatic redirects. Everything else builds its client in `Endpoint`.
            #[allow(clippy::disallowed_methods)]
            let builder = reqwest::Client::builder();
            let mut builder = builder
                .dns_resolver(Arc::new(CheckedResolver {
                    lookup: Arc::clone(&self.config.lookup),
                    exempt: Exempt(self.config.exempt.clone()),
                }))
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .referer(false)
                .retry(reqwest::retry::never())
                .connect_timeout(self.config.connect_timeout)
                .pool_idle_timeout(Duration::from_secs(30))
                .user_agent(self.config.user_agent.clone());
            for pem in &self.config.root_certificates {
                let cert = reqwest::Certificate::from_pem(pem)
                    .map_err(|e| format!("a configured root certificate is not valid PEM: {e}"))?;
                builder = builder.add_root_certificate(cert);
            }
            builder.build().map_err(|e| e.to_string())
        });
        built.as_ref().map_err(|e| {
            ToolError::Failed(format!(
                "The HTTP client could not be set up: {e}. Fix the web configuration."
            ))
        })
    }

    /// Resolves the host of `url` and checks every address, without connecting: for URLs handed
    /// to another program (a desktop browser), which resolves the name again itself.
    pub async fn check_resolves(&self, url: &Url) -> Result<(), ToolError> {
        let Some(Host::Domain(name)) = url.host() else {
            return Ok(());
        };
        let addrs = self.config.lookup.lookup(name).await.map_err(|e| {
            ToolError::Failed(format!("{name} does not resolve ({e}); check the address."))
        })?;
        let exempt = Exempt(self.config.exempt.clone());
        for addr in addrs {
            exempt
                .check(name, addr)
                .map_err(|b| ToolError::Denied(format!("{b}.")))?;
        }
        Ok(())
    }

    /// Sends `req`, following redirects by hand, and reads the body up to its cap.
    pub async fn send(&self, ctx: &ToolContext, req: Request) -> Result<Fetched, ToolError> {
        let client = self.client()?;
        let deadline = Instant::now() + req.timeout;
        let first_host = host_name(&req.url);
        let mut method = req.method.clone();
        let mut body = req.body.clone();
        let mut headers = req.headers.clone();
        let mut url = req.url.clone();
        let mut redirects = Vec::new();
        loop {
            check_parsed(&url, &ctx.policy, &self.config)?;
            tracing::debug!(url = %redact::url(&url), %method, "web request");
            let mut builder = client
                .request(method.clone(), url.clone())
                .headers(headers.clone());
            if let Some(b) = &body {
                builder = builder.body(b.clone());
            }
            let exchange = builder.send();
            let response = tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
                r = tokio::time::timeout_at(deadline, exchange) => match r {
                    Err(_) => return Err(ToolError::Timeout(format!(
                        "{} did not answer within {} s; try again later, or give a longer timeout_secs",
                        host_name(&url), req.timeout.as_secs()
                    ))),
                    Ok(r) => r.map_err(|e| match request_error(&url, e) {
                        ToolError::Denied(m) if !redirects.is_empty() => ToolError::Denied(
                            format!("The server redirected to {url}, refused: {m}")
                        ),
                        other => other,
                    })?,
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
                let unfollowed = if redirects.len() >= usize::from(self.config.max_redirects) {
                    Some((
                        format!(
                            "it is redirect number {} and at most {} are followed",
                            redirects.len() + 1,
                            self.config.max_redirects
                        ),
                        false,
                    ))
                } else {
                    self.hop_refusal(ctx, &first_host, &next)?
                        .map(|why| (why, true))
                };
                if let Some((why, by_policy)) = unfollowed {
                    let headers = response.headers().clone();
                    return Ok(Fetched {
                        status,
                        headers,
                        url,
                        body: Vec::new(),
                        cut: None,
                        redirects,
                        unfollowed: Some(Unfollowed {
                            location: next,
                            why,
                            by_policy,
                        }),
                    });
                }
                // 303 always, and 301/302 after a POST, continue as a GET without a body.
                if status == StatusCode::SEE_OTHER
                    || (method == Method::POST
                        && matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND))
                {
                    if method != Method::HEAD {
                        method = Method::GET;
                    }
                    body = None;
                    headers.remove(header::CONTENT_TYPE);
                }
                // Credentials never follow a redirect to another origin.
                if next.origin() != url.origin() {
                    let secret: Vec<HeaderName> = headers
                        .keys()
                        .filter(|n| redact::is_secret_name(n.as_str()))
                        .cloned()
                        .collect();
                    for name in secret {
                        headers.remove(name);
                    }
                }
                redirects.push(next.clone());
                url = next;
                continue;
            }
            let headers = response.headers().clone();
            let (body, cut) =
                read_body(&ctx.cancel, response, req.max_bytes, deadline, req.timeout).await?;
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

    /// Why a redirect to `next` is not followed, if it is not; `Err` when the hop is refused
    /// outright (a private address, a denied host, http without allow_http).
    fn hop_refusal(
        &self,
        ctx: &ToolContext,
        first_host: &str,
        next: &Url,
    ) -> Result<Option<String>, ToolError> {
        check_parsed(next, &ctx.policy, &self.config).map_err(|e| match e {
            ToolError::Denied(m) => {
                ToolError::Denied(format!("The server redirected to {next}, refused: {m}."))
            }
            ToolError::InvalidArgs { message, .. } => ToolError::Failed(format!(
                "The server redirected to {next}, refused: {message}."
            )),
            other => other,
        })?;
        let host = host_name(next);
        if host != first_host
            && ctx.policy.autonomy != Autonomy::Full
            && !ctx.policy.host_allowed(&host)
        {
            return Ok(Some(format!(
                "{host} is not on the host allow list (policy.allowed_hosts); call the tool again with that URL to ask for it"
            )));
        }
        Ok(None)
    }
}

/// Reads the body chunk by chunk (decompressed), up to `max` bytes and the deadline.
async fn read_body(
    cancel: &CancellationToken,
    mut response: reqwest::Response,
    max: usize,
    deadline: Instant,
    timeout: Duration,
) -> Result<(Vec<u8>, Option<Cut>), ToolError> {
    let mut body = Vec::new();
    loop {
        let chunk = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ToolError::Cancelled),
            _ = tokio::time::sleep_until(deadline) => return Ok((body, Some(Cut::Time(timeout)))),
            c = response.chunk() => c,
        };
        match chunk {
            Ok(Some(bytes)) => {
                let room = max - body.len();
                if bytes.len() > room {
                    body.extend_from_slice(&bytes[..room]);
                    return Ok((body, Some(Cut::Size(max))));
                }
                body.extend_from_slice(&bytes);
            }
            Ok(None) => return Ok((body, None)),
            Err(e) => {
                let why = error_chain(&e);
                return Ok((body, Some(Cut::Broken(why))));
            }
        }
    }
}

/// The innermost useful messages of an error chain, joined.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = err.source();
    }
    parts
        .into_iter()
        .filter(|p| !p.starts_with("error sending request") && !p.starts_with("client error"))
        .collect::<Vec<_>>()
        .join(": ")
}

fn request_error(url: &Url, e: reqwest::Error) -> ToolError {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(err) = cur {
        if let Some(blocked) = err.downcast_ref::<Blocked>() {
            return ToolError::Denied(format!("{blocked}."));
        }
        cur = err.source();
    }
    let host = host_name(url);
    let why = error_chain(&e);
    if e.is_timeout() {
        ToolError::Timeout(format!(
            "{host} did not answer in time ({why}); try again later"
        ))
    } else if e.is_connect() {
        ToolError::Failed(format!(
            "Could not connect to {host}: {why}. Check the address, or try again later."
        ))
    } else {
        ToolError::Failed(format!(
            "The request to {host} failed: {why}. Check the URL, or try again later."
        ))
    }
}
