use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};

use crate::jobs::{Ended, Jobs, Snapshot};

/// The longest `wait_ms` accepted.
const MAX_WAIT_MS: u64 = 30_000;

/// Arguments of `job_output`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobOutputArgs {
    /// The id `shell` returned for the background job.
    pub job_id: u64,
    /// Milliseconds to wait for new output or for the job to end before returning (0 to 30000,
    /// default 0).
    #[schemars(range(max = 30000))]
    pub wait_ms: Option<u64>,
}

/// `job_output`: the new output and status of a background job.
#[derive(Debug, Clone)]
pub struct JobOutput {
    jobs: Arc<Jobs>,
}

impl JobOutput {
    /// The tool over a shared job registry.
    pub fn new(jobs: Arc<Jobs>) -> JobOutput {
        JobOutput { jobs }
    }
}

/// `running for 3 s`, `exited with code 0 after 2 s`, …
pub(crate) fn status_line(s: &Snapshot) -> String {
    let secs = s.runtime.as_secs();
    let how = |info: &tool_core::process::ExitInfo| match (info.exit_code, info.signal) {
        (Some(c), _) => format!("code {c}"),
        (None, Some(sig)) => format!("signal {sig}"),
        (None, None) => "an unknown status".to_string(),
    };
    match &s.ended {
        None => format!("job {} running for {secs} s", s.id),
        Some(Ended::Exited(i)) => format!("job {} exited with {} after {secs} s", s.id, how(i)),
        Some(Ended::Killed(_)) => format!("job {} was killed after {secs} s", s.id),
        Some(Ended::TimedOut(_)) => format!("job {} was killed after {secs} s (timeout)", s.id),
        Some(Ended::OutputCapped(_, cap)) => format!(
            "job {} was stopped after {secs} s and {} bytes of output, past the limit of {} for one job; to get less, pipe it through `head`, `tail` or `grep`, or redirect it to a file and read that",
            s.id,
            s.total_bytes,
            crate::shell::bytes_text(*cap)
        ),
    }
}

pub(crate) fn status_json(s: &Snapshot) -> serde_json::Value {
    let (state, code, signal) = match &s.ended {
        None => ("running", None, None),
        Some(Ended::Exited(i)) => ("exited", i.exit_code, i.signal),
        Some(Ended::Killed(i)) => ("killed", i.exit_code, i.signal),
        Some(Ended::TimedOut(i)) => ("timed_out", i.exit_code, i.signal),
        Some(Ended::OutputCapped(i, _)) => ("output_capped", i.exit_code, i.signal),
    };
    json!({
        "job_id": s.id,
        "command": s.command,
        "state": state,
        "exit_code": code,
        "signal": signal,
        "runtime_ms": s.runtime.as_millis() as u64,
        "total_bytes": s.total_bytes,
        "sandbox": s.sandbox,
        "pids": s.pids.as_ref().map(|p| &p.summary),
    })
}

#[async_trait]
impl Tool for JobOutput {
    const NAME: &'static str = "job_output";
    type Args = JobOutputArgs;

    fn description(&self) -> String {
        "Read a background job's output produced since the previous call, with its status \
         (running, exited with a code, killed). wait_ms waits up to that long for new output or \
         for the job to end. Output beyond the job's buffer (1 MiB) is dropped oldest first, and \
         the reply says how much; a job whose output passes the shell's total output limit is \
         stopped, and its status says so."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY.idempotent(false)
    }

    fn access(&self, _ctx: &ToolContext, _args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        Ok(vec![Access::State {
            store: "shell jobs".into(),
            write: false,
        }])
    }

    fn timeout(&self, args: &Self::Args) -> Option<Duration> {
        Some(
            Duration::from_millis(args.wait_ms.unwrap_or(0).min(MAX_WAIT_MS))
                + Duration::from_secs(10),
        )
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let wait = args.wait_ms.unwrap_or(0);
        if wait > MAX_WAIT_MS {
            return Err(ToolError::invalid(
                "/wait_ms",
                format!("wait_ms is {wait}; give at most {MAX_WAIT_MS} and poll again"),
            ));
        }
        let job = self.jobs.get(args.job_id)?;
        let max = ctx.limits.max_output_bytes.saturating_sub(512).max(1024);
        let chunk = job.output(Duration::from_millis(wait), max).await;
        let snap = job.snapshot();
        let mut text = status_line(&snap);
        if chunk.dropped > 0 {
            text.push_str(&format!(
                "\n[{} bytes of output were dropped before they could be read; poll more often or redirect the output to a file]",
                chunk.dropped
            ));
        }
        if chunk.text.is_empty() {
            text.push_str("\n(no new output)");
        } else {
            text.push('\n');
            text.push_str(&chunk.text);
        }
        if chunk.pending > 0 {
            text.push_str(&format!(
                "\n[{} more bytes are waiting; call job_output again]",
                chunk.pending
            ));
        }
        let mut structured = status_json(&snap);
        structured["dropped_bytes"] = json!(chunk.dropped);
        structured["pending_bytes"] = json!(chunk.pending);
        Ok(ToolOutput::text(text).with_structured(structured))
    }
}
