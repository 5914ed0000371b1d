use async_trait::async_trait;
use serde::Deserialize;
use tool_core::schemars::{self, JsonSchema};
use tool_core::workspace::FileKind;
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

/// Arguments of `delete_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteFileArgs {
    /// The file or directory, relative to the workspace root.
    pub path: String,
    /// Delete a directory with everything in it (needs approval in supervised mode).
    #[serde(default)]
    pub recursive: bool,
}

/// `delete_file`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeleteFile;

#[async_trait]
impl Tool for DeleteFile {
    const NAME: &'static str = "delete_file";
    type Args = DeleteFileArgs;

    fn description(&self) -> String {
        "Delete a file, a symbolic link (not its target) or an empty directory. With \
         `recursive: true`, delete a directory and everything in it; links inside are removed, \
         never followed."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        Ok(vec![Access::Delete {
            path: ctx.workspace.resolve(&args.path)?,
            recursive: args.recursive,
        }])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let path = ctx.workspace.resolve(&args.path)?;
        let ws = ctx.workspace.clone();
        blocking(ctx, move || {
            // Inspect the entry itself, not what a link points to.
            let parent = path.parent().ok_or_else(|| {
                ToolError::Denied("The workspace root itself cannot be deleted.".into())
            })?;
            let name = path.file_name().unwrap_or_default().to_string();
            let kind = ws
                .read_dir(&parent)?
                .into_iter()
                .find(|e| e.name == name)
                .map(|e| e.kind)
                .ok_or_else(|| {
                    ToolError::NotFound(format!(
                        "{path} does not exist; check the name with list_dir."
                    ))
                })?;
            if kind == FileKind::Dir {
                ws.remove_dir(&path, args.recursive)?;
                Ok(ToolOutput::text(format!(
                    "Deleted the directory {path}/{}.",
                    if args.recursive {
                        " and everything in it"
                    } else {
                        ""
                    }
                )))
            } else {
                ws.remove_file(&path)?;
                Ok(ToolOutput::text(format!("Deleted {path}.")))
            }
        })
        .await
    }
}
