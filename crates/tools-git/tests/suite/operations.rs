//! Every operation on real repositories, checked against the real `git` where that proves the
//! results interoperate.

use std::collections::BTreeSet;

use tool_core::{ErrorKind, Limits};

use super::{Fixture, git_command};

fn lines(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn status_matches_git_status_short() {
    let f = Fixture::repo();
    f.write("src/a.rs", "changed\n");
    f.write("staged.txt", "new\n");
    f.git(&["add", "staged.txt"]);
    f.write("untracked/file.txt", "u\n");
    std::fs::remove_file(f.path("docs/guide.md")).unwrap();

    let out = f.output(r#"{"operation":"status"}"#).await;
    let text = out.joined_text();
    let mut ours = text.lines();
    assert_eq!(ours.next(), Some("## main"));
    // The same lines in the same order as git's.
    assert_eq!(
        ours.map(|l| format!("{l}\n")).collect::<String>(),
        f.git(&["status", "--short"]),
        "{text}"
    );
    let s = out.structured.unwrap();
    assert_eq!(s["branch"]["name"], "main");
    assert_eq!(s["clean"], false);
    assert_eq!(s["entries"].as_array().unwrap().len(), 4);

    // Narrowed by a literal directory path.
    let text = f.ok(r#"{"operation":"status","paths":["src"]}"#).await;
    assert_eq!(text, "## main\n M src/a.rs\n");

    // A rename staged in the index shows as git shows it.
    f.git(&["mv", "src/a.rs", "src/renamed.rs"]);
    let text = f.ok(r#"{"operation":"status","paths":["src"]}"#).await;
    assert!(text.contains("src/a.rs -> src/renamed.rs"), "{text}");
}

#[tokio::test]
async fn status_of_a_clean_tree_says_so() {
    let f = Fixture::repo();
    let text = f.ok(r#"{"operation":"status"}"#).await;
    assert_eq!(
        text,
        "## main\nNothing to commit: the working tree is clean.\n"
    );
}

#[tokio::test]
async fn diff_unstaged_is_a_patch_git_can_apply() {
    let f = Fixture::repo();
    f.write("src/a.rs", "fn a() {}\nfn b() { 1 }\nfn c() {}\n");
    let out = f.output(r#"{"operation":"diff"}"#).await;
    let text = out.joined_text();
    assert!(
        text.starts_with("Unstaged changes (index → working tree):\n"),
        "{text}"
    );
    assert!(
        text.contains("1 file changed, 2 insertions(+), 1 deletion(-)"),
        "{text}"
    );
    assert!(text.contains("diff --git a/src/a.rs b/src/a.rs"), "{text}");
    assert!(text.contains("+fn b() { 1 }\n"), "{text}");
    let files = &out.structured.unwrap()["files"];
    assert_eq!(files[0]["path"], "src/a.rs");
    assert_eq!(files[0]["status"], "modified");
    assert_eq!(files[0]["additions"], 2);

    // The patch part is a real patch: git can reverse-apply it to the working tree.
    let patch = &text[text.find("diff --git").unwrap()..];
    let patch_dir = tempfile::tempdir().unwrap();
    let patch_file = patch_dir.path().join("change.patch");
    std::fs::write(&patch_file, patch).unwrap();
    let check = git_command(
        f.root(),
        &["apply", "--check", "-R", patch_file.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert!(
        check.status.success(),
        "git apply refused our patch: {}\n{patch}",
        String::from_utf8_lossy(&check.stderr)
    );
}

#[tokio::test]
async fn diff_cached_rev_and_ranges() {
    let f = Fixture::repo();
    f.write("docs/guide.md", "# Guide\nmore\n");
    f.git(&["add", "docs/guide.md"]);

    let text = f.ok(r#"{"operation":"diff"}"#).await;
    assert!(text.contains("no differences"), "{text}");
    assert!(text.contains("pass cached: true"), "{text}");

    let text = f.ok(r#"{"operation":"diff","cached":true}"#).await;
    assert!(text.starts_with("Staged changes (HEAD → index):"), "{text}");
    assert!(text.contains("+more"), "{text}");

    // Against a revision: the staged change plus the second commit's change to src/a.rs.
    let text = f.ok(r#"{"operation":"diff","rev":"HEAD~1"}"#).await;
    assert!(
        text.contains("+fn b() {}") && text.contains("+more"),
        "{text}"
    );
    let text = f
        .ok(r#"{"operation":"diff","rev":"HEAD~1","paths":["docs"]}"#)
        .await;
    assert!(!text.contains("fn b") && text.contains("+more"), "{text}");

    // A range between commits, as `git diff A..B`.
    let text = f.ok(r#"{"operation":"diff","rev":"HEAD~1..HEAD"}"#).await;
    assert!(
        text.contains("+fn b() {}") && !text.contains("more"),
        "{text}"
    );
    let text = f.ok(r#"{"operation":"diff","rev":"HEAD...HEAD~1"}"#).await;
    assert!(text.contains("no differences"), "{text}");

    let e = f
        .err(r#"{"operation":"diff","rev":"HEAD~1..HEAD","cached":true}"#)
        .await;
    assert_eq!(e.kind(), ErrorKind::InvalidArgs);
    let e = f
        .err(r#"{"operation":"diff","rev":"no-such-branch"}"#)
        .await;
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}

#[tokio::test]
async fn log_lines_dates_in_utc_limit_and_paths() {
    let f = Fixture::repo();
    let out = f.output(r#"{"operation":"log"}"#).await;
    let text = out.joined_text();
    let hashes: Vec<String> = f
        .git(&["log", "--format=%h"])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        text,
        format!(
            "{}  Test Author  2024-03-01T08:00:00Z  second\n{}  Test Author  2024-02-29T10:34:56Z  first\n",
            hashes[0], hashes[1]
        )
    );
    let commits = &out.structured.unwrap()["commits"];
    assert_eq!(commits[1]["date"], "2024-02-29T10:34:56Z");
    assert_eq!(commits[0]["email"], "author@example.com");

    let text = f.ok(r#"{"operation":"log","limit":1}"#).await;
    assert!(text.starts_with(&format!("{}  ", hashes[0])), "{text}");
    assert!(text.contains("older commits exist"), "{text}");

    let text = f.ok(r#"{"operation":"log","paths":["docs"]}"#).await;
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.ends_with("first\n"), "{text}");

    let text = f.ok(r#"{"operation":"log","rev":"HEAD~1..HEAD"}"#).await;
    assert!(text.contains("second") && !text.contains("first"), "{text}");

    let e = f.err(r#"{"operation":"log","limit":0}"#).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArgs);
    let e = f.err(r#"{"operation":"log","limit":1001}"#).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArgs);
}

#[tokio::test]
async fn show_gives_header_message_and_patch() {
    let f = Fixture::repo();
    let full = f.git(&["rev-parse", "HEAD"]).trim().to_string();
    let out = f.output(r#"{"operation":"show"}"#).await;
    let text = out.joined_text();
    assert!(text.starts_with(&format!("commit {full}\n")), "{text}");
    assert!(
        text.contains("Author: Test Author <author@example.com>\n"),
        "{text}"
    );
    assert!(text.contains("Date:   2024-03-01T08:00:00Z\n"), "{text}");
    assert!(text.contains("\n    second\n"), "{text}");
    assert!(text.contains("+fn b() {}"), "{text}");
    assert_eq!(out.structured.unwrap()["id"], full.as_str());

    let text = f.ok(r#"{"operation":"show","rev":"HEAD~1"}"#).await;
    assert!(
        text.contains("    first") && text.contains("+# Guide"),
        "{text}"
    );
    let text = f
        .ok(r#"{"operation":"show","rev":"HEAD~1","paths":["src/a.rs"]}"#)
        .await;
    assert!(
        !text.contains("Guide") && text.contains("+fn a() {}"),
        "{text}"
    );
}

#[tokio::test]
async fn branch_lists_and_creates() {
    let f = Fixture::repo();
    let text = f
        .ok(r#"{"operation":"branch","branch":"feature-1","create":true,"rev":"HEAD~1"}"#)
        .await;
    assert!(text.starts_with("Created branch feature-1 at "), "{text}");
    assert_eq!(
        f.git(&["rev-parse", "feature-1"]),
        f.git(&["rev-parse", "HEAD~1"])
    );
    // Creating does not switch.
    assert_eq!(f.git(&["branch", "--show-current"]).trim(), "main");

    let out = f.output(r#"{"operation":"branch"}"#).await;
    let text = out.joined_text();
    let rows: Vec<&str> = text.lines().collect();
    assert!(
        rows[0].starts_with("  feature-1  ") && rows[0].ends_with("first"),
        "{text}"
    );
    assert!(
        rows[1].starts_with("* main       ") && rows[1].ends_with("second"),
        "{text}"
    );
    assert_eq!(out.structured.unwrap()["branches"][1]["current"], true);

    let e = f
        .err(r#"{"operation":"branch","branch":"feature-1","create":true}"#)
        .await;
    assert!(e.to_string().contains("already exists"), "{e}");
    let e = f.err(r#"{"operation":"branch","branch":"other"}"#).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArgs);
    assert!(e.to_string().contains("create"), "{e}");
}

/// Deleting branches like `git branch -d` / `-D`: merged ones go, unmerged ones need `force`
/// (and the reply gives the hash that brings them back), the current branch never goes, and an
/// upstream counts as "merged into" before HEAD does.
#[tokio::test]
async fn branch_delete_refuses_current_and_unmerged_branches() {
    let f = Fixture::repo();
    let first = f.git(&["rev-parse", "HEAD~1"]).trim().to_string();
    f.git(&["branch", "merged", "HEAD~1"]);
    f.git(&["checkout", "-q", "-b", "ahead"]);
    f.write("src/ahead.rs", "// ahead\n");
    f.git(&["add", "."]);
    f.git(&["commit", "-q", "-m", "ahead only"]);
    let ahead = f.git(&["rev-parse", "HEAD"]).trim().to_string();
    // `topic` is not merged into main but is merged into its upstream `base`.
    f.git(&["branch", "base"]);
    f.git(&["branch", "topic"]);
    f.git(&["branch", "-q", "--set-upstream-to=base", "topic"]);
    f.git(&["checkout", "-q", "main"]);

    // A merged branch: deleted, and git agrees.
    let out = f
        .output(r#"{"operation":"branch","branch":"merged","delete":true}"#)
        .await;
    assert_eq!(
        out.joined_text(),
        format!("Deleted branch merged (was {}).\n", &first[..7])
    );
    let s = out.structured.unwrap();
    assert_eq!(s["deleted"], "merged");
    assert_eq!(s["merged"], true);
    assert_eq!(s["commit"], first.as_str());
    assert!(!f.git(&["branch", "--list"]).contains("merged"));

    // An unmerged branch: refused without force, kept.
    let e = f
        .err(r#"{"operation":"branch","branch":"ahead","delete":true}"#)
        .await;
    assert_eq!(e.kind(), ErrorKind::Failed, "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("not merged into HEAD")
            && msg.contains("ahead only")
            && msg.contains("`force`"),
        "{msg}"
    );
    assert_eq!(f.git(&["rev-parse", "ahead"]).trim(), ahead);

    // Merged into its upstream: deleted without force although HEAD lacks it.
    let text = f
        .ok(r#"{"operation":"branch","branch":"topic","delete":true}"#)
        .await;
    assert!(text.starts_with("Deleted branch topic"), "{text}");

    // With force: deleted, and the reply says how to get it back; the commit still exists.
    let out = f
        .output(r#"{"operation":"branch","branch":"ahead","delete":true,"force":true}"#)
        .await;
    let text = out.joined_text();
    assert!(text.starts_with("Deleted branch ahead"), "{text}");
    assert!(text.contains(&format!("rev `{ahead}`")), "{text}");
    assert_eq!(out.structured.unwrap()["forced"], true);
    f.git(&["cat-file", "-e", &ahead]);
    assert_eq!(f.git(&["branch", "--list"]), "  base\n* main\n");

    // The current branch, even with force.
    let e = f
        .err(r#"{"operation":"branch","branch":"main","delete":true,"force":true}"#)
        .await;
    assert!(e.to_string().contains("current branch"), "{e}");
    assert_eq!(f.git(&["branch", "--show-current"]).trim(), "main");

    // A branch that does not exist.
    let e = f
        .err(r#"{"operation":"branch","branch":"gone","delete":true}"#)
        .await;
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");

    // Arguments that do not fit together.
    for (args, field) in [
        (r#"{"operation":"branch","delete":true}"#, "/branch"),
        (
            r#"{"operation":"branch","branch":"base","delete":true,"create":true}"#,
            "/delete",
        ),
        (
            r#"{"operation":"branch","branch":"base","force":true}"#,
            "/force",
        ),
        (
            r#"{"operation":"branch","branch":"base","delete":true,"rev":"HEAD"}"#,
            "/rev",
        ),
        (
            r#"{"operation":"checkout","branch":"base","force":true}"#,
            "/force",
        ),
    ] {
        match f.call(args).await {
            Err(tool_core::ToolError::InvalidArgs { path, .. }) => {
                assert_eq!(path, field, "{args}");
            }
            other => panic!("{args}: {other:?}"),
        }
    }
    assert!(f.git(&["branch", "--list"]).contains("base"));
    git_fsck(&f);
}

#[tokio::test]
async fn add_and_commit_interoperate_with_git() {
    let f = Fixture::repo();
    f.write("src/new.rs", "pub fn new() {}\n");
    f.write("src/a.rs", "fn a() { 2 }\n");
    std::fs::remove_file(f.path("docs/guide.md")).unwrap();

    let out = f
        .output(r#"{"operation":"add","paths":["src","docs/guide.md"]}"#)
        .await;
    let text = out.joined_text();
    assert!(text.contains("M  src/a.rs"), "{text}");
    assert!(text.contains("A  src/new.rs"), "{text}");
    assert!(text.contains("D  docs/guide.md"), "{text}");
    assert_eq!(
        lines(&f.git(&["status", "--short"])),
        lines("M  src/a.rs\nA  src/new.rs\nD  docs/guide.md")
    );

    let out = f
        .output(r#"{"operation":"commit","message":"third: add new\n\nwith a body  "}"#)
        .await;
    let text = out.joined_text();
    assert!(text.starts_with("[main "), "{text}");
    assert!(text.contains("] third: add new\n"), "{text}");
    assert!(text.contains("3 files changed"), "{text}");
    assert!(
        text.contains("Author: Repo Person <repo@example.com>"),
        "{text}"
    );
    assert!(!text.contains("fallback"), "{text}");
    let s = out.structured.unwrap();
    assert_eq!(s["fallback_identity"], false);

    // git sees the commit, its author and committer, its message (tidied) and a clean tree.
    assert_eq!(
        f.git(&["log", "-1", "--format=%H|%an|%ae|%cn|%B"]),
        format!(
            "{}|Repo Person|repo@example.com|Repo Person|third: add new\n\nwith a body\n\n",
            s["id"].as_str().unwrap()
        )
    );
    assert_eq!(f.git(&["status", "--porcelain"]), "");
    git_fsck(&f);
}

/// Round 19: a deleted tracked file outside the paths, then `add` of a new file, killed the
/// process (git2 read a null pathspec in libgit2's callback). The new file is staged and the
/// deletion outside the paths is not; twin: `add ["."]` stages the deletion.
#[tokio::test]
async fn add_beside_a_deleted_file_outside_the_paths() {
    let f = Fixture::repo();
    std::fs::remove_file(f.path("docs/guide.md")).unwrap();
    f.write("b", "new\n");
    let out = f.output(r#"{"operation":"add","paths":["b"]}"#).await;
    let text = out.joined_text();
    assert!(text.contains("A  b"), "{text}");
    assert_eq!(
        lines(&f.git(&["status", "--short"])),
        lines("A  b\n D docs/guide.md")
    );
    let out = f.output(r#"{"operation":"add","paths":["."]}"#).await;
    assert!(
        out.joined_text().contains("D  docs/guide.md"),
        "{}",
        out.joined_text()
    );
    assert_eq!(
        lines(&f.git(&["status", "--short"])),
        lines("A  b\nD  docs/guide.md")
    );
}

fn git_fsck(f: &Fixture) {
    let out = git_command(f.root(), &["fsck", "--strict"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git fsck: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn add_refuses_what_matches_nothing_and_ignored_files() {
    let f = Fixture::repo();
    let e = f.err(r#"{"operation":"add","paths":["nope.txt"]}"#).await;
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    f.write(".gitignore", "*.log\n");
    f.write("debug.log", "x\n");
    let e = f.err(r#"{"operation":"add","paths":["debug.log"]}"#).await;
    assert!(e.to_string().contains("Nothing was staged"), "{e}");
    let e = f.err(r#"{"operation":"add"}"#).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArgs);
    // Paths are literal: `*.rs` names a file called `*.rs`, which does not exist.
    let e = f.err(r#"{"operation":"add","paths":["src/*.rs"]}"#).await;
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}

#[tokio::test]
async fn commit_refuses_an_empty_commit_and_a_missing_message() {
    let f = Fixture::repo();
    let e = f.err(r#"{"operation":"commit","message":"nothing"}"#).await;
    assert_eq!(e.kind(), ErrorKind::Failed);
    assert!(e.to_string().contains("Nothing is staged"), "{e}");
    // Unstaged changes do not count.
    f.write("src/a.rs", "changed\n");
    let e = f.err(r#"{"operation":"commit","message":"nothing"}"#).await;
    assert!(e.to_string().contains("Nothing is staged"), "{e}");
    let e = f.err(r#"{"operation":"commit"}"#).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArgs);
    let e = f.err(r#"{"operation":"commit","message":"   "}"#).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArgs);
    assert_eq!(f.git(&["rev-list", "--count", "HEAD"]).trim(), "2");
}

#[tokio::test]
async fn checkout_switches_creates_and_detaches() {
    let f = Fixture::repo();
    let text = f
        .ok(r#"{"operation":"checkout","branch":"feature-1","create":true,"rev":"HEAD~1"}"#)
        .await;
    assert!(
        text.starts_with("Switched to a new branch feature-1"),
        "{text}"
    );
    assert_eq!(f.git(&["branch", "--show-current"]).trim(), "feature-1");
    assert_eq!(f.read("src/a.rs"), "fn a() {}\n");
    assert_eq!(f.git(&["status", "--porcelain"]), "");

    let text = f.ok(r#"{"operation":"checkout","branch":"main"}"#).await;
    assert!(text.starts_with("Switched to branch main"), "{text}");
    assert_eq!(f.read("src/a.rs"), "fn a() {}\nfn b() {}\n");
    let text = f.ok(r#"{"operation":"checkout","branch":"main"}"#).await;
    assert_eq!(text, "Already on main.\n");

    // A local change the switch does not touch is carried along, as with git.
    f.write("docs/guide.md", "# Guide\nlocal\n");
    let text = f
        .ok(r#"{"operation":"checkout","branch":"feature-1"}"#)
        .await;
    assert!(
        text.contains("Local changes were kept: `docs/guide.md`"),
        "{text}"
    );
    assert_eq!(f.read("docs/guide.md"), "# Guide\nlocal\n");
    f.ok(r#"{"operation":"checkout","branch":"main"}"#).await;

    let text = f.ok(r#"{"operation":"checkout","rev":"HEAD~1"}"#).await;
    assert!(text.starts_with("HEAD is now detached at"), "{text}");
    assert_eq!(f.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "HEAD");
    let status = f.ok(r#"{"operation":"status"}"#).await;
    assert!(status.starts_with("## HEAD (detached at "), "{status}");

    let e = f.err(r#"{"operation":"checkout","branch":"nope"}"#).await;
    assert_eq!(e.kind(), ErrorKind::NotFound);
    let e = f.err(r#"{"operation":"checkout"}"#).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArgs);
}

#[tokio::test]
async fn checkout_never_discards_local_changes() {
    let f = Fixture::repo();
    f.git(&["branch", "old", "HEAD~1"]);
    // src/a.rs differs between main and old; a local edit to it blocks the switch.
    f.write("src/a.rs", "precious work\n");
    let e = f.err(r#"{"operation":"checkout","branch":"old"}"#).await;
    assert_eq!(e.kind(), ErrorKind::Failed);
    assert!(e.to_string().contains("src/a.rs"), "{e}");
    assert_eq!(f.read("src/a.rs"), "precious work\n");
    assert_eq!(f.git(&["branch", "--show-current"]).trim(), "main");
    // The same for a new branch at that commit: refused, and no branch is left behind.
    let e = f
        .err(r#"{"operation":"checkout","branch":"new","create":true,"rev":"old"}"#)
        .await;
    assert!(e.to_string().contains("overwrite local changes"), "{e}");
    assert!(
        !git_command(f.root(), &["rev-parse", "--verify", "-q", "new"])
            .status()
            .unwrap()
            .success()
    );
    // Restoring the changed file itself is exactly what would discard the work.
    let e = f
        .err(r#"{"operation":"checkout","paths":["src/a.rs"]}"#)
        .await;
    assert!(e.to_string().contains("discard uncommitted changes"), "{e}");
    let e = f
        .err(r#"{"operation":"checkout","paths":["src"],"rev":"HEAD~1"}"#)
        .await;
    assert!(e.to_string().contains("src/a.rs"), "{e}");
    assert_eq!(f.read("src/a.rs"), "precious work\n");
    // A staged change is at stake too when restoring from a commit.
    f.write("docs/guide.md", "staged\n");
    f.git(&["add", "docs/guide.md"]);
    let e = f
        .err(r#"{"operation":"checkout","paths":["docs"],"rev":"HEAD"}"#)
        .await;
    assert!(e.to_string().contains("docs/guide.md"), "{e}");
    assert_eq!(f.read("docs/guide.md"), "staged\n");
}

#[tokio::test]
async fn checkout_restores_clean_and_deleted_files() {
    let f = Fixture::repo();
    std::fs::remove_file(f.path("docs/guide.md")).unwrap();
    let text = f
        .ok(r#"{"operation":"checkout","paths":["docs/guide.md"]}"#)
        .await;
    assert!(text.contains("Restored from the index (1 file)"), "{text}");
    assert_eq!(f.read("docs/guide.md"), "# Guide\n");

    let text = f
        .ok(r#"{"operation":"checkout","paths":["src/a.rs"],"rev":"HEAD~1"}"#)
        .await;
    assert!(text.contains("Restored from HEAD~1"), "{text}");
    assert_eq!(f.read("src/a.rs"), "fn a() {}\n");
    // As with `git checkout HEAD~1 -- src/a.rs`, the index follows.
    assert_eq!(f.git(&["status", "--short"]), "M  src/a.rs\n");

    let text = f.ok(r#"{"operation":"checkout","paths":["docs"]}"#).await;
    assert!(text.contains("Nothing to restore"), "{text}");
}

#[tokio::test]
async fn stash_push_list_pop_apply_drop() {
    let f = Fixture::repo();
    let e = f.err(r#"{"operation":"stash"}"#).await;
    assert!(e.to_string().contains("Nothing to stash"), "{e}");

    f.write("src/a.rs", "work in progress\n");
    let text = f.ok(r#"{"operation":"stash","message":"wip one"}"#).await;
    assert!(
        text.starts_with("Saved the local changes as stash@{0}"),
        "{text}"
    );
    assert_eq!(f.read("src/a.rs"), "fn a() {}\nfn b() {}\n");
    assert!(f.git(&["stash", "list"]).contains("wip one"));

    let out = f.output(r#"{"operation":"stash","action":"list"}"#).await;
    assert_eq!(out.joined_text(), "stash@{0}: On main: wip one\n");
    assert_eq!(out.structured.unwrap()["stashes"][0]["ref"], "stash@{0}");

    let text = f.ok(r#"{"operation":"stash","action":"pop"}"#).await;
    assert!(text.starts_with("Applied and dropped stash@{0}"), "{text}");
    assert_eq!(f.read("src/a.rs"), "work in progress\n");
    assert_eq!(f.git(&["stash", "list"]), "");

    // A stash of only some paths is refused while other files have changes (libgit2 would
    // reset those too), and nothing is touched.
    f.write("docs/guide.md", "also changed\n");
    let e = f
        .err(r#"{"operation":"stash","action":"push","paths":["docs"]}"#)
        .await;
    assert!(e.to_string().contains("would discard those"), "{e}");
    assert_eq!(f.read("docs/guide.md"), "also changed\n");
    assert_eq!(f.read("src/a.rs"), "work in progress\n");
    assert_eq!(f.git(&["stash", "list"]), "");
    // Once the other change is committed, paths covering every change work.
    f.git(&["commit", "-q", "-m", "wip", "--", "src/a.rs"]);
    let e = f
        .err(r#"{"operation":"stash","action":"push","paths":["src"]}"#)
        .await;
    assert!(
        e.to_string()
            .contains("Nothing to stash under the given paths"),
        "{e}"
    );
    f.ok(r#"{"operation":"stash","action":"push","paths":["docs"]}"#)
        .await;
    assert_eq!(f.read("docs/guide.md"), "# Guide\n");

    let text = f
        .ok(r#"{"operation":"stash","action":"apply","rev":"stash@{0}"}"#)
        .await;
    assert!(text.contains("kept in the list"), "{text}");
    assert_eq!(f.read("docs/guide.md"), "also changed\n");
    assert_eq!(f.git(&["stash", "list"]).lines().count(), 1);

    let text = f
        .ok(r#"{"operation":"stash","action":"drop","rev":"0"}"#)
        .await;
    assert!(text.starts_with("Dropped stash@{0}"), "{text}");
    assert_eq!(f.git(&["stash", "list"]), "");

    let e = f.err(r#"{"operation":"stash","action":"pop"}"#).await;
    assert_eq!(e.kind(), ErrorKind::NotFound);
    let e = f
        .err(r#"{"operation":"stash","action":"drop","rev":"HEAD"}"#)
        .await;
    assert_eq!(e.kind(), ErrorKind::InvalidArgs);
}

#[tokio::test]
async fn stash_pop_that_would_overwrite_keeps_the_stash() {
    let f = Fixture::repo();
    f.write("src/a.rs", "stashed version\n");
    f.ok(r#"{"operation":"stash"}"#).await;
    f.write("src/a.rs", "newer local version\n");
    let e = f.err(r#"{"operation":"stash","action":"pop"}"#).await;
    assert_eq!(e.kind(), ErrorKind::Failed, "{e}");
    assert_eq!(f.read("src/a.rs"), "newer local version\n");
    assert_eq!(f.git(&["stash", "list"]).lines().count(), 1);
}

#[tokio::test]
async fn blame_names_the_commit_and_author_of_each_line() {
    let f = Fixture::repo();
    f.git(&["config", "user.name", "Other"]);
    let first = f.git(&["rev-parse", "HEAD~1"])[..8].to_string();
    let second = f.git(&["rev-parse", "HEAD"])[..8].to_string();

    let out = f
        .output(r#"{"operation":"blame","paths":["src/a.rs"]}"#)
        .await;
    let text = out.joined_text();
    assert_eq!(
        text,
        format!(
            "1  {first}  Test Author           fn a() {{}}\n2  {second}  Test Author           fn b() {{}}\n"
        )
    );
    assert_eq!(out.structured.unwrap()["lines"], 2);

    // The working tree: an uncommitted line is marked as such.
    f.write("src/a.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    let text = f.ok(r#"{"operation":"blame","paths":["src/a.rs"]}"#).await;
    assert!(
        text.ends_with("3  00000000  Not Committed Yet     fn c() {}\n"),
        "{text}"
    );
    // At a revision.
    let text = f
        .ok(r#"{"operation":"blame","paths":["src/a.rs"],"rev":"HEAD~1"}"#)
        .await;
    assert_eq!(text.lines().count(), 1, "{text}");

    let e = f.err(r#"{"operation":"blame","paths":["nope.rs"]}"#).await;
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    let e = f
        .err(r#"{"operation":"blame","paths":["src/a.rs","docs/guide.md"]}"#)
        .await;
    assert_eq!(e.kind(), ErrorKind::InvalidArgs);
}

#[tokio::test]
async fn init_creates_a_repository_git_can_use() {
    let f = Fixture::empty();
    let e = f.err(r#"{"operation":"status"}"#).await;
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("operation `init`"), "{e}");

    let text = f.ok(r#"{"operation":"init"}"#).await;
    assert!(
        text.starts_with("Created an empty git repository in ."),
        "{text}"
    );
    assert_eq!(
        f.git(&["rev-parse", "--is-inside-work-tree"]).trim(),
        "true"
    );
    // No external templates: no sample hooks were copied.
    assert!(!f.path(".git/hooks/pre-commit.sample").exists());
    let text = f.ok(r#"{"operation":"init"}"#).await;
    assert!(text.contains("already a git repository"), "{text}");

    // Before the first commit.
    let text = f.ok(r#"{"operation":"status"}"#).await;
    assert!(text.starts_with("## No commits yet on "), "{text}");
    assert_eq!(f.ok(r#"{"operation":"log"}"#).await, "No commits yet.\n");
    let e = f.err(r#"{"operation":"commit","message":"empty"}"#).await;
    assert!(e.to_string().contains("Nothing is staged"), "{e}");
    f.write("README.md", "hello\n");
    f.ok(r#"{"operation":"add","paths":["."]}"#).await;
    let text = f.ok(r#"{"operation":"commit","message":"root"}"#).await;
    assert!(text.contains("(root commit) root"), "{text}");
    assert_eq!(f.git(&["log", "--format=%s"]), "root\n");
    assert_eq!(f.git(&["status", "--porcelain"]), "");
}

#[tokio::test]
async fn init_inside_the_workspace_and_use_it_through_paths() {
    let f = Fixture::empty();
    let text = f.ok(r#"{"operation":"init","paths":["sub/proj"]}"#).await;
    assert!(text.contains("in sub/proj"), "{text}");
    assert!(f.path("sub/proj/.git").is_dir());
    f.write("sub/proj/x.txt", "x\n");
    let text = f.ok(r#"{"operation":"status","paths":["sub/proj"]}"#).await;
    assert!(text.starts_with("Repository: sub/proj/"), "{text}");
    assert!(text.contains("?? x.txt"), "{text}");
    f.ok(r#"{"operation":"add","paths":["sub/proj/x.txt"]}"#)
        .await;
    let text = f
        .ok(r#"{"operation":"commit","message":"nested","paths":["sub/proj"]}"#)
        .await;
    assert!(text.contains("(root commit) nested"), "{text}");
    assert_eq!(
        super::git(&f.path("sub/proj"), &["log", "--format=%s"]),
        "nested\n"
    );
    // Without paths, the root (not a repository) is where the repository is looked for.
    let e = f.err(r#"{"operation":"log"}"#).await;
    assert_eq!(e.kind(), ErrorKind::NotFound);
    let e = f.err(r#"{"operation":"init","paths":[".git/x"]}"#).await;
    assert_eq!(e.kind(), ErrorKind::Denied);
}

#[tokio::test]
async fn long_output_is_cut_with_a_hint() {
    let f = Fixture::with_limits(Limits {
        max_output_bytes: 2000,
        ..Limits::default()
    });
    f.git(&["init", "-q", "-b", "main"]);
    let body: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    f.write("big.txt", &body);
    f.git(&["add", "."]);
    f.git(&["commit", "-q", "-m", "big"]);
    f.write("big.txt", &body.replace("line", "LINE"));
    let out = f.output(r#"{"operation":"diff"}"#).await;
    let text = out.joined_text();
    assert!(text.len() <= 2000, "{}", text.len());
    let cut = out.truncated.expect("cut");
    assert!(
        cut.hint.contains("pass paths to narrow the diff"),
        "{}",
        cut.hint
    );
    assert!(text.contains("pass paths to narrow the diff"), "{text}");
    assert!(text.starts_with("Unstaged changes"), "{text}");
    assert!(text.ends_with("+LINE 1999\n"), "{text}");
}

#[tokio::test]
async fn commit_with_paths_records_only_what_is_staged_under_them() {
    let f = Fixture::repo();
    f.write("src/a.rs", "fn a() { 3 }\n");
    f.write("docs/guide.md", "# Guide v2\n");
    f.write("docs/new.md", "new\n");
    f.git(&["add", "."]);
    let text = f
        .ok(r#"{"operation":"commit","message":"docs only","paths":["docs"]}"#)
        .await;
    assert!(text.contains("2 files changed"), "{text}");
    assert_eq!(
        lines(&f.git(&["show", "--name-status", "--format="])),
        lines("M\tdocs/guide.md\nA\tdocs/new.md")
    );
    // The change to src/a.rs is still staged, and nothing else is.
    assert_eq!(f.git(&["status", "--short"]), "M  src/a.rs\n");
    let e = f
        .err(r#"{"operation":"commit","message":"again","paths":["docs"]}"#)
        .await;
    assert!(e.to_string().contains("under the given paths"), "{e}");
    git_fsck(&f);
}
