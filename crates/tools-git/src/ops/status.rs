//! `status`: like `git status --short --branch`.

use git2::{Branch, ErrorCode, Repository, Status, StatusOptions};
use serde_json::{Value, json};
use tool_core::ToolError;

use super::text::{MAX_STRUCTURED, short};
use super::{Done, Session, check_cancel, git_error};

pub(crate) fn run(s: &Session) -> Result<Done, ToolError> {
    let (branch_line, branch_json) = branch_line(&s.repo)?;
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(false)
        .include_ignored(false)
        .renames_head_to_index(true)
        // Paths are literal: a file named `*.rs` must not select every Rust file.
        .disable_pathspec_match(true);
    for spec in &s.specs {
        opts.pathspec(spec);
    }
    let statuses = s
        .repo
        .statuses(Some(&mut opts))
        .map_err(|e| git_error(e, "read the status"))?;

    let mut text = format!("## {branch_line}\n");
    // As in `git status --short`: changes to tracked files first, then untracked ones.
    let mut untracked = String::new();
    let mut entries = Vec::new();
    for entry in statuses.iter() {
        check_cancel(&s.cancel)?;
        let st = entry.status();
        if st.is_ignored() || st.is_empty() {
            continue;
        }
        let (x, y) = codes(st);
        let mut path = String::from_utf8_lossy(entry.path_bytes()).into_owned();
        // For a rename staged in the index, the entry's own path is the old one.
        let renamed = entry.head_to_index().filter(|_| st.is_index_renamed());
        let renamed_from = renamed.as_ref().and_then(|d| {
            let old = d.old_file().path()?.to_string_lossy().into_owned();
            if let Some(new) = d.new_file().path() {
                path = new.to_string_lossy().into_owned();
            }
            Some(old)
        });
        match &renamed_from {
            Some(old) => text.push_str(&format!("{x}{y} {old} -> {path}\n")),
            None if x == '?' => untracked.push_str(&format!("?? {path}\n")),
            None => text.push_str(&format!("{x}{y} {path}\n")),
        }
        if entries.len() < MAX_STRUCTURED {
            entries.push(json!({
                "path": path,
                "renamed_from": renamed_from,
                "index": x.to_string(),
                "worktree": y.to_string(),
            }));
        }
    }
    text.push_str(&untracked);
    let clean = statuses.iter().all(|e| e.status().is_ignored());
    if clean {
        text.push_str(if s.specs.is_empty() {
            "Nothing to commit: the working tree is clean.\n"
        } else {
            "Nothing changed under the given paths.\n"
        });
    }
    Ok(Done::new(
        text,
        json!({
            "branch": branch_json,
            "clean": clean,
            "entries": entries,
            "count": statuses.len(),
        }),
        "the status was too long; pass paths to narrow it",
    ))
}

/// The two-letter `XY` code of `git status --short`.
pub(crate) fn codes(st: Status) -> (char, char) {
    if st.is_conflicted() {
        return ('U', 'U');
    }
    let index = Status::INDEX_NEW
        | Status::INDEX_MODIFIED
        | Status::INDEX_DELETED
        | Status::INDEX_RENAMED
        | Status::INDEX_TYPECHANGE;
    if st.is_wt_new() && !st.intersects(index) {
        return ('?', '?');
    }
    let x = if st.is_index_new() {
        'A'
    } else if st.is_index_modified() {
        'M'
    } else if st.is_index_deleted() {
        'D'
    } else if st.is_index_renamed() {
        'R'
    } else if st.is_index_typechange() {
        'T'
    } else {
        ' '
    };
    let y = if st.is_wt_modified() {
        'M'
    } else if st.is_wt_deleted() {
        'D'
    } else if st.is_wt_typechange() {
        'T'
    } else if st.is_wt_renamed() {
        'R'
    } else {
        ' '
    };
    (x, y)
}

/// `main...origin/main [ahead 1]`, `HEAD (detached at abc1234)` or `No commits yet on main`.
pub(crate) fn branch_line(repo: &Repository) -> Result<(String, Value), ToolError> {
    let head = match repo.head() {
        Ok(head) => head,
        Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => {
            let name = repo
                .find_reference("HEAD")
                .ok()
                .and_then(|h| h.symbolic_target().ok().flatten().map(str::to_string))
                .map(|t| t.trim_start_matches("refs/heads/").to_string())
                .unwrap_or_else(|| "HEAD".to_string());
            return Ok((
                format!("No commits yet on {name}"),
                json!({"name": name, "unborn": true, "detached": false}),
            ));
        }
        Err(e) => return Err(git_error(e, "read HEAD")),
    };
    let target = head.target();
    if !head.is_branch() {
        let at = target.map(|t| short(repo, t)).unwrap_or_default();
        return Ok((
            format!("HEAD (detached at {at})"),
            json!({"name": null, "detached": true, "commit": target.map(|t| t.to_string())}),
        ));
    }
    let name = head.shorthand().unwrap_or("HEAD").to_string();
    let branch = Branch::wrap(head);
    let mut line = name.clone();
    let mut upstream_json = Value::Null;
    if let Ok(up) = branch.upstream() {
        let up_name = up.name().ok().flatten().unwrap_or("upstream").to_string();
        line.push_str(&format!("...{up_name}"));
        if let (Some(local), Some(remote)) = (target, up.get().target()) {
            let (ahead, behind) = repo.graph_ahead_behind(local, remote).unwrap_or((0, 0));
            match (ahead, behind) {
                (0, 0) => {}
                (a, 0) => line.push_str(&format!(" [ahead {a}]")),
                (0, b) => line.push_str(&format!(" [behind {b}]")),
                (a, b) => line.push_str(&format!(" [ahead {a}, behind {b}]")),
            }
            upstream_json = json!({"name": up_name, "ahead": ahead, "behind": behind});
        }
    }
    Ok((
        line,
        json!({
            "name": name,
            "detached": false,
            "commit": target.map(|t| t.to_string()),
            "upstream": upstream_json,
        }),
    ))
}
