//! `diff`: a unified patch, printed by libgit2 (`Diff::print` in patch format).
//!
//! libgit2 never runs `diff.external`, a `diff.<driver>.textconv` or `.command`: the patch is
//! always its own.

use git2::{Diff, DiffFindOptions, DiffOptions, Tree};
use serde_json::json;
use tool_core::ToolError;

use super::check::Rev;
use super::text::{files_json, patch_text, stats_line};
use super::{Done, Session, git_error};
use crate::git_ops::Plan;

const HINT: &str =
    "the diff was too long; pass paths to narrow the diff, or use show/diff on one file at a time";

/// Diff options with the call's literal pathspecs.
pub(crate) fn options(specs: &[String]) -> DiffOptions {
    let mut opts = DiffOptions::new();
    opts.disable_pathspec_match(true);
    for spec in specs {
        opts.pathspec(spec);
    }
    opts
}

/// Detects renames, as `git diff` does by default.
pub(crate) fn find_renames(diff: &mut Diff<'_>) -> Result<(), ToolError> {
    let mut find = DiffFindOptions::new();
    find.renames(true);
    diff.find_similar(Some(&mut find))
        .map_err(|e| git_error(e, "detect renames"))
}

pub(crate) fn run(s: &Session, plan: &Plan) -> Result<Done, ToolError> {
    let repo = &s.repo;
    let mut opts = options(&s.specs);
    let tree_of = |rev: Option<&str>| -> Result<Option<Tree<'_>>, ToolError> {
        match rev {
            Some(r) => Ok(Some(
                s.commit(r)?
                    .tree()
                    .map_err(|e| git_error(e, "read a tree"))?,
            )),
            None => match s.head_commit()? {
                Some(c) => Ok(Some(c.tree().map_err(|e| git_error(e, "read a tree"))?)),
                None => Ok(None),
            },
        }
    };
    let (mut diff, what) = match &plan.rev {
        Some(Rev::Range {
            from,
            to,
            symmetric,
        }) => {
            let to_commit = match to {
                Some(t) => s.commit(t)?,
                None => s.head_commit()?.ok_or_else(|| {
                    ToolError::Failed("The repository has no commits yet.".into())
                })?,
            };
            let from_commit = match from {
                Some(f) => s.commit(f)?,
                None => s.head_commit()?.ok_or_else(|| {
                    ToolError::Failed("The repository has no commits yet.".into())
                })?,
            };
            let base = if *symmetric {
                let id = repo
                    .merge_base(from_commit.id(), to_commit.id())
                    .map_err(|e| git_error(e, "find the merge base"))?;
                repo.find_commit(id)
                    .map_err(|e| git_error(e, "read the merge base"))?
            } else {
                from_commit
            };
            let old = base.tree().map_err(|e| git_error(e, "read a tree"))?;
            let new = to_commit.tree().map_err(|e| git_error(e, "read a tree"))?;
            let diff = repo
                .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))
                .map_err(|e| git_error(e, "compute the diff"))?;
            (
                diff,
                format!("Changes {}", plan.rev.as_ref().unwrap().display()),
            )
        }
        Some(Rev::One(rev)) => {
            let old = tree_of(Some(rev))?;
            if plan.cached {
                let diff = repo
                    .diff_tree_to_index(old.as_ref(), None, Some(&mut opts))
                    .map_err(|e| git_error(e, "compute the diff"))?;
                (diff, format!("Staged changes against {rev}"))
            } else {
                let diff = repo
                    .diff_tree_to_workdir_with_index(old.as_ref(), Some(&mut opts))
                    .map_err(|e| git_error(e, "compute the diff"))?;
                (diff, format!("Changes in the working tree against {rev}"))
            }
        }
        None if plan.cached => {
            let old = tree_of(None)?;
            let diff = repo
                .diff_tree_to_index(old.as_ref(), None, Some(&mut opts))
                .map_err(|e| git_error(e, "compute the diff"))?;
            (diff, "Staged changes (HEAD → index)".to_string())
        }
        None => {
            let diff = repo
                .diff_index_to_workdir(None, Some(&mut opts))
                .map_err(|e| git_error(e, "compute the diff"))?;
            (diff, "Unstaged changes (index → working tree)".to_string())
        }
    };
    find_renames(&mut diff)?;
    let (stats, stats_json) = stats_line(&diff)?;
    let (patch, stopped) = patch_text(&diff, &s.cancel, &|p| s.readable(p))?;
    let text = if diff.deltas().len() == 0 {
        let mut t = format!("{what}: no differences.\n");
        if plan.rev.is_none() && !plan.cached {
            t.push_str("Staged changes are not shown here; pass cached: true to see them.\n");
        }
        t
    } else {
        format!("{what}:\n{stats}\n{patch}")
    };
    Ok(Done::new(
        text,
        json!({
            "files": files_json(&diff),
            "stats": stats_json,
            "incomplete": stopped,
        }),
        HINT,
    ))
}
