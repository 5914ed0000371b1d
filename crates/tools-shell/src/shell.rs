use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::process::{PidsStatus, ProcessSpec, SandboxStatus, run};
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};

use crate::Config;
use crate::jobs::Jobs;
use crate::plan::{Plan, judge, plan};

/// The default deadline of a foreground command.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
/// The longest deadline a command may ask for.
pub const MAX_TIMEOUT_SECS: u64 = 600;
/// What `Tool::timeout` adds to the command's own deadline, so that the command's timeout (which
/// keeps the output) fires before the stack's (which does not).
const MARGIN: Duration = Duration::from_secs(5);

/// Arguments of `shell`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellArgs {
    /// The command line, run by `bash -c` (`/bin/sh -c` where bash is not installed).
    pub command: String,
    /// The working directory, relative to the workspace root (default: the root).
    pub cwd: Option<String>,
    /// Seconds before the command and everything it started are killed: 1 to 600, default 60.
    /// For a background job there is no deadline unless one is given.
    #[schemars(range(min = 1, max = 600))]
    pub timeout_secs: Option<u64>,
    /// Run in the background and return a job id at once; read its output with job_output.
    #[serde(default)]
    pub background: bool,
}

/// The shell commands run in: bash, what models write and what the analyzer parses, where it
/// is installed; POSIX `sh` otherwise.
pub(crate) fn shell_program() -> &'static str {
    static SHELL: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    SHELL.get_or_init(|| {
        ["/bin/bash", "/usr/bin/bash"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .unwrap_or("/bin/sh")
    })
}

/// `shell`: a policy-checked, sandboxed, timed `bash -c`.
#[derive(Debug, Clone)]
pub struct Shell {
    config: Config,
    jobs: Arc<Jobs>,
}

impl Shell {
    /// The tool, sharing `jobs` with the job tools.
    pub fn new(config: Config, jobs: Arc<Jobs>) -> Shell {
        Shell { config, jobs }
    }

    fn spec(&self, plan: &Plan, args: &ShellArgs, max_output: usize) -> ProcessSpec {
        let mut spec = ProcessSpec::new(shell_program(), &plan.cwd)
            .arg("-c")
            .arg(&args.command);
        spec.env_allow = self.config.env_allow.clone();
        spec.env.extend(
            [
                // No pager, no editor, no password prompt: nothing may wait for a terminal, and
                // no entry point that opens an editor runs a program of the command's choosing.
                ("PAGER", "cat"),
                ("GIT_PAGER", "cat"),
                ("MANPAGER", "cat"),
                ("SYSTEMD_PAGER", "cat"),
                ("LESSSECURE", "1"),
                ("EDITOR", "false"),
                ("VISUAL", "false"),
                ("GIT_EDITOR", "false"),
                ("GIT_SEQUENCE_EDITOR", "false"),
                ("GIT_TERMINAL_PROMPT", "0"),
                // A directory that merely looks like a bare repository (planted by a model through
                // file writes) must not be used implicitly: its config could run programs.
                ("GIT_CONFIG_COUNT", "1"),
                ("GIT_CONFIG_KEY_0", "safe.bareRepository"),
                ("GIT_CONFIG_VALUE_0", "explicit"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        spec.timeout = Duration::from_secs(args.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS));
        spec.max_output_bytes = max_output;
        spec.max_output_total_bytes = self.config.max_output_total_bytes;
        spec.mark_descendants = true;
        spec.max_processes = self.config.max_processes;
        spec.pids_cgroup = self.config.pids_cgroup;
        spec.max_file_bytes = self.config.max_file_bytes;
        if self.config.sandbox {
            spec.sandbox = Some(plan.sandbox.clone());
        }
        spec
    }
}

/// `64 MiB`, `1 KiB`, or `1500 bytes`.
pub(crate) fn bytes_text(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

pub(crate) fn check_timeout(t: Option<u64>) -> Result<(), ToolError> {
    match t {
        Some(t) if !(1..=MAX_TIMEOUT_SECS).contains(&t) => Err(ToolError::invalid(
            "/timeout_secs",
            format!("timeout_secs is {t}; give a number of seconds from 1 to {MAX_TIMEOUT_SECS}"),
        )),
        _ => Ok(()),
    }
}

/// One line about the sandbox and the process limit, shown only when something is not enforced
/// (then it names what is, the process limit included).
pub(crate) fn sandbox_note(
    status: Option<&SandboxStatus>,
    configured: bool,
    pids: Option<&PidsStatus>,
) -> Option<String> {
    let sandbox = match status {
        None if !configured => Some(
            "sandbox: off (switched off in the configuration); the command ran unconfined".into(),
        ),
        None => Some("sandbox: not applied".to_string()),
        Some(s) if !s.fully_enforced() => Some(format!("sandbox: {}", s.summary())),
        Some(_) => None,
    };
    let pids_line = match pids {
        None => Some("pids: not limited (switched off in the configuration)".to_string()),
        Some(p) => Some(p.summary.clone()),
    };
    let pids_weak = pids.is_none_or(|p| !p.enforced);
    match (sandbox, pids_weak) {
        (None, false) => None,
        (Some(s), _) => Some(format!("{s}; {}", pids_line.unwrap_or_default())),
        (None, true) => pids_line,
    }
}

#[async_trait]
impl Tool for Shell {
    const NAME: &'static str = "shell";
    type Args = ShellArgs;

    fn description(&self) -> String {
        let flood = match self.config.max_output_total_bytes {
            Some(n) => format!(
                ", and one that prints more than {} in all is stopped there and returns its \
                 head and tail with `stopped after N bytes of output`",
                bytes_text(n)
            ),
            None => String::new(),
        };
        format!(
            "Run a shell command with bash -c in the workspace and return its exit code and \
         combined stdout and stderr (kept on failure; head and tail kept when longer than 64 KiB). \
         The command is parsed and every program in it is checked against the policy: commands \
         that cannot be fully analysed (eval, source, functions, computed program names) are \
         refused. It runs in a sandbox that sees the system directories read-only, the \
         workspace read-write except .git and toolshed.toml, a private /tmp and an empty $HOME; \
         network access only for recognised network commands the policy allows. \
         timeout_secs (default 60, at most 600) kills the command and everything it started; \
         a timed-out command returns the output so far with `killed after N s`{flood}. With \
         background=true, returns a job id at once: poll it with job_output, stop it with \
         job_kill, list jobs with job_list."
        )
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE.open_world(true)
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        check_timeout(args.timeout_secs)?;
        // The sandbox is made when the call starts (`plan`), from the workspace as it is then.
        Ok(judge(ctx, &self.config, &args.command, args.cwd.as_deref())?.accesses)
    }

    fn timeout(&self, args: &Self::Args) -> Option<Duration> {
        if args.background {
            // Starting a job takes no time; the job's own deadline is separate.
            return Some(Duration::from_secs(30));
        }
        Some(Duration::from_secs(args.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS)) + MARGIN)
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        check_timeout(args.timeout_secs)?;
        let plan = plan(ctx, &self.config, &args.command, args.cwd.as_deref())?;
        // Leave room for the status lines within the stack's output limit.
        let max_output = ctx.limits.max_output_bytes.saturating_sub(512).max(1024);
        let spec = self.spec(&plan, &args, max_output);
        let programs = plan.analysis.programs();
        let risk = plan.analysis.risk;

        if args.background {
            let deadline = args.timeout_secs.map(Duration::from_secs);
            let job = self
                .jobs
                .start(spec, &args.command, deadline, plan.guard.clone())?;
            let mut text = format!(
                "started background job {}; read its output with job_output {{\"job_id\": {}}}, stop it with job_kill",
                job.id, job.id
            );
            if let Some(note) =
                sandbox_note(job.sandbox.as_ref(), self.config.sandbox, job.pids.as_ref())
            {
                text.push('\n');
                text.push_str(&note);
            }
            return Ok(ToolOutput::text(text).with_structured(json!({
                "job_id": job.id,
                "background": true,
                "sandbox": job.sandbox,
                "pids": job.pids.as_ref().map(|p| &p.summary),
                "programs": programs,
                "risk": risk,
            })));
        }

        // While the command runs, and when it has ended, a protected path it created or
        // replaced is renamed aside (see `plan::Guard`).
        // A command that makes a protected path again after it was renamed aside is stopped
        // (through its own cancellation, which kills it and all it started).
        let mut run_ctx = ctx.clone();
        run_ctx.cancel = ctx.cancel.child_token();
        let running = run(spec, &run_ctx);
        tokio::pin!(running);
        let mut notes = Vec::new();
        let mut stopped = None;
        let out = loop {
            tokio::select! {
                out = &mut running => break out,
                () = tokio::time::sleep(crate::plan::GUARD_EVERY) => {
                    notes.extend(plan.guard.check());
                    if stopped.is_none()
                        && let Some(path) = plan.guard.remade()
                    {
                        stopped = Some(path);
                        run_ctx.cancel.cancel();
                    }
                }
            }
        };
        notes.extend(plan.guard.check_last());
        if let Some(path) = stopped {
            return Err(ToolError::Denied(format!(
                "The command was stopped: it made {} again after it was renamed aside as a protected path (Toolshed's configuration, git's own files or a path the rules keep). {} Do not retry it; leave protected paths alone.",
                path.display(),
                notes.join(" ")
            )));
        }
        let out = out?;
        let secs = args.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
        let mut text = if out.timed_out {
            format!("killed after {secs} s (timeout); output so far:\n")
        } else if out.output_capped {
            format!(
                "stopped after {} bytes of output, past the limit of {} bytes for one command; to get less, pipe it through `head -n 100`, `tail` or `grep`, or redirect it to a file and read that in pages; output so far:\n",
                out.total_bytes,
                self.config.max_output_total_bytes.unwrap_or_default()
            )
        } else {
            match (out.exit_code, out.signal) {
                (Some(code), _) => format!("exit code {code}\n"),
                (None, Some(sig)) => format!("killed by signal {sig}\n"),
                (None, None) => "exit status unknown\n".to_string(),
            }
        };
        if let Some(note) =
            sandbox_note(out.sandbox.as_ref(), self.config.sandbox, out.pids.as_ref())
        {
            text.push_str(&note);
            text.push('\n');
        }
        text.push_str(&out.output);
        for note in &notes {
            text.push('\n');
            text.push_str(note);
        }
        let mut result = ToolOutput::text(text).with_structured(json!({
            "exit_code": out.exit_code,
            "signal": out.signal,
            "timed_out": out.timed_out,
            "output_capped": out.output_capped,
            "duration_ms": out.duration.as_millis() as u64,
            "total_bytes": out.total_bytes,
            "sandbox": out.sandbox,
            "pids": out.pids.as_ref().map(|p| &p.summary),
            "escapees_killed": out.escapees_killed,
            "programs": programs,
            "risk": risk,
        }));
        result.truncated = out.truncated;
        Ok(result)
    }
}
