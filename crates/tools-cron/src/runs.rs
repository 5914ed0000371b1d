//! `cron_runs`: a job's run history.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};

use crate::core::{Cron, one_line, rfc3339, state, workspace_key};
use crate::store::{Run, not_found};

/// Arguments of `cron_runs`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CronRunsArgs {
    /// The job's id, as `cron_list` shows it.
    pub job_id: i64,
    /// How many of the newest runs to show (1 to 100, default 10).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

/// `cron_runs`.
#[derive(Debug)]
pub struct CronRuns(pub(crate) Arc<Cron>);

#[async_trait]
impl Tool for CronRuns {
    const NAME: &'static str = "cron_runs";
    type Args = CronRunsArgs;

    fn description(&self) -> String {
        "Show a job's run history, newest first: when each run started and ended, its status (ok, failed, denied, error, cancelled, abandoned), exit code and capped output.".into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    /// `schedule` does the same job, and its rules hold here too.
    const SAME_JOB: &'static [&'static str] = &["schedule"];

    fn access(&self, _ctx: &ToolContext, _args: &CronRunsArgs) -> Result<Vec<Access>, ToolError> {
        Ok(vec![state(false)])
    }

    async fn call(&self, ctx: &ToolContext, args: CronRunsArgs) -> Result<ToolOutput, ToolError> {
        let limit = args.limit.unwrap_or(10).clamp(1, 100) as usize;
        let (runs, _) = history(&self.0, ctx, args.job_id, limit).await?;
        let text = if runs.is_empty() {
            format!("Job {} has not run yet.", args.job_id)
        } else {
            runs.iter().map(run_text).collect::<Vec<_>>().join("\n")
        };
        let items: Vec<Value> = runs.iter().map(run_json).collect();
        Ok(ToolOutput::text(text).with_structured(json!({ "job_id": args.job_id, "runs": items })))
    }
}

/// The job (checked to be this workspace's) and its newest runs.
pub(crate) async fn history(
    cron: &Arc<Cron>,
    ctx: &ToolContext,
    id: i64,
    limit: usize,
) -> Result<(Vec<Run>, crate::store::Job), ToolError> {
    let cron2 = Arc::clone(cron);
    let ws = workspace_key(ctx);
    tool_core::blocking(ctx, move || {
        let store = cron2.store()?;
        let job = store.get(&ws, id)?.ok_or_else(|| not_found(id))?;
        Ok((store.runs(id, limit)?, job))
    })
    .await
}

pub(crate) fn run_json(r: &Run) -> Value {
    json!({
        "run_id": r.id,
        "trigger": r.trigger,
        "scheduled_for": r.scheduled_for.map(rfc3339),
        "started_at": rfc3339(r.started_at),
        "finished_at": r.finished_at.map(rfc3339),
        "duration_secs": r.finished_at.map(|f| f - r.started_at),
        "status": r.status.as_str(),
        "exit_code": r.exit_code,
        "missed": r.missed,
        "output": r.output,
    })
}

pub(crate) fn run_text(r: &Run) -> String {
    let code = r
        .exit_code
        .map(|c| format!(" exit {c}"))
        .unwrap_or_default();
    let took = r
        .finished_at
        .map(|f| format!(" in {} s", f - r.started_at))
        .unwrap_or_default();
    let output = if r.output.is_empty() {
        String::new()
    } else {
        format!("\n    {}", one_line(&r.output, 300))
    };
    format!(
        "run {} ({}) started {}{took}: {}{code}{output}",
        r.id,
        r.trigger,
        rfc3339(r.started_at),
        r.status.as_str()
    )
}
