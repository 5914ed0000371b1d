//! The shell family: `shell` and its background jobs (`job_output`, `job_kill`, `job_list`).
//!
//! Every command is parsed with a real shell grammar ([`analyze`]) and classified program by
//! program before the policy decides; it then runs through tool-core's process helper in its own
//! process group, with a scrubbed environment, closed stdin, bounded output (a command that
//! prints more than [`Config::max_output_total_bytes`] is stopped there), a cap on the number
//! of processes ([`Config::max_processes`]: a per-run pids cgroup, else RLIMIT_NPROC, and the
//! output says which), and, on Linux, under Landlock (writes only in the workspace and a private
//! temporary directory) and a seccomp filter (no network sockets unless the command is a
//! recognised network command the policy allowed).
//!
//! # Example
//!
//! The analysis the policy decides from, without running anything:
//!
//! ```
//! use tools_shell::analyze::analyze;
//!
//! let a = analyze("cat README.md | grep -c shell > count.txt && curl -s https://example.org").unwrap();
//! assert_eq!(a.programs(), ["cat", "grep", "curl"]);
//! assert!(a.network); // curl talks to the network
//! assert_eq!(a.targets[0].path, "count.txt"); // the redirection writes a file
//! ```

pub mod analyze;
mod job_kill;
mod job_list;
mod job_output;
mod jobs;
mod plan;
mod shell;

use std::sync::Arc;

use tool_core::{Alias, DynTool, typed};

pub use job_kill::{JobKill, JobKillArgs};
pub use job_list::{JobList, JobListArgs};
pub use job_output::{JobOutput, JobOutputArgs};
pub use jobs::Jobs;
pub use shell::{DEFAULT_TIMEOUT_SECS, MAX_TIMEOUT_SECS, Shell, ShellArgs};

/// Settings of the shell tools.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Environment variables passed through to commands (everything else is removed).
    pub env_allow: Vec<String>,
    /// Background jobs that may run at once.
    pub max_jobs: usize,
    /// Bytes of output kept per background job (the oldest are dropped first).
    pub job_buffer_bytes: usize,
    /// The longest command line accepted.
    pub max_command_bytes: usize,
    /// Run commands under the OS sandbox (the namespace view, Landlock, seccomp) where the
    /// kernel has it.
    pub sandbox: bool,
    /// Within the sandbox, run in the namespace view (a filesystem built from an allow list,
    /// PID namespace, no terminal) where the kernel allows unprivileged user namespaces.
    pub namespaces: bool,
    /// When the sandbox is off or the kernel lacks it, whether low-risk commands still run
    /// without asking. By default they count as medium risk then, so supervised mode asks.
    pub allow_unsandboxed: bool,
    /// The most tasks (processes and threads) one command or job may have at once, so a fork
    /// bomb stops there; `None` sets no limit. Enforced by a per-run pids cgroup where one is
    /// writable, else RLIMIT_NPROC (not for root); the result says which.
    pub max_processes: Option<u32>,
    /// Use a pids cgroup for `max_processes` when one is writable (else RLIMIT_NPROC only).
    pub pids_cgroup: bool,
    /// The largest file one command may write (`RLIMIT_FSIZE`); `None` sets no limit.
    pub max_file_bytes: Option<u64>,
    /// The most output (stdout and stderr together, every byte read) one command or background
    /// job may print before it is stopped: its process group is killed, and the result is the
    /// head and tail kept so far with a note saying so, not an error. `yes` or `cat /dev/zero`
    /// then ends within a moment instead of at its timeout. `None` sets no limit. Default
    /// [`DEFAULT_MAX_OUTPUT_TOTAL_BYTES`].
    pub max_output_total_bytes: Option<u64>,
}

/// The default of [`Config::max_output_total_bytes`]: 64 MiB, a thousand times what a result
/// shows (64 KiB) and far more than any build log, so only a runaway command reaches it.
pub const DEFAULT_MAX_OUTPUT_TOTAL_BYTES: u64 = 64 << 20;

/// The default of [`Config::max_file_bytes`]: 4 GiB, room for any build artefact.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 4 << 30;

/// The default of [`Config::max_processes`]: threads count too, so a parallel build needs room.
pub const DEFAULT_MAX_PROCESSES: u32 = 512;

impl Default for Config {
    fn default() -> Self {
        Config {
            env_allow: tool_core::process::DEFAULT_ENV_ALLOW
                .iter()
                .map(|s| s.to_string())
                .collect(),
            max_jobs: 8,
            job_buffer_bytes: 1024 * 1024,
            max_command_bytes: 16 * 1024,
            sandbox: true,
            namespaces: true,
            allow_unsandboxed: false,
            max_processes: Some(DEFAULT_MAX_PROCESSES),
            pids_cgroup: true,
            max_file_bytes: Some(DEFAULT_MAX_FILE_BYTES),
            max_output_total_bytes: Some(DEFAULT_MAX_OUTPUT_TOTAL_BYTES),
        }
    }
}

impl Config {
    /// The defaults with the OS sandbox switched on or off.
    pub fn with_sandbox(mut self, on: bool) -> Config {
        self.sandbox = on;
        self
    }

    /// The defaults with the namespace view on or off (Landlock and seccomp stay).
    pub fn with_namespaces(mut self, on: bool) -> Config {
        self.namespaces = on;
        self
    }

    /// The defaults with at most `n` tasks per command (`None`: no limit).
    pub fn with_max_processes(mut self, n: Option<u32>) -> Config {
        self.max_processes = n;
        self
    }

    /// The defaults with pids cgroups allowed or not (RLIMIT_NPROC only).
    pub fn with_pids_cgroup(mut self, on: bool) -> Config {
        self.pids_cgroup = on;
        self
    }

    /// The defaults with commands stopped after `n` bytes of output (`None`: no limit).
    pub fn with_max_output_total_bytes(mut self, n: Option<u64>) -> Config {
        self.max_output_total_bytes = n;
        self
    }

    /// The defaults with at most `n` background jobs.
    pub fn with_max_jobs(mut self, n: usize) -> Config {
        self.max_jobs = n;
        self
    }
}

/// Every tool of this crate, sharing one job registry (its jobs are killed when the last tool
/// is dropped).
pub fn tools(config: &Config) -> Vec<Arc<dyn DynTool>> {
    let jobs = Arc::new(
        Jobs::new(config.max_jobs, config.job_buffer_bytes)
            .with_max_output_total_bytes(config.max_output_total_bytes),
    );
    vec![
        typed(Shell::new(config.clone(), Arc::clone(&jobs))),
        typed(JobOutput::new(Arc::clone(&jobs))),
        typed(JobKill::new(Arc::clone(&jobs))),
        typed(JobList::new(jobs)),
    ]
}

/// Seed-compatible names of this crate's tools (see TOOLS.md, "Seed-compatible names").
pub const ALIASES: &[Alias] = &[
    Alias {
        profile: "sneakycode",
        name: "run_command",
        target: "shell",
        renames: &[("timeout", "timeout_secs")],
    },
    Alias {
        profile: "hrns",
        name: "run_command",
        target: "shell",
        renames: &[],
    },
    Alias {
        profile: "nullclaw",
        name: "shell",
        target: "shell",
        renames: &[],
    },
];
