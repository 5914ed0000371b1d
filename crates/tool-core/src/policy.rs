//! The policy: pure data plus [`Policy::decide`].
//!
//! A tool declares what a call will touch as a list of [`Access`]es; the policy turns that list into
//! one [`Decision`]. The strictest decision over all accesses wins (`Allow < Ask < Deny`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use globset::{GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};

use crate::workspace::WsPath;

/// What the policy says about a call. Ordered so that `max` is the strictest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run it.
    Allow,
    /// Run it only if a human approves.
    Ask,
    /// Refuse it.
    Deny,
}

/// How much a model may do without a human.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Autonomy {
    /// Reads only; every write, command of medium or high risk, and network call is refused.
    ReadOnly,
    /// Reads and workspace writes run; deletes of trees, medium-risk commands and network calls to
    /// hosts off the allow list ask; high-risk commands are refused.
    Supervised,
    /// Everything runs except what a deny rule or deny list names.
    Full,
}

impl FromStr for Autonomy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read_only" => Ok(Autonomy::ReadOnly),
            "supervised" => Ok(Autonomy::Supervised),
            "full" => Ok(Autonomy::Full),
            other => Err(format!(
                "unknown autonomy level `{other}`; use read_only, supervised or full"
            )),
        }
    }
}

/// How dangerous a command is, as classified by the tool that runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads state (`ls`, `git status`).
    Low,
    /// Changes workspace state in a recoverable way (`git commit`, `cargo build`).
    Medium,
    /// Can destroy data or reach outside (`rm -rf`, `curl`, `sudo`).
    High,
}

/// One thing a call will touch.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// Read a file or list a directory.
    Read(WsPath),
    /// Create or change a file or directory.
    Write(WsPath),
    /// Remove a file or directory.
    Delete {
        /// What is removed.
        path: WsPath,
        /// Whether a whole tree goes.
        recursive: bool,
    },
    /// Run a command.
    Execute {
        /// The command line as given.
        command: String,
        /// The programs it runs, as the tool's parser found them.
        programs: Vec<String>,
        /// The tool's classification.
        risk: Risk,
        /// Why the tool classified it so, naming the program (`rm: deletes a tree`); empty
        /// for a plain read. Refusals and approval requests repeat it.
        why: String,
        /// Each simple command the line runs, as the tool's parser reads it: the program's
        /// base name and its arguments, quotes removed, wrappers unwrapped (`echo hi; /bin/tar
        /// -x` gives `echo hi` and `tar -x`). `deny` and `ask` rules on commands match any of
        /// them as well as the whole line, so no spelling or position slips past them.
        commands: Vec<String>,
        /// The programs in the line that run code the tool's parser cannot see into (a script,
        /// `python3 -c`, `make`, a `git` alias, a program it does not know). A `deny` or `ask`
        /// rule on commands cannot be checked inside them, so where such a rule exists for the
        /// tool, the line asks (fails closed) unless a rule already decides it strictly.
        opaque: Vec<String>,
    },
    /// Talk to a network host.
    Network {
        /// Host name or address.
        host: String,
    },
    /// Open a device node (or a device-like file such as a memory window).
    Device {
        /// The device node.
        path: PathBuf,
        /// Whether anything is written to it (an I2C write, an SPI transfer, a memory write).
        write: bool,
    },
    /// Change state that is neither a file nor a device (memory, schedules).
    State {
        /// What kind of state (`memory`, `cron`).
        store: String,
        /// Whether anything is written.
        write: bool,
    },
    /// Work the call hands to another tool to do later or elsewhere: a scheduled job's command
    /// runs as `shell`. The policy judges `accesses` as a call of `tool` (so `shell` rules apply
    /// to a job's command), and the stack refuses the call when `tool` is not one the caller
    /// could call directly (an agent whose allow map leaves out `shell` cannot schedule a
    /// command).
    Deferred {
        /// The canonical name of the tool that will do the work.
        tool: String,
        /// What that tool's call will touch.
        accesses: Vec<Access>,
    },
}

impl Access {
    /// The string that rule patterns are matched against.
    pub fn subject(&self) -> String {
        match self {
            Access::Read(p) | Access::Write(p) | Access::Delete { path: p, .. } => p.to_string(),
            Access::Execute { command, .. } => command.clone(),
            Access::Network { host } => host.clone(),
            Access::Device { path, .. } => path.display().to_string(),
            Access::State { store, .. } => store.clone(),
            Access::Deferred { tool, .. } => tool.clone(),
        }
    }

    /// The tools this access hands work to, nested ones included (`shell` for a job's
    /// command), each once, in order.
    pub fn deferred_tools(accesses: &[Access]) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        let mut stack: Vec<&Access> = accesses.iter().rev().collect();
        while let Some(a) = stack.pop() {
            if let Access::Deferred { tool, accesses } = a {
                if !out.contains(&tool.as_str()) {
                    out.push(tool);
                }
                stack.extend(accesses.iter().rev());
            }
        }
        out
    }

    fn is_path(&self) -> bool {
        matches!(
            self,
            Access::Read(_) | Access::Write(_) | Access::Delete { .. } | Access::Device { .. }
        )
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Access::Read(p) => write!(f, "read {p}"),
            Access::Write(p) => write!(f, "write {p}"),
            Access::Delete { path, recursive } => {
                write!(
                    f,
                    "delete {path}{}",
                    if *recursive { " (recursive)" } else { "" }
                )
            }
            Access::Execute { command, risk, .. } => write!(f, "run `{command}` ({risk:?} risk)"),
            Access::Network { host } => write!(f, "connect to {host}"),
            Access::Device { path, write } => write!(
                f,
                "{} device {}",
                if *write { "write to" } else { "read from" },
                path.display()
            ),
            Access::State { store, write } => {
                write!(f, "{} {store}", if *write { "change" } else { "read" })
            }
            Access::Deferred { tool, accesses } => {
                write!(f, "later, as `{tool}`: ")?;
                if accesses.is_empty() {
                    f.write_str("anything it is allowed to do then")?;
                }
                for (i, a) in accesses.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{a}")?;
                }
                Ok(())
            }
        }
    }
}

/// The `[policy.rules]` line that allows exactly this access of `tool`: the subject with the
/// glob characters escaped, as a TOML string.
fn rule_line(tool: &str, access: &Access) -> String {
    let mut pattern = String::new();
    for c in access.subject().chars() {
        match c {
            '*' | '?' | '[' | ']' | '{' | '}' => {
                pattern.push('[');
                pattern.push(c);
                pattern.push(']');
            }
            _ => pattern.push(c),
        }
    }
    let key = format!("{tool}({pattern})");
    let mut quoted = String::from('"');
    for c in key.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", c as u32)),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    format!("{quoted} = \"allow\"")
}

/// The decisions so far of one [`Policy::decide`].
struct Tally {
    decision: Decision,
    reasons: Vec<String>,
    culprits: Vec<String>,
    rules: Vec<String>,
}

/// A per-tool rule such as `shell(git status*)` or `file_write(src/**)`.
#[derive(Debug, Clone)]
pub struct Rule {
    tool: String,
    pattern: Option<(String, GlobMatcher, GlobMatcher)>,
    /// What the rule decides for the accesses it matches.
    pub decision: Decision,
}

impl Rule {
    /// Parses `tool` or `tool(pattern)`; `*` as the tool matches every tool, and an access kind
    /// (`read`, `write`, `delete`, `execute`, `network`, `device`) matches every tool's accesses
    /// of that kind: `write(secrets/**)` covers file_write, file_edit, patch_apply and shell
    /// redirections alike. `write` includes deletes.
    ///
    /// In the pattern, `*` matches within one path segment and `**` across segments for paths;
    /// for commands and hosts `*` matches anything.
    pub fn parse(spec: &str, decision: Decision) -> Result<Rule, String> {
        let spec = spec.trim();
        let (tool, pattern) = match spec.find('(') {
            Some(open) => {
                let Some(inner) = spec[open + 1..].strip_suffix(')') else {
                    return Err(format!(
                        "rule `{spec}` opens `(` without closing it; write it as `tool(pattern)`"
                    ));
                };
                (&spec[..open], Some(inner))
            }
            None => (spec, None),
        };
        if tool.is_empty()
            || !tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '*')
        {
            return Err(format!(
                "rule `{spec}` has no valid tool name; write `tool` or `tool(pattern)`, e.g. `file_write(src/**)`"
            ));
        }
        // A path pattern of a kind rule in another spelling of the same paths (`./config/**`,
        // `config/`) would otherwise match nothing (round 15): `./` is dropped and a trailing
        // `/` means the tree.
        let normal: Option<String> = pattern.map(|p| {
            if matches!(tool, "read" | "write" | "delete") {
                let mut p = p.trim();
                while let Some(rest) = p.strip_prefix("./") {
                    p = rest.trim_start_matches('/');
                }
                if p.len() > 1 && p.ends_with('/') {
                    format!("{}/**", p.trim_end_matches('/'))
                } else {
                    p.to_string()
                }
            } else {
                p.to_string()
            }
        });
        let pattern = match normal.as_deref() {
            None => None,
            Some(p) => {
                let build = |sep: bool| {
                    GlobBuilder::new(p)
                        .literal_separator(sep)
                        .backslash_escape(true)
                        .build()
                        .map(|g| g.compile_matcher())
                        .map_err(|e| format!("rule `{spec}` has a bad pattern: {e}"))
                };
                Some((p.to_string(), build(true)?, build(false)?))
            }
        };
        Ok(Rule {
            tool: tool.to_string(),
            pattern,
            decision,
        })
    }

    fn matches(&self, tool: &str, access: &Access) -> bool {
        // An access kind in the tool position applies to every tool that touches the subject
        // that way, so `write(secrets/**)` also covers file_edit, patch_apply and the rest.
        let by_kind = match self.tool.as_str() {
            // State (memories, schedules, the scratchpad) is read and written too, by its
            // store's name: `read(memory)` holds for memory_recall and memory_list alike
            // (round 18: the kind rule the start-up warning named held for neither).
            "read" => Some(matches!(
                access,
                Access::Read(_) | Access::State { write: false, .. }
            )),
            "write" => Some(matches!(
                access,
                Access::Write(_) | Access::Delete { .. } | Access::State { write: true, .. }
            )),
            "delete" => Some(matches!(access, Access::Delete { .. })),
            "execute" => Some(matches!(access, Access::Execute { .. })),
            "network" => Some(matches!(access, Access::Network { .. })),
            "device" => Some(matches!(access, Access::Device { .. })),
            _ => None,
        };
        match by_kind {
            Some(false) => return false,
            Some(true) => {}
            None if self.tool != "*" && self.tool != tool => return false,
            None => {}
        }
        match &self.pattern {
            None => true,
            Some((pattern, path_glob, text_glob)) => {
                let subject = access.subject();
                // A rule that refuses or asks about a command holds for every simple command in
                // the line, however it is spelled (`echo; /bin/tar`, `command tar`, `t""ar`);
                // an allow rule has to match the whole line (see `is_compound`).
                if let Access::Execute { commands, .. } = access
                    && self.decision != Decision::Allow
                    && commands.iter().any(|c| text_glob.is_match(c))
                {
                    return true;
                }
                if !access.is_path() {
                    return text_glob.is_match(&subject);
                }
                if path_glob.is_match(&subject) {
                    return true;
                }
                // `X/**` covers the directory `X` itself (deleting or replacing it).
                if let Some(base) = pattern.strip_suffix("/**")
                    && !base.contains(GLOB_CHARS)
                    && subject.trim_end_matches('/') == base.trim_end_matches('/')
                {
                    return true;
                }
                // A recursive delete touches its whole tree: a rule on a literal subtree inside
                // it applies (`write(secrets/**)` refuses deleting `.` or a parent of secrets).
                if let Access::Delete {
                    path,
                    recursive: true,
                } = access
                {
                    let inner = literal_prefix(pattern);
                    let rel = path.rel();
                    if !inner.is_empty()
                        && (rel.is_empty()
                            || inner == rel
                            || inner.strip_prefix(rel).is_some_and(|r| r.starts_with('/')))
                    {
                        return true;
                    }
                }
                false
            }
        }
    }
}

/// The characters that make a rule pattern a glob.
const GLOB_CHARS: &[char] = &['*', '?', '[', ']', '{', '}'];

/// The directories a pattern names literally before its first glob character
/// (`secrets/**` → `secrets`, `a/b/*.key` → `a/b`, `a/x.txt` → `a/x.txt`, `**/x` → ``).
fn literal_prefix(pattern: &str) -> &str {
    let pattern = pattern.trim_start_matches("./");
    match pattern.find(GLOB_CHARS) {
        None => pattern.trim_end_matches('/'),
        Some(i) => match pattern[..i].rfind('/') {
            Some(slash) => &pattern[..slash],
            None => "",
        },
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            Some((p, _, _)) => write!(f, "{}({p})", self.tool),
            None => f.write_str(&self.tool),
        }
    }
}

/// The policy's answer, with the reason a human or model can read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The strictest decision over all accesses.
    pub decision: Decision,
    /// Why, in one sentence (empty for a plain allow).
    pub reason: String,
    /// The accesses that made the decision what it is.
    pub accesses: Vec<String>,
    /// For an `Ask`: the `[policy.rules]` lines that would allow those accesses without asking,
    /// for the user's own configuration.
    pub rules: Vec<String>,
}

/// Pure data describing what a model may do, plus [`Policy::decide`].
///
/// There is deliberately no `Default`: the composition root builds a policy from configuration,
/// starting from [`Policy::read_only`], [`Policy::supervised`] or [`Policy::full`].
#[derive(Debug, Clone)]
pub struct Policy {
    /// The autonomy level.
    pub autonomy: Autonomy,
    /// Per-tool rules, checked for every access; a matching rule replaces the autonomy level's
    /// baseline decision for that access (the strictest matching rule wins). In `read_only`, rules
    /// cannot allow anything beyond reads; for a compound command (several programs, `;`, `|`,
    /// `$(…)`, redirections) a rule can only make the baseline stricter.
    pub rules: Vec<Rule>,
    /// Rules from a workspace's own configuration, which may only narrow: a matching rule makes
    /// the decision at least as strict as it says (`ask` or `deny`) and never looser, whatever
    /// [`Policy::rules`] or the baseline decided. See [`Policy::narrowing_rule`].
    pub narrowing_rules: Vec<Rule>,
    /// Programs that may run at any risk level (still subject to `read_only`), matched exactly:
    /// `git` allows the `git` found on `PATH`, not `./git`.
    pub allowed_commands: Vec<String>,
    /// Programs that never run, matched by base name (`rm` also refuses `/bin/rm` and `./rm`).
    pub denied_commands: Vec<String>,
    /// The highest command risk that runs without asking in `supervised` mode.
    pub auto_approve_risk: Risk,
    /// Whether `supervised` mode may ask about high-risk commands instead of refusing them.
    pub ask_for_high_risk: bool,
    /// Hosts that network tools may reach without asking: `example.com` (and its subdomains),
    /// `*.example.com` (subdomains only) or `*` (any public host).
    pub allowed_hosts: Vec<String>,
    /// Hosts that network tools never reach, whatever the autonomy level or rules say; the same
    /// forms as `allowed_hosts`.
    pub denied_hosts: Vec<String>,
    /// Whether network tools may use plain `http://` (otherwise only `https://`).
    pub allow_http: bool,
    /// Device nodes hardware tools may open: exact paths (`/dev/i2c-1`) or patterns whose `*`,
    /// `?` and `[…]` stay within one path component (`/dev/ttyUSB*`). See
    /// [`Policy::device_allowed`].
    pub allowed_devices: Vec<PathBuf>,
    /// Whether writes inside `.git/` directories (hooks, config) are allowed.
    pub allow_git_internals: bool,
    /// Paths, relative to each writable root, that no tool writes or deletes (beside `.git`
    /// internals and [`Policy::BUILT_IN_PROTECTED`]): matched as the path itself or a directory
    /// above it, ignoring ASCII case. The shell's sandbox mounts the existing ones read-only.
    pub protected_paths: Vec<String>,
}

impl Policy {
    fn with_autonomy(autonomy: Autonomy) -> Policy {
        Policy {
            autonomy,
            rules: Vec::new(),
            narrowing_rules: Vec::new(),
            allowed_commands: Vec::new(),
            denied_commands: Vec::new(),
            auto_approve_risk: Risk::Low,
            ask_for_high_risk: false,
            allowed_hosts: Vec::new(),
            denied_hosts: Vec::new(),
            allow_http: false,
            allowed_devices: Vec::new(),
            allow_git_internals: false,
            protected_paths: Vec::new(),
        }
    }

    /// Toolshed's own configuration in a workspace: written by no tool, so that a model cannot
    /// widen the policy of the next start.
    pub const BUILT_IN_PROTECTED: &[&str] = &["toolshed.toml", ".toolshed"];

    /// The protected path (built in or configured) that `path` is, or is inside, if any.
    pub fn protected(&self, path: &WsPath) -> Option<String> {
        let rel = path.rel();
        Self::BUILT_IN_PROTECTED
            .iter()
            .map(|p| p.to_string())
            .chain(self.protected_paths.iter().cloned())
            .find(|p| {
                let p = p.trim_matches('/');
                !p.is_empty()
                    && rel.len() >= p.len()
                    && rel.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes())
                    && (rel.len() == p.len() || rel.as_bytes()[p.len()] == b'/')
            })
    }

    /// Reads only.
    pub fn read_only() -> Policy {
        Policy::with_autonomy(Autonomy::ReadOnly)
    }

    /// The usual interactive setting: see [`Autonomy::Supervised`].
    pub fn supervised() -> Policy {
        Policy::with_autonomy(Autonomy::Supervised)
    }

    /// Everything but the deny lists: see [`Autonomy::Full`].
    pub fn full() -> Policy {
        Policy::with_autonomy(Autonomy::Full)
    }

    /// Adds a rule; see [`Rule::parse`].
    pub fn rule(mut self, spec: &str, decision: Decision) -> Result<Policy, String> {
        self.rules.push(Rule::parse(spec, decision)?);
        Ok(self)
    }

    /// Paths (relative to a root) that rules by access kind keep from every tool, for a
    /// sandbox that cannot ask: with `write`, those a `write`/`delete`/`*` rule asks about or
    /// refuses (the shell sees them read-only); without, those a `read`/`*` rule refuses (the
    /// shell does not see them at all). Only rules whose pattern is a literal path or `X/**` count:
    /// a narrower glob cannot be mounted (see [`Policy::kind_rule_globs`]).
    pub fn kind_rule_paths(&self, write: bool) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (_, base) in self.kind_rules(write) {
            if let Some(base) = base
                && !out.iter().any(|o| o == base)
            {
                out.push(base.to_string());
            }
        }
        out
    }

    /// The kind rules of [`Policy::kind_rule_paths`] that name no single directory tree
    /// (`read(**/*.pem)`, `write(config/*.yaml)`): a sandbox that cannot match patterns has to
    /// find the existing paths they cover ([`Policy::kind_rule_covers`]).
    pub fn kind_rule_globs(&self, write: bool) -> Vec<String> {
        self.kind_rules(write)
            .filter(|(_, base)| base.is_none())
            .map(|(rule, _)| rule.to_string())
            .collect()
    }

    /// Whether a globbed kind rule of [`Policy::kind_rule_globs`] covers `rel`, a path relative
    /// to a workspace root.
    pub fn kind_rule_covers(&self, write: bool, rel: &str) -> bool {
        self.kind_rules(write)
            .filter(|(_, base)| base.is_none())
            .any(|(rule, _)| {
                rule.pattern
                    .as_ref()
                    .is_some_and(|(_, path_glob, _)| path_glob.is_match(rel))
            })
    }

    /// The kind rules that keep paths from every tool (`read` rules that refuse; `write` and
    /// `delete` rules that ask or refuse), each with the directory tree it names when it names
    /// one (`secrets/**` → `secrets`).
    fn kind_rules(&self, write: bool) -> impl Iterator<Item = (&Rule, Option<&str>)> {
        let kinds: &[&str] = if write {
            &["write", "delete", "*"]
        } else {
            &["read", "*"]
        };
        self.rules
            .iter()
            .chain(&self.narrowing_rules)
            .filter(move |rule| {
                let wanted = if write {
                    rule.decision != Decision::Allow
                } else {
                    rule.decision == Decision::Deny
                };
                wanted && kinds.contains(&rule.tool.as_str()) && rule.pattern.is_some()
            })
            .filter_map(|rule| {
                let pattern = rule
                    .pattern
                    .as_ref()
                    .map(|(p, _, _)| p.as_str())
                    .unwrap_or("");
                let base = pattern.strip_suffix("/**").unwrap_or(pattern);
                let base = base.trim_start_matches("./").trim_end_matches('/');
                // Paths outside every root are no sandbox's business here.
                if base.starts_with('/') || base.split('/').any(|c| c == ".." || c == ".") {
                    return None;
                }
                let literal = !(base.is_empty() || base.contains(GLOB_CHARS));
                Some((rule, literal.then_some(base)))
            })
    }

    /// Adds a rule that can only make decisions stricter (see [`Policy::narrowing_rules`]); an
    /// `allow` is refused, since it could only widen.
    pub fn narrowing_rule(mut self, spec: &str, decision: Decision) -> Result<Policy, String> {
        if decision == Decision::Allow {
            return Err(format!(
                "`{spec}` = \"allow\" would widen the policy, and a narrowing rule may only ask or deny; put allow rules in the user's own configuration"
            ));
        }
        self.narrowing_rules.push(Rule::parse(spec, decision)?);
        Ok(self)
    }

    /// Decides a call of `tool` that touches `accesses`.
    ///
    /// A call with no accesses is allowed (it touches nothing). The strictest decision wins.
    pub fn decide(&self, tool: &str, accesses: &[Access]) -> Verdict {
        let mut acc = Tally {
            decision: Decision::Allow,
            reasons: Vec::new(),
            culprits: Vec::new(),
            rules: Vec::new(),
        };
        self.tally(tool, accesses, "", &mut acc);
        if acc.decision != Decision::Ask {
            acc.rules.clear();
        }
        Verdict {
            decision: acc.decision,
            reason: acc.reasons.join("; "),
            accesses: acc.culprits,
            rules: acc.rules,
        }
    }

    /// Adds the decisions on `accesses` of `tool` to `acc`; deferred work is judged as a call of
    /// the tool that will do it, and named so (`later, as `shell`: run …`).
    fn tally(&self, tool: &str, accesses: &[Access], prefix: &str, acc: &mut Tally) {
        for access in accesses {
            if let Access::Deferred {
                tool: later,
                accesses: inner,
            } = access
            {
                let prefix = format!("{prefix}later, as `{later}`: ");
                self.tally(later, inner, &prefix, acc);
                continue;
            }
            let (d, why) = self.decide_one(tool, access);
            if d > acc.decision {
                acc.decision = d;
                acc.reasons.clear();
                acc.culprits.clear();
                acc.rules.clear();
            }
            if d == acc.decision && d != Decision::Allow {
                if !acc.reasons.contains(&why) {
                    acc.reasons.push(why);
                }
                acc.culprits.push(format!("{prefix}{access}"));
                // No rule line lets opaque code past a restricting command rule, so none is
                // offered for it.
                let line = rule_line(tool, access);
                if self.unverifiable_command_rule(tool, access).is_none()
                    && !acc.rules.contains(&line)
                {
                    acc.rules.push(line);
                }
            }
        }
    }

    fn decide_one(&self, tool: &str, access: &Access) -> (Decision, String) {
        let decided = self.decide_widest(tool, access);
        let floor = self
            .narrowing_rules
            .iter()
            .filter(|r| r.matches(tool, access))
            .max_by_key(|r| r.decision);
        let decided = match floor {
            Some(rule) if rule.decision > decided.0 => (
                rule.decision,
                format!("the workspace's rule `{rule}` says {:?}", rule.decision).to_lowercase(),
            ),
            _ => decided,
        };
        if decided.0 < Decision::Ask
            && let Some(why) = self.unverifiable_command_rule(tool, access)
        {
            return (Decision::Ask, why);
        }
        decided
    }

    /// Whether read rules keep files from `tool` (a `read`/`*` deny rule on paths, or one of
    /// the tool's own), so that git's data, which holds their committed copies, is kept too.
    fn guards_history(&self, tool: &str) -> bool {
        self.kind_rules(false).next().is_some()
            || self
                .rules
                .iter()
                .chain(&self.narrowing_rules)
                .any(|r| r.decision == Decision::Deny && r.pattern.is_some() && r.tool == tool)
    }

    /// Why a command that runs opaque code asks: a restricting rule on the tool's commands
    /// (`shell(tar*)` = deny) exists, and the code may run what it names without the parser
    /// seeing it (`python3 -c "os.system('tar …')"`). `None` when no such rule or code exists.
    fn unverifiable_command_rule(&self, tool: &str, access: &Access) -> Option<String> {
        let Access::Execute { opaque, .. } = access else {
            return None;
        };
        let program = opaque.first()?;
        let rule = self
            .rules
            .iter()
            .chain(&self.narrowing_rules)
            .filter(|r| r.decision != Decision::Allow && r.pattern.is_some())
            .find(|r| r.tool == tool || r.tool == "execute")?;
        Some(format!(
            "`{program}` runs code Toolshed cannot see into, so the rule `{rule}` ({}) cannot be checked inside it; approve only if that code does not run what the rule names (to keep a program from ever running, list it in policy.denied_commands, which the sandbox enforces)",
            format!("{:?}", rule.decision).to_lowercase()
        ))
    }

    /// The decision before [`Policy::narrowing_rules`].
    fn decide_widest(&self, tool: &str, access: &Access) -> (Decision, String) {
        // Hard limits that no rule relaxes.
        if let Access::Execute { programs, .. } = access
            && let Some(p) = programs.iter().find(|p| self.command_denied(p))
        {
            return (
                Decision::Deny,
                format!("`{p}` is on the denied command list"),
            );
        }
        if let Access::Device { path: dev, .. } = access
            && !self.device_allowed(dev)
        {
            return (
                Decision::Deny,
                format!(
                    "{} is not on the device allow list (policy.allowed_devices)",
                    dev.display()
                ),
            );
        }
        // `*` is a call that may reach any host (a shell command with network access): only a
        // deny list of `*` refuses it outright; the baseline asks unless any host is allowed.
        if let Access::Network { host } = access
            && (host_listed(&self.denied_hosts, host) || (host != "*" && !is_plain_host(host)))
        {
            return (
                Decision::Deny,
                format!("{host} is on the denied host list (policy.denied_hosts)"),
            );
        }
        // Git's data holds committed copies of the files read rules keep (found in round 8:
        // `file_read .git/objects/…` and an inflate gave a read-denied file back): while such
        // rules hold, no rule opens it to reading.
        if let Access::Read(path) = access
            && path.is_git_data()
            && self.guards_history(tool)
        {
            return (
                Decision::Deny,
                format!(
                    "{path} is git's data (objects, packs, bundles), which holds committed copies of files the read rules keep; use git_operations, which withholds those files, or ask the user"
                ),
            );
        }
        if self.autonomy == Autonomy::ReadOnly && !self.is_read(access) {
            return (
                Decision::Deny,
                "the policy is read_only, so only reads run; ask the user to raise autonomy to supervised".into(),
            );
        }
        if let Access::Write(path) | Access::Delete { path, .. } = access
            && !path.root_writable()
        {
            return (
                Decision::Deny,
                format!("{path} is in a read-only root; write inside the workspace instead"),
            );
        }
        // A hard limit too: a broad allow rule such as `file_write(**)` must not open `.git/hooks`.
        if let Access::Write(path) | Access::Delete { path, .. } = access
            && !self.allow_git_internals
            && path.is_git_internal()
        {
            return (
                Decision::Deny,
                format!(
                    "{path} is inside a .git directory (hooks and config run programs); use the git tools, or set policy.allow_git_internals"
                ),
            );
        }

        if let Access::Write(path) | Access::Delete { path, .. } = access
            && let Some(p) = self.protected(path)
        {
            return (
                Decision::Deny,
                format!(
                    "{path} is a protected path (`{p}`: Toolshed's configuration or policy.protected_paths), which no tool changes; the user edits it outside Toolshed"
                ),
            );
        }

        // Rules replace the baseline; the strictest matching rule wins.
        let ruled = self
            .rules
            .iter()
            .filter(|r| r.matches(tool, access))
            .max_by_key(|r| r.decision);
        if let Some(rule) = ruled {
            // A pattern such as `shell(git status*)` also matches `git status; curl … | sh`. For
            // a command that chains, pipes, substitutes or redirects, a rule may only make the
            // decision stricter than the baseline, never looser.
            if is_compound(access) {
                let base = self.baseline(access);
                if base.0 > rule.decision {
                    return base;
                }
            }
            return (
                rule.decision,
                format!("the rule `{rule}` says {:?}", rule.decision).to_lowercase(),
            );
        }
        self.baseline(access)
    }

    fn is_read(&self, access: &Access) -> bool {
        match access {
            Access::Read(_) => true,
            Access::Execute { programs, risk, .. } => {
                *risk == Risk::Low && programs.iter().all(|p| !self.command_denied(p))
            }
            Access::State { write, .. } => !write,
            Access::Network { .. } => false,
            // Reading a bus or a port can change the device too (it consumes bytes, clears flags).
            Access::Device { .. } => false,
            Access::Write(_) | Access::Delete { .. } => false,
            Access::Deferred { accesses, .. } => accesses.iter().all(|a| self.is_read(a)),
        }
    }

    fn baseline(&self, access: &Access) -> (Decision, String) {
        let allow = (Decision::Allow, String::new());
        let full = self.autonomy == Autonomy::Full;
        match access {
            Access::Read(_) => allow,
            Access::Write(_) => allow,
            Access::Delete { recursive, .. } => {
                if *recursive && !full {
                    (
                        Decision::Ask,
                        "deleting a whole directory tree needs approval in supervised mode".into(),
                    )
                } else {
                    allow
                }
            }
            Access::Execute {
                programs,
                risk,
                why,
                ..
            } => {
                let because = if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({why})")
                };
                if full
                    || (!programs.is_empty() && programs.iter().all(|p| self.command_allowed(p)))
                    || *risk <= self.auto_approve_risk
                {
                    allow
                } else if *risk == Risk::High && !self.ask_for_high_risk {
                    (
                        Decision::Deny,
                        format!(
                            "high-risk commands are refused in supervised mode{because}; use a safer command, or ask the user to add the program to policy.allowed_commands"
                        ),
                    )
                } else {
                    (
                        Decision::Ask,
                        format!(
                            "{}-risk commands need approval in supervised mode{because}",
                            format!("{risk:?}").to_lowercase()
                        ),
                    )
                }
            }
            Access::Network { host } => {
                if full || self.host_allowed(host) {
                    allow
                } else {
                    (
                        Decision::Ask,
                        format!("{host} is not on the host allow list (policy.allowed_hosts)"),
                    )
                }
            }
            Access::Device { write, .. } => {
                if *write && !full {
                    (
                        Decision::Ask,
                        "writing to a device needs approval in supervised mode".into(),
                    )
                } else {
                    allow
                }
            }
            Access::State { .. } => allow,
            // `decide` judges deferred work access by access under its own tool; this is the
            // same answer for a caller holding the whole access.
            Access::Deferred { accesses, .. } => accesses
                .iter()
                .map(|a| self.baseline(a))
                .max_by_key(|(d, _)| *d)
                .unwrap_or(allow),
        }
    }

    /// The deny list matches by base name on both sides (`rm`, `/bin/rm`, `./rm` are all `rm`),
    /// so that no spelling slips past it.
    fn command_denied(&self, program: &str) -> bool {
        let base = base_name(program);
        self.denied_commands
            .iter()
            .any(|c| c == program || base_name(c) == base)
    }

    /// The allow list matches exactly: a bare name allows only the program found on `PATH`, a
    /// path allows only that path. A workspace script called `./git` is not `git`.
    fn command_allowed(&self, program: &str) -> bool {
        self.allowed_commands.iter().any(|c| c == program)
    }

    /// Whether `host` is on the allow list, with a dot boundary for subdomains.
    ///
    /// Only a plain host name or address can match; anything else (`evil.test#.example.com`,
    /// user info, paths) is refused rather than compared by suffix.
    pub fn host_allowed(&self, host: &str) -> bool {
        is_plain_host(host) && host_listed(&self.allowed_hosts, host)
    }

    /// Whether hardware tools may open `path`: it must be a plain absolute path (no `.`, `..`,
    /// `//` or trailing `/`, which could make a pattern match something else) equal to an
    /// entry of `allowed_devices`, or matched by an entry with a pattern (`/dev/ttyUSB*`, whose
    /// `*` never crosses a `/`).
    pub fn device_allowed(&self, path: &Path) -> bool {
        let Some(text) = path.to_str() else {
            return false;
        };
        let plain = text.starts_with('/')
            && !text.contains("//")
            && (text.len() == 1 || !text.ends_with('/'))
            && text.split('/').all(|c| c != "." && c != "..");
        if !plain {
            return false;
        }
        self.allowed_devices.iter().any(|entry| {
            let Some(pattern) = entry.to_str() else {
                return false;
            };
            if !pattern.contains(['*', '?', '[', '{']) {
                return entry == path;
            }
            GlobBuilder::new(pattern)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .is_ok_and(|g| g.compile_matcher().is_match(path))
        })
    }

    /// Whether `host` is on the deny list (same matching as [`Policy::host_allowed`]).
    pub fn host_denied(&self, host: &str) -> bool {
        host_listed(&self.denied_hosts, host)
    }
}

/// Whether `host` looks like a host name or address at all: ASCII letters, digits, `.`, `-`,
/// `_`, and the `:[]` of IPv6 literals. Internationalised names must arrive in punycode.
fn is_plain_host(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']'))
}

/// Normalises a host or list entry for comparison: lower case, no trailing dots, and an
/// internationalised name in its punycode (`xn--`) form, which is what URLs carry on the wire.
fn normalise_host(host: &str) -> String {
    let host = host.trim_end_matches('.');
    if host.is_ascii() {
        host.to_ascii_lowercase()
    } else {
        idna::domain_to_ascii(host).unwrap_or_else(|_| host.to_lowercase())
    }
}

/// Whether `host` matches an entry of `list`: `*` matches every host, `*.x` every subdomain of
/// `x`, and `x` itself and its subdomains, always on a dot boundary (`notexample.com` is not
/// `example.com`).
fn host_listed(list: &[String], host: &str) -> bool {
    let host = normalise_host(host);
    if host.is_empty() {
        return false;
    }
    list.iter().any(|entry| {
        let (wild, entry) = match entry.strip_prefix("*.") {
            Some(rest) => (true, normalise_host(rest)),
            None if entry == "*" => return true,
            None => (false, normalise_host(entry)),
        };
        if entry.is_empty() {
            return false;
        }
        let sub = host.len() > entry.len() + 1 && host.ends_with(&format!(".{entry}"));
        sub || (!wild && host == entry)
    })
}

fn base_name(program: &str) -> &str {
    Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program)
}

/// Whether a command does more than run one program with arguments: several programs, or shell
/// syntax that chains, pipes, substitutes, redirects or starts a second line.
fn is_compound(access: &Access) -> bool {
    match access {
        Access::Execute {
            command, programs, ..
        } => {
            programs.len() > 1
                || command.contains([';', '&', '|', '`', '$', '(', ')', '<', '>', '\n', '\r'])
        }
        _ => false,
    }
}
