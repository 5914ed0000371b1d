//! The SSRF table: every refused URL beside a benign twin that works, with a "private" server
//! on 127.0.0.2 that must never see a request.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::http::header;
use axum::response::Redirect;
use axum::routing::get;
use serde_json::json;
use tool_core::{Policy, ToolError};
use tools_web::{Config, Lookup, NetConfig, net::LookupFuture};

use super::{Fixture, LOOPBACK, PRIVATE, lookup, net, policy, serve, serve_on};

/// A server on the private address that counts the requests it gets.
async fn private_server() -> (SocketAddr, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    let app = Router::new().fallback(move || {
        let counter = Arc::clone(&counter);
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            "admin panel"
        }
    });
    (serve_on(PRIVATE, app).await, hits)
}

async fn public_server() -> SocketAddr {
    serve(Router::new().fallback(|| async { "public page" })).await
}

enum Want {
    /// The call works and shows the public page.
    Ok,
    /// The call is refused by policy with a message containing this.
    Denied(&'static str),
    /// The arguments are rejected with a message containing this.
    Invalid(&'static str),
}

#[tokio::test]
async fn address_and_url_table() {
    let (private, hits) = private_server().await;
    let public = public_server().await;
    let (pp, p) = (private.port(), public.port());
    // Each row: a label, the URL, what must happen. Refusals come with twins that differ
    // only in the detail that makes them safe.
    let rows: Vec<(&str, String, Want)> = vec![
        (
            "exempt loopback",
            format!("http://127.0.0.1:{p}/"),
            Want::Ok,
        ),
        (
            "private address",
            format!("http://127.0.0.2:{pp}/"),
            Want::Denied("loopback range"),
        ),
        ("name to public", format!("http://site.test:{p}/"), Want::Ok),
        (
            "name to private",
            format!("http://admin.test:{pp}/"),
            Want::Denied("admin.test resolves to 127.0.0.2"),
        ),
        (
            "one bad record of two",
            format!("http://multi.test:{p}/"),
            Want::Denied("multi.test resolves to 127.0.0.2"),
        ),
        (
            "cloud metadata by name",
            format!("http://metadata.test:{p}/"),
            Want::Denied("link-local"),
        ),
        (
            "private by name",
            format!("http://ten.test:{p}/"),
            Want::Denied("private range 10.0.0.0/8"),
        ),
        (
            "mapped by name",
            format!("http://mapped.test:{pp}/"),
            Want::Denied("IPv4-mapped"),
        ),
        // Odd spellings of 127.0.0.2 and of the exempt 127.0.0.1: the parser normalises both,
        // so the twin proves the spelling reached the check as an address.
        (
            "decimal",
            format!("http://2130706434:{pp}/"),
            Want::Denied("127.0.0.2"),
        ),
        ("decimal twin", format!("http://2130706433:{p}/"), Want::Ok),
        (
            "hex",
            format!("http://0x7f000002:{pp}/"),
            Want::Denied("127.0.0.2"),
        ),
        ("hex twin", format!("http://0x7f000001:{p}/"), Want::Ok),
        (
            "dotted hex",
            format!("http://0x7f.0.0.2:{pp}/"),
            Want::Denied("127.0.0.2"),
        ),
        (
            "octal",
            format!("http://0177.0.0.2:{pp}/"),
            Want::Denied("127.0.0.2"),
        ),
        ("octal twin", format!("http://0177.0.0.1:{p}/"), Want::Ok),
        (
            "short form",
            format!("http://127.2:{pp}/"),
            Want::Denied("127.0.0.2"),
        ),
        ("short form twin", format!("http://127.1:{p}/"), Want::Ok),
        (
            "mixed radix",
            format!("http://0x7f.0.0.02:{pp}/"),
            Want::Denied("127.0.0.2"),
        ),
        (
            "IPv4-mapped IPv6",
            format!("http://[::ffff:127.0.0.2]:{pp}/"),
            Want::Denied("IPv4-mapped"),
        ),
        (
            "IPv4-mapped hex",
            format!("http://[::ffff:7f00:2]:{pp}/"),
            Want::Denied("IPv4-mapped"),
        ),
        (
            "IPv4-compatible",
            format!("http://[::127.0.0.2]:{pp}/"),
            Want::Denied("IPv4-compatible"),
        ),
        (
            "NAT64",
            format!("http://[64:ff9b::7f00:2]:{pp}/"),
            Want::Denied("NAT64"),
        ),
        (
            "6to4",
            format!("http://[2002:7f00:2::1]:{pp}/"),
            Want::Denied("6to4"),
        ),
        (
            "IPv6 loopback",
            "http://[::1]/".into(),
            Want::Denied("loopback address ::1"),
        ),
        (
            "IPv6 unspecified",
            "http://[::]/".into(),
            Want::Denied("unspecified"),
        ),
        (
            "unique local",
            "http://[fd00:ec2::254]/".into(),
            Want::Denied("unique-local"),
        ),
        (
            "link-local v6",
            "http://[fe80::1]/".into(),
            Want::Denied("link-local"),
        ),
        (
            "metadata literal",
            "http://169.254.169.254/latest/meta-data/".into(),
            Want::Denied("link-local"),
        ),
        (
            "unspecified v4",
            "http://0.0.0.0/".into(),
            Want::Denied("0.0.0.0/8"),
        ),
        ("zero short", "http://0/".into(), Want::Denied("0.0.0.0/8")),
        (
            "private 192.168",
            "http://192.168.1.1/".into(),
            Want::Denied("192.168.0.0/16"),
        ),
        (
            "private 172.16",
            "http://172.16.0.1/".into(),
            Want::Denied("172.16.0.0/12"),
        ),
        (
            "cgnat",
            "http://100.64.0.1/".into(),
            Want::Denied("carrier-grade NAT"),
        ),
        (
            "multicast",
            "http://224.0.0.1/".into(),
            Want::Denied("multicast"),
        ),
        (
            "broadcast",
            "http://255.255.255.255/".into(),
            Want::Denied("broadcast"),
        ),
        (
            "documentation",
            "http://192.0.2.1/".into(),
            Want::Denied("documentation"),
        ),
        (
            "benchmarking",
            "http://198.18.0.1/".into(),
            Want::Denied("benchmarking"),
        ),
        (
            "localhost",
            format!("http://localhost:{p}/"),
            Want::Denied("this machine"),
        ),
        (
            "localhost subdomain",
            format!("http://app.localhost:{p}/"),
            Want::Denied("this machine"),
        ),
        (
            "localhost trailing dot",
            format!("http://localhost.:{p}/"),
            Want::Denied("localhost"),
        ),
        // User information hides the real host.
        (
            "userinfo hiding the host",
            format!("http://site.test@admin.test:{pp}/"),
            Want::Denied("user information"),
        ),
        (
            "userinfo with password",
            format!("http://u:p@site.test:{p}/"),
            Want::Denied("user information"),
        ),
        (
            "userinfo twin",
            format!("http://site.test:{p}/@admin.test"),
            Want::Ok,
        ),
        (
            "backslash trick",
            format!("http://site.test:{p}\\@admin.test/"),
            Want::Ok,
        ),
        // Schemes.
        (
            "file",
            "file:///etc/passwd".into(),
            Want::Invalid("scheme `file:`"),
        ),
        (
            "ftp",
            "ftp://site.test/".into(),
            Want::Invalid("scheme `ftp:`"),
        ),
        (
            "gopher",
            format!("gopher://site.test:{p}/"),
            Want::Invalid("scheme `gopher:`"),
        ),
        (
            "javascript",
            "javascript:alert(1)".into(),
            Want::Invalid("scheme `javascript:`"),
        ),
        (
            "data",
            "data:text/plain,hi".into(),
            Want::Invalid("scheme `data:`"),
        ),
        (
            "scheme case twin",
            format!("HTTP://SITE.TEST:{p}/"),
            Want::Ok,
        ),
        (
            "trailing dot twin",
            format!("http://site.test.:{p}/"),
            Want::Ok,
        ),
        (
            "relative",
            "/etc/passwd".into(),
            Want::Invalid("not an absolute URL"),
        ),
        // Raw control characters: the URL parser would drop tabs and line breaks silently and
        // fetch another URL than the one written. Percent-encoded, they are data.
        (
            "CR LF smuggling a header",
            format!("http://site.test:{p}/x\r\nHost: admin.test"),
            Want::Invalid("control character U+000D (carriage return) at byte"),
        ),
        (
            "line feed inside the host",
            format!("http://admin.te\nst.site.test:{p}/"),
            Want::Invalid("control character U+000A (line feed)"),
        ),
        (
            "tab inside the host",
            format!("http://site.\ttest:{p}/"),
            Want::Invalid("control character U+0009 (tab)"),
        ),
        (
            "trailing line break",
            format!("http://site.test:{p}/\n"),
            Want::Invalid("U+000A"),
        ),
        (
            "NUL",
            format!("http://site.test:{p}/\0admin"),
            Want::Invalid("U+0000 (NUL)"),
        ),
        (
            "escape",
            format!("http://site.test:{p}/\u{1b}[2J"),
            Want::Invalid("U+001B (escape)"),
        ),
        (
            "C1 next-line",
            format!("http://site.test:{p}/\u{85}"),
            Want::Invalid("percent-encoded (%C2%85)"),
        ),
        (
            "percent-encoded CR LF twin",
            format!("http://site.test:{p}/x%0D%0AHost:%20admin.test"),
            Want::Ok,
        ),
        (
            "surrounding spaces twin",
            format!("  http://site.test:{p}/  "),
            Want::Ok,
        ),
    ];
    let fx = Fixture::new();
    for (label, url, want) in rows {
        let args = json!({"url": url}).to_string();
        let got = fx.call("http_request", &args).await;
        match (want, got) {
            (Want::Ok, Ok(out)) => {
                let text = out.joined_text();
                assert!(text.contains("public page"), "{label}: {text}");
            }
            (Want::Denied(part), Err(ToolError::Denied(m))) => {
                assert!(m.contains(part), "{label}: {m}")
            }
            (Want::Invalid(part), Err(ToolError::InvalidArgs { message, .. })) => {
                assert!(message.contains(part), "{label}: {message}")
            }
            (_, got) => panic!("{label} ({url}): unexpected {got:?}"),
        }
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the private server was reached"
    );
}

/// https only unless the policy allows http; the deny list beats everything.
#[tokio::test]
async fn scheme_and_deny_list_policy() {
    let public = public_server().await;
    let p = public.port();
    let mut strict = policy();
    strict.allow_http = false;
    let fx = Fixture::with(Config::new().with_net(net()), strict);
    match fx
        .err(
            "http_request",
            &json!({"url": format!("http://site.test:{p}/")}).to_string(),
        )
        .await
    {
        ToolError::Denied(m) => assert!(m.contains("use https://site.test"), "{m}"),
        e => panic!("{e:?}"),
    }
    // The twin: https is attempted (the plain server cannot speak TLS, so it fails to connect,
    // but not by policy).
    match fx
        .err(
            "http_request",
            &json!({"url": format!("https://site.test:{p}/")}).to_string(),
        )
        .await
    {
        ToolError::Failed(m) => assert!(m.contains("site.test"), "{m}"),
        e => panic!("{e:?}"),
    }

    let mut denied = Policy::full();
    denied.allow_http = true;
    denied.denied_hosts = vec!["site.test".into(), "bücher.test".into()];
    let lookup = lookup().with("xn--bcher-kva.test", &[LOOPBACK]);
    let net = NetConfig::default()
        .with_lookup(Arc::new(lookup))
        .allow_loopback_for_tests(&[LOOPBACK])
        .unwrap();
    let fx = Fixture::with(Config::new().with_net(net.clone()), denied);
    for url in [
        format!("http://site.test:{p}/"),
        format!("http://SITE.test.:{p}/"),
        format!("http://api.site.test:{p}/"),
        format!("http://bücher.test:{p}/"),
        format!("http://xn--bcher-kva.test:{p}/"),
    ] {
        match fx
            .err("http_request", &json!({"url": url}).to_string())
            .await
        {
            ToolError::Denied(m) => assert!(m.contains("denied host list"), "{url}: {m}"),
            e => panic!("{url}: {e:?}"),
        }
    }
    let text = fx
        .ok(
            "http_request",
            &json!({"url": format!("http://other.test:{p}/")}).to_string(),
        )
        .await
        .joined_text();
    assert!(text.contains("public page"), "{text}");
    // Internationalised names reach the resolver in punycode.
    let fx = Fixture::with(Config::new().with_net(net), {
        let mut p = Policy::full();
        p.allow_http = true;
        p
    });
    let text = fx
        .ok(
            "http_request",
            &json!({"url": format!("http://BÜCHER.test:{p}/")}).to_string(),
        )
        .await
        .joined_text();
    assert!(text.contains("public page"), "{text}");
}

/// Redirect chains into private space are refused at the hop; the private server sees nothing.
#[tokio::test]
async fn redirects_into_private_space() {
    let (private, hits) = private_server().await;
    let pp = private.port();
    let app = Router::new()
        .route(
            "/to-ip",
            get(move || async move { Redirect::temporary(&format!("http://127.0.0.2:{pp}/")) }),
        )
        .route(
            "/to-name",
            get(move || async move { Redirect::temporary(&format!("http://admin.test:{pp}/")) }),
        )
        .route(
            "/to-decimal",
            get(move || async move { Redirect::temporary(&format!("http://2130706434:{pp}/")) }),
        )
        .route(
            "/to-metadata",
            get(|| async { Redirect::temporary("http://169.254.169.254/latest/meta-data/iam") }),
        )
        .route(
            "/to-file",
            get(|| async { Redirect::temporary("file:///etc/passwd") }),
        )
        .route(
            "/to-userinfo",
            get(move || async move { Redirect::temporary(&format!("http://x@admin.test:{pp}/")) }),
        )
        .route("/chain", get(|| async { Redirect::temporary("/to-name") }))
        .route("/fine", get(|| async { Redirect::temporary("/landing") }))
        .route("/landing", get(|| async { "landed" }));
    let addr = serve(app).await;
    let mut full = Policy::full();
    full.allow_http = true;
    // Even full autonomy, which follows redirects to any host, stops at private addresses; so
    // does an allow list that (by mistake) names the private host.
    let mut listed = policy();
    listed.allowed_hosts.push("admin.test".into());
    for policy in [listed, full] {
        let fx = Fixture::with(Config::new().with_net(net()), policy);
        for path in [
            "/to-ip",
            "/to-name",
            "/to-decimal",
            "/to-metadata",
            "/to-userinfo",
            "/chain",
        ] {
            let url = format!("http://site.test:{}{path}", addr.port());
            match fx
                .err("http_request", &json!({"url": url}).to_string())
                .await
            {
                ToolError::Denied(m) => {
                    assert!(m.contains("The server redirected to"), "{path}: {m}")
                }
                e => panic!("{path}: {e:?}"),
            }
        }
        let url = format!("http://site.test:{}/to-file", addr.port());
        match fx
            .err("http_request", &json!({"url": url}).to_string())
            .await
        {
            ToolError::Failed(m) => assert!(m.contains("scheme `file:`"), "{m}"),
            e => panic!("{e:?}"),
        }
        let url = format!("http://site.test:{}/fine", addr.port());
        let text = fx
            .ok("http_request", &json!({"url": url}).to_string())
            .await
            .joined_text();
        assert!(text.contains("landed"), "{text}");
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the private server was reached"
    );
}

/// web_fetch cannot show a page behind a redirect the policy refuses: a host off the allow list
/// and a private address both come back as `Denied` (the policy's refusal), while a redirect
/// limit is a plain failure and an allowed hop is followed.
#[tokio::test]
async fn web_fetch_reports_refused_redirects_as_denials() {
    let (private, hits) = private_server().await;
    let pp = private.port();
    let app = Router::new()
        .route(
            "/off-list",
            get(|| async { Redirect::temporary("http://other.test/elsewhere") }),
        )
        .route(
            "/to-ip",
            get(move || async move { Redirect::temporary(&format!("http://127.0.0.2:{pp}/")) }),
        )
        .route(
            "/to-name",
            get(move || async move { Redirect::temporary(&format!("http://admin.test:{pp}/")) }),
        )
        .route("/loop", get(|| async { Redirect::temporary("/loop") }))
        .route("/fine", get(|| async { Redirect::temporary("/landing") }))
        .route("/landing", get(|| async { "landed" }));
    let addr = serve(app).await;
    let port = addr.port();
    // admin.test is listed (by mistake), so its hop is judged by its address.
    let mut listed = policy();
    listed.allowed_hosts.push("admin.test".into());
    let fx = Fixture::with(Config::new().with_net(net()), listed);
    // (path, Ok(page text) | Err((kind, message part)))
    type Want = Result<&'static str, (tool_core::ErrorKind, &'static str)>;
    let rows: Vec<(&str, Want)> = vec![
        (
            "/off-list",
            Err((
                tool_core::ErrorKind::Denied,
                "redirects to http://other.test/elsewhere, which was not followed: other.test is not on the host allow list",
            )),
        ),
        (
            "/to-ip",
            Err((
                tool_core::ErrorKind::Denied,
                "The server redirected to http://127.0.0.2",
            )),
        ),
        (
            "/to-name",
            Err((
                tool_core::ErrorKind::Denied,
                "admin.test resolves to 127.0.0.2",
            )),
        ),
        (
            "/loop",
            Err((tool_core::ErrorKind::Failed, "at most 5 are followed")),
        ),
        ("/fine", Ok("landed")),
    ];
    for (path, want) in rows {
        let args = json!({"url": format!("http://site.test:{port}{path}")}).to_string();
        match (want, fx.call("web_fetch", &args).await) {
            (Ok(part), Ok(out)) => {
                let text = out.joined_text();
                assert!(text.contains(part), "{path}: {text}");
            }
            (Err((kind, part)), Err(e)) => {
                assert_eq!(e.kind(), kind, "{path}: {e}");
                assert!(e.to_string().contains(part), "{path}: {e}");
            }
            (_, got) => panic!("{path}: unexpected {got:?}"),
        }
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the private server was reached"
    );
}

/// A resolver that answers with the exempt address first and the private one afterwards, the
/// way a rebinding DNS server does, and counts the questions.
#[derive(Debug)]
struct Rebinding {
    asked: AtomicUsize,
}

impl Lookup for Rebinding {
    fn lookup(&self, _host: &str) -> LookupFuture {
        let n = self.asked.fetch_add(1, Ordering::SeqCst);
        let addr: IpAddr = if n == 0 { LOOPBACK } else { PRIVATE };
        Box::pin(async move { Ok(vec![addr]) })
    }
}

/// The check and the connection use the same, single lookup: the second answer (private) is
/// refused, never connected to, and there is exactly one lookup per connection.
#[tokio::test]
async fn dns_rebinding_cannot_swap_the_address() {
    let (private, hits) = private_server().await;
    // Both servers on the same port number is not possible; the public one closes every
    // connection, so each request needs a new connection and a new lookup.
    let public = serve_on(
        LOOPBACK,
        Router::new().fallback(|| async { ([(header::CONNECTION, "close")], "public page") }),
    )
    .await;
    let _ = private;
    let rebinding = Arc::new(Rebinding {
        asked: AtomicUsize::new(0),
    });
    let net = NetConfig::default()
        .with_lookup(Arc::clone(&rebinding) as Arc<dyn Lookup>)
        .allow_loopback_for_tests(&[LOOPBACK])
        .unwrap();
    let fx = Fixture::with(Config::new().with_net(net), policy());
    let args = json!({"url": format!("http://rebind.test:{}/", public.port())}).to_string();
    let text = fx.ok("http_request", &args).await.joined_text();
    assert!(text.contains("public page"), "{text}");
    assert_eq!(
        rebinding.asked.load(Ordering::SeqCst),
        1,
        "one lookup per connection"
    );
    match fx.err("http_request", &args).await {
        ToolError::Denied(m) => assert!(m.contains("rebind.test resolves to 127.0.0.2"), "{m}"),
        e => panic!("{e:?}"),
    }
    assert_eq!(
        rebinding.asked.load(Ordering::SeqCst),
        2,
        "one lookup per connection"
    );
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the private server was reached"
    );
}

/// Only loopback addresses can be exempted, and only by name.
#[test]
fn only_loopback_can_be_exempted() {
    for bad in [
        "10.0.0.1",
        "169.254.169.254",
        "0.0.0.0",
        "fd00::1",
        "192.168.0.1",
    ] {
        let ip: IpAddr = bad.parse().unwrap();
        let err = NetConfig::default()
            .allow_loopback_for_tests(&[ip])
            .unwrap_err();
        assert!(err.contains("not a loopback address"), "{bad}: {err}");
    }
    for good in ["127.0.0.1", "127.0.0.5", "::1"] {
        let ip: IpAddr = good.parse().unwrap();
        assert!(
            NetConfig::default().allow_loopback_for_tests(&[ip]).is_ok(),
            "{good}"
        );
    }
}
