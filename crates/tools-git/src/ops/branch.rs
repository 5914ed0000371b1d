//! `branch`: list branches, create one, or delete one.

use git2::{BranchType, ErrorCode};
use serde_json::json;
use tool_core::ToolError;

use super::text::{MAX_STRUCTURED, short, subject};
use super::{Done, Session, check_cancel, git_error};
use crate::git_ops::Plan;

pub(crate) fn run(s: &Session, plan: &Plan) -> Result<Done, ToolError> {
    match &plan.branch {
        Some(name) if plan.create => create(s, name, s.one_rev(plan.rev.as_ref())),
        Some(name) if plan.delete => delete(s, name, plan.force),
        _ => list(s),
    }
}

/// Deletes a local branch like `git branch -d` (`-D` with `force`): never the current branch,
/// and without `force` only when its tip is merged into its upstream, or into HEAD when it has
/// none.
fn delete(s: &Session, name: &str, force: bool) -> Result<Done, ToolError> {
    let repo = &s.repo;
    let mut branch = match repo.find_branch(name, BranchType::Local) {
        Ok(b) => b,
        Err(e) if e.code() == ErrorCode::NotFound => {
            return Err(ToolError::NotFound(format!(
                "There is no local branch named `{name}`; list the branches with operation `branch` (remote branches cannot be deleted here)."
            )));
        }
        Err(e) => return Err(git_error(e, &format!("find the branch `{name}`"))),
    };
    if branch.is_head() {
        return Err(ToolError::Failed(format!(
            "`{name}` is the current branch, and the branch you are on cannot be deleted; switch to another one with checkout first."
        )));
    }
    let tip = branch
        .get()
        .peel_to_commit()
        .map_err(|e| git_error(e, &format!("read the commit of `{name}`")))?;
    let at = short(repo, tip.id());
    let (into, target) = match branch.upstream() {
        Ok(up) => {
            let label = up.name().ok().flatten().map_or_else(
                || "its upstream".to_string(),
                |n| format!("its upstream {n}"),
            );
            (label, up.get().peel_to_commit().ok().map(|c| c.id()))
        }
        Err(_) => ("HEAD".to_string(), s.head_commit()?.map(|c| c.id())),
    };
    let merged = match target {
        Some(t) => {
            t == tip.id()
                || repo
                    .graph_descendant_of(t, tip.id())
                    .map_err(|e| git_error(e, "compare the branch with HEAD"))?
        }
        None => false,
    };
    if !merged && !force {
        return Err(ToolError::Failed(format!(
            "The branch `{name}` (at {at}, \"{}\") has commits that are not merged into {into}; deleting it could lose them. Merge them first, or pass `force`: true to delete it anyway.",
            subject(&tip)
        )));
    }
    branch
        .delete()
        .map_err(|e| git_error(e, &format!("delete the branch `{name}`")))?;
    let mut text = format!("Deleted branch {name} (was {at}).\n");
    if !merged {
        text.push_str(&format!(
            "Its commits were not merged into {into}; while git keeps them, branch with `create` and rev `{}` brings the branch back.\n",
            tip.id()
        ));
    }
    Ok(Done::new(
        text,
        json!({"deleted": name, "commit": tip.id().to_string(), "merged": merged, "forced": force}),
        "",
    ))
}

fn create(s: &Session, name: &str, rev: Option<&str>) -> Result<Done, ToolError> {
    let repo = &s.repo;
    let target = match rev {
        Some(r) => s.commit(r)?,
        None => s.head_commit()?.ok_or_else(|| {
            ToolError::Failed(
                "The repository has no commits yet, so a branch has nothing to point at; commit first (the first commit creates the current branch)."
                    .into(),
            )
        })?,
    };
    repo.branch(name, &target, false).map_err(|e| {
        if e.code() == ErrorCode::Exists {
            ToolError::Failed(format!(
                "A branch named `{name}` already exists; switch to it with checkout, or pick another name."
            ))
        } else {
            git_error(e, &format!("create the branch `{name}`"))
        }
    })?;
    let at = short(repo, target.id());
    Ok(Done::new(
        format!(
            "Created branch {name} at {at} ({}). It is not checked out; use checkout with branch `{name}` to switch to it.\n",
            subject(&target)
        ),
        json!({"created": name, "commit": target.id().to_string()}),
        "",
    ))
}

fn list(s: &Session) -> Result<Done, ToolError> {
    let repo = &s.repo;
    let head = repo.head().ok();
    let detached = repo.head_detached().unwrap_or(false);
    let mut rows: Vec<(bool, String, String, String, bool)> = Vec::new();
    let branches = repo
        .branches(None)
        .map_err(|e| git_error(e, "list the branches"))?;
    for item in branches {
        check_cancel(&s.cancel)?;
        let (branch, kind) = item.map_err(|e| git_error(e, "list the branches"))?;
        let name = match branch.name_bytes() {
            Ok(n) => String::from_utf8_lossy(n).into_owned(),
            Err(_) => continue,
        };
        let current = kind == BranchType::Local && branch.is_head();
        let (hash, subj) = match branch.get().peel_to_commit() {
            Ok(c) => (short(repo, c.id()), subject(&c)),
            Err(_) => (String::new(), String::new()),
        };
        let remote = kind == BranchType::Remote;
        rows.push((current, name, hash, subj, remote));
    }
    rows.sort_by(|a, b| (a.4, &a.1).cmp(&(b.4, &b.1)));
    let width = rows
        .iter()
        .map(|r| r.1.len() + 8 * usize::from(r.4))
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    if detached && let Some(id) = head.as_ref().and_then(|h| h.target()) {
        text.push_str(&format!("* (HEAD detached at {})\n", short(repo, id)));
    }
    let mut json_rows = Vec::new();
    for (current, name, hash, subj, remote) in &rows {
        let shown = if *remote {
            format!("remotes/{name}")
        } else {
            name.clone()
        };
        text.push_str(&format!(
            "{} {shown:<width$}  {hash}  {subj}\n",
            if *current { '*' } else { ' ' }
        ));
        if json_rows.len() < MAX_STRUCTURED {
            json_rows.push(json!({
                "name": name,
                "current": current,
                "remote": remote,
                "commit": hash,
                "subject": subj,
            }));
        }
    }
    if rows.is_empty() && !detached {
        let (line, _) = super::status::branch_line(repo)?;
        text.push_str(&format!("No branches yet ({line}).\n"));
    }
    Ok(Done::new(
        text,
        json!({"branches": json_rows, "detached": detached}),
        "the branch list was too long",
    ))
}
