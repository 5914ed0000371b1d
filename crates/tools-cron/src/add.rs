//! `cron_add`: schedule a command (or an agent prompt), recurring or once.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};

use crate::core::{Cron, action, check_name, job_json, job_line, rfc3339, workspace_key};
use crate::store::NewJob;

/// Arguments of `cron_add`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CronAddArgs {
    /// When it recurs: five crontab fields (`minute hour day-of-month month day-of-week`, e.g.
    /// `0 9 * * 1-5`; day-of-week 0 or 7 is Sunday), six or seven fields with seconds first,
    /// or a macro (`@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly`). Give this or `delay`.
    pub expression: Option<String>,
    /// Run once after this delay: a whole number and a unit, `30s`, `10m`, `2h` or `1d`. Give
    /// this or `expression`.
    pub delay: Option<String>,
    /// The shell command line to run; it goes through the same policy and sandbox as `shell`.
    pub command: Option<String>,
    /// A task for the agent, instead of a command.
    pub prompt: Option<String>,
    /// A label for the job.
    pub name: Option<String>,
    /// The IANA time zone the expression is read in (default UTC), e.g. `Europe/Berlin`.
    pub timezone: Option<String>,
}

/// `cron_add`.
#[derive(Debug)]
pub struct CronAdd(pub(crate) Arc<Cron>);

#[async_trait]
impl Tool for CronAdd {
    const NAME: &'static str = "cron_add";
    type Args = CronAddArgs;

    fn description(&self) -> String {
        "Schedule a shell command (or an agent prompt) to run on a cron expression or once after a delay. The command is checked by the shell policy now and again at every run; schedules firing more often than the minimum interval are refused; `toolshed cron daemon` runs due jobs.".into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::ADDITIVE
    }

    /// `schedule` does the same job, and its rules hold here too.
    const SAME_JOB: &'static [&'static str] = &["schedule"];

    fn access(&self, ctx: &ToolContext, args: &CronAddArgs) -> Result<Vec<Access>, ToolError> {
        add_accesses(&self.0, ctx, args)
    }

    async fn call(&self, ctx: &ToolContext, args: CronAddArgs) -> Result<ToolOutput, ToolError> {
        add(&self.0, ctx, &args).await
    }
}

/// Checks `cron_add`-shaped arguments and returns what adding the job touches: the cron state
/// and everything its command would (shared with `schedule`).
pub(crate) fn add_accesses(
    cron: &Cron,
    ctx: &ToolContext,
    args: &CronAddArgs,
) -> Result<Vec<Access>, ToolError> {
    let action = action(args.command.as_deref(), args.prompt.as_deref())?;
    check_name(args.name.as_deref())?;
    cron.schedule(
        args.expression.as_deref(),
        args.delay.as_deref(),
        args.timezone.as_deref(),
        Utc::now(),
    )?;
    cron.action_accesses(ctx, &action)
}

/// Adds a job from `cron_add`-shaped arguments (shared with `schedule`).
pub(crate) async fn add(
    cron: &Arc<Cron>,
    ctx: &ToolContext,
    args: &CronAddArgs,
) -> Result<ToolOutput, ToolError> {
    let action = action(args.command.as_deref(), args.prompt.as_deref())?;
    check_name(args.name.as_deref())?;
    let now = Utc::now();
    let (schedule, next_run) = cron.schedule(
        args.expression.as_deref(),
        args.delay.as_deref(),
        args.timezone.as_deref(),
        now,
    )?;
    let job = NewJob {
        workspace: workspace_key(ctx),
        name: args.name.clone(),
        schedule,
        action,
        created_at: now.timestamp(),
        next_run: Some(next_run),
    };
    let cron2 = Arc::clone(cron);
    let max_jobs = cron.config.max_jobs;
    let job = tool_core::blocking(ctx, move || cron2.store()?.add(&job, max_jobs)).await?;
    Ok(ToolOutput::text(format!(
        "Added job {}\nIt first runs at {}, when `toolshed cron daemon` runs in this workspace.",
        job_line(&job),
        rfc3339(next_run)
    ))
    .with_structured(json!({ "job": job_json(&job) })))
}
