//! How scheduled work runs.
//!
//! tools-cron stores and times jobs, but it never runs a command or a prompt itself: whoever
//! composes the tool families (the `toolshed` CLI) passes in a [`JobRunner`] that runs commands
//! through the shell tool — its parser, its policy, its sandbox — and prompts through the agent.
//! A schedule can therefore never run anything the same command typed into `shell` could not.

use std::fmt;

use async_trait::async_trait;

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::policy::Access;

/// What a scheduled job does when it fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobAction {
    /// A shell command line, run as the `shell` tool runs it.
    Command(String),
    /// A task for the agent.
    Prompt(String),
}

impl JobAction {
    /// `command` or `prompt`.
    pub fn kind(&self) -> &'static str {
        match self {
            JobAction::Command(_) => "command",
            JobAction::Prompt(_) => "prompt",
        }
    }

    /// The command line or the prompt.
    pub fn text(&self) -> &str {
        match self {
            JobAction::Command(s) | JobAction::Prompt(s) => s,
        }
    }
}

/// How one run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    /// Whether the job did what it was asked (exit code 0, or an agent's final answer).
    pub success: bool,
    /// The command's exit code, if it exited.
    pub exit_code: Option<i32>,
    /// What it printed (already capped by the runner's limits).
    pub output: String,
}

/// Runs the actions of scheduled jobs under the same checks as an interactive call.
#[async_trait]
pub trait JobRunner: Send + Sync + fmt::Debug {
    /// What running `action` would touch, worked out without running anything, so that the
    /// policy can judge a job when it is added: [`Access::Deferred`] entries naming the tool
    /// that will do the work (`shell` for a command), so that its rules apply and only a caller
    /// who may call that tool can schedule it. Fails when this runner cannot run such an action
    /// at all (a prompt when no agent is configured), with a sentence saying what to do instead.
    fn accesses(&self, ctx: &ToolContext, action: &JobAction) -> Result<Vec<Access>, ToolError>;

    /// The tools running a job may use, whichever job it is, for a caller that runs stored jobs
    /// without knowing their action (`cron_run`): only a caller that may use all of them may
    /// run a job now. By default, the tools [`JobRunner::accesses`] hands work to for a
    /// command and for a prompt (a kind this runner cannot run adds none).
    fn tools(&self, ctx: &ToolContext) -> Vec<String> {
        let mut tools: Vec<String> = Vec::new();
        for action in [
            JobAction::Command(":".into()),
            JobAction::Prompt(String::new()),
        ] {
            if let Ok(accesses) = self.accesses(ctx, &action) {
                for t in Access::deferred_tools(&accesses) {
                    if !tools.iter().any(|x| x == t) {
                        tools.push(t.to_owned());
                    }
                }
            }
        }
        tools
    }

    /// Runs `action` now. The policy is asked again (it may have changed since the job was
    /// added): a refusal is an `Err(ToolError::Denied)`, never a silent run.
    async fn run(&self, ctx: ToolContext, action: &JobAction) -> Result<RunReport, ToolError>;
}
