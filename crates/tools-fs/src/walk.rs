//! The tree walk `grep` and `find_files` share, and the glob filter both accept.
//!
//! Both walkers skip what ripgrep skips by default: hidden names, `.git`, paths matched by
//! `.gitignore`, `.ignore` and `.git/info/exclude` files (with or without a git repository),
//! symbolic links (never followed) and anything that is not a regular file. Neither reads ignore
//! files above the workspace root or the user's global git configuration, so results do not
//! depend on the machine.
//!
//! Ignore files are read by [`crate::ignore_rules`], through the workspace and only where the
//! calling tool may read, never by the `ignore` crate: which files a walk lists would otherwise
//! tell the lines of a file the walk was not allowed to open.
//!
//! - On the local backend the walk is ripgrep's own parallel walker ([`ignore::WalkBuilder`]),
//!   rooted at the real directory, with all of its own ignore-file reading turned off: it only
//!   lists directories. Every path it yields is mapped back to a [`WsPath`], so file *contents*
//!   are still opened through the workspace (`openat2(RESOLVE_BENEATH)`).
//! - On any other backend (a virtual filesystem) the walk is a recursive
//!   [`Workspace::read_dir`].

use std::cmp::Ordering;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use globset::{GlobBuilder, GlobMatcher};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};
use tool_core::workspace::FileKind;
use tool_core::{CancellationToken, ToolError, Workspace, WsPath};

pub(crate) use crate::ignore_rules::ReadGate;
use crate::ignore_rules::{Chain, DirRules, chain_to};
pub(crate) use crate::problems::Problems;

/// One regular file found by a walk.
#[derive(Debug, Clone)]
pub(crate) struct WalkedFile {
    /// The file, confined.
    pub(crate) path: WsPath,
    /// Its path relative to the directory walked, `/`-separated.
    pub(crate) rel: String,
}

/// The result of a walk: regular files sorted by path, plus what could not be read.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    pub(crate) files: Vec<WalkedFile>,
    pub(crate) problems: Problems,
}

/// The directory (or file) a search or listing named `input` really covers: resolved in the
/// workspace, and followed when it is itself a symbolic link inside it. A walk lists what is
/// under its base by the base's name, so a base `self -> .` would otherwise show
/// `self/secrets/key` to rules written on `secrets/**` (found by an adversary).
pub(crate) fn base(ws: &Workspace, input: Option<&str>) -> Result<WsPath, ToolError> {
    let named = ws.resolve(input.unwrap_or("."))?;
    Ok(ws.read_target(&named).unwrap_or(named))
}

/// Finds every regular file under `base` that `keep(rel)` accepts (`rel` is the path relative to
/// `base`), skipping hidden, ignored and linked entries; ignore files are applied only where
/// `gate` lets the tool read them. The result is sorted by path, component by component, so the
/// output never depends on thread timing.
pub(crate) fn files_under(
    ws: &Workspace,
    gate: ReadGate<'_>,
    base: &WsPath,
    keep: &(dyn Fn(&str) -> bool + Sync),
    cancel: &CancellationToken,
) -> Result<Walk, ToolError> {
    let mut walk = match ws.local_path(base) {
        Some(dir) => walk_local(ws, gate, base, &dir, keep, cancel)?,
        None => walk_virtual(ws, gate, base, keep, cancel)?,
    };
    if cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    walk.files.sort_by(|a, b| compare_paths(&a.rel, &b.rel));
    Ok(walk)
}

/// Drops the files of `walk` that the policy does not let `tool` read (a rule such as
/// `read(secrets/**)` = deny or ask): a walk declares only its base directory, so each file it
/// found is judged on its own, and one nobody was asked about is skipped, counted in a problem
/// line that gives the rule but not the file's name.
pub(crate) fn drop_unreadable(walk: &mut Walk, policy: &tool_core::Policy, tool: &str) {
    let mut skipped = Problems::default();
    walk.files.retain(|f| {
        let v = policy.decide(tool, &[tool_core::Access::Read(f.path.clone())]);
        if v.decision == tool_core::Decision::Allow {
            true
        } else {
            // The reason, not the name: a rule that refuses reading a file may mean its name too.
            skipped.add(v.reason);
            false
        }
    });
    walk.problems.merge(skipped);
}

/// Orders `/`-separated paths component by component, so `a/b` sorts before `a-b` (a directory's
/// contents stay together, as in `rg --sort path`).
pub(crate) fn compare_paths(a: &str, b: &str) -> Ordering {
    // Component order is byte order with `/` ranked below every other byte (paths hold no NUL):
    // compare at the first differing byte instead of splitting both paths on every comparison.
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let rank = |c: u8| if c == b'/' { 0 } else { c };
    match x.iter().zip(y).position(|(p, q)| p != q) {
        Some(i) => rank(x[i]).cmp(&rank(y[i])),
        None => x.len().cmp(&y.len()),
    }
}

/// Turns a path relative to `base` into a confined path, one checked component at a time.
fn confine(base: &WsPath, rel: &str) -> Result<WsPath, ToolError> {
    let mut path = base.clone();
    for comp in rel.split('/') {
        path = path.join(comp)?;
    }
    Ok(path)
}

// ---------------------------------------------------------------------------------------------
// The local backend: ripgrep's parallel walker.

fn walk_local(
    ws: &Workspace,
    gate: ReadGate<'_>,
    base: &WsPath,
    dir: &Path,
    keep: &(dyn Fn(&str) -> bool + Sync),
    cancel: &CancellationToken,
) -> Result<Walk, ToolError> {
    // Check through the workspace (openat2 RESOLVE_BENEATH) that the directory is inside and is
    // a directory before handing its real path to the walker: the walker follows a root that is
    // a link, and this is what stops a link that leads out.
    let meta = ws.metadata(base)?;
    if meta.kind != FileKind::Dir {
        return Err(ToolError::Failed(format!(
            "{base} is not a directory; give a directory as `path`."
        )));
    }
    let mut problems = Problems::default();
    let local = |d: &WsPath| ws.local_path(d).unwrap_or_default();
    let Some(top) = chain_to(ws, gate, base, &local, &mut problems) else {
        return Ok(Walk {
            files: Vec::new(),
            problems,
        });
    };

    // The walker only lists directories: every option that would make it open an ignore file
    // (or the user's git configuration) is off, and `Visitor` applies the rules instead.
    let mut builder = WalkBuilder::new(dir);
    builder
        .follow_links(false)
        .hidden(true)
        .ignore(false)
        .git_ignore(false)
        .git_exclude(false)
        .git_global(false)
        .require_git(false)
        .parents(false);

    let shared = Shared {
        ws,
        gate,
        base,
        dir,
        keep,
        cancel,
        chains: RwLock::new(HashMap::from([(dir.to_path_buf(), Arc::new(top))])),
        out: Mutex::new(Walk::default()),
    };
    builder
        .build_parallel()
        .visit(&mut VisitorBuilder { shared: &shared });
    let mut walk = shared
        .out
        .into_inner()
        .map_err(|_| ToolError::internal("the walk's result lock was poisoned"))?;
    walk.problems.merge(problems);
    Ok(walk)
}

struct Shared<'a> {
    ws: &'a Workspace,
    gate: ReadGate<'a>,
    base: &'a WsPath,
    dir: &'a Path,
    keep: &'a (dyn Fn(&str) -> bool + Sync),
    cancel: &'a CancellationToken,
    /// The rules governing each directory's entries, by real path. A directory's chain is added
    /// when the directory itself is visited, which the walker does before it lists the
    /// directory, so every entry finds its parent's chain here.
    chains: RwLock<HashMap<PathBuf, Arc<Chain>>>,
    out: Mutex<Walk>,
}

struct VisitorBuilder<'a> {
    shared: &'a Shared<'a>,
}

impl<'s> ParallelVisitorBuilder<'s> for VisitorBuilder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            shared: self.shared,
            local: Walk::default(),
        })
    }
}

/// One walker thread's visitor: collects locally, merges once when the thread is done.
struct Visitor<'a> {
    shared: &'a Shared<'a>,
    local: Walk,
}

impl Visitor<'_> {
    fn chain_of(&self, dir: &Path) -> Option<Arc<Chain>> {
        let chains = self.shared.chains.read().ok()?;
        chains.get(dir).cloned()
    }

    /// Whether a directory or file entry passes the rules of its directory; a directory that does
    /// gets its own chain. Entries whose parent has no chain (cannot happen) are skipped.
    fn admit(&mut self, entry: &DirEntry, rel: &str, is_dir: bool) -> bool {
        let path = entry.path();
        let Some(chain) = path.parent().and_then(|p| self.chain_of(p)) else {
            return false;
        };
        if chain.ignores(path, is_dir) {
            return false;
        }
        if is_dir {
            let child = match confine(self.shared.base, rel) {
                Ok(child) => child,
                Err(e) => {
                    self.local.problems.add(format!("{rel}: {e}"));
                    return false;
                }
            };
            let rules = DirRules::load(
                self.shared.ws,
                self.shared.gate,
                &child,
                path,
                &mut self.local.problems,
            );
            let Ok(mut chains) = self.shared.chains.write() else {
                return false;
            };
            chains.insert(path.to_path_buf(), Arc::new(chain.with(rules)));
        }
        true
    }
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.shared.cancel.is_cancelled() {
            return WalkState::Quit;
        }
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                self.local.problems.add(e.to_string());
                return WalkState::Continue;
            }
        };
        if entry.depth() == 0 {
            // The walk root: its chain was built before the walk; a root that is a file is
            // handled by the callers before walking.
            return WalkState::Continue;
        }
        // Only directories and regular files: links are not followed, and devices and FIFOs are
        // never read.
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        if !is_dir && !entry.file_type().is_some_and(|t| t.is_file()) {
            return WalkState::Continue;
        }
        let Ok(rel) = entry.path().strip_prefix(self.shared.dir) else {
            return WalkState::Skip;
        };
        let Some(rel) = rel.to_str() else {
            self.local.problems.add(format!(
                "{}: the name is not valid UTF-8",
                entry.path().display()
            ));
            return WalkState::Skip;
        };
        if !self.admit(&entry, rel, is_dir) {
            return WalkState::Skip;
        }
        if is_dir || !(self.shared.keep)(rel) {
            return WalkState::Continue;
        }
        match confine(self.shared.base, rel) {
            Ok(path) => self.local.files.push(WalkedFile {
                path,
                rel: rel.to_string(),
            }),
            Err(e) => self.local.problems.add(format!("{rel}: {e}")),
        }
        WalkState::Continue
    }
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let local = std::mem::take(&mut self.local);
        if let Ok(mut out) = self.shared.out.lock() {
            out.files.extend(local.files);
            out.problems.merge(local.problems);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Any other backend: a recursive read_dir through the workspace.

fn walk_virtual(
    ws: &Workspace,
    gate: ReadGate<'_>,
    base: &WsPath,
    keep: &(dyn Fn(&str) -> bool + Sync),
    cancel: &CancellationToken,
) -> Result<Walk, ToolError> {
    let meta = ws.metadata(base)?;
    if meta.kind != FileKind::Dir {
        return Err(ToolError::Failed(format!(
            "{base} is not a directory; give a directory as `path`."
        )));
    }
    let mut walk = Walk::default();
    // Virtual matchers are rooted at workspace-relative directories and match `WsPath::rel`.
    let rel_root = |d: &WsPath| PathBuf::from(d.rel());
    let Some(chain) = chain_to(ws, gate, base, &rel_root, &mut walk.problems) else {
        return Ok(walk);
    };
    let mut stack = Walker {
        ws,
        gate,
        keep,
        cancel,
        walk: &mut walk,
    };
    stack.dir(base, "", &chain, 0)?;
    Ok(walk)
}

/// Deeper than this, a virtual tree is not descended into (it can only be a loop or an attack).
const MAX_DEPTH: usize = 256;

struct Walker<'a> {
    ws: &'a Workspace,
    gate: ReadGate<'a>,
    keep: &'a (dyn Fn(&str) -> bool + Sync),
    cancel: &'a CancellationToken,
    walk: &'a mut Walk,
}

impl Walker<'_> {
    /// Walks `dir`, whose entries `chain` governs (its own rules included).
    fn dir(
        &mut self,
        dir: &WsPath,
        prefix: &str,
        chain: &Chain,
        depth: usize,
    ) -> Result<(), ToolError> {
        if self.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        if depth > MAX_DEPTH {
            self.walk
                .problems
                .add(format!("{dir}: nested more than {MAX_DEPTH} levels deep"));
            return Ok(());
        }
        let entries = match self.ws.read_dir(dir) {
            Ok(e) => e,
            Err(e) if depth > 0 => {
                self.walk.problems.add(format!("{dir}: {e}"));
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        for entry in entries {
            // Hidden names (which include `.git`) are skipped, as ripgrep does by default.
            if entry.name.starts_with('.') {
                continue;
            }
            let is_dir = entry.kind == FileKind::Dir;
            if !is_dir && entry.kind != FileKind::File {
                continue;
            }
            let Ok(child) = dir.join(&entry.name) else {
                continue;
            };
            if chain.ignores(Path::new(child.rel()), is_dir) {
                continue;
            }
            let rel = format!("{prefix}{}", entry.name);
            if is_dir {
                let rules = DirRules::load(
                    self.ws,
                    self.gate,
                    &child,
                    Path::new(child.rel()),
                    &mut self.walk.problems,
                );
                self.dir(&child, &format!("{rel}/"), &chain.with(rules), depth + 1)?;
            } else if (self.keep)(&rel) {
                self.walk.files.push(WalkedFile { path: child, rel });
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Globs.

/// A glob as `find_files` and `grep`'s `include` take it.
///
/// Without a `/` it matches the file name at any depth (`*.rs`, like `rg -g` and `fd -g`); with
/// one it matches the path relative to the searched directory (`src/**/*.rs`). `*` never crosses
/// a `/`; `**` does; `{a,b}` and `[abc]` work.
#[derive(Debug, Clone)]
pub(crate) struct GlobFilter {
    matcher: GlobMatcher,
    by_name: bool,
}

impl GlobFilter {
    /// Compiles `pattern`; `field` is the JSON pointer named in errors (`/pattern`, `/include`).
    pub(crate) fn new(pattern: &str, field: &str) -> Result<GlobFilter, ToolError> {
        let mut glob = pattern.trim();
        if glob.is_empty() {
            return Err(ToolError::invalid(
                field,
                "the glob is empty; give one such as `*.rs` or `src/**/*.ts`",
            ));
        }
        if glob.starts_with('/') {
            return Err(ToolError::invalid(
                field,
                format!(
                    "the glob `{glob}` is absolute; globs match paths relative to the searched directory, e.g. `src/**/*.rs` (put the directory in `path`)"
                ),
            ));
        }
        if glob.split('/').any(|c| c == "..") {
            return Err(ToolError::invalid(
                field,
                format!(
                    "the glob `{glob}` contains `..`, which can never match: globs only see paths inside the searched directory; set `path` to the directory instead"
                ),
            ));
        }
        while let Some(rest) = glob.strip_prefix("./") {
            glob = rest;
        }
        // `src/` means everything under `src`.
        let owned;
        if glob.ends_with('/') {
            owned = format!("{glob}**");
            glob = &owned;
        }
        let matcher = GlobBuilder::new(glob)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| {
                ToolError::invalid(
                    field,
                    format!(
                        "the glob `{pattern}` is not valid: {}; write it like `*.rs`, `src/**/*.rs` or `*.{{js,ts}}`",
                        e.kind()
                    ),
                )
            })?
            .compile_matcher();
        Ok(GlobFilter {
            matcher,
            by_name: !glob.contains('/'),
        })
    }

    /// Whether the file at `rel` (relative to the searched directory) matches.
    pub(crate) fn matches(&self, rel: &str) -> bool {
        if self.by_name {
            let name = rel.rsplit('/').next().unwrap_or(rel);
            self.matcher.is_match(name)
        } else {
            self.matcher.is_match(rel)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_without_a_slash_match_names_at_any_depth() {
        let g = GlobFilter::new("*.rs", "/pattern").unwrap();
        assert!(g.matches("main.rs"));
        assert!(g.matches("src/deep/lib.rs"));
        assert!(!g.matches("src/lib.rs.bak"));
    }

    #[test]
    fn globs_with_a_slash_match_relative_paths() {
        let g = GlobFilter::new("src/**/*.rs", "/pattern").unwrap();
        assert!(g.matches("src/lib.rs"));
        assert!(g.matches("src/a/b/c.rs"));
        assert!(!g.matches("tests/src/lib.rs"));
        let one = GlobFilter::new("src/*.rs", "/pattern").unwrap();
        assert!(one.matches("src/lib.rs"));
        assert!(!one.matches("src/a/lib.rs"), "`*` must not cross `/`");
        let dir = GlobFilter::new("./src/", "/pattern").unwrap();
        assert!(dir.matches("src/a/b.txt"));
        let any = GlobFilter::new("**/*.md", "/pattern").unwrap();
        assert!(any.matches("README.md"));
        assert!(any.matches("docs/x/y.md"));
    }

    #[test]
    fn braces_and_classes_work() {
        let g = GlobFilter::new("*.{js,ts}", "/include").unwrap();
        assert!(g.matches("a/b.ts") && g.matches("c.js") && !g.matches("d.rs"));
        let c = GlobFilter::new("file[0-9].txt", "/include").unwrap();
        assert!(c.matches("file3.txt") && !c.matches("filex.txt"));
    }

    /// (glob, expected fragment of the error) — every bad glob is an `InvalidArgs` naming the field.
    #[test]
    fn bad_globs_are_invalid_args() {
        let cases = [
            ("", "empty"),
            ("   ", "empty"),
            ("[abc", "not valid"),
            ("{a,b", "not valid"),
            ("../*.rs", "`..`"),
            ("src/../../etc/*", "`..`"),
            ("/etc/passwd", "absolute"),
        ];
        for (glob, want) in cases {
            match GlobFilter::new(glob, "/include") {
                Err(ToolError::InvalidArgs { path, message }) => {
                    assert_eq!(path, "/include", "{glob}");
                    assert!(message.contains(want), "{glob}: {message}");
                }
                other => panic!("{glob}: expected InvalidArgs, got {other:?}"),
            }
        }
    }

    #[test]
    fn paths_sort_by_component() {
        let mut v = vec!["a-b", "a/z", "a/b", "B", "a"];
        v.sort_by(|a, b| compare_paths(a, b));
        assert_eq!(v, ["B", "a", "a/b", "a/z", "a-b"]);
    }

    /// The byte comparison agrees with splitting on `/` for every pair of many small paths.
    #[test]
    fn byte_order_matches_component_order() {
        let alphabet = ["a", "b", "-", ".", "/", "é", "A"];
        let mut paths = vec![String::new()];
        for _ in 0..3 {
            let longer: Vec<String> = paths
                .iter()
                .flat_map(|p| alphabet.iter().map(move |c| format!("{p}{c}")))
                .collect();
            paths.extend(longer);
        }
        paths.retain(|p| {
            !p.is_empty() && !p.starts_with('/') && !p.ends_with('/') && !p.contains("//")
        });
        for a in &paths {
            for b in &paths {
                assert_eq!(
                    compare_paths(a, b),
                    a.split('/').cmp(b.split('/')),
                    "{a:?} vs {b:?}"
                );
            }
        }
    }
}
