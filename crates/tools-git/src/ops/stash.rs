//! `stash`: push, pop, apply, drop and list, through libgit2's stash (SAFE checkouts; a pop
//! that conflicts keeps the stash).

use git2::{ErrorCode, StashApplyOptions};
use serde_json::json;
use tool_core::ToolError;

use super::check::stash_index;
use super::commit::identity;
use super::repo::matches_literal;
use super::text::short;
use super::{Done, Session, git_error};
use crate::git_ops::{Plan, StashAction};

pub(crate) fn run(s: &mut Session, plan: &Plan) -> Result<Done, ToolError> {
    match plan.action {
        StashAction::List => list(s),
        StashAction::Push => push(s, plan.message.as_deref()),
        action => {
            let index = match &plan.rev {
                Some(rev) => stash_index(rev)?,
                None => 0,
            };
            take(s, action, index)
        }
    }
}

fn entries(s: &mut Session) -> Result<Vec<(usize, String, String)>, ToolError> {
    let mut out = Vec::new();
    s.repo
        .stash_foreach(|i, message, id| {
            out.push((i, message.to_string(), id.to_string()));
            true
        })
        .map_err(|e| git_error(e, "list the stashes"))?;
    Ok(out)
}

fn list(s: &mut Session) -> Result<Done, ToolError> {
    let all = entries(s)?;
    let mut text = String::new();
    for (i, message, _) in &all {
        text.push_str(&format!("stash@{{{i}}}: {message}\n"));
    }
    if all.is_empty() {
        text.push_str("No stashes.\n");
    }
    let json_rows: Vec<_> = all
        .iter()
        .map(|(i, m, id)| json!({"index": i, "ref": format!("stash@{{{i}}}"), "message": m, "id": id}))
        .collect();
    Ok(Done::new(
        text,
        json!({"stashes": json_rows}),
        "the stash list was too long",
    ))
}

fn push(s: &mut Session, message: Option<&str>) -> Result<Done, ToolError> {
    s.require_clean_state("stash")?;
    let config = s
        .repo
        .config()
        .map_err(|e| git_error(e, "read git config"))?;
    let (sig, fallback) = identity(&config)?;
    if !s.specs.is_empty() {
        // libgit2 1.9's path-limited stash resets the whole working tree while saving only the
        // given paths, which would silently lose every other change. So paths are accepted only
        // when every change lies under them, and then the whole (equivalent) stash is taken.
        let all = super::tracked_changes(s)?;
        let outside: Vec<&String> = all
            .iter()
            .filter(|f| !matches_literal(&s.specs, f))
            .collect();
        if all.len() == outside.len() {
            return Err(ToolError::Failed(
                "Nothing to stash under the given paths: their tracked files have no local changes; status shows the state."
                    .into(),
            ));
        }
        if !outside.is_empty() {
            return Err(ToolError::Failed(format!(
                "Stashing only some paths is refused while other files also have changes ({}): libgit2's path-limited stash would discard those. Stash everything (omit `paths`), or commit the other changes first.",
                outside
                    .iter()
                    .take(10)
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    // Stashing resets every changed tracked file to HEAD: none may be a protected path.
    s.refuse_protected("stash", &super::tracked_changes(s)?)?;
    let saved = s.repo.stash_save2(&sig, message, None);
    let id = saved.map_err(|e| {
        if e.code() == ErrorCode::NotFound {
            ToolError::Failed(
                "Nothing to stash: tracked files have no local changes (untracked files are never stashed here); status shows the state."
                    .into(),
            )
        } else {
            git_error(e, "stash the changes")
        }
    })?;
    let message = entries(s)?
        .into_iter()
        .next()
        .map(|(_, m, _)| m)
        .unwrap_or_default();
    let mut text = format!(
        "Saved the local changes as stash@{{0}} ({}): {message}\nThe tracked files now match HEAD; bring the changes back with stash pop.\n",
        short(&s.repo, id),
    );
    if fallback {
        text.push_str("(git config has no user.name/user.email; the stash was recorded as Toolshed <toolshed@localhost>)\n");
    }
    Ok(Done::new(
        text,
        json!({"stash": "stash@{0}", "id": id.to_string(), "message": message}),
        "",
    ))
}

/// Every path stash `id` changes (its tree against its base commit's, and its index's).
fn stash_paths(s: &Session, id: &str) -> Result<Vec<String>, ToolError> {
    let oid = git2::Oid::from_str(id).map_err(|e| git_error(e, "read the stash"))?;
    let stash = s
        .repo
        .find_commit(oid)
        .map_err(|e| git_error(e, "read the stash"))?;
    let tree = stash.tree().map_err(|e| git_error(e, "read the stash"))?;
    let mut paths = Vec::new();
    for parent in stash.parents() {
        let base = parent.tree().map_err(|e| git_error(e, "read the stash"))?;
        let diff = s
            .repo
            .diff_tree_to_tree(Some(&base), Some(&tree), None)
            .map_err(|e| git_error(e, "read the stash"))?;
        for p in super::diff_paths(&diff) {
            if !paths.contains(&p) {
                paths.push(p);
            }
        }
    }
    Ok(paths)
}

fn take(s: &mut Session, action: StashAction, index: usize) -> Result<Done, ToolError> {
    let all = entries(s)?;
    let Some((_, message, id)) = all.iter().find(|(i, _, _)| *i == index).cloned() else {
        return Err(ToolError::NotFound(format!(
            "There is no stash@{{{index}}}: there {} {} stash{}; stash list shows them.",
            if all.len() == 1 { "is" } else { "are" },
            all.len(),
            if all.len() == 1 { "" } else { "es" }
        )));
    };
    if action != StashAction::Drop {
        s.require_clean_state("apply a stash")?;
        let paths = stash_paths(s, &id)?;
        s.refuse_protected(&format!("apply stash@{{{index}}}"), &paths)?;
    }
    let conflict = |e: git2::Error| {
        if matches!(e.code(), ErrorCode::Conflict | ErrorCode::MergeConflict) {
            ToolError::Failed(format!(
                "Applying stash@{{{index}}} would overwrite local changes or conflicts with them ({}); nothing was applied and the stash is kept. Commit or stash the current changes first, then retry.",
                e.message().trim_end_matches('.')
            ))
        } else {
            git_error(e, &format!("apply stash@{{{index}}}"))
        }
    };
    let text = match action {
        StashAction::Pop => {
            let mut opts = StashApplyOptions::new();
            s.repo.stash_pop(index, Some(&mut opts)).map_err(conflict)?;
            format!("Applied and dropped stash@{{{index}}}: {message}\n")
        }
        StashAction::Apply => {
            let mut opts = StashApplyOptions::new();
            s.repo
                .stash_apply(index, Some(&mut opts))
                .map_err(conflict)?;
            format!("Applied stash@{{{index}}} (kept in the list): {message}\n")
        }
        StashAction::Drop => {
            s.repo
                .stash_drop(index)
                .map_err(|e| git_error(e, &format!("drop stash@{{{index}}}")))?;
            format!("Dropped stash@{{{index}}} ({id}): {message}\n")
        }
        StashAction::Push | StashAction::List => unreachable!("handled by run"),
    };
    Ok(Done::new(
        text,
        json!({"action": format!("{action:?}").to_lowercase(), "stash": format!("stash@{{{index}}}"), "id": id, "message": message}),
        "",
    ))
}
