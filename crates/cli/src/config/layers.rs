//! Where the configuration comes from, and what a workspace's own `toolshed.toml` may change.
//!
//! The user's configuration (`--config FILE`, else `$XDG_CONFIG_HOME/toolshed/config.toml`) is
//! trusted. A `toolshed.toml` in the workspace is not: the workspace is what tools write, and a
//! file there comes with whatever repository was cloned. It may only narrow what the user's
//! configuration allows ("the strictest wins"); every other key it sets is ignored, with one
//! warning naming them, unless the user's configuration lists the workspace in
//! `trusted_workspaces` or the command runs with `--trust-workspace-config`.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use serde::Deserialize;
use toml::{Table, Value};
use tool_core::Decision;

use super::Config;

/// Where to look for configuration.
#[derive(Debug, Clone, Default)]
pub struct Source {
    /// The user's configuration file given with `--config`, instead of the one in
    /// `$XDG_CONFIG_HOME`.
    pub explicit: Option<PathBuf>,
    /// Apply every key of the workspace's `toolshed.toml`, as if the workspace were listed in
    /// `trusted_workspaces` (`--trust-workspace-config`).
    pub trust_workspace: bool,
}

impl Source {
    /// The user's file given with `--config`, nothing trusted beyond it.
    pub fn file(path: impl Into<PathBuf>) -> Source {
        Source {
            explicit: Some(path.into()),
            trust_workspace: false,
        }
    }
}

/// The configuration in effect, and where each part came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The merged configuration.
    pub config: Config,
    /// The user's file, if one was read.
    pub user_file: Option<PathBuf>,
    /// The workspace's `toolshed.toml`, if there is one (and it is not the user's file).
    pub workspace_file: Option<PathBuf>,
    /// Whether every key of the workspace's file applied.
    pub workspace_trusted: bool,
    /// The workspace is listed in `trusted_workspaces`, but its file is not the one the user
    /// reviewed with `toolshed trust` (new, or changed since), so it only narrows.
    pub unreviewed: bool,
    /// The keys of the workspace's file that were not applied, dotted (`policy.autonomy`,
    /// `mcp_servers.build`), in file order.
    pub ignored: Vec<String>,
}

impl Loaded {
    /// One warning naming the ignored keys and how to apply them, if any were ignored.
    pub fn warning(&self) -> Option<String> {
        let file = self.workspace_file.as_ref()?;
        if self.ignored.is_empty() {
            return None;
        }
        if self.unreviewed {
            return Some(format!(
                "toolshed: {file} is in a trusted workspace, but it is not the file you reviewed (it is new, or it changed since `toolshed trust`: a command or a checkout may have written it), so it only narrows the policy; ignored: {keys}. Review it, then run `toolshed trust` in that workspace.",
                file = file.display(),
                keys = self.ignored.join(", "),
            ));
        }
        let user = self
            .user_file
            .clone()
            .or_else(default_user_file)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "your user configuration".into());
        let dir = file
            .parent()
            .map(|p| p.canonicalize().unwrap_or_else(|_| p.to_path_buf()))
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        Some(format!(
            "toolshed: {file} is the workspace's own configuration, which may only narrow the policy; these keys would widen it or start programs, so they were ignored: {keys}. To apply them, add `trusted_workspaces = [{dir:?}]` to {user}, or run with --trust-workspace-config.",
            file = file.display(),
            keys = self.ignored.join(", "),
        ))
    }
}

/// The user's configuration file when `--config` is not given.
pub(crate) fn default_user_file() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|d| d.join("toolshed").join("config.toml"))
}

/// What a workspace's file may do with a key.
#[derive(Clone, Copy)]
enum Narrow {
    /// Applies as written: it changes names, not reach.
    Keep,
    /// `policy.autonomy`: applies when stricter.
    Autonomy,
    /// `policy.rules`: `ask` and `deny` become rules that only narrow; `allow` is ignored.
    Rules,
    /// A deny list: its entries are added to the user's.
    Union,
    /// A switch that applies only when set to this value (the narrower one).
    Only(bool),
    /// A limit that applies when lower than the one in effect.
    Lower(fn(&Config) -> Option<u64>),
    /// A limit where 0 means "no limit": applies when lower and not 0.
    LowerNonZero(fn(&Config) -> Option<u64>),
    /// A minimum that applies when higher than the one in effect (`None`: unknown, ignored).
    Higher(fn(&Config) -> Option<u64>),
}

/// Every key a workspace's file may set, and how. Any other key is ignored unless the workspace
/// is trusted: failing closed, a key added to [`Config`] later widens nothing until it is listed
/// here.
const NARROWING: &[(&str, Narrow)] = &[
    ("profile", Narrow::Keep),
    ("policy.autonomy", Narrow::Autonomy),
    ("policy.rules", Narrow::Rules),
    ("policy.denied_commands", Narrow::Union),
    ("policy.denied_hosts", Narrow::Union),
    ("policy.protected_paths", Narrow::Union),
    ("policy.ask_for_high_risk", Narrow::Only(false)),
    ("policy.allow_http", Narrow::Only(false)),
    ("policy.allow_git_internals", Narrow::Only(false)),
    ("shell.sandbox", Narrow::Only(true)),
    ("shell.namespaces", Narrow::Only(true)),
    ("shell.allow_unsandboxed", Narrow::Only(false)),
    (
        "shell.max_jobs",
        Narrow::Lower(|c| Some(c.shell_config().max_jobs as u64)),
    ),
    (
        "shell.max_processes",
        Narrow::Lower(|c| c.shell_config().max_processes.map(u64::from)),
    ),
    (
        "shell.max_file_bytes",
        Narrow::Lower(|c| c.shell_config().max_file_bytes),
    ),
    (
        "shell.max_output_total_bytes",
        Narrow::LowerNonZero(|c| c.shell_config().max_output_total_bytes),
    ),
    (
        "limits.call_timeout_secs",
        Narrow::Lower(|c| Some(c.limits().call_timeout.as_secs())),
    ),
    (
        "limits.max_timeout_secs",
        Narrow::Lower(|c| Some(c.limits().max_timeout.as_secs())),
    ),
    (
        "limits.max_output_bytes",
        Narrow::Lower(|c| Some(c.limits().max_output_bytes as u64)),
    ),
    (
        "limits.max_file_bytes",
        Narrow::Lower(|c| Some(c.limits().max_file_bytes)),
    ),
    (
        "limits.max_write_bytes",
        Narrow::Lower(|c| Some(c.limits().max_write_bytes as u64)),
    ),
    (
        "limits.calls_per_minute",
        Narrow::Lower(|c| c.limits().calls_per_minute.map(|n| u64::from(n.get()))),
    ),
    (
        "cron.max_jobs",
        Narrow::Lower(|c| c.cron_in_effect().map(|c| c.max_jobs as u64)),
    ),
    (
        "cron.min_interval_secs",
        Narrow::Higher(|c| c.cron_in_effect().map(|c| c.min_interval.as_secs())),
    ),
    ("web.jina_reader", Narrow::Only(false)),
];

/// The keys a workspace's file may set (for the README and the tests).
pub fn narrowing_keys() -> impl Iterator<Item = &'static str> {
    NARROWING.iter().map(|(k, _)| *k)
}

fn rank(autonomy: &str) -> Result<u8> {
    Ok(match autonomy {
        "read_only" => 0,
        "supervised" => 1,
        "full" => 2,
        other => bail!("policy.autonomy is `{other}`; use read_only, supervised or full"),
    })
}

/// Parses `text` (from `path`) as a configuration table, rejecting unknown keys.
pub(crate) fn parse(path: &Path, text: &str) -> Result<Table> {
    let table: Table = toml::from_str(text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))?;
    Config::deserialize(Value::Table(table.clone()))
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))?;
    Ok(table)
}

/// Builds the configuration from the user's table and the workspace's, applying every key of
/// the workspace's when `trusted`, else only what narrows. Returns the configuration and the
/// ignored keys.
pub(crate) fn merge(
    user: Table,
    workspace: Option<Table>,
    trusted: bool,
) -> Result<(Config, Vec<String>)> {
    let base = Config::deserialize(Value::Table(user.clone()))?;
    let Some(mut workspace) = workspace else {
        return Ok((base, Vec::new()));
    };
    // Only the user decides which workspaces are trusted.
    let mut ignored = Vec::new();
    if workspace.remove("trusted_workspaces").is_some() {
        ignored.push("trusted_workspaces".to_string());
    }
    if trusted {
        let mut merged = user;
        overlay(&mut merged, workspace);
        return Ok((Config::deserialize(Value::Table(merged))?, ignored));
    }
    let mut merged = user;
    let mut floor: Vec<(String, Decision)> = Vec::new();
    walk("", workspace, &base, &mut merged, &mut floor, &mut ignored)?;
    let mut config = Config::deserialize(Value::Table(merged))?;
    config.workspace_rules = floor;
    Ok((config, ignored))
}

/// Every key of `overlay` replaces the same key of `base`; tables merge key by key.
fn overlay(base: &mut Table, overlay: Table) {
    for (k, v) in overlay {
        match (base.get_mut(&k), v) {
            (Some(Value::Table(b)), Value::Table(o)) => self::overlay(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn walk(
    prefix: &str,
    table: Table,
    base: &Config,
    merged: &mut Table,
    floor: &mut Vec<(String, Decision)>,
    ignored: &mut Vec<String>,
) -> Result<()> {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        if let Some((_, how)) = NARROWING.iter().find(|(k, _)| *k == path) {
            apply(&path, *how, value, base, merged, floor, ignored)?;
        } else if let Value::Table(inner) = value {
            let deeper = format!("{path}.");
            if NARROWING.iter().any(|(k, _)| k.starts_with(&deeper)) {
                walk(&path, inner, base, merged, floor, ignored)?;
            } else {
                ignored.push(path);
            }
        } else {
            ignored.push(path);
        }
    }
    Ok(())
}

fn apply(
    path: &str,
    how: Narrow,
    value: Value,
    base: &Config,
    merged: &mut Table,
    floor: &mut Vec<(String, Decision)>,
    ignored: &mut Vec<String>,
) -> Result<()> {
    match how {
        Narrow::Keep => set(merged, path, value),
        Narrow::Autonomy => {
            let wanted = value.as_str().unwrap_or_default();
            if rank(wanted)? < rank(&base.policy.autonomy)? {
                set(merged, path, value);
            } else if rank(wanted)? > rank(&base.policy.autonomy)? {
                ignored.push(path.to_string());
            }
        }
        Narrow::Rules => {
            let Value::Table(rules) = value else {
                return Ok(());
            };
            for (spec, decision) in rules {
                let decision = Decision::deserialize(decision)
                    .map_err(|e| anyhow::anyhow!("policy.rules.{spec:?}: {e}"))?;
                if decision == Decision::Allow {
                    ignored.push(format!("policy.rules.{spec:?}"));
                } else {
                    floor.push((spec, decision));
                }
            }
        }
        Narrow::Union => {
            let Value::Array(items) = value else {
                return Ok(());
            };
            match get_mut(merged, path) {
                Some(Value::Array(list)) => {
                    for item in items {
                        if !list.contains(&item) {
                            list.push(item);
                        }
                    }
                }
                _ => set(merged, path, Value::Array(items)),
            }
        }
        Narrow::Only(narrower) => {
            if value.as_bool() == Some(narrower) {
                set(merged, path, value);
            } else {
                ignored.push(path.to_string());
            }
        }
        Narrow::LowerNonZero(_) if value.as_integer() == Some(0) => {
            ignored.push(path.to_string());
        }
        Narrow::Lower(current) | Narrow::LowerNonZero(current) => {
            let Some(wanted) = value.as_integer().and_then(|n| u64::try_from(n).ok()) else {
                return Ok(());
            };
            match current(base) {
                Some(now) if wanted > now => ignored.push(path.to_string()),
                Some(now) if wanted == now => {}
                _ => set(merged, path, value),
            }
        }
        Narrow::Higher(current) => {
            let Some(wanted) = value.as_integer().and_then(|n| u64::try_from(n).ok()) else {
                return Ok(());
            };
            match current(base) {
                Some(now) if wanted > now => set(merged, path, value),
                Some(now) if wanted == now => {}
                _ => ignored.push(path.to_string()),
            }
        }
    }
    Ok(())
}

fn set(table: &mut Table, path: &str, value: Value) {
    let mut parts = path.split('.').peekable();
    let mut table = table;
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            table.insert(part.to_string(), value);
            return;
        }
        let entry = table
            .entry(part.to_string())
            .or_insert_with(|| Value::Table(Table::new()));
        if !entry.is_table() {
            *entry = Value::Table(Table::new());
        }
        match entry {
            Value::Table(inner) => table = inner,
            _ => return,
        }
    }
}

fn get_mut<'a>(table: &'a mut Table, path: &str) -> Option<&'a mut Value> {
    let mut parts = path.split('.').peekable();
    let mut table = table;
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            return table.get_mut(part);
        }
        table = table.get_mut(part)?.as_table_mut()?;
    }
    None
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(bytes))
}

/// Where the digest of the reviewed `toolshed.toml` of the workspace in `dir` is kept.
pub(crate) fn pin_path(data_dir: &Path, dir: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().ok()?;
    Some(
        data_dir
            .join("trusted")
            .join(sha256(dir.as_os_str().as_encoded_bytes())),
    )
}

/// Whether `bytes` is the workspace file the user reviewed.
// The pin is the operator's state, read before any tool runs.
#[allow(clippy::disallowed_methods)]
pub(crate) fn pin_matches(data_dir: &Path, dir: &Path, bytes: &[u8]) -> bool {
    pin_path(data_dir, dir)
        .and_then(|p| std::fs::read_to_string(p).ok())
        .is_some_and(|pinned| pinned.trim() == sha256(bytes))
}

/// Records `bytes` as the reviewed workspace file of `dir`.
#[allow(clippy::disallowed_methods)]
pub(crate) fn pin(data_dir: &Path, dir: &Path, bytes: &[u8]) -> Result<PathBuf> {
    let path = pin_path(data_dir, dir)
        .ok_or_else(|| anyhow::anyhow!("cannot resolve the workspace {}", dir.display()))?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&path, format!("{}\n", sha256(bytes)))?;
    Ok(path)
}

/// Whether the user's configuration trusts the workspace whose configuration lives in `dir`.
pub(crate) fn is_trusted(config: &Config, dir: &Path) -> bool {
    let Ok(dir) = dir.canonicalize() else {
        return false;
    };
    config
        .trusted_workspaces
        .iter()
        .any(|t| t.canonicalize().is_ok_and(|t| t == dir))
}
