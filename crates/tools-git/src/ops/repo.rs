//! Finding the repository, and keeping it inside the workspace.
//!
//! The repository is opened with `NO_SEARCH` at the workspace root, so libgit2 never walks up
//! into a parent directory. Only when the root holds no repository is one looked for inside the
//! workspace, on the way from the first of `paths` up to the root. Whatever opens, its working
//! tree, git directory and common directory must lie inside the workspace after resolving
//! symbolic links (a `.git` file or `core.worktree` pointing elsewhere is refused).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use git2::{Commit, ErrorCode, Repository, RepositoryOpenFlags, RepositoryState};
use tool_core::{CancellationToken, ToolError, Workspace, WsPath};

use super::check::Rev;
use super::git_error;
use crate::git_ops::Plan;

/// An open repository with the call's pathspecs.
pub(crate) struct Session {
    pub(crate) repo: Repository,
    /// The working tree's root, as a workspace path.
    pub(crate) root: WsPath,
    pub(crate) ws: Workspace,
    /// The call's paths as literal pathspecs relative to the working tree; empty means all.
    pub(crate) specs: Vec<String>,
    /// The call's paths as given (resolved).
    pub(crate) paths: Vec<WsPath>,
    pub(crate) cancel: CancellationToken,
    /// The call's policy, for the protected paths a working-tree change must not touch.
    pub(crate) policy: std::sync::Arc<tool_core::Policy>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("root", &self.root)
            .field("specs", &self.specs)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Opens the repository for `plan` and maps its paths to pathspecs.
    pub(crate) fn open(
        ws: &Workspace,
        plan: &Plan,
        policy: std::sync::Arc<tool_core::Policy>,
        cancel: CancellationToken,
    ) -> Result<Session, ToolError> {
        let ws_root = ws
            .local_root()
            .ok_or_else(super::no_local_workspace)?
            .to_path_buf();
        let (repo, root) = find(ws, &ws_root, plan.paths.first())?;
        let mut specs = Vec::new();
        let mut everything = false;
        for p in &plan.paths {
            // A path that leads out of the workspace through a symbolic link is refused here;
            // libgit2 itself would follow it.
            ws.exists(p)?;
            match p.strip_prefix(&root) {
                Some("") => everything = true,
                Some(rest) => specs.push(rest.to_string()),
                None => {
                    return Err(ToolError::Denied(format!(
                        "{p} is outside the repository, whose working tree is {root}; give paths inside it."
                    )));
                }
            }
        }
        if everything {
            specs.clear();
        }
        Ok(Session {
            repo,
            root,
            ws: ws.clone(),
            specs,
            paths: plan.paths.clone(),
            cancel,
            policy,
        })
    }

    /// Why the working-tree file `rel` (relative to the repository's root) must not be
    /// written by git: a protected path (Toolshed's configuration, `policy.protected_paths`) or
    /// a `.git` internal. Checked for every file a checkout, stash push or stash apply would
    /// change, before anything is written.
    pub(crate) fn protected(&self, rel: &str) -> Option<String> {
        // Lexically, as git names the file: a link on the way is libgit2's SAFE checkout's
        // business (it never writes through one), not a reason to refuse here.
        let mut path = self.root.clone();
        for part in rel.split('/') {
            match path.join(part) {
                Ok(p) => path = p,
                Err(_) => {
                    return Some(format!("`{rel}` is not a plain path inside the repository"));
                }
            }
        }
        if let Some(p) = self.policy.protected(&path) {
            return Some(format!("{path} is a protected path (`{p}`)"));
        }
        if !self.policy.allow_git_internals && path.is_git_internal() {
            return Some(format!("{path} is inside a .git directory"));
        }
        // The call was judged on the paths it named; every file it changes is judged too, so a
        // whole-tree checkout cannot rewrite what a rule such as `write(secrets/**)` refuses.
        // An `ask` was answered only for a path the call named itself.
        let verdict = self
            .policy
            .decide("git_operations", &[tool_core::Access::Write(path.clone())]);
        match verdict.decision {
            tool_core::Decision::Allow => None,
            tool_core::Decision::Ask if self.paths.contains(&path) => None,
            tool_core::Decision::Ask => Some(format!(
                "{path}, which the policy asks about ({}); name it in `paths` so that the user is asked",
                verdict.reason
            )),
            tool_core::Decision::Deny => Some(format!("{path} ({})", verdict.reason)),
        }
    }

    /// Whether the policy lets git_operations read the file `rel` (relative to the
    /// repository's root) without asking: diffs and commits shown print only such files.
    pub(crate) fn readable(&self, rel: &str) -> bool {
        let mut path = self.root.clone();
        for part in rel.split('/') {
            match path.join(part) {
                Ok(p) => path = p,
                Err(_) => return false,
            }
        }
        self.policy
            .decide("git_operations", &[tool_core::Access::Read(path)])
            .decision
            == tool_core::Decision::Allow
    }

    /// Refuses a working-tree change that would touch a protected path, naming it.
    pub(crate) fn refuse_protected(&self, what: &str, paths: &[String]) -> Result<(), ToolError> {
        let mut hits: Vec<String> = paths.iter().filter_map(|p| self.protected(p)).collect();
        // Files that together make a directory git's own by its shape (round 19: a branch
        // whose tree held `q/HEAD`, `q/objects/`, `q/refs/` and a `q/config`).
        if !self.policy.allow_git_internals {
            let written: Vec<WsPath> = paths
                .iter()
                .filter_map(|rel| {
                    rel.split('/')
                        .try_fold(self.root.clone(), |p, part| p.join(part).ok())
                })
                .collect();
            let refs: Vec<&WsPath> = written.iter().collect();
            if let Some(dir) = self.ws.git_dir_among(&refs) {
                hits.push(format!(
                    "`{dir}`, which it would shape like git's own directory (`HEAD` with `objects` and `refs`, or with `commondir`), a repository to git whose config runs programs"
                ));
            }
        }
        if hits.is_empty() {
            return Ok(());
        }
        Err(ToolError::Denied(format!(
            "Refused to {what}: it would change {}; nothing was changed. Check out or restore other paths, or ask the user to change these outside Toolshed.",
            hits.join("; ")
        )))
    }

    /// A line saying where the repository is, when it is not the workspace root.
    pub(crate) fn nested_note(&self) -> Option<String> {
        if self.root.is_root() {
            None
        } else {
            Some(format!(
                "Repository: {}/ (paths below are relative to it)",
                self.root
            ))
        }
    }

    /// The commit a revision names.
    pub(crate) fn commit(&self, rev: &str) -> Result<Commit<'_>, ToolError> {
        commit_of(&self.repo, rev)
    }

    /// The commit HEAD points at, or `None` before the first commit.
    pub(crate) fn head_commit(&self) -> Result<Option<Commit<'_>>, ToolError> {
        match self.repo.head() {
            Ok(head) => head
                .peel_to_commit()
                .map(Some)
                .map_err(|e| git_error(e, "read HEAD")),
            Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => Ok(None),
            Err(e) => Err(git_error(e, "read HEAD")),
        }
    }

    /// Refuses to change a repository in the middle of a merge, rebase or similar.
    pub(crate) fn require_clean_state(&self, doing: &str) -> Result<(), ToolError> {
        let state = self.repo.state();
        if state == RepositoryState::Clean {
            return Ok(());
        }
        Err(ToolError::Failed(format!(
            "Cannot {doing}: the repository is in the middle of {}. This tool does not finish or abort those; ask the user to complete it with git, then retry.",
            state_name(state)
        )))
    }

    /// The single revision of the call, refusing a range.
    pub(crate) fn one_rev<'p>(&self, rev: Option<&'p Rev>) -> Option<&'p str> {
        match rev {
            Some(Rev::One(r)) => Some(r.as_str()),
            _ => None,
        }
    }
}

/// Whether `path` equals one of `specs` or lies under one; empty `specs` match everything.
pub(crate) fn matches_literal(specs: &[String], path: &str) -> bool {
    specs.is_empty()
        || specs.iter().any(|s| {
            path == s
                || (path.len() > s.len() && path.starts_with(s.as_str()) && {
                    path.as_bytes()[s.len()] == b'/'
                })
        })
}

/// The commit a revision names, with sentences for the usual mistakes.
pub(crate) fn commit_of<'r>(repo: &'r Repository, rev: &str) -> Result<Commit<'r>, ToolError> {
    let object = repo.revparse_single(rev).map_err(|e| match e.code() {
        ErrorCode::UnbornBranch => ToolError::Failed(
            "The repository has no commits yet, so there is no HEAD to use; commit first.".into(),
        ),
        ErrorCode::NotFound | ErrorCode::InvalidSpec | ErrorCode::Ambiguous => {
            ToolError::NotFound(format!(
                "`{rev}` does not name a commit in this repository ({}); log lists commits and branch lists branches.",
                e.message().trim_end_matches('.')
            ))
        }
        _ => git_error(e, &format!("resolve `{rev}`")),
    })?;
    object.peel_to_commit().map_err(|_| {
        ToolError::Failed(format!(
            "`{rev}` names a {}, not a commit; give a commit, branch or tag.",
            object.kind().map(|k| k.str()).unwrap_or("object")
        ))
    })
}

fn state_name(state: RepositoryState) -> &'static str {
    match state {
        RepositoryState::Merge => "a merge",
        RepositoryState::Revert | RepositoryState::RevertSequence => "a revert",
        RepositoryState::CherryPick | RepositoryState::CherryPickSequence => "a cherry-pick",
        RepositoryState::Bisect => "a bisect",
        RepositoryState::Rebase
        | RepositoryState::RebaseInteractive
        | RepositoryState::RebaseMerge => "a rebase",
        RepositoryState::ApplyMailbox | RepositoryState::ApplyMailboxOrRebase => "a git am",
        RepositoryState::Clean => "nothing",
    }
}

/// Opens a repository exactly at `dir` (no search upwards), or `None` if there is none.
pub(crate) fn open_exact(dir: &Path) -> Result<Option<Repository>, ToolError> {
    match Repository::open_ext(
        dir,
        RepositoryOpenFlags::NO_SEARCH,
        std::iter::empty::<&OsStr>(),
    ) {
        Ok(repo) => Ok(Some(repo)),
        Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
        Err(e) => Err(git_error(e, "open the repository")),
    }
}

fn find(
    ws: &Workspace,
    ws_root: &Path,
    first_path: Option<&WsPath>,
) -> Result<(Repository, WsPath), ToolError> {
    if let Some(repo) = open_exact(ws_root)? {
        return confine(ws, ws_root, repo);
    }
    // A repository inside the workspace, found from the first path upwards (never above the
    // workspace root, which was tried first).
    let mut dir = first_path.cloned();
    while let Some(d) = dir {
        if d.is_root() {
            break;
        }
        if let Some(local) = ws.local_path(&d)
            && let Some(repo) = open_exact(&local)?
        {
            return confine(ws, ws_root, repo);
        }
        dir = d.parent();
    }
    // Nothing inside: say why, naming an enclosing repository if there is one.
    if let Ok(outer) = Repository::discover(ws_root) {
        let at = outer
            .workdir()
            .unwrap_or_else(|| outer.path())
            .display()
            .to_string();
        return Err(ToolError::Denied(format!(
            "The workspace ({}) is inside the git repository at {at}, not at its root; git_operations only works on a repository at the workspace root or inside the workspace. Open the workspace at the repository root ({at}) to use git here.",
            ws_root.display()
        )));
    }
    Err(ToolError::NotFound(format!(
        "There is no git repository at the workspace root ({}); create one with operation `init`, or pass `paths` inside a repository that lies in the workspace.",
        ws_root.display()
    )))
}

/// Accepts `repo` only if its working tree, git directory and common directory lie inside the
/// workspace; returns the working tree's root as a workspace path.
fn confine(
    ws: &Workspace,
    ws_root: &Path,
    repo: Repository,
) -> Result<(Repository, WsPath), ToolError> {
    let Some(workdir) = repo.workdir() else {
        return Err(ToolError::Failed(format!(
            "The repository at {} is bare (it has no working tree); git_operations works on repositories with a working tree.",
            repo.path().display()
        )));
    };
    let workdir = canonical(workdir)?;
    for (what, dir) in [
        ("working tree", workdir.clone()),
        ("git directory", canonical(repo.path())?),
        ("common git directory", canonical(repo.commondir())?),
    ] {
        if !dir.starts_with(ws_root) {
            return Err(ToolError::Denied(format!(
                "The repository's {what} is {}, outside the workspace ({}); git_operations only works on repositories that lie wholly inside the workspace (a `.git` file, `core.worktree` or linked worktree pointing elsewhere is refused). Open the workspace at the repository root.",
                dir.display(),
                ws_root.display()
            )));
        }
    }
    let rel: Vec<String> = workdir
        .strip_prefix(ws_root)
        .unwrap_or(Path::new(""))
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let root = if rel.is_empty() {
        ws.root_path()
    } else {
        ws.resolve(&rel.join("/"))?
    };
    Ok((repo, root))
}

// libgit2 reports the repository's directories as it found them; comparing them with the
// workspace roots needs their real location. Nothing is opened here.
#[allow(clippy::disallowed_methods)]
fn canonical(p: &Path) -> Result<PathBuf, ToolError> {
    std::fs::canonicalize(p).map_err(|e| {
        ToolError::Failed(format!(
            "Could not resolve the repository directory {}: {e}.",
            p.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_matching() {
        let specs = vec!["src".to_string(), "a[1].txt".to_string()];
        assert!(matches_literal(&specs, "src"));
        assert!(matches_literal(&specs, "src/a.rs"));
        assert!(!matches_literal(&specs, "srcx/a.rs"));
        assert!(!matches_literal(&specs, "sr"));
        assert!(matches_literal(&specs, "a[1].txt"));
        assert!(!matches_literal(&specs, "a1.txt"));
        assert!(matches_literal(&[], "anything"));
    }
}
