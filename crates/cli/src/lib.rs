//! The composition root of Toolshed: builds the registry from every tool family, the policy and
//! limits from configuration, and runs calls through the layer stack.
//!
//! The binary is `toolshed` (`toolshed --help`); this library is what it is built from, for
//! hosts that want the same registry and configuration.
//!
//! # Example
//!
//! ```
//! let registry = toolshed_cli::registry().unwrap();
//! let names = registry.names();
//! for tool in ["file_read", "grep", "shell", "git_operations", "memory_recall", "web_fetch"] {
//!     assert!(names.contains(&tool), "{tool} is missing");
//! }
//! ```
//!
//! # Features
//!
//! - `postgres` (on by default): `[storage] url = "postgres://…"` puts memory, key-value, cron
//!   jobs, `postgres:VOLUME` workspaces and MCP HTTP sessions in one PostgreSQL database.
//! - `screenshot` (off by default): includes tools-hw's `screenshot` tool (xcap), which needs
//!   the Debian packages `libxcb1-dev libwayland-dev libgbm-dev libpipewire-0.3-dev
//!   libclang-dev` to build.

pub mod agent_setup;
pub mod config;
mod runner;
pub mod storage;

use std::sync::Arc;

use anyhow::{Result, bail};
use tool_core::{Alias, PROFILES, Registry};

pub use runner::ShellJobRunner;

/// Every tool this build includes, under canonical names, with default settings.
pub fn registry() -> Result<Registry> {
    registry_with(&config::Config::default())
}

/// Every tool this build includes, under canonical names, set up from `config`.
pub fn registry_with(config: &config::Config) -> Result<Registry> {
    let mut registry = Registry::new();
    for (_, tools) in families(config)? {
        registry.register_all(tools)?;
    }
    Ok(registry)
}

/// Every tool this build includes, grouped by the crate that provides it (in registration
/// order), set up from `config`. `cargo xtask docs` writes each crate's README table from it.
pub fn families(config: &config::Config) -> Result<Vec<(&'static str, ToolList)>> {
    Ok(vec![
        ("tools-fs", tools_fs::tools(&tools_fs::Config::default())),
        ("tools-git", tools_git::tools(&tools_git::Config::default())),
        ("tools-shell", tools_shell::tools(&config.shell_config())),
        ("tools-memory", memory_tools(config)?),
        ("tools-cron", tools_cron::tools(&cron_config(config)?)),
        ("tools-web", tools_web::tools(&config.web_config()?)),
        ("tools-hw", tools_hw::tools(&config.hardware_config())),
    ])
}

/// The tools of one crate.
pub type ToolList = Vec<Arc<dyn tool_core::DynTool>>;

/// The memory tools over the configured store: SQLite in the data directory, or `[storage]`'s
/// PostgreSQL database.
fn memory_tools(config: &config::Config) -> Result<ToolList> {
    let memory = config.memory_config()?;
    #[cfg(feature = "postgres")]
    if let Some(pool) = storage::pool(config)? {
        let store = Arc::new(
            tools_memory::PgStore::open(pool).map_err(|e| anyhow::anyhow!("[storage]: {e}"))?,
        );
        return Ok(tools_memory::tools_with_stores(
            &memory,
            Arc::clone(&store) as Arc<dyn tools_memory::MemoryStore>,
            store,
        ));
    }
    #[cfg(not(feature = "postgres"))]
    storage::require_sqlite(config)?;
    Ok(tools_memory::tools(&memory))
}

/// The scheduling settings, with jobs run through the shell tool as this configuration sets it
/// up (same parser, policy, sandbox and limits as an interactive `shell` call), over the
/// configured store.
pub fn cron_config(config: &config::Config) -> Result<tools_cron::Config> {
    let runner = ShellJobRunner::with_agent(config)?;
    let cron = config.cron_config(Arc::new(runner));
    #[cfg(feature = "postgres")]
    if let Some(pool) = storage::pool(config)? {
        let store =
            tools_cron::PgCronStore::open(pool).map_err(|e| anyhow::anyhow!("[storage]: {e}"))?;
        return Ok(cron.with_store(Arc::new(store)));
    }
    #[cfg(not(feature = "postgres"))]
    storage::require_sqlite(config)?;
    Ok(cron)
}

/// Starts the MCP servers of `[mcp_servers]` and adds their tools (`name__tool`) to `registry`.
/// Each imported tool is open-world and declares a network access, so supervised mode asks.
pub async fn import_mcp_servers(config: &config::Config, registry: &mut Registry) -> Result<()> {
    for (name, server) in &config.mcp_servers {
        let env: Vec<(String, String)> = server
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let remote = toolshed_mcp::remote::RemoteServer::spawn(
            name,
            &server.command,
            &server.args,
            &env,
            None,
        )
        .await
        .map_err(|e| anyhow::anyhow!("mcp_servers.{name}: {e}"))?;
        let tools = remote
            .tools()
            .await
            .map_err(|e| anyhow::anyhow!("mcp_servers.{name}: {e}"))?;
        registry.register_all(tools)?;
    }
    Ok(())
}

/// Every seed-compatible alias this build knows.
pub fn aliases() -> Vec<Alias> {
    [
        tools_fs::ALIASES,
        tools_git::ALIASES,
        tools_shell::ALIASES,
        tools_memory::ALIASES,
        tools_cron::ALIASES,
        tools_web::ALIASES,
        tools_hw::ALIASES,
    ]
    .concat()
}

/// The registry a profile exposes (`None`: canonical names).
pub fn registry_for(config: &config::Config, profile: Option<&str>) -> Result<Registry> {
    let base = registry_with(config)?;
    match profile {
        None => Ok(base),
        Some(p) if PROFILES.contains(&p) => Ok(base.with_profile(p, &aliases())?),
        Some(p) => bail!(
            "unknown profile `{p}`; the profiles are: {}",
            PROFILES.join(", ")
        ),
    }
}

/// `text` as it may be shown to a human on a terminal: control characters (C0 and C1, DEL,
/// escape sequences), bidirectional overrides and zero-width characters are written visibly
/// escaped (`\x1b`, `\u{202e}`), so that a model's bytes cannot erase, redraw or reorder what the
/// human reads (an approval prompt above all). With `newlines`, `\n` and `\t` stay as they are.
pub fn visible(text: &str, newlines: bool) -> std::borrow::Cow<'_, str> {
    let hidden = |c: char| {
        (c.is_control() && !(newlines && (c == '\n' || c == '\t')))
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
    };
    if !text.chars().any(hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !hidden(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Tools that touch the same kind of thing, each group with the kind rule that holds for all of
/// them: a rule on one tool of a group is that tool's alone.
const SHARED_ACCESS: &[(&str, &str, &[&str])] = &[
    (
        "read",
        "read paths",
        &[
            "file_read",
            "grep",
            "find_files",
            "list_dir",
            "git_operations",
            "image_info",
            "shell",
        ],
    ),
    (
        "write",
        "write paths",
        &[
            "file_write",
            "file_append",
            "file_edit",
            "patch_apply",
            "delete_file",
            "make_dir",
            "image_edit",
            "git_operations",
            "shell",
        ],
    ),
    ("read", "read memories", &["memory_recall", "memory_list"]),
    (
        "write",
        "change memories",
        &["memory_store", "memory_forget"],
    ),
    (
        "network",
        "fetch pages",
        &["http_request", "web_fetch", "browser"],
    ),
];

/// Warnings about `ask` and `deny` rules that name one tool of a group whose other tools reach
/// the same things (`"file_read(secrets/**)" = "deny"` leaves `grep` free to print
/// `secrets/`), each naming the kind rule that holds for every tool (round 17). The rule keeps
/// its meaning; the user learns what it leaves open.
pub fn rule_warnings(config: &config::Config, registry: &Registry) -> Vec<String> {
    let specs = config
        .policy
        .rules
        .iter()
        .map(|(s, d)| (s.as_str(), *d))
        .chain(config.workspace_rules.iter().map(|(s, d)| (s.as_str(), *d)));
    let mut out = Vec::new();
    for (spec, decision) in specs {
        if decision == tool_core::Decision::Allow {
            continue;
        }
        let spec = spec.trim();
        let (tool, pattern) = match spec.split_once('(') {
            Some((t, rest)) => (
                t.trim(),
                Some(rest.strip_suffix(')').unwrap_or(rest).trim()),
            ),
            None => (spec, None),
        };
        // A shell rule names commands; what commands touch is the view's business.
        if tool == "shell" {
            continue;
        }
        for (kind, what, tools) in SHARED_ACCESS {
            if !tools.contains(&tool) {
                continue;
            }
            let others: Vec<&str> = tools
                .iter()
                .copied()
                .filter(|t| *t != tool && registry.offers(t))
                .collect();
            if others.is_empty() {
                continue;
            }
            let subject = match (*kind, pattern) {
                ("network", p) => p.unwrap_or("*").to_string(),
                (_, Some(p)) if !what.ends_with("memories") => p.to_string(),
                _ if what.ends_with("memories") => "memory".to_string(),
                _ => "**".to_string(),
            };
            out.push(format!(
                "toolshed: warning: the rule `{spec}` holds for `{tool}` alone; {} {what} too. To hold for every tool, write `\"{kind}({subject})\" = \"{}\"` instead (or beside it).",
                others
                    .iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                match decision {
                    tool_core::Decision::Deny => "deny",
                    _ => "ask",
                }
            ));
        }
    }
    out
}

/// Refuses `[policy.rules]` (and `[agents.*] tools`) that name a tool by a profile's alias:
/// rules are matched against canonical names, and an alias means different tools in different
/// profiles (`write_file` is sneakycode's `file_write` and hrns's `file_edit`), so a rule written
/// for one profile would silently stop applying under another.
pub fn check_rule_names(config: &config::Config) -> Result<()> {
    let canonical: Vec<String> = registry()?.names().into_iter().map(String::from).collect();
    let aliases = aliases();
    let mut names: Vec<String> = Vec::new();
    let tool_of = |spec: &str| spec.split('(').next().unwrap_or(spec).trim().to_string();
    names.extend(config.policy.rules.keys().map(|s| tool_of(s)));
    names.extend(config.workspace_rules.iter().map(|(s, _)| tool_of(s)));
    for agent in config.agents.values() {
        if let Some(tools) = &agent.tools {
            names.extend(tools.keys().cloned());
        }
    }
    // A path kind rule whose path starts at `/` names a path on the machine, not in the
    // workspace: `write(/config/**)` for the workspace's `config/` would hold nothing. Where
    // its first directory does not exist on this machine it is taken for that mistake.
    let specs = config
        .policy
        .rules
        .keys()
        .map(String::as_str)
        .chain(config.workspace_rules.iter().map(|(s, _)| s.as_str()));
    for spec in specs {
        let Some((tool, rest)) = spec.trim().split_once('(') else {
            continue;
        };
        let path = rest.strip_suffix(')').unwrap_or(rest).trim();
        if !matches!(tool.trim(), "read" | "write" | "delete" | "*") || !path.starts_with('/') {
            continue;
        }
        let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
        if first.is_empty() || first.contains(['*', '?', '[', '{']) {
            continue;
        }
        // The operator's machine, looked at before any tool runs, not a tool's access.
        #[allow(clippy::disallowed_methods)]
        let missing = std::fs::symlink_metadata(std::path::Path::new("/").join(first)).is_err();
        if missing {
            anyhow::bail!(
                "the rule `{spec}` names `{path}`, a path from the machine's root, and `/{first}` does not exist on this machine, so it would hold nothing; for a path in the workspace leave out the leading `/` (`{}({})`)",
                tool.trim(),
                path.trim_start_matches('/')
            );
        }
    }
    for name in names {
        if canonical.contains(&name) {
            continue;
        }
        let meant: Vec<String> = aliases
            .iter()
            .filter(|a| a.name == name)
            .map(|a| format!("{}: {}", a.profile, a.target))
            .collect();
        if !meant.is_empty() {
            anyhow::bail!(
                "the rule names `{name}`, a profile's name for a tool ({}); rules name tools canonically, whatever profile is in use — write the canonical name instead (`toolshed tools` lists them)",
                meant.join("; ")
            );
        }
        // A name no tool or kind has matches nothing, so a rule under it would hold nothing
        // (round 15: `Write(config/**)`, `FILE_EDIT(…)`, `fileedit(…)` loaded silently).
        // Tools of remote MCP servers (`server__tool`) are checked when they are imported.
        const KINDS: &[&str] = &[
            "read", "write", "delete", "execute", "network", "device", "*",
        ];
        // The agent's own tools, which only `run`, `chat` and prompt jobs offer.
        const AGENT_TOOLS: &[&str] = &["finish", "message", "delegate", "spawn"];
        if KINDS.contains(&name.as_str())
            || AGENT_TOOLS.contains(&name.as_str())
            || name.contains("__")
        {
            continue;
        }
        let lower = name.to_ascii_lowercase();
        let near: Vec<&str> = canonical
            .iter()
            .map(String::as_str)
            .chain(KINDS.iter().copied())
            .filter(|c| {
                c.eq_ignore_ascii_case(&name) || c.replace('_', "") == lower.replace('_', "")
            })
            .collect();
        anyhow::bail!(
            "the rule names `{name}`, which is no tool and no access kind, so it would hold nothing{}; rules name a tool (`toolshed tools` lists them) or a kind: read, write, delete, execute, network, device",
            if near.is_empty() {
                String::new()
            } else {
                format!(" (did you mean `{}`?)", near.join("`, `"))
            }
        );
    }
    Ok(())
}
