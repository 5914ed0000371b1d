//! Checks on the model's revisions, branch names and paths, done before anything reaches
//! libgit2, and on which arguments each operation needs.
//!
//! There is no command line to inject into, but a value that starts with `-` is still refused:
//! it is never a valid revision, branch or file name a model means, and refusing it keeps this
//! tool's behaviour identical to a careful `git` invocation for anyone auditing the calls.

use git2::Branch;
use tool_core::{ToolError, Workspace, WsPath};

use crate::git_ops::{Operation, Plan, StashAction};

const MAX_REV_LEN: usize = 256;

/// A revision argument: one revision, or a range of two (`A..B`, `A...B`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rev {
    /// One revision such as `HEAD~1`.
    One(String),
    /// `from..to` (`symmetric`: `from...to`); an empty side means HEAD.
    Range {
        from: Option<String>,
        to: Option<String>,
        symmetric: bool,
    },
}

impl Rev {
    /// The revision as the model wrote it.
    pub(crate) fn display(&self) -> String {
        match self {
            Rev::One(r) => r.clone(),
            Rev::Range {
                from,
                to,
                symmetric,
            } => format!(
                "{}{}{}",
                from.as_deref().unwrap_or(""),
                if *symmetric { "..." } else { ".." },
                to.as_deref().unwrap_or("")
            ),
        }
    }
}

fn refuse_common(field: &str, what: &str, value: &str, example: &str) -> Result<(), ToolError> {
    if value.trim().is_empty() {
        return Err(ToolError::invalid(
            field,
            format!("the {what} is empty; give one such as `{example}`"),
        ));
    }
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        return Err(ToolError::invalid(
            field,
            format!(
                "the {what} {value:?} contains the control character {c:?}; give a plain {what} such as `{example}`"
            ),
        ));
    }
    if value.starts_with('-') {
        return Err(ToolError::invalid(
            field,
            format!(
                "the {what} `{value}` starts with `-`, so it reads as a command-line option, which this tool never takes; give a {what} such as `{example}`"
            ),
        ));
    }
    if value.len() > MAX_REV_LEN {
        return Err(ToolError::invalid(
            field,
            format!(
                "the {what} is {} bytes long, more than {MAX_REV_LEN}; give a shorter one such as `{example}`",
                value.len()
            ),
        ));
    }
    Ok(())
}

/// Checks a revision (or range) and splits a range into its sides.
pub(crate) fn rev(field: &str, value: &str) -> Result<Rev, ToolError> {
    refuse_common(field, "revision", value, "HEAD~1")?;
    let value = value.trim();
    let split = value
        .find("...")
        .map(|i| (i, 3, true))
        .or_else(|| value.find("..").map(|i| (i, 2, false)));
    let Some((at, len, symmetric)) = split else {
        return Ok(Rev::One(value.to_string()));
    };
    let side = |s: &str| -> Result<Option<String>, ToolError> {
        if s.is_empty() {
            Ok(None)
        } else {
            refuse_common(field, "revision", s, "HEAD~1")?;
            Ok(Some(s.to_string()))
        }
    };
    let from = side(&value[..at])?;
    let to = side(&value[at + len..])?;
    if from.is_none() && to.is_none() {
        return Err(ToolError::invalid(
            field,
            format!("`{value}` names no revision on either side; write a range as `main..feature`"),
        ));
    }
    Ok(Rev::Range {
        from,
        to,
        symmetric,
    })
}

/// Checks a branch name (git's `check-ref-format --branch` rules, through libgit2).
pub(crate) fn branch(field: &str, value: &str) -> Result<String, ToolError> {
    refuse_common(field, "branch name", value, "feature-1")?;
    let valid = value != "HEAD" && Branch::name_is_valid(value).unwrap_or(false);
    if !valid {
        return Err(ToolError::invalid(
            field,
            format!(
                "`{value}` is not a valid branch name: no spaces, `..`, `~`, `^`, `:`, `?`, `*`, `[`, `\\`, `@{{`, no `/` at either end and no `.lock` suffix; use one such as `feature-1` or `fix/parser`"
            ),
        ));
    }
    Ok(value.to_string())
}

/// Resolves a path through the workspace, refusing option-like names and other roots.
pub(crate) fn path(ws: &Workspace, field: &str, value: &str) -> Result<WsPath, ToolError> {
    if value.trim_start().starts_with('-') {
        return Err(ToolError::invalid(
            field,
            format!(
                "the path `{value}` starts with `-`, so it reads as a command-line option; if a file really has this name, write it as `./{}`",
                value.trim_start()
            ),
        ));
    }
    let path = ws.resolve(value).map_err(|e| match e {
        ToolError::InvalidArgs { message, .. } => ToolError::invalid(field, message),
        other => other,
    })?;
    if path.root() != 0 {
        return Err(ToolError::Denied(format!(
            "The path `{value}` is in an extra root, not in the workspace; git works only on the workspace's own repository, so give a path inside the workspace."
        )));
    }
    Ok(path)
}

/// Checks that the arguments fit together for the operation.
pub(crate) fn shape(plan: &Plan) -> Result<(), ToolError> {
    let op = plan.op;
    if let Some(Rev::Range { symmetric, .. }) = &plan.rev {
        let ok = match op {
            Operation::Diff => !plan.cached,
            Operation::Log => !symmetric,
            _ => false,
        };
        if !ok {
            return Err(ToolError::invalid(
                "/rev",
                format!(
                    "a range (`A..B`) works only for diff (without `cached`) and log (`A..B` only); `{}` takes one revision such as `HEAD~1`",
                    op.as_str()
                ),
            ));
        }
    }
    if plan.writes() && op != Operation::Init {
        refuse_git_dir(&plan.paths)?;
    }
    match op {
        Operation::Add if plan.paths.is_empty() => Err(ToolError::invalid(
            "/paths",
            "add needs `paths`, the files or directories to stage; pass [\".\"] to stage everything",
        )),
        Operation::Commit if plan.message.as_deref().is_none_or(|m| m.trim().is_empty()) => {
            Err(ToolError::invalid(
                "/message",
                "commit needs a non-empty `message` describing the change",
            ))
        }
        Operation::Blame if plan.paths.len() != 1 || plan.paths[0].is_root() => {
            Err(ToolError::invalid(
                "/paths",
                "blame needs `paths` with exactly one file, such as [\"src/main.rs\"]",
            ))
        }
        Operation::Init if plan.paths.len() > 1 => Err(ToolError::invalid(
            "/paths",
            "init takes at most one path: the directory to create the repository in",
        )),
        Operation::Init => refuse_git_dir(&plan.paths),
        Operation::Branch => branch_shape(plan),
        Operation::Checkout => checkout_shape(plan),
        Operation::Stash => stash_shape(plan),
        _ => Ok(()),
    }
}

fn branch_shape(plan: &Plan) -> Result<(), ToolError> {
    if plan.create && plan.delete {
        return Err(ToolError::invalid(
            "/delete",
            "`create` and `delete` exclude each other; make one call to create and another to delete",
        ));
    }
    if plan.force && !plan.delete {
        return Err(ToolError::invalid(
            "/force",
            "`force` applies only with `delete`: true (delete a branch whose commits are not merged)",
        ));
    }
    if plan.delete {
        if plan.branch.is_none() {
            return Err(ToolError::invalid(
                "/branch",
                "`delete` needs `branch`, the name of the local branch to delete",
            ));
        }
        if plan.rev.is_some() {
            return Err(ToolError::invalid(
                "/rev",
                "`rev` is the start point of a new branch; deleting takes only `branch` (and `force`)",
            ));
        }
        return Ok(());
    }
    if plan.branch.is_some() && !plan.create {
        return Err(ToolError::invalid(
            "/create",
            "to create a branch pass `create`: true with `branch`, to delete one pass `delete`: true; to switch to an existing branch use operation `checkout`; without `branch`, `branch` lists the branches",
        ));
    }
    if plan.create && plan.branch.is_none() {
        return Err(ToolError::invalid(
            "/branch",
            "`create` needs `branch`, the name of the new branch",
        ));
    }
    if plan.rev.is_some() && !plan.create {
        return Err(ToolError::invalid(
            "/rev",
            "`rev` is the start point of a new branch; pass it with `branch` and `create`: true",
        ));
    }
    Ok(())
}

fn checkout_shape(plan: &Plan) -> Result<(), ToolError> {
    if !plan.paths.is_empty() {
        if plan.branch.is_some() || plan.create {
            return Err(ToolError::invalid(
                "/paths",
                "checkout either switches branches (`branch`) or restores files (`paths`, from `rev` or the index), not both; make two calls",
            ));
        }
        return Ok(());
    }
    if plan.create && plan.branch.is_none() {
        return Err(ToolError::invalid(
            "/branch",
            "`create` needs `branch`, the name of the new branch",
        ));
    }
    if plan.branch.is_some() && plan.rev.is_some() && !plan.create {
        return Err(ToolError::invalid(
            "/rev",
            "`rev` with `branch` is the start point of a new branch and needs `create`: true; to switch to an existing branch give only `branch`",
        ));
    }
    if plan.branch.is_none() && plan.rev.is_none() {
        return Err(ToolError::invalid(
            "",
            "checkout needs `branch` (switch to it; with `create` make it), `rev` (detach HEAD there) or `paths` (restore those files)",
        ));
    }
    Ok(())
}

fn stash_shape(plan: &Plan) -> Result<(), ToolError> {
    match plan.action {
        StashAction::Push => {
            if plan.rev.is_some() {
                return Err(ToolError::invalid(
                    "/rev",
                    "stash push saves the current changes and takes no `rev`; `rev` picks the stash for pop, apply and drop",
                ));
            }
        }
        StashAction::List | StashAction::Pop | StashAction::Apply | StashAction::Drop => {
            if plan.message.is_some() || !plan.paths.is_empty() {
                return Err(ToolError::invalid(
                    if plan.message.is_some() {
                        "/message"
                    } else {
                        "/paths"
                    },
                    "`message` and `paths` apply only to stash push",
                ));
            }
            if plan.action == StashAction::List && plan.rev.is_some() {
                return Err(ToolError::invalid(
                    "/rev",
                    "stash list takes no `rev`; it lists every stash",
                ));
            }
            if let Some(rev) = &plan.rev {
                stash_index(rev)?;
            }
        }
    }
    Ok(())
}

/// The stash index named by `stash@{n}` or `n`.
pub(crate) fn stash_index(rev: &Rev) -> Result<usize, ToolError> {
    let text = match rev {
        Rev::One(r) => r.as_str(),
        Rev::Range { .. } => "",
    };
    let inner = text
        .strip_prefix("stash@{")
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or(text);
    inner.parse::<usize>().map_err(|_| {
        ToolError::invalid(
            "/rev",
            format!(
                "`{}` does not name a stash; write `stash@{{0}}` (the newest) or `stash@{{2}}`; stash list shows them",
                rev.display()
            ),
        )
    })
}

fn refuse_git_dir(paths: &[WsPath]) -> Result<(), ToolError> {
    match paths.iter().find(|p| p.is_git_internal()) {
        Some(p) => Err(ToolError::Denied(format!(
            "{p} is inside a .git directory, which holds git's own files (config, hooks); they are never staged, stashed or checked out. Name files of the working tree."
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions() {
        // (input, Ok(parsed) | Err(substring))
        let cases: Vec<(&str, Result<Rev, &str>)> = vec![
            ("HEAD~1", Ok(Rev::One("HEAD~1".into()))),
            ("main", Ok(Rev::One("main".into()))),
            ("stash@{1}", Ok(Rev::One("stash@{1}".into()))),
            (
                "main..feature",
                Ok(Rev::Range {
                    from: Some("main".into()),
                    to: Some("feature".into()),
                    symmetric: false,
                }),
            ),
            (
                "main...",
                Ok(Rev::Range {
                    from: Some("main".into()),
                    to: None,
                    symmetric: true,
                }),
            ),
            ("--output=/tmp/x", Err("starts with `-`")),
            ("-p", Err("starts with `-`")),
            ("HEAD..--upload-pack=x", Err("starts with `-`")),
            ("HEAD\0", Err("control character")),
            ("HEAD\n--x", Err("control character")),
            ("", Err("empty")),
            ("..", Err("names no revision")),
        ];
        for (input, want) in cases {
            match (rev("/rev", input), want) {
                (Ok(got), Ok(w)) => assert_eq!(got, w, "{input}"),
                (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{input}: {e}"),
                (got, w) => panic!("{input}: got {got:?}, want {w:?}"),
            }
        }
        assert!(rev("/rev", &"a".repeat(300)).is_err());
    }

    #[test]
    fn branch_names() {
        for good in ["feature-1", "fix/parser", "v2.0", "main"] {
            assert_eq!(branch("/branch", good).unwrap(), good);
        }
        for bad in [
            "-D",
            "--upload-pack=evil",
            "a..b",
            "a b",
            "x.lock",
            "HEAD",
            "a~1",
            "a:b",
            "/a",
            "a\x01",
            "",
        ] {
            assert!(branch("/branch", bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn paths() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::local(dir.path()).unwrap();
        assert_eq!(path(&ws, "/p", "src/a.rs").unwrap().rel(), "src/a.rs");
        assert_eq!(path(&ws, "/p", "./-rf").unwrap().rel(), "-rf");
        assert!(path(&ws, "/p", ".").unwrap().is_root());
        for (bad, kind) in [
            ("-rf", "invalid_args"),
            ("../outside", "denied"),
            ("/etc/passwd", "denied"),
            ("a\0b", "invalid_args"),
        ] {
            let e = path(&ws, "/p", bad).unwrap_err();
            assert_eq!(e.kind().as_str(), kind, "{bad}: {e}");
        }
    }

    #[test]
    fn stash_indexes() {
        assert_eq!(stash_index(&Rev::One("stash@{2}".into())).unwrap(), 2);
        assert_eq!(stash_index(&Rev::One("0".into())).unwrap(), 0);
        assert!(stash_index(&Rev::One("HEAD".into())).is_err());
    }
}
