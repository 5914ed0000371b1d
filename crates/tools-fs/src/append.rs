use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

/// Arguments of `file_append`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileAppendArgs {
    /// The file, relative to the workspace root; created (with its parents) if missing.
    pub path: String,
    /// The text to add at the end.
    pub content: String,
}

/// `file_append`.
#[derive(Debug, Clone, Copy, Default)]
pub struct FileAppend;

#[async_trait]
impl Tool for FileAppend {
    const NAME: &'static str = "file_append";
    type Args = FileAppendArgs;

    fn description(&self) -> String {
        "Append text to the end of a file, creating the file (and its parent directories) if it \
         does not exist. Refuses symbolic links and files with several hard links."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::ADDITIVE
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        Ok(vec![Access::Write(ctx.workspace.resolve(&args.path)?)])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        crate::text::check_content_size(
            &args.content,
            ctx.limits.max_write_bytes,
            "append it in smaller parts",
        )?;
        let path = ctx.workspace.resolve(&args.path)?;
        let ws = ctx.workspace.clone();
        blocking(ctx, move || {
            let existed = ws.exists(&path)?;
            ws.append(&path, args.content.as_bytes())?;
            let bytes = args.content.len();
            Ok(ToolOutput::text(format!(
                "Appended {bytes} bytes to {path}{}.",
                if existed { "" } else { " (created)" }
            ))
            .with_structured(
                json!({"path": path.to_string(), "bytes": bytes, "created": !existed}),
            ))
        })
        .await
    }
}
