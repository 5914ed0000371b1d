//! `show`: one commit's header, message, change summary and patch (against its first parent).

use serde_json::json;
use tool_core::ToolError;

use super::diff::{find_renames, options};
use super::text::{files_json, patch_text, person, person_json, short, stats_line, when};
use super::{Done, Session, git_error};
use crate::git_ops::Plan;

pub(crate) fn run(s: &Session, plan: &Plan) -> Result<Done, ToolError> {
    let repo = &s.repo;
    let rev = s.one_rev(plan.rev.as_ref()).unwrap_or("HEAD");
    let commit = s.commit(rev)?;
    let tree = commit.tree().map_err(|e| git_error(e, "read a tree"))?;
    let parent = commit.parents().next();
    let parent_tree = match &parent {
        Some(p) => Some(p.tree().map_err(|e| git_error(e, "read a tree"))?),
        None => None,
    };
    let mut opts = options(&s.specs);
    let mut diff = repo
        .diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), Some(&mut opts))
        .map_err(|e| git_error(e, "compute the diff"))?;
    find_renames(&mut diff)?;

    let author = commit.author();
    let committer = commit.committer();
    let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
    let mut text = format!("commit {}\n", commit.id());
    let parents: Vec<String> = commit.parent_ids().map(|p| p.to_string()).collect();
    if parents.len() > 1 {
        let shorts: Vec<String> = commit.parent_ids().map(|p| short(repo, p)).collect();
        text.push_str(&format!("Merge: {}\n", shorts.join(" ")));
    }
    text.push_str(&format!(
        "Author: {}\nDate:   {}\n",
        person(&author),
        when(author.when())
    ));
    if committer.name_bytes() != author.name_bytes()
        || committer.email_bytes() != author.email_bytes()
    {
        text.push_str(&format!("Commit: {}\n", person(&committer)));
    }
    text.push('\n');
    for line in message.trim_end().lines() {
        text.push_str("    ");
        text.push_str(line);
        text.push('\n');
    }
    text.push('\n');
    let (stats, stats_json) = stats_line(&diff)?;
    let (patch, stopped) = patch_text(&diff, &s.cancel, &|p| s.readable(p))?;
    if parents.len() > 1 {
        text.push_str("(a merge: the changes below are against its first parent)\n");
    }
    text.push_str(&stats);
    if !patch.is_empty() {
        text.push('\n');
        text.push_str(&patch);
    }
    Ok(Done::new(
        text,
        json!({
            "id": commit.id().to_string(),
            "parents": parents,
            "author": person_json(&author),
            "committer": person_json(&committer),
            "message": message,
            "files": files_json(&diff),
            "stats": stats_json,
            "incomplete": stopped,
        }),
        "the commit's patch was too long; pass paths to see only some files",
    ))
}
