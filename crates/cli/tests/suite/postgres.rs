//! `[storage]` on PostgreSQL, end to end: separate `toolshed` processes (replicas) sharing
//! memory, key-value, cron jobs and a `postgres:` workspace through one database, and
//! `toolshed mcp --http` replicas serving each other's sessions. Runs when `TOOLSHED_TEST_PG`
//! names a database (`.ci/run` starts one and requires it).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use tool_core::pg::PgPool;

use super::mcp::HttpServer;
use super::{json, stderr, stdout, toolshed_raw};

/// A fresh schema and a config file naming it, in a temp dir; the schema is dropped at the end.
struct Deployment {
    dir: tempfile::TempDir,
    pool: PgPool,
}

impl Deployment {
    fn new(label: &str) -> Option<Deployment> {
        let pool = tool_core::pg::test_pool(label)?;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("toolshed.toml"),
            format!(
                "data_dir = {data:?}\n\n[storage]\nurl_env = \"TOOLSHED_E2E_PG\"\nschema = {schema:?}\n\n[policy]\nautonomy = \"full\"\n",
                data = dir.path().join("data").display().to_string(),
                schema = pool.schema(),
            ),
        )
        .unwrap();
        Some(Deployment { dir, pool })
    }

    fn config(&self) -> String {
        self.dir.path().join("toolshed.toml").display().to_string()
    }

    /// `toolshed --config … ARGS` as a separate process, with the database URL in its
    /// environment (never in the file).
    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_toolshed"))
            .args(["--config", &self.config()])
            .args(args)
            .env("XDG_CONFIG_HOME", self.dir.path().join(".no-user-config"))
            .env("TOOLSHED_E2E_PG", database_url())
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        let _ = self.pool.drop_schema();
    }
}

/// The test database's URL, which the children get in `TOOLSHED_E2E_PG` (the config file
/// names the variable, never the password).
fn database_url() -> String {
    std::env::var(tool_core::pg::TEST_URL_VAR).unwrap()
}

#[test]
fn separate_processes_share_memory_kv_and_cron_through_one_database() {
    let Some(d) = Deployment::new("cli_share") else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let wsp = ws.path().display().to_string();
    let stored = d.run(&[
        "--workspace",
        &wsp,
        "call",
        "memory_store",
        r#"{"key":"deploy-day","content":"Deploys happen on Thursdays after the standup."}"#,
    ]);
    assert!(stored.status.success(), "{}", stderr(&stored));
    // Another process (a replica) recalls it, and sees the key-value entry the first one set.
    let recalled = d.run(&[
        "--workspace",
        &wsp,
        "call",
        "memory_recall",
        r#"{"query":"when do deploys happen"}"#,
    ]);
    assert!(
        stdout(&recalled).contains("Thursdays"),
        "{}",
        stderr(&recalled)
    );
    let set = d.run(&[
        "--workspace",
        &wsp,
        "call",
        "remember",
        r#"{"key":"owner","value":"ana"}"#,
    ]);
    assert!(set.status.success(), "{}", stderr(&set));
    let got = d.run(&["--workspace", &wsp, "call", "recall", r#"{"key":"owner"}"#]);
    assert!(stdout(&got).contains("ana"), "{}", stderr(&got));
    // Cron jobs: added by one process, listed by another.
    let added = d.run(&[
        "--workspace",
        &wsp,
        "call",
        "cron_add",
        r#"{"expression":"0 3 * * *","command":"echo nightly"}"#,
        "--json",
    ]);
    assert!(added.status.success(), "{}", stderr(&added));
    let id = json(&added)["structured"]["job"]["id"].as_i64().unwrap();
    let listed = d.run(&["--workspace", &wsp, "call", "cron_list", "{}", "--json"]);
    let jobs = json(&listed)["structured"]["jobs"].clone();
    assert_eq!(jobs.as_array().unwrap().len(), 1, "{jobs}");
    assert_eq!(jobs[0]["id"].as_i64(), Some(id));
    // Nothing of it went to SQLite files in the data directory.
    let data = d.dir.path().join("data");
    for file in ["memory.db", "cron.db"] {
        assert!(!data.join(file).exists(), "{file} was created");
    }
}

#[test]
fn a_postgres_workspace_is_one_filesystem_for_every_process() {
    let Some(d) = Deployment::new("cli_vfs") else {
        return;
    };
    let write = d.run(&[
        "--workspace",
        "postgres:team-notes",
        "call",
        "file_write",
        r#"{"path":"plans/q3.md","content":"ship the cron daemon\n"}"#,
    ]);
    assert!(write.status.success(), "{}", stderr(&write));
    let read = d.run(&[
        "--workspace",
        "postgres:team-notes",
        "call",
        "file_read",
        r#"{"path":"plans/q3.md"}"#,
    ]);
    assert_eq!(
        stdout(&read),
        "1\tship the cron daemon\n",
        "{}",
        stderr(&read)
    );
    // Another volume of the same database is another filesystem.
    let other = d.run(&[
        "--workspace",
        "postgres:other",
        "call",
        "file_read",
        r#"{"path":"plans/q3.md"}"#,
    ]);
    assert!(!other.status.success());
    // Escapes stay refused on a virtual workspace too.
    let escape = d.run(&[
        "--workspace",
        "postgres:team-notes",
        "call",
        "file_read",
        r#"{"path":"../../etc/passwd"}"#,
    ]);
    assert!(!escape.status.success());
}

#[test]
fn a_bad_storage_url_is_a_sentence_without_the_password() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolshed.toml"),
        "[storage]\nurl = \"postgres://alice:hunter2@127.0.0.1:1/nowhere\"\n",
    )
    .unwrap();
    let config = dir.path().join("toolshed.toml").display().to_string();
    let ws = dir.path().display().to_string();
    let o = toolshed_raw(
        dir.path(),
        &["--config", &config, "--workspace", &ws, "tools"],
        None,
    );
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("127.0.0.1:1/nowhere as alice"), "{err}");
    assert!(err.contains("[storage]"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

/// The token every replica is started with.
const REPLICA_TOKEN: &str = "replica-token";

/// A `toolshed mcp --http` replica (the MCP tests' child server), killed on drop.
struct Replica(HttpServer);

impl Replica {
    fn start(ws: &Path, config: Option<&str>, data: &Path) -> Replica {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolshed"));
        if let Some(c) = config {
            cmd.args(["--config", c]);
        }
        cmd.arg("--workspace")
            .arg(ws)
            .args(["mcp", "--http", "127.0.0.1:0"])
            // Replicas behind one load balancer share one token.
            .args(["--token", REPLICA_TOKEN])
            .env("XDG_CONFIG_HOME", ws.join(".no-user-config"))
            .env("TOOLSHED_DATA_DIR", data)
            .env("TOOLSHED_E2E_PG", database_url());
        Replica(HttpServer::spawn(cmd))
    }

    /// One JSON-RPC POST (HTTP/1.0, so the body ends at EOF); returns the status, the session
    /// header and the body.
    fn post(&self, session: Option<&str>, body: &str) -> (u16, Option<String>, String) {
        let authority = self.0.authority();
        let mut s = TcpStream::connect(authority).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut head = format!(
            "POST /mcp HTTP/1.0\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n\
             Authorization: Bearer {REPLICA_TOKEN}\r\nContent-Length: {}\r\n",
            authority,
            body.len()
        );
        if let Some(id) = session {
            head.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
        }
        head.push_str("\r\n");
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(body.as_bytes()).unwrap();
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw);
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head[9..12].parse().unwrap();
        let session = head.lines().find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_string())
        });
        (status, session, body.to_string())
    }
}

fn call(id: u32, tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
    )
}

#[test]
fn mcp_http_replicas_serve_each_others_sessions_through_the_database() {
    let Some(d) = Deployment::new("cli_mcp") else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    let config = d.config();
    let data = tempfile::tempdir().unwrap();
    let a = Replica::start(ws.path(), Some(&config), data.path());
    let b = Replica::start(ws.path(), Some(&config), data.path());
    // A legacy (2025-06-18) client opens its session on replica A…
    let (status, session, _) = a.post(
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"lb-test","version":"0"}}}"#,
    );
    assert_eq!(status, 200);
    let session = session.expect("a legacy initialize opens a session");
    let (status, _, _) = a.post(
        Some(&session),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(status, 202);
    let (status, _, body) = a.post(
        Some(&session),
        &call(
            2,
            "memory_store",
            r#"{"key":"lb","content":"The load balancer sends requests round robin."}"#,
        ),
    );
    assert_eq!(status, 200, "{body}");
    // …and the load balancer sends its next request to replica B, which restores the session
    // from the database and sees A's memory.
    let (status, _, body) = b.post(
        Some(&session),
        &call(3, "memory_recall", r#"{"query":"load balancer"}"#),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("round robin"), "{body}");
    // The twin: a replica on its own SQLite files knows neither the session nor the memory.
    let lone = Replica::start(ws.path(), None, data.path());
    let (status, _, body) = lone.post(
        Some(&session),
        &call(4, "memory_recall", r#"{"query":"load balancer"}"#),
    );
    assert_eq!(status, 404, "{body}");
}

#[test]
fn storage_settings_that_cannot_work_are_refused_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().display().to_string();
    let config = dir.path().join("toolshed.toml");
    let config_arg = config.display().to_string();
    // Each bad setting beside a twin that only differs in the value (and then fails only because
    // nothing listens on port 1).
    for (bad, twin, says) in [
        ("pool_size = 0", "pool_size = 2", "pool_size"),
        (
            "statement_timeout_secs = 0",
            "statement_timeout_secs = 5",
            "statement_timeout_secs",
        ),
        ("schema = \"a; DROP\"", "schema = \"team_a\"", "schema name"),
    ] {
        for (line, refused_early) in [(bad, true), (twin, false)] {
            std::fs::write(
                &config,
                format!(
                    "[storage]\nurl = \"postgres://u:p@127.0.0.1:1/db?connect_timeout=2\"\n{line}\n"
                ),
            )
            .unwrap();
            let o = toolshed_raw(
                dir.path(),
                &["--config", &config_arg, "--workspace", &ws, "tools"],
                None,
            );
            let err = stderr(&o);
            assert!(!o.status.success(), "{line}: {err}");
            assert_eq!(err.contains(says), refused_early, "{line}: {err}");
            assert_eq!(
                err.contains("cannot be used"),
                !refused_early,
                "{line}: {err}"
            );
        }
    }
}
