//! Ignore files (`.gitignore`, `.ignore`, `.git/info/exclude`), read through the workspace and
//! weighed in ripgrep's order.
//!
//! Which files a walk lists tells which lines the ignore files hold, so an ignore file is read
//! only as `file_read` would read it. The `ignore` crate is never left to open one itself: it
//! would follow `.gitignore -> /etc/passwd` (or `../../secret`, or a FIFO, on which it waits
//! forever). Here every ignore file is opened through the [`Workspace`]
//! (`openat2(RESOLVE_BENEATH)`), and applied only when:
//!
//! - it, and each directory between it and the directory it governs (`.git`, `.git/info`), is a
//!   plain entry and not a symbolic link, even one that stays inside: the policy judges paths, and
//!   a link could lend a readable name to a file the rules refuse (git itself stopped following
//!   in-tree `.gitignore` links in 2.32);
//! - it is a regular file of at most [`MAX_IGNORE_FILE_BYTES`];
//! - the policy lets the calling tool read it ([`ReadGate`]).
//!
//! One that fails is skipped and reported under its own name, never its target's. A `.git` file
//! (a worktree's) names its git directory; its `commondir`'s `info/exclude` is applied, as ripgrep
//! does, when both resolve inside the workspace, and silently not otherwise, since a worktree's
//! git directory normally lives outside it. The user's global git configuration and excludes file
//! are never read.
//!
//! Precedence is ripgrep's: the deepest `.ignore` with an opinion on a path decides; failing
//! that, the deepest `.gitignore`; failing that, the deepest `.git/info/exclude`.

use std::path::Path;
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use tool_core::workspace::FileKind;
use tool_core::{Access, Decision, Policy, ToolError, Workspace, WsPath};

use crate::problems::Problems;

/// The largest ignore file read; a bigger one is skipped (as if absent) and reported.
const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// The largest `.git` or `commondir` file read (each holds one path).
const MAX_GIT_POINTER_BYTES: u64 = 4096;

/// Who reads the ignore files: the policy and the tool it judges, so that an ignore file is
/// applied only if the tool could read it.
#[derive(Clone, Copy)]
pub(crate) struct ReadGate<'a> {
    pub(crate) policy: &'a Policy,
    pub(crate) tool: &'a str,
}

impl ReadGate<'_> {
    /// `Err(reason)` unless the policy allows reading `path` outright (an `ask` is a no, since
    /// nobody is asked in the middle of a walk).
    fn check(&self, path: &WsPath) -> Result<(), String> {
        let verdict = self.policy.decide(self.tool, &[Access::Read(path.clone())]);
        if verdict.decision == Decision::Allow {
            Ok(())
        } else {
            Err(verdict.reason)
        }
    }
}

/// The rules one directory contributes.
#[derive(Debug, Default)]
pub(crate) struct DirRules {
    ignore: Option<Gitignore>,
    gitignore: Option<Gitignore>,
    exclude: Option<Gitignore>,
}

impl DirRules {
    /// Reads the ignore files of `dir`, with matchers rooted at `root` (the form of the paths
    /// they will be asked about: the real path on the local backend, `dir.rel()` otherwise).
    /// Problems are added to `problems`; what cannot be applied is left out.
    pub(crate) fn load(
        ws: &Workspace,
        gate: ReadGate<'_>,
        dir: &WsPath,
        root: &Path,
        problems: &mut Problems,
    ) -> DirRules {
        DirRules {
            ignore: load_file(ws, gate, dir, &[".ignore"], root, problems),
            gitignore: load_file(ws, gate, dir, &[".gitignore"], root, problems),
            exclude: load_exclude(ws, gate, dir, root, problems),
        }
    }

    fn is_empty(&self) -> bool {
        self.ignore.is_none() && self.gitignore.is_none() && self.exclude.is_none()
    }
}

/// The rules that govern the entries of one directory: those of every directory from the walk's
/// top (the workspace root) down to it, deepest last.
#[derive(Debug, Clone, Default)]
pub(crate) struct Chain(Vec<Arc<DirRules>>);

impl Chain {
    /// This chain with `rules` (of a directory one level down) appended.
    pub(crate) fn with(&self, rules: DirRules) -> Chain {
        let mut next = self.clone();
        if !rules.is_empty() {
            next.0.push(Arc::new(rules));
        }
        next
    }

    /// Whether the entry at `path` (in the form the matchers are rooted in) is ignored.
    pub(crate) fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        if self.0.is_empty() {
            return false;
        }
        let deepest = |pick: fn(&DirRules) -> Option<&Gitignore>| {
            self.0
                .iter()
                .rev()
                .filter_map(|r| pick(r))
                .map(|g| g.matched(path, is_dir))
                .find(|m| !m.is_none())
        };
        let decided = deepest(|r| r.ignore.as_ref())
            .or_else(|| deepest(|r| r.gitignore.as_ref()))
            .or_else(|| deepest(|r| r.exclude.as_ref()));
        matches!(decided, Some(Match::Ignore(_)))
    }
}

/// The chain for `base`: the rules of the workspace root and of each directory down to `base`,
/// or `None` when `base` itself, or a directory above it, is ignored (a walk of it finds
/// nothing, as a walk from the root would not enter it).
pub(crate) fn chain_to(
    ws: &Workspace,
    gate: ReadGate<'_>,
    base: &WsPath,
    root_for: &dyn Fn(&WsPath) -> std::path::PathBuf,
    problems: &mut Problems,
) -> Option<Chain> {
    let mut dirs = vec![base.clone()];
    let mut cur = base.parent();
    while let Some(dir) = cur {
        cur = dir.parent();
        dirs.push(dir);
    }
    dirs.reverse();
    let mut chain = Chain::default();
    for (i, dir) in dirs.iter().enumerate() {
        let root = root_for(dir);
        if i > 0 && chain.ignores(&root, true) {
            return None;
        }
        chain = chain.with(DirRules::load(ws, gate, dir, &root, problems));
    }
    Some(chain)
}

/// Why a found ignore file is not applied, as a problem line: its own name, never a target.
fn linked(file: &WsPath) -> String {
    format!(
        "{file} is a symbolic link, so its rules were not applied (make it a regular file for them to apply)"
    )
}

/// What `at/comps…` is, without following links: `Ok(None)` when absent, `Ok(Some(kind))` of the
/// last component, `Err(problem)` when a component is a link or cannot be listed. Each directory
/// on the way is listed through the workspace, which reports links as links.
fn plain_kind(
    ws: &Workspace,
    at: &WsPath,
    comps: &[&str],
) -> Result<Option<(WsPath, FileKind)>, String> {
    let mut dir = at.clone();
    for (i, comp) in comps.iter().enumerate() {
        let entries = ws.read_dir(&dir).map_err(|e| format!("{dir}: {e}"))?;
        let Some(entry) = entries.iter().find(|e| e.name == *comp) else {
            return Ok(None);
        };
        let path = dir.join(comp).map_err(|e| format!("{dir}: {e}"))?;
        match entry.kind {
            FileKind::Symlink => return Err(linked(&path)),
            kind if i + 1 == comps.len() => return Ok(Some((path, kind))),
            FileKind::Dir => dir = path,
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// Reads `at/comps…` if it is a plain regular file that the gate lets through; `None` (with a
/// problem line when something was wrong) otherwise.
fn read_plain(
    ws: &Workspace,
    gate: ReadGate<'_>,
    at: &WsPath,
    comps: &[&str],
    max_bytes: u64,
    problems: &mut Problems,
) -> Option<Vec<u8>> {
    // Most directories have no ignore files: one lookup says so without listing the directory.
    let mut lexical = at.clone();
    for comp in comps {
        lexical = lexical.join(comp).ok()?;
    }
    if let Err(ToolError::NotFound(_)) = ws.metadata(&lexical) {
        return None;
    }
    let file = match plain_kind(ws, at, comps) {
        Ok(Some((file, FileKind::File))) => file,
        // A directory of that name is no ignore file, as in git.
        Ok(Some((_, FileKind::Dir))) | Ok(None) => return None,
        Ok(Some((file, _))) => {
            problems.add(format!(
                "{file} is not a regular file, so it was not read as an ignore file"
            ));
            return None;
        }
        Err(problem) => {
            problems.add(problem);
            return None;
        }
    };
    if let Err(reason) = gate.check(&file) {
        // The reason, not the name: a rule that refuses reading a file may mean its name too.
        problems.add(format!("an ignore file was not applied: {reason}"));
        return None;
    }
    match ws.read_to_end(&file, max_bytes) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            problems.add(format!("{file}: {e}"));
            None
        }
    }
}

/// The `.gitignore` of `dir` alone (for `list_dir`), under the same conditions as every other.
pub(crate) fn load_gitignore(
    ws: &Workspace,
    gate: ReadGate<'_>,
    dir: &WsPath,
    root: &Path,
    problems: &mut Problems,
) -> Option<Gitignore> {
    load_file(ws, gate, dir, &[".gitignore"], root, problems)
}

/// Builds a matcher from the ignore file `at/comps…`, rooted at `root`.
fn load_file(
    ws: &Workspace,
    gate: ReadGate<'_>,
    at: &WsPath,
    comps: &[&str],
    root: &Path,
    problems: &mut Problems,
) -> Option<Gitignore> {
    let bytes = read_plain(ws, gate, at, comps, MAX_IGNORE_FILE_BYTES, problems)?;
    let mut builder = GitignoreBuilder::new(root);
    for line in String::from_utf8_lossy(&bytes).lines() {
        // A bad line is skipped, as git does.
        let _ = builder.add_line(None, line);
    }
    match builder.build() {
        Ok(ig) => Some(ig),
        Err(e) => {
            problems.add(format!("{at}: {e}"));
            None
        }
    }
}

/// The `.git/info/exclude` of `dir`, when `dir` holds a repository: a `.git` directory's own, or
/// the one of the common git directory a `.git` file leads to (inside the workspace only).
fn load_exclude(
    ws: &Workspace,
    gate: ReadGate<'_>,
    dir: &WsPath,
    root: &Path,
    problems: &mut Problems,
) -> Option<Gitignore> {
    let dot_git = dir.join(".git").ok()?;
    if let Err(ToolError::NotFound(_)) = ws.metadata(&dot_git) {
        return None;
    }
    match plain_kind(ws, dir, &[".git"]) {
        Ok(Some((_, FileKind::Dir))) => {
            load_file(ws, gate, dir, &[".git", "info", "exclude"], root, problems)
        }
        Ok(Some((_, FileKind::File))) => {
            let exclude = linked_exclude(ws, gate, dir, problems)?;
            let (parent, name) = (exclude.parent()?, exclude.file_name()?.to_string());
            load_file(ws, gate, &parent, &[&name], root, problems)
        }
        Ok(_) => None,
        Err(problem) => {
            problems.add(problem);
            None
        }
    }
}

/// The exclude file a `.git` file in `dir` leads to: its `gitdir:` line names the git directory,
/// whose `commondir` names the common one holding `info/exclude` (ripgrep applies none without a
/// `commondir`). Each step is resolved by [`Workspace::resolve`], so every directory on the way
/// is judged where it really is; `None` when one leads out of the workspace.
fn linked_exclude(
    ws: &Workspace,
    gate: ReadGate<'_>,
    dir: &WsPath,
    problems: &mut Problems,
) -> Option<WsPath> {
    let first_line = |at: &WsPath, name: &str, problems: &mut Problems| {
        let bytes = read_plain(ws, gate, at, &[name], MAX_GIT_POINTER_BYTES, problems)?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        text.lines().next().map(|l| l.trim_end().to_string())
    };
    let pointer = first_line(dir, ".git", problems)?;
    let commondir = locate(ws, dir, pointer.strip_prefix("gitdir: ")?, "commondir")?;
    let git_dir = commondir.parent()?;
    let common = first_line(&git_dir, "commondir", problems)?;
    locate(ws, &git_dir, &common, "info/exclude")
}

/// The file `tail` under `target` (absolute, or relative to `from`), confined, or `None` if it
/// leaves the workspace (through `..`, an absolute path or a link: [`Workspace::resolve`]
/// judges, and resolves every directory but the last component to where it really is).
fn locate(ws: &Workspace, from: &WsPath, target: &str, tail: &str) -> Option<WsPath> {
    if target.is_empty() {
        return None;
    }
    let joined = if target.starts_with('/') {
        format!("{target}/{tail}")
    } else {
        format!("{from}/{target}/{tail}")
    };
    ws.resolve(&joined).ok()
}
