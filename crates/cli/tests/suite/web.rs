//! The web tools through the binary: the `[web]` and `[policy]` keys reach them, and nothing
//! but `web.allow_loopback_for_tests` opens loopback.

use std::io::{Read, Write};
use std::net::TcpListener;

use serde_json::json;

use super::{json, stderr};

/// A tiny HTTP server on 127.0.0.1: `<h1>Hi</h1>` for every page, one SearXNG result for
/// `/search`.
fn page_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let n = s.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]);
            // SearXNG's JSON API for /search, a page for everything else.
            let (ctype, body) = if head.starts_with("GET /search?") {
                (
                    "application/json",
                    r#"{"results":[{"title":"Toolshed","url":"https://toolshed.example/","content":"Tools for agents"}]}"#,
                )
            } else {
                (
                    "text/html",
                    "<html><head><title>Greeting</title></head><body><h1>Hi</h1></body></html>",
                )
            };
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

fn call(
    dir: &std::path::Path,
    config: Option<&str>,
    tool: &str,
    args: serde_json::Value,
) -> serde_json::Value {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_toolshed"));
    cmd.arg("--workspace").arg(&ws);
    if let Some(text) = config {
        let path = dir.join("toolshed.toml");
        std::fs::write(&path, text).unwrap();
        cmd.arg("--config").arg(path);
    }
    let out = cmd
        .args(["call", tool, &args.to_string(), "--json"])
        .env("TOOLSHED_DATA_DIR", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("no-user-config"))
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(out.status.code().is_some(), "{}", stderr(&out));
    json(&out)
}

#[test]
fn web_fetch_through_the_binary() {
    let port = page_server();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}/");
    let config = r#"
[policy]
autonomy = "full"
allow_http = true

[web]
allow_loopback_for_tests = ["127.0.0.1"]
"#;
    let v = call(dir.path(), Some(config), "web_fetch", json!({"url": url}));
    let text = v["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(text.contains("# Hi"), "{v}");
    assert!(text.contains("Title: Greeting"), "{v}");

    // web_search with the provider chain and endpoint from `[web]`.
    let search = format!(
        "{config}search_providers = [\"searxng\"]\nsearch_urls = {{ searxng = \"http://127.0.0.1:{port}\" }}\n"
    );
    let v = call(
        dir.path(),
        Some(&search),
        "web_search",
        json!({"query": "toolshed"}),
    );
    assert_eq!(v["structured"]["provider"], "searxng", "{v}");
    assert_eq!(
        v["structured"]["results"][0]["url"], "https://toolshed.example/",
        "{v}"
    );

    // Without the exemption, loopback is refused even in full autonomy.
    let v = call(
        dir.path(),
        Some("[policy]\nautonomy = \"full\"\nallow_http = true\n"),
        "web_fetch",
        json!({"url": url}),
    );
    assert_eq!(v["error"]["kind"], "denied", "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("loopback"),
        "{v}"
    );

    // Without allow_http, http is refused.
    let v = call(dir.path(), None, "web_fetch", json!({"url": url}));
    assert_eq!(v["error"]["kind"], "denied", "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("https://"),
        "{v}"
    );

    // The exemption takes loopback addresses only.
    let ws = dir.path().join("ws");
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "[web]\nallow_loopback_for_tests = [\"10.0.0.1\"]\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .arg("--workspace")
        .arg(&ws)
        .arg("--config")
        .arg(&path)
        .args(["call", "web_fetch", "{\"url\":\"https://example.com\"}"])
        .env("TOOLSHED_DATA_DIR", dir.path().join("data"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("10.0.0.1 is not a loopback address"),
        "{}",
        stderr(&out)
    );
}
