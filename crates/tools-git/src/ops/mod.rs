//! The operations behind `git_operations`, one module each, plus what they share: opening and
//! confining the repository ([`repo`]), argument checks ([`check`]) and text helpers ([`text`]).
//!
//! Everything here is blocking and runs inside `tool_core::blocking`. Long loops check the
//! call's cancellation token.

mod add;
mod blame;
mod branch;
pub(crate) mod check;
mod checkout;
mod commit;
mod diff;
mod init;
mod log;
mod repo;
mod show;
mod stash;
mod status;
mod text;

use git2::ErrorCode;
use serde_json::Value;
use tool_core::{CancellationToken, Limits, ToolError, ToolOutput, Workspace};

use crate::git_ops::{Operation, Plan};

pub(crate) use repo::Session;

/// What an operation produced, before truncation.
#[derive(Debug)]
pub(crate) struct Done {
    /// The text for the model.
    pub(crate) text: String,
    /// The machine-readable result.
    pub(crate) structured: Value,
    /// How to see what a cut left out.
    pub(crate) hint: &'static str,
}

impl Done {
    pub(crate) fn new(text: String, structured: Value, hint: &'static str) -> Done {
        Done {
            text,
            structured,
            hint,
        }
    }
}

/// Runs a validated call.
pub(crate) fn run(
    ws: &Workspace,
    limits: &Limits,
    policy: &std::sync::Arc<tool_core::Policy>,
    cancel: &CancellationToken,
    plan: &Plan,
) -> Result<ToolOutput, ToolError> {
    let done = if plan.op == Operation::Init {
        init::run(ws, plan)?
    } else {
        let mut session = Session::open(ws, plan, policy.clone(), cancel.clone())?;
        let mut done = match plan.op {
            Operation::Status => status::run(&session)?,
            Operation::Diff => diff::run(&session, plan)?,
            Operation::Log => log::run(&session, plan)?,
            Operation::Show => show::run(&session, plan)?,
            Operation::Branch => branch::run(&session, plan)?,
            Operation::Add => add::run(&session)?,
            Operation::Commit => commit::run(&session, plan)?,
            Operation::Checkout => checkout::run(&session, plan)?,
            Operation::Stash => stash::run(&mut session, plan)?,
            Operation::Blame => blame::run(&session, plan, limits)?,
            Operation::Init => unreachable!("handled above"),
        };
        if let Some(note) = session.nested_note() {
            done.text = format!("{note}\n{}", done.text);
        }
        done
    };
    let (text, truncated) =
        tool_core::truncate::head_tail_within(&done.text, limits.max_output_bytes, done.hint);
    let mut out = ToolOutput::text(text).with_structured(done.structured);
    out.truncated = truncated;
    Ok(out)
}

/// The error for a workspace that is not a directory on disk.
pub(crate) fn no_local_workspace() -> ToolError {
    ToolError::Failed(
        "git_operations needs a workspace that is a directory on disk, and this one is a virtual filesystem; use the file tools here, or start Toolshed with a directory workspace."
            .into(),
    )
}

/// Turns a libgit2 error into a sentence the model can act on. `doing` completes "Could not …".
pub(crate) fn git_error(e: git2::Error, doing: &str) -> ToolError {
    let msg = e.message().trim_end_matches('.').to_string();
    match e.code() {
        ErrorCode::Locked => ToolError::Failed(format!(
            "Could not {doing}: the repository is locked ({msg}). Another git process may be working on it; wait and retry, and if none is running, ask the user to remove the stale .lock file."
        )),
        ErrorCode::Conflict | ErrorCode::MergeConflict => ToolError::Failed(format!(
            "Could not {doing}: {msg}. Local changes are in the way; commit them (add, then commit) or stash them, then retry."
        )),
        ErrorCode::Owner => ToolError::Denied(format!(
            "Could not {doing}: {msg}. The repository belongs to another user, and libgit2 refuses it as git does; ask the user to fix ownership or mark it safe."
        )),
        ErrorCode::UnbornBranch => ToolError::Failed(format!(
            "Could not {doing}: the repository has no commits yet. Stage files with add and commit them first."
        )),
        ErrorCode::NotFound => ToolError::NotFound(format!("Could not {doing}: {msg}.")),
        ErrorCode::Exists => ToolError::Failed(format!("Could not {doing}: {msg}.")),
        _ => ToolError::Failed(format!("Could not {doing}: {msg}.")),
    }
}

/// Stops a loop when the call was cancelled.
/// Tracked files with staged or unstaged changes (checkout and stash refuse to lose them).
pub(crate) fn tracked_changes(s: &repo::Session) -> Result<Vec<String>, ToolError> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(false);
    let statuses = s
        .repo
        .statuses(Some(&mut opts))
        .map_err(|e| git_error(e, "read the status"))?;
    Ok(statuses
        .iter()
        .filter(|e| !e.status().is_ignored() && !e.status().is_empty())
        .map(|e| String::from_utf8_lossy(e.path_bytes()).into_owned())
        .collect())
}

/// Every path a diff touches (old and new sides).
pub(crate) fn diff_paths(diff: &git2::Diff<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(p) = file.path_bytes() {
                let p = String::from_utf8_lossy(p).into_owned();
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
    }
    out
}

pub(crate) fn check_cancel(cancel: &CancellationToken) -> Result<(), ToolError> {
    if cancel.is_cancelled() {
        Err(ToolError::Cancelled)
    } else {
        Ok(())
    }
}
