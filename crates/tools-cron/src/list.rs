//! `cron_list`: the jobs of this workspace.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};

use crate::core::{Cron, job_json, job_line, state, workspace_key};

/// Arguments of `cron_list` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CronListArgs {}

/// `cron_list`.
#[derive(Debug)]
pub struct CronList(pub(crate) Arc<Cron>);

#[async_trait]
impl Tool for CronList {
    const NAME: &'static str = "cron_list";
    type Args = CronListArgs;

    fn description(&self) -> String {
        "List the scheduled jobs of this workspace with their ids, schedules, commands and next run times.".into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    /// `schedule` does the same job, and its rules hold here too.
    const SAME_JOB: &'static [&'static str] = &["schedule"];

    fn access(&self, _ctx: &ToolContext, _args: &CronListArgs) -> Result<Vec<Access>, ToolError> {
        Ok(vec![state(false)])
    }

    async fn call(&self, ctx: &ToolContext, _args: CronListArgs) -> Result<ToolOutput, ToolError> {
        list(&self.0, ctx).await
    }
}

pub(crate) async fn list(cron: &Arc<Cron>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let cron2 = Arc::clone(cron);
    let ws = workspace_key(ctx);
    let jobs = tool_core::blocking(ctx, move || cron2.store()?.list(&ws)).await?;
    let text = if jobs.is_empty() {
        "No jobs are scheduled in this workspace; add one with cron_add.".to_string()
    } else {
        jobs.iter().map(job_line).collect::<Vec<_>>().join("\n")
    };
    let items: Vec<Value> = jobs.iter().map(job_json).collect();
    Ok(ToolOutput::text(text).with_structured(json!({ "jobs": items })))
}
