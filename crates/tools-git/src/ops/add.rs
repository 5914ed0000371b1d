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
    // Deleted and changed tracked files, filtered literally here rather than by libgit2's glob
    // pathspecs.
    let specs = s.specs.clone();
    let mut only_ours = |path: &std::path::Path, _: &[u8]| -> i32 {
        if matches_literal(&specs, &path.to_string_lossy()) {
            0
        } else {
            1
        }
    };
    index
        .update_all(std::iter::empty::<&str>(), Some(&mut only_ours))
        .map_err(|e| git_error(e, "stage the deletions"))?;
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
    let text = if lines.is_empty() {
        "Nothing new to stage: the given paths have no changes against HEAD.\n".to_string()
    } else {
        format!(
            "Staged under the given paths ({} path{}):\n{}\nCommit with operation `commit` and a message.\n",
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
