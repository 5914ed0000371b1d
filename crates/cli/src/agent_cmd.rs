//! `toolshed run`, `toolshed chat` and `toolshed sessions`: the agent loop on the terminal.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Result, bail};
use clap::Args;
use tool_core::{ApproveAll, Approver, NoApprover};
use toolshed_agent::{AgentEvent, AgentSpec, Channels, Message, Runtime, SessionStore};
use toolshed_cli::agent_setup::{agents, default_model, provider_config, settings};
use toolshed_cli::config::{Config, Source};

use crate::{Session, TerminalApprover};

/// Flags shared by `run` and `chat`.
#[derive(Debug, Clone, Args)]
pub(crate) struct AgentArgs {
    /// openai (and compatible servers: Ollama, llama.cpp, vLLM, LM Studio, OpenRouter),
    /// anthropic or gemini. Default: `[agent] provider`, else openai.
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// The model. Default: `[agent] model`, else the provider's usual one.
    #[arg(long, value_name = "MODEL")]
    model: Option<String>,
    /// The provider's endpoint, e.g. http://127.0.0.1:11434/v1 for Ollama.
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// A named agent from `[agents.NAME]` (default: `default`).
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// Approve every action the policy would ask about.
    #[arg(long, short = 'y')]
    yes: bool,
    /// Continue a saved session (see `toolshed sessions`).
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// The most model calls (default: the agent's, 25).
    #[arg(long, value_name = "N")]
    max_iterations: Option<u32>,
    /// Ask for whole answers instead of streamed ones.
    #[arg(long)]
    no_stream: bool,
}

/// Everything a run needs, built once per command.
struct Prepared {
    runtime: Arc<Runtime>,
    agent: AgentSpec,
    store: SessionStore,
    session: Session,
    model: String,
}

async fn prepare(
    workspace: &Path,
    config_path: &Source,
    profile: Option<String>,
    args: &AgentArgs,
    interactive: bool,
) -> Result<Prepared> {
    let session = Session::open(workspace, config_path, profile, args.yes, false).await?;
    let config = &session.config;
    let provider_config =
        provider_config(config, args.provider.as_deref(), args.base_url.as_deref())?;
    let kind = provider_config.kind;
    let provider =
        toolshed_agent::provider::connect(provider_config).map_err(|e| anyhow::anyhow!("{e}"))?;
    let model = args
        .model
        .clone()
        .or(config.agent.model.clone())
        .unwrap_or_else(|| default_model(kind).to_owned());
    let approver: Arc<dyn Approver> = if args.yes {
        Arc::new(ApproveAll)
    } else if interactive && std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        Arc::new(TerminalApprover::default())
    } else {
        Arc::new(NoApprover)
    };
    let registry = session.stack.registry();
    let tools = registry.subset(registry.names());
    let runtime = Runtime::new(provider, model.clone(), tools)
        .with_approver(approver)
        .with_agents(agents(config))
        .with_settings(settings(config, args.no_stream))
        .with_channels(Channels {
            file: config.agent.message_file.clone(),
            webhook: config.agent.message_webhook.clone(),
        })
        .with_events(Arc::new(render));
    let runtime = Arc::new(runtime);
    let mut agent = runtime
        .agent(args.agent.as_deref().unwrap_or("default"))
        .map_err(|e| anyhow::anyhow!("--agent: {e}"))?;
    if let Some(n) = args.max_iterations.or(config.agent.max_iterations) {
        agent.max_iterations = n.max(1);
    }
    let store = SessionStore::open(&config.data_dir().join("sessions.db"))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Prepared {
        runtime,
        agent,
        store,
        session,
        model,
    })
}

/// Progress on stderr: streamed text, tool calls and short results, subagents, retries.
fn render(event: AgentEvent) {
    let mut err = std::io::stderr().lock();
    let indent = |depth: u32| "    ".repeat(depth as usize);
    let _ = match event {
        AgentEvent::Text { depth, delta } => {
            if depth == 0 {
                write!(err, "{}", toolshed_cli::visible(&delta, true))
            } else {
                Ok(())
            }
        }
        AgentEvent::TurnEnd { depth } => {
            if depth == 0 {
                writeln!(err)
            } else {
                Ok(())
            }
        }
        AgentEvent::ToolCall {
            depth,
            name,
            arguments,
        } => writeln!(
            err,
            "{}● {} {}",
            indent(depth),
            toolshed_cli::visible(&name, false),
            toolshed_cli::visible(&tool_core::truncate::cut_line(arguments.trim(), 160), false)
        ),
        AgentEvent::ToolResult {
            depth,
            name: _,
            is_error,
            content,
        } => {
            let lines: Vec<&str> = content.lines().collect();
            let shown = if is_error { 3 } else { 12 };
            let mark = if is_error { "✗" } else { "✓" };
            let mut text = String::new();
            for (i, line) in lines.iter().take(shown).enumerate() {
                let lead = if i == 0 {
                    format!("  {mark} ")
                } else {
                    "    ".into()
                };
                text.push_str(&format!(
                    "{}{lead}{}\n",
                    indent(depth),
                    toolshed_cli::visible(&tool_core::truncate::cut_line(line, 160), false)
                ));
            }
            if lines.is_empty() {
                text.push_str(&format!("{}  {mark} (no output)\n", indent(depth)));
            } else if lines.len() > shown {
                text.push_str(&format!(
                    "{}    … {} more lines\n",
                    indent(depth),
                    lines.len() - shown
                ));
            }
            write!(err, "{text}")
        }
        AgentEvent::Retrying {
            attempt,
            after,
            reason,
            ..
        } => writeln!(
            err,
            "(retrying in {:.1} s, attempt {attempt}: {})",
            after.as_secs_f64(),
            // The provider's words: shown escaped, as every error is (round 21).
            toolshed_cli::visible(&reason, false)
        ),
        AgentEvent::SubagentStarted { depth, label } => {
            writeln!(
                err,
                "{}↳ subagent `{}`",
                indent(depth.saturating_sub(1)),
                toolshed_cli::visible(&label, false)
            )
        }
        AgentEvent::Message { content, .. } => {
            writeln!(err, "[message] {}", toolshed_cli::visible(&content, true))
        }
        _ => Ok(()),
    };
}

/// Cancels `token` on Ctrl-C (the running tool and model call stop; the turn ends cleanly).
fn cancel_on_ctrl_c(token: tool_core::CancellationToken) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\n(cancelling…)");
            token.cancel();
        }
    })
}

/// Loads the session to resume, or starts one; returns its id and messages.
fn open_session(p: &Prepared, resume: Option<&str>, title: &str) -> Result<(String, Vec<Message>)> {
    match resume {
        Some(id) => {
            let (_, messages) = p
                .store
                .load(id)
                .map_err(|e| anyhow::anyhow!("--resume: {e}"))?;
            Ok((id.to_owned(), messages))
        }
        None => {
            let id = p
                .store
                .create(&p.agent.name, &p.model, title)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            Ok((id, Vec::new()))
        }
    }
}

/// One turn of the user: appends `text`, runs, prints the answer. Returns the exit code.
async fn turn(p: &Prepared, id: &str, messages: &mut Vec<Message>, text: &str) -> ExitCode {
    let ctx = p.session.ctx.for_call();
    let watcher = cancel_on_ctrl_c(ctx.cancel.clone());
    let store = &p.store;
    let persist = |m: &Message| store.append(id, m);
    let user = Message::user(text);
    if let Err(e) = persist(&user) {
        eprintln!("error: {}", toolshed_cli::visible(&e.to_string(), true));
        return ExitCode::from(1);
    }
    messages.push(user);
    let result = p
        .runtime
        .run(&p.agent, messages, &ctx, Some(&persist))
        .await;
    watcher.abort();
    match result {
        Ok(outcome) => {
            // The answer is the model's bytes: shown visibly escaped like everything else the
            // agent prints (round 12: an OSC 52 sequence in a final answer wrote the terminal's
            // clipboard), whether stdout is a terminal or a file a human reads later.
            println!("{}", toolshed_cli::visible(outcome.answer.trim_end(), true));
            eprintln!(
                "({} model call(s), {} in / {} out tokens; session {id}, resume with --resume {id})",
                outcome.iterations, outcome.usage.input_tokens, outcome.usage.output_tokens
            );
            ExitCode::SUCCESS
        }
        Err(toolshed_agent::AgentError::Cancelled) => {
            eprintln!("cancelled (session {id}, resume with --resume {id})");
            ExitCode::from(130)
        }
        Err(e) => {
            eprintln!("error: {}", toolshed_cli::visible(&e.to_string(), true));
            ExitCode::from(1)
        }
    }
}

/// `toolshed run TASK`.
pub(crate) async fn run(
    workspace: &Path,
    config: &Source,
    profile: Option<String>,
    task: String,
    args: AgentArgs,
) -> Result<ExitCode> {
    if task.trim().is_empty() {
        bail!("give the task to do, e.g. toolshed run \"add a test for parse_args\"");
    }
    let p = prepare(workspace, config, profile, &args, true).await?;
    let (id, mut messages) = open_session(&p, args.resume.as_deref(), &task)?;
    Ok(turn(&p, &id, &mut messages, &task).await)
}

/// `toolshed chat`.
pub(crate) async fn chat(
    workspace: &Path,
    config: &Source,
    profile: Option<String>,
    args: AgentArgs,
) -> Result<ExitCode> {
    let p = prepare(workspace, config, profile, &args, true).await?;
    let mut session: Option<(String, Vec<Message>)> = match &args.resume {
        Some(id) => Some(open_session(&p, Some(id), "")?),
        None => None,
    };
    eprintln!(
        "toolshed chat — {} with {} tools; /exit or Ctrl-D ends, Ctrl-C stops a turn.",
        p.model,
        p.runtime_tools()
    );
    let mut last = ExitCode::SUCCESS;
    loop {
        eprint!("> ");
        let _ = std::io::stderr().flush();
        let line = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map(|n| (n, line))
        })
        .await;
        let line = match line {
            Ok(Ok((0, _))) | Err(_) | Ok(Err(_)) => break,
            Ok(Ok((_, line))) => line,
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if text == "/exit" || text == "/quit" {
            break;
        }
        let (id, messages) = match &mut session {
            Some(s) => (s.0.clone(), &mut s.1),
            None => {
                session = Some(open_session(&p, None, text)?);
                let s = session.as_mut().map(|s| (s.0.clone(), &mut s.1));
                match s {
                    Some(s) => s,
                    None => break,
                }
            }
        };
        last = turn(&p, &id, messages, text).await;
    }
    eprintln!();
    Ok(last)
}

impl Prepared {
    fn runtime_tools(&self) -> usize {
        self.session.stack.registry().len()
    }
}

/// `toolshed sessions`.
pub(crate) fn sessions(config: &Config) -> Result<ExitCode> {
    let store = SessionStore::open(&config.data_dir().join("sessions.db"))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let list = store.list().map_err(|e| anyhow::anyhow!("{e}"))?;
    if list.is_empty() {
        println!("No sessions yet; `toolshed run \"TASK\"` starts one.");
    }
    for s in list {
        println!(
            "{:6} {:10} {:24} {:4} msgs  {}",
            s.id,
            s.agent,
            toolshed_cli::visible(&s.model, false),
            s.messages,
            toolshed_cli::visible(&s.title, false)
        );
    }
    Ok(ExitCode::SUCCESS)
}
