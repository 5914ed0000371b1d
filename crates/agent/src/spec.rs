//! Named agents: a system prompt and a tool allow map, as hrns and NullClaw configure them.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The default system prompt of an agent that names none.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are a careful software agent working in a local \
workspace through tools. Read before you change things, make the smallest change that does the \
job, and check your work (run the tests, read the file back). Tool errors are sentences that say \
what to do next: follow them instead of repeating a failed call. When the task is done, call \
`finish` with a short summary of what you did, or answer without calling a tool.";

/// Which tools an agent may call: `{"*": true, "file_write": false}`. A tool's own entry wins;
/// otherwise `*` decides; with neither, the tool is not offered.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct ToolFilter(pub BTreeMap<String, bool>);

impl ToolFilter {
    /// Every tool.
    pub fn all() -> ToolFilter {
        ToolFilter(BTreeMap::from([("*".to_owned(), true)]))
    }

    /// Exactly `names`.
    pub fn only<'a>(names: impl IntoIterator<Item = &'a str>) -> ToolFilter {
        ToolFilter(names.into_iter().map(|n| (n.to_owned(), true)).collect())
    }

    /// Whether `tool` is offered.
    pub fn allows(&self, tool: &str) -> bool {
        self.0
            .get(tool)
            .or_else(|| self.0.get("*"))
            .copied()
            .unwrap_or(false)
    }

    /// Whether the map names `tool` and refuses it (`"cron_add" = false`), rather than only
    /// leaving it out.
    pub fn refuses(&self, tool: &str) -> bool {
        self.0.get(tool) == Some(&false)
    }
}

impl Default for ToolFilter {
    fn default() -> Self {
        ToolFilter::all()
    }
}

/// A named agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    /// Its name (`default`, `reviewer`…).
    pub name: String,
    /// Its system prompt.
    pub system_prompt: String,
    /// The tools it may call (always intersected with what its parent could call).
    pub tools: ToolFilter,
    /// A model other than the run's, if set.
    pub model: Option<String>,
    /// The most model calls of one run (25).
    pub max_iterations: u32,
}

impl AgentSpec {
    /// The `default` agent: every tool, the default prompt, 25 iterations.
    pub fn default_agent() -> AgentSpec {
        AgentSpec {
            name: "default".into(),
            system_prompt: DEFAULT_SYSTEM_PROMPT.into(),
            tools: ToolFilter::all(),
            model: None,
            max_iterations: 25,
        }
    }
}

/// Tools a subagent never gets, whatever its allow map says (NullClaw's list): no
/// cross-channel side effects, no further subagents of its own accord, no scheduling, no
/// memory writes, no blast radius beyond the workspace.
pub const SUBAGENT_EXCLUDED: &[&str] = &[
    "message",
    "spawn",
    "schedule",
    "cron_add",
    "cron_update",
    "cron_remove",
    "cron_run",
    "memory_store",
    "memory_forget",
    "remember",
    "composio",
    "browser_open",
    "pushover",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters() {
        let f: ToolFilter = serde_json::from_str(r#"{"*": true, "file_write": false}"#).unwrap();
        assert!(f.allows("file_read"));
        assert!(!f.allows("file_write"));
        let only = ToolFilter::only(["grep"]);
        assert!(only.allows("grep") && !only.allows("file_read"));
        let none = ToolFilter(BTreeMap::new());
        assert!(!none.allows("grep"));
    }
}
