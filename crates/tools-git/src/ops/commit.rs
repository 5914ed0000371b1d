//! `commit`: record the index (or, with `paths`, only what is staged under them) as a new
//! commit on HEAD.
//!
//! libgit2 runs no hooks (`pre-commit`, `commit-msg`, `post-commit`…), opens no editor and does
//! not sign (`commit.gpgsign` and `gpg.program` are ignored).

use std::path::Path;

use git2::{Config, Index, Signature};
use serde_json::json;
use tool_core::ToolError;

use super::diff::find_renames;
use super::repo::matches_literal;
use super::text::{person, short, stats_line};
use super::{Done, Session, git_error};
use crate::git_ops::Plan;

/// The name and address used when git config has none.
pub(crate) const FALLBACK_NAME: &str = "Toolshed";
/// See [`FALLBACK_NAME`].
pub(crate) const FALLBACK_EMAIL: &str = "toolshed@localhost";

/// The author and committer: `user.name` and `user.email` from git config (repository, then
/// global and system), else the fallback for whichever is missing. The flag says whether the
/// fallback was used.
pub(crate) fn identity(config: &Config) -> Result<(Signature<'static>, bool), ToolError> {
    let get = |key: &str| {
        config
            .get_string(key)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let name = get("user.name");
    let email = get("user.email");
    let fallback = name.is_none() || email.is_none();
    let sig = Signature::now(
        name.as_deref().unwrap_or(FALLBACK_NAME),
        email.as_deref().unwrap_or(FALLBACK_EMAIL),
    )
    .map_err(|e| git_error(e, "build the commit's author"))?;
    Ok((sig, fallback))
}

/// The tree of HEAD with only the staged entries under the pathspecs taken from the index
/// (`git commit` of part of what is staged); the rest of the index stays staged.
fn partial_tree(
    s: &Session,
    index: &Index,
    parent: Option<&git2::Commit<'_>>,
) -> Result<git2::Oid, ToolError> {
    let err = |e| git_error(e, "build the commit's tree");
    let mut tmp = Index::new().map_err(err)?;
    if let Some(p) = parent {
        tmp.read_tree(&p.tree().map_err(err)?).map_err(err)?;
    }
    let ours = |raw: &[u8]| matches_literal(&s.specs, &String::from_utf8_lossy(raw));
    let dropped: Vec<Vec<u8>> = tmp
        .iter()
        .filter(|e| ours(&e.path))
        .map(|e| e.path)
        .collect();
    for path in dropped {
        tmp.remove_path(Path::new(&*String::from_utf8_lossy(&path)))
            .map_err(err)?;
    }
    for entry in index.iter().filter(|e| ours(&e.path)) {
        tmp.add(&entry).map_err(err)?;
    }
    tmp.write_tree_to(&s.repo).map_err(err)
}

pub(crate) fn run(s: &Session, plan: &Plan) -> Result<Done, ToolError> {
    let repo = &s.repo;
    s.require_clean_state("commit")?;
    let message = plan.message.as_deref().unwrap_or_default();
    let message = git2::message_prettify(message, None)
        .map_err(|e| git_error(e, "tidy the commit message"))?;
    if message.trim().is_empty() {
        return Err(ToolError::invalid(
            "/message",
            "the commit message is empty; describe the change",
        ));
    }

    let mut index = repo.index().map_err(|e| git_error(e, "read the index"))?;
    if index.has_conflicts() {
        return Err(ToolError::Failed(
            "The index has unresolved conflicts; fix the conflicted files, stage them with add, then commit."
                .into(),
        ));
    }
    let parent = s.head_commit()?;
    let tree_id = if s.specs.is_empty() {
        index
            .write_tree()
            .map_err(|e| git_error(e, "write the tree"))?
    } else {
        partial_tree(s, &index, parent.as_ref())?
    };
    let tree = repo
        .find_tree(tree_id)
        .map_err(|e| git_error(e, "read the tree"))?;
    let unchanged = match &parent {
        Some(p) => p.tree_id() == tree_id,
        None => tree.is_empty(),
    };
    if unchanged {
        return Err(ToolError::Failed(format!(
            "Nothing is staged{}, so there is nothing to commit. Stage changes with operation `add` and `paths` first; `status` shows what changed.",
            if s.specs.is_empty() {
                ""
            } else {
                " under the given paths"
            }
        )));
    }

    let config = repo.config().map_err(|e| git_error(e, "read git config"))?;
    let (sig, fallback) = identity(&config)?;
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    let id = repo
        .commit(Some("HEAD"), &sig, &sig, &message, &tree, &parents)
        .map_err(|e| git_error(e, "create the commit"))?;

    let parent_tree = match &parent {
        Some(p) => Some(p.tree().map_err(|e| git_error(e, "read a tree"))?),
        None => None,
    };
    let mut diff = repo
        .diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), None)
        .map_err(|e| git_error(e, "summarise the commit"))?;
    find_renames(&mut diff)?;
    let (stats, stats_json) = stats_line(&diff)?;
    let (branch, _) = super::status::branch_line(repo)?;
    let hash = short(repo, id);
    let subject = message.lines().next().unwrap_or_default().to_string();
    let mut text = format!(
        "[{branch} {hash}]{} {subject}\n{stats}Author: {}\n",
        if parent.is_none() {
            " (root commit)"
        } else {
            ""
        },
        person(&sig)
    );
    if fallback {
        text.push_str(&format!(
            "(git config has no user.name/user.email, so the fallback identity {FALLBACK_NAME} <{FALLBACK_EMAIL}> was used; ask the user to set them with `git config` to commit under their name)\n"
        ));
    }
    Ok(Done::new(
        text,
        json!({
            "id": id.to_string(),
            "short": hash,
            "branch": branch,
            "author": {
                "name": String::from_utf8_lossy(sig.name_bytes()),
                "email": String::from_utf8_lossy(sig.email_bytes()),
            },
            "fallback_identity": fallback,
            "stats": stats_json,
        }),
        "",
    ))
}

// Test fixtures build real files directly.
#[allow(clippy::disallowed_methods)]
#[cfg(test)]
mod tests {
    use super::*;

    fn config_file(text: &str) -> (tempfile::TempDir, Config) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, text).unwrap();
        let cfg = Config::open(&path).unwrap();
        (dir, cfg)
    }

    #[test]
    fn identity_comes_from_config_or_the_fallback() {
        let (_d, cfg) = config_file("[user]\n\tname = Ada\n\temail = ada@example.com\n");
        let (sig, fallback) = identity(&cfg).unwrap();
        assert_eq!(sig.name().unwrap(), "Ada");
        assert_eq!(sig.email().unwrap(), "ada@example.com");
        assert!(!fallback);

        let (_d, cfg) = config_file("[core]\n\tbare = false\n");
        let (sig, fallback) = identity(&cfg).unwrap();
        assert_eq!(sig.name().unwrap(), FALLBACK_NAME);
        assert_eq!(sig.email().unwrap(), FALLBACK_EMAIL);
        assert!(fallback);

        let (_d, cfg) = config_file("[user]\n\tname = Ada\n");
        let (sig, fallback) = identity(&cfg).unwrap();
        assert_eq!(sig.name().unwrap(), "Ada");
        assert_eq!(sig.email().unwrap(), FALLBACK_EMAIL);
        assert!(fallback);
    }
}
