//! web_fetch, browser and browser_open against loopback servers.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Redirect;
use axum::routing::get;
use serde_json::json;
use tool_core::{Policy, ToolError};
use tools_web::{Config, JinaReader, StaticSecrets};

use super::{Fixture, net, policy, serve};

fn url(addr: SocketAddr, path: &str) -> String {
    format!("http://site.test:{}{path}", addr.port())
}

const ARTICLE: &str = r#"<!doctype html><html><head><title>The Rust &amp; Web Guide</title>
<style>body { color: red }</style><script>var secret = "tracking";</script></head>
<body><nav><a href="/">Home</a></nav><h1>Fetching pages</h1>
<p>Read <a href="https://docs.example/more">the docs</a> for <strong>more</strong>.</p>
<ul><li>one</li><li>two</li></ul><noscript>enable js</noscript></body></html>"#;

fn html(body: &'static str) -> ([(header::HeaderName, &'static str); 1], &'static str) {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body)
}

#[tokio::test]
async fn html_becomes_markdown() {
    let addr = serve(Router::new().route("/a", get(|| async { html(ARTICLE) }))).await;
    let fx = Fixture::new();
    let out = fx
        .ok("web_fetch", &json!({"url": url(addr, "/a")}).to_string())
        .await;
    let text = out.joined_text();
    assert!(text.starts_with("Title: The Rust & Web Guide\n"), "{text}");
    assert!(text.contains("# Fetching pages"), "{text}");
    assert!(
        text.contains("[the docs](https://docs.example/more)"),
        "{text}"
    );
    assert!(text.contains("**more**"), "{text}");
    assert!(text.contains("one") && text.contains("two"), "{text}");
    for hidden in ["tracking", "color: red", "enable js", "[Home]"] {
        assert!(!text.contains(hidden), "{hidden} in {text}");
    }
    let s = out.structured.unwrap();
    assert_eq!(s["content_type"], "text/html");
    assert!(s["next_start_index"].is_null());

    let raw = fx
        .ok(
            "web_fetch",
            &json!({"url": url(addr, "/a"), "raw": true}).to_string(),
        )
        .await
        .joined_text();
    assert!(raw.contains("<h1>Fetching pages</h1>"), "{raw}");
}

/// A long page is read in parts with the hint's start_index, and fetched once.
#[tokio::test]
async fn long_pages_are_paged_from_one_fetch() {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    // 1,200 numbered lines of plain text (with multi-byte characters), ~36k characters.
    let body: String = (0..1200).map(|i| format!("line {i:04} — ü\n")).collect();
    let total = body.chars().count();
    let served = body.clone();
    let app = Router::new().route(
        "/long",
        get(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            let b = served.clone();
            async move { ([(header::CONTENT_TYPE, "text/plain")], b) }
        }),
    );
    let addr = serve(app).await;
    let fx = Fixture::new();
    let mut start = 0usize;
    let mut assembled = String::new();
    let mut calls = 0;
    loop {
        let args = json!({"url": url(addr, "/long"), "max_chars": 10_000, "start_index": start});
        let out = fx.ok("web_fetch", &args.to_string()).await;
        let s = out.structured.clone().unwrap();
        let text = out.joined_text();
        let body_part = text.split_once("\n\n").unwrap().1;
        let end = s["end_index"].as_u64().unwrap() as usize;
        let part = body_part.split("\n\n[").next().unwrap();
        assembled.push_str(part);
        calls += 1;
        match s["next_start_index"].as_u64() {
            Some(next) => {
                assert!(text.contains(&format!("start_index={next}")), "{text}");
                assert_eq!(next as usize, end);
                start = end;
            }
            None => break,
        }
    }
    assert_eq!(calls, total.div_ceil(10_000));
    assert_eq!(assembled, body);
    assert_eq!(hits.load(Ordering::SeqCst), 1, "the page was fetched once");

    match fx
        .err(
            "web_fetch",
            &json!({"url": url(addr, "/long"), "start_index": total + 5}).to_string(),
        )
        .await
    {
        ToolError::InvalidArgs { path, message } => {
            assert_eq!(path, "/start_index");
            assert!(
                message.contains(&format!("has {total} characters")),
                "{message}"
            );
        }
        e => panic!("{e:?}"),
    }
}

/// Charsets from the header, a meta tag, or a byte-order mark.
#[tokio::test]
async fn charsets_are_decoded() {
    let app = Router::new()
        .route(
            "/latin1",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/plain; charset=ISO-8859-1")],
                    b"caf\xe9 cr\xe8me".to_vec(),
                )
            }),
        )
        .route(
            "/meta",
            get(|| async {
                let mut body =
                    b"<html><head><meta charset=\"windows-1251\"><title>t</title></head><body><p>"
                        .to_vec();
                body.extend_from_slice(b"\xcf\xf0\xe8\xe2\xe5\xf2");
                body.extend_from_slice(b"</p></body></html>");
                ([(header::CONTENT_TYPE, "text/html")], body)
            }),
        )
        .route(
            "/bom",
            get(|| async {
                let mut body = vec![0xff, 0xfe];
                for u in "grüße".encode_utf16() {
                    body.extend_from_slice(&u.to_le_bytes());
                }
                ([(header::CONTENT_TYPE, "text/plain")], body)
            }),
        );
    let addr = serve(app).await;
    let fx = Fixture::new();
    for (path, want) in [
        ("/latin1", "café crème"),
        ("/meta", "Привет"),
        ("/bom", "grüße"),
    ] {
        let text = fx
            .ok("web_fetch", &json!({"url": url(addr, path)}).to_string())
            .await
            .joined_text();
        assert!(text.contains(want), "{path}: {text}");
    }
}

#[tokio::test]
async fn non_text_and_error_pages() {
    let app = Router::new()
        .route(
            "/pic",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "image/png")],
                    vec![0x89u8, b'P', b'N', b'G'],
                )
            }),
        )
        .route(
            "/gone",
            get(|| async {
                (
                    StatusCode::NOT_FOUND,
                    [(header::CONTENT_TYPE, "text/html")],
                    "<h1>Not here</h1>",
                )
            }),
        )
        .route(
            "/away",
            get(|| async { Redirect::temporary("http://other.test/elsewhere") }),
        );
    let addr = serve(app).await;
    let fx = Fixture::new();
    match fx
        .err("web_fetch", &json!({"url": url(addr, "/pic")}).to_string())
        .await
    {
        ToolError::Failed(m) => {
            assert!(m.contains("image/png (4 bytes), not a text page"), "{m}");
            assert!(m.contains("http_request"), "{m}");
        }
        e => panic!("{e:?}"),
    }
    let text = fx
        .ok("web_fetch", &json!({"url": url(addr, "/gone")}).to_string())
        .await
        .joined_text();
    assert!(text.contains("Status: HTTP 404 Not Found"), "{text}");
    assert!(text.contains("# Not here"), "{text}");
    match fx
        .err("web_fetch", &json!({"url": url(addr, "/away")}).to_string())
        .await
    {
        // The policy refused the hop: a denial, not a failure.
        ToolError::Denied(m) => {
            assert!(
                m.contains("redirects to http://other.test/elsewhere"),
                "{m}"
            );
            assert!(m.contains("not on the host allow list"), "{m}");
        }
        e => panic!("{e:?}"),
    }
    match fx
        .err(
            "web_fetch",
            &json!({"url": url(addr, "/gone"), "max_chars": 0}).to_string(),
        )
        .await
    {
        ToolError::InvalidArgs { path, .. } => assert_eq!(path, "/max_chars"),
        e => panic!("{e:?}"),
    }
}

/// With a key, pages go through Jina Reader (the request it gets is checked); without one,
/// they are converted here.
#[tokio::test]
async fn jina_reader_when_keyed() {
    let page = serve(Router::new().route("/a", get(|| async { html(ARTICLE) }))).await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    let record = Arc::clone(&seen);
    let reader = serve(
        Router::new().fallback(move |uri: axum::http::Uri, headers: HeaderMap| {
            let record = Arc::clone(&record);
            async move {
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                record.lock().unwrap().push((uri.to_string(), auth));
                (
                    [(header::CONTENT_TYPE, "text/plain")],
                    "Title: Read by Jina\n\n# Reader output",
                )
            }
        }),
    )
    .await;
    let jina = JinaReader::new().with_base_url(format!("http://127.0.0.1:{}", reader.port()));
    let keyed = Config::new()
        .with_net(net())
        .with_jina_reader(jina.clone())
        .with_secrets(Arc::new(
            StaticSecrets::new().with("JINA_API_KEY", "jina-key-1"),
        ));
    let fx = Fixture::with(keyed, policy());
    let target = url(page, "/a");
    let text = fx
        .ok("web_fetch", &json!({"url": target}).to_string())
        .await
        .joined_text();
    assert!(text.contains("# Reader output"), "{text}");
    assert!(!text.contains("jina-key-1"), "{text}");
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].0, format!("/{target}"));
        assert_eq!(seen[0].1, "Bearer jina-key-1");
    }
    // raw bypasses the reader.
    let raw = fx
        .ok(
            "web_fetch",
            &json!({"url": target, "raw": true}).to_string(),
        )
        .await
        .joined_text();
    assert!(raw.contains("<h1>Fetching pages</h1>"), "{raw}");

    let unkeyed = Config::new()
        .with_net(net())
        .with_jina_reader(jina)
        .with_secrets(Arc::new(StaticSecrets::new()));
    let fx = Fixture::with(unkeyed, policy());
    let text = fx
        .ok("web_fetch", &json!({"url": target}).to_string())
        .await
        .joined_text();
    assert!(text.contains("# Fetching pages"), "{text}");
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "the reader was not asked again"
    );
}

/// A fake desktop browser: a script that records its arguments.
fn fake_browser(dir: &std::path::Path, exit: i32) -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let log = dir.join("opened.txt");
    let script = dir.join("fake-browser");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" >> '{}'\nexit {exit}\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, log)
}

#[tokio::test]
async fn browser_open_needs_https_and_the_allow_list() {
    let bin = tempfile::tempdir().unwrap();
    let (script, log) = fake_browser(bin.path(), 0);
    let config = Config::new()
        .with_net(net())
        .with_browser_command(vec![script.clone().into()]);
    let mut full = Policy::full();
    full.allow_http = true;
    full.allowed_hosts = vec!["site.test".into()];
    for policy in [policy(), full] {
        let fx = Fixture::with(config.clone(), policy);
        let rows: Vec<(&str, &str, Option<&str>)> = vec![
            ("listed https", "https://site.test/docs?q=1", None),
            ("subdomain https", "https://www.site.test/", None),
            (
                "plain http",
                "http://site.test/docs",
                Some("only opens https://"),
            ),
            (
                "unlisted host",
                "https://other.test/",
                Some("not on the host allow list"),
            ),
            ("private address", "https://admin.test/", Some("admin.test")),
            (
                "userinfo",
                "https://site.test@other.test/",
                Some("user information"),
            ),
            ("file", "file:///etc/passwd", Some("scheme `file:`")),
            ("option-like", "-new-window", Some("not an absolute URL")),
        ];
        for (label, url, refusal) in rows {
            let got = fx
                .call("browser_open", &json!({"url": url}).to_string())
                .await;
            match (refusal, got) {
                (None, Ok(out)) => assert!(out.joined_text().starts_with("Opened"), "{label}"),
                (Some(part), Err(e)) => assert!(e.to_string().contains(part), "{label}: {e}"),
                (want, got) => panic!("{label}: wanted {want:?}, got {got:?}"),
            }
        }
        // browser's open action takes the same path.
        let out = fx
            .ok(
                "browser",
                &json!({"action": "open", "url": "https://site.test/b"}).to_string(),
            )
            .await;
        assert!(out.joined_text().contains("Opened https://site.test/b"));
    }
    let opened = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        opened.lines().collect::<Vec<_>>(),
        [
            "https://site.test/docs?q=1",
            "https://www.site.test/",
            "https://site.test/b",
            "https://site.test/docs?q=1",
            "https://www.site.test/",
            "https://site.test/b",
        ]
    );

    // A browser command that fails is reported.
    let bin2 = tempfile::tempdir().unwrap();
    let (failing, _) = fake_browser(bin2.path(), 3);
    let fx = Fixture::with(
        Config::new()
            .with_net(net())
            .with_browser_command(vec![failing.into()]),
        policy(),
    );
    match fx
        .err(
            "browser_open",
            &json!({"url": "https://site.test/"}).to_string(),
        )
        .await
    {
        ToolError::Failed(m) => assert!(m.contains("exit code 3"), "{m}"),
        e => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn browser_reads_pages() {
    let addr = serve(Router::new().route("/a", get(|| async { html(ARTICLE) }))).await;
    let fx = Fixture::new();
    let text = fx
        .ok(
            "browser",
            &json!({"action": "read", "url": url(addr, "/a")}).to_string(),
        )
        .await
        .joined_text();
    assert!(text.contains("# Fetching pages"), "{text}");
    match fx
        .err(
            "browser",
            &json!({"action": "screenshot", "url": url(addr, "/a")}).to_string(),
        )
        .await
    {
        ToolError::InvalidArgs { path, .. } => assert_eq!(path, "/action"),
        e => panic!("{e:?}"),
    }
}

/// A hostile page cannot crash the process by nesting: 5,000 nested elements (closed, unclosed,
/// misnested) come back as text with a note instead of overflowing the stack, beside a twin
/// of the same words nested twenty deep that converts with its structure and no note.
#[tokio::test]
async fn nesting_bombs_are_read_not_crashed_on() {
    let bombs: Vec<(&str, String, bool)> = vec![
        (
            "/closed",
            format!(
                "{}<h2>deep words</h2>{}",
                "<div>".repeat(5000),
                "</div>".repeat(5000)
            ),
            true,
        ),
        (
            "/unclosed",
            format!("{}deep words", "<span>".repeat(5000)),
            true,
        ),
        (
            "/misnested",
            format!("{}deep words", "<i><div></i>".repeat(3000)),
            true,
        ),
        (
            "/twin",
            format!(
                "{}<h2>deep words</h2>{}",
                "<div>".repeat(20),
                "</div>".repeat(20)
            ),
            false,
        ),
    ];
    let mut app = Router::new();
    for (path, body, _) in &bombs {
        let body: &'static str = Box::leak(body.clone().into_boxed_str());
        app = app.route(path, get(move || async move { html(body) }));
    }
    let addr = serve(app).await;
    let fx = Fixture::new();
    for (path, _, cut) in &bombs {
        let text = fx
            .ok("web_fetch", &json!({"url": url(addr, path)}).to_string())
            .await
            .joined_text();
        assert!(text.contains("deep words"), "{path}: {text}");
        assert_eq!(
            text.contains("nests elements deeper"),
            *cut,
            "{path}: {text}"
        );
        if !cut {
            assert!(text.contains("## deep words"), "{path}: {text}");
        }
    }
}

/// Pages whose parse used to cost the square of their nesting (html5ever's tree builder checks
/// its stack of open elements on every tag): each at full size (up to 1.2 MB, under the 5 MiB
/// page cap), served over HTTP, comes back as text with the note, beside a twin of the same
/// shape repeated ten times that converts with its structure and no note. The work is bounded
/// in the unit tests of `dom` (by the depth html5ever is given), not timed here.
#[tokio::test]
async fn deep_and_misnested_pages_come_back_as_text() {
    let rows: Vec<(&str, &str, usize)> = vec![
        ("/div", "<div>", 200_000),
        ("/ul", "<ul><li>", 100_000),
        ("/b-div", "<b><div></b>", 100_000),
        ("/div-span", "<div></span>", 100_000),
        ("/div-table", "<div><table></div></table>", 50_000),
        ("/table", "<table><tr><td>", 50_000),
    ];
    let mut pages: Vec<(String, String, bool)> = Vec::new();
    for (path, unit, n) in &rows {
        for (suffix, count, deep) in [("", *n, true), ("-twin", 10, false)] {
            let body = format!("<html><body>{}<h2>deep words</h2>", unit.repeat(count));
            pages.push((format!("{path}{suffix}"), body, deep));
        }
    }
    let mut app = Router::new();
    for (path, body, _) in &pages {
        let body: &'static str = Box::leak(body.clone().into_boxed_str());
        app = app.route(path, get(move || async move { html(body) }));
    }
    let addr = serve(app).await;
    let fx = Fixture::new();
    for (path, body, deep) in &pages {
        assert!(body.len() < 5 * 1024 * 1024, "{path}");
        let text = fx
            .ok("web_fetch", &json!({"url": url(addr, path)}).to_string())
            .await
            .joined_text();
        assert!(text.contains("deep words"), "{path}: {text}");
        assert!(
            !text.contains("was cut") && !text.contains("broke off"),
            "{path}: {text}"
        );
        assert_eq!(
            text.contains("nests elements deeper"),
            *deep,
            "{path}: {text}"
        );
        if !deep {
            assert!(text.contains("## deep words"), "{path}: {text}");
        }
    }
}
