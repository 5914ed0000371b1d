//! What every cron tool and the daemon share: the store, the runner, the settings, and the
//! rules for turning arguments into a schedule.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use tool_core::{Access, JobAction, JobRunner, ToolContext, ToolError};

use crate::Config;
use crate::expr::{CronExpr, parse_delay};
use crate::store::{CronStore, Job, JobSchedule, LazyStore, RunStatus};

/// The state the tools of one registry share.
#[derive(Debug)]
pub(crate) struct Cron {
    pub(crate) store: LazyStore,
    pub(crate) runner: Arc<dyn JobRunner>,
    pub(crate) config: Config,
}

/// The longest command line or prompt a job keeps.
pub(crate) const MAX_ACTION_BYTES: usize = 16 * 1024;
/// The longest job name.
pub(crate) const MAX_NAME_CHARS: usize = 200;
/// The longest `expression`, `delay` or `timezone` accepted (characters). The longest real
/// schedule is a few dozen; the cap keeps a flood out of the store and out of error messages,
/// which quote the text.
pub(crate) const MAX_SCHEDULE_CHARS: usize = 1000;

impl Cron {
    pub(crate) fn new(config: &Config) -> Cron {
        let store = match &config.store {
            Some(s) => LazyStore::with_store(Arc::clone(s)),
            None => LazyStore::new(config.database.clone()),
        };
        Cron {
            store,
            runner: Arc::clone(&config.runner),
            config: config.clone(),
        }
    }

    /// The store, opened on first use. Blocking.
    pub(crate) fn store(&self) -> Result<Arc<dyn CronStore>, ToolError> {
        self.store.get()
    }

    /// Checks `expression`/`delay` and `timezone` and returns the schedule and its first run.
    pub(crate) fn schedule(
        &self,
        expression: Option<&str>,
        delay: Option<&str>,
        timezone: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<(JobSchedule, i64), ToolError> {
        for (field, text, example) in [
            (
                "expression",
                expression,
                "five crontab fields such as `0 9 * * 1-5`, or a macro such as `@daily`",
            ),
            ("delay", delay, "a number and a unit such as `10m`"),
            ("timezone", timezone, "an IANA name such as `Europe/Berlin`"),
        ] {
            let Some(text) = text else { continue };
            let chars = text.chars().count();
            if chars > MAX_SCHEDULE_CHARS {
                return Err(ToolError::invalid(
                    field,
                    format!(
                        "the {field} is {chars} characters long, more than the {MAX_SCHEDULE_CHARS} allowed; give {example}"
                    ),
                ));
            }
        }
        match (expression, delay) {
            (Some(_), Some(_)) => Err(ToolError::invalid(
                "delay",
                "give either `expression` (recurring) or `delay` (once), not both",
            )),
            (None, None) => Err(ToolError::invalid(
                "expression",
                "give `expression` (e.g. `0 9 * * 1-5` or `@daily`) for a recurring job, or `delay` (e.g. `10m`) for a one-shot",
            )),
            (None, Some(delay)) => {
                if timezone.is_some() {
                    return Err(ToolError::invalid(
                        "timezone",
                        "a delay needs no time zone; leave `timezone` out",
                    ));
                }
                let d = parse_delay(delay).map_err(|m| ToolError::invalid("delay", m))?;
                let at = (now + d).timestamp();
                Ok((JobSchedule::Once { at }, at))
            }
            (Some(expression), None) => {
                let expr = CronExpr::parse(expression, timezone)
                    .map_err(|m| ToolError::invalid("expression", m))?;
                let min = self.config.min_interval;
                if let Some(gap) = expr.min_gap(now, 1000)
                    && gap.num_seconds() < min.as_secs() as i64
                {
                    return Err(ToolError::invalid(
                        "expression",
                        format!(
                            "`{expression}` fires as often as every {} s, more often than the minimum interval of {} s (cron.min_interval_secs); choose a sparser schedule",
                            gap.num_seconds(),
                            min.as_secs()
                        ),
                    ));
                }
                let first = expr.next_after(now).ok_or_else(|| {
                    ToolError::invalid(
                        "expression",
                        format!(
                            "`{expression}` never fires after now; check the year and date fields"
                        ),
                    )
                })?;
                Ok((
                    JobSchedule::Cron {
                        expression: expr.source().to_string(),
                        timezone: expr.timezone().name().to_string(),
                    },
                    first.timestamp(),
                ))
            }
        }
    }

    /// Accesses of adding or changing a job that runs `action`: the cron state, plus whatever
    /// the action would touch when it runs, so the policy judges the command now.
    /// What setting stored work running needs (`cron_run`, resuming, rescheduling): every tool
    /// a job runs through, as deferred work, so that only a caller who may use them may.
    pub(crate) fn job_tools(&self, ctx: &ToolContext) -> Vec<Access> {
        self.runner
            .tools(ctx)
            .into_iter()
            .map(|tool| Access::Deferred {
                tool,
                accesses: Vec::new(),
            })
            .collect()
    }

    pub(crate) fn action_accesses(
        &self,
        ctx: &ToolContext,
        action: &JobAction,
    ) -> Result<Vec<Access>, ToolError> {
        let mut accesses = vec![state(true)];
        accesses.extend(self.runner.accesses(ctx, action)?);
        Ok(accesses)
    }

    /// Runs `job` as run `run_id` (already leased to `owner`) and records the end.
    pub(crate) async fn execute(
        &self,
        ctx: ToolContext,
        job: &Job,
        run_id: i64,
        owner: &str,
        missed: i64,
        now: impl Fn() -> i64,
    ) -> Result<RunOutcome, ToolError> {
        let result = self.runner.run(ctx, &job.action).await;
        let (status, exit_code, mut output) = match result {
            Ok(report) => (
                if report.success {
                    RunStatus::Ok
                } else {
                    RunStatus::Failed
                },
                report.exit_code,
                report.output,
            ),
            Err(ToolError::Denied(m)) => (RunStatus::Denied, None, m),
            Err(e @ ToolError::NeedsApproval(_)) => (RunStatus::Denied, None, e.to_string()),
            Err(ToolError::Cancelled) => (
                RunStatus::Cancelled,
                None,
                "the run was cancelled (the daemon stopped or the caller gave up)".into(),
            ),
            Err(e) => (RunStatus::Error, None, e.model_message()),
        };
        if missed > 0 {
            output = format!(
                "[catch-up run: {missed} earlier occurrence(s) were missed while no daemon ran]\n{output}"
            );
        }
        let (capped, _) = tool_core::truncate::head_tail(
            &output,
            self.config.max_output_bytes,
            "the run's output was cut; run the command yourself to see all of it",
        );
        let store = self.store()?;
        let owner_s = owner.to_string();
        let capped2 = capped.clone();
        let finished_at = now();
        let recorded = tokio::task::spawn_blocking(move || {
            store.finish(run_id, &owner_s, finished_at, status, exit_code, &capped2)
        })
        .await
        .map_err(|_| ToolError::internal("recording a run's end panicked"))??;
        Ok(RunOutcome {
            run_id,
            status,
            exit_code,
            output: capped,
            recorded,
        })
    }
}

/// How [`Cron::execute`] went.
#[derive(Debug, Clone)]
pub(crate) struct RunOutcome {
    pub(crate) run_id: i64,
    pub(crate) status: RunStatus,
    pub(crate) exit_code: Option<i32>,
    pub(crate) output: String,
    /// False when the lease had expired and someone else marked the run abandoned.
    pub(crate) recorded: bool,
}

/// The cron state as a policy access.
pub(crate) fn state(write: bool) -> Access {
    Access::State {
        store: "cron".into(),
        write,
    }
}

/// The key jobs are filed under: the workspace root.
pub(crate) fn workspace_key(ctx: &ToolContext) -> String {
    // Every virtual workspace has the root `/`: its backend names it instead.
    if let Some(identity) = ctx.workspace.backend().identity() {
        return identity;
    }
    ctx.workspace
        .roots()
        .first()
        .map(|r| r.path.display().to_string())
        .unwrap_or_default()
}

/// Builds the action from `command`/`prompt`.
pub(crate) fn action(command: Option<&str>, prompt: Option<&str>) -> Result<JobAction, ToolError> {
    let action = match (command, prompt) {
        (Some(_), Some(_)) => {
            return Err(ToolError::invalid(
                "prompt",
                "give either `command` or `prompt`, not both",
            ));
        }
        (None, None) => {
            return Err(ToolError::invalid(
                "command",
                "give the `command` to run (a shell command line) or a `prompt` for the agent",
            ));
        }
        (Some(c), None) => JobAction::Command(c.to_string()),
        (None, Some(p)) => JobAction::Prompt(p.to_string()),
    };
    let field = action.kind();
    if action.text().trim().is_empty() {
        return Err(ToolError::invalid(field, format!("the {field} is empty")));
    }
    if action.text().len() > MAX_ACTION_BYTES {
        return Err(ToolError::invalid(
            field,
            format!(
                "the {field} is longer than {MAX_ACTION_BYTES} bytes; put long scripts in a file and run that"
            ),
        ));
    }
    if action.text().contains('\0') {
        return Err(ToolError::invalid(
            field,
            format!("the {field} contains a NUL byte"),
        ));
    }
    Ok(action)
}

/// Checks a job name.
pub(crate) fn check_name(name: Option<&str>) -> Result<(), ToolError> {
    if let Some(n) = name
        && (n.chars().count() > MAX_NAME_CHARS || n.chars().any(char::is_control))
    {
        return Err(ToolError::invalid(
            "name",
            format!(
                "the name must be at most {MAX_NAME_CHARS} characters without control characters"
            ),
        ));
    }
    Ok(())
}

/// A job's next occurrence strictly after `after` (Unix seconds).
pub fn next_occurrence(job: &Job, after: i64) -> Option<i64> {
    match &job.schedule {
        JobSchedule::Once { at } => (*at > after).then_some(*at),
        JobSchedule::Cron {
            expression,
            timezone,
        } => {
            let expr = CronExpr::parse(expression, Some(timezone)).ok()?;
            let t = DateTime::from_timestamp(after, 0)?;
            expr.next_after(t).map(|d| d.timestamp())
        }
    }
}

pub(crate) fn rfc3339(t: i64) -> String {
    DateTime::from_timestamp(t, 0)
        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| t.to_string())
}

/// A job as JSON for structured output.
pub(crate) fn job_json(job: &Job) -> Value {
    let (kind, when) = match &job.schedule {
        JobSchedule::Cron {
            expression,
            timezone,
        } => (
            "recurring",
            json!({"expression": expression, "timezone": timezone}),
        ),
        JobSchedule::Once { at } => ("once", json!({"at": rfc3339(*at)})),
    };
    json!({
        "id": job.id,
        "name": job.name,
        "type": kind,
        "schedule": when,
        job.action.kind(): job.action.text(),
        "paused": job.paused,
        "created_at": rfc3339(job.created_at),
        "next_run": job.next_run.map(rfc3339),
        "last_run": job.last_run.map(rfc3339),
    })
}

/// A job as one line of text.
pub(crate) fn job_line(job: &Job) -> String {
    let when = match &job.schedule {
        JobSchedule::Cron {
            expression,
            timezone,
        } => format!("`{expression}` ({timezone})"),
        JobSchedule::Once { at } => format!("once at {}", rfc3339(*at)),
    };
    let state = if job.paused {
        "paused".to_string()
    } else {
        match job.next_run {
            Some(n) => format!("next {}", rfc3339(n)),
            None => "done".to_string(),
        }
    };
    format!(
        "#{} {}{} — {}: {} — {}",
        job.id,
        when,
        job.name
            .as_deref()
            .map(|n| format!(" [{n}]"))
            .unwrap_or_default(),
        job.action.kind(),
        one_line(job.action.text(), 120),
        state
    )
}

pub(crate) fn one_line(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    tool_core::truncate::cut_line(&flat, max).into_owned()
}

/// A unique owner id for this process's leases.
pub(crate) fn owner_id(label: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{label}-{}-{nanos:x}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// How long a lease lasts without renewal.
pub(crate) const LEASE: Duration = Duration::from_secs(60);
