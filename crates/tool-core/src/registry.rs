//! The registry: name → tool, with compiled validators and seed-compatible aliases.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::ToolError;
use crate::spec::ToolSpec;
use crate::tool::DynTool;

/// A seed-compatible name for a tool, with argument renames (`alias field → canonical field`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alias {
    /// The profile it belongs to: `nullclaw`, `sneakycode`, `pig` or `hrns`.
    pub profile: &'static str,
    /// The name the seed uses.
    pub name: &'static str,
    /// The canonical tool.
    pub target: &'static str,
    /// `(seed's field, canonical field)` pairs.
    pub renames: &'static [(&'static str, &'static str)],
}

/// The profiles `--profile` accepts.
pub const PROFILES: &[&str] = &["nullclaw", "sneakycode", "pig", "hrns"];

/// Why a tool could not be registered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two tools share a name.
    #[error("a tool named `{0}` is already registered")]
    Duplicate(String),
    /// A schema does not compile.
    #[error("the input schema of `{tool}` does not compile: {message}")]
    BadSchema {
        /// The tool.
        tool: String,
        /// The compiler's message.
        message: String,
    },
    /// An alias names a tool that is not registered.
    #[error("the alias `{alias}` points at `{target}`, which is not registered")]
    MissingTarget {
        /// The alias.
        alias: String,
        /// Its target.
        target: String,
    },
}

#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) tool: Arc<dyn DynTool>,
    pub(crate) spec: ToolSpec,
    pub(crate) validator: Arc<jsonschema::Validator>,
    /// `(alias field, canonical field)`; empty for canonical entries.
    pub(crate) renames: Vec<(String, String)>,
}

impl Entry {
    /// Validates `args` against this entry's schema, then renames fields to the canonical ones.
    pub(crate) fn check(&self, mut args: Value) -> Result<Value, ToolError> {
        crate::schema::strip_optional_nulls(&mut args, &self.spec.input_schema);
        crate::args::validate(
            &self.spec.name,
            &self.validator,
            &self.spec.input_schema,
            &args,
        )?;
        if !self.renames.is_empty()
            && let Value::Object(obj) = &mut args
        {
            let mut renamed = Map::new();
            for (k, v) in std::mem::take(obj) {
                let key = self
                    .renames
                    .iter()
                    .find(|(from, _)| *from == k)
                    .map(|(_, to)| to.clone())
                    .unwrap_or(k);
                renamed.insert(key, v);
            }
            *obj = renamed;
        }
        Ok(args)
    }
}

/// Name → tool. Validators are compiled once, at registration.
#[derive(Clone, Default)]
pub struct Registry {
    entries: BTreeMap<String, Entry>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.entries.keys()).finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds a tool under its own name.
    pub fn register(&mut self, tool: Arc<dyn DynTool>) -> Result<(), RegistryError> {
        let spec = tool.spec().clone();
        self.insert(spec, tool, Vec::new())
    }

    /// Adds every tool in `tools`.
    pub fn register_all(
        &mut self,
        tools: impl IntoIterator<Item = Arc<dyn DynTool>>,
    ) -> Result<(), RegistryError> {
        tools.into_iter().try_for_each(|t| self.register(t))
    }

    fn insert(
        &mut self,
        spec: ToolSpec,
        tool: Arc<dyn DynTool>,
        renames: Vec<(String, String)>,
    ) -> Result<(), RegistryError> {
        if self.entries.contains_key(&spec.name) {
            return Err(RegistryError::Duplicate(spec.name));
        }
        let validator = jsonschema::validator_for(&spec.input_schema).map_err(|e| {
            RegistryError::BadSchema {
                tool: spec.name.clone(),
                message: e.to_string(),
            }
        })?;
        self.entries.insert(
            spec.name.clone(),
            Entry {
                tool,
                spec,
                validator: Arc::new(validator),
                renames,
            },
        );
        Ok(())
    }

    /// The registry a profile exposes: each alias of the profile under the seed's name and field
    /// names, plus every tool no alias of the profile covers, under its own name.
    pub fn with_profile(
        &self,
        profile: &str,
        aliases: &[Alias],
    ) -> Result<Registry, RegistryError> {
        let mut out = Registry::new();
        let chosen: Vec<&Alias> = aliases.iter().filter(|a| a.profile == profile).collect();
        for alias in &chosen {
            let Some(entry) = self.entries.get(alias.target) else {
                // A profile may name tools this build does not include (a feature is off).
                continue;
            };
            let mut spec = entry.spec.clone();
            spec.name = alias.name.to_string();
            spec.input_schema = rename_schema(&spec.input_schema, alias.renames);
            let renames = alias
                .renames
                .iter()
                .map(|(a, c)| (a.to_string(), c.to_string()))
                .collect();
            out.insert(spec, Arc::clone(&entry.tool), renames)?;
        }
        for (name, entry) in &self.entries {
            let covered = chosen.iter().any(|a| a.target == name);
            if !covered && !out.entries.contains_key(name) {
                out.entries.insert(name.clone(), entry.clone());
            }
        }
        Ok(out)
    }

    /// A registry holding only `names` (for subagents and restricted profiles).
    pub fn subset<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Registry {
        let mut out = Registry::new();
        for name in names {
            if let Some(e) = self.entries.get(name) {
                out.entries.insert(name.to_string(), e.clone());
            }
        }
        out
    }

    /// Every spec, sorted by name.
    pub fn specs(&self) -> Vec<&ToolSpec> {
        self.entries.values().map(|e| &e.spec).collect()
    }

    /// Tool names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.entries.keys().map(String::as_str).collect()
    }

    /// The spec of `name`.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.entries.get(name).map(|e| &e.spec)
    }

    /// The canonical name of the tool registered as `name` (itself, unless `name` is a
    /// profile's alias): what rules and allow maps name.
    pub fn canonical(&self, name: &str) -> Option<&str> {
        self.entries.get(name).map(|e| e.tool.spec().name.as_str())
    }

    /// The other tools whose job the tool called `name` does ([`crate::Tool::SAME_JOB`]).
    pub fn same_job(&self, name: &str) -> &'static [&'static str] {
        self.entries
            .get(name)
            .map(|e| e.tool.same_job())
            .unwrap_or(&[])
    }

    /// Whether any entry is the tool `canonical` (under its own name or an alias).
    pub fn offers(&self, canonical: &str) -> bool {
        self.entries
            .values()
            .any(|e| e.tool.spec().name == canonical)
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Validates `args` for `name` and works out what the call would touch, without running it
    /// or asking the policy. Used to judge work that runs later (a scheduled command) when it is
    /// set up; the stack still checks the call again when it runs.
    pub fn prepare(
        &self,
        name: &str,
        args: Value,
        ctx: &crate::context::ToolContext,
    ) -> Result<crate::tool::PreparedCall, ToolError> {
        let entry = self.entry(name)?;
        let args = entry.check(args)?;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            entry.tool.prepare(ctx, args)
        }))
        .map_err(|_| ToolError::internal(format!("the tool `{name}` panicked in prepare")))?
    }

    pub(crate) fn entry(&self, name: &str) -> Result<&Entry, ToolError> {
        self.entries.get(name).ok_or_else(|| {
            let close = self.closest(name);
            ToolError::NotFound(match close {
                Some(c) => format!("There is no tool named `{name}`; did you mean `{c}`?"),
                None => format!(
                    "There is no tool named `{name}`; the tools are: {}.",
                    self.names().join(", ")
                ),
            })
        })
    }

    fn closest(&self, name: &str) -> Option<&str> {
        self.entries
            .keys()
            .map(|k| (edit_distance(k, name), k))
            .filter(|(d, k)| *d <= 3.max(k.len() / 3))
            .min()
            .map(|(_, k)| k.as_str())
    }
}

fn rename_schema(schema: &Value, renames: &[(&str, &str)]) -> Value {
    let mut schema = schema.clone();
    let to_alias = |canonical: &str| -> String {
        renames
            .iter()
            .find(|(_, c)| *c == canonical)
            .map(|(a, _)| a.to_string())
            .unwrap_or_else(|| canonical.to_string())
    };
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        let renamed: Map<String, Value> = std::mem::take(props)
            .into_iter()
            .map(|(k, v)| (to_alias(&k), v))
            .collect();
        *props = renamed;
    }
    if let Some(Value::Array(req)) = schema.get_mut("required") {
        for r in req.iter_mut() {
            if let Some(s) = r.as_str() {
                *r = Value::String(to_alias(s));
            }
        }
    }
    schema
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
