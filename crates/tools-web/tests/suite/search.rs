//! web_search against loopback servers that answer in each provider's documented format and
//! record what they were sent: every provider's request and parsing, the fallback chain, the
//! provider choice, count capping and the argument checks. Also the recording server the
//! integration tests (pushover, composio) share.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use tool_core::{Access, ErrorKind, Policy, ToolError, ToolOutput};
use tools_web::{Config, Provider, SearchConfig, StaticSecrets};

use super::{Fixture, net, policy, serve};

// ---------------------------------------------------------------------------------------------
// A recording API server.

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Seen {
    /// The query parameter `name`.
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The header `name`.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as JSON.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }

    /// The form-encoded body's fields, in order.
    pub(crate) fn form(&self) -> Vec<(String, String)> {
        url::form_urlencoded::parse(&self.body)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }
}

/// A canned answer.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    status: u16,
    content_type: &'static str,
    body: String,
}

/// A JSON answer with `status`.
pub(crate) fn json_reply(status: u16, body: Value) -> Reply {
    Reply {
        status,
        content_type: "application/json",
        body: body.to_string(),
    }
}

/// An answer with any content type.
pub(crate) fn raw_reply(status: u16, content_type: &'static str, body: &str) -> Reply {
    Reply {
        status,
        content_type,
        body: body.to_owned(),
    }
}

/// A server on the exempt loopback address that answers `routes` (method, path → reply),
/// 404 to anything else, and records every request.
pub(crate) struct Api {
    pub(crate) addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Api {
    pub(crate) async fn start(routes: Vec<(&'static str, &'static str, Reply)>) -> Api {
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = Arc::clone(&seen);
        let routes = Arc::new(routes);
        let app = Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let log = Arc::clone(&log);
                let routes = Arc::clone(&routes);
                async move {
                    let query = url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
                        .map(|(k, v)| (k.into_owned(), v.into_owned()))
                        .collect();
                    log.lock().unwrap().push(Seen {
                        method: method.as_str().to_owned(),
                        path: uri.path().to_owned(),
                        query,
                        headers,
                        body: body.to_vec(),
                    });
                    match routes
                        .iter()
                        .find(|(m, p, _)| *m == method.as_str() && *p == uri.path())
                    {
                        Some((_, _, reply)) => (
                            StatusCode::from_u16(reply.status).unwrap(),
                            [(header::CONTENT_TYPE, reply.content_type)],
                            reply.body.clone(),
                        )
                            .into_response(),
                        None => (StatusCode::NOT_FOUND, "no such route").into_response(),
                    }
                }
            },
        );
        let addr = serve(app).await;
        Api { addr, seen }
    }

    /// The base URL on 127.0.0.1.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The base URL under another name that resolves to 127.0.0.1 (see the fixture's lookup).
    pub(crate) fn url_as(&self, host: &str) -> String {
        format!("http://{host}:{}", self.addr.port())
    }

    /// Every request so far.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The one request so far.
    pub(crate) fn only(&self) -> Seen {
        let seen = self.seen();
        assert_eq!(seen.len(), 1, "expected one request, got {seen:#?}");
        seen.into_iter().next().unwrap()
    }
}

/// A base URL where nothing listens (the port was just free).
pub(crate) fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

// ---------------------------------------------------------------------------------------------
// Fixtures of these tests.

const BRAVE_KEY: &str = "brave-key-0123456789";
const TAVILY_KEY: &str = "tvly-key-0123456789";
const EXA_KEY: &str = "exa-key-0123456789";
const JINA_KEY: &str = "jina_key_0123456789";
const PERPLEXITY_KEY: &str = "pplx-key-0123456789";
const FIRECRAWL_KEY: &str = "fc-key-0123456789";

fn every_key() -> StaticSecrets {
    StaticSecrets::new()
        .with("BRAVE_API_KEY", BRAVE_KEY)
        .with("TAVILY_API_KEY", TAVILY_KEY)
        .with("EXA_API_KEY", EXA_KEY)
        .with("JINA_API_KEY", JINA_KEY)
        .with("PERPLEXITY_API_KEY", PERPLEXITY_KEY)
        .with("FIRECRAWL_API_KEY", FIRECRAWL_KEY)
}

fn fixture(search: SearchConfig, secrets: StaticSecrets) -> Fixture {
    fixture_with(search, secrets, policy())
}

fn fixture_with(search: SearchConfig, secrets: StaticSecrets, policy: Policy) -> Fixture {
    Fixture::with(
        Config::new()
            .with_net(net())
            .with_secrets(Arc::new(secrets))
            .with_search(search),
        policy,
    )
}

fn structured(out: &ToolOutput) -> Value {
    out.structured
        .clone()
        .expect("web_search answers structured data")
}

fn results(out: &ToolOutput) -> Vec<(String, String, String)> {
    structured(out)["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["title"].as_str().unwrap().to_owned(),
                r["url"].as_str().unwrap().to_owned(),
                r["snippet"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn hit(title: &str, url: &str, snippet: &str) -> (String, String, String) {
    (title.to_owned(), url.to_owned(), snippet.to_owned())
}

fn assert_no_key(out: &ToolOutput) {
    let all = format!("{}{}", out.joined_text(), structured(out));
    for key in [
        BRAVE_KEY,
        TAVILY_KEY,
        EXA_KEY,
        JINA_KEY,
        PERPLEXITY_KEY,
        FIRECRAWL_KEY,
    ] {
        assert!(!all.contains(key), "a key leaked into the output:\n{all}");
    }
}

fn brave_answer(n: usize) -> Value {
    let results: Vec<Value> = (1..=n)
        .map(|i| {
            json!({
                "title": format!("Result {i}"),
                "url": format!("https://r{i}.example/page"),
                "description": format!("Snippet <strong>{i}</strong>"),
                "extra_snippets": ["ignored"],
            })
        })
        .collect();
    json!({"type": "search", "query": {"original": "q"}, "web": {"type": "search", "results": results}})
}

const DDG_PAGE: &str = r##"<!DOCTYPE html>
<html><head><title>rust at DuckDuckGo</title></head><body>
<div class="serp__results"><div id="links" class="results">
  <div class="result results_links results_links_deep result--ad">
    <div class="links_main links_deep result__body">
      <h2 class="result__title"><a rel="nofollow" class="result__a" href="https://duckduckgo.com/y.js?ad_domain=ads.example&amp;ad_provider=x">Sponsored thing</a></h2>
      <a class="result__snippet" href="https://duckduckgo.com/y.js?ad_domain=ads.example">Buy it now</a>
    </div>
  </div>
  <div class="result results_links results_links_deep web-result ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title">
        <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust%2Dlang.org%2Flearn%3Fa%3D1%26b%3D%25C3%25A9&amp;rut=5b3c">Learn <b>Rust</b> - Rust Programming Language</a>
      </h2>
      <div class="result__extras"><div class="result__extras__url"><a class="result__url" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust%2Dlang.org%2Flearn">www.rust-lang.org/learn</a></div></div>
      <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust%2Dlang.org%2Flearn">A language empowering <b>everyone</b> to build reliable &amp; efficient software.</a>
    </div>
  </div>
  <div class="result results_links results_links_deep web-result ">
    <div class="links_main links_deep result__body">
      <h2 class="result__title"><a rel="nofollow" class="result__a" href="https://doc.rust-lang.org/book/">The Rust Programming Language</a></h2>
      <a class="result__snippet" href="https://doc.rust-lang.org/book/">by Steve Klabnik and Carol Nichols</a>
    </div>
  </div>
  <div class="result results_links web-result ">
    <h2 class="result__title"><a class="result__a" href="//duckduckgo.com/l/?uddg=javascript%3Aalert(1)">Not a web page</a></h2>
  </div>
</div></div>
</body></html>"##;

/// A DuckDuckGo page with `n` plain results.
fn ddg_page(n: usize) -> String {
    let mut page = String::from("<html><body>");
    for i in 1..=n {
        page.push_str(&format!(
            r#"<div class="result web-result"><h2 class="result__title"><a class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fd{i}.example%2F">D{i}</a></h2><a class="result__snippet" href="x">s{i}</a></div>"#
        ));
    }
    page.push_str("</body></html>");
    page
}

// ---------------------------------------------------------------------------------------------
// Each provider's request and answer.

#[tokio::test]
async fn brave_sends_its_documented_request_and_its_results_are_normalised() {
    let mut answer = brave_answer(2);
    answer["web"]["results"]
        .as_array_mut()
        .unwrap()
        .push(json!({"title": "Script", "url": "javascript:alert(1)", "description": "x"}));
    answer["web"]["results"]
        .as_array_mut()
        .unwrap()
        .push(json!({
            "title": "  Long   &amp; <b>loud</b>\n title ",
            "url": "https://long.example/",
            "description": "x".repeat(400),
        }));
    let api = Api::start(vec![("GET", "/res/v1/web/search", json_reply(200, answer))]).await;
    let fx = fixture(
        SearchConfig::new().with_base_url(Provider::Brave, api.url()),
        StaticSecrets::new().with("BRAVE_API_KEY", BRAVE_KEY),
    );
    let out = fx
        .ok(
            "web_search",
            r#"{"query": "rust async", "count": 4, "provider": "brave"}"#,
        )
        .await;
    let seen = api.only();
    assert_eq!(seen.method, "GET");
    assert_eq!(seen.param("q"), Some("rust async"));
    assert_eq!(seen.param("count"), Some("4"));
    assert_eq!(seen.header("x-subscription-token"), Some(BRAVE_KEY));
    assert_eq!(seen.header("accept"), Some("application/json"));
    let got = results(&out);
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(
        got[0],
        hit("Result 1", "https://r1.example/page", "Snippet 1")
    );
    assert_eq!(
        got[1],
        hit("Result 2", "https://r2.example/page", "Snippet 2")
    );
    assert_eq!(got[2].0, "Long & loud title");
    assert_eq!(got[2].2, format!("{}…", "x".repeat(300)));
    let s = structured(&out);
    assert_eq!(s["provider"], "brave");
    assert_eq!(s["query"], "rust async");
    assert_eq!(s["failed"], json!([]));
    let text = out.joined_text();
    assert!(
        text.starts_with("3 results for \"rust async\" from Brave:\n\n1. Result 1\n   https://r1.example/page\n   Snippet 1\n"),
        "{text}"
    );
    assert_no_key(&out);
}

#[tokio::test]
async fn tavily_posts_query_and_max_results_with_a_bearer_key() {
    let api = Api::start(vec![(
        "POST",
        "/search",
        json_reply(
            200,
            json!({
                "query": "who won", "answer": null, "images": [], "response_time": 1.2,
                "results": [
                    {"title": "Final", "url": "https://news.example/final", "content": "The final was won…", "score": 0.9},
                    {"title": "Recap", "url": "https://sport.example/recap", "content": "Recap of the match.", "score": 0.8},
                ]
            }),
        ),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new().with_base_url(Provider::Tavily, api.url()),
        StaticSecrets::new().with("TAVILY_API_KEY", TAVILY_KEY),
    );
    let out = fx
        .ok(
            "web_search",
            r#"{"query": "who won", "count": 3, "provider": "tavily"}"#,
        )
        .await;
    let seen = api.only();
    assert_eq!(seen.method, "POST");
    assert_eq!(
        seen.header("authorization"),
        Some(format!("Bearer {TAVILY_KEY}").as_str())
    );
    assert_eq!(seen.header("content-type"), Some("application/json"));
    assert_eq!(seen.json(), json!({"query": "who won", "max_results": 3}));
    assert_eq!(
        results(&out),
        vec![
            hit("Final", "https://news.example/final", "The final was won…"),
            hit(
                "Recap",
                "https://sport.example/recap",
                "Recap of the match."
            ),
        ]
    );
    assert_eq!(structured(&out)["provider"], "tavily");
    assert_no_key(&out);
}

#[tokio::test]
async fn exa_posts_num_results_and_highlights_with_its_key_header() {
    let api = Api::start(vec![(
        "POST",
        "/search",
        json_reply(
            200,
            json!({
                "requestId": "b594",
                "results": [
                    {"title": "Paper", "url": "https://arxiv.example/1", "id": "x", "highlights": ["First point.", "Second point."], "highlightScores": [0.5, 0.4]},
                    {"title": "Blog", "url": "https://blog.example/2", "text": "Only text here."},
                    {"title": null, "url": "https://bare.example/3"},
                ]
            }),
        ),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new().with_base_url(Provider::Exa, api.url()),
        StaticSecrets::new().with("EXA_API_KEY", EXA_KEY),
    );
    let out = fx
        .ok(
            "web_search",
            r#"{"query": "llm research", "provider": "exa"}"#,
        )
        .await;
    let seen = api.only();
    assert_eq!(seen.header("x-api-key"), Some(EXA_KEY));
    assert_eq!(seen.header("authorization"), None);
    assert_eq!(
        seen.json(),
        json!({"query": "llm research", "numResults": 5, "contents": {"highlights": true}})
    );
    assert_eq!(
        results(&out),
        vec![
            hit(
                "Paper",
                "https://arxiv.example/1",
                "First point. … Second point."
            ),
            hit("Blog", "https://blog.example/2", "Only text here."),
            hit("https://bare.example/3", "https://bare.example/3", ""),
        ]
    );
    assert_no_key(&out);
}

#[tokio::test]
async fn jina_gets_json_without_page_contents() {
    let api = Api::start(vec![(
        "GET",
        "/",
        json_reply(
            200,
            json!({
                "code": 200, "status": 20000,
                "data": [
                    {"title": "Jina AI", "url": "https://jina.ai/", "description": "Search foundation.", "content": "", "usage": {"tokens": 1000}},
                    {"title": "Reader", "url": "https://jina.ai/reader", "description": "", "content": "Reader turns pages into text."},
                ],
                "meta": {"usage": {"tokens": 10000}}
            }),
        ),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new().with_base_url(Provider::Jina, api.url()),
        StaticSecrets::new().with("JINA_API_KEY", JINA_KEY),
    );
    let out = fx
        .ok(
            "web_search",
            r#"{"query": "jina reader", "provider": "jina"}"#,
        )
        .await;
    let seen = api.only();
    assert_eq!(seen.method, "GET");
    assert_eq!(seen.param("q"), Some("jina reader"));
    assert_eq!(
        seen.header("authorization"),
        Some(format!("Bearer {JINA_KEY}").as_str())
    );
    assert_eq!(seen.header("accept"), Some("application/json"));
    assert_eq!(seen.header("x-respond-with"), Some("no-content"));
    assert_eq!(
        results(&out),
        vec![
            hit("Jina AI", "https://jina.ai/", "Search foundation."),
            hit(
                "Reader",
                "https://jina.ai/reader",
                "Reader turns pages into text."
            ),
        ]
    );
    assert_no_key(&out);
}

#[tokio::test]
async fn searxng_asks_for_json_under_the_configured_base_path() {
    let api = Api::start(vec![(
        "GET",
        "/searx/search",
        json_reply(
            200,
            json!({
                "query": "privacy", "number_of_results": 2,
                "results": [
                    {"url": "https://a.example/", "title": "A", "content": "About A", "engine": "bing", "engines": ["bing"], "score": 1.0},
                    {"url": "https://b.example/", "title": "B", "content": "About B", "engine": "google"},
                ],
                "answers": [], "suggestions": []
            }),
        ),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new().with_base_url(Provider::Searxng, format!("{}/searx/", api.url())),
        StaticSecrets::new(),
    );
    let out = fx
        .ok(
            "web_search",
            r#"{"query": "privacy", "provider": "searxng"}"#,
        )
        .await;
    let seen = api.only();
    assert_eq!(seen.param("q"), Some("privacy"));
    assert_eq!(seen.param("format"), Some("json"));
    assert_eq!(seen.header("authorization"), None);
    assert_eq!(
        results(&out),
        vec![
            hit("A", "https://a.example/", "About A"),
            hit("B", "https://b.example/", "About B")
        ]
    );
}

#[tokio::test]
async fn duckduckgo_results_are_read_from_the_html_page_with_redirects_decoded() {
    let api = Api::start(vec![(
        "GET",
        "/html/",
        raw_reply(200, "text/html; charset=utf-8", DDG_PAGE),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new().with_base_url(Provider::Duckduckgo, api.url()),
        StaticSecrets::new(),
    );
    let out = fx
        .ok(
            "web_search",
            r#"{"query": "rust", "provider": "duckduckgo"}"#,
        )
        .await;
    let seen = api.only();
    assert_eq!(seen.method, "GET");
    assert_eq!(seen.param("q"), Some("rust"));
    assert_eq!(
        results(&out),
        vec![
            hit(
                "Learn Rust - Rust Programming Language",
                "https://www.rust-lang.org/learn?a=1&b=%C3%A9",
                "A language empowering everyone to build reliable & efficient software."
            ),
            hit(
                "The Rust Programming Language",
                "https://doc.rust-lang.org/book/",
                "by Steve Klabnik and Carol Nichols"
            ),
        ]
    );
}

#[tokio::test]
async fn perplexity_gives_sources_and_its_written_answer() {
    let api = Api::start(vec![(
        "POST",
        "/chat/completions",
        json_reply(
            200,
            json!({
                "id": "c1", "model": "sonar", "created": 1, "object": "chat.completion",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "About 100–400 billion stars [1].\n\nEstimates vary [2]."}}],
                "citations": ["https://nasa.example/stars", "https://esa.example/galaxy"],
                "search_results": [
                    {"title": "How many stars", "url": "https://nasa.example/stars", "date": "2024-01-01", "snippet": "Estimates say 100 to 400 billion."},
                    {"title": "Our galaxy", "url": "https://esa.example/galaxy", "date": null, "snippet": ""},
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
            }),
        ),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new().with_base_url(Provider::Perplexity, api.url()),
        StaticSecrets::new().with("PERPLEXITY_API_KEY", PERPLEXITY_KEY),
    );
    let out = fx
        .ok(
            "web_search",
            r#"{"query": "stars in the milky way", "provider": "perplexity"}"#,
        )
        .await;
    let seen = api.only();
    assert_eq!(
        seen.header("authorization"),
        Some(format!("Bearer {PERPLEXITY_KEY}").as_str())
    );
    assert_eq!(
        seen.json(),
        json!({"model": "sonar", "messages": [{"role": "user", "content": "stars in the milky way"}]})
    );
    assert_eq!(
        results(&out),
        vec![
            hit(
                "How many stars",
                "https://nasa.example/stars",
                "Estimates say 100 to 400 billion."
            ),
            hit("Our galaxy", "https://esa.example/galaxy", ""),
        ]
    );
    let s = structured(&out);
    assert_eq!(
        s["summary"],
        "About 100–400 billion stars [1].\nEstimates vary [2]."
    );
    let text = out.joined_text();
    assert!(
        text.contains(
            "\nPerplexity's answer:\nAbout 100–400 billion stars [1].\nEstimates vary [2].\n"
        ),
        "{text}"
    );
    assert_no_key(&out);
}

#[tokio::test]
async fn perplexity_citations_stand_in_when_there_are_no_search_results() {
    let api = Api::start(vec![(
        "POST",
        "/chat/completions",
        json_reply(
            200,
            json!({
                "choices": [{"message": {"role": "assistant", "content": "Yes."}}],
                "citations": ["https://one.example/a", "ftp://two.example/b", "https://three.example/c"]
            }),
        ),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new().with_base_url(Provider::Perplexity, api.url()),
        StaticSecrets::new().with("PERPLEXITY_API_KEY", PERPLEXITY_KEY),
    );
    let out = fx
        .ok("web_search", r#"{"query": "q", "provider": "perplexity"}"#)
        .await;
    assert_eq!(
        results(&out),
        vec![
            hit("https://one.example/a", "https://one.example/a", ""),
            hit("https://three.example/c", "https://three.example/c", ""),
        ]
    );
    assert_eq!(structured(&out)["summary"], "Yes.");
}

#[tokio::test]
async fn firecrawl_posts_to_v2_and_reads_data_web() {
    let api = Api::start(vec![(
        "POST",
        "/v2/search",
        json_reply(
            200,
            json!({
                "success": true,
                "data": {
                    "web": [
                        {"url": "https://www.firecrawl.dev/", "title": "Firecrawl", "description": "Web data API for AI.", "position": 1},
                        {"url": "https://github.com/firecrawl/firecrawl", "title": "firecrawl on GitHub", "description": "Turn websites into LLM-ready data.", "position": 2},
                    ],
                    "images": [{"title": "logo", "imageUrl": "https://x.example/logo.png", "url": "https://docs.firecrawl.dev/"}]
                }
            }),
        ),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new().with_base_url(Provider::Firecrawl, api.url()),
        StaticSecrets::new().with("FIRECRAWL_API_KEY", FIRECRAWL_KEY),
    );
    let out = fx
        .ok(
            "web_search",
            r#"{"query": "firecrawl", "count": 2, "provider": "firecrawl"}"#,
        )
        .await;
    let seen = api.only();
    assert_eq!(
        seen.header("authorization"),
        Some(format!("Bearer {FIRECRAWL_KEY}").as_str())
    );
    assert_eq!(seen.json(), json!({"query": "firecrawl", "limit": 2}));
    assert_eq!(
        results(&out),
        vec![
            hit(
                "Firecrawl",
                "https://www.firecrawl.dev/",
                "Web data API for AI."
            ),
            hit(
                "firecrawl on GitHub",
                "https://github.com/firecrawl/firecrawl",
                "Turn websites into LLM-ready data."
            ),
        ]
    );
    assert_no_key(&out);
}

// ---------------------------------------------------------------------------------------------
// The fallback chain.

/// The first provider fails in each way the chain must survive; the second answers, and the
/// output names the failure.
#[tokio::test]
async fn the_chain_moves_on_when_a_provider_fails() {
    let cases: Vec<(&str, Option<Reply>, &str)> = vec![
        (
            "server error echoing the key",
            Some(json_reply(
                500,
                json!({"error": {"message": format!("internal error for key {BRAVE_KEY}")}}),
            )),
            "HTTP 500 Internal Server Error: internal error for key [redacted]",
        ),
        (
            "rate limit",
            Some(json_reply(
                429,
                json!({"type": "ErrorResponse", "error": {"code": "RATE_LIMITED", "detail": "Request rate limit exceeded", "status": 429}}),
            )),
            "HTTP 429 Too Many Requests: Request rate limit exceeded (rate limited; try again later)",
        ),
        (
            "malformed JSON",
            Some(raw_reply(
                200,
                "application/json",
                "{\"web\": {\"results\": [",
            )),
            "the answer was not the documented JSON",
        ),
        (
            "refused key",
            Some(json_reply(
                401,
                json!({"error": {"detail": "The provided subscription token is invalid."}}),
            )),
            "(the key in BRAVE_API_KEY was refused)",
        ),
        ("nothing listening", None, "Could not connect to 127.0.0.1"),
    ];
    for (case, brave_reply, reason) in cases {
        let brave = match &brave_reply {
            Some(r) => Some(Api::start(vec![("GET", "/res/v1/web/search", r.clone())]).await),
            None => None,
        };
        let tavily = Api::start(vec![(
            "POST",
            "/search",
            json_reply(200, json!({"results": [{"title": "T", "url": "https://t.example/", "content": "from tavily"}]})),
        )])
        .await;
        let brave_url = brave.as_ref().map(Api::url).unwrap_or_else(closed_port_url);
        let fx = fixture(
            SearchConfig::new()
                .with_base_url(Provider::Brave, brave_url)
                .with_base_url(Provider::Tavily, tavily.url())
                .with_chain(vec![Provider::Brave, Provider::Tavily]),
            every_key(),
        );
        let out = fx.ok("web_search", r#"{"query": "fallback"}"#).await;
        let s = structured(&out);
        assert_eq!(s["provider"], "tavily", "{case}: {s}");
        assert_eq!(
            results(&out),
            vec![hit("T", "https://t.example/", "from tavily")],
            "{case}"
        );
        assert_eq!(s["failed"].as_array().unwrap().len(), 1, "{case}: {s}");
        assert_eq!(s["failed"][0]["provider"], "brave", "{case}");
        let why = s["failed"][0]["reason"].as_str().unwrap();
        assert!(why.contains(reason), "{case}: {why}");
        let text = out.joined_text();
        assert!(
            text.contains(&format!(
                "\nTried before Tavily, without success: Brave ({why}).\n"
            )),
            "{case}: {text}"
        );
        assert_eq!(tavily.seen().len(), 1, "{case}");
        if let Some(brave) = &brave {
            assert_eq!(brave.seen().len(), 1, "{case}");
        }
        assert_no_key(&out);
    }
}

#[tokio::test]
async fn zero_results_is_an_answer_not_a_failure() {
    let brave = Api::start(vec![(
        "GET",
        "/res/v1/web/search",
        json_reply(200, json!({"type": "search", "query": {"original": "zzz"}})),
    )])
    .await;
    let tavily = Api::start(vec![(
        "POST",
        "/search",
        json_reply(200, json!({"results": []})),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new()
            .with_base_url(Provider::Brave, brave.url())
            .with_base_url(Provider::Tavily, tavily.url())
            .with_chain(vec![Provider::Brave, Provider::Tavily]),
        every_key(),
    );
    let out = fx.ok("web_search", r#"{"query": "zzz qqq"}"#).await;
    assert_eq!(
        out.joined_text(),
        "No results for \"zzz qqq\" from Brave.\n"
    );
    let s = structured(&out);
    assert_eq!(s["provider"], "brave");
    assert_eq!(s["results"], json!([]));
    assert_eq!(s["failed"], json!([]));
    assert!(tavily.seen().is_empty());
}

#[tokio::test]
async fn when_every_provider_fails_the_error_lists_them() {
    let brave = Api::start(vec![(
        "GET",
        "/res/v1/web/search",
        json_reply(503, json!({"message": "maintenance"})),
    )])
    .await;
    let ddg = Api::start(vec![(
        "GET",
        "/html/",
        raw_reply(
            202,
            "text/html",
            "<html><form id=\"challenge-form\"></form></html>",
        ),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new()
            .with_base_url(Provider::Brave, brave.url())
            .with_base_url(Provider::Duckduckgo, ddg.url())
            .with_chain(vec![Provider::Brave, Provider::Duckduckgo]),
        StaticSecrets::new().with("BRAVE_API_KEY", BRAVE_KEY),
    );
    let err = fx.err("web_search", r#"{"query": "anything"}"#).await;
    assert_eq!(err.kind(), ErrorKind::Failed);
    let message = err.to_string();
    assert_eq!(
        message,
        "Every search provider failed (Brave: HTTP 503 Service Unavailable: maintenance; \
         DuckDuckGo: HTTP 202 Accepted (DuckDuckGo answered with a robot check instead of \
         results)). Try again later, or configure another provider."
    );
}

/// With no key set, the default chain is DuckDuckGo alone; when it cannot be reached either, the
/// error names every variable that would add a provider and the SearXNG setting. The twins: a
/// configured chain whose providers all run says only to try again; a reachable DuckDuckGo
/// answers.
#[tokio::test]
async fn without_keys_and_duckduckgo_unreachable_the_error_says_what_to_set() {
    // A port nobody listens on: the connection is refused at once.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let fx = fixture(
        SearchConfig::new().with_base_url(Provider::Duckduckgo, format!("http://{closed}")),
        StaticSecrets::new(),
    );
    let err = fx.err("web_search", r#"{"query": "anything"}"#).await;
    assert_eq!(err.kind(), ErrorKind::Failed, "{err}");
    let message = err.to_string();
    assert!(
        message.starts_with(
            "Every search provider failed (DuckDuckGo: Could not connect to 127.0.0.1"
        ),
        "{message}"
    );
    assert!(
        message.ends_with(
            "Try again later, or make another provider available: set BRAVE_API_KEY, \
             TAVILY_API_KEY, EXA_API_KEY, PERPLEXITY_API_KEY, FIRECRAWL_API_KEY or JINA_API_KEY \
             in the environment (the key of Brave, Tavily, Exa, Perplexity, Firecrawl or Jina), \
             or give the address of a SearXNG instance in SEARXNG_URL or as \
             web.search_urls.searxng in toolshed.toml."
        ),
        "{message}"
    );
    // Renamed variables are the ones named; a set key is not asked for.
    let fx = fixture(
        SearchConfig::new()
            .with_base_url(Provider::Duckduckgo, format!("http://{closed}"))
            .with_base_url(Provider::Brave, format!("http://{closed}"))
            .with_key_env(Provider::Tavily, "MY_TAVILY")
            .with_key_env(Provider::Searxng, "MY_SEARX")
            .with_chain(vec![
                Provider::Brave,
                Provider::Tavily,
                Provider::Searxng,
                Provider::Duckduckgo,
            ]),
        StaticSecrets::new().with("BRAVE_API_KEY", BRAVE_KEY),
    );
    let message = fx
        .err("web_search", r#"{"query": "anything"}"#)
        .await
        .to_string();
    assert!(
        message.ends_with(
            "make another provider available: set MY_TAVILY in the environment (the key of \
             Tavily), or give the address of a SearXNG instance in MY_SEARX or as \
             web.search_urls.searxng in toolshed.toml."
        ),
        "{message}"
    );
    // Twin: DuckDuckGo reachable, the same empty environment works.
    let ddg = Api::start(vec![(
        "GET",
        "/html/",
        raw_reply(200, "text/html", "<html><body>no results</body></html>"),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new().with_base_url(Provider::Duckduckgo, ddg.url()),
        StaticSecrets::new(),
    );
    let out = fx.ok("web_search", r#"{"query": "anything"}"#).await;
    assert_eq!(structured(&out)["provider"], "duckduckgo");
}

#[tokio::test]
async fn the_default_chain_follows_the_documented_order_of_set_keys() {
    // Keys for Firecrawl, Exa and Jina only: Exa comes first, then Firecrawl, then Jina, then
    // DuckDuckGo. Exa and Firecrawl fail, Jina answers.
    let exa = Api::start(vec![(
        "POST",
        "/search",
        json_reply(500, json!({"error": "boom"})),
    )])
    .await;
    let firecrawl = Api::start(vec![(
        "POST",
        "/v2/search",
        json_reply(200, json!({"success": false, "error": "quota exceeded"})),
    )])
    .await;
    let jina = Api::start(vec![("GET", "/", json_reply(200, json!({"code": 200, "data": [{"title": "J", "url": "https://j.example/", "description": "d"}]})))]).await;
    let fx = fixture(
        SearchConfig::new()
            .with_base_url(Provider::Exa, exa.url())
            .with_base_url(Provider::Firecrawl, firecrawl.url())
            .with_base_url(Provider::Jina, jina.url())
            .with_base_url(Provider::Duckduckgo, closed_port_url()),
        StaticSecrets::new()
            .with("FIRECRAWL_API_KEY", FIRECRAWL_KEY)
            .with("EXA_API_KEY", EXA_KEY)
            .with("JINA_API_KEY", JINA_KEY),
    );
    let out = fx.ok("web_search", r#"{"query": "order"}"#).await;
    let s = structured(&out);
    assert_eq!(s["provider"], "jina");
    let failed: Vec<(&str, &str)> = s["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["provider"].as_str().unwrap(),
                f["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        failed,
        vec![
            ("exa", "HTTP 500 Internal Server Error: boom"),
            ("firecrawl", "it reported a failure (quota exceeded)"),
        ]
    );
}

#[tokio::test]
async fn a_provider_configured_at_a_private_address_is_refused_and_the_chain_moves_on() {
    // admin.test resolves to 127.0.0.2, which the tests treat as the private network.
    let private = Api::start(vec![]).await;
    let ddg = Api::start(vec![(
        "GET",
        "/html/",
        raw_reply(200, "text/html", &ddg_page(1)),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new()
            .with_base_url(Provider::Searxng, private.url_as("admin.test"))
            .with_base_url(Provider::Duckduckgo, ddg.url()),
        StaticSecrets::new(),
    );
    let out = fx.ok("web_search", r#"{"query": "intranet"}"#).await;
    let s = structured(&out);
    assert_eq!(s["provider"], "duckduckgo");
    assert_eq!(s["failed"][0]["provider"], "searxng");
    let why = s["failed"][0]["reason"].as_str().unwrap();
    assert!(why.contains("127.0.0.2"), "{why}");
    assert!(private.seen().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Choosing providers.

#[tokio::test]
async fn an_explicit_provider_without_its_key_names_the_variable_and_the_usable_ones() {
    let tavily = Api::start(vec![]).await;
    let fx = fixture(
        SearchConfig::new().with_base_url(Provider::Tavily, tavily.url()),
        StaticSecrets::new().with("TAVILY_API_KEY", TAVILY_KEY),
    );
    let err = fx
        .err("web_search", r#"{"query": "x", "provider": "brave"}"#)
        .await;
    match &err {
        ToolError::InvalidArgs { path, message } => {
            assert_eq!(path, "/provider");
            assert_eq!(
                message,
                "Brave needs an API key in BRAVE_API_KEY; set it, or use one of: tavily, duckduckgo"
            );
        }
        other => panic!("{other:?}"),
    }
    let err = fx
        .err("web_search", r#"{"query": "x", "provider": "searxng"}"#)
        .await;
    assert!(
        err.to_string()
            .contains("SearXNG needs the address of a SearXNG instance in SEARXNG_URL or in web.search_urls.searxng in toolshed.toml; set it, or use one of: tavily, duckduckgo"),
        "{err}"
    );
    // A renamed variable is the one named.
    let fx = fixture(
        SearchConfig::new().with_key_env(Provider::Brave, "MY_BRAVE"),
        StaticSecrets::new().with("BRAVE_API_KEY", BRAVE_KEY),
    );
    let err = fx
        .err("web_search", r#"{"query": "x", "provider": "brave"}"#)
        .await;
    assert!(
        err.to_string()
            .contains("Brave needs an API key in MY_BRAVE;"),
        "{err}"
    );
    assert!(tavily.seen().is_empty());
}

#[tokio::test]
async fn an_explicit_provider_that_fails_does_not_fall_back() {
    let brave = Api::start(vec![(
        "GET",
        "/res/v1/web/search",
        json_reply(500, json!({})),
    )])
    .await;
    let ddg = Api::start(vec![(
        "GET",
        "/html/",
        raw_reply(200, "text/html", &ddg_page(2)),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new()
            .with_base_url(Provider::Brave, brave.url())
            .with_base_url(Provider::Duckduckgo, ddg.url()),
        StaticSecrets::new().with("BRAVE_API_KEY", BRAVE_KEY),
    );
    let err = fx
        .err("web_search", r#"{"query": "x", "provider": "brave"}"#)
        .await;
    assert_eq!(
        err.to_string(),
        "Brave could not answer (HTTP 500 Internal Server Error). Try again later, or use another provider: duckduckgo."
    );
    assert_eq!(brave.seen().len(), 1);
    assert!(ddg.seen().is_empty());
}

#[tokio::test]
async fn without_any_key_duckduckgo_answers() {
    let ddg = Api::start(vec![(
        "GET",
        "/html/",
        raw_reply(200, "text/html", DDG_PAGE),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new().with_base_url(Provider::Duckduckgo, ddg.url()),
        StaticSecrets::new(),
    );
    let out = fx.ok("web_search", r#"{"query": "learn rust"}"#).await;
    let s = structured(&out);
    assert_eq!(s["provider"], "duckduckgo");
    assert_eq!(s["failed"], json!([]));
    assert_eq!(
        results(&out)[0].1,
        "https://www.rust-lang.org/learn?a=1&b=%C3%A9"
    );
    assert_eq!(ddg.only().param("q"), Some("learn rust"));
}

#[tokio::test]
async fn searxng_joins_the_chain_only_with_an_address() {
    let searx = Api::start(vec![(
        "GET",
        "/search",
        json_reply(
            200,
            json!({"results": [{"url": "https://s.example/", "title": "S", "content": "c"}]}),
        ),
    )])
    .await;
    let ddg = Api::start(vec![(
        "GET",
        "/html/",
        raw_reply(200, "text/html", &ddg_page(1)),
    )])
    .await;
    let search = SearchConfig::new().with_base_url(Provider::Duckduckgo, ddg.url_as("other.test"));
    // No address: only DuckDuckGo is declared and asked.
    let fx = fixture(search.clone(), StaticSecrets::new());
    let prepared = fx
        .stack
        .registry()
        .prepare("web_search", json!({"query": "x"}), &fx.ctx)
        .unwrap();
    assert_eq!(
        prepared.accesses,
        vec![Access::Network {
            host: "other.test".into()
        }]
    );
    let out = fx.ok("web_search", r#"{"query": "x"}"#).await;
    assert_eq!(structured(&out)["provider"], "duckduckgo");
    assert_eq!(structured(&out)["failed"], json!([]));
    assert!(searx.seen().is_empty());
    // The address in SEARXNG_URL puts it before DuckDuckGo.
    let fx = fixture(
        search,
        StaticSecrets::new().with("SEARXNG_URL", &searx.url_as("site.test")),
    );
    let prepared = fx
        .stack
        .registry()
        .prepare("web_search", json!({"query": "x"}), &fx.ctx)
        .unwrap();
    assert_eq!(
        prepared.accesses,
        vec![
            Access::Network {
                host: "site.test".into()
            },
            Access::Network {
                host: "other.test".into()
            },
        ]
    );
    let out = fx.ok("web_search", r#"{"query": "x"}"#).await;
    assert_eq!(structured(&out)["provider"], "searxng");
    assert_eq!(searx.seen().len(), 1);
    assert_eq!(
        ddg.seen().len(),
        1,
        "only the first, address-less call went to DuckDuckGo"
    );
}

#[tokio::test]
async fn access_declares_each_host_the_call_may_try_and_leaves_denied_ones_out() {
    let ddg = Api::start(vec![(
        "GET",
        "/html/",
        raw_reply(200, "text/html", &ddg_page(1)),
    )])
    .await;
    let search = SearchConfig::new()
        .with_base_url(Provider::Brave, "http://site.test:9")
        .with_base_url(Provider::Tavily, "http://site.test:9/tavily")
        .with_base_url(Provider::Duckduckgo, ddg.url_as("other.test"));
    let keys = StaticSecrets::new()
        .with("BRAVE_API_KEY", BRAVE_KEY)
        .with("TAVILY_API_KEY", TAVILY_KEY);
    let fx = fixture(search.clone(), keys.clone());
    let prepare = |args: Value| {
        fx.stack
            .registry()
            .prepare("web_search", args, &fx.ctx)
            .map(|p| p.accesses)
    };
    let net = |h: &str| Access::Network { host: h.into() };
    assert_eq!(
        prepare(json!({"query": "x"})).unwrap(),
        vec![net("site.test"), net("other.test")]
    );
    assert_eq!(
        prepare(json!({"query": "x", "provider": "duckduckgo"})).unwrap(),
        vec![net("other.test")]
    );
    // A host on the deny list is left out of the chain, and the output says why.
    let mut denying = policy();
    denying.denied_hosts = vec!["site.test".into()];
    let fx = fixture_with(search, keys, denying);
    let accesses = fx
        .stack
        .registry()
        .prepare("web_search", json!({"query": "x"}), &fx.ctx)
        .unwrap()
        .accesses;
    assert_eq!(accesses, vec![net("other.test")]);
    let out = fx.ok("web_search", r#"{"query": "x"}"#).await;
    let s = structured(&out);
    assert_eq!(s["provider"], "duckduckgo");
    assert_eq!(
        s["failed"],
        json!([
            {"provider": "brave", "reason": "its host site.test is on the denied host list"},
            {"provider": "tavily", "reason": "its host site.test is on the denied host list"},
        ])
    );
    // Named explicitly, the denied provider meets the policy's refusal.
    let err = fx
        .err("web_search", r#"{"query": "x", "provider": "brave"}"#)
        .await;
    assert_eq!(err.kind(), ErrorKind::Denied, "{err}");
}

// ---------------------------------------------------------------------------------------------
// Counts and arguments.

#[tokio::test]
async fn count_caps_the_results_and_is_sent_to_the_provider() {
    let brave = Api::start(vec![(
        "GET",
        "/res/v1/web/search",
        json_reply(200, brave_answer(12)),
    )])
    .await;
    let ddg = Api::start(vec![(
        "GET",
        "/html/",
        raw_reply(200, "text/html", &ddg_page(15)),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new()
            .with_base_url(Provider::Brave, brave.url())
            .with_base_url(Provider::Duckduckgo, ddg.url()),
        StaticSecrets::new().with("BRAVE_API_KEY", BRAVE_KEY),
    );
    for (args, expected, sent) in [
        (
            r#"{"query": "c", "count": 3, "provider": "brave"}"#,
            3,
            Some("3"),
        ),
        (r#"{"query": "c", "provider": "brave"}"#, 5, Some("5")),
        (
            r#"{"query": "c", "count": 10, "provider": "brave"}"#,
            10,
            Some("10"),
        ),
        (
            r#"{"query": "c", "count": 1, "provider": "duckduckgo"}"#,
            1,
            None,
        ),
        (
            r#"{"query": "c", "count": 10, "provider": "duckduckgo"}"#,
            10,
            None,
        ),
    ] {
        let out = fx.ok("web_search", args).await;
        let got = results(&out);
        assert_eq!(got.len(), expected, "{args}");
        assert_eq!(
            got[0].0,
            if sent.is_some() { "Result 1" } else { "D1" },
            "{args}"
        );
        if let Some(n) = sent {
            assert_eq!(
                brave.seen().last().unwrap().param("count"),
                Some(n),
                "{args}"
            );
        }
    }
}

/// Each refused argument beside a benign twin that succeeds.
#[tokio::test]
async fn hostile_arguments_are_refused_and_their_twins_searched() {
    let ddg = Api::start(vec![(
        "GET",
        "/html/",
        raw_reply(200, "text/html", &ddg_page(3)),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new().with_base_url(Provider::Duckduckgo, ddg.url()),
        StaticSecrets::new(),
    );
    let long_ok = "a".repeat(2000);
    let long_bad = "a".repeat(2001);
    let table: Vec<(Value, &str, Value)> = vec![
        (
            json!({"query": "x", "count": 0}),
            "/count",
            json!({"query": "x", "count": 1}),
        ),
        (
            json!({"query": "x", "count": 11}),
            "/count",
            json!({"query": "x", "count": 10}),
        ),
        (
            json!({"query": "x", "count": -1}),
            "/count",
            json!({"query": "x", "count": 2}),
        ),
        (json!({"query": ""}), "/query", json!({"query": "x"})),
        (
            json!({"query": " \t\r\n "}),
            "/query",
            json!({"query": " x "}),
        ),
        (
            json!({"query": "\u{0}\u{1b}"}),
            "/query",
            json!({"query": "\u{0}x\u{1b}"}),
        ),
        (
            json!({"query": long_bad}),
            "/query",
            json!({"query": long_ok}),
        ),
        (
            json!({"query": "x", "provider": "google"}),
            "/provider",
            json!({"query": "x", "provider": "duckduckgo"}),
        ),
        (
            json!({"query": "x", "provider": "DuckDuckGo"}),
            "/provider",
            json!({"query": "x", "provider": "duckduckgo"}),
        ),
        (
            json!({"query": "x", "url": "http://169.254.169.254/"}),
            "",
            json!({"query": "x"}),
        ),
        (json!({"query": ["x"]}), "/query", json!({"query": "x"})),
    ];
    for (bad, path, good) in table {
        let err = fx.err("web_search", &bad.to_string()).await;
        match &err {
            ToolError::InvalidArgs { path: p, .. } => assert_eq!(p, path, "{bad}: {err}"),
            other => panic!("{bad} gave {other:?}"),
        }
        let before = ddg.seen().len();
        let out = fx.ok("web_search", &good.to_string()).await;
        assert_eq!(structured(&out)["provider"], "duckduckgo", "{good}");
        assert_eq!(ddg.seen().len(), before + 1, "{good}");
    }
}

#[tokio::test]
async fn control_characters_in_the_query_are_searched_as_spaces() {
    let brave = Api::start(vec![(
        "GET",
        "/res/v1/web/search",
        json_reply(200, brave_answer(1)),
    )])
    .await;
    let tavily = Api::start(vec![(
        "POST",
        "/search",
        json_reply(200, json!({"results": []})),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new()
            .with_base_url(Provider::Brave, brave.url())
            .with_base_url(Provider::Tavily, tavily.url()),
        every_key(),
    );
    let query = "rust\r\nX-Injected: 1\u{0}async\u{1b}[31m  await";
    let expected = "rust X-Injected: 1 async [31m await";
    let out = fx
        .ok(
            "web_search",
            &json!({"query": query, "provider": "brave"}).to_string(),
        )
        .await;
    assert_eq!(brave.only().param("q"), Some(expected));
    assert!(brave.only().header("x-injected").is_none());
    assert_eq!(structured(&out)["query"], expected);
    fx.ok(
        "web_search",
        &json!({"query": query, "provider": "tavily"}).to_string(),
    )
    .await;
    assert_eq!(tavily.only().json()["query"], expected);
}

#[tokio::test]
async fn a_broken_base_url_is_skipped_in_the_chain_and_refused_by_name() {
    let ddg = Api::start(vec![(
        "GET",
        "/html/",
        raw_reply(200, "text/html", &ddg_page(1)),
    )])
    .await;
    let fx = fixture(
        SearchConfig::new()
            .with_base_url(Provider::Brave, "not a url")
            .with_base_url(Provider::Duckduckgo, ddg.url()),
        StaticSecrets::new().with("BRAVE_API_KEY", BRAVE_KEY),
    );
    let out = fx.ok("web_search", r#"{"query": "x"}"#).await;
    let s = structured(&out);
    assert_eq!(s["provider"], "duckduckgo");
    assert_eq!(
        s["failed"],
        json!([{"provider": "brave", "reason": "its configured base URL `not a url` is not a valid http(s) URL"}])
    );
    let err = fx
        .err("web_search", r#"{"query": "x", "provider": "brave"}"#)
        .await;
    assert_eq!(
        err.to_string(),
        "The configured base URL of Brave (`not a url`) is not a valid http(s) URL; fix the \
         web_search configuration, or use another provider."
    );
    assert_eq!(ddg.seen().len(), 1);
}

/// A results page that nests 5,000 elements deep is read, not crashed on: the results above the
/// cut are found; twin: the same page without the bomb gives the same results.
#[tokio::test]
async fn a_nesting_bomb_in_a_results_page_is_survived() {
    let bomb = format!("{}bottom{}", "<div>".repeat(5000), "</div>".repeat(5000));
    for (label, page) in [
        (
            "bomb",
            DDG_PAGE.replace("</body>", &format!("{bomb}</body>")),
        ),
        ("twin", DDG_PAGE.to_owned()),
    ] {
        let api = Api::start(vec![(
            "GET",
            "/html/",
            raw_reply(200, "text/html; charset=utf-8", &page),
        )])
        .await;
        let fx = fixture(
            SearchConfig::new().with_base_url(Provider::Duckduckgo, api.url()),
            StaticSecrets::new(),
        );
        let out = fx
            .ok(
                "web_search",
                r#"{"query": "rust", "provider": "duckduckgo"}"#,
            )
            .await;
        let found = results(&out);
        assert!(!found.is_empty(), "{label}");
        assert_eq!(
            found[0].1, "https://www.rust-lang.org/learn?a=1&b=%C3%A9",
            "{label}"
        );
    }
}

/// A JSON answer nested 100,000 deep is refused with a sentence (the parser stops at its
/// depth limit), not crashed on; twin: the same provider's ordinary answer is read.
#[tokio::test]
async fn a_json_nesting_bomb_from_a_provider_is_refused_not_crashed_on() {
    let bomb = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    for (label, reply) in [
        ("bomb", raw_reply(200, "application/json", &bomb)),
        ("twin", json_reply(200, brave_answer(1))),
    ] {
        let api = Api::start(vec![("GET", "/res/v1/web/search", reply)]).await;
        let fx = fixture(
            SearchConfig::new().with_base_url(Provider::Brave, api.url()),
            StaticSecrets::new().with("BRAVE_API_KEY", BRAVE_KEY),
        );
        let args = r#"{"query": "rust", "provider": "brave"}"#;
        let result = fx.call("web_search", args).await;
        match label {
            "bomb" => {
                let e = result.unwrap_err();
                assert_eq!(e.kind(), tool_core::ErrorKind::Failed, "{e}");
            }
            _ => assert_eq!(results(&result.unwrap()).len(), 1),
        }
    }
}
