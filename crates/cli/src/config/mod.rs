//! `toolshed.toml`: every key documented in the README; unknown keys are errors.

mod layers;

pub use layers::{Loaded, Source, narrowing_keys};

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use tool_core::{Decision, Limits, Policy};

/// The whole configuration file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The seed profile to expose when `--profile` is not given.
    pub profile: Option<String>,
    /// Where memory, key-value and cron databases live (default: `$TOOLSHED_DATA_DIR`, else
    /// `$XDG_DATA_HOME/toolshed`, else `~/.local/share/toolshed`).
    pub data_dir: Option<PathBuf>,
    /// Where memory, key-value, cron jobs, `postgres:` workspaces and MCP sessions live.
    #[serde(default)]
    pub storage: StorageConfig,
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
    /// The web tools.
    #[serde(default)]
    pub web: WebConfig,
    /// The hardware tools.
    #[serde(default)]
    pub hardware: HardwareConfig,
    /// The agent loop of `toolshed run` and `toolshed chat`.
    #[serde(default)]
    pub agent: AgentConfig,
    /// Named agents for `--agent` and `delegate`: `[agents.reviewer]`.
    #[serde(default)]
    pub agents: BTreeMap<String, NamedAgentConfig>,
    /// Other MCP servers whose tools are imported as `name__tool` (stdio transport).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Workspaces whose own `toolshed.toml` applies in full, not only where it narrows (read
    /// from the user's configuration only).
    #[serde(default)]
    pub trusted_workspaces: Vec<PathBuf>,
    /// The `ask` and `deny` rules of an untrusted workspace's `toolshed.toml`, which only narrow.
    #[serde(skip)]
    pub workspace_rules: Vec<(String, Decision)>,
}

/// `[mcp_servers.NAME]`: a server started as a child process and spoken to over stdio.
#[derive(Debug, Clone, Deserialize)]
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

/// `[storage]`: SQLite files in `data_dir` (the default), or one PostgreSQL database shared by
/// every Toolshed process that names it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    /// A `postgres://USER:PASSWORD@HOST:PORT/DATABASE` URL. Prefer `url_env` for a URL with a
    /// password.
    pub url: Option<String>,
    /// The environment variable holding the URL (such as `TOOLSHED_DATABASE_URL`).
    pub url_env: Option<String>,
    /// The schema of Toolshed's tables (`toolshed`); one database can hold several deployments.
    pub schema: Option<String>,
    /// Connections per process (8).
    pub pool_size: Option<u32>,
    /// The longest one statement may run, in seconds (60).
    pub statement_timeout_secs: Option<u64>,
}

impl StorageConfig {
    /// The PostgreSQL URL, if one is configured (`url`, else the variable `url_env` names).
    pub fn postgres_url(&self) -> Result<Option<String>> {
        match (&self.url, &self.url_env) {
            (Some(_), Some(_)) => {
                bail!("storage.url and storage.url_env are alternatives; set one of them")
            }
            (Some(url), None) => Ok(Some(url.clone())),
            (None, Some(var)) => match std::env::var(var) {
                Ok(url) if !url.trim().is_empty() => Ok(Some(url)),
                _ => bail!(
                    "storage.url_env names {var}, which is not set; export {var}=postgres://USER:PASSWORD@HOST:PORT/DATABASE or remove url_env to use SQLite"
                ),
            },
            (None, None) => Ok(None),
        }
    }
}

/// `[cron]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CronConfig {
    /// The shortest gap allowed between two runs of a recurring job, in seconds (60).
    pub min_interval_secs: Option<u64>,
    /// The most jobs one workspace may hold (100).
    pub max_jobs: Option<usize>,
}

/// `[memory]`.
#[derive(Debug, Clone, Default, Deserialize)]
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

/// `[web]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebConfig {
    /// The largest body http_request keeps, in bytes after decompression (1 MiB).
    pub max_response_bytes: Option<usize>,
    /// The largest page web_fetch and browser download, in bytes (5 MiB).
    pub max_page_bytes: Option<usize>,
    /// How long web_fetch and browser wait for a page, in seconds (30).
    pub page_timeout_secs: Option<u64>,
    /// The most redirects followed per request (5).
    pub max_redirects: Option<u8>,
    /// Convert pages through Jina Reader when its key variable is set (false).
    pub jina_reader: Option<bool>,
    /// Jina Reader's endpoint (`https://r.jina.ai`).
    pub jina_reader_url: Option<String>,
    /// The variable holding the Jina key (`JINA_API_KEY`).
    pub jina_api_key_env: Option<String>,
    /// The program and leading arguments browser_open runs with the URL last
    /// (`["setsid", "-f", "xdg-open"]`).
    pub browser_command: Option<Vec<String>>,
    /// Extra trusted root certificates (PEM files), e.g. a company CA.
    #[serde(default)]
    pub root_certificates: Vec<PathBuf>,
    /// Loopback addresses the web tools may reach despite the address checks, for tests
    /// against local servers. Only 127.0.0.0/8 and ::1 are accepted.
    #[serde(default)]
    pub allow_loopback_for_tests: Vec<std::net::IpAddr>,
    /// web_search's providers, tried in order (default: every provider whose key is set, then
    /// SearXNG when it has an address, then DuckDuckGo).
    pub search_providers: Option<Vec<tools_web::Provider>>,
    /// A provider's endpoint, such as `searxng = "https://searx.example.org"`.
    #[serde(default)]
    pub search_urls: BTreeMap<tools_web::Provider, String>,
    /// The variable holding a provider's key, such as `brave = "MY_BRAVE_KEY"`.
    #[serde(default)]
    pub search_key_envs: BTreeMap<tools_web::Provider, String>,
    /// The variables holding Pushover's application token and user key
    /// (`PUSHOVER_TOKEN`, `PUSHOVER_USER_KEY`).
    pub pushover_token_env: Option<String>,
    /// See `pushover_token_env`.
    pub pushover_user_env: Option<String>,
    /// The variable holding the Composio key (`COMPOSIO_API_KEY`).
    pub composio_api_key_env: Option<String>,
    /// The Composio user whose connected accounts run tools (`default`).
    pub composio_user_id: Option<String>,
}

/// `[hardware]`. Every device, bus and window file must also be on `policy.allowed_devices`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareConfig {
    /// Where device nodes are listed from (`/dev`).
    pub dev_dir: Option<PathBuf>,
    /// Globs of serial ports `serial list` and hardware_info show
    /// (`["/dev/ttyUSB*", "/dev/ttyACM*"]`).
    pub serial_ports: Option<Vec<String>>,
    /// The probe-rs chip name for hardware_memory without a board (`STM32F401RETx`).
    pub probe_chip: Option<String>,
    /// The probe-rs program (`probe-rs` on PATH).
    pub probe_rs: Option<PathBuf>,
    /// How long a probe-rs call may take, in seconds (30).
    pub probe_timeout_secs: Option<u64>,
    /// Screenshots returned as images are scaled down to this width (1280).
    pub screenshot_max_width: Option<u32>,
    /// Address windows hardware_memory may read, mapped onto a device or file.
    #[serde(default)]
    pub read_windows: Vec<WindowConfig>,
    /// Address windows hardware_memory may write (and read).
    #[serde(default)]
    pub write_windows: Vec<WindowConfig>,
}

/// `[[hardware.read_windows]]` / `[[hardware.write_windows]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowConfig {
    /// A name for messages.
    pub name: String,
    /// The device or file behind the window.
    pub path: PathBuf,
    /// The first address of the window.
    pub base: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Where in the file the window starts (0).
    pub offset: Option<u64>,
}

/// `[agent]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// `openai` (and compatible servers), `anthropic` or `gemini` (openai).
    pub provider: Option<String>,
    /// The model (default per provider: gpt-4.1-mini, claude-sonnet-4-5, gemini-2.5-flash).
    pub model: Option<String>,
    /// The provider's endpoint, e.g. `http://127.0.0.1:11434/v1` for Ollama.
    pub base_url: Option<String>,
    /// The variable holding the API key (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY).
    pub api_key_env: Option<String>,
    /// The most model calls of one run (25).
    pub max_iterations: Option<u32>,
    /// The most tokens of one answer (4096).
    pub max_tokens: Option<u32>,
    /// Sampling temperature (the provider's default).
    pub temperature: Option<f32>,
    /// Stream answers as they are written (true).
    pub stream: Option<bool>,
    /// The deadline of one model request, in seconds (120).
    pub timeout_secs: Option<u64>,
    /// Retries of a failed model request (3).
    pub max_retries: Option<u32>,
    /// The `message` tool's file channel: one JSON line per message.
    pub message_file: Option<PathBuf>,
    /// The `message` tool's webhook channel: `{"content": …}` is POSTed there.
    pub message_webhook: Option<String>,
}

/// `[agents.NAME]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedAgentConfig {
    /// The system prompt (the default agent's otherwise).
    pub system_prompt: Option<String>,
    /// Which tools it may call: `{ "*" = true, "file_write" = false }` (every tool).
    pub tools: Option<BTreeMap<String, bool>>,
    /// A model other than `[agent] model`.
    pub model: Option<String>,
    /// The most model calls of one of its runs (25).
    pub max_iterations: Option<u32>,
}

/// Reads and parses a configuration file; a missing one is `None` unless `required`.
// Configuration is the operator's, read before any tool runs; it is not a tool's file access.
#[allow(clippy::disallowed_methods)]
fn read_table(path: &Path, required: bool) -> Result<Option<toml::Table>> {
    match std::fs::read_to_string(path) {
        Ok(text) => layers::parse(path, &text).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// The lowest `shell.max_processes` accepted: below it, a per-run pids cgroup cannot even be
/// joined, and containment would fall back to nothing.
pub const MIN_PROCESSES: u32 = 16;

/// `[shell]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellConfig {
    /// Environment variables passed through to commands (default: PATH, HOME, USER, LANG…).
    pub env_allow: Option<Vec<String>>,
    /// Background jobs that may run at once (8).
    pub max_jobs: Option<usize>,
    /// Run commands under the sandbox (namespace view, Landlock, seccomp) where the kernel has
    /// it (true).
    pub sandbox: Option<bool>,
    /// Within the sandbox, the namespace view (true).
    pub namespaces: Option<bool>,
    /// Without the sandbox, let low-risk commands run without asking (false).
    pub allow_unsandboxed: Option<bool>,
    /// The most processes and threads one command may have at once (512); contains fork bombs.
    pub max_processes: Option<u32>,
    /// The largest file one command may write, in bytes (4 GiB; RLIMIT_FSIZE).
    pub max_file_bytes: Option<u64>,
    /// The most output (stdout and stderr together) one command or job may print before it is
    /// stopped, in bytes (64 MiB); 0 for no limit.
    pub max_output_total_bytes: Option<u64>,
}

/// `[policy]`.
#[derive(Debug, Clone, Deserialize)]
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
    /// Hosts network tools may reach without asking.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Hosts network tools never reach, whatever else allows them.
    #[serde(default)]
    pub denied_hosts: Vec<String>,
    /// Whether network tools may use plain http:// (false: https only).
    #[serde(default)]
    pub allow_http: bool,
    /// Device nodes hardware tools may open.
    #[serde(default)]
    pub allowed_devices: Vec<PathBuf>,
    /// Whether writes inside `.git/` are allowed.
    #[serde(default)]
    pub allow_git_internals: bool,
    /// Paths (relative to each writable root) no tool writes; the shell sees them read-only.
    #[serde(default)]
    pub protected_paths: Vec<String>,
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
            denied_hosts: Vec::new(),
            allow_http: false,
            allowed_devices: Vec::new(),
            allow_git_internals: false,
            protected_paths: Vec::new(),
            readable_roots: Vec::new(),
            writable_roots: Vec::new(),
        }
    }
}

/// `[limits]`.
#[derive(Debug, Clone, Default, Deserialize)]
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
    /// Loads the user's configuration (`source.explicit`, else
    /// `$XDG_CONFIG_HOME/toolshed/config.toml`, else the defaults), then the `toolshed.toml` in
    /// `workspace_dir` over it: in full when the workspace is trusted, else only the keys that
    /// narrow (see [`Loaded::ignored`]).
    // Configuration is the operator's, read before any tool runs; it is not a tool's file access.
    #[allow(clippy::disallowed_methods)]
    pub fn load(source: &Source, workspace_dir: &Path) -> Result<Loaded> {
        let (user_file, user) = Config::load_user(source)?;

        let ws_path = workspace_dir.join("toolshed.toml");
        let same_file = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        // One read: the bytes whose digest is checked are the bytes parsed (a file swapped in
        // between would otherwise apply under another file's review).
        let ws_bytes = match &user_file {
            Some(u) if same_file(u, &ws_path) => None,
            _ => match std::fs::read(&ws_path) {
                Ok(b) => Some(b),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot read {}", ws_path.display()));
                }
            },
        };
        let workspace = match &ws_bytes {
            Some(bytes) => {
                let text = std::str::from_utf8(bytes)
                    .map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", ws_path.display()))?;
                Some(layers::parse(&ws_path, text)?)
            }
            None => None,
        };

        let base = Config::deserialize(toml::Value::Table(user.clone()))?;
        // A listed workspace's file applies in full only as the user reviewed it (`toolshed
        // trust` records its digest): one a command wrote or a checkout replaced since is back
        // to narrowing only.
        let listed = workspace.is_some() && layers::is_trusted(&base, workspace_dir);
        let reviewed = listed
            && ws_bytes
                .as_deref()
                .is_some_and(|b| layers::pin_matches(&base.data_dir(), workspace_dir, b));
        let trusted = workspace.is_some() && (source.trust_workspace || reviewed);
        let unreviewed = listed && !reviewed && !source.trust_workspace;
        let workspace_file = workspace.is_some().then_some(ws_path);
        for t in &base.trusted_workspaces {
            if !t.is_absolute() {
                bail!(
                    "trusted_workspaces entry `{}` is relative, so it would trust whatever directory a command runs in; write the workspace's absolute path",
                    t.display()
                );
            }
        }
        let (config, ignored) =
            layers::merge(user, workspace, trusted).map_err(|e| anyhow::anyhow!("{e}"))?;
        if let Some(n) = config.shell.max_processes
            && n < MIN_PROCESSES
        {
            bail!(
                "shell.max_processes is {n}, but a command needs room for a few processes of its own (at least {MIN_PROCESSES}); below that the process limit cannot be applied at all"
            );
        }
        Ok(Loaded {
            config,
            user_file,
            workspace_file,
            workspace_trusted: trusted,
            unreviewed,
            ignored,
        })
    }

    /// The user's file (if any) and its table (empty without one).
    #[allow(clippy::disallowed_methods)]
    fn load_user(source: &Source) -> Result<(Option<PathBuf>, toml::Table)> {
        let (file, table) = match &source.explicit {
            Some(p) => (Some(p.clone()), read_table(p, true)?),
            None => match layers::default_user_file() {
                Some(p) => {
                    let t = read_table(&p, false)?;
                    (t.is_some().then_some(p), t)
                }
                None => (None, None),
            },
        };
        Ok((file, table.unwrap_or_default()))
    }

    /// `toolshed trust`: records the workspace's `toolshed.toml`, as it is now, as the file the
    /// user reviewed, so that it applies in full (the workspace must be in `trusted_workspaces`).
    /// Returns the file and the keys that now apply beyond narrowing.
    #[allow(clippy::disallowed_methods)]
    pub fn trust(source: &Source, workspace_dir: &Path) -> Result<(PathBuf, Vec<String>)> {
        let loaded = Config::load(source, workspace_dir)?;
        let Some(file) = loaded.workspace_file.clone() else {
            bail!(
                "{} has no toolshed.toml, so there is nothing to trust",
                workspace_dir.display()
            );
        };
        let dir = workspace_dir
            .canonicalize()
            .unwrap_or_else(|_| workspace_dir.to_path_buf());
        if !layers::is_trusted(&loaded.config, workspace_dir) {
            bail!(
                "{} is not in trusted_workspaces; add `trusted_workspaces = [{:?}]` to {} first, then run toolshed trust again",
                dir.display(),
                dir.display().to_string(),
                loaded
                    .user_file
                    .clone()
                    .or_else(layers::default_user_file)
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "your configuration".into())
            );
        }
        let bytes =
            std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
        let (_, user) = Config::load_user(source)?;
        let base = Config::deserialize(toml::Value::Table(user))?;
        layers::pin(&base.data_dir(), workspace_dir, &bytes)
            .context("cannot record the reviewed file in the data directory")?;
        Ok((file, loaded.ignored))
    }

    /// The scheduling settings in effect (for comparing limits), with a runner that is never
    /// used.
    fn cron_in_effect(&self) -> Option<tools_cron::Config> {
        let runner = crate::runner::ShellJobRunner::new(&tools_shell::Config::default()).ok()?;
        Some(self.cron_config(std::sync::Arc::new(runner)))
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
        for (spec, decision) in &self.workspace_rules {
            policy = policy
                .narrowing_rule(spec, *decision)
                .map_err(|e| anyhow::anyhow!("the workspace's policy.rules: {e}"))?;
        }
        policy.allowed_commands = p.allowed_commands.clone();
        policy.denied_commands = p.denied_commands.clone();
        policy.ask_for_high_risk = p.ask_for_high_risk;
        policy.allowed_hosts = p.allowed_hosts.clone();
        policy.denied_hosts = p.denied_hosts.clone();
        policy.allow_http = p.allow_http;
        policy.allowed_devices = p.allowed_devices.clone();
        policy.allow_git_internals = p.allow_git_internals;
        for path in &p.protected_paths {
            if path.contains(['*', '?', '[', ']', '{', '}']) {
                anyhow::bail!(
                    "policy.protected_paths entry `{path}` is a pattern, but protected paths are plain paths (relative to each writable root), which the shell's sandbox mounts read-only; list the path itself, or refuse writes by pattern with a rule such as `\"write({path})\" = \"deny\"` under [policy.rules]"
                );
            }
            if path.starts_with('/')
                || path.split('/').any(|c| c == "..")
                || path.trim_matches('/').is_empty()
            {
                anyhow::bail!(
                    "policy.protected_paths entry `{path}` must be a path inside the workspace, relative to its root (such as `secrets` or `config/prod.yaml`)"
                );
            }
        }
        policy.protected_paths = p.protected_paths.clone();
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
        if let Some(v) = s.namespaces {
            c.namespaces = v;
        }
        if let Some(v) = s.allow_unsandboxed {
            c.allow_unsandboxed = v;
        }
        if let Some(v) = s.max_processes {
            c.max_processes = Some(v);
        }
        if let Some(v) = s.max_file_bytes {
            c.max_file_bytes = Some(v);
        }
        if let Some(v) = s.max_output_total_bytes {
            c.max_output_total_bytes = (v > 0).then_some(v);
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

    /// The settings of the web tools.
    // Certificate files are the operator's configuration, read before any tool runs.
    #[allow(clippy::disallowed_methods)]
    pub fn web_config(&self) -> Result<tools_web::Config> {
        let w = &self.web;
        let mut net = tools_web::NetConfig::default();
        if let Some(n) = w.max_redirects {
            net = net.with_max_redirects(n);
        }
        for path in &w.root_certificates {
            let pem = std::fs::read(path).with_context(|| {
                format!("web.root_certificates: cannot read {}", path.display())
            })?;
            net = net.with_root_certificate_pem(pem);
        }
        if !w.allow_loopback_for_tests.is_empty() {
            net = net
                .allow_loopback_for_tests(&w.allow_loopback_for_tests)
                .map_err(|e| anyhow::anyhow!("web.allow_loopback_for_tests: {e}"))?;
        }
        let mut c = tools_web::Config::new().with_net(net);
        if let Some(n) = w.max_response_bytes {
            c = c.with_max_response_bytes(n);
        }
        if let Some(n) = w.max_page_bytes {
            c = c.with_max_page_bytes(n);
        }
        if let Some(s) = w.page_timeout_secs {
            c = c.with_page_timeout(Duration::from_secs(s.max(1)));
        }
        if w.jina_reader.unwrap_or(false) {
            let mut reader = tools_web::JinaReader::new();
            if let Some(u) = &w.jina_reader_url {
                reader = reader.with_base_url(u);
            }
            if let Some(k) = &w.jina_api_key_env {
                reader = reader.with_api_key_env(k);
            }
            c = c.with_jina_reader(reader);
        }
        let mut search = tools_web::SearchConfig::new();
        if let Some(chain) = &w.search_providers {
            if chain.is_empty() {
                bail!(
                    "web.search_providers is empty; name at least one provider, or leave the key out"
                );
            }
            search = search.with_chain(chain.clone());
        }
        for (provider, url) in &w.search_urls {
            search = search.with_base_url(*provider, url);
        }
        for (provider, var) in &w.search_key_envs {
            search = search.with_key_env(*provider, var);
        }
        c = c.with_search(search);
        let mut pushover = tools_web::PushoverConfig::new();
        if let Some(v) = &w.pushover_token_env {
            pushover = pushover.with_token_env(v);
        }
        if let Some(v) = &w.pushover_user_env {
            pushover = pushover.with_user_env(v);
        }
        c = c.with_pushover(pushover);
        let mut composio = tools_web::ComposioConfig::new();
        if let Some(v) = &w.composio_api_key_env {
            composio = composio.with_api_key_env(v);
        }
        if let Some(v) = &w.composio_user_id {
            composio = composio.with_user_id(v);
        }
        c = c.with_composio(composio);
        if let Some(cmd) = &w.browser_command {
            if cmd.is_empty() {
                bail!("web.browser_command is empty; name a program such as xdg-open");
            }
            c = c.with_browser_command(cmd.iter().map(Into::into).collect());
        }
        Ok(c)
    }

    /// The settings of the hardware tools.
    pub fn hardware_config(&self) -> tools_hw::Config {
        let h = &self.hardware;
        let mut c = tools_hw::Config::new();
        if let Some(d) = &h.dev_dir {
            c = c.with_dev_dir(d);
        }
        if let Some(globs) = &h.serial_ports {
            c = c.with_serial_ports(globs.iter().cloned());
        }
        if let Some(chip) = &h.probe_chip {
            c = c.with_probe_chip(chip);
        }
        if let Some(p) = &h.probe_rs {
            c = c.with_probe_rs(p.clone());
        }
        if let Some(s) = h.probe_timeout_secs {
            c = c.with_probe_timeout(Duration::from_secs(s.max(1)));
        }
        if let Some(w) = h.screenshot_max_width {
            c = c.with_screenshot_max_width(w);
        }
        let window = |w: &WindowConfig| {
            let mut window = tools_hw::MemoryWindow::new(&w.name, &w.path, w.base, w.size);
            if let Some(o) = w.offset {
                window = window.with_offset(o);
            }
            window
        };
        for w in &h.read_windows {
            c = c.with_read_window(window(w));
        }
        for w in &h.write_windows {
            c = c.with_write_window(window(w));
        }
        c
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
