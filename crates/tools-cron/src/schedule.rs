//! `schedule`: NullClaw's one-tool interface to the same jobs (create, once, list, get, cancel,
//! pause, resume).

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};

use crate::add::{CronAddArgs, add, add_accesses};
use crate::core::{Cron, job_json, job_line, state};
use crate::list::list;
use crate::remove::remove;
use crate::runs::{history, run_json, run_text};
use crate::update::{CronUpdateArgs, update};

/// What `schedule` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ScheduleAction {
    /// Add a recurring job (`expression`, and `command` or `prompt`).
    Create,
    /// Add a one-shot job (`delay`, and `command` or `prompt`).
    Once,
    /// List the jobs.
    List,
    /// Show one job and its recent runs (`job_id`).
    Get,
    /// Remove a job (`job_id`).
    Cancel,
    /// Pause a job (`job_id`).
    Pause,
    /// Resume a paused job (`job_id`).
    Resume,
}

/// Arguments of `schedule`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleArgs {
    /// What to do.
    pub action: ScheduleAction,
    /// For `create`: when it recurs (five crontab fields, six/seven with seconds first, or
    /// `@daily` and friends).
    pub expression: Option<String>,
    /// For `once`: the delay, `30s`, `10m`, `2h` or `1d`.
    pub delay: Option<String>,
    /// For `create`/`once`: the shell command line (checked by the shell policy).
    pub command: Option<String>,
    /// For `create`/`once`: a task for the agent instead of a command.
    pub prompt: Option<String>,
    /// For `create`/`once`: a label.
    pub name: Option<String>,
    /// For `create`: the IANA time zone of the expression (default UTC).
    pub timezone: Option<String>,
    /// For `get`, `cancel`, `pause`, `resume`: the job's id.
    pub job_id: Option<i64>,
}

/// `schedule`.
#[derive(Debug)]
pub struct Schedule(pub(crate) Arc<Cron>);

fn job_id(args: &ScheduleArgs) -> Result<i64, ToolError> {
    args.job_id.ok_or_else(|| {
        ToolError::invalid(
            "job_id",
            "this action needs `job_id`; call schedule with action `list` to see the ids",
        )
    })
}

fn add_args(args: &ScheduleArgs) -> Result<CronAddArgs, ToolError> {
    let (expression, delay) = match args.action {
        ScheduleAction::Create => {
            if args.delay.is_some() {
                return Err(ToolError::invalid(
                    "delay",
                    "`create` makes a recurring job from `expression`; use action `once` for a delay",
                ));
            }
            (args.expression.clone(), None)
        }
        _ => {
            if args.expression.is_some() {
                return Err(ToolError::invalid(
                    "expression",
                    "`once` runs after `delay`; use action `create` for an expression",
                ));
            }
            (None, args.delay.clone())
        }
    };
    Ok(CronAddArgs {
        expression,
        delay,
        command: args.command.clone(),
        prompt: args.prompt.clone(),
        name: args.name.clone(),
        timezone: args.timezone.clone(),
    })
}

#[async_trait]
impl Tool for Schedule {
    const NAME: &'static str = "schedule";
    type Args = ScheduleArgs;

    fn description(&self) -> String {
        "Manage scheduled jobs with one tool: `create` (recurring, from `expression`), `once` (after `delay`), `list`, `get`, `cancel`, `pause`, `resume`. Same jobs, checks and limits as the cron_* tools.".into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE
    }

    const SAME_JOB: &'static [&'static str] = &[
        "cron_add",
        "cron_list",
        "cron_runs",
        "cron_remove",
        "cron_update",
    ];

    /// Each action does a cron tool's job, whose rules hold here too.
    fn same_as(&self, args: &ScheduleArgs) -> &'static [&'static str] {
        match args.action {
            ScheduleAction::Create | ScheduleAction::Once => &["cron_add"],
            ScheduleAction::List => &["cron_list"],
            ScheduleAction::Get => &["cron_list", "cron_runs"],
            ScheduleAction::Cancel => &["cron_remove"],
            ScheduleAction::Pause | ScheduleAction::Resume => &["cron_update"],
        }
    }

    fn access(&self, ctx: &ToolContext, args: &ScheduleArgs) -> Result<Vec<Access>, ToolError> {
        match args.action {
            ScheduleAction::Create | ScheduleAction::Once => {
                add_accesses(&self.0, ctx, &add_args(args)?)
            }
            ScheduleAction::List | ScheduleAction::Get => Ok(vec![state(false)]),
            ScheduleAction::Cancel | ScheduleAction::Pause => {
                job_id(args)?;
                Ok(vec![state(true)])
            }
            // Resuming a job lets its work run again: only for a caller that may use the tools
            // a job runs through (as for `cron_run`).
            ScheduleAction::Resume => {
                job_id(args)?;
                let mut accesses = vec![state(true)];
                accesses.extend(self.0.job_tools(ctx));
                Ok(accesses)
            }
        }
    }

    async fn call(&self, ctx: &ToolContext, args: ScheduleArgs) -> Result<ToolOutput, ToolError> {
        match args.action {
            ScheduleAction::Create | ScheduleAction::Once => {
                add(&self.0, ctx, &add_args(&args)?).await
            }
            ScheduleAction::List => list(&self.0, ctx).await,
            ScheduleAction::Get => {
                let id = job_id(&args)?;
                let (runs, job) = history(&self.0, ctx, id, 5).await?;
                let mut text = job_line(&job);
                for r in &runs {
                    text.push('\n');
                    text.push_str(&run_text(r));
                }
                let items: Vec<Value> = runs.iter().map(run_json).collect();
                Ok(ToolOutput::text(text)
                    .with_structured(json!({ "job": job_json(&job), "runs": items })))
            }
            ScheduleAction::Cancel => remove(&self.0, ctx, job_id(&args)?).await,
            ScheduleAction::Pause | ScheduleAction::Resume => {
                let paused = args.action == ScheduleAction::Pause;
                update(
                    &self.0,
                    ctx,
                    CronUpdateArgs {
                        job_id: job_id(&args)?,
                        expression: None,
                        delay: None,
                        timezone: None,
                        command: None,
                        prompt: None,
                        name: None,
                        paused: Some(paused),
                    },
                )
                .await
            }
        }
    }
}
