//! The tree walk `grep` and `find_files` share, and the glob filter both accept.
//!
//! Both walkers skip what ripgrep skips by default: hidden names, `.git`, paths matched by
//! `.gitignore` and `.ignore` files (with or without a git repository), symbolic links (never
//! followed) and anything that is not a regular file. Neither reads `.gitignore` files above the
//! workspace root or the user's global git configuration, so results do not depend on the machine.
//!
//! - On the local backend the walk is ripgrep's own parallel walker ([`ignore::WalkBuilder`]),
//!   rooted at the real directory. Every path it yields is mapped back to a [`WsPath`], so file
//!   *contents* are still opened through the workspace (`openat2(RESOLVE_BENEATH)`).
//! - On any other backend (a virtual filesystem) the walk is a recursive
//!   [`Workspace::read_dir`], with ignore files read through the workspace.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use globset::{GlobBuilder, GlobMatcher};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};
use tool_core::workspace::FileKind;
use tool_core::{CancellationToken, ToolError, Workspace, WsPath};

/// The ignore files honoured in every directory, in increasing precedence.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// The largest ignore file read; a bigger one is skipped (as if absent) and reported.
const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// How many problems are kept as examples for the model.
const PROBLEM_EXAMPLES: usize = 3;

/// One regular file found by a walk.
#[derive(Debug, Clone)]
pub(crate) struct WalkedFile {
    /// The file, confined.
    pub(crate) path: WsPath,
    /// Its path relative to the directory walked, `/`-separated.
    pub(crate) rel: String,
}

/// Things that went wrong on the way, counted, with a few examples.
#[derive(Debug, Default, Clone)]
pub(crate) struct Problems {
    /// How many.
    pub(crate) count: usize,
    /// The first few, as `path: reason`.
    pub(crate) examples: Vec<String>,
}

impl Problems {
    pub(crate) fn add(&mut self, what: String) {
        self.count += 1;
        if self.examples.len() < PROBLEM_EXAMPLES {
            self.examples.push(what);
        }
    }

    fn merge(&mut self, other: Problems) {
        self.count += other.count;
        for e in other.examples {
            if self.examples.len() < PROBLEM_EXAMPLES {
                self.examples.push(e);
            }
        }
    }

    /// A sentence for the output, or `None` when nothing went wrong.
    pub(crate) fn notice(&self, what: &str) -> Option<String> {
        if self.count == 0 {
            return None;
        }
        Some(format!(
            "[{} {what} could not be read and were skipped, e.g. {}]",
            self.count,
            self.examples.join("; ")
        ))
    }
}

/// The result of a walk: regular files sorted by path, plus what could not be read.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    pub(crate) files: Vec<WalkedFile>,
    pub(crate) problems: Problems,
}

/// Finds every regular file under `base` that `keep(rel)` accepts (`rel` is the path relative to
/// `base`), skipping hidden, ignored and linked entries. The result is sorted by path, component
/// by component, so the output never depends on thread timing.
pub(crate) fn files_under(
    ws: &Workspace,
    base: &WsPath,
    keep: &(dyn Fn(&str) -> bool + Sync),
    cancel: &CancellationToken,
) -> Result<Walk, ToolError> {
    let mut walk = match ws.local_path(base) {
        Some(dir) => walk_local(ws, base, &dir, keep, cancel)?,
        None => walk_virtual(ws, base, keep, cancel)?,
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

/// The ignore files of the directories from the workspace root down to `base`'s parent, read
/// through the workspace. The walkers read the ones at and below `base` themselves; these are the
/// ones above it (never above the root, unlike ripgrep's own parent lookup).
fn ancestor_ignores(
    ws: &Workspace,
    base: &WsPath,
    root_for: &dyn Fn(&WsPath) -> PathBuf,
    problems: &mut Problems,
) -> Vec<Gitignore> {
    let mut dirs = Vec::new();
    let mut cur = base.parent();
    while let Some(dir) = cur {
        cur = dir.parent();
        dirs.push(dir);
    }
    dirs.reverse();
    let mut out = Vec::new();
    for dir in dirs {
        for name in IGNORE_FILES {
            if let Some(ig) = load_ignore(ws, &dir, name, &root_for(&dir), problems) {
                out.push(ig);
            }
        }
    }
    out
}

/// Builds a matcher from `dir/name` read through the workspace, rooted at `root` (the path the
/// walker's candidates are matched against). Absent files give `None`; unreadable ones are
/// reported and skipped.
pub(crate) fn load_ignore(
    ws: &Workspace,
    dir: &WsPath,
    name: &str,
    root: &Path,
    problems: &mut Problems,
) -> Option<Gitignore> {
    let file = dir.join(name).ok()?;
    match ws.metadata(&file) {
        Ok(meta) if meta.kind == FileKind::File => {}
        Ok(_) | Err(ToolError::NotFound(_)) => return None,
        Err(e) => {
            problems.add(format!("{file}: {e}"));
            return None;
        }
    }
    let bytes = match ws.read_to_end(&file, MAX_IGNORE_FILE_BYTES) {
        Ok(b) => b,
        Err(e) => {
            problems.add(format!("{file}: {e}"));
            return None;
        }
    };
    let mut builder = GitignoreBuilder::new(root);
    for line in String::from_utf8_lossy(&bytes).lines() {
        // A bad line is skipped, as git does.
        let _ = builder.add_line(None, line);
    }
    match builder.build() {
        Ok(ig) => Some(ig),
        Err(e) => {
            problems.add(format!("{file}: {e}"));
            None
        }
    }
}

fn ignored_by(ignores: &[Gitignore], path: &Path, is_dir: bool) -> bool {
    // Later (deeper) files take precedence: the first one with an opinion, from the end, wins.
    for ig in ignores.iter().rev() {
        let m = ig.matched_path_or_any_parents(path, is_dir);
        if m.is_ignore() {
            return true;
        }
        if m.is_whitelist() {
            return false;
        }
    }
    false
}

// ---------------------------------------------------------------------------------------------
// The local backend: ripgrep's parallel walker.

fn walk_local(
    ws: &Workspace,
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
    let parents: Arc<[Gitignore]> = ancestor_ignores(
        ws,
        base,
        &|d: &WsPath| ws.local_path(d).unwrap_or_default(),
        &mut problems,
    )
    .into();

    let mut builder = WalkBuilder::new(dir);
    builder
        .follow_links(false)
        .hidden(true)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .parents(false);
    builder.filter_entry(move |entry| {
        if entry.depth() == 0 {
            return true;
        }
        if entry.file_name() == ".git" {
            return false;
        }
        parents.is_empty()
            || !ignored_by(
                &parents,
                entry.path(),
                entry.file_type().is_some_and(|t| t.is_dir()),
            )
    });

    let shared = Shared {
        base,
        dir,
        keep,
        cancel,
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
    base: &'a WsPath,
    dir: &'a Path,
    keep: &'a (dyn Fn(&str) -> bool + Sync),
    cancel: &'a CancellationToken,
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
        // Only regular files: links are not followed, and devices and FIFOs are never read.
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return WalkState::Continue;
        }
        let Ok(rel) = entry.path().strip_prefix(self.shared.dir) else {
            return WalkState::Continue;
        };
        let Some(rel) = rel.to_str() else {
            self.local.problems.add(format!(
                "{}: the name is not valid UTF-8",
                entry.path().display()
            ));
            return WalkState::Continue;
        };
        if rel.is_empty() {
            // The walk root itself is a file; the callers handle files before walking.
            return WalkState::Continue;
        }
        if !(self.shared.keep)(rel) {
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
    let mut ignores = ancestor_ignores(ws, base, &rel_root, &mut walk.problems);
    let mut stack = Walker {
        ws,
        keep,
        cancel,
        walk: &mut walk,
    };
    stack.dir(base, "", &mut ignores, 0)?;
    Ok(walk)
}

/// Deeper than this, a virtual tree is not descended into (it can only be a loop or an attack).
const MAX_DEPTH: usize = 256;

struct Walker<'a> {
    ws: &'a Workspace,
    keep: &'a (dyn Fn(&str) -> bool + Sync),
    cancel: &'a CancellationToken,
    walk: &'a mut Walk,
}

impl Walker<'_> {
    fn dir(
        &mut self,
        dir: &WsPath,
        prefix: &str,
        ignores: &mut Vec<Gitignore>,
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
        let before = ignores.len();
        for name in IGNORE_FILES {
            if entries
                .iter()
                .any(|e| e.name == name && e.kind == FileKind::File)
                && let Some(ig) = load_ignore(
                    self.ws,
                    dir,
                    name,
                    Path::new(dir.rel()),
                    &mut self.walk.problems,
                )
            {
                ignores.push(ig);
            }
        }
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
            if ignored_by(ignores, Path::new(child.rel()), is_dir) {
                continue;
            }
            let rel = format!("{prefix}{}", entry.name);
            if is_dir {
                self.dir(&child, &format!("{rel}/"), ignores, depth + 1)?;
            } else if (self.keep)(&rel) {
                self.walk.files.push(WalkedFile { path: child, rel });
            }
        }
        ignores.truncate(before);
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

    #[test]
    fn problems_keep_a_few_examples() {
        let mut p = Problems::default();
        for i in 0..10 {
            p.add(format!("f{i}: denied"));
        }
        assert_eq!(p.count, 10);
        assert_eq!(p.examples.len(), PROBLEM_EXAMPLES);
        assert!(p.notice("files").unwrap().starts_with("[10 files"));
        assert!(Problems::default().notice("files").is_none());
    }
}
