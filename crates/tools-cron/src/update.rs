//! `cron_update`: change a job's schedule, command, name or pause state.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};

use crate::core::{
    Cron, action, check_name, job_json, job_line, next_occurrence, state, workspace_key,
};
use crate::store::{JobSchedule, not_found};

/// Arguments of `cron_update`. Fields left out keep their values.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CronUpdateArgs {
    /// The job's id, as `cron_list` shows it.
    pub job_id: i64,
    /// A new recurring schedule (same forms as `cron_add`).
    pub expression: Option<String>,
    /// Make it a one-shot that runs after this delay (`30s`, `10m`, `2h`, `1d`).
    pub delay: Option<String>,
    /// A new time zone for the expression.
    pub timezone: Option<String>,
    /// A new command (replaces a prompt).
    pub command: Option<String>,
    /// A new agent prompt (replaces a command).
    pub prompt: Option<String>,
    /// A new label.
    pub name: Option<String>,
    /// Pause (`true`) or resume (`false`) the job. Resuming skips occurrences missed while paused.
    pub paused: Option<bool>,
}

/// `cron_update`.
#[derive(Debug)]
pub struct CronUpdate(pub(crate) Arc<Cron>);

#[async_trait]
impl Tool for CronUpdate {
    const NAME: &'static str = "cron_update";
    type Args = CronUpdateArgs;

    fn description(&self) -> String {
        "Change a scheduled job: its schedule, time zone, command or prompt, name, or paused state. A new command is checked by the shell policy like a new job.".into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE.idempotent(true)
    }

    /// `schedule` does the same job, and its rules hold here too.
    const SAME_JOB: &'static [&'static str] = &["schedule"];

    fn access(&self, ctx: &ToolContext, args: &CronUpdateArgs) -> Result<Vec<Access>, ToolError> {
        check_name(args.name.as_deref())?;
        // Un-pausing or rescheduling decides when the job's work runs (an agent could move a
        // yearly job to the next minute): only for a caller that may use the tools a job runs
        // through (as for `cron_run`).
        let reschedules =
            args.paused == Some(false) || args.expression.is_some() || args.delay.is_some();
        let resumes: Vec<Access> = if reschedules {
            self.0.job_tools(ctx)
        } else {
            Vec::new()
        };
        if args.command.is_some() || args.prompt.is_some() {
            let action = action(args.command.as_deref(), args.prompt.as_deref())?;
            let mut accesses = self.0.action_accesses(ctx, &action)?;
            accesses.extend(resumes);
            return Ok(accesses);
        }
        if args.expression.is_some() || args.delay.is_some() {
            self.0.schedule(
                args.expression.as_deref(),
                args.delay.as_deref(),
                args.timezone.as_deref(),
                Utc::now(),
            )?;
        }
        let mut accesses = vec![state(true)];
        accesses.extend(resumes);
        Ok(accesses)
    }

    async fn call(&self, ctx: &ToolContext, args: CronUpdateArgs) -> Result<ToolOutput, ToolError> {
        update(&self.0, ctx, args).await
    }
}

pub(crate) async fn update(
    cron: &Arc<Cron>,
    ctx: &ToolContext,
    args: CronUpdateArgs,
) -> Result<ToolOutput, ToolError> {
    let cron2 = Arc::clone(cron);
    let ws = workspace_key(ctx);
    let id = args.job_id;
    let job = tool_core::blocking(ctx, move || {
        let store = cron2.store()?;
        let mut job = store.get(&ws, id)?.ok_or_else(|| not_found(id))?;
        let now = Utc::now();
        let mut reschedule = false;
        if args.expression.is_some() || args.delay.is_some() {
            let (schedule, _) = cron2.schedule(
                args.expression.as_deref(),
                args.delay.as_deref(),
                args.timezone.as_deref(),
                now,
            )?;
            job.schedule = schedule;
            reschedule = true;
        } else if let Some(tz) = &args.timezone {
            let JobSchedule::Cron { expression, .. } = &job.schedule else {
                return Err(ToolError::invalid(
                    "timezone",
                    "this job runs once at a fixed time; a time zone only applies to an expression",
                ));
            };
            let (schedule, _) = cron2.schedule(Some(expression), None, Some(tz), now)?;
            job.schedule = schedule;
            reschedule = true;
        }
        if args.command.is_some() || args.prompt.is_some() {
            job.action = action(args.command.as_deref(), args.prompt.as_deref())?;
        }
        if let Some(name) = args.name {
            job.name = Some(name).filter(|n| !n.is_empty());
        }
        if let Some(paused) = args.paused {
            // Resuming starts from now: occurrences missed while paused are skipped.
            reschedule |= job.paused && !paused;
            job.paused = paused;
        }
        if reschedule {
            job.next_run = match job.schedule {
                JobSchedule::Once { at } => Some(at),
                JobSchedule::Cron { .. } => next_occurrence(&job, now.timestamp()),
            };
        }
        store.update(&job)?;
        Ok(job)
    })
    .await?;
    Ok(
        ToolOutput::text(format!("Updated job {}: {}", job.id, job_line(&job)))
            .with_structured(json!({ "job": job_json(&job) })),
    )
}
