//! A complete custom tool: typed arguments, a derived schema, a policy access declaration, and a
//! test. Run it with `cargo run -p tool-core --example custom_tool`; test it with
//! `cargo test -p tool-core --example custom_tool`.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{
    Access, Annotations, Limits, Policy, Registry, Stack, Tool, ToolContext, ToolError, ToolOutput,
    Workspace, blocking, typed,
};

/// The arguments: the schema models see is derived from this struct and its doc comments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CountLinesArgs {
    /// The file to count, relative to the workspace root.
    path: String,
}

/// Counts the lines of a file in the workspace.
struct CountLines;

#[async_trait]
impl Tool for CountLines {
    const NAME: &'static str = "count_lines";
    type Args = CountLinesArgs;

    fn description(&self) -> String {
        "Count the lines of a text file in the workspace.".into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    // The policy decides from this list; resolving here also refuses escapes before `call`.
    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        Ok(vec![Access::Read(ctx.workspace.resolve(&args.path)?)])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let path = ctx.workspace.resolve(&args.path)?;
        let ws = ctx.workspace.clone();
        let max = ctx.limits.max_file_bytes;
        let bytes = blocking(ctx, move || ws.read_to_end(&path, max)).await?;
        let lines = bytes.iter().filter(|b| **b == b'\n').count();
        Ok(ToolOutput::text(format!(
            "{} has {lines} lines.",
            args.path
        )))
    }
}

/// A stack over one tool, confined to `dir`, with the supervised policy.
fn stack_in(dir: &std::path::Path) -> Result<(Stack, ToolContext), Box<dyn std::error::Error>> {
    let mut registry = Registry::new();
    registry.register(typed(CountLines))?;
    let ctx = ToolContext::new(
        Workspace::local(dir)?,
        Arc::new(Policy::supervised()),
        Arc::new(Limits::default()),
    );
    Ok((Stack::new(registry), ctx))
}

#[tokio::main]
#[allow(
    clippy::print_stdout,
    reason = "the example shows its result on stdout"
)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (stack, ctx) = stack_in(std::path::Path::new("."))?;
    let out = stack
        .call_json("count_lines", r#"{"path": "Cargo.toml"}"#, ctx.for_call())
        .await?;
    println!("{}", out.joined_text());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let (stack, ctx) = stack_in(dir.path()).unwrap();
        let ok = stack
            .call_json("count_lines", r#"{"path":"a.txt"}"#, ctx.for_call())
            .await;
        assert_eq!(ok.unwrap().joined_text(), "a.txt has 2 lines.");
        let escape = stack
            .call_json("count_lines", r#"{"path":"../a.txt"}"#, ctx.for_call())
            .await;
        assert_eq!(escape.unwrap_err().kind(), tool_core::ErrorKind::Denied);
    }
}
