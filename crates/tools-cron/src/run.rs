//! `cron_run`: run a job now, outside its schedule.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};

use crate::core::{Cron, LEASE, owner_id, state, workspace_key};
use crate::daemon::{Clock, SystemClock, spawn_heartbeat};
use crate::store::not_found;

/// Arguments of `cron_run`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CronRunArgs {
    /// The job's id, as `cron_list` shows it.
    pub job_id: i64,
}

/// `cron_run`.
#[derive(Debug)]
pub struct CronRun(pub(crate) Arc<Cron>);

#[async_trait]
impl Tool for CronRun {
    const NAME: &'static str = "cron_run";
    type Args = CronRunArgs;

    fn description(&self) -> String {
        "Run a scheduled job now and wait for it; the run is recorded in its history (trigger `manual`) and does not change the schedule. The policy checks the command again before it runs.".into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE
    }

    fn access(&self, ctx: &ToolContext, _args: &CronRunArgs) -> Result<Vec<Access>, ToolError> {
        // The command itself was judged when the job was added and is judged again by the
        // runner before it starts (a refusal there is recorded as `denied`). Running it now is
        // doing its work now: only a caller that may use the tools a job runs through may (an
        // agent kept from `shell` does not run a stored command through here).
        let mut accesses = vec![state(true)];
        accesses.extend(self.0.job_tools(ctx));
        Ok(accesses)
    }

    fn timeout(&self, _args: &CronRunArgs) -> Option<Duration> {
        // The runner enforces the command's own deadline; this only bounds the wait.
        Some(Duration::from_secs(600))
    }

    async fn call(&self, ctx: &ToolContext, args: CronRunArgs) -> Result<ToolOutput, ToolError> {
        let cron = Arc::clone(&self.0);
        let ws = workspace_key(ctx);
        let owner = owner_id("manual");
        let id = args.job_id;
        let owner2 = owner.clone();
        let (job, run_id) = tool_core::blocking(ctx, move || {
            let store = cron.store()?;
            let job = store.get(&ws, id)?.ok_or_else(|| not_found(id))?;
            let now = SystemClock.now().timestamp();
            let run_id = store.begin_manual(&job, now, &owner2, now + LEASE.as_secs() as i64)?;
            Ok((job, run_id))
        })
        .await?;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let heartbeat = spawn_heartbeat(&self.0, run_id, &owner, &clock);
        let outcome = self
            .0
            .execute(ctx.for_call(), &job, run_id, &owner, 0, || {
                SystemClock.now().timestamp()
            })
            .await;
        drop(heartbeat);
        let o = outcome?;
        let code = o
            .exit_code
            .map(|c| format!(", exit code {c}"))
            .unwrap_or_default();
        Ok(ToolOutput::text(format!(
            "Job {id} ran (run {}): {}{code}\n{}",
            o.run_id,
            o.status.as_str(),
            o.output
        ))
        .with_structured(json!({
            "job_id": id,
            "run_id": o.run_id,
            "status": o.status.as_str(),
            "exit_code": o.exit_code,
        })))
    }
}
