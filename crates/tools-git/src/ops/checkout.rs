//! `checkout`: switch branches, detach HEAD, or restore files — never discarding uncommitted
//! work.
//!
//! Every checkout uses libgit2's SAFE strategy (never FORCE): files with local changes are left
//! alone when the target does not touch them, and a target that would overwrite them is
//! refused. Restoring `paths` is checked first against the status, because restoring a changed
//! file is exactly what would discard its changes. libgit2 runs no `post-checkout` hook and no
//! smudge filter driver.

use std::cell::RefCell;

use git2::build::CheckoutBuilder;
use git2::{
    BranchType, CheckoutNotificationType, Commit, ErrorCode, Object, Status, StatusOptions,
};
use serde_json::json;
use tool_core::ToolError;

use super::text::{short, subject};
use super::{Done, Session, git_error};
use crate::git_ops::Plan;

pub(crate) fn run(s: &Session, plan: &Plan) -> Result<Done, ToolError> {
    s.require_clean_state("check out")?;
    let rev = s.one_rev(plan.rev.as_ref());
    if !s.paths.is_empty() {
        return restore(s, rev);
    }
    match &plan.branch {
        Some(name) => switch(s, name, plan.create, rev),
        None => detach(s, rev.unwrap_or("HEAD")),
    }
}

/// Runs a SAFE checkout of `target` (a tree, or the index when `None`) limited to `specs`,
/// reporting the paths libgit2 refused to overwrite. Returns the updated paths.
fn safe_checkout(
    s: &Session,
    target: Option<&Object<'_>>,
    specs: &[String],
    recreate_missing: bool,
) -> Result<Vec<String>, ToolError> {
    // Before anything is written: every file this checkout could change, against the protected
    // paths (a branch that carries its own toolshed.toml must not replace the user's).
    let mut opts = git2::DiffOptions::new();
    opts.disable_pathspec_match(true);
    for spec in specs {
        opts.pathspec(spec);
    }
    let target_tree = match target {
        Some(obj) => Some(
            obj.peel_to_tree()
                .map_err(|e| git_error(e, "read the target tree"))?,
        ),
        None => None,
    };
    let diff = if specs.is_empty() {
        let head = s.head_commit()?.map(|c| c.tree()).transpose();
        let head = head.map_err(|e| git_error(e, "read HEAD's tree"))?;
        s.repo
            .diff_tree_to_tree(head.as_ref(), target_tree.as_ref(), Some(&mut opts))
    } else {
        match &target_tree {
            Some(tree) => s
                .repo
                .diff_tree_to_workdir_with_index(Some(tree), Some(&mut opts)),
            None => s.repo.diff_index_to_workdir(None, Some(&mut opts)),
        }
    }
    .map_err(|e| git_error(e, "compare the trees"))?;
    s.refuse_protected("check out", &super::diff_paths(&diff))?;
    let conflicts = RefCell::new(Vec::<String>::new());
    let updated = RefCell::new(Vec::<String>::new());
    let result = {
        let mut builder = CheckoutBuilder::new();
        builder
            .safe()
            .recreate_missing(recreate_missing)
            .disable_pathspec_match(true)
            .notify_on(CheckoutNotificationType::CONFLICT | CheckoutNotificationType::UPDATED)
            .notify(|kind, path, _, _, _| {
                let path = path
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if kind.contains(CheckoutNotificationType::CONFLICT) {
                    conflicts.borrow_mut().push(path);
                } else if kind.contains(CheckoutNotificationType::UPDATED) {
                    updated.borrow_mut().push(path);
                }
                true
            });
        for spec in specs {
            builder.path(spec.as_str());
        }
        match target {
            Some(obj) => s.repo.checkout_tree(obj, Some(&mut builder)),
            None => s.repo.checkout_index(None, Some(&mut builder)),
        }
    };
    let conflicts = conflicts.into_inner();
    match result {
        Ok(()) => Ok(updated.into_inner()),
        Err(e) if e.code() == ErrorCode::Conflict || !conflicts.is_empty() => {
            Err(ToolError::Failed(format!(
                "Checkout refused: it would overwrite local changes to {}. Nothing was changed. Commit them (add, then commit) or stash them first, then retry.",
                list(&conflicts)
            )))
        }
        Err(e) => Err(git_error(e, "check out")),
    }
}

fn list(paths: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut out = paths
        .iter()
        .take(SHOWN)
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        out.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    if out.is_empty() {
        out.push_str("some files");
    }
    out
}

fn switch(s: &Session, name: &str, create: bool, rev: Option<&str>) -> Result<Done, ToolError> {
    let repo = &s.repo;
    let existing = match repo.find_branch(name, BranchType::Local) {
        Ok(b) => Some(b),
        Err(e) if e.code() == ErrorCode::NotFound => None,
        Err(e) => return Err(git_error(e, &format!("look up the branch `{name}`"))),
    };
    let refname = format!("refs/heads/{name}");
    let head = s.head_commit()?;

    if create {
        if existing.is_some() {
            return Err(ToolError::Failed(format!(
                "A branch named `{name}` already exists; switch to it with checkout and branch `{name}` without `create`."
            )));
        }
        let target: Option<Commit<'_>> = match rev {
            Some(r) => Some(s.commit(r)?),
            None => head,
        };
        let Some(target) = target else {
            // Before the first commit, a new branch is just a new name for the unborn HEAD.
            repo.set_head(&refname)
                .map_err(|e| git_error(e, "switch branches"))?;
            return Ok(Done::new(
                format!("Switched to a new branch {name} (no commits yet).\n"),
                json!({"branch": name, "created": true, "commit": null}),
                "",
            ));
        };
        // Check out first, so a refusal leaves no new branch behind.
        safe_checkout(s, Some(target.as_object()), &[], false)?;
        repo.branch(name, &target, false)
            .map_err(|e| git_error(e, &format!("create the branch `{name}`")))?;
        repo.set_head(&refname)
            .map_err(|e| git_error(e, "switch branches"))?;
        return Ok(Done::new(
            format!(
                "Switched to a new branch {name} at {} ({}).\n",
                short(repo, target.id()),
                subject(&target)
            ),
            json!({"branch": name, "created": true, "commit": target.id().to_string()}),
            "",
        ));
    }

    let Some(branch) = existing else {
        return Err(ToolError::NotFound(format!(
            "There is no local branch `{name}`; branch lists the branches, and checkout with `create`: true makes a new one."
        )));
    };
    if branch.is_head() {
        return Ok(Done::new(
            format!("Already on {name}.\n"),
            json!({"branch": name, "created": false, "changed": false}),
            "",
        ));
    }
    let target = branch
        .get()
        .peel_to_commit()
        .map_err(|e| git_error(e, &format!("read the branch `{name}`")))?;
    safe_checkout(s, Some(target.as_object()), &[], false)?;
    repo.set_head(&refname)
        .map_err(|e| git_error(e, "switch branches"))?;
    let kept = super::tracked_changes(s)?;
    let mut text = format!(
        "Switched to branch {name} at {} ({}).\n",
        short(repo, target.id()),
        subject(&target)
    );
    if !kept.is_empty() {
        text.push_str(&format!("Local changes were kept: {}.\n", list(&kept)));
    }
    Ok(Done::new(
        text,
        json!({"branch": name, "created": false, "changed": true, "commit": target.id().to_string(), "kept_changes": kept}),
        "",
    ))
}

fn detach(s: &Session, rev: &str) -> Result<Done, ToolError> {
    let repo = &s.repo;
    let target = s.commit(rev)?;
    safe_checkout(s, Some(target.as_object()), &[], false)?;
    repo.set_head_detached(target.id())
        .map_err(|e| git_error(e, "detach HEAD"))?;
    Ok(Done::new(
        format!(
            "HEAD is now detached at {} ({}). Commits made here belong to no branch; checkout with `branch` and `create`: true keeps them on a new one.\n",
            short(repo, target.id()),
            subject(&target)
        ),
        json!({"detached": true, "commit": target.id().to_string()}),
        "",
    ))
}

/// Restores `paths` from `rev` (updating the index too, as `git checkout <rev> -- <paths>`)
/// or from the index, refusing when any of them has changes that would be lost.
fn restore(s: &Session, rev: Option<&str>) -> Result<Done, ToolError> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(false).disable_pathspec_match(true);
    for spec in &s.specs {
        opts.pathspec(spec);
    }
    let statuses = s
        .repo
        .statuses(Some(&mut opts))
        .map_err(|e| git_error(e, "read the status"))?;
    // From the index, only working-tree edits are at stake; from a commit, the staged versions
    // are overwritten too. A deleted file loses nothing by coming back.
    let at_stake = if rev.is_some() {
        Status::WT_MODIFIED
            | Status::WT_TYPECHANGE
            | Status::WT_RENAMED
            | Status::INDEX_NEW
            | Status::INDEX_MODIFIED
            | Status::INDEX_DELETED
            | Status::INDEX_RENAMED
            | Status::INDEX_TYPECHANGE
            | Status::CONFLICTED
    } else {
        Status::WT_MODIFIED | Status::WT_TYPECHANGE | Status::WT_RENAMED | Status::CONFLICTED
    };
    let dirty: Vec<String> = statuses
        .iter()
        .filter(|e| e.status().intersects(at_stake))
        .map(|e| String::from_utf8_lossy(e.path_bytes()).into_owned())
        .collect();
    if !dirty.is_empty() {
        return Err(ToolError::Failed(format!(
            "Checkout refused: restoring these paths would discard uncommitted changes to {}. This tool never throws work away; commit the changes (add, then commit) or stash them first, then retry.",
            list(&dirty)
        )));
    }
    let updated = match rev {
        Some(r) => {
            let commit = s.commit(r)?;
            safe_checkout(s, Some(commit.as_object()), &s.specs, true)?
        }
        None => safe_checkout(s, None, &s.specs, true)?,
    };
    let from = rev.unwrap_or("the index");
    let text = if updated.is_empty() {
        format!("Nothing to restore: the given paths already match {from}.\n")
    } else {
        format!(
            "Restored from {from} ({} file{}):\n{}\n",
            updated.len(),
            if updated.len() == 1 { "" } else { "s" },
            updated.join("\n")
        )
    };
    Ok(Done::new(
        text,
        json!({"restored": updated, "from": from}),
        "the list of restored files was too long",
    ))
}
