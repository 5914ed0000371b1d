//! Ignore files as a way to read what the walk may not: `find_files` and `grep` honour
//! `.gitignore`, `.ignore` and `.git/info/exclude`, so which files they list tells which lines
//! those files hold. An ignore file that is a link (out of the workspace, or to a file inside it
//! that the rules keep from reading), that sits under a linked `.git`, that a `.git` file points
//! to from outside, that is not a regular file, or that the rules themselves keep from reading
//! must not be applied; its regular twin still is.
//!
//! Every row builds `t/` in the fixture of `grep.rs` (the outside directory holds `list`, whose
//! only line is `victim.txt`) and searches `path` with both tools. `victim.txt` files contain the
//! needle, so an applied rule shows as a missing line in both outputs.

use std::sync::Arc;

use serde_json::json;
use tool_core::{Decision, Limits, Policy, ToolContext};

use super::grep::{Fixture, call_on, text};

/// What a row plants.
enum Plant {
    /// A regular file with this content.
    File(&'static str, &'static str),
    /// A symbolic link to this target. In targets and contents, `{out}` is the outside directory
    /// and `{ws}` the workspace.
    Link(&'static str, &'static str),
    /// A FIFO, which no reader may wait on.
    Fifo(&'static str),
}

use Plant::{Fifo, File, Link};

struct Row {
    name: &'static str,
    plant: &'static [Plant],
    /// Read rules that are denied.
    deny: &'static [&'static str],
    /// The directory searched.
    path: &'static str,
    /// Files that must be listed.
    listed: &'static [&'static str],
    /// Files that must not be.
    hidden: &'static [&'static str],
    /// A fragment the output's notice must hold (`None`: no notice at all).
    notice: Option<&'static str>,
}

const LINKED: Option<&str> = Some("is a symbolic link, so its rules were not applied");

const ROWS: &[Row] = &[
    // Attacks: each would hide `victim.txt` by reading a file the caller may not read.
    Row {
        name: "a .gitignore linked out by an absolute path",
        plant: &[
            Link("t/.gitignore", "{out}/list"),
            File("t/victim.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/victim.txt"],
        hidden: &[],
        notice: LINKED,
    },
    Row {
        name: "a .gitignore linked out by a relative path",
        plant: &[
            Link("t/.gitignore", "../../outside/list"),
            File("t/victim.txt", "needle"),
        ],
        deny: &[],
        path: ".",
        listed: &["t/victim.txt"],
        hidden: &[],
        notice: LINKED,
    },
    Row {
        name: "an .ignore linked out",
        plant: &[
            Link("t/.ignore", "../../outside/list"),
            File("t/victim.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/victim.txt"],
        hidden: &[],
        notice: LINKED,
    },
    Row {
        name: "a nested .gitignore linked out",
        plant: &[
            Link("t/deep/er/.gitignore", "../../../../outside/list"),
            File("t/deep/er/victim.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/deep/er/victim.txt"],
        hidden: &[],
        notice: LINKED,
    },
    Row {
        name: "a .gitignore linked to a file inside that the rules keep from reading",
        plant: &[
            File("secrets/list", "victim.txt\n"),
            Link("t/.gitignore", "../secrets/list"),
            File("t/victim.txt", "needle"),
        ],
        deny: &["read(secrets/**)"],
        path: "t",
        listed: &["t/victim.txt"],
        hidden: &[],
        notice: LINKED,
    },
    Row {
        // Decided: a link is never applied, even to a readable file inside (git itself stopped
        // following in-tree .gitignore links in 2.32); the notice says how to make it apply.
        name: "a .gitignore linked to a readable file inside",
        plant: &[
            File("t/rules.txt", "victim.txt\n# needle\n"),
            Link("t/.gitignore", "rules.txt"),
            File("t/victim.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/victim.txt", "t/rules.txt"],
        hidden: &[],
        notice: LINKED,
    },
    Row {
        name: "the .gitignore of a directory above `path`, linked to a denied file",
        plant: &[
            File("secrets/list", "victim.txt\n"),
            Link("t/.gitignore", "../secrets/list"),
            File("t/sub/victim.txt", "needle"),
        ],
        deny: &["read(secrets/**)"],
        path: "t/sub",
        listed: &["t/sub/victim.txt"],
        hidden: &[],
        notice: LINKED,
    },
    Row {
        name: "a .git/info/exclude linked out",
        plant: &[
            File("t/.git/HEAD", "ref: refs/heads/main\n"),
            Link("t/.git/info/exclude", "{out}/list"),
            File("t/victim.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/victim.txt"],
        hidden: &[],
        notice: LINKED,
    },
    Row {
        name: "a .git/info directory linked out",
        plant: &[
            File("t/.git/HEAD", "ref: refs/heads/main\n"),
            Link("t/.git/info", "{out}/fakegit/info"),
            File("t/victim.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/victim.txt"],
        hidden: &[],
        notice: LINKED,
    },
    Row {
        name: "a .git directory linked out",
        plant: &[
            Link("t/.git", "{out}/fakegit"),
            File("t/victim.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/victim.txt"],
        hidden: &[],
        notice: LINKED,
    },
    Row {
        // A worktree's `.git` file names its git directory; one outside is not read, silently,
        // since that is where a real worktree's lives.
        name: "a .git file whose gitdir is outside",
        plant: &[
            File("t/.git", "gitdir: {out}/fakegit\n"),
            File("t/victim.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/victim.txt"],
        hidden: &[],
        notice: None,
    },
    Row {
        name: "a .gitignore that the rules keep from reading",
        plant: &[
            File("t/.gitignore", "victim.txt\n"),
            File("t/victim.txt", "needle"),
        ],
        deny: &["read(t/.gitignore)"],
        path: "t",
        listed: &["t/victim.txt"],
        hidden: &[],
        notice: Some("an ignore file was not applied"),
    },
    Row {
        name: "a .gitignore that is a FIFO (no reader may wait on it)",
        plant: &[Fifo("t/.gitignore"), File("t/victim.txt", "needle")],
        deny: &[],
        path: "t",
        listed: &["t/victim.txt"],
        hidden: &[],
        notice: Some("t/.gitignore"),
    },
    Row {
        // Never read (the global git configuration is off), before and after: a regression row.
        name: "a repository's core.excludesFile naming an outside file",
        plant: &[
            File("t/.git/config", "[core]\n\texcludesFile = {out}/list\n"),
            File("t/victim.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/victim.txt"],
        hidden: &[],
        notice: None,
    },
    Row {
        // Never entered (links are not followed), before and after: a regression row.
        name: "a directory linked out that holds an ignore file",
        plant: &[
            Link("t/out", "{out}/fakedir"),
            File("t/victim.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/victim.txt"],
        hidden: &[],
        notice: None,
    },
    // Benign twins: regular ignore files still apply, with ripgrep's precedence.
    Row {
        name: "a regular .gitignore hides target/",
        plant: &[
            File("t/.gitignore", "target/\n"),
            File("t/target/debug/out.txt", "needle"),
            File("t/src/main.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/src/main.txt"],
        hidden: &["t/target/debug/out.txt"],
        notice: None,
    },
    Row {
        name: "a regular nested .gitignore",
        plant: &[
            File("t/deep/er/.gitignore", "victim.txt\n"),
            File("t/deep/er/victim.txt", "needle"),
            File("t/victim.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/victim.txt"],
        hidden: &["t/deep/er/victim.txt"],
        notice: None,
    },
    Row {
        name: "a regular .ignore",
        plant: &[
            File("t/.ignore", "victim.txt\n"),
            File("t/victim.txt", "needle"),
            File("t/kept.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/kept.txt"],
        hidden: &["t/victim.txt"],
        notice: None,
    },
    Row {
        name: "a regular .git/info/exclude",
        plant: &[
            File("t/.git/HEAD", "ref: refs/heads/main\n"),
            File(
                "t/.git/info/exclude",
                "# git ls-files --others\nvictim.txt\n",
            ),
            File("t/victim.txt", "needle"),
            File("t/kept.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/kept.txt"],
        hidden: &["t/victim.txt"],
        notice: None,
    },
    Row {
        // A worktree nested in its main repository: `.git` names a git directory inside, whose
        // `commondir` leads to the main one's `info/exclude`, as ripgrep resolves it.
        name: "a .git file whose gitdir and commondir are inside",
        plant: &[
            File("t/.git", "gitdir: {ws}/main/.git/worktrees/t\n"),
            File("main/.git/worktrees/t/commondir", "../..\n"),
            File("main/.git/info/exclude", "victim.txt\n"),
            File("t/victim.txt", "needle"),
            File("t/kept.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/kept.txt"],
        hidden: &["t/victim.txt"],
        notice: None,
    },
    Row {
        name: "a deeper .gitignore whitelists what a shallower one ignores",
        plant: &[
            File("t/.gitignore", "*.tmp\n"),
            File("t/d/.gitignore", "!keep.tmp\n"),
            File("t/d/keep.tmp", "needle"),
            File("t/d/drop.tmp", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/d/keep.tmp"],
        hidden: &["t/d/drop.tmp"],
        notice: None,
    },
    Row {
        // The workspace root's `*.log`, seen from `t`, is weighed against `t/d`'s whitelist
        // exactly as when searching from the root (before, a rule above `path` always won).
        name: "a whitelist below `path` outranks an ignore above it",
        plant: &[
            File("t/d/.gitignore", "!keep.log\n"),
            File("t/d/keep.log", "needle"),
            File("t/d/drop.log", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/d/keep.log"],
        hidden: &["t/d/drop.log"],
        notice: None,
    },
    Row {
        // ripgrep's order: any .ignore outranks any .gitignore, however deep.
        name: "an .ignore above outranks a deeper .gitignore",
        plant: &[
            File("t/.ignore", "!w.txt\n"),
            File("t/d/.gitignore", "w.txt\nv.txt\n"),
            File("t/d/w.txt", "needle"),
            File("t/d/v.txt", "needle"),
        ],
        deny: &[],
        path: "t",
        listed: &["t/d/w.txt"],
        hidden: &["t/d/v.txt"],
        notice: None,
    },
    Row {
        name: "a regular .gitignore of a directory above `path`",
        plant: &[
            File("t/.gitignore", "victim.txt\n"),
            File("t/sub/victim.txt", "needle"),
            File("t/sub/kept.txt", "needle"),
        ],
        deny: &[],
        path: "t/sub",
        listed: &["t/sub/kept.txt"],
        hidden: &["t/sub/victim.txt"],
        notice: None,
    },
    Row {
        name: "a directory ignored from above, searched by name",
        plant: &[
            File("t/.gitignore", "ign/\n"),
            File("t/ign/a.txt", "needle"),
        ],
        deny: &[],
        path: "t/ign",
        listed: &[],
        hidden: &["t/ign/a.txt"],
        notice: None,
    },
    Row {
        name: "a regular .gitignore beside a rule that denies another directory",
        plant: &[
            File("secrets/list", "victim.txt\n"),
            File("t/.gitignore", "victim.txt\n"),
            File("t/victim.txt", "needle"),
            File("t/kept.txt", "needle"),
        ],
        deny: &["read(secrets/**)"],
        path: "t",
        listed: &["t/kept.txt"],
        hidden: &["t/victim.txt"],
        notice: None,
    },
];

fn plant(fx: &Fixture, plants: &[Plant]) {
    let out = fx.outside.to_str().unwrap();
    let ws = fx.root.to_str().unwrap();
    let fill = |s: &str| s.replace("{out}", out).replace("{ws}", ws);
    // The outside tree every attack aims at; each of its ignore files would hide `victim.txt`.
    std::fs::write(fx.outside.join("list"), "victim.txt\n").unwrap();
    for (rel, content) in [
        ("fakegit/info/exclude", "victim.txt\n".to_string()),
        ("fakegit/commondir", format!("{out}/fakegit\n")),
        ("fakedir/.gitignore", "*\n".to_string()),
        ("fakedir/victim.txt", "needle".to_string()),
    ] {
        let p = fx.outside.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    for p in plants {
        let rel = match p {
            File(rel, _) | Link(rel, _) | Fifo(rel) => *rel,
        };
        let at = fx.root.join(rel);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        match p {
            File(_, content) => std::fs::write(&at, fill(content)).unwrap(),
            Link(_, target) => {
                std::os::unix::fs::symlink(fill(target), &at).unwrap();
            }
            Fifo(_) => rustix::fs::mknodat(
                rustix::fs::CWD,
                &at,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o644),
                0,
            )
            .unwrap(),
        }
    }
}

#[tokio::test]
async fn ignore_files_that_lead_where_the_walk_may_not_read_are_not_applied() {
    let mut failures = Vec::new();
    for row in ROWS {
        let fx = Fixture::new();
        plant(&fx, row.plant);
        let mut policy = Policy::supervised();
        for rule in row.deny {
            policy = policy.rule(rule, Decision::Deny).unwrap();
        }
        let ctx = ToolContext::new(
            fx.ctx.workspace.clone(),
            Arc::new(policy),
            Arc::new(Limits::default()),
        );
        let outside = fx.outside.to_str().unwrap();
        for (tool, args) in [
            ("find_files", json!({"pattern": "*", "path": row.path})),
            (
                "grep",
                json!({"pattern": "needle", "path": row.path, "output_mode": "files_with_matches"}),
            ),
        ] {
            let name = format!("{} ({tool})", row.name);
            let out = match call_on(&fx.stack, &ctx, tool, args).await {
                Ok(out) => text(&out),
                Err(e) => {
                    failures.push(format!("{name}: {e}"));
                    continue;
                }
            };
            let lines: Vec<&str> = out.lines().collect();
            for want in row.listed {
                if !lines.contains(want) {
                    failures.push(format!("{name}: {want} missing:\n{out}"));
                }
            }
            for gone in row.hidden {
                if lines.contains(gone) {
                    failures.push(format!("{name}: {gone} listed:\n{out}"));
                }
            }
            match row.notice {
                Some(fragment) if !out.contains(fragment) => {
                    failures.push(format!("{name}: no notice `{fragment}`:\n{out}"));
                }
                None if out.contains("could not be read") => {
                    failures.push(format!("{name}: an unexpected notice:\n{out}"));
                }
                _ => {}
            }
            // The notice names the ignore file, never where it leads.
            if out.contains(outside) || out.contains("outside/") || out.contains("list") {
                failures.push(format!("{name}: names the target:\n{out}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The same loader serves `list_dir` (which honours `.gitignore` when recursive) and the virtual
/// backend: a linked `.gitignore` does not hide `victim.txt` from `list_dir`, and on SQLite a
/// `.gitignore` the rules keep from reading is not applied. Twins: regular ones still are.
#[tokio::test]
async fn list_dir_and_the_sqlite_backend_apply_only_readable_ignore_files() {
    let fx = Fixture::new();
    plant(
        &fx,
        &[
            Link("t/.gitignore", "../../outside/list"),
            File("t/victim.txt", "needle"),
            File("u/.gitignore", "victim.txt\n"),
            File("u/victim.txt", "needle"),
        ],
    );
    for (dir, shown) in [("t", true), ("u", false)] {
        let out = text(
            &fx.call("list_dir", json!({"path": dir, "recursive": true}))
                .await
                .unwrap(),
        );
        assert_eq!(
            out.lines().any(|l| l == "victim.txt"),
            shown,
            "{dir}: {out}"
        );
    }

    let db = tempfile::tempdir().unwrap();
    let sqlite = super::grep::sqlite_fixture(db.path());
    let ws = sqlite.workspace.clone();
    for (rel, content) in [
        ("t/.gitignore", "victim.txt\n"),
        ("t/victim.txt", "needle"),
        ("u/.gitignore", "victim.txt\n"),
        ("u/victim.txt", "needle"),
    ] {
        ws.write_atomic(&ws.resolve(rel).unwrap(), content.as_bytes())
            .unwrap();
    }
    let policy = Policy::supervised()
        .rule("read(t/.gitignore)", Decision::Deny)
        .unwrap();
    let ctx = ToolContext::new(ws, Arc::new(policy), Arc::new(Limits::default()));
    for (dir, shown) in [("t", true), ("u", false)] {
        let out = text(
            &call_on(
                &fx.stack,
                &ctx,
                "find_files",
                json!({"pattern": "*", "path": dir}),
            )
            .await
            .unwrap(),
        );
        let victim = format!("{dir}/victim.txt");
        assert_eq!(out.lines().any(|l| l == victim), shown, "{dir}: {out}");
        assert_eq!(
            out.contains("an ignore file was not applied"),
            shown,
            "{dir}: {out}"
        );
    }
}
