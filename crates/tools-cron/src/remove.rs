//! `cron_remove`: delete a job and its history.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};

use crate::core::{Cron, state, workspace_key};
use crate::store::not_found;

/// Arguments of `cron_remove`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CronRemoveArgs {
    /// The job's id, as `cron_list` shows it.
    pub job_id: i64,
}

/// `cron_remove`.
#[derive(Debug)]
pub struct CronRemove(pub(crate) Arc<Cron>);

#[async_trait]
impl Tool for CronRemove {
    const NAME: &'static str = "cron_remove";
    type Args = CronRemoveArgs;

    fn description(&self) -> String {
        "Remove a scheduled job and its run history. Its id is never given to another job.".into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE.idempotent(true)
    }

    /// `schedule` does the same job, and its rules hold here too.
    const SAME_JOB: &'static [&'static str] = &["schedule"];

    fn access(&self, _ctx: &ToolContext, _args: &CronRemoveArgs) -> Result<Vec<Access>, ToolError> {
        Ok(vec![state(true)])
    }

    async fn call(&self, ctx: &ToolContext, args: CronRemoveArgs) -> Result<ToolOutput, ToolError> {
        remove(&self.0, ctx, args.job_id).await
    }
}

pub(crate) async fn remove(
    cron: &Arc<Cron>,
    ctx: &ToolContext,
    id: i64,
) -> Result<ToolOutput, ToolError> {
    let cron2 = Arc::clone(cron);
    let ws = workspace_key(ctx);
    let removed = tool_core::blocking(ctx, move || cron2.store()?.remove(&ws, id)).await?;
    if !removed {
        return Err(not_found(id));
    }
    Ok(
        ToolOutput::text(format!("Removed job {id} and its run history."))
            .with_structured(json!({ "removed": id })),
    )
}
