//! `toolshed mcp`: serve the tools over the Model Context Protocol, on stdio or streamable HTTP.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};
use tool_core::{Stack, ToolContext};
use toolshed_mcp::McpServer;
use toolshed_mcp::http::HttpOptions;

use crate::Session;

/// Options of `toolshed mcp`.
#[derive(Debug, clap::Args)]
pub(crate) struct McpArgs {
    /// Serve streamable HTTP on ADDR (such as 127.0.0.1:8765; port 0 picks a free one) instead
    /// of stdio. The endpoint is http://ADDR/mcp. Requests must name a loopback Host with the
    /// bound port (any Host with --allow-remote) and carry no Origin or a same-origin one.
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    http: Option<SocketAddr>,
    /// Allow --http on a non-loopback address; requires --token or --token-file.
    #[arg(long, requires = "http")]
    allow_remote: bool,
    /// The token every HTTP request must carry (`Authorization: Bearer TOKEN`). Without
    /// --token, --token-file or --no-auth, one is generated and printed once at start.
    #[arg(
        long,
        env = "TOOLSHED_MCP_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true,
        conflicts_with = "token_file"
    )]
    token: Option<String>,
    /// Read the token from FILE (its first line), so that it stays out of the process list.
    #[arg(long, value_name = "FILE")]
    token_file: Option<std::path::PathBuf>,
    /// Serve HTTP on loopback without a token: every local user and process can then call
    /// every tool. Refused with --allow-remote.
    #[arg(
        long,
        requires = "http",
        conflicts_with_all = ["token", "token_file", "allow_remote"]
    )]
    no_auth: bool,
    /// Expose only these tools (comma-separated names, as `toolshed tools` lists them with the
    /// same --profile).
    #[arg(long, value_name = "A,B,C", value_delimiter = ',')]
    tools: Option<Vec<String>>,
}

/// With `[storage]` on PostgreSQL, HTTP sessions are kept there too, so that replicas behind a
/// load balancer can serve each other's sessions.
#[cfg(feature = "postgres")]
fn session_store(settings: &crate::Config, options: HttpOptions) -> Result<HttpOptions> {
    let Some(pool) = toolshed_cli::storage::pool(settings)? else {
        return Ok(options);
    };
    let store = toolshed_mcp::sessions::PgSessionStore::open(pool)
        .map_err(|e| anyhow::anyhow!("[storage]: {e}"))?;
    Ok(options.with_session_store(std::sync::Arc::new(store)))
}

#[cfg(not(feature = "postgres"))]
fn session_store(_settings: &crate::Config, options: HttpOptions) -> Result<HttpOptions> {
    Ok(options)
}

/// `127.0.0.1:8765`, `[::1]:8765` or `localhost:8765`.
fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    if let Some(port) = s.strip_prefix("localhost:") {
        let port: u16 = port
            .parse()
            .map_err(|_| format!("`{port}` is not a port number"))?;
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    s.parse().map_err(|_| {
        format!("`{s}` is not an address with a port; use e.g. 127.0.0.1:8765 or localhost:8765")
    })
}

pub(crate) async fn run(
    workspace: &Path,
    config: &toolshed_cli::config::Source,
    profile: Option<String>,
    args: McpArgs,
) -> Result<ExitCode> {
    // Not interactive and no --yes: approvals go through MCP elicitation or are refused.
    let Session {
        stack,
        ctx,
        config: settings,
    } = Session::open(workspace, config, profile, false, false).await?;
    let stack = match &args.tools {
        Some(names) => restrict(stack, names, &ctx)?,
        None => stack,
    };
    let server = McpServer::new(stack, ctx);
    match args.http {
        None => {
            tracing::info!(tools = server.tools().len(), "serving MCP on stdio");
            toolshed_mcp::serve_stdio(server).await?;
        }
        Some(addr) => {
            let (token, generated) = http_token(&args)?;
            let options = session_store(
                &settings,
                HttpOptions::new(token.clone(), args.allow_remote),
            )?;
            let bound = toolshed_mcp::http::bind(server, addr, options).await?;
            // On stderr (stdout carries nothing here): tests and scripts read the port and the
            // token from it.
            if let (Some(token), true) = (&token, generated) {
                eprintln!(
                    "toolshed: token: {token} (generated for this run; clients send `Authorization: Bearer {token}`, or connect to {url}?token={token}; choose one with --token-file)",
                    url = bound.url()
                );
            }
            if token.is_none() {
                eprintln!(
                    "toolshed: warning: serving without a token (--no-auth): every local user and process can call every tool"
                );
            }
            eprintln!("toolshed: serving MCP at {}", bound.url());
            bound.run().await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The token HTTP requests must carry, and whether it was generated here.
// The token file is the operator's, read before any tool runs.
#[allow(clippy::disallowed_methods)]
fn http_token(args: &McpArgs) -> Result<(Option<String>, bool)> {
    if args.no_auth {
        return Ok((None, false));
    }
    if let Some(path) = &args.token_file {
        let text = std::fs::read_to_string(path).map_err(|e| {
            anyhow::anyhow!(
                "cannot read the token file {}: {e}; write the token on its first line",
                path.display()
            )
        })?;
        let token = text.lines().next().unwrap_or_default().trim().to_string();
        if token.is_empty() {
            bail!(
                "the token file {} is empty; write the token on its first line",
                path.display()
            );
        }
        return Ok((Some(token), false));
    }
    match args.token.as_deref().map(str::trim) {
        Some("") => bail!(
            "--token (or TOOLSHED_MCP_TOKEN) is empty; give a token, or leave it out to have one generated"
        ),
        Some(t) => Ok((Some(t.to_string()), false)),
        None if args.allow_remote => bail!(
            "--allow-remote needs a token you chose and gave the clients: pass --token-file FILE (or --token, or TOOLSHED_MCP_TOKEN)"
        ),
        None => Ok((Some(toolshed_mcp::http::new_token()), true)),
    }
}

/// The stack with only `names` (which must all exist) registered.
fn restrict(stack: Stack, names: &[String], ctx: &ToolContext) -> Result<Stack> {
    let registry = stack.registry();
    let unknown: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| registry.spec(n).is_none())
        .collect();
    if !unknown.is_empty() {
        bail!(
            "--tools names unknown tools: {}; the tools are: {}",
            unknown.join(", "),
            registry.names().join(", ")
        );
    }
    if names.is_empty() {
        bail!("--tools needs at least one tool name");
    }
    // A stack over the subset: the same layers `Session::open` configured (the approver and
    // audit sink are replaced by `McpServer::new` anyway).
    let mut restricted = Stack::new(registry.subset(names.iter().map(String::as_str)));
    if let Some(rate) = ctx.limits.calls_per_minute {
        restricted = restricted.with_rate_limit(rate);
    }
    Ok(restricted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        assert_eq!(
            parse_addr("localhost:8765").unwrap(),
            "127.0.0.1:8765".parse().unwrap()
        );
        assert_eq!(parse_addr("[::1]:0").unwrap(), "[::1]:0".parse().unwrap());
        assert!(parse_addr("localhost").is_err());
        assert!(parse_addr("example.com:80").is_err());
    }
}
