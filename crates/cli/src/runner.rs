//! The [`JobRunner`] that scheduled jobs run through: the `shell` tool in its own stack.

use std::fmt;

use async_trait::async_trait;
use serde_json::json;
use tool_core::{
    Access, ApproveAll, JobAction, JobRunner, Registry, RunReport, Stack, ToolContext, ToolError,
};

/// Runs job commands as the `shell` tool would run them: the same bash-grammar analysis, the
/// same policy decision, the same sandbox, timeout and output limits.
///
/// A job's command is judged by the policy when the job is added — the call that adds it
/// carries the command's accesses, so a command the policy refuses is never stored, and one
/// it asks about is asked about then. Adding the job is that approval; at run time the policy
/// decides again, a refusal is recorded as a `denied` run, and an `Ask` counts as the approval
/// given when the job was added (there is nobody to ask at 3 a.m.).
pub struct ShellJobRunner {
    stack: Stack,
}

impl fmt::Debug for ShellJobRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ShellJobRunner")
    }
}

impl ShellJobRunner {
    /// A runner over a `shell` tool set up from `config`.
    pub fn new(config: &tools_shell::Config) -> anyhow::Result<ShellJobRunner> {
        let mut registry = Registry::new();
        registry.register_all(
            tools_shell::tools(config)
                .into_iter()
                .filter(|t| t.spec().name == "shell"),
        )?;
        Ok(ShellJobRunner {
            stack: Stack::new(registry).with_approver(std::sync::Arc::new(ApproveAll)),
        })
    }
}

#[async_trait]
impl JobRunner for ShellJobRunner {
    fn accesses(&self, ctx: &ToolContext, action: &JobAction) -> Result<Vec<Access>, ToolError> {
        match action {
            JobAction::Command(command) => Ok(self
                .stack
                .registry()
                .prepare("shell", json!({ "command": command }), ctx)
                .map_err(|e| match e {
                    ToolError::InvalidArgs { message, .. } => {
                        ToolError::invalid("command", message)
                    }
                    other => other,
                })?
                .accesses),
            JobAction::Prompt(_) => Err(ToolError::invalid(
                "prompt",
                "prompt jobs need an agent, and none is configured for scheduled jobs; schedule a `command` instead",
            )),
        }
    }

    async fn run(&self, ctx: ToolContext, action: &JobAction) -> Result<RunReport, ToolError> {
        let JobAction::Command(command) = action else {
            return Err(ToolError::Failed(
                "Prompt jobs need an agent, and none is configured for scheduled jobs; change the job to a `command` with cron_update.".into(),
            ));
        };
        let out = self
            .stack
            .call("shell", json!({ "command": command }), ctx)
            .await?;
        let exit_code = out
            .structured
            .as_ref()
            .and_then(|s| s.get("exit_code"))
            .and_then(|c| c.as_i64())
            .map(|c| c as i32);
        Ok(RunReport {
            success: exit_code == Some(0),
            exit_code,
            output: out.joined_text(),
        })
    }
}
