//! Integration test modules of tools-web and their shared fixtures: loopback servers (axum), a
//! static resolver, and the web tools behind the real stack.

mod fetch;
mod hostile;
mod http;
mod integrations;
mod search;
mod tls;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use tempfile::TempDir;
use tool_core::{
    ApproveAll, Limits, Policy, Registry, Stack, ToolContext, ToolError, ToolOutput, Workspace,
};
use tools_web::{Config, NetConfig, StaticLookup};

/// The one address the tests exempt from the address checks.
pub(crate) const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// A loopback address that is not exempt: it plays the private network.
pub(crate) const PRIVATE: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

/// Names the fixture's resolver knows: `site.test` is the exempt loopback address,
/// `admin.test` the private one, `multi.test` both, `metadata.test` the cloud metadata address.
pub(crate) fn lookup() -> StaticLookup {
    StaticLookup::new()
        .with("site.test", &[LOOPBACK])
        .with("other.test", &[LOOPBACK])
        .with("www.site.test", &[LOOPBACK])
        .with("admin.test", &[PRIVATE])
        .with("multi.test", &[LOOPBACK, PRIVATE])
        .with("metadata.test", &["169.254.169.254".parse().unwrap()])
        .with("ten.test", &["10.0.0.1".parse().unwrap()])
        .with("mapped.test", &["::ffff:127.0.0.2".parse().unwrap()])
}

/// The network configuration of the tests: the static resolver, 127.0.0.1 exempt.
pub(crate) fn net() -> NetConfig {
    NetConfig::default()
        .with_lookup(Arc::new(lookup()))
        .allow_loopback_for_tests(&[LOOPBACK])
        .unwrap()
}

/// The policy of most tests: supervised, http allowed, `site.test` and 127.0.0.1 on the allow
/// list (the stack approves what it asks about, so the list matters for redirects and
/// browser_open only).
pub(crate) fn policy() -> Policy {
    let mut p = Policy::supervised();
    p.allow_http = true;
    p.allowed_hosts = vec!["site.test".into(), "127.0.0.1".into()];
    p
}

/// The web tools of `config` behind the real stack, with a context on a temp workspace.
pub(crate) struct Fixture {
    // Keeps the workspace alive for the fixture's lifetime.
    pub(crate) _dir: TempDir,
    pub(crate) stack: Stack,
    pub(crate) ctx: ToolContext,
}

impl Fixture {
    /// Default tools with the test network and policy.
    pub(crate) fn new() -> Fixture {
        Fixture::with(Config::new().with_net(net()), policy())
    }

    /// Tools of `config` under `policy`.
    pub(crate) fn with(config: Config, policy: Policy) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let mut registry = Registry::new();
        registry.register_all(tools_web::tools(&config)).unwrap();
        let stack = Stack::new(registry).with_approver(Arc::new(ApproveAll));
        let ctx = context(dir.path(), policy);
        Fixture {
            _dir: dir,
            stack,
            ctx,
        }
    }

    /// Calls `tool` with raw JSON arguments through the whole stack.
    pub(crate) async fn call(&self, tool: &str, args: &str) -> Result<ToolOutput, ToolError> {
        self.stack.call_json(tool, args, self.ctx.for_call()).await
    }

    /// Calls and expects success.
    pub(crate) async fn ok(&self, tool: &str, args: &str) -> ToolOutput {
        match self.call(tool, args).await {
            Ok(out) => out,
            Err(e) => panic!("{tool} {args} failed: {e}"),
        }
    }

    /// Calls and expects an error.
    pub(crate) async fn err(&self, tool: &str, args: &str) -> ToolError {
        match self.call(tool, args).await {
            Ok(out) => panic!("{tool} {args} should fail but gave:\n{}", out.joined_text()),
            Err(e) => e,
        }
    }
}

/// A context on a workspace at `dir` under `policy`.
pub(crate) fn context(dir: &Path, policy: Policy) -> ToolContext {
    ToolContext::new(
        Workspace::local(dir).unwrap(),
        Arc::new(policy),
        Arc::new(Limits::default()),
    )
}

/// Serves `app` on `ip` (port chosen by the system) until the test ends.
pub(crate) async fn serve_on(ip: IpAddr, app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    addr
}

/// Serves `app` on the exempt loopback address.
pub(crate) async fn serve(app: Router) -> SocketAddr {
    serve_on(LOOPBACK, app).await
}
