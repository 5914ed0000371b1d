//! The other direction: import another MCP server's tools into a [`Registry`](tool_core::Registry),
//! so the agent and `toolshed call` use them under Toolshed's policy.
//!
//! Each remote tool becomes a [`DynTool`] named `server__tool` whose schema is the remote one,
//! normalised like every other schema. Whatever the remote server claims, an imported tool is
//! `open_world`, and a call declares [`Access::Network`] to the host `mcp:<server>`: supervised
//! mode asks before each call (unless `policy.allowed_hosts` lists `mcp:<server>` or a rule
//! allows the tool), read-only mode refuses it.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::{IntoTransport, TokioChildProcess};
use rmcp::{ServiceError, ServiceExt};
use serde_json::Value;
use tool_core::{
    Access, Annotations, DynTool, PreparedCall, ToolContext, ToolError, ToolOutput, ToolSpec,
    schema,
};

use crate::McpError;

/// The separator between the server's name and the tool's.
pub const SEPARATOR: &str = "__";

/// A connection to another MCP server.
#[derive(Clone)]
pub struct RemoteServer {
    name: String,
    service: Arc<RunningService<RoleClient, ()>>,
}

impl fmt::Debug for RemoteServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteServer")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl RemoteServer {
    /// Starts `program args…` (stdio transport) and completes the MCP handshake. Its stderr is
    /// discarded; the process is killed when the last of its tools is dropped.
    // An MCP server is infrastructure the user configured, not a tool call: it starts here,
    // outside the tool process helper, and is spoken to over its stdio.
    #[allow(clippy::disallowed_methods)]
    pub async fn spawn(
        name: &str,
        program: &str,
        args: &[String],
        env: &[(String, String)],
        cwd: Option<&Path>,
    ) -> Result<RemoteServer, McpError> {
        check_name(name)?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        let (transport, _stderr) = TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| {
                McpError::Start(format!(
                    "cannot start the MCP server `{name}` ({program}): {e}"
                ))
            })?;
        RemoteServer::connect(name, transport).await
    }

    /// Completes the MCP handshake over any transport rmcp accepts.
    pub async fn connect<T, E, A>(name: &str, transport: T) -> Result<RemoteServer, McpError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        check_name(name)?;
        let service = ().serve(transport).await.map_err(|e| {
            McpError::Start(format!("the MCP server `{name}` did not initialize: {e}"))
        })?;
        Ok(RemoteServer {
            name: name.to_string(),
            service: Arc::new(service),
        })
    }

    /// The server's name (the prefix of its tools).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Lists the server's tools as Toolshed tools.
    pub async fn tools(&self) -> Result<Vec<Arc<dyn DynTool>>, McpError> {
        let listed = self.service.list_all_tools().await.map_err(|e| {
            McpError::Serve(format!(
                "cannot list the tools of the MCP server `{}`: {e}",
                self.name
            ))
        })?;
        // A tool name is what models and rules spell: the specification's characters only
        // (letters, digits, `_`, `-`, `.`, at most 128). A server that offers another name
        // (round 14: one with an escape sequence in it) has that tool left out, with a warning.
        Ok(listed
            .into_iter()
            .filter(|tool| {
                let ok = plain_tool_name(&tool.name);
                if !ok {
                    tracing::warn!(
                        "the MCP server `{}` offers a tool whose name {:?} is not letters, digits, `_`, `-` and `.`; it is left out",
                        self.name,
                        tool.name
                    );
                }
                ok
            })
            .map(|tool| {
                let hints = tool.annotations.clone().unwrap_or_default();
                let read_only = hints.read_only_hint.unwrap_or(false);
                let spec = ToolSpec {
                    name: format!("{}{SEPARATOR}{}", self.name, tool.name),
                    description: format!(
                        "{} (From the MCP server `{}`.)",
                        tool.description.as_deref().unwrap_or("").trim_end(),
                        self.name
                    )
                    .trim_start()
                    .to_string(),
                    input_schema: schema::normalize(Value::Object((*tool.input_schema).clone())),
                    annotations: Annotations {
                        read_only,
                        // The specification's defaults for a server that does not say.
                        destructive: !read_only && hints.destructive_hint.unwrap_or(true),
                        idempotent: hints.idempotent_hint.unwrap_or(read_only),
                        // Another server's tool reaches outside Toolshed's policy by definition.
                        open_world: true,
                    },
                };
                Arc::new(RemoteTool {
                    server: self.clone(),
                    remote_name: tool.name.to_string(),
                    spec,
                }) as Arc<dyn DynTool>
            })
            .collect())
    }

    fn peer(&self) -> Peer<RoleClient> {
        self.service.peer().clone()
    }
}

/// Whether a remote tool's name is made of what the MCP specification allows in one: letters,
/// digits, `_`, `-` and `.`, 1 to 128 of them.
fn plain_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn check_name(name: &str) -> Result<(), McpError> {
    let ok = !name.is_empty()
        && !name.contains(SEPARATOR)
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(McpError::Config(format!(
            "`{name}` cannot name an MCP server: use letters, digits, `-` and single `_`"
        )))
    }
}

/// One tool of a remote server.
struct RemoteTool {
    server: RemoteServer,
    remote_name: String,
    spec: ToolSpec,
}

impl DynTool for RemoteTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, _ctx: &ToolContext, args: Value) -> Result<PreparedCall, ToolError> {
        let Value::Object(arguments) = args else {
            return Err(ToolError::invalid(
                "",
                "the arguments must be a JSON object",
            ));
        };
        let server = self.server.name.clone();
        let accesses = vec![Access::Network {
            host: format!("mcp:{server}"),
        }];
        let peer = self.server.peer();
        let request =
            CallToolRequestParams::new(self.remote_name.clone()).with_arguments(arguments);
        let tool = self.spec.name.clone();
        Ok(PreparedCall::new(accesses, None, move |ctx| {
            Box::pin(async move {
                // Dropping the request on cancellation sends `notifications/cancelled`.
                let result = tokio::select! {
                    result = peer.call_tool(request) => result,
                    () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
                };
                match result {
                    Ok(result) => output(&tool, result),
                    Err(ServiceError::McpError(e)) => Err(ToolError::Failed(format!(
                        "The MCP server `{server}` refused the call of `{tool}`: {} (code {}).",
                        e.message, e.code.0
                    ))),
                    Err(e) => Err(ToolError::Failed(format!(
                        "The MCP server `{server}` could not run `{tool}`: {e}. It may have \
                         stopped; check its configuration in [mcp_servers]."
                    ))),
                }
            })
        }))
    }
}

/// A remote result as Toolshed output; `isError` results become [`ToolError::Failed`].
fn output(tool: &str, result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut out = ToolOutput::default();
    for block in result.content {
        match block {
            ContentBlock::Text(t) => out = push_text(out, t.text),
            ContentBlock::Image(i) => out = out.with_image(i.mime_type, i.data),
            ContentBlock::Audio(a) => {
                out = push_text(
                    out,
                    format!("[audio: {}, {} bytes of base64]", a.mime_type, a.data.len()),
                )
            }
            ContentBlock::Resource(r) => {
                out = push_text(
                    out,
                    match r.resource {
                        ResourceContents::TextResourceContents { uri, text, .. } => {
                            format!("[resource {uri}]\n{text}")
                        }
                        other => format!(
                            "[binary resource {}]",
                            serde_json::to_value(&other)
                                .ok()
                                .and_then(|v| v
                                    .get("uri")
                                    .and_then(Value::as_str)
                                    .map(str::to_string))
                                .unwrap_or_default()
                        ),
                    },
                )
            }
            ContentBlock::ResourceLink(link) => {
                out = push_text(out, format!("[resource link: {}]", link.uri))
            }
            other => {
                out = push_text(
                    out,
                    format!(
                        "[content of a kind this build does not know: {}]",
                        serde_json::to_string(&other).unwrap_or_default()
                    ),
                )
            }
        }
    }
    if result.is_error == Some(true) {
        let text = out.joined_text();
        return Err(ToolError::Failed(if text.is_empty() {
            format!("`{tool}` failed without saying why.")
        } else {
            text
        }));
    }
    out.structured = result.structured_content;
    Ok(out)
}

fn push_text(mut out: ToolOutput, text: String) -> ToolOutput {
    out.content.push(tool_core::Content::Text { text });
    out
}

#[cfg(test)]
mod tests {
    /// Found in round 14: a server's tool named `t2\x1b[31m` was registered, and its escape
    /// reached the terminal through `toolshed tools`. Each refused name beside a plain twin.
    #[test]
    fn remote_tool_names_are_plain() {
        for (name, plain) in [
            ("t2\x1b[31m", false),
            ("t2", true),
            ("read file", false),
            ("read_file", true),
            ("ä", false),
            ("v1.get-item", true),
            ("", false),
            (&"x".repeat(129), false),
            (&"x".repeat(128), true),
        ] {
            assert_eq!(super::plain_tool_name(name), plain, "{name:?}");
        }
    }
}
