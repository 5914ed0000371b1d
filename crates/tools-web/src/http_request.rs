use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};

use crate::config::Shared;
use crate::net::{self, Request, redact};

/// Arguments of `http_request`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpRequestArgs {
    /// The full URL, such as `https://api.example.com/v1/items?page=2`. Only https:// unless
    /// the policy allows http; only public hosts.
    pub url: String,
    /// The HTTP method: GET (default), HEAD, POST, PUT, PATCH, DELETE or OPTIONS.
    #[serde(default)]
    pub method: Option<String>,
    /// Request headers by name, such as `{"Accept": "application/json"}`. Host, Content-Length,
    /// Transfer-Encoding, Connection and proxy headers are set by the client and refused here.
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    /// The request body, sent as given (set a Content-Type header to match).
    #[serde(default)]
    pub body: Option<String>,
    /// Seconds the whole exchange may take, body included (1 to 300, default 30).
    #[serde(default)]
    #[schemars(range(min = 1, max = 300))]
    pub timeout_secs: Option<u64>,
}

/// `http_request`: one HTTP request to a public host.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    shared: Arc<Shared>,
}

impl HttpRequest {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        HttpRequest { shared }
    }
}

const METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// Headers the client owns: letting the model set them would let it smuggle a second request
/// or point the request at another virtual host than the one checked.
const RESERVED: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "expect",
];

struct Checked {
    method: Method,
    headers: HeaderMap,
    timeout: Duration,
}

fn check(args: &HttpRequestArgs) -> Result<Checked, ToolError> {
    let invalid = |path: &str, message: String| ToolError::InvalidArgs {
        path: path.into(),
        message,
    };
    let method = match &args.method {
        None => Method::GET,
        Some(m) => {
            let upper = m.trim().to_ascii_uppercase();
            if !METHODS.contains(&upper.as_str()) {
                return Err(invalid(
                    "/method",
                    format!(
                        "`{m}` is not a supported method; use one of {}",
                        METHODS.join(", ")
                    ),
                ));
            }
            Method::from_bytes(upper.as_bytes())
                .map_err(|_| invalid("/method", "bad method".into()))?
        }
    };
    let mut headers = HeaderMap::new();
    for (name, value) in args.headers.iter().flatten() {
        let path = format!("/headers/{name}");
        let header = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| invalid(&path, format!("`{name}` is not a valid header name")))?;
        if RESERVED.contains(&header.as_str()) || header.as_str().starts_with("proxy-") {
            return Err(invalid(
                &path,
                format!("the {header} header is set by the HTTP client; leave it out"),
            ));
        }
        let value = HeaderValue::from_str(value).map_err(|_| {
            invalid(
                &path,
                "the value holds characters a header cannot (such as a line break); send it in the body instead".into(),
            )
        })?;
        headers.append(header, value);
    }
    if args.body.is_some() && matches!(method, Method::GET | Method::HEAD) {
        return Err(invalid(
            "/body",
            format!("a {method} request has no body; use POST, PUT or PATCH to send one"),
        ));
    }
    let secs = args.timeout_secs.unwrap_or(30);
    if !(1..=300).contains(&secs) {
        return Err(invalid(
            "/timeout_secs",
            format!("{secs} is out of range; give 1 to 300 seconds"),
        ));
    }
    Ok(Checked {
        method,
        headers,
        timeout: Duration::from_secs(secs),
    })
}

#[async_trait]
impl Tool for HttpRequest {
    const NAME: &'static str = "http_request";
    type Args = HttpRequestArgs;

    fn description(&self) -> String {
        "Send one HTTP request to a public host and get the status, the response headers \
         (credentials redacted) and the body (text, cut at the size limit). Redirects are \
         followed, each hop re-checked. Use web_fetch to read a web page as Markdown."
            .into()
    }

    fn annotations(&self) -> Annotations {
        // POST, PUT and DELETE change things elsewhere.
        Annotations::ADDITIVE.open_world(true)
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        check(args)?;
        let url = net::check_url(&args.url, &ctx.policy, self.shared.net.config(), "/url")?;
        Ok(vec![Access::Network {
            host: net::host_name(&url),
        }])
    }

    fn timeout(&self, args: &Self::Args) -> Option<Duration> {
        // The tool keeps its own deadline and returns what arrived; the stack's comes later.
        Some(Duration::from_secs(
            args.timeout_secs.unwrap_or(30).clamp(1, 300) + 5,
        ))
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let checked = check(&args)?;
        let url = net::check_url(&args.url, &ctx.policy, self.shared.net.config(), "/url")?;
        let request = Request {
            method: checked.method.clone(),
            url,
            headers: checked.headers,
            body: args.body.map(String::into_bytes),
            timeout: checked.timeout,
            max_bytes: self.shared.max_response_bytes,
        };
        let fetched = self.shared.net.send(ctx, request).await?;
        let headers = redact::headers(&fetched.headers);
        let mut text = format!(
            "HTTP {} {}\n",
            fetched.status.as_u16(),
            fetched.status.canonical_reason().unwrap_or("")
        );
        for (name, value) in &headers {
            text.push_str(&format!("{name}: {value}\n"));
        }
        let mut notes = Vec::new();
        if !fetched.redirects.is_empty() {
            notes.push(format!(
                "Followed {} redirect(s); the response is from {}.",
                fetched.redirects.len(),
                fetched.url
            ));
        }
        if let Some(u) = &fetched.unfollowed {
            notes.push(format!(
                "The redirect to {} was not followed: {}.",
                u.location, u.why
            ));
        }
        let (body_text, binary) = match std::str::from_utf8(&fetched.body) {
            Ok(t) => (t.to_owned(), false),
            // A cut may split a character; keep the valid prefix.
            Err(e) if e.error_len().is_none() => (
                String::from_utf8_lossy(&fetched.body[..e.valid_up_to()]).into_owned(),
                false,
            ),
            Err(_) => (String::new(), true),
        };
        if binary {
            notes.push(format!(
                "The body is {} bytes of binary data ({}), not shown.",
                fetched.body.len(),
                fetched
                    .media_type()
                    .unwrap_or_else(|| "no content type".into())
            ));
        }
        if let Some(cut) = &fetched.cut {
            notes.push(format!("Note: {}.", cut.describe()));
        }
        text.push('\n');
        text.push_str(&body_text);
        if !notes.is_empty() {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push('\n');
            text.push_str(&notes.join("\n"));
        }
        let structured = json!({
            "status": fetched.status.as_u16(),
            "url": fetched.url.as_str(),
            "headers": headers.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
            "body_bytes": fetched.body.len(),
            "binary": binary,
            "redirects": fetched.redirects.iter().map(|u| u.as_str()).collect::<Vec<_>>(),
            "unfollowed_redirect": fetched.unfollowed.as_ref().map(|u| u.location.as_str()),
            "cut": fetched.cut.as_ref().map(|c| c.describe()),
        });
        Ok(ToolOutput::text(text).with_structured(structured))
    }
}
