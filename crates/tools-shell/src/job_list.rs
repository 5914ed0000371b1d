use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};

use crate::job_output::{status_json, status_line};
use crate::jobs::Jobs;

/// Arguments of `job_list` (none).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobListArgs {}

/// `job_list`: the background jobs and their status.
#[derive(Debug, Clone)]
pub struct JobList {
    jobs: Arc<Jobs>,
}

impl JobList {
    /// The tool over a shared job registry.
    pub fn new(jobs: Arc<Jobs>) -> JobList {
        JobList { jobs }
    }
}

#[async_trait]
impl Tool for JobList {
    const NAME: &'static str = "job_list";
    type Args = JobListArgs;

    fn description(&self) -> String {
        "List background jobs started with shell background=true: id, status, runtime, output \
         size and command."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn access(&self, _ctx: &ToolContext, _args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        Ok(vec![Access::State {
            store: "shell jobs".into(),
            write: false,
        }])
    }

    async fn call(&self, _ctx: &ToolContext, _args: Self::Args) -> Result<ToolOutput, ToolError> {
        let snaps: Vec<_> = self.jobs.all()?.iter().map(|j| j.snapshot()).collect();
        if snaps.is_empty() {
            return Ok(ToolOutput::text("no background jobs").with_structured(json!({"jobs": []})));
        }
        let text = snaps
            .iter()
            .map(|s| {
                format!(
                    "{}, {} bytes of output: {}",
                    status_line(s),
                    s.total_bytes,
                    tool_core::truncate::cut_line(&s.command, 200)
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        let jobs: Vec<_> = snaps.iter().map(status_json).collect();
        Ok(ToolOutput::text(text).with_structured(json!({ "jobs": jobs })))
    }
}
