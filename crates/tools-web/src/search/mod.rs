//! The search providers behind `web_search`: which ones exist, how they are configured, and the
//! parts they share (building a request, normalising a result, reading an error answer).
//!
//! Each provider module builds its request exactly as that API documents it and reads its
//! documented answer into [`Answer`]; everything after that (cleaning titles and snippets,
//! dropping non-web URLs, capping the count) happens once, in [`normalise`].

mod brave;
mod duckduckgo;
mod exa;
mod firecrawl;
mod jina;
mod perplexity;
mod searxng;
mod tavily;

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use reqwest::Method;
use reqwest::header::{self, HeaderMap, HeaderName};
use serde::Deserialize;
use serde_json::Value;
use tool_core::schemars::{self, JsonSchema};
use url::Url;

use crate::net::Request;

/// A web search provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Brave Search API (key in `BRAVE_API_KEY`).
    Brave,
    /// Tavily (key in `TAVILY_API_KEY`).
    Tavily,
    /// Exa (key in `EXA_API_KEY`).
    Exa,
    /// Jina Search, s.jina.ai (key in `JINA_API_KEY`).
    Jina,
    /// A SearXNG instance (its address in `SEARXNG_URL`; no key).
    Searxng,
    /// DuckDuckGo's HTML page (no key).
    Duckduckgo,
    /// Perplexity Sonar: results plus a written answer (key in `PERPLEXITY_API_KEY`).
    Perplexity,
    /// Firecrawl search (key in `FIRECRAWL_API_KEY`).
    Firecrawl,
}

impl Provider {
    /// Every provider, in the default fallback order.
    pub const ALL: [Provider; 8] = [
        Provider::Brave,
        Provider::Tavily,
        Provider::Exa,
        Provider::Perplexity,
        Provider::Firecrawl,
        Provider::Jina,
        Provider::Searxng,
        Provider::Duckduckgo,
    ];

    /// The name the model passes as `provider` (`brave`, `duckduckgo`).
    pub fn name(self) -> &'static str {
        match self {
            Provider::Brave => "brave",
            Provider::Tavily => "tavily",
            Provider::Exa => "exa",
            Provider::Jina => "jina",
            Provider::Searxng => "searxng",
            Provider::Duckduckgo => "duckduckgo",
            Provider::Perplexity => "perplexity",
            Provider::Firecrawl => "firecrawl",
        }
    }

    /// The name people know it by (`Brave`, `DuckDuckGo`).
    pub fn label(self) -> &'static str {
        match self {
            Provider::Brave => "Brave",
            Provider::Tavily => "Tavily",
            Provider::Exa => "Exa",
            Provider::Jina => "Jina",
            Provider::Searxng => "SearXNG",
            Provider::Duckduckgo => "DuckDuckGo",
            Provider::Perplexity => "Perplexity",
            Provider::Firecrawl => "Firecrawl",
        }
    }

    /// The variable that holds its key by default; for SearXNG, the variable that holds the
    /// instance's address. DuckDuckGo has none.
    pub fn default_env(self) -> Option<&'static str> {
        match self {
            Provider::Brave => Some("BRAVE_API_KEY"),
            Provider::Tavily => Some("TAVILY_API_KEY"),
            Provider::Exa => Some("EXA_API_KEY"),
            Provider::Jina => Some("JINA_API_KEY"),
            Provider::Searxng => Some("SEARXNG_URL"),
            Provider::Duckduckgo => None,
            Provider::Perplexity => Some("PERPLEXITY_API_KEY"),
            Provider::Firecrawl => Some("FIRECRAWL_API_KEY"),
        }
    }

    /// The public endpoint's base URL; SearXNG has none (every instance is someone's own).
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Provider::Brave => Some("https://api.search.brave.com"),
            Provider::Tavily => Some("https://api.tavily.com"),
            Provider::Exa => Some("https://api.exa.ai"),
            Provider::Jina => Some("https://s.jina.ai"),
            Provider::Searxng => None,
            Provider::Duckduckgo => Some("https://html.duckduckgo.com"),
            Provider::Perplexity => Some("https://api.perplexity.ai"),
            Provider::Firecrawl => Some("https://api.firecrawl.dev"),
        }
    }

    /// Whether it needs an API key (SearXNG and DuckDuckGo do not).
    pub fn needs_key(self) -> bool {
        !matches!(self, Provider::Searxng | Provider::Duckduckgo)
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// How `web_search` picks and reaches its providers.
///
/// By default the fallback chain is every keyed provider whose key variable is set, in the
/// order Brave, Tavily, Exa, Perplexity, Firecrawl, Jina; then SearXNG when an instance address
/// is configured (here or in `SEARXNG_URL`); then DuckDuckGo, which needs no key.
#[derive(Debug, Clone)]
pub struct SearchConfig {
    pub(crate) chain: Option<Vec<Provider>>,
    pub(crate) base_urls: BTreeMap<Provider, String>,
    pub(crate) key_envs: BTreeMap<Provider, String>,
    pub(crate) timeout: Duration,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            chain: None,
            base_urls: BTreeMap::new(),
            key_envs: BTreeMap::new(),
            timeout: Duration::from_secs(20),
        }
    }
}

impl SearchConfig {
    /// The defaults: the chain described on [`SearchConfig`], public endpoints, the usual key
    /// variables, 20 seconds per provider.
    pub fn new() -> Self {
        SearchConfig::default()
    }

    /// Tries these providers, in this order, instead of the default chain. Providers without
    /// their key (or, for SearXNG, an address) are left out when a search runs.
    pub fn with_chain(mut self, chain: Vec<Provider>) -> Self {
        let mut seen = Vec::new();
        for p in chain {
            if !seen.contains(&p) {
                seen.push(p);
            }
        }
        self.chain = Some(seen);
        self
    }

    /// Another base URL for `provider` (a proxy, a self-hosted instance, a test server), such
    /// as `https://search.example.org` for SearXNG. The API's own path is appended to it.
    pub fn with_base_url(mut self, provider: Provider, url: impl Into<String>) -> Self {
        self.base_urls.insert(provider, url.into());
        self
    }

    /// Another variable for `provider`'s key (for SearXNG: the variable that holds the
    /// instance's address when no base URL is configured).
    pub fn with_key_env(mut self, provider: Provider, var: impl Into<String>) -> Self {
        self.key_envs.insert(provider, var.into());
        self
    }

    /// How long one provider may take to answer before the next one is tried.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        if !timeout.is_zero() {
            self.timeout = timeout;
        }
        self
    }

    /// The variable that holds `provider`'s key (or SearXNG's address).
    pub(crate) fn key_env(&self, provider: Provider) -> Option<&str> {
        self.key_envs
            .get(&provider)
            .map(String::as_str)
            .or(provider.default_env())
    }

    /// The chain as configured, before leaving out the providers that cannot run.
    pub(crate) fn configured_chain(&self) -> Vec<Provider> {
        self.chain.clone().unwrap_or_else(|| Provider::ALL.to_vec())
    }
}

/// The largest answer read from a provider (bytes, after decompression).
pub(crate) const MAX_ANSWER_BYTES: usize = 2 * 1024 * 1024;
/// Snippets are cut at this many characters.
pub(crate) const SNIPPET_CHARS: usize = 300;
/// Titles are cut at this many characters.
const TITLE_CHARS: usize = 200;
/// A provider's written answer (Perplexity) is cut at this many characters.
const SUMMARY_CHARS: usize = 2000;

/// One search, as the providers see it.
#[derive(Debug, Clone)]
pub(crate) struct Query<'a> {
    /// The query, control characters already turned into spaces.
    pub(crate) text: &'a str,
    /// How many results are wanted (1 to 10).
    pub(crate) count: usize,
    /// The provider's key, when it needs one.
    pub(crate) key: Option<&'a str>,
    /// How long the provider may take.
    pub(crate) timeout: Duration,
}

/// A result as a provider gave it, before cleaning.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RawHit {
    pub(crate) title: String,
    pub(crate) url: String,
    pub(crate) snippet: String,
}

/// What a provider answered.
#[derive(Debug, Clone, Default)]
pub(crate) struct Answer {
    pub(crate) hits: Vec<RawHit>,
    /// A written answer, from providers that write one (Perplexity).
    pub(crate) summary: Option<String>,
}

/// A cleaned result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    pub(crate) title: String,
    pub(crate) url: String,
    pub(crate) snippet: String,
}

/// The request `provider` sends for `query`, to the endpoint under `base`.
pub(crate) fn request(
    provider: Provider,
    base: &str,
    query: &Query<'_>,
) -> Result<Request, String> {
    match provider {
        Provider::Brave => brave::request(base, query),
        Provider::Tavily => tavily::request(base, query),
        Provider::Exa => exa::request(base, query),
        Provider::Jina => jina::request(base, query),
        Provider::Searxng => searxng::request(base, query),
        Provider::Duckduckgo => duckduckgo::request(base, query),
        Provider::Perplexity => perplexity::request(base, query),
        Provider::Firecrawl => firecrawl::request(base, query),
    }
}

/// Reads `provider`'s successful answer.
pub(crate) fn parse(provider: Provider, body: &[u8]) -> Result<Answer, String> {
    match provider {
        Provider::Brave => brave::parse(body),
        Provider::Tavily => tavily::parse(body),
        Provider::Exa => exa::parse(body),
        Provider::Jina => jina::parse(body),
        Provider::Searxng => searxng::parse(body),
        Provider::Duckduckgo => duckduckgo::parse(body),
        Provider::Perplexity => perplexity::parse(body),
        Provider::Firecrawl => firecrawl::parse(body),
    }
}

/// Whether `status` is an answer to read: any 2xx, except for DuckDuckGo, whose robot check
/// comes as 202 and whose results come only as 200.
pub(crate) fn accepted(provider: Provider, status: reqwest::StatusCode) -> bool {
    match provider {
        Provider::Duckduckgo => status == reqwest::StatusCode::OK,
        _ => status.is_success(),
    }
}

/// `base` with `path` appended (a base may carry a path prefix of its own, such as a SearXNG
/// instance under `/searx`).
pub(crate) fn endpoint(base: &str, path: &str) -> Result<Url, String> {
    let joined = format!("{}{}", base.trim().trim_end_matches('/'), path);
    let url = Url::parse(&joined).map_err(|e| {
        format!(
            "the configured base URL `{}` is not a valid URL ({e})",
            base.trim()
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "the configured base URL `{}` is not an http(s) URL",
            base.trim()
        ));
    }
    Ok(url)
}

/// A GET request for `url`.
pub(crate) fn get(url: Url, query: &Query<'_>) -> Request {
    Request::get(url, query.timeout, MAX_ANSWER_BYTES)
}

/// A POST request carrying `body` as JSON.
pub(crate) fn post_json(url: Url, body: &Value, query: &Query<'_>) -> Result<Request, String> {
    let bytes =
        serde_json::to_vec(body).map_err(|e| format!("the request could not be built: {e}"))?;
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::ACCEPT,
        header::HeaderValue::from_static("application/json"),
    );
    Ok(Request {
        method: Method::POST,
        url,
        headers,
        body: Some(bytes),
        timeout: query.timeout,
        max_bytes: MAX_ANSWER_BYTES,
    })
}

/// Adds a header, for keys: a key that cannot be a header value is a configuration mistake.
pub(crate) fn with_header(
    request: Request,
    name: HeaderName,
    value: &str,
) -> Result<Request, String> {
    request
        .header(name, value)
        .map_err(|_| "the configured key is not a valid header value (it holds a line break or other control character); fix the key".to_owned())
}

/// The key the provider needs, or why it is missing (cannot happen after planning; kept as an
/// error rather than a panic).
pub(crate) fn key<'a>(query: &Query<'a>) -> Result<&'a str, String> {
    query
        .key
        .ok_or_else(|| "no API key is configured for it".to_owned())
}

/// Parses a JSON answer into `T`, saying what was wrong when it is not the documented shape.
/// The answer shape Tavily and SearXNG share: `{"results": [{"title", "url", "content"}]}`.
pub(crate) fn content_results(body: &[u8]) -> Result<Answer, String> {
    #[derive(Deserialize)]
    struct Response {
        #[serde(default)]
        results: Vec<Item>,
    }
    #[derive(Deserialize)]
    struct Item {
        #[serde(default)]
        title: Option<String>,
        #[serde(default)]
        url: Option<String>,
        #[serde(default)]
        content: Option<String>,
    }
    let response: Response = json(body)?;
    Ok(Answer {
        hits: response
            .results
            .into_iter()
            .map(|i| RawHit {
                title: i.title.unwrap_or_default(),
                url: i.url.unwrap_or_default(),
                snippet: i.content.unwrap_or_default(),
            })
            .collect(),
        summary: None,
    })
}

pub(crate) fn json<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, String> {
    serde_json::from_slice(body)
        .map_err(|e| format!("the answer was not the documented JSON ({e})"))
}

/// Cleans, filters and caps the hits: titles and snippets as plain single-line text, only
/// http(s) URLs, no duplicates, at most `count`.
pub(crate) fn normalise(raw: Vec<RawHit>, count: usize) -> Vec<Hit> {
    let mut hits: Vec<Hit> = Vec::new();
    for r in raw {
        if hits.len() >= count {
            break;
        }
        let Some(url) = web_url(&r.url) else {
            continue;
        };
        if hits.iter().any(|h| h.url == url) {
            continue;
        }
        let title = cap(&clean(&r.title), TITLE_CHARS);
        let title = if title.is_empty() { url.clone() } else { title };
        hits.push(Hit {
            title,
            snippet: cap(&clean(&r.snippet), SNIPPET_CHARS),
            url,
        });
    }
    hits
}

/// A provider's written answer, cleaned of markup and control characters (line breaks kept)
/// and capped.
pub(crate) fn clean_summary(text: &str) -> Option<String> {
    let lines: Vec<String> = text
        .split('\n')
        .map(clean)
        .filter(|l| !l.is_empty())
        .collect();
    let joined = lines.join("\n");
    (!joined.is_empty()).then(|| cap(&joined, SUMMARY_CHARS))
}

/// `raw` as an absolute http(s) URL, or nothing.
fn web_url(raw: &str) -> Option<String> {
    let url = Url::parse(raw.trim()).ok()?;
    (matches!(url.scheme(), "http" | "https") && url.host().is_some()).then(|| url.to_string())
}

/// Plain single-line text: markup tags removed, common entities decoded, control characters
/// and runs of whitespace turned into single spaces.
pub(crate) fn clean(text: &str) -> String {
    collapse(&decode_entities(&strip_tags(text)))
}

/// Control characters and runs of whitespace as single spaces, trimmed.
pub(crate) fn collapse(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() || c.is_control() {
            space = !out.is_empty();
        } else {
            if space {
                out.push(' ');
                space = false;
            }
            out.push(c);
        }
    }
    out
}

/// At most `max` characters, with `…` when cut.
pub(crate) fn cap(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((i, _)) => format!("{}…", text[..i].trim_end()),
    }
}

/// Removes HTML tags (`<strong>`, `</b>`, `<a href="…">`) that some APIs put in their snippets
/// for highlighting. A `<` that does not start a tag (`a < b`) stays.
fn strip_tags(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] == b'<'
            && let Some(end) = tag_end(&bytes[i..])
        {
            out.push_str(&text[copied..i]);
            i += end;
            copied = i;
            continue;
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    out
}

/// The length of the tag starting at `s[0] == b'<'`, if it is one: `<name …>` or `</name>`,
/// with a letter first and no other `<` before the closing `>`.
fn tag_end(s: &[u8]) -> Option<usize> {
    let mut i = 1;
    if s.get(i) == Some(&b'/') {
        i += 1;
    }
    if !s.get(i)?.is_ascii_alphabetic() {
        return None;
    }
    while i < s.len() {
        match s[i] {
            b'>' => return Some(i + 1),
            b'<' => return None,
            _ => i += 1,
        }
    }
    None
}

/// Decodes the entities APIs leave in snippets; unknown ones stay as written.
fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(semi) = rest[..rest.len().min(12)].find(';') else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let name = &rest[1..semi];
        let decoded = match name {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some(' '),
            _ => name
                .strip_prefix("#x")
                .or_else(|| name.strip_prefix("#X"))
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// What an API said when it refused: the usual JSON error fields, or the start of the body.
pub(crate) fn error_message(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let parsed = serde_json::from_str::<Value>(&text).ok();
    let is_json = parsed.is_some();
    let found = parsed.and_then(|v| {
        let field = |v: &Value, name: &str| -> Option<String> {
            match v.get(name)? {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => o
                    .get("message")
                    .or_else(|| o.get("detail"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                Value::Array(a) => {
                    let parts: Vec<String> = a
                        .iter()
                        .filter_map(|e| match e {
                            Value::String(s) => Some(s.clone()),
                            Value::Object(o) => o
                                .get("msg")
                                .or_else(|| o.get("message"))
                                .and_then(Value::as_str)
                                .map(str::to_owned),
                            _ => None,
                        })
                        .collect();
                    (!parts.is_empty()).then(|| parts.join("; "))
                }
                _ => None,
            }
        };
        ["error", "message", "detail", "errors", "readableMessage"]
            .iter()
            .find_map(|name| field(&v, name))
    });
    // A JSON answer without a known message field says nothing worth repeating.
    let message = match found {
        Some(m) => collapse(&m),
        None if is_json => String::new(),
        None => collapse(&strip_tags(&text)),
    };
    (!message.is_empty()).then(|| cap(&message, 200))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_strips_highlighting_and_decodes_entities() {
        assert_eq!(
            clean(
                "The <strong>Rust</strong>\n\tbook &amp; <a href=\"x\">more</a> &#39;x&#x27; a < b"
            ),
            "The Rust book & more 'x' a < b"
        );
        // Escaped markup is text, not a tag.
        assert_eq!(clean("&lt;b&gt;bold&lt;/b&gt;"), "<b>bold</b>");
        assert_eq!(clean("\u{1b}[31mred\u{0}x"), "[31mred x");
        assert_eq!(clean("AT&T & co &unknown;"), "AT&T & co &unknown;");
    }

    #[test]
    fn cap_counts_characters_and_marks_the_cut() {
        assert_eq!(cap("héllo", 10), "héllo");
        assert_eq!(cap("héllo wörld", 6), "héllo…");
        assert_eq!(cap("ééé", 2), "éé…");
    }

    #[test]
    fn normalise_keeps_web_urls_drops_duplicates_and_caps() {
        let raw = vec![
            RawHit {
                title: " A ".into(),
                url: "https://a.example/".into(),
                snippet: "x".repeat(400),
            },
            RawHit {
                title: "dup".into(),
                url: "https://a.example/".into(),
                snippet: String::new(),
            },
            RawHit {
                title: "js".into(),
                url: "javascript:alert(1)".into(),
                snippet: String::new(),
            },
            RawHit {
                title: "rel".into(),
                url: "/relative".into(),
                snippet: String::new(),
            },
            RawHit {
                title: String::new(),
                url: "http://b.example/p".into(),
                snippet: String::new(),
            },
            RawHit {
                title: "C".into(),
                url: "https://c.example/".into(),
                snippet: String::new(),
            },
        ];
        let hits = normalise(raw.clone(), 10);
        assert_eq!(hits.len(), 3);
        assert_eq!(hits[0].title, "A");
        assert_eq!(hits[0].snippet.chars().count(), SNIPPET_CHARS + 1);
        assert!(hits[0].snippet.ends_with('…'));
        assert_eq!(hits[1].title, "http://b.example/p");
        assert_eq!(normalise(raw, 2).len(), 2);
    }

    #[test]
    fn endpoint_joins_paths_and_refuses_other_schemes() {
        assert_eq!(
            endpoint("https://searx.example/searx/", "/search")
                .unwrap()
                .as_str(),
            "https://searx.example/searx/search"
        );
        assert!(endpoint("ftp://x.example", "/search").is_err());
        assert!(endpoint("not a url", "/search").is_err());
    }

    #[test]
    fn error_message_reads_the_usual_fields() {
        assert_eq!(
            error_message(br#"{"error":{"message":"bad key"}}"#).unwrap(),
            "bad key"
        );
        assert_eq!(
            error_message(br#"{"detail":[{"msg":"q missing"}]}"#).unwrap(),
            "q missing"
        );
        assert_eq!(error_message(br#"{"errors":["a","b"]}"#).unwrap(), "a; b");
        assert_eq!(
            error_message(b"<h1>Bad  Gateway</h1>").unwrap(),
            "Bad Gateway"
        );
        assert_eq!(error_message(b""), None);
        assert_eq!(error_message(br#"{"ok":false}"#), None);
    }

    #[test]
    fn summary_keeps_lines_and_drops_blank_ones() {
        assert_eq!(
            clean_summary("First  line\n- item\n\n\nSecond **para**").unwrap(),
            "First line\n- item\nSecond **para**"
        );
        assert_eq!(clean_summary(" \n "), None);
    }
}
