//! `toolshed mcp` driven by real clients: the official Python MCP SDK (PyPI `mcp`, through
//! `tests/mcp_client.py`) over stdio and streamable HTTP in both of its connect modes, rmcp's
//! Rust client over a child process, and raw HTTP requests for the transport's guards.

// A skipped check says so on stderr, the only place a test can.
#![allow(clippy::print_stderr)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_toolshed");

/// Whether the Python SDK can be imported. Without it the Python tests fail, unless
/// `TOOLSHED_SKIP_PYTHON_MCP=1` says to skip them (CI installs it; see `.ci/run`).
fn python_sdk() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "from mcp import Client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        if std::env::var_os("TOOLSHED_SKIP_PYTHON_MCP").is_some() {
            eprintln!("skipped: the Python MCP SDK is not installed (TOOLSHED_SKIP_PYTHON_MCP)");
            return false;
        }
        panic!(
            "the Python MCP SDK is not installed: run `python3 -m pip install 'mcp>=1.10'`, \
             or set TOOLSHED_SKIP_PYTHON_MCP=1 to skip these tests"
        );
    }
    true
}

/// Runs `tests/mcp_client.py` with `args`; returns its JSON lines by `check` name.
fn python(args: &[&str]) -> BTreeMap<String, Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "mcp_client.py {args:?} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["check"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

/// The assertions every transport and mode share.
fn assert_scenario(c: &BTreeMap<String, Value>, mode: &str, stateless_http: bool) {
    let get = |k: &str| {
        c.get(k)
            .unwrap_or_else(|| panic!("no `{k}` line in {c:#?}"))
    };

    let connected = get("connected");
    assert_eq!(connected["server"], "toolshed");
    let protocol = if mode == "auto" {
        "2026-07-28"
    } else {
        "2025-11-25"
    };
    assert_eq!(connected["protocol"], protocol, "{connected}");

    let tools = get("tools");
    let names: Vec<&str> = tools["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for expected in ["file_read", "file_write", "delete_file", "make_dir"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    assert_eq!(
        tools["file_read"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true,
               "openWorldHint": false, "required": ["path"]})
    );

    assert_eq!(get("write")["is_error"], false, "{}", get("write"));
    let read = get("read");
    assert_eq!(read["is_error"], false);
    assert!(
        read["text"].as_str().unwrap().contains("hi from python"),
        "{read}"
    );

    let refusal = get("refusal");
    assert_eq!(refusal["is_error"], true);
    assert!(
        refusal["text"].as_str().unwrap().starts_with("denied: "),
        "{refusal}"
    );
    assert_eq!(refusal["structured"]["error"]["kind"], "denied");

    assert_eq!(get("unknown_tool")["code"], -32602);

    // The recursive deletes asked the user (elicitation, or input-required on 2026-07-28): one
    // refused, one approved.
    let approval = get("approval");
    assert_eq!(approval["asked"], 2, "{approval}");
    assert_eq!(approval["keep"]["is_error"], true);
    assert!(
        approval["keep"]["text"]
            .as_str()
            .unwrap()
            .starts_with("denied: The user refused `delete_file`"),
        "{approval}"
    );
    assert_eq!(approval["drop"]["is_error"], false, "{approval}");

    let progress = get("progress");
    if progress["tool"] == "shell" {
        assert_eq!(progress["is_error"], false);
        let notes = progress["notifications"].as_array().unwrap();
        assert!(
            notes.len() >= 2,
            "too few progress notifications: {progress}"
        );
        assert!(
            notes
                .windows(2)
                .all(|w| w[0]["progress"].as_f64() < w[1]["progress"].as_f64())
        );
        assert!(
            notes[0]["message"].as_str().unwrap().contains("tick 1"),
            "{progress}"
        );
    } else {
        eprintln!("progress not checked: {}", progress["skipped"]);
    }

    let cancel = get("cancel");
    assert_eq!(cancel["cancelled"], true, "{cancel}");
    assert_eq!(cancel["finished_first"], false, "{cancel}");
    assert_eq!(cancel["alive"], true, "{cancel}");
    if cancel["tool"] == "shell" {
        assert_eq!(
            cancel["killed"], true,
            "the cancelled shell kept running: {cancel}"
        );
    }
    let audited: Vec<&Value> = cancel["audit"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["outcome"])
        .collect();
    if stateless_http {
        // A stateless 2026-07-28 HTTP request has its own response stream, which the client
        // closed by cancelling: the audit log of that call has nowhere to go. The `killed`
        // check above is what shows the cancellation reached the tool.
    } else {
        assert!(audited.contains(&&json!("cancelled")), "{cancel}");
    }

    let logs = get("logs");
    assert_eq!(logs["loggers"], json!(["toolshed.audit"]));
    assert!(
        logs["outcomes"]
            .as_array()
            .unwrap()
            .contains(&json!("denied"))
    );
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    // Without a shell, the cancellation falls back to a grep over a tree big enough to take
    // a while.
    let tools = Command::new(BIN)
        .args(["--workspace"])
        .arg(dir.path())
        .args(["tools", "--format", "json"])
        .env("XDG_CONFIG_HOME", dir.path().join(".no-user-config"))
        .output()
        .unwrap();
    if !String::from_utf8_lossy(&tools.stdout).contains("\"shell\"") {
        let line = "lorem ipsum dolor sit amet consectetur\n".repeat(1000);
        for i in 0..3000 {
            let d = dir.path().join(format!("big/d{}", i / 100));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(format!("f{i}.txt")), &line).unwrap();
        }
    }
    dir
}

fn stdio_scenario(mode: &str) {
    if !python_sdk() {
        return;
    }
    let ws = workspace();
    let ws_path = ws.path().to_str().unwrap();
    let checks = python(&["stdio", BIN, ws_path, mode]);
    assert_scenario(&checks, mode, false);
}

#[test]
fn python_sdk_over_stdio_auto() {
    stdio_scenario("auto");
}

#[test]
fn python_sdk_over_stdio_legacy() {
    stdio_scenario("legacy");
}

/// A `toolshed mcp --http` child, killed on drop.
pub(crate) struct HttpServer {
    child: Child,
    pub(crate) url: String,
    /// The token it generated and printed, if it did.
    pub(crate) token: Option<String>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HttpServer {
    fn start(ws: &Path, extra: &[&str]) -> HttpServer {
        let mut cmd = Command::new(BIN);
        cmd.arg("--workspace")
            .arg(ws)
            .args(["mcp", "--http", "127.0.0.1:0"])
            .args(extra)
            .env("XDG_CONFIG_HOME", ws.join(".no-user-config"));
        HttpServer::spawn(cmd)
    }

    /// Starts `cmd` (a `toolshed … mcp --http 127.0.0.1:0` command line) and waits for the
    /// address it prints.
    pub(crate) fn spawn(mut cmd: Command) -> HttpServer {
        let mut child = cmd
            .env_remove("TOOLSHED_MCP_TOKEN")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut token = None;
        let url = loop {
            let line = lines
                .next()
                .expect("toolshed mcp --http printed its address")
                .unwrap();
            if let Some(rest) = line.strip_prefix("toolshed: token: ") {
                token = rest.split_whitespace().next().map(str::to_string);
            }
            if let Some(url) = line.strip_prefix("toolshed: serving MCP at ") {
                break url.trim().to_string();
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        HttpServer { child, url, token }
    }

    /// The `Authorization` header line its token needs, if it has one.
    pub(crate) fn auth(&self) -> Option<String> {
        self.token
            .as_ref()
            .map(|t| format!("Authorization: Bearer {t}"))
    }

    /// `127.0.0.1:PORT`.
    pub(crate) fn authority(&self) -> &str {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
    }
}

#[test]
fn python_sdk_over_http_auto() {
    if !python_sdk() {
        return;
    }
    let ws = workspace();
    let server = HttpServer::start(ws.path(), &[]);
    let token = server.token.clone().expect("a generated token");
    let checks = python(&["http", &server.url, "auto", &token]);
    assert_scenario(&checks, "auto", true);
}

#[test]
fn python_sdk_over_http_legacy_with_a_token() {
    if !python_sdk() {
        return;
    }
    let ws = workspace();
    let server = HttpServer::start(ws.path(), &["--token", "s3cret-token"]);
    let checks = python(&["http", &server.url, "legacy", "s3cret-token"]);
    assert_scenario(&checks, "legacy", false);
}

/// The status of one raw `initialize` POST with `host` and extra header lines.
fn post_status(authority: &str, host: &str, extra: &[&str]) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let mut s = TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for h in extra {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut status = [0u8; 12];
    s.read_exact(&mut status).unwrap();
    let line = String::from_utf8_lossy(&status);
    line[9..12]
        .parse()
        .unwrap_or_else(|_| panic!("bad status line {line:?}"))
}

#[test]
fn http_refuses_foreign_hosts_cross_origin_requests_and_missing_tokens() {
    let ws = tempfile::tempdir().unwrap();
    // By default a token is generated: on loopback too, a request without it is refused.
    let server = HttpServer::start(ws.path(), &[]);
    let auth = server.auth().expect("a generated token");
    let ours = server.authority().to_string();
    assert_eq!(post_status(&ours, &ours, &[]), 401);
    assert_eq!(
        post_status(&ours, &ours, &["Authorization: Bearer wrong"]),
        401
    );
    let token = server.token.clone().unwrap();
    assert_eq!(
        post_status(
            &ours,
            &ours,
            &[&format!(
                "Authorization: Bearer {}",
                &token[..token.len() - 1]
            )]
        ),
        401
    );
    assert_eq!(post_status(&ours, &ours, &[&auth]), 200);
    drop(server);
    // The explicit opt-out serves loopback without one (the rest of this test), and says so.
    let server = HttpServer::start(ws.path(), &["--no-auth"]);
    assert!(server.token.is_none());
    let ours = server.authority().to_string();
    let port = ours.rsplit(':').next().unwrap();
    // The control: a plain loopback request is served.
    assert_eq!(post_status(&ours, &ours, &[]), 200);
    assert_eq!(post_status(&ours, &format!("localhost:{port}"), &[]), 200);
    // DNS rebinding: a foreign name resolving to 127.0.0.1, or another port.
    assert_eq!(
        post_status(&ours, &format!("evil.example:{port}"), &[]),
        403
    );
    assert_eq!(post_status(&ours, "localhost:1", &[]), 403);
    // A page on another origin.
    assert_eq!(
        post_status(&ours, &ours, &["Origin: http://evil.example"]),
        403
    );
    assert_eq!(post_status(&ours, &ours, &["Origin: null"]), 403);
    assert_eq!(
        post_status(&ours, &ours, &[&format!("Origin: http://{ours}")]),
        200
    );
    drop(server);

    let server = HttpServer::start(ws.path(), &["--token", "tok"]);
    let ours = server.authority().to_string();
    assert_eq!(post_status(&ours, &ours, &[]), 401);
    assert_eq!(
        post_status(&ours, &ours, &["Authorization: Bearer nope"]),
        401
    );
    assert_eq!(
        post_status(&ours, &ours, &["Authorization: Bearer tok"]),
        200
    );
}

#[test]
fn http_refuses_a_non_loopback_bind_without_allow_remote_and_a_token() {
    let ws = tempfile::tempdir().unwrap();
    for extra in [
        &["mcp", "--http", "0.0.0.0:0"][..],
        &["mcp", "--http", "0.0.0.0:0", "--allow-remote"],
        &["mcp", "--http", "0.0.0.0:0", "--token", "t"],
        &[
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--allow-remote",
            "--no-auth",
        ],
        &["mcp", "--http", "0.0.0.0:0", "--allow-remote", "--no-auth"],
    ] {
        let out = Command::new(BIN)
            .arg("--workspace")
            .arg(ws.path())
            .args(extra)
            .env("XDG_CONFIG_HOME", ws.path().join(".no-user-config"))
            .env_remove("TOOLSHED_MCP_TOKEN")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--allow-remote"), "{extra:?}: {err}");
    }
}

/// Sends raw JSON-RPC lines to `toolshed mcp` on stdio; returns the response lines.
fn stdio_exchange(ws: &Path, extra: &[&str], requests: &[Value], responses: usize) -> Vec<Value> {
    let mut child = Command::new(BIN)
        .arg("--workspace")
        .arg(ws)
        .arg("mcp")
        .args(extra)
        .env("XDG_CONFIG_HOME", ws.join(".no-user-config"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for r in requests {
        writeln!(stdin, "{r}").unwrap();
    }
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let out: Vec<Value> = (0..responses)
        .map(|_| serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap())
        .collect();
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "toolshed mcp exited with {status}");
    out
}

fn initialize() -> [Value; 2] {
    [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

#[test]
fn tools_flag_restricts_what_is_exposed() {
    let ws = tempfile::tempdir().unwrap();
    let [init, initialized] = initialize();
    let out = stdio_exchange(
        ws.path(),
        &["--tools", "list_dir,file_read"],
        &[
            init,
            initialized,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "file_write", "arguments": {"path": "x", "content": "y"}}}),
            json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
        ],
        4,
    );
    let by_id = |id: u64| out.iter().find(|r| r["id"] == id).unwrap();
    assert_eq!(by_id(1)["result"]["serverInfo"]["name"], "toolshed");
    let names: Vec<&str> = by_id(2)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["file_read", "list_dir"]);
    // A tool outside the subset does not exist for this server.
    assert_eq!(by_id(3)["error"]["code"], -32602);
    assert!(!ws.path().join("x").exists());
    assert_eq!(by_id(4)["result"], json!({}));

    let bad = Command::new(BIN)
        .arg("--workspace")
        .arg(ws.path())
        .args(["mcp", "--tools", "file_read,nope"])
        .env("XDG_CONFIG_HOME", ws.path().join(".no-user-config"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown tools: nope"));
}

#[tokio::test]
async fn rust_client_over_a_child_process() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::TokioChildProcess;

    let ws = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.arg("--workspace")
        .arg(ws.path())
        .arg("mcp")
        .env("XDG_CONFIG_HOME", ws.path().join(".no-user-config"))
        .env_remove("RUST_LOG");
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "file_write"));

    let args = |v: Value| v.as_object().unwrap().clone();
    let wrote = client
        .call_tool(
            CallToolRequestParams::new("file_write")
                .with_arguments(args(json!({"path": "a/b.txt", "content": "rust\n"}))),
        )
        .await
        .unwrap();
    assert_eq!(wrote.is_error, Some(false));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a/b.txt")).unwrap(),
        "rust\n"
    );
    let denied = client
        .call_tool(
            CallToolRequestParams::new("file_read")
                .with_arguments(args(json!({"path": "/etc/passwd"}))),
        )
        .await
        .unwrap();
    assert_eq!(denied.is_error, Some(true));
    client.cancel().await.unwrap();
}
