//! The [`JobRunner`] that scheduled jobs run through: commands through the `shell` tool in its
//! own stack, prompts through the agent loop.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use tool_core::{Access, JobAction, JobRunner, Registry, RunReport, Stack, ToolContext, ToolError};

/// Runs job commands as the `shell` tool would run them: the same bash-grammar analysis, the
/// same policy decision, the same sandbox, timeout and output limits.
///
/// A job's command is judged by the policy when the job is added — the call that adds it
/// carries the command's accesses, so a command the policy refuses is never stored, and one
/// it asks about is asked about then. At run time the policy decides again, with nobody to
/// ask (3 a.m.): a refusal and an `Ask` are both recorded as a `denied` run, whose output names
/// the `[policy.rules]` line that would let the job run. An approval given when the job was
/// added does not carry over: the job may have been added under another policy (a `full`
/// configuration), and what the command reaches can change between runs.
///
/// A prompt job runs the `default` agent on its prompt with the configuration's provider and
/// every tool except the scheduling ones (a job does not schedule more jobs). There is nobody to
/// approve anything at run time, so each tool call the policy would ask about is refused and
/// the agent is told so; the answer (or the error) is the run's output.
pub struct ShellJobRunner {
    stack: Stack,
    config: Option<Arc<crate::config::Config>>,
    /// The canonical names of the tools a prompt job's agent gets, worked out on first use.
    prompt_tools: std::sync::OnceLock<Result<Vec<String>, String>>,
}

impl fmt::Debug for ShellJobRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ShellJobRunner")
    }
}

impl ShellJobRunner {
    /// A runner over a `shell` tool set up from `config`; prompt jobs are refused.
    pub fn new(config: &tools_shell::Config) -> anyhow::Result<ShellJobRunner> {
        let mut registry = Registry::new();
        registry.register_all(
            tools_shell::tools(config)
                .into_iter()
                .filter(|t| t.spec().name == "shell"),
        )?;
        Ok(ShellJobRunner {
            // No approver: an `Ask` at run time is a refusal (see the type's documentation).
            stack: Stack::new(registry),
            config: None,
            prompt_tools: std::sync::OnceLock::new(),
        })
    }

    /// A runner for the whole configuration: commands as above, prompts through the agent.
    pub fn with_agent(config: &crate::config::Config) -> anyhow::Result<ShellJobRunner> {
        let mut runner = ShellJobRunner::new(&config.shell_config())?;
        runner.config = Some(Arc::new(config.clone()));
        Ok(runner)
    }

    /// Why prompts cannot run, if they cannot.
    fn agent_missing(&self) -> Option<String> {
        match &self.config {
            None => Some("no agent is configured for scheduled jobs".into()),
            Some(config) => crate::agent_setup::provider_config(config, None, None)
                .err()
                .map(|e| format!("{e:#}")),
        }
    }

    async fn run_prompt(&self, ctx: ToolContext, prompt: &str) -> Result<RunReport, ToolError> {
        let config = self.config.as_deref().ok_or_else(|| {
            ToolError::Failed("No agent is configured for scheduled jobs.".into())
        })?;
        let failed = |e: String| {
            ToolError::Failed(format!(
                "The prompt job cannot start its agent: {e}. Configure [agent] in toolshed.toml."
            ))
        };
        let provider_config = crate::agent_setup::provider_config(config, None, None)
            .map_err(|e| failed(format!("{e:#}")))?;
        let kind = provider_config.kind;
        let provider = toolshed_agent::provider::connect(provider_config)
            .map_err(|e| failed(e.to_string()))?;
        let all = crate::registry_with(config).map_err(|e| failed(format!("{e:#}")))?;
        let names: Vec<&str> = all
            .names()
            .into_iter()
            .filter(|n| !is_scheduling(all.canonical(n).unwrap_or(n)))
            .collect();
        let model = config
            .agent
            .model
            .clone()
            .unwrap_or_else(|| crate::agent_setup::default_model(kind).to_owned());
        let runtime = Arc::new(
            toolshed_agent::Runtime::new(provider, model, all.subset(names))
                .with_agents(crate::agent_setup::agents(config))
                .with_settings(crate::agent_setup::settings(config, true)),
        );
        let agent = runtime.agent("default").map_err(failed)?;
        let mut messages = vec![toolshed_agent::Message::user(prompt)];
        match runtime.run(&agent, &mut messages, &ctx, None).await {
            Ok(outcome) => Ok(RunReport {
                success: true,
                exit_code: None,
                output: outcome.answer,
            }),
            Err(toolshed_agent::AgentError::Cancelled) => Err(ToolError::Cancelled),
            Err(e) => Ok(RunReport {
                success: false,
                exit_code: None,
                output: e.to_string(),
            }),
        }
    }
}

/// Whether `canonical` is one of the scheduling tools, which a prompt job's agent does not get
/// (a job does not schedule more jobs).
fn is_scheduling(canonical: &str) -> bool {
    canonical.starts_with("cron_") || canonical == "schedule"
}

impl ShellJobRunner {
    /// The canonical names of the tools a prompt job's agent gets.
    fn prompt_tools(&self, config: &crate::config::Config) -> Result<&[String], ToolError> {
        let names = self.prompt_tools.get_or_init(|| {
            let all = crate::registry_with(config).map_err(|e| format!("{e:#}"))?;
            let mut names: Vec<String> = all
                .names()
                .into_iter()
                .map(|n| all.canonical(n).unwrap_or(n).to_owned())
                .filter(|n| !is_scheduling(n))
                .collect();
            names.sort();
            names.dedup();
            Ok(names)
        });
        names.as_deref().map_err(|e| {
            ToolError::Failed(format!(
                "The prompt job's tools cannot be set up: {e}. Fix the configuration and try again."
            ))
        })
    }
}

#[async_trait]
impl JobRunner for ShellJobRunner {
    fn accesses(&self, ctx: &ToolContext, action: &JobAction) -> Result<Vec<Access>, ToolError> {
        match action {
            // The command runs later as `shell`: `shell` rules judge it now, and only a caller
            // that may call `shell` may schedule it.
            JobAction::Command(command) => Ok(vec![Access::Deferred {
                tool: "shell".into(),
                accesses: self
                    .stack
                    .registry()
                    .prepare("shell", json!({ "command": command }), ctx)
                    .map_err(|e| match e {
                        ToolError::InvalidArgs { message, .. } => {
                            ToolError::invalid("command", message)
                        }
                        other => other,
                    })?
                    .accesses,
            }]),
            JobAction::Prompt(_) => match (self.agent_missing(), self.config.as_deref()) {
                // What the agent does is checked call by call at run time, with nobody to ask;
                // scheduling it needs every tool it will get (an agent kept from `shell` does
                // not schedule a prompt that runs with `shell`).
                (None, Some(config)) => {
                    let mut accesses = vec![Access::State {
                        store: "agent".into(),
                        write: true,
                    }];
                    accesses.extend(self.prompt_tools(config)?.iter().map(|t| Access::Deferred {
                        tool: t.clone(),
                        accesses: Vec::new(),
                    }));
                    Ok(accesses)
                }
                (why, _) => Err(ToolError::invalid(
                    "prompt",
                    format!(
                        "prompt jobs run the agent, which cannot start: {}; configure [agent], or schedule a `command` instead",
                        why.unwrap_or_else(|| "no agent is configured for scheduled jobs".into())
                    ),
                )),
            },
        }
    }

    async fn run(&self, ctx: ToolContext, action: &JobAction) -> Result<RunReport, ToolError> {
        let command = match action {
            JobAction::Command(command) => command,
            JobAction::Prompt(prompt) => return self.run_prompt(ctx, prompt).await,
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
