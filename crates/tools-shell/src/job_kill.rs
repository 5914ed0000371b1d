use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};

use crate::job_output::{status_json, status_line};
use crate::jobs::Jobs;

/// Arguments of `job_kill`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobKillArgs {
    /// The id `shell` returned for the background job.
    pub job_id: u64,
}

/// `job_kill`: stops a background job and everything it started.
#[derive(Debug, Clone)]
pub struct JobKill {
    jobs: Arc<Jobs>,
}

impl JobKill {
    /// The tool over a shared job registry.
    pub fn new(jobs: Arc<Jobs>) -> JobKill {
        JobKill { jobs }
    }
}

#[async_trait]
impl Tool for JobKill {
    const NAME: &'static str = "job_kill";
    type Args = JobKillArgs;

    fn description(&self) -> String {
        "Stop a background job: its process group and every process it started are killed. \
         Its remaining output can still be read with job_output."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE.idempotent(true)
    }

    fn access(&self, _ctx: &ToolContext, _args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        // Stopping a job this session started changes nothing the user owns.
        Ok(vec![Access::State {
            store: "shell jobs".into(),
            write: false,
        }])
    }

    async fn call(&self, _ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let job = self.jobs.get(args.job_id)?;
        let already = job.ended().is_some();
        if !already && job.kill().await.is_none() {
            return Err(ToolError::Failed(format!(
                "Job {} was sent SIGKILL but has not been reaped yet; check it with job_list in a moment.",
                args.job_id
            )));
        }
        let snap = job.snapshot();
        let text = if already {
            format!("{} (it had already ended)", status_line(&snap))
        } else {
            status_line(&snap)
        };
        Ok(ToolOutput::text(text).with_structured(status_json(&snap)))
    }
}
