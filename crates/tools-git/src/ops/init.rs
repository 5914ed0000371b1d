//! `init`: a new repository at the workspace root or at a directory inside it.
//!
//! External templates are not copied (`init.templateDir` could otherwise plant hooks that a
//! later `git` run by the user would execute).

use git2::{Repository, RepositoryInitOptions};
use serde_json::json;
use tool_core::{ToolError, Workspace};

use super::repo::open_exact;
use super::{Done, git_error};
use crate::git_ops::Plan;

pub(crate) fn run(ws: &Workspace, plan: &Plan) -> Result<Done, ToolError> {
    let target = plan
        .paths
        .first()
        .cloned()
        .unwrap_or_else(|| ws.root_path());
    // Create the directory through the workspace, so a link that leads out is refused.
    if !target.is_root() {
        ws.create_dir_all(&target)?;
    }
    let dir = ws
        .local_path(&target)
        .ok_or_else(super::no_local_workspace)?;
    if let Some(existing) = open_exact(&dir)? {
        return Ok(Done::new(
            format!(
                "{target} is already a git repository ({}); nothing was changed.\n",
                existing.path().display()
            ),
            json!({"path": target.to_string(), "created": false}),
            "",
        ));
    }
    let mut opts = RepositoryInitOptions::new();
    opts.external_template(false).mkdir(false).no_reinit(true);
    let repo = Repository::init_opts(&dir, &opts)
        .map_err(|e| git_error(e, &format!("create a repository in {target}")))?;
    let branch = repo
        .find_reference("HEAD")
        .ok()
        .and_then(|h| h.symbolic_target().ok().flatten().map(str::to_string))
        .map(|t| t.trim_start_matches("refs/heads/").to_string())
        .unwrap_or_default();
    let mut text = format!(
        "Created an empty git repository in {target} (branch {branch}, no commits yet). Stage files with add and record them with commit.\n"
    );
    if let Ok(outer) = Repository::discover(dir.parent().unwrap_or(&dir))
        && let Some(wd) = outer.workdir()
    {
        text.push_str(&format!(
            "Note: it lies inside the repository at {}, which will see it as a nested repository.\n",
            wd.display()
        ));
    }
    Ok(Done::new(
        text,
        json!({"path": target.to_string(), "created": true, "branch": branch}),
        "",
    ))
}
