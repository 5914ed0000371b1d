use async_trait::async_trait;
use serde::Deserialize;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

/// Arguments of `make_dir`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MakeDirArgs {
    /// The directory to create, relative to the workspace root; parents are created too.
    pub path: String,
}

/// `make_dir`.
#[derive(Debug, Clone, Copy, Default)]
pub struct MakeDir;

#[async_trait]
impl Tool for MakeDir {
    const NAME: &'static str = "make_dir";
    type Args = MakeDirArgs;

    fn description(&self) -> String {
        "Create a directory and any missing parent directories. Succeeds if it already exists."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::ADDITIVE.idempotent(true)
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        Ok(vec![Access::Write(ctx.workspace.resolve(&args.path)?)])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let path = ctx.workspace.resolve(&args.path)?;
        let ws = ctx.workspace.clone();
        blocking(ctx, move || {
            let existed = ws.exists(&path)?;
            ws.create_dir_all(&path)?;
            Ok(ToolOutput::text(if existed {
                format!("{path}/ already exists.")
            } else {
                format!("Created {path}/.")
            }))
        })
        .await
    }
}
