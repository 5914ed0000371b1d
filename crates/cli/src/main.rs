//! `toolshed`: list, call and tour Toolshed's tools from the command line.

// This is a command-line program: printing is its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod agent_cmd;
mod doctor;
mod mcp_cmd;
mod tour;

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use async_trait::async_trait;
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use serde_json::{Value, json};
use tool_core::{
    Approval, ApprovalRequest, ApproveAll, Approver, Content, NoApprover, Provider, Registry,
    Stack, ToolContext, ToolError, ToolOutput, Workspace, schema,
};
use toolshed_cli::config::{Config, Source};

/// Tools for LLM agents: files, search, shell, git, web, memory, scheduling and hardware, behind
/// one policy.
#[derive(Debug, Parser)]
#[command(name = "toolshed", version, about, long_about = None)]
struct Cli {
    /// The workspace tools are confined to: a directory, `sqlite:FILE` for a virtual
    /// filesystem stored in a SQLite database (created if missing), or `postgres:VOLUME` for a
    /// virtual filesystem in the `[storage]` PostgreSQL database (configuration from the
    /// current directory).
    #[arg(
        long,
        global = true,
        value_name = "DIR|sqlite:FILE|postgres:VOLUME",
        default_value = "."
    )]
    workspace: PathBuf,
    /// Your configuration file (default: $XDG_CONFIG_HOME/toolshed/config.toml). The
    /// workspace's own toolshed.toml applies over it only where it narrows the policy.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Apply every key of the workspace's own toolshed.toml, not only those that narrow the
    /// policy (see `trusted_workspaces` in the README's "Trust").
    #[arg(long, global = true)]
    trust_workspace_config: bool,
    /// Expose tools under a seed system's names: nullclaw, sneakycode, pig or hrns.
    #[arg(long, global = true, value_name = "P")]
    profile: Option<String>,
    /// More log output on stderr (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the tools, or export their schemas for an LLM provider.
    Tools {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Run one tool call through the full stack (validation, policy, limits).
    ///
    /// Exit status: 0 on success, 1 when the tool returns an error (denied, invalid arguments,
    /// not found, timeout…), 2 for usage errors.
    Call {
        /// The tool's name (see `toolshed tools`).
        tool: String,
        /// The arguments as a JSON object, or `-` to read them from standard input.
        #[arg(value_name = "ARGS_JSON")]
        args: Option<String>,
        /// Approve every action the policy would ask about.
        #[arg(long, short = 'y')]
        yes: bool,
        /// Print one JSON object instead of the content.
        #[arg(long)]
        json: bool,
    },
    /// Serve the tools over the Model Context Protocol: stdio by default, or streamable HTTP.
    ///
    /// The workspace, policy and limits come from the same configuration as every other
    /// command. When the policy asks, the client is asked through MCP elicitation if it
    /// supports it; otherwise the call is refused with `needs_approval`.
    Mcp(mcp_cmd::McpArgs),
    /// Run one task with the agent loop: progress on stderr, the final answer on stdout.
    ///
    /// Exit status: 0 when the agent answered, 1 when the model could not be reached or the
    /// run failed, 2 for usage and configuration errors, 130 when cancelled (Ctrl-C).
    Run {
        /// The task, in plain words.
        task: String,
        #[command(flatten)]
        args: agent_cmd::AgentArgs,
    },
    /// Talk with the agent: one turn per line, tool calls shown as they run.
    Chat(agent_cmd::AgentArgs),
    /// List saved agent sessions (resume one with `run --resume ID` or `chat --resume ID`).
    Sessions,
    /// A guided five-minute tour in a temporary workspace: list, call, and see a refusal.
    Tour,
    /// Which layers of the shell's sandbox hold on this machine (namespaces, Landlock,
    /// seccomp, process and file limits), and why a missing one is missing.
    ///
    /// Exit status: 0 when every layer holds, 1 when one does not (then supervised mode asks
    /// before every command).
    Doctor,
    /// Apply this workspace's toolshed.toml in full, as it is now: records its digest as the
    /// reviewed file. The workspace must be in `trusted_workspaces`; a later change (by a
    /// command, a checkout or you) makes it narrow-only again until you run this again.
    Trust,
    /// Scheduled jobs: `toolshed cron daemon` runs the jobs of this workspace as they fall due.
    #[command(subcommand)]
    Cron(CronCommand),
    /// Print the man page (roff), for packagers: `toolshed man > toolshed.1`.
    #[command(hide = true)]
    Man,
    /// Print shell completions.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
enum CronCommand {
    /// Run the workspace's due jobs until stopped (Ctrl-C or SIGTERM).
    ///
    /// Each occurrence is leased in the database before it starts, so a restart neither
    /// repeats nor loses a run and several daemons on one database never run the same
    /// occurrence twice. Occurrences missed while no daemon ran collapse into one catch-up
    /// run. Commands run through the shell tool under this workspace's policy.
    Daemon {
        /// The longest wait between two looks at the database, in seconds (jobs added by
        /// other processes are seen within this time).
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=300))]
        poll_secs: u64,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Json,
    /// The canonical tool names of each crate, as JSON (for `cargo xtask docs`).
    #[value(hide = true)]
    Crates,
    Openai,
    Anthropic,
    Gemini,
    Mcp,
}

/// `println!` for the command's output: a closed pipe (`toolshed tools | head`) ends the
/// program quietly with success, as it does for any Unix filter, instead of a panic.
macro_rules! out {
    ($($arg:tt)*) => {
        emit(format_args!($($arg)*))
    };
}

fn emit(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_fmt(args)
        .and_then(|()| stdout.write_all(b"\n"));
    if let Err(e) = written {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write the output: {e}");
        std::process::exit(1);
    }
}

fn main() -> ExitCode {
    // Before any secret is read: no process of the same user (every command a tool starts)
    // may read this one's memory or /proc/PID/environ.
    tool_core::process::harden_self();
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            // A message may quote what a model or a workspace wrote (a provider's error, a key
            // of the workspace's toolshed.toml): shown escaped (round 13).
            eprintln!("error: {}", toolshed_cli::visible(&format!("{e:#}"), true));
            ExitCode::from(2)
        }
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

async fn run(cli: Cli) -> Result<ExitCode> {
    let source = Source {
        explicit: cli.config.clone(),
        trust_workspace: cli.trust_workspace_config,
    };
    match cli.command {
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "toolshed",
                &mut std::io::stdout(),
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => {
            clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Tools { format } => {
            let config = load_config(&source, &cli.workspace)?;
            if let Format::Crates = format {
                let crates: Vec<Value> = toolshed_cli::families(&config)?
                    .into_iter()
                    .map(|(name, tools)| {
                        let names: Vec<&str> =
                            tools.iter().map(|t| t.spec().name.as_str()).collect();
                        json!({"crate": name, "tools": names})
                    })
                    .collect();
                out!("{}", serde_json::to_string_pretty(&crates)?);
                return Ok(ExitCode::SUCCESS);
            }
            let profile = cli.profile.or(config.profile.clone());
            let mut registry = toolshed_cli::registry_for(&config, profile.as_deref())?;
            toolshed_cli::import_mcp_servers(&config, &mut registry).await?;
            print_tools(&registry, format)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Call {
            tool,
            args,
            yes,
            json,
        } => {
            let raw = match args.as_deref() {
                None => "{}".to_string(),
                Some("-") => {
                    let mut s = String::new();
                    std::io::stdin()
                        .read_to_string(&mut s)
                        .context("cannot read the arguments from standard input")?;
                    s
                }
                Some(s) => s.to_string(),
            };
            let interactive = args.as_deref() != Some("-") && std::io::stdin().is_terminal();
            let session =
                Session::open(&cli.workspace, &source, cli.profile, yes, interactive).await?;
            let result = session.call(&tool, &raw).await;
            Ok(report(result, json))
        }
        Command::Mcp(args) => mcp_cmd::run(&cli.workspace, &source, cli.profile, args).await,
        Command::Tour => tour::run().await,
        Command::Trust => {
            let (file, keys) = Config::trust(&source, &cli.workspace)?;
            if keys.is_empty() {
                out!("Trusted {} as it is now.", file.display());
            } else {
                out!(
                    "Trusted {} as it is now; these keys now apply: {}.",
                    file.display(),
                    keys.join(", ")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Doctor => {
            let loaded = Config::load(&source, &cli.workspace)?;
            let (text, full) = doctor::report(&cli.workspace, &loaded).await?;
            out!("{text}");
            Ok(if full {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Run { task, args } => {
            agent_cmd::run(&cli.workspace, &source, cli.profile, task, args).await
        }
        Command::Chat(args) => agent_cmd::chat(&cli.workspace, &source, cli.profile, args).await,
        Command::Sessions => {
            let config = load_config(&source, &cli.workspace)?;
            agent_cmd::sessions(&config)
        }
        Command::Cron(CronCommand::Daemon { poll_secs }) => {
            let session = Session::open(&cli.workspace, &source, cli.profile, false, false).await?;
            let cron = toolshed_cli::cron_config(&session.config)?;
            let daemon = tools_cron::Daemon::new(&cron, session.ctx.for_call());
            eprintln!(
                "toolshed cron daemon: running the jobs of {} from {} (Ctrl-C stops).",
                session
                    .ctx
                    .workspace
                    .roots()
                    .first()
                    .map(|r| r.path.display().to_string())
                    .unwrap_or_default(),
                match &cron.store {
                    Some(store) => format!("{store:?}"),
                    None => cron.database.display().to_string(),
                }
            );
            let cancel = tool_core::CancellationToken::new();
            let stop = cancel.clone();
            tokio::spawn(async move {
                shutdown_signal().await;
                stop.cancel();
            });
            daemon
                .run(cancel, std::time::Duration::from_secs(poll_secs))
                .await
                .map_err(|e| anyhow::anyhow!("{}", e.model_message()))?;
            eprintln!("toolshed cron daemon: stopped.");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Loads the configuration, warning once on stderr about keys of the workspace's own file that
/// were ignored.
fn load_config(source: &Source, workspace_dir: &Path) -> Result<Config> {
    let loaded = Config::load(source, workspace_dir)?;
    if let Some(warning) = loaded.warning() {
        eprintln!("{}", toolshed_cli::visible(&warning.to_string(), true));
    }
    Ok(loaded.config)
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// Everything one invocation needs: the stack and a context factory.
pub(crate) struct Session {
    pub(crate) stack: Stack,
    pub(crate) ctx: ToolContext,
    pub(crate) config: Config,
}

impl Session {
    pub(crate) async fn open(
        workspace: &Path,
        config: &Source,
        profile: Option<String>,
        yes: bool,
        interactive: bool,
    ) -> Result<Session> {
        let spec = workspace.to_str();
        let sqlite = spec
            .and_then(|w| w.strip_prefix("sqlite:"))
            .map(PathBuf::from);
        let volume = spec.and_then(|w| w.strip_prefix("postgres:"));
        // Configuration is looked up next to a SQLite file, in the current directory for a
        // PostgreSQL volume, or in the workspace directory.
        let config_dir = match (&sqlite, volume) {
            (Some(file), _) => file.parent().map(Path::to_path_buf).unwrap_or_default(),
            (None, Some(_)) => PathBuf::from("."),
            (None, None) => workspace.to_path_buf(),
        };
        let config = load_config(config, &config_dir)?;
        let profile = profile.or(config.profile.clone());
        let mut registry = toolshed_cli::registry_for(&config, profile.as_deref())?;
        toolshed_cli::import_mcp_servers(&config, &mut registry).await?;
        toolshed_cli::check_rule_names(&config)?;
        for warning in toolshed_cli::rule_warnings(&config, &registry) {
            eprintln!("{}", toolshed_cli::visible(&warning, true));
        }
        let policy = config.policy()?;
        let limits = config.limits();
        let ws = match (&sqlite, volume) {
            (Some(file), _) => tools_fs::sqlite_workspace(file).with_context(|| {
                format!(
                    "cannot open the SQLite workspace {}; pass a writable file path after `sqlite:`",
                    file.display()
                )
            })?,
            (None, Some(volume)) => postgres_workspace(&config, volume)?,
            (None, None) => Workspace::local_with_roots(workspace, config.extra_roots()).with_context(|| {
                format!(
                    "cannot open the workspace {}; pass an existing directory with --workspace",
                    workspace.display()
                )
            })?,
        };
        check_data_dir(&config.data_dir(), &ws)?;
        let approver: Arc<dyn Approver> = if yes {
            Arc::new(ApproveAll)
        } else if interactive && std::io::stderr().is_terminal() {
            Arc::new(TerminalApprover::default())
        } else {
            Arc::new(NoApprover)
        };
        let mut stack = Stack::new(registry).with_approver(approver);
        if let Some(rate) = limits.calls_per_minute {
            stack = stack.with_rate_limit(rate);
        }
        let ctx = ToolContext::new(ws, Arc::new(policy), Arc::new(limits));
        Ok(Session { stack, ctx, config })
    }

    pub(crate) async fn call(&self, tool: &str, raw_args: &str) -> Result<ToolOutput, ToolError> {
        self.stack
            .call_json(tool, raw_args, self.ctx.for_call())
            .await
    }
}

/// The `postgres:VOLUME` workspace in `[storage]`'s database.
#[cfg(feature = "postgres")]
fn postgres_workspace(config: &Config, volume: &str) -> Result<Workspace> {
    let Some(pool) = toolshed_cli::storage::pool(config)? else {
        anyhow::bail!(
            "--workspace postgres:{volume} needs a PostgreSQL database: set [storage] url (or url_env) in your configuration (--config FILE, or $XDG_CONFIG_HOME/toolshed/config.toml)"
        );
    };
    let pool_for_open = pool.clone();
    let volume_owned = volume.to_string();
    tool_core::pg::off_runtime(move || tools_fs::pg_workspace(pool_for_open, &volume_owned))
        .with_context(|| {
            format!(
                "cannot open the PostgreSQL workspace `{volume}` in {}",
                pool.target()
            )
        })
}

#[cfg(not(feature = "postgres"))]
fn postgres_workspace(_config: &Config, volume: &str) -> Result<Workspace> {
    anyhow::bail!(
        "--workspace postgres:{volume} needs PostgreSQL support, which this toolshed was built without; rebuild it with `--features postgres` (on by default)"
    )
}

/// Refuses a data directory that tools could write to: a model that can edit the job database
/// could schedule commands without the policy seeing them at add time.
// The data directory is the operator's configuration, resolved before any tool runs.
#[allow(clippy::disallowed_methods)]
fn check_data_dir(data_dir: &Path, ws: &Workspace) -> Result<()> {
    let mut abs = std::env::current_dir()
        .map(|cwd| cwd.join(data_dir))
        .unwrap_or_else(|_| data_dir.to_path_buf());
    // Resolve links in the part that exists; the rest is appended as written.
    let mut rest = Vec::new();
    let resolved = loop {
        if let Ok(c) = std::fs::canonicalize(&abs) {
            break c;
        }
        match (abs.file_name().map(|n| n.to_os_string()), abs.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                abs = parent.to_path_buf();
            }
            _ => break abs,
        }
    };
    let full = rest.iter().rev().fold(resolved, |p, n| p.join(n));
    for root in ws
        .roots()
        .iter()
        .filter(|r| r.writable && r.path != Path::new("/"))
    {
        if full.starts_with(&root.path) {
            anyhow::bail!(
                "the data directory {} is inside the writable root {}, where tools could rewrite the job and memory databases; set data_dir in toolshed.toml (or TOOLSHED_DATA_DIR) to a directory outside it",
                full.display(),
                root.path.display()
            );
        }
    }
    Ok(())
}

/// Prompts on the terminal: yes, no, or always (for this tool, until the program ends).
#[derive(Debug, Default)]
pub(crate) struct TerminalApprover {
    always: std::sync::Mutex<std::collections::HashSet<String>>,
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        if self.always.lock().is_ok_and(|a| a.contains(&request.tool)) {
            return Approval::Approved;
        }
        // Everything here may come from the model: shown escaped, one line per summary entry.
        let label = request.tool_label();
        let tool = toolshed_cli::visible(&label, false);
        let summary: Vec<String> = request
            .summary
            .iter()
            .map(|l| toolshed_cli::visible(l, false).into_owned())
            .collect();
        let prompt = format!(
            "`{tool}` needs approval: {}\n  {}\nApprove? [y]es / [N]o / [a]lways for `{tool}` this session: ",
            toolshed_cli::visible(&request.reason, false),
            summary.join("\n  "),
        );
        let answer = tokio::task::spawn_blocking(move || {
            let mut err = std::io::stderr();
            let _ = err.write_all(prompt.as_bytes());
            let _ = err.flush();
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map(|_| line)
        })
        .await;
        match answer {
            Ok(Ok(line)) => match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => Approval::Approved,
                "a" | "always" => {
                    if let Ok(mut a) = self.always.lock() {
                        a.insert(request.tool.clone());
                    }
                    Approval::Approved
                }
                _ => Approval::Refused(None),
            },
            _ => Approval::Unavailable,
        }
    }
}

fn report(result: Result<ToolOutput, ToolError>, json: bool) -> ExitCode {
    match (result, json) {
        (Ok(out), true) => {
            out!(
                "{}",
                json!({
                    "ok": true,
                    "content": out.content,
                    "structured": out.structured,
                    "truncated": out.truncated,
                })
            );
            ExitCode::SUCCESS
        }
        (Ok(out), false) => {
            // On a terminal the tool's text is shown with control characters and escape
            // sequences visibly escaped, as `ls` shows names: a file or a command's output must
            // not redraw the screen or write the clipboard (round 12). Piped, the bytes are the
            // output and stay as they are.
            let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
            let mut stdout = std::io::stdout().lock();
            for part in &out.content {
                let _ = match part {
                    Content::Text { text } if terminal => {
                        let text = toolshed_cli::visible(text, true);
                        if text.ends_with('\n') {
                            write!(stdout, "{text}")
                        } else {
                            writeln!(stdout, "{text}")
                        }
                    }
                    Content::Text { text } => {
                        if text.ends_with('\n') {
                            write!(stdout, "{text}")
                        } else {
                            writeln!(stdout, "{text}")
                        }
                    }
                    Content::Image { mime_type, data } => writeln!(
                        stdout,
                        "[image: {mime_type}, {} bytes of base64; use --json to get the data]",
                        data.len()
                    ),
                    _ => Ok(()),
                };
            }
            ExitCode::SUCCESS
        }
        (Err(e), true) => {
            out!(
                "{}",
                json!({"ok": false, "error": {"kind": e.kind().as_str(), "message": e.to_string()}})
            );
            ExitCode::from(1)
        }
        (Err(e), false) => {
            eprintln!(
                "error ({}): {}",
                e.kind(),
                toolshed_cli::visible(&e.to_string(), true)
            );
            ExitCode::from(1)
        }
    }
}

fn print_tools(registry: &Registry, format: Format) -> Result<()> {
    let specs = registry.specs();
    let provider = match format {
        Format::Table => {
            let width = specs.iter().map(|s| s.name.len()).max().unwrap_or(4);
            out!("{:width$}  {:6}  DESCRIPTION", "TOOL", "KIND");
            for s in &specs {
                let kind = if s.annotations.read_only {
                    "read"
                } else if s.annotations.destructive {
                    "write!"
                } else {
                    "write"
                };
                // A remote MCP server writes its own descriptions: shown escaped (round 14).
                out!(
                    "{:width$}  {kind:5}  {}",
                    s.name,
                    toolshed_cli::visible(first_sentence(&s.description), false)
                );
            }
            return Ok(());
        }
        Format::Json => {
            let out: Vec<Value> = specs
                .iter()
                .map(|s| serde_json::to_value(s).unwrap_or(Value::Null))
                .collect();
            out!("{}", serde_json::to_string_pretty(&out)?);
            return Ok(());
        }
        Format::Crates => anyhow::bail!("--format crates lists crates, not a registry"),
        Format::Openai => Provider::OpenAi,
        Format::Anthropic => Provider::Anthropic,
        Format::Gemini => Provider::Gemini,
        Format::Mcp => Provider::Mcp,
    };
    let out: Vec<Value> = specs.iter().map(|s| schema::export(s, provider)).collect();
    out!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(i) => &text[..=i],
        None => text,
    }
}
