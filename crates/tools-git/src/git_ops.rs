use async_trait::async_trait;
use serde::Deserialize;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, WsPath, blocking};

use crate::ops::{self, check};

/// The git operation to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// Branch line and changed files, like `git status --short --branch`.
    Status,
    /// A unified patch: unstaged changes, staged ones with `cached`, or against `rev`.
    Diff,
    /// Recent commits, newest first: `limit` of them, optionally only those touching `paths`.
    Log,
    /// One commit (`rev`, default HEAD): header, message and patch.
    Show,
    /// List branches; with `branch` and `create`, make a new branch at `rev` (default HEAD);
    /// with `branch` and `delete`, delete it (`force` for an unmerged one).
    Branch,
    /// Stage `paths` (new, changed and deleted files under them).
    Add,
    /// Commit what is staged (with `paths`, only what is staged under them), with `message`.
    Commit,
    /// Switch to `branch` (`create` to make it), detach at `rev`, or restore `paths`.
    Checkout,
    /// Stash work: `action` push (default), pop, apply, drop or list.
    Stash,
    /// Who last changed each line of one file (`paths` with one entry).
    Blame,
    /// Create a repository at the workspace root, or at `paths[0]`.
    Init,
}

impl Operation {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operation::Status => "status",
            Operation::Diff => "diff",
            Operation::Log => "log",
            Operation::Show => "show",
            Operation::Branch => "branch",
            Operation::Add => "add",
            Operation::Commit => "commit",
            Operation::Checkout => "checkout",
            Operation::Stash => "stash",
            Operation::Blame => "blame",
            Operation::Init => "init",
        }
    }

    /// The arguments besides `operation` that this operation takes (`limit` is accepted by all).
    fn takes(self) -> &'static [&'static str] {
        match self {
            Operation::Status => &["paths"],
            Operation::Diff => &["paths", "rev", "cached"],
            Operation::Log => &["paths", "rev", "limit"],
            Operation::Show => &["paths", "rev"],
            Operation::Branch => &["branch", "create", "rev", "delete", "force"],
            Operation::Add => &["paths"],
            Operation::Commit => &["message", "paths"],
            Operation::Checkout => &["branch", "create", "rev", "paths"],
            Operation::Stash => &["action", "message", "paths", "rev"],
            Operation::Blame => &["paths", "rev"],
            Operation::Init => &["paths"],
        }
    }
}

/// What `stash` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StashAction {
    /// Save local changes to tracked files and revert them (`paths` must cover every change).
    #[default]
    Push,
    /// Apply a stash (`rev`, default `stash@{0}`) and drop it.
    Pop,
    /// Apply a stash and keep it.
    Apply,
    /// Delete a stash.
    Drop,
    /// List the stashes.
    List,
}

/// Arguments of `git_operations`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitOperationsArgs {
    /// The operation: status, diff, log, show, branch, add, commit, checkout, stash, blame or
    /// init.
    pub operation: Operation,
    /// Files or directories relative to the workspace root, taken literally (no globs; a
    /// directory means everything under it). Narrows status, diff, log, show, commit and stash
    /// push; the files to stage for add, to restore for checkout, the one file for blame, and
    /// the directory for init.
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// The commit message (commit, required) or the stash's message (stash push).
    #[serde(default)]
    pub message: Option<String>,
    /// A branch name: the branch to switch to (checkout), to create (branch or checkout with
    /// `create`) or to delete (branch with `delete`).
    #[serde(default)]
    pub branch: Option<String>,
    /// A revision in git syntax: `HEAD~1`, `main`, `a1b2c3d`, `v1.0`; `A..B` (and `A...B` for
    /// diff) for diff and log; `stash@{1}` for stash pop, apply and drop. Default: HEAD.
    #[serde(default)]
    pub rev: Option<String>,
    /// diff: show staged changes (HEAD or `rev` against the index) instead of unstaged ones.
    #[serde(default)]
    pub cached: bool,
    /// log: how many commits to show, 1 to 1000. Default 10.
    #[schemars(range(min = 1, max = 1000))]
    #[serde(default)]
    pub limit: Option<u32>,
    /// stash: push (default), pop, apply, drop or list.
    #[serde(default)]
    pub action: Option<StashAction>,
    /// branch, checkout: create `branch` (at `rev`, default HEAD) instead of using an existing
    /// one.
    #[serde(default)]
    pub create: bool,
    /// branch: delete the local branch `branch`. Refused for the current branch, and for one
    /// whose commits are not merged into its upstream (or HEAD) unless `force`.
    #[serde(default)]
    pub delete: bool,
    /// branch with `delete`: delete the branch even if its commits are not merged (they stay
    /// reachable by hash for a while; the reply gives it).
    #[serde(default)]
    pub force: bool,
}

/// `git_operations`: status, diff, log, show, branch, add, commit, checkout, stash, blame and
/// init through libgit2, never through a `git` subprocess.
#[derive(Debug, Clone, Copy, Default)]
pub struct GitOperations;

const DEFAULT_LIMIT: u32 = 10;
const MAX_LIMIT: u32 = 1000;
const MAX_PATHS: usize = 1000;

/// Validated arguments: every string that reaches libgit2 has passed the checks in
/// [`crate::ops::check`], every path the workspace's confinement.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) op: Operation,
    pub(crate) paths: Vec<WsPath>,
    pub(crate) message: Option<String>,
    pub(crate) branch: Option<String>,
    pub(crate) rev: Option<check::Rev>,
    pub(crate) cached: bool,
    pub(crate) limit: usize,
    pub(crate) action: StashAction,
    pub(crate) create: bool,
    pub(crate) delete: bool,
    pub(crate) force: bool,
}

impl Plan {
    /// Whether the call changes the repository or the working tree.
    pub(crate) fn writes(&self) -> bool {
        match self.op {
            Operation::Status
            | Operation::Diff
            | Operation::Log
            | Operation::Show
            | Operation::Blame => false,
            Operation::Branch => self.create || self.delete,
            Operation::Stash => self.action != StashAction::List,
            Operation::Add | Operation::Commit | Operation::Checkout | Operation::Init => true,
        }
    }
}

fn plan(ctx: &ToolContext, args: &GitOperationsArgs) -> Result<Plan, ToolError> {
    if ctx.workspace.local_root().is_none() {
        return Err(ops::no_local_workspace());
    }
    let op = args.operation;
    let given = [
        ("paths", args.paths.as_ref().is_some_and(|p| !p.is_empty())),
        ("message", args.message.is_some()),
        ("branch", args.branch.is_some()),
        ("rev", args.rev.is_some()),
        ("cached", args.cached),
        ("action", args.action.is_some()),
        ("create", args.create),
        ("delete", args.delete),
        ("force", args.force),
    ];
    for (field, present) in given {
        if present && !op.takes().contains(&field) {
            return Err(ToolError::invalid(
                format!("/{field}"),
                format!(
                    "`{field}` does not apply to operation `{}`, which takes {}; remove it or pick the operation it belongs to",
                    op.as_str(),
                    list_or_nothing(op.takes())
                ),
            ));
        }
    }

    let raw_paths = args.paths.as_deref().unwrap_or(&[]);
    if raw_paths.len() > MAX_PATHS {
        return Err(ToolError::invalid(
            "/paths",
            format!(
                "{} paths is more than {MAX_PATHS}; pass a directory instead of its files",
                raw_paths.len()
            ),
        ));
    }
    let mut paths = Vec::with_capacity(raw_paths.len());
    for (i, raw) in raw_paths.iter().enumerate() {
        paths.push(check::path(&ctx.workspace, &format!("/paths/{i}"), raw)?);
    }

    let rev = match &args.rev {
        None => None,
        Some(r) => Some(check::rev("/rev", r)?),
    };
    let branch = match &args.branch {
        None => None,
        Some(b) => Some(check::branch("/branch", b)?),
    };
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ToolError::invalid(
            "/limit",
            format!("`limit` is {limit}; give a number from 1 to {MAX_LIMIT}"),
        ));
    }
    let message = match &args.message {
        Some(m) if m.contains('\0') => {
            return Err(ToolError::invalid(
                "/message",
                "the message contains a NUL byte; remove it",
            ));
        }
        other => other.clone(),
    };

    let plan = Plan {
        op,
        paths,
        message,
        branch,
        rev,
        cached: args.cached,
        limit: limit as usize,
        action: args.action.unwrap_or_default(),
        create: args.create,
        delete: args.delete,
        force: args.force,
    };
    check::shape(&plan)?;
    Ok(plan)
}

fn list_or_nothing(fields: &[&str]) -> String {
    if fields.is_empty() {
        "no other arguments".to_string()
    } else {
        fields
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[async_trait]
impl Tool for GitOperations {
    const NAME: &'static str = "git_operations";
    type Args = GitOperationsArgs;

    fn description(&self) -> String {
        "Run git on the workspace's repository through libgit2: status, diff, log, show, branch, \
         add, commit, checkout, stash, blame, init. No git program is started, so no hook, pager, \
         editor, fsmonitor, textconv, external diff or clean/smudge filter driver ever runs, \
         whatever the repository's config says; there are no remotes (no fetch or push). The \
         repository must be the workspace root (or, when the root is none, a repository inside \
         the workspace holding the first of `paths`); a workspace inside a larger repository is \
         refused. `paths` are literal files or directories relative to the workspace root; \
         `rev` is git revision syntax (`HEAD~1`, `main`, `a1b2c3d`, `A..B` for diff and log). \
         status: `git status --short --branch`. diff: unstaged changes, staged ones with \
         `cached`, or against `rev`, as a unified patch. log: `limit` commits (default 10) as \
         `hash  author  date  subject`, dates in UTC. show: a commit's header, message and \
         patch. branch: list, or with `branch` and `create` make one at `rev`, or with `branch` \
         and `delete` delete it (never the current branch; an unmerged one only with `force`). \
         add: stage \
         `paths`, deletions included. commit: `message`; with `paths`, only what is staged \
         under them; refuses when nothing is staged; the author is git config's \
         user.name/user.email, else `Toolshed <toolshed@localhost>`. checkout: switch to \
         `branch` (`create` to make it), detach at `rev`, or restore `paths` from `rev` or the \
         index; it never discards uncommitted changes. stash: `action` push (default; tracked \
         files only; `paths` only when every change lies under them), pop, apply, drop or list; \
         `rev` picks `stash@{n}`. blame: one file in `paths`. init: a repository at the root or \
         `paths[0]`. Long output is cut in the middle with a note saying how to narrow it."
            .into()
    }

    fn annotations(&self) -> Annotations {
        // Checkout, stash and commit change the working tree and history; stash drop deletes.
        Annotations::DESTRUCTIVE
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        let plan = plan(ctx, args)?;
        let root = ctx.workspace.root_path();
        if !plan.writes() {
            if plan.paths.is_empty() {
                return Ok(vec![Access::Read(root)]);
            }
            return Ok(plan.paths.into_iter().map(Access::Read).collect());
        }
        // Repository state (HEAD, refs, the index, stashes) lives under `.git`, which the policy
        // keeps closed to writes; the workspace root stands for it, and for the whole working
        // tree that a checkout or stash may rewrite.
        let mut accesses = vec![Access::Write(root)];
        for path in plan.paths {
            let changes_files = matches!(
                plan.op,
                Operation::Checkout | Operation::Stash | Operation::Init
            );
            accesses.push(if changes_files {
                Access::Write(path)
            } else {
                Access::Read(path)
            });
        }
        Ok(accesses)
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let plan = plan(ctx, &args)?;
        let ws = ctx.workspace.clone();
        let limits = ctx.limits.clone();
        let cancel = ctx.cancel.clone();
        let policy = ctx.policy.clone();
        blocking(ctx, move || ops::run(&ws, &limits, &policy, &cancel, &plan)).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use tool_core::{Limits, Policy, Workspace};

    fn ctx(dir: &std::path::Path) -> ToolContext {
        ToolContext::new(
            Workspace::local(dir).unwrap(),
            Arc::new(Policy::supervised()),
            Arc::new(Limits::default()),
        )
    }

    fn args(json: &str) -> GitOperationsArgs {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn reads_touch_paths_writes_touch_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let t = GitOperations;
        // (arguments, the accesses as displayed)
        let cases = [
            (r#"{"operation":"status"}"#, vec!["read ."]),
            (
                r#"{"operation":"diff","paths":["src/a.rs","docs"]}"#,
                vec!["read src/a.rs", "read docs"],
            ),
            (r#"{"operation":"branch"}"#, vec!["read ."]),
            (
                r#"{"operation":"branch","branch":"x","create":true}"#,
                vec!["write ."],
            ),
            (
                r#"{"operation":"branch","branch":"x","delete":true}"#,
                vec!["write ."],
            ),
            (r#"{"operation":"stash","action":"list"}"#, vec!["read ."]),
            (r#"{"operation":"stash"}"#, vec!["write ."]),
            (
                r#"{"operation":"add","paths":["a.txt"]}"#,
                vec!["write .", "read a.txt"],
            ),
            (
                r#"{"operation":"checkout","paths":["a.txt"]}"#,
                vec!["write .", "write a.txt"],
            ),
            (
                r#"{"operation":"init","paths":["sub"]}"#,
                vec!["write .", "write sub"],
            ),
            (r#"{"operation":"commit","message":"m"}"#, vec!["write ."]),
        ];
        for (json, want) in cases {
            let got: Vec<String> = t
                .access(&ctx, &args(json))
                .unwrap()
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got, want, "{json}");
        }
    }

    #[test]
    fn arguments_that_do_not_apply_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let cases = [
            (r#"{"operation":"status","message":"x"}"#, "/message"),
            (r#"{"operation":"log","cached":true}"#, "/cached"),
            (r#"{"operation":"commit","action":"pop"}"#, "/action"),
            (r#"{"operation":"diff","create":true}"#, "/create"),
            (r#"{"operation":"init","branch":"main"}"#, "/branch"),
            (
                r#"{"operation":"checkout","branch":"x","delete":true}"#,
                "/delete",
            ),
            (r#"{"operation":"status","force":true}"#, "/force"),
        ];
        for (json, field) in cases {
            match GitOperations.access(&ctx, &args(json)) {
                Err(ToolError::InvalidArgs { path, message }) => {
                    assert_eq!(path, field, "{json}");
                    assert!(message.contains("does not apply"), "{message}");
                }
                other => panic!("{json}: {other:?}"),
            }
        }
    }
}

#[cfg(test)]
mod schema_tests {

    /// Every operation is offered in the schema. Descriptions, closed objects and the provider
    /// dialects are checked for every registered tool in `tests/tests/schemas.rs`.
    #[test]
    fn the_schema_offers_every_operation() {
        let tool = tool_core::typed(super::GitOperations);
        let spec = tool.spec();
        assert_eq!(
            spec.input_schema["required"],
            serde_json::json!(["operation"])
        );
        let ops = serde_json::to_string(&spec.input_schema["properties"]["operation"]).unwrap();
        for op in [
            "status", "diff", "log", "show", "branch", "add", "commit", "checkout", "stash",
            "blame", "init",
        ] {
            assert!(
                ops.contains(&format!("\"{op}\"")),
                "{op} missing from {ops}"
            );
        }
    }
}
