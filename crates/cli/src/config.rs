//! `toolshed.toml`: every key documented in the README; unknown keys are errors.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use tool_core::{Decision, Limits, Policy};

/// The whole configuration file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The seed profile to expose when `--profile` is not given.
    pub profile: Option<String>,
    /// Where memory, key-value and cron databases live (default: `$TOOLSHED_DATA_DIR`, else
    /// `$XDG_DATA_HOME/toolshed`, else `~/.local/share/toolshed`).
    pub data_dir: Option<PathBuf>,
    /// The policy.
    #[serde(default)]
    pub policy: PolicyConfig,
    /// The limits.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// The shell tools.
    #[serde(default)]
    pub shell: ShellConfig,
    /// The scheduling tools and `toolshed cron daemon`.
    #[serde(default)]
    pub cron: CronConfig,
    /// The memory tools.
    #[serde(default)]
    pub memory: MemoryConfig,
    /// Other MCP servers whose tools are imported as `name__tool` (stdio transport).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
}

/// `[mcp_servers.NAME]`: a server started as a child process and spoken to over stdio.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables set for it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// `[cron]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CronConfig {
    /// The shortest gap allowed between two runs of a recurring job, in seconds (60).
    pub min_interval_secs: Option<u64>,
    /// The most jobs one workspace may hold (100).
    pub max_jobs: Option<usize>,
}

/// `[memory]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    /// An OpenAI-compatible embeddings API base (`http://127.0.0.1:11434/v1` for Ollama);
    /// set it and `embedding_model` for hybrid recall. Unset: keyword recall only.
    pub embedding_url: Option<String>,
    /// The embedding model (`nomic-embed-text`, `text-embedding-3-small`…).
    pub embedding_model: Option<String>,
    /// The environment variable holding the endpoint's bearer key, if it needs one.
    pub embedding_api_key_env: Option<String>,
    /// The dimension the model returns, when known.
    pub embedding_dimensions: Option<usize>,
    /// Half-life of a memory's recall weight in days; `core` memories never decay (no decay).
    pub decay_half_life_days: Option<f64>,
}

/// `[shell]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellConfig {
    /// Environment variables passed through to commands (default: PATH, HOME, USER, LANG…).
    pub env_allow: Option<Vec<String>>,
    /// Background jobs that may run at once (8).
    pub max_jobs: Option<usize>,
    /// Run commands under Landlock and seccomp where the kernel has them (true).
    pub sandbox: Option<bool>,
    /// Without the sandbox, let low-risk commands run without asking (false).
    pub allow_unsandboxed: Option<bool>,
    /// The most processes and threads one command may have at once (512); contains fork bombs.
    pub max_processes: Option<u32>,
}

/// `[policy]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// `read_only`, `supervised` (default) or `full`.
    #[serde(default = "default_autonomy")]
    pub autonomy: String,
    /// `"tool(pattern)" = "allow" | "ask" | "deny"`.
    #[serde(default)]
    pub rules: BTreeMap<String, Decision>,
    /// Programs that may always run.
    #[serde(default)]
    pub allowed_commands: Vec<String>,
    /// Programs that never run.
    #[serde(default)]
    pub denied_commands: Vec<String>,
    /// Whether supervised mode asks about high-risk commands instead of refusing them.
    #[serde(default)]
    pub ask_for_high_risk: bool,
    /// Hosts network tools may reach.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Device nodes hardware tools may open.
    #[serde(default)]
    pub allowed_devices: Vec<PathBuf>,
    /// Whether writes inside `.git/` are allowed.
    #[serde(default)]
    pub allow_git_internals: bool,
    /// Extra directories tools may read.
    #[serde(default)]
    pub readable_roots: Vec<PathBuf>,
    /// Extra directories tools may write.
    #[serde(default)]
    pub writable_roots: Vec<PathBuf>,
}

fn default_autonomy() -> String {
    "supervised".into()
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            autonomy: default_autonomy(),
            rules: BTreeMap::new(),
            allowed_commands: Vec::new(),
            denied_commands: Vec::new(),
            ask_for_high_risk: false,
            allowed_hosts: Vec::new(),
            allowed_devices: Vec::new(),
            allow_git_internals: false,
            readable_roots: Vec::new(),
            writable_roots: Vec::new(),
        }
    }
}

/// `[limits]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Default deadline of a call, in seconds (120).
    pub call_timeout_secs: Option<u64>,
    /// The longest deadline a tool may ask for, in seconds (600).
    pub max_timeout_secs: Option<u64>,
    /// Text output above this many bytes is cut head + tail (65536).
    pub max_output_bytes: Option<usize>,
    /// The largest file read whole for edits and patches (10 MiB).
    pub max_file_bytes: Option<u64>,
    /// The largest content a write accepts (10 MiB).
    pub max_write_bytes: Option<usize>,
    /// Calls per minute across all tools (unlimited).
    pub calls_per_minute: Option<NonZeroU32>,
}

impl Config {
    /// Loads `explicit`, else `toolshed.toml` in the workspace, else the user config file, else
    /// the defaults. Returns the file used, if any.
    // Configuration is the operator's, read before any tool runs; it is not a tool's file access.
    #[allow(clippy::disallowed_methods)]
    pub fn load(explicit: Option<&Path>, workspace: &Path) -> Result<(Config, Option<PathBuf>)> {
        let candidates: Vec<PathBuf> = match explicit {
            Some(p) => vec![p.to_path_buf()],
            None => {
                let mut c = vec![workspace.join("toolshed.toml")];
                if let Some(dir) = user_config_dir() {
                    c.push(dir.join("toolshed").join("config.toml"));
                }
                c
            }
        };
        for path in candidates {
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    let config: Config = toml::from_str(&text).map_err(|e| {
                        anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end())
                    })?;
                    return Ok((config, Some(path)));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && explicit.is_none() => {}
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot read {}", path.display()));
                }
            }
        }
        Ok((Config::default(), None))
    }

    /// Builds the policy this configuration describes.
    pub fn policy(&self) -> Result<Policy> {
        let p = &self.policy;
        let mut policy = match p.autonomy.as_str() {
            "read_only" => Policy::read_only(),
            "supervised" => Policy::supervised(),
            "full" => Policy::full(),
            other => bail!("policy.autonomy is `{other}`; use read_only, supervised or full"),
        };
        for (spec, decision) in &p.rules {
            policy = policy
                .rule(spec, *decision)
                .map_err(|e| anyhow::anyhow!("policy.rules: {e}"))?;
        }
        policy.allowed_commands = p.allowed_commands.clone();
        policy.denied_commands = p.denied_commands.clone();
        policy.ask_for_high_risk = p.ask_for_high_risk;
        policy.allowed_hosts = p.allowed_hosts.clone();
        policy.allowed_devices = p.allowed_devices.clone();
        policy.allow_git_internals = p.allow_git_internals;
        Ok(policy)
    }

    /// The settings of the shell tools.
    pub fn shell_config(&self) -> tools_shell::Config {
        let mut c = tools_shell::Config::default();
        let s = &self.shell;
        if let Some(v) = &s.env_allow {
            c.env_allow = v.clone();
        }
        if let Some(v) = s.max_jobs {
            c.max_jobs = v;
        }
        if let Some(v) = s.sandbox {
            c.sandbox = v;
        }
        if let Some(v) = s.allow_unsandboxed {
            c.allow_unsandboxed = v;
        }
        if let Some(v) = s.max_processes {
            c.max_processes = Some(v);
        }
        c
    }

    /// The data directory (see [`Config::data_dir`]).
    pub fn data_dir(&self) -> PathBuf {
        if let Some(d) = &self.data_dir {
            return d.clone();
        }
        let env = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        env("TOOLSHED_DATA_DIR")
            .or_else(|| env("XDG_DATA_HOME").map(|d| d.join("toolshed")))
            .or_else(|| env("HOME").map(|h| h.join(".local/share/toolshed")))
            .unwrap_or_else(|| PathBuf::from(".toolshed"))
    }

    /// The settings of the memory tools.
    pub fn memory_config(&self) -> Result<tools_memory::Config> {
        let m = &self.memory;
        let mut c = tools_memory::Config::new(self.data_dir().join("memory.db"));
        match (&m.embedding_url, &m.embedding_model) {
            (Some(url), Some(model)) => {
                let mut e = tools_memory::EmbeddingConfig::new(url, model);
                if let Some(k) = &m.embedding_api_key_env {
                    e = e.with_api_key_env(k);
                }
                if let Some(d) = m.embedding_dimensions {
                    e = e.with_dimensions(d);
                }
                c = c.with_embedding(e);
            }
            (None, None) => {}
            _ => bail!(
                "memory.embedding_url and memory.embedding_model go together; set both for hybrid recall, or neither for keyword recall"
            ),
        }
        if let Some(d) = m.decay_half_life_days {
            if !(d.is_finite() && d > 0.0) {
                bail!("memory.decay_half_life_days must be a positive number of days");
            }
            c = c.with_decay_half_life_days(d);
        }
        Ok(c)
    }

    /// The settings of the scheduling tools, running commands with `runner`.
    pub fn cron_config(
        &self,
        runner: std::sync::Arc<dyn tool_core::JobRunner>,
    ) -> tools_cron::Config {
        let mut c = tools_cron::Config::new(self.data_dir().join("cron.db"), runner);
        if let Some(s) = self.cron.min_interval_secs {
            c = c.with_min_interval(Duration::from_secs(s));
        }
        if let Some(n) = self.cron.max_jobs {
            c = c.with_max_jobs(n);
        }
        c
    }

    /// Extra roots as `(path, writable)`.
    pub fn extra_roots(&self) -> Vec<(PathBuf, bool)> {
        let p = &self.policy;
        p.readable_roots
            .iter()
            .map(|r| (r.clone(), false))
            .chain(p.writable_roots.iter().map(|r| (r.clone(), true)))
            .collect()
    }

    /// Builds the limits.
    pub fn limits(&self) -> Limits {
        let l = &self.limits;
        let mut limits = Limits::default();
        if let Some(s) = l.call_timeout_secs {
            limits.call_timeout = Duration::from_secs(s);
        }
        if let Some(s) = l.max_timeout_secs {
            limits.max_timeout = Duration::from_secs(s);
        }
        if let Some(b) = l.max_output_bytes {
            limits.max_output_bytes = b;
        }
        if let Some(b) = l.max_file_bytes {
            limits.max_file_bytes = b;
        }
        if let Some(b) = l.max_write_bytes {
            limits.max_write_bytes = b;
        }
        limits.calls_per_minute = l.calls_per_minute;
        limits
    }
}

fn user_config_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
}
