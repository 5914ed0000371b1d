//! Importing another MCP server's tools: from Toolshed's own server in memory, and from a
//! server written with the official Python SDK started as a child process.

// Test fixtures build real files and start real servers directly.
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{
    Access, Annotations, ErrorKind, Limits, Policy, Registry, Stack, Tool, ToolContext, ToolError,
    ToolOutput, Workspace, typed,
};
use toolshed_mcp::McpServer;
use toolshed_mcp::remote::RemoteServer;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SleepArgs {
    /// Milliseconds.
    ms: u64,
}

/// Sleeps; records whether the call was stopped before it finished (its future dropped).
struct Sleeper(Arc<AtomicBool>);

/// Sets the flag when dropped armed.
struct Stopped(Option<Arc<AtomicBool>>);

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Some(flag) = self.0.take() {
            flag.store(true, Ordering::SeqCst);
        }
    }
}

#[async_trait]
impl Tool for Sleeper {
    const NAME: &'static str = "sleep";
    type Args = SleepArgs;
    fn description(&self) -> String {
        "Sleep.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }
    fn access(&self, _ctx: &ToolContext, _args: &SleepArgs) -> Result<Vec<Access>, ToolError> {
        Ok(vec![])
    }
    async fn call(&self, _ctx: &ToolContext, args: SleepArgs) -> Result<ToolOutput, ToolError> {
        let mut stopped = Stopped(Some(Arc::clone(&self.0)));
        tokio::time::sleep(Duration::from_millis(args.ms)).await;
        stopped.0 = None;
        Ok(ToolOutput::text("slept"))
    }
}

fn ctx(dir: &std::path::Path, policy: Policy) -> ToolContext {
    ToolContext::new(
        Workspace::local(dir).unwrap(),
        Arc::new(policy),
        Arc::new(Limits::default()),
    )
}

/// Toolshed's own server (one `sleep` tool) behind an in-memory pipe, imported as `up`.
async fn upstream(dir: &std::path::Path) -> (RemoteServer, Arc<AtomicBool>) {
    let cancelled = Arc::new(AtomicBool::new(false));
    let mut registry = Registry::new();
    registry
        .register(typed(Sleeper(Arc::clone(&cancelled))))
        .unwrap();
    let server = McpServer::new(Stack::new(registry), ctx(dir, Policy::full()));
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        use rmcp::ServiceExt;
        let running = server.serve(tokio::io::split(server_io)).await.unwrap();
        let _ = running.waiting().await;
    });
    let remote = RemoteServer::connect("up", tokio::io::split(client_io))
        .await
        .unwrap();
    (remote, cancelled)
}

#[tokio::test]
async fn imported_tools_are_namespaced_open_world_and_asked_about() {
    let dir = tempfile::tempdir().unwrap();
    let (remote, _) = upstream(dir.path()).await;
    let mut registry = Registry::new();
    registry
        .register_all(remote.tools().await.unwrap())
        .unwrap();
    assert_eq!(registry.names(), ["up__sleep"]);
    let spec = registry.spec("up__sleep").unwrap();
    assert!(spec.annotations.open_world);
    assert!(spec.annotations.read_only);
    assert_eq!(spec.input_schema["required"], json!(["ms"]));
    assert!(spec.description.contains("MCP server `up`"));
    let stack = Stack::new(registry);

    // Supervised: the network access to `mcp:up` needs approval, and no one can be asked.
    let args = json!({"ms": 1});
    let err = stack
        .call(
            "up__sleep",
            args.clone(),
            ctx(dir.path(), Policy::supervised()),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NeedsApproval, "{err}");
    assert!(err.to_string().contains("mcp:up"), "{err}");
    // Read-only refuses it; full autonomy runs it.
    let err = stack
        .call(
            "up__sleep",
            args.clone(),
            ctx(dir.path(), Policy::read_only()),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Denied, "{err}");
    let out = stack
        .call("up__sleep", args.clone(), ctx(dir.path(), Policy::full()))
        .await
        .unwrap();
    assert_eq!(out.joined_text(), "slept");
    // So does a supervised policy that lists the server's host.
    let mut listed = Policy::supervised();
    listed.allowed_hosts = vec!["mcp:up".into()];
    let out = stack
        .call("up__sleep", args, ctx(dir.path(), listed))
        .await
        .unwrap();
    assert_eq!(out.joined_text(), "slept");

    // The imported schema is checked here, before anything is sent.
    let err = stack
        .call(
            "up__sleep",
            json!({"ms": "soon"}),
            ctx(dir.path(), Policy::full()),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgs, "{err}");
}

#[tokio::test]
async fn cancelling_an_imported_call_cancels_it_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let (remote, cancelled) = upstream(dir.path()).await;
    let mut registry = Registry::new();
    registry
        .register_all(remote.tools().await.unwrap())
        .unwrap();
    let stack = Stack::new(registry);
    let call_ctx = ctx(dir.path(), Policy::full());
    let token = call_ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        token.cancel();
    });
    let err = stack
        .call("up__sleep", json!({"ms": 60_000}), call_ctx)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Cancelled);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !cancelled.load(Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the upstream call was not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn server_names_must_be_plain() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for bad in ["", "a__b", "a b", "ä"] {
        let err = rt
            .block_on(RemoteServer::spawn(bad, "true", &[], &[], None))
            .unwrap_err();
        assert!(err.to_string().contains("cannot name"), "{bad}: {err}");
    }
}

const PYTHON_SERVER: &str = r#"
from mcp.server.mcpserver import MCPServer
import mcp_types as types

server = MCPServer("py-upstream")

@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

@server.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"failing on purpose: {reason}")

server.run()
"#;

#[tokio::test]
async fn imports_a_python_sdk_server_started_as_a_child_process() {
    let sdk = std::process::Command::new("python3")
        .args(["-c", "from mcp.server.mcpserver import MCPServer"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !sdk {
        assert!(
            std::env::var_os("TOOLSHED_SKIP_PYTHON_MCP").is_some(),
            "the Python MCP SDK is not installed: run `python3 -m pip install 'mcp>=1.10'`, \
             or set TOOLSHED_SKIP_PYTHON_MCP=1 to skip this test"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("server.py");
    std::fs::write(&script, PYTHON_SERVER).unwrap();
    let remote = RemoteServer::spawn(
        "py",
        "python3",
        &[script.display().to_string()],
        &[],
        Some(dir.path()),
    )
    .await
    .unwrap();
    let mut registry = Registry::new();
    registry
        .register_all(remote.tools().await.unwrap())
        .unwrap();
    assert_eq!(registry.names(), ["py__add", "py__fail"]);
    let add = registry.spec("py__add").unwrap();
    assert!(add.annotations.read_only && add.annotations.open_world);
    let fail = registry.spec("py__fail").unwrap();
    // The specification's defaults for a tool that says nothing: may destroy.
    assert!(!fail.annotations.read_only && fail.annotations.destructive);

    let stack = Stack::new(registry);
    let out = stack
        .call(
            "py__add",
            json!({"a": 2, "b": 40}),
            ctx(dir.path(), Policy::full()),
        )
        .await
        .unwrap();
    assert_eq!(out.joined_text(), "42");
    assert_eq!(out.structured, Some(json!({"result": 42})));
    let err = stack
        .call(
            "py__fail",
            json!({"reason": "test"}),
            ctx(dir.path(), Policy::full()),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failed);
    // The Python SDK words the error itself (it does not echo the exception).
    assert!(
        err.to_string().contains("Error executing tool fail"),
        "{err}"
    );
}
