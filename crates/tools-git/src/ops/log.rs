//! `log`: `hash  author  date  subject` lines, newest first.

use git2::{Commit, Oid, Sort};
use serde_json::json;
use tool_core::ToolError;

use super::check::Rev;
use super::diff::options;
use super::text::{short, subject, when};
use super::{Done, Session, check_cancel, git_error};
use crate::git_ops::Plan;

pub(crate) fn run(s: &Session, plan: &Plan) -> Result<Done, ToolError> {
    let repo = &s.repo;
    let mut walk = repo
        .revwalk()
        .map_err(|e| git_error(e, "walk the history"))?;
    walk.set_sorting(Sort::TIME)
        .map_err(|e| git_error(e, "walk the history"))?;
    let head = || -> Result<Option<Oid>, ToolError> { Ok(s.head_commit()?.map(|c| c.id())) };
    match &plan.rev {
        None => match head()? {
            Some(id) => walk
                .push(id)
                .map_err(|e| git_error(e, "walk the history"))?,
            None => {
                return Ok(Done::new(
                    "No commits yet.\n".into(),
                    json!({"commits": [], "more": false}),
                    "",
                ));
            }
        },
        Some(Rev::One(rev)) => walk
            .push(s.commit(rev)?.id())
            .map_err(|e| git_error(e, "walk the history"))?,
        Some(Rev::Range { from, to, .. }) => {
            let resolve = |side: &Option<String>| -> Result<Oid, ToolError> {
                match side {
                    Some(r) => Ok(s.commit(r)?.id()),
                    None => head()?.ok_or_else(|| {
                        ToolError::Failed("The repository has no commits yet.".into())
                    }),
                }
            };
            walk.push(resolve(to)?)
                .map_err(|e| git_error(e, "walk the history"))?;
            walk.hide(resolve(from)?)
                .map_err(|e| git_error(e, "walk the history"))?;
        }
    }

    let mut lines = Vec::new();
    let mut commits = Vec::new();
    let mut more = false;
    for id in walk {
        check_cancel(&s.cancel)?;
        let id = id.map_err(|e| git_error(e, "walk the history"))?;
        let commit = repo
            .find_commit(id)
            .map_err(|e| git_error(e, "read a commit"))?;
        if !s.specs.is_empty() && !touches(s, &commit)? {
            continue;
        }
        if commits.len() == plan.limit {
            more = true;
            break;
        }
        let author = commit.author();
        let name = String::from_utf8_lossy(author.name_bytes()).into_owned();
        let date = when(author.when());
        let subj = subject(&commit);
        let hash = short(repo, id);
        lines.push(format!("{hash}  {name}  {date}  {subj}"));
        commits.push(json!({
            "id": id.to_string(),
            "short": hash,
            "author": name,
            "email": String::from_utf8_lossy(author.email_bytes()),
            "date": date,
            "subject": subj,
            "parents": commit.parent_ids().map(|p| p.to_string()).collect::<Vec<_>>(),
        }));
    }
    let mut text = lines.join("\n");
    if lines.is_empty() {
        text = if s.specs.is_empty() {
            "No commits in that range.".into()
        } else {
            "No commits touch the given paths.".into()
        };
    }
    text.push('\n');
    if more {
        text.push_str(&format!(
            "[showing the {} newest; older commits exist: pass a larger limit (up to 1000), or rev `{}~1` to continue from there]\n",
            plan.limit,
            commits
                .last()
                .and_then(|c| c["short"].as_str())
                .unwrap_or("HEAD"),
        ));
    }
    Ok(Done::new(
        text,
        json!({"commits": commits, "more": more}),
        "the log was too long; pass a smaller limit or paths to narrow it",
    ))
}

/// Whether `commit` changes anything under the pathspecs. A merge counts only when it differs
/// from every parent there (git's default history simplification keeps such merges only).
fn touches(s: &Session, commit: &Commit<'_>) -> Result<bool, ToolError> {
    let tree = commit.tree().map_err(|e| git_error(e, "read a tree"))?;
    let differs = |parent: Option<&Commit<'_>>| -> Result<bool, ToolError> {
        let old = match parent {
            Some(p) => Some(p.tree().map_err(|e| git_error(e, "read a tree"))?),
            None => None,
        };
        let mut opts = options(&s.specs);
        let diff = s
            .repo
            .diff_tree_to_tree(old.as_ref(), Some(&tree), Some(&mut opts))
            .map_err(|e| git_error(e, "compare trees"))?;
        Ok(diff.deltas().len() > 0)
    };
    if commit.parent_count() == 0 {
        return differs(None);
    }
    for parent in commit.parents() {
        if !differs(Some(&parent))? {
            return Ok(false);
        }
    }
    Ok(true)
}
