//! `add`: stage new, changed and deleted files under the given paths, like `git add <paths>`.
//!
//! libgit2 applies only its built-in filters (line endings, `ident`) while staging; a
//! `filter.<driver>.clean` command from the config is never run.

use git2::{ErrorCode, IndexAddOption, Status, StatusOptions};
use serde_json::json;
use tool_core::ToolError;

use super::repo::matches_literal;
use super::status::codes;
use super::{Done, Session, git_error};

pub(crate) fn run(s: &Session) -> Result<Done, ToolError> {
    let repo = &s.repo;
    let mut index = repo.index().map_err(|e| git_error(e, "read the index"))?;

    // Like git, a path that matches nothing is an error rather than a silent no-op.
    for path in &s.paths {
        let spec = path.strip_prefix(&s.root).unwrap_or("").to_string();
        if spec.is_empty() {
            continue;
        }
        let tracked = index.iter().any(|entry| {
            matches_literal(
                std::slice::from_ref(&spec),
                &String::from_utf8_lossy(&entry.path),
            )
        });
        if !tracked && !s.ws.exists(path)? {
            return Err(ToolError::NotFound(format!(
                "{path} matches no file in the working tree or the index; check the name with status or list_dir."
            )));
        }
    }

    // Staging reads a file into the object store, where a commit keeps it and a push sends
    // it: a file the policy keeps from git_operations is not staged (counted, not named, as
    // grep does), however wide the path that took it in (round 12: `add ["."]` staged
    // `secrets/key.txt` under `read(secrets/**)` = deny). When the paths hold such a file, the
    // files to stage are listed first and staged one by one by name.
    let skipped = match readable_files(s)? {
        Readable::All => {
            stage_paths(s, &mut index)?;
            Vec::new()
        }
        Readable::Some { readable, skipped } => {
            // libgit2's path callbacks are not safe to use here (git2 reads a matched pathspec
            // that libgit2 leaves null without one), so each file is staged by name.
            for (path, deleted) in &readable {
                let rel = std::path::Path::new(path);
                let result = if *deleted {
                    index.remove_path(rel)
                } else {
                    index.add_path(rel)
                };
                result.map_err(|e| git_error(e, "stage the files"))?;
            }
            skipped
        }
    };
    index.write().map_err(|e| git_error(e, "write the index"))?;

    // Report what is now staged under the paths.
    let mut opts = StatusOptions::new();
    opts.include_untracked(false)
        .renames_head_to_index(true)
        .disable_pathspec_match(true);
    for spec in &s.specs {
        opts.pathspec(spec);
    }
    let statuses = repo
        .statuses(Some(&mut opts))
        .map_err(|e| git_error(e, "read the status"))?;
    let staged_mask = Status::INDEX_NEW
        | Status::INDEX_MODIFIED
        | Status::INDEX_DELETED
        | Status::INDEX_RENAMED
        | Status::INDEX_TYPECHANGE;
    let mut lines = Vec::new();
    let mut staged = Vec::new();
    for entry in statuses.iter() {
        let st = entry.status();
        if !st.intersects(staged_mask) {
            continue;
        }
        let (x, _) = codes(st);
        let path = String::from_utf8_lossy(entry.path_bytes()).into_owned();
        lines.push(format!("{x}  {path}"));
        staged.push(json!({"path": path, "index": x.to_string()}));
    }
    let withheld = withheld_note(s, &skipped);
    let text = if lines.is_empty() {
        format!("Nothing new to stage: the given paths have no changes against HEAD.\n{withheld}")
    } else {
        format!(
            "Staged under the given paths ({} path{}):\n{}\n{withheld}Commit with operation `commit` and a message.\n",
            lines.len(),
            if lines.len() == 1 { "" } else { "s" },
            lines.join("\n")
        )
    };
    Ok(Done::new(
        text,
        json!({"staged": staged}),
        "the list of staged files was too long; run status with paths to see parts of it",
    ))
}

/// Stages every new, changed and deleted file under the call's paths, as `git add` does.
fn stage_paths(s: &Session, index: &mut git2::Index) -> Result<(), ToolError> {
    // New and changed files. Paths are literal (no glob matching); explicitly named ignored
    // files are an error, as with `git add`.
    index
        .add_all(
            s.specs.iter(),
            IndexAddOption::DEFAULT
                | IndexAddOption::DISABLE_PATHSPEC_MATCH
                | IndexAddOption::CHECK_PATHSPEC,
            None,
        )
        .map_err(|e| {
            if e.code() == ErrorCode::InvalidSpec {
                ToolError::Failed(format!(
                    "Nothing was staged: {}. Ignored files are staged only when the user removes them from .gitignore.",
                    e.message().trim_end_matches('.')
                ))
            } else {
                git_error(e, "stage the files")
            }
        })?;
    // Deleted tracked files, found through the status and filtered literally here, and
    // removed by name. (Not `update_all` with a callback: git2 reads the matched pathspec,
    // which libgit2 leaves null without one, and the process died of it: round 19, a
    // deleted tracked file and `add ["b"]`.)
    let mut options = git2::StatusOptions::new();
    options
        .include_untracked(false)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = s
        .repo
        .statuses(Some(&mut options))
        .map_err(|e| git_error(e, "find the deleted files"))?;
    let deleted: Vec<String> = statuses
        .iter()
        .filter(|e| e.status().contains(git2::Status::WT_DELETED))
        .filter_map(|e| e.path().ok().map(str::to_owned))
        .filter(|p| matches_literal(&s.specs, p))
        .collect();
    for path in deleted {
        index
            .remove_path(std::path::Path::new(&path))
            .map_err(|e| git_error(e, "stage the deletions"))?;
    }
    Ok(())
}

/// Whether every changed file under the call's paths may be read.
enum Readable {
    All,
    /// Some may not: the changed files that may (and whether each was deleted), and those
    /// left out.
    Some {
        readable: Vec<(String, bool)>,
        skipped: Vec<String>,
    },
}

/// Sorts the changed files under the call's paths by whether the policy lets git_operations
/// read them.
fn readable_files(s: &Session) -> Result<Readable, ToolError> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .disable_pathspec_match(true);
    for spec in &s.specs {
        opts.pathspec(spec);
    }
    let statuses = s
        .repo
        .statuses(Some(&mut opts))
        .map_err(|e| git_error(e, "read the status"))?;
    let worktree = Status::WT_NEW
        | Status::WT_MODIFIED
        | Status::WT_DELETED
        | Status::WT_RENAMED
        | Status::WT_TYPECHANGE;
    let mut readable = Vec::new();
    let mut skipped = Vec::new();
    for entry in statuses.iter() {
        if !entry.status().intersects(worktree) {
            continue;
        }
        let path = String::from_utf8_lossy(entry.path_bytes()).into_owned();
        if s.readable(&path) {
            readable.push((path, entry.status().contains(Status::WT_DELETED)));
        } else {
            skipped.push(path);
        }
    }
    if skipped.is_empty() {
        Ok(Readable::All)
    } else {
        Ok(Readable::Some { readable, skipped })
    }
}

/// A line saying how many files were left out and which rule kept them; empty when none.
fn withheld_note(s: &Session, skipped: &[String]) -> String {
    let Some(first) = skipped.first() else {
        return String::new();
    };
    // The reason, not the names: a rule that keeps a file from reading may mean its name too.
    let mut path = s.root.clone();
    for part in first.split('/') {
        if let Ok(p) = path.join(part) {
            path = p;
        }
    }
    let reason = s
        .policy
        .decide("git_operations", &[tool_core::Access::Read(path)])
        .reason;
    format!(
        "[{} file{} not staged: the policy keeps {} from git_operations ({reason})]\n",
        skipped.len(),
        if skipped.len() == 1 { "" } else { "s" },
        if skipped.len() == 1 { "it" } else { "them" },
    )
}
