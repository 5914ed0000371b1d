use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

/// Arguments of `file_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileWriteArgs {
    /// The file, relative to the workspace root. Missing parent directories are created.
    pub path: String,
    /// The complete new content.
    pub content: String,
}

/// `file_write`: atomic create-or-replace.
#[derive(Debug, Clone, Copy, Default)]
pub struct FileWrite;

#[async_trait]
impl Tool for FileWrite {
    const NAME: &'static str = "file_write";
    type Args = FileWriteArgs;

    fn description(&self) -> String {
        "Create or replace a file with the given content. Parent directories are created; the \
         replacement is atomic (the old content or the new, never a mix) and keeps the file's \
         mode. Symbolic links are not written through. To change part of a file, use file_edit."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE.idempotent(true)
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        Ok(vec![Access::Write(ctx.workspace.resolve(&args.path)?)])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        crate::text::check_content_size(
            &args.content,
            ctx.limits.max_write_bytes,
            "write the file in parts with file_append",
        )?;
        let path = ctx.workspace.resolve(&args.path)?;
        let ws = ctx.workspace.clone();
        blocking(ctx, move || {
            let existed = ws.exists(&path)?;
            ws.write_atomic(&path, args.content.as_bytes())?;
            let bytes = args.content.len();
            Ok(ToolOutput::text(format!(
                "{} {path} ({bytes} bytes).",
                if existed { "Replaced" } else { "Created" }
            ))
            .with_structured(
                json!({"path": path.to_string(), "bytes": bytes, "created": !existed}),
            ))
        })
        .await
    }
}
