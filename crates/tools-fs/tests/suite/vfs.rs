//! Backend conformance: one table of cases, run through the real tool stack (schema
//! validation, policy, approval, timeout, truncation) against every backend: the local
//! directory, the SQLite virtual filesystem and, when `TOOLSHED_TEST_PG` names a database and the
//! `postgres` feature is on, the PostgreSQL one. Each case must give the same outcome on all of
//! them, word for word. Below the table: what only makes sense as a scenario (persistence, two
//! handles on one store, a 20 MB file, chunk-boundary sizes, concurrent atomic replacement,
//! hostile names). PostgreSQL-only scenarios (volumes, replicas racing) are in `vfs_pg.rs`.

use std::path::Path;
use std::sync::Arc;
#[cfg(feature = "postgres")]
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;
use serde_json::{Value, json};
use tempfile::TempDir;
use tool_core::workspace::FileKind;
use tool_core::{
    ApproveAll, ErrorKind, Limits, Policy, Registry, Stack, ToolContext, ToolError, ToolOutput,
    Workspace,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Backend {
    Local,
    Sqlite,
    #[cfg(feature = "postgres")]
    Postgres,
}

/// The stores a test runs on: local and SQLite always, PostgreSQL when a test database is
/// configured (one fresh schema per test, dropped at the end; one volume per workspace).
pub(super) struct Backends {
    #[cfg(feature = "postgres")]
    pg: Option<tool_core::pg::PgPool>,
}

impl Backends {
    // Only PostgreSQL needs the label (it names the test schema).
    #[cfg_attr(not(feature = "postgres"), allow(unused_variables))]
    pub(super) fn new(label: &str) -> Backends {
        Backends {
            #[cfg(feature = "postgres")]
            pg: tool_core::pg::test_pool(label),
        }
    }

    /// Every backend available here.
    pub(super) fn all(&self) -> Vec<Backend> {
        let mut out = vec![Backend::Local];
        out.extend(self.virtual_ones());
        out
    }

    /// The virtual filesystems available here.
    pub(super) fn virtual_ones(&self) -> Vec<Backend> {
        #[allow(unused_mut)] // Only the postgres feature adds to it.
        let mut out = vec![Backend::Sqlite];
        #[cfg(feature = "postgres")]
        if self.pg.is_some() {
            out.push(Backend::Postgres);
        }
        out
    }
}

impl Drop for Backends {
    fn drop(&mut self) {
        #[cfg(feature = "postgres")]
        if let Some(pool) = &self.pg {
            // Best effort: a test schema left behind is only clutter.
            let _ = pool.drop_schema();
        }
    }
}

/// A fresh workspace of one backend in its own temp dir (or PostgreSQL volume), with a
/// supervised context.
pub(super) struct Env {
    backend: Backend,
    dir: TempDir,
    /// The PostgreSQL pool and volume, to open the workspace again.
    #[cfg(feature = "postgres")]
    volume: Option<(tool_core::pg::PgPool, String)>,
    pub(super) ctx: ToolContext,
}

impl Env {
    // Only PostgreSQL needs `backends` (its pool).
    #[cfg_attr(not(feature = "postgres"), allow(unused_variables))]
    pub(super) fn new(backend: Backend, backends: &Backends) -> Env {
        let dir = tempfile::tempdir().unwrap();
        #[cfg(feature = "postgres")]
        let mut volume = None;
        let ws = match backend {
            Backend::Local => {
                let root = dir.path().join("ws");
                std::fs::create_dir(&root).unwrap();
                Workspace::local(&root).unwrap()
            }
            Backend::Sqlite => tools_fs::sqlite_workspace(&dir.path().join("ws.db")).unwrap(),
            #[cfg(feature = "postgres")]
            Backend::Postgres => {
                static VOLUMES: AtomicU64 = AtomicU64::new(0);
                let pool = backends.pg.clone().expect("PostgreSQL is configured");
                let name = format!("case-{}", VOLUMES.fetch_add(1, Ordering::Relaxed));
                let ws = tools_fs::pg_workspace(pool.clone(), &name).unwrap();
                volume = Some((pool, name));
                ws
            }
        };
        Env {
            backend,
            dir,
            #[cfg(feature = "postgres")]
            volume,
            ctx: context(ws),
        }
    }

    pub(super) fn ws(&self) -> &Workspace {
        &self.ctx.workspace
    }

    /// The same store opened again by a separate handle: another connection to the SQLite file,
    /// or another pool on the PostgreSQL schema (what a second replica would have).
    pub(super) fn reopen(&self) -> Workspace {
        match self.backend {
            Backend::Local => Workspace::local(self.dir.path().join("ws")).unwrap(),
            Backend::Sqlite => tools_fs::sqlite_workspace(&self.dir.path().join("ws.db")).unwrap(),
            #[cfg(feature = "postgres")]
            Backend::Postgres => {
                let (pool, name) = self.volume.as_ref().expect("a PostgreSQL volume");
                tools_fs::pg_workspace(replica(pool), name).unwrap()
            }
        }
    }

    /// Nothing appeared beside the workspace (a traversal would land there).
    fn assert_nothing_outside(&self, case: &str) {
        let mut names: Vec<String> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let allowed: &[&str] = match self.backend {
            Backend::Local => &["ws"],
            Backend::Sqlite => &["ws.db", "ws.db-shm", "ws.db-wal"],
            #[cfg(feature = "postgres")]
            Backend::Postgres => &[],
        };
        assert!(
            names.iter().all(|n| allowed.contains(&n.as_str())),
            "{case} ({:?}): something was created outside the workspace: {names:?}",
            self.backend
        );
    }
}

/// A second pool on the schema of `pool`, as another replica would open.
#[cfg(feature = "postgres")]
pub(super) fn replica(pool: &tool_core::pg::PgPool) -> tool_core::pg::PgPool {
    let url = std::env::var(tool_core::pg::TEST_URL_VAR).unwrap();
    tool_core::pg::off_runtime(|| {
        tool_core::pg::PgPool::connect(
            &tool_core::pg::PgConfig::new(url).with_schema(pool.schema()),
        )
        .unwrap()
    })
}

pub(super) fn context(ws: Workspace) -> ToolContext {
    ToolContext::new(
        ws,
        Arc::new(Policy::supervised()),
        Arc::new(Limits::default()),
    )
}

pub(super) fn stack(approve: bool) -> Stack {
    let mut r = Registry::new();
    r.register_all(tools_fs::tools(&Default::default()))
        .unwrap();
    let stack = Stack::new(r);
    if approve {
        stack.with_approver(Arc::new(ApproveAll))
    } else {
        stack
    }
}

pub(super) async fn call(
    stack: &Stack,
    ctx: &ToolContext,
    tool: &str,
    args: &Value,
) -> Result<ToolOutput, ToolError> {
    stack
        .call_json(tool, &args.to_string(), ctx.for_call())
        .await
}

/// Runs `f` on a thread of its own: workspace calls block (the PostgreSQL client refuses to
/// block on an async runtime's thread), and the tools run them on blocking threads the same way.
pub(super) fn off<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(f)
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Reads a whole file through the workspace (not through a tool).
pub(super) fn content(ws: &Workspace, path: &str) -> Vec<u8> {
    off(|| {
        let p = ws.resolve(path).unwrap();
        ws.read_to_end(&p, 64 << 20).unwrap()
    })
}

/// What a path must be after a case.
#[derive(Debug, Clone)]
enum State {
    File(String),
    Dir,
    Absent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ok,
    Err(ErrorKind),
}

struct Case {
    name: &'static str,
    /// Calls that must succeed first (with approval).
    setup: Vec<(&'static str, Value)>,
    /// The call under test.
    tool: &'static str,
    args: Value,
    /// Whether an approver answers `Ask` (otherwise it fails with needs_approval).
    approve: bool,
    outcome: Outcome,
    /// Substrings the output text (or error message) must contain.
    has: Vec<String>,
    /// Substrings it must not contain.
    lacks: Vec<&'static str>,
    /// The state of paths afterwards.
    after: Vec<(&'static str, State)>,
}

impl Case {
    fn new(name: &'static str, tool: &'static str, args: Value) -> Case {
        Case {
            name,
            setup: Vec::new(),
            tool,
            args,
            approve: false,
            outcome: Outcome::Ok,
            has: Vec::new(),
            lacks: Vec::new(),
            after: Vec::new(),
        }
    }

    fn setup(mut self, tool: &'static str, args: Value) -> Case {
        self.setup.push((tool, args));
        self
    }

    fn write(self, path: &str, text: &str) -> Case {
        self.setup("file_write", json!({"path": path, "content": text}))
    }

    fn mkdir(self, path: &str) -> Case {
        self.setup("make_dir", json!({"path": path}))
    }

    fn approved(mut self) -> Case {
        self.approve = true;
        self
    }

    fn fails(mut self, kind: ErrorKind) -> Case {
        self.outcome = Outcome::Err(kind);
        self
    }

    fn has(mut self, text: &str) -> Case {
        self.has.push(text.to_string());
        self
    }

    fn lacks(mut self, text: &'static str) -> Case {
        self.lacks.push(text);
        self
    }

    fn file(mut self, path: &'static str, text: &str) -> Case {
        self.after.push((path, State::File(text.to_string())));
        self
    }

    fn dir(mut self, path: &'static str) -> Case {
        self.after.push((path, State::Dir));
        self
    }

    fn absent(mut self, path: &'static str) -> Case {
        self.after.push((path, State::Absent));
        self
    }
}

const FIVE_LINES: &str = "l1\nl2\nl3\nl4\nl5\n";

/// The table. Every case runs on a fresh workspace of each backend.
fn cases() -> Vec<Case> {
    vec![
        // file_read: paging, the next-call hint, the end, errors, binary refusal.
        Case::new(
            "read a page with the next call",
            "file_read",
            json!({"path": "p.txt", "offset": 2, "limit": 2}),
        )
        .write("p.txt", FIVE_LINES)
        .has("2\tl2\n3\tl3\n")
        .has(concat!(
            "[Showing lines 2-3; the file continues. ",
            r#"Next call: file_read {"path": "p.txt", "offset": 4, "limit": 2}]"#
        ))
        .lacks("l1")
        .lacks("l4"),
        Case::new(
            "read the last page",
            "file_read",
            json!({"path": "p.txt", "offset": 4, "limit": 10}),
        )
        .write("p.txt", FIVE_LINES)
        .has("4\tl4\n5\tl5\n")
        .lacks("Next call"),
        Case::new("read a whole file", "file_read", json!({"path": "d/p.txt"}))
            .write("d/p.txt", "only\nno newline at the end")
            .has("1\tonly\n2\tno newline at the end\n")
            .lacks("Next call"),
        Case::new(
            "read past the end",
            "file_read",
            json!({"path": "p.txt", "offset": 9}),
        )
        .write("p.txt", FIVE_LINES)
        .fails(ErrorKind::InvalidArgs)
        .has("has only 5 lines"),
        Case::new("read an empty file", "file_read", json!({"path": "empty"}))
            .write("empty", "")
            .has("empty is empty."),
        Case::new(
            "read a missing file",
            "file_read",
            json!({"path": "nope.txt"}),
        )
        .fails(ErrorKind::NotFound)
        .has("nope.txt does not exist"),
        Case::new("read a directory", "file_read", json!({"path": "d"}))
            .mkdir("d")
            .fails(ErrorKind::Failed)
            .has("it is a directory, not a regular file"),
        Case::new("read through a file", "file_read", json!({"path": "f/x"}))
            .write("f", "x")
            .fails(ErrorKind::Failed)
            .has("a component of the path is a file"),
        Case::new(
            "binary files are refused",
            "file_read",
            json!({"path": "bin.dat"}),
        )
        .write("bin.dat", "a\u{0}b")
        .fails(ErrorKind::Failed)
        .has("bin.dat is a binary file; pass \"encoding\": \"base64\""),
        Case::new(
            "binary files read as base64",
            "file_read",
            json!({"path": "bin.dat", "encoding": "base64"}),
        )
        .write("bin.dat", "a\u{0}b")
        .has("YQBi"),
        Case::new(
            "long lines are cut",
            "file_read",
            json!({"path": "long.txt"}),
        )
        .write("long.txt", &format!("{}\nshort\n", "x".repeat(2500)))
        .has("… [line cut: 500 more bytes]")
        .has("2\tshort\n"),
        // file_write: parents, replacement, refusals.
        Case::new(
            "write creates parents",
            "file_write",
            json!({"path": "a/b/c.txt", "content": "hi"}),
        )
        .has("Created a/b/c.txt (2 bytes).")
        .dir("a")
        .dir("a/b")
        .file("a/b/c.txt", "hi"),
        Case::new(
            "write replaces atomically",
            "file_write",
            json!({"path": "x.txt", "content": "new content"}),
        )
        .write("x.txt", &"old content\n".repeat(1000))
        .has("Replaced x.txt (11 bytes).")
        .file("x.txt", "new content"),
        Case::new(
            "write an empty file",
            "file_write",
            json!({"path": "e", "content": ""}),
        )
        .has("Created e (0 bytes).")
        .file("e", ""),
        Case::new(
            "write onto a directory",
            "file_write",
            json!({"path": "d", "content": "x"}),
        )
        .mkdir("d/inner")
        .fails(ErrorKind::Failed)
        .has("it is a directory")
        .dir("d/inner"),
        Case::new(
            "write below a file",
            "file_write",
            json!({"path": "f/x", "content": "x"}),
        )
        .write("f", "keep")
        .fails(ErrorKind::Failed)
        .has("a component of the path is a file")
        .file("f", "keep"),
        Case::new(
            "write the root",
            "file_write",
            json!({"path": ".", "content": "x"}),
        )
        .fails(ErrorKind::InvalidArgs),
        // file_edit.
        Case::new(
            "edit exactly one match",
            "file_edit",
            json!({"path": "e.txt", "old_string": "beta", "new_string": "BETA"}),
        )
        .write("e.txt", "alpha\nbeta\ngamma\n")
        .has("Edited e.txt (1 edit).")
        .has("-beta\n+BETA")
        .file("e.txt", "alpha\nBETA\ngamma\n"),
        Case::new(
            "edit with several matches",
            "file_edit",
            json!({"path": "e.txt", "old_string": "x", "new_string": "y"}),
        )
        .write("e.txt", "x\nx\nx\n")
        .fails(ErrorKind::Failed)
        .has("occurs 3 times (at lines 1, 2, 3)")
        .file("e.txt", "x\nx\nx\n"),
        Case::new(
            "edit replace_all",
            "file_edit",
            json!({"path": "e.txt", "old_string": "x", "new_string": "y", "replace_all": true}),
        )
        .write("e.txt", "x\nx\nx\n")
        .file("e.txt", "y\ny\ny\n"),
        Case::new(
            "edit text not found",
            "file_edit",
            json!({"path": "e.txt", "old_string": "fn  main()  {}", "new_string": "fn start() {}"}),
        )
        .write("e.txt", "fn main() {}\n")
        .fails(ErrorKind::Failed)
        .has("`old_string` was not found")
        .has("A match exists if whitespace is ignored, starting at line 1")
        .file("e.txt", "fn main() {}\n"),
        Case::new(
            "multi-edit is all or nothing",
            "file_edit",
            json!({"path": "e.txt", "edits": [
                {"old_string": "alpha", "new_string": "ALPHA"},
                {"old_string": "delta", "new_string": "DELTA"}]}),
        )
        .write("e.txt", "alpha\nbeta\n")
        .fails(ErrorKind::Failed)
        .has("edit 2 of 2")
        .file("e.txt", "alpha\nbeta\n"),
        Case::new(
            "edit a missing file",
            "file_edit",
            json!({"path": "none", "old_string": "a", "new_string": "b"}),
        )
        .fails(ErrorKind::NotFound)
        .absent("none"),
        // file_append.
        Case::new(
            "append creates the file and parents",
            "file_append",
            json!({"path": "logs/new.log", "content": "one\n"}),
        )
        .has("Appended 4 bytes to logs/new.log (created).")
        .file("logs/new.log", "one\n"),
        Case::new(
            "append to a file",
            "file_append",
            json!({"path": "log", "content": "two\n"}),
        )
        .write("log", "one\n")
        .has("Appended 4 bytes to log.")
        .file("log", "one\ntwo\n"),
        Case::new(
            "append across a chunk boundary",
            "file_append",
            json!({"path": "log", "content": "b".repeat(5000)}),
        )
        .write("log", &"a".repeat(4000))
        .file("log", &format!("{}{}", "a".repeat(4000), "b".repeat(5000))),
        Case::new(
            "append to a directory",
            "file_append",
            json!({"path": "d", "content": "x"}),
        )
        .mkdir("d")
        .fails(ErrorKind::Failed)
        .has("it is a directory")
        .dir("d"),
        // list_dir.
        Case::new(
            "list directories first, sorted, hidden skipped",
            "list_dir",
            json!({}),
        )
        .write("b.txt", "")
        .write("a.txt", "")
        .write(".hidden", "")
        .mkdir("zdir")
        .mkdir("adir")
        .has("adir/\nzdir/\na.txt\nb.txt\n")
        .lacks(".hidden"),
        Case::new(
            "list with hidden names",
            "list_dir",
            json!({"include_hidden": true}),
        )
        .write(".hidden", "")
        .write("a", "")
        .has(".hidden\na\n"),
        Case::new(
            "list recursively, honouring .gitignore",
            "list_dir",
            json!({"recursive": true}),
        )
        .write("src/main.rs", "fn main() {}")
        .write("src/util/mod.rs", "")
        .write("README.md", "")
        .write(".gitignore", "target/\n*.log\n")
        .write("target/debug/app", "")
        .write("src/trace.log", "")
        .has("src/\nsrc/util/\nsrc/util/mod.rs\nsrc/main.rs\nREADME.md\n")
        .lacks("target")
        .lacks("trace.log"),
        Case::new(
            "list recursively with a depth limit",
            "list_dir",
            json!({"path": "a", "recursive": true, "max_depth": 2}),
        )
        .write("a/b/c/d.txt", "")
        .has("b/\nb/c/\n")
        .lacks("d.txt"),
        Case::new("list an empty directory", "list_dir", json!({"path": "e"}))
            .mkdir("e")
            .has("e/ is empty."),
        Case::new("list caps entries", "list_dir", json!({"max_entries": 2}))
            .write("1", "")
            .write("2", "")
            .write("3", "")
            .has("1\n2\n[... and 1 more entries"),
        Case::new("list a file", "list_dir", json!({"path": "f"}))
            .write("f", "")
            .fails(ErrorKind::Failed)
            .has("Cannot list f: a component of the path is a file, not a directory."),
        Case::new(
            "list a missing directory",
            "list_dir",
            json!({"path": "nope"}),
        )
        .fails(ErrorKind::NotFound),
        // make_dir.
        Case::new(
            "make_dir creates parents",
            "make_dir",
            json!({"path": "m/n/o"}),
        )
        .has("Created m/n/o/.")
        .dir("m")
        .dir("m/n/o"),
        Case::new(
            "make_dir on an existing directory",
            "make_dir",
            json!({"path": "m"}),
        )
        .mkdir("m")
        .has("m/ already exists."),
        Case::new("make_dir over a file", "make_dir", json!({"path": "f/g"}))
            .write("f", "keep")
            .fails(ErrorKind::Failed)
            .file("f", "keep"),
        // delete_file.
        Case::new("delete a file", "delete_file", json!({"path": "d/f"}))
            .write("d/f", "x")
            .has("Deleted d/f.")
            .absent("d/f")
            .dir("d"),
        Case::new(
            "delete an empty directory",
            "delete_file",
            json!({"path": "d"}),
        )
        .mkdir("d")
        .absent("d"),
        Case::new(
            "delete a non-empty directory without recursive",
            "delete_file",
            json!({"path": "d"}),
        )
        .write("d/f", "x")
        .fails(ErrorKind::Failed)
        .has("the directory is not empty; pass recursive=true")
        .file("d/f", "x"),
        Case::new(
            "recursive delete needs approval",
            "delete_file",
            json!({"path": "d", "recursive": true}),
        )
        .write("d/sub/f", "x")
        .fails(ErrorKind::NeedsApproval)
        .file("d/sub/f", "x"),
        Case::new(
            "recursive delete, approved",
            "delete_file",
            json!({"path": "d", "recursive": true}),
        )
        .write("d/sub/f", &"x".repeat(9000))
        .write("d/g", "y")
        .write("keep/h", "z")
        .approved()
        .has("Deleted the directory d/ and everything in it.")
        .absent("d")
        .absent("d/sub/f")
        .file("keep/h", "z"),
        Case::new(
            "delete a missing path",
            "delete_file",
            json!({"path": "nope"}),
        )
        .fails(ErrorKind::NotFound),
        Case::new(
            "delete the root",
            "delete_file",
            json!({"path": ".", "recursive": true}),
        )
        .write("f", "x")
        .approved()
        .fails(ErrorKind::Denied)
        .file("f", "x"),
        // The search and patch tools walk and write through the same backend.
        Case::new(
            "find files by glob",
            "find_files",
            json!({"pattern": "**/*.rs"}),
        )
        .write("src/main.rs", "")
        .write("src/util/mod.rs", "")
        .write("README.md", "")
        .has("src/main.rs")
        .has("src/util/mod.rs")
        .lacks("README"),
        Case::new("grep a pattern", "grep", json!({"pattern": "ne+dle"}))
            .write("a.txt", "hay\nneedle here\n")
            .write("d/b.txt", "needle\n")
            .write("c.txt", "nothing\n")
            .has("a.txt:2:needle here")
            .has("d/b.txt:1:needle")
            .lacks("c.txt"),
        Case::new(
            "apply a patch",
            "patch_apply",
            json!({"patch": "--- a/p.txt\n+++ b/p.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"}),
        )
        .write("p.txt", "one\ntwo\n")
        .file("p.txt", "one\nTWO\n"),
        // Traversal is refused before any backend sees the path.
        Case::new(
            "read with ..",
            "file_read",
            json!({"path": "../outside.txt"}),
        )
        .fails(ErrorKind::Denied)
        .has("contains `..`"),
        Case::new(
            "write with ..",
            "file_write",
            json!({"path": "a/../../x", "content": "x"}),
        )
        .fails(ErrorKind::Denied)
        .absent("x"),
        Case::new(
            "append with ..",
            "file_append",
            json!({"path": "../x", "content": "x"}),
        )
        .fails(ErrorKind::Denied),
        Case::new("make_dir with ..", "make_dir", json!({"path": "../evil"}))
            .fails(ErrorKind::Denied),
        Case::new("list with ..", "list_dir", json!({"path": ".."})).fails(ErrorKind::Denied),
        Case::new(
            "delete with ..",
            "delete_file",
            json!({"path": "d/../../ws", "recursive": true}),
        )
        .approved()
        .fails(ErrorKind::Denied),
        Case::new(
            "edit with ..",
            "file_edit",
            json!({"path": "../e", "old_string": "a", "new_string": "b"}),
        )
        .fails(ErrorKind::Denied),
        Case::new(
            "a NUL in a path",
            "file_write",
            json!({"path": "a\u{0}b", "content": "x"}),
        )
        .fails(ErrorKind::InvalidArgs),
    ]
}

/// Runs one case on one backend; returns the outcome and its text for the cross-backend check.
async fn run_case(case: &Case, backend: Backend, backends: &Backends) -> (Outcome, String) {
    let env = Env::new(backend, backends);
    let setup_stack = stack(true);
    for (tool, args) in &case.setup {
        if let Err(e) = call(&setup_stack, &env.ctx, tool, args).await {
            panic!(
                "{} ({backend:?}): setup {tool} {args} failed: {e}",
                case.name
            );
        }
    }
    let result = call(&stack(case.approve), &env.ctx, case.tool, &case.args).await;
    let (outcome, text) = match &result {
        Ok(out) => (Outcome::Ok, out.joined_text()),
        Err(e) => (Outcome::Err(e.kind()), e.to_string()),
    };
    let at = format!("{} ({backend:?})", case.name);
    assert_eq!(outcome, case.outcome, "{at}: {text}");
    for want in &case.has {
        assert!(
            text.contains(want.as_str()),
            "{at}: missing {want:?} in:\n{text}"
        );
    }
    for unwanted in &case.lacks {
        assert!(
            !text.contains(unwanted),
            "{at}: unexpected {unwanted:?} in:\n{text}"
        );
    }
    let ws = env.ws();
    for (path, state) in &case.after {
        let p = ws.resolve(path).unwrap();
        match state {
            State::File(want) => {
                let kind = off(|| ws.metadata(&p).unwrap().kind);
                assert_eq!(kind, FileKind::File, "{at}: {path}");
                let got = content(ws, path);
                assert!(
                    got == want.as_bytes(),
                    "{at}: {path} holds {:?}",
                    String::from_utf8_lossy(&got)
                );
            }
            State::Dir => {
                let kind = off(|| ws.metadata(&p).unwrap().kind);
                assert_eq!(kind, FileKind::Dir, "{at}: {path}");
            }
            State::Absent => {
                assert!(!off(|| ws.exists(&p).unwrap()), "{at}: {path} still exists");
            }
        }
    }
    env.assert_nothing_outside(case.name);
    (outcome, text)
}

#[tokio::test]
async fn every_case_behaves_the_same_on_every_backend() {
    let cases = cases();
    let mut names: Vec<_> = cases.iter().map(|c| c.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), cases.len(), "case names must be unique");
    let backends = Backends::new("vfs_cases");
    for case in &cases {
        let local = run_case(case, Backend::Local, &backends).await;
        for backend in backends.virtual_ones() {
            let other = run_case(case, backend, &backends).await;
            assert_eq!(
                local, other,
                "{}: the local and {backend:?} backends disagree",
                case.name
            );
        }
    }
}

#[tokio::test]
async fn a_virtual_workspace_persists_across_reopening() {
    let backends = Backends::new("vfs_persist");
    let s = stack(false);
    for backend in backends.virtual_ones() {
        let env = Env::new(backend, &backends);
        {
            let ctx = context(env.reopen());
            call(
                &s,
                &ctx,
                "file_write",
                &json!({"path": "notes/today.md", "content": "# Today\n- persist\n"}),
            )
            .await
            .unwrap();
            call(
                &s,
                &ctx,
                "file_append",
                &json!({"path": "notes/today.md", "content": "- reopen\n"}),
            )
            .await
            .unwrap();
            call(&s, &ctx, "make_dir", &json!({"path": "empty/dir"}))
                .await
                .unwrap();
        }
        // The handle above is dropped: the store is all that is left of it.
        let ctx = context(env.reopen());
        let kind = ctx.workspace.backend().kind();
        assert_eq!(kind, format!("{backend:?}").to_lowercase());
        let read = call(&s, &ctx, "file_read", &json!({"path": "notes/today.md"}))
            .await
            .unwrap();
        assert_eq!(
            read.joined_text(),
            "1\t# Today\n2\t- persist\n3\t- reopen\n",
            "{backend:?}"
        );
        let list = call(&s, &ctx, "list_dir", &json!({"recursive": true}))
            .await
            .unwrap();
        assert_eq!(
            list.joined_text(),
            "empty/\nempty/dir/\nnotes/\nnotes/today.md\n",
            "{backend:?}"
        );
    }
}

#[tokio::test]
async fn two_handles_on_one_virtual_workspace_see_each_others_writes() {
    let backends = Backends::new("vfs_two_handles");
    let s = stack(true);
    for backend in backends.virtual_ones() {
        let env = Env::new(backend, &backends);
        let one = &env.ctx;
        let two = context(env.reopen());

        call(
            &s,
            one,
            "file_write",
            &json!({"path": "shared.txt", "content": "written by one\n"}),
        )
        .await
        .unwrap();
        let seen = call(&s, &two, "file_read", &json!({"path": "shared.txt"}))
            .await
            .unwrap();
        assert_eq!(seen.joined_text(), "1\twritten by one\n", "{backend:?}");

        call(
            &s,
            &two,
            "file_edit",
            &json!({"path": "shared.txt", "old_string": "one", "new_string": "two"}),
        )
        .await
        .unwrap();
        call(
            &s,
            &two,
            "file_append",
            &json!({"path": "shared.txt", "content": "appended by two\n"}),
        )
        .await
        .unwrap();
        assert_eq!(
            content(&one.workspace, "shared.txt"),
            b"written by two\nappended by two\n",
            "{backend:?}"
        );
        call(&s, one, "delete_file", &json!({"path": "shared.txt"}))
            .await
            .unwrap();
        let gone = call(&s, &two, "file_read", &json!({"path": "shared.txt"})).await;
        assert_eq!(gone.unwrap_err().kind(), ErrorKind::NotFound, "{backend:?}");
    }
}

/// Line `n` (1-based) of the big file: exactly 100 bytes.
fn big_line(n: u64) -> String {
    format!("line {n:07} {}\n", "x".repeat(86))
}

#[tokio::test]
async fn a_20_mb_file_is_written_and_read_from_the_middle() {
    const LINES: u64 = 200_000; // 100 bytes each: 20,000,000 bytes
    let half: String = (1..=LINES / 2).map(big_line).collect();
    let second: String = (LINES / 2 + 1..=LINES).map(big_line).collect();
    assert_eq!(half.len() + second.len(), 20_000_000);
    let backends = Backends::new("vfs_20mb");
    for backend in backends.all() {
        let env = Env::new(backend, &backends);
        let s = stack(false);
        // file_write takes at most 10 MiB at once, so the second half is appended.
        call(
            &s,
            &env.ctx,
            "file_write",
            &json!({"path": "big.txt", "content": half}),
        )
        .await
        .unwrap();
        call(
            &s,
            &env.ctx,
            "file_append",
            &json!({"path": "big.txt", "content": second}),
        )
        .await
        .unwrap();
        let meta = off(|| {
            env.ws()
                .metadata(&env.ws().resolve("big.txt").unwrap())
                .unwrap()
        });
        assert_eq!(meta.len, 20_000_000, "{backend:?}");

        let page = call(
            &s,
            &env.ctx,
            "file_read",
            &json!({"path": "big.txt", "offset": 100_000, "limit": 10}),
        )
        .await
        .unwrap();
        let mut want: String = (100_000..100_010)
            .map(|n| format!("{n}\t{}", big_line(n)))
            .collect();
        want.push_str(concat!(
            "[Showing lines 100000-100009; the file continues. ",
            r#"Next call: file_read {"path": "big.txt", "offset": 100010, "limit": 10}]"#
        ));
        want.push('\n');
        assert_eq!(page.joined_text(), want, "{backend:?}");
        assert_eq!(page.structured.as_ref().unwrap()["next_offset"], 100_010);

        // The last page, across the boundary between what was written and what was appended.
        let last = call(
            &s,
            &env.ctx,
            "file_read",
            &json!({"path": "big.txt", "offset": LINES - 1}),
        )
        .await
        .unwrap();
        assert_eq!(
            last.joined_text(),
            format!(
                "{}\t{}{}\t{}",
                LINES - 1,
                big_line(LINES - 1),
                LINES,
                big_line(LINES)
            ),
            "{backend:?}"
        );
        let seam = call(
            &s,
            &env.ctx,
            "file_read",
            &json!({"path": "big.txt", "offset": LINES / 2, "limit": 2}),
        )
        .await
        .unwrap();
        assert!(
            seam.joined_text().starts_with(&format!(
                "{}\t{}{}\t{}",
                LINES / 2,
                big_line(LINES / 2),
                LINES / 2 + 1,
                big_line(LINES / 2 + 1)
            )),
            "{backend:?}"
        );
    }
}

#[tokio::test]
async fn files_of_0_4096_and_4097_bytes_round_trip() {
    let backends = Backends::new("vfs_sizes");
    for backend in backends.all() {
        let env = Env::new(backend, &backends);
        let s = stack(false);
        for len in [0usize, 1, 4095, 4096, 4097, 8192, 8193] {
            // Lines of 64 bytes, the last one cut short, so the bytes differ along the file.
            let text: String = (0..len)
                .map(|i| {
                    if i % 64 == 63 {
                        '\n'
                    } else {
                        char::from(b'a' + (i / 64 % 26) as u8)
                    }
                })
                .collect();
            let path = format!("sizes/{len}.txt");
            let out = call(
                &s,
                &env.ctx,
                "file_write",
                &json!({"path": path, "content": text}),
            )
            .await
            .unwrap();
            assert!(out.joined_text().contains(&format!("({len} bytes)")));
            assert_eq!(
                content(env.ws(), &path),
                text.as_bytes(),
                "{backend:?} {len}"
            );

            // Through file_read as base64: every byte comes back.
            let b64 = call(
                &s,
                &env.ctx,
                "file_read",
                &json!({"path": path, "encoding": "base64"}),
            )
            .await
            .unwrap();
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(b64.joined_text().trim())
                .unwrap();
            assert_eq!(decoded, text.as_bytes(), "{backend:?} {len}");

            // And as text: as many numbered lines as the file has.
            let lines = call(&s, &env.ctx, "file_read", &json!({"path": path}))
                .await
                .unwrap();
            let expected_lines = text.lines().count();
            if len == 0 {
                assert!(lines.joined_text().ends_with("is empty."));
            } else {
                assert_eq!(
                    lines.joined_text().lines().count(),
                    expected_lines,
                    "{backend:?} {len}"
                );
            }

            // Appending one byte crosses (or fills) the chunk.
            call(
                &s,
                &env.ctx,
                "file_append",
                &json!({"path": path, "content": "Z"}),
            )
            .await
            .unwrap();
            let mut grown = text.clone().into_bytes();
            grown.push(b'Z');
            assert_eq!(content(env.ws(), &path), grown, "{backend:?} {len}+1");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_readers_see_the_old_content_or_the_new_never_a_mix() {
    // Two versions of 40 KiB (ten chunks) that differ in every line.
    let version = |c: char| -> String { format!("{}\n", c.to_string().repeat(63)).repeat(640) };
    let (a, b) = (version('A'), version('B'));
    let backends = Backends::new("vfs_flip");
    for backend in backends.all() {
        let env = Env::new(backend, &backends);
        let s = Arc::new(stack(false));
        call(
            &s,
            &env.ctx,
            "file_write",
            &json!({"path": "flip.txt", "content": a}),
        )
        .await
        .unwrap();
        let writer = {
            let (s, ctx, a, b) = (Arc::clone(&s), env.ctx.clone(), a.clone(), b.clone());
            tokio::spawn(async move {
                for i in 0..60 {
                    let content = if i % 2 == 0 { &b } else { &a };
                    call(
                        &s,
                        &ctx,
                        "file_write",
                        &json!({"path": "flip.txt", "content": content}),
                    )
                    .await
                    .unwrap();
                }
            })
        };
        // At least ten reads are checked, most of them while the writer runs.
        let mut checked = 0;
        while !writer.is_finished() || checked < 10 {
            let out = match call(
                &s,
                &env.ctx,
                "file_read",
                &json!({"path": "flip.txt", "encoding": "base64"}),
            )
            .await
            {
                Ok(out) => out,
                // Known tool-core issue: LocalFs::open_read opens twice (an O_PATH probe, then
                // the real open) and refuses the file, calling it "a special file", when an
                // atomic replace lands in between. It never returns mixed content, which is
                // what this test is about; remove this allowance once open_read accepts a
                // regular file on the second open.
                Err(e) if backend == Backend::Local && e.to_string().contains("special file") => {
                    continue;
                }
                // A PostgreSQL reader that needed another window after the file was replaced
                // says so instead of mixing versions (rare here: 40 KiB is read at open).
                #[cfg(feature = "postgres")]
                Err(e)
                    if backend == Backend::Postgres
                        && e.to_string().contains("changed while it was being read") =>
                {
                    continue;
                }
                Err(e) => panic!("{backend:?}: {e}"),
            };
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(out.joined_text().trim())
                .unwrap();
            assert!(
                bytes == a.as_bytes() || bytes == b.as_bytes(),
                "{backend:?}: a reader saw a mix of two versions ({} bytes)",
                bytes.len()
            );
            checked += 1;
        }
        writer.await.unwrap();
    }
}

#[test]
fn a_virtual_workspace_has_one_virtual_root() {
    let backends = Backends::new("vfs_one_root");
    for backend in backends.virtual_ones() {
        let env = Env::new(backend, &backends);
        let ws = env.ws();
        assert_eq!(ws.roots().len(), 1);
        assert_eq!(ws.roots()[0].path, Path::new("/"));
        assert!(ws.roots()[0].writable);
        assert_eq!(ws.local_root(), None);
        assert_eq!(ws.local_path(&ws.resolve("a").unwrap()), None);
        // Absolute paths name places in the virtual tree; nothing on disk is reachable.
        assert_eq!(ws.resolve("/etc/passwd").unwrap().rel(), "etc/passwd");
        assert_eq!(
            ws.metadata(&ws.resolve("/etc/passwd").unwrap())
                .unwrap_err()
                .kind(),
            ErrorKind::NotFound,
            "{backend:?}"
        );
    }
}

/// Names the workspace or the backend must refuse, each with the error kind and a phrase of its
/// message, and benign twins that must work, on every backend. The virtual filesystems must
/// also word every refusal the same.
#[tokio::test]
async fn hostile_names_are_refused_alike_everywhere_and_their_benign_twins_work() {
    let long = "n".repeat(256);
    let longest = "n".repeat(255);
    let hostile: Vec<(String, ErrorKind, &str)> = vec![
        ("..".into(), ErrorKind::Denied, "contains `..`"),
        ("../x".into(), ErrorKind::Denied, "contains `..`"),
        ("a/../../x".into(), ErrorKind::Denied, "contains `..`"),
        ("d/../..".into(), ErrorKind::Denied, "contains `..`"),
        ("nul\0byte".into(), ErrorKind::InvalidArgs, ""),
        ("dir/nul\0".into(), ErrorKind::InvalidArgs, ""),
        (long.clone(), ErrorKind::Failed, "File name too long"),
        (format!("d/{long}"), ErrorKind::Failed, "File name too long"),
        (format!("{long}/x"), ErrorKind::Failed, "File name too long"),
    ];
    let benign: Vec<String> = vec![
        "..x".into(),
        "x..".into(),
        "a..b".into(),
        "...".into(),
        ".hidden".into(),
        "with space".into(),
        "ünïcödé".into(),
        "back\\slash".into(),
        "semi;colon'quote".into(),
        "a/b/c".into(),
        "./dot/./segments".into(),
        longest.clone(),
        format!("d/{longest}"),
    ];
    let backends = Backends::new("vfs_hostile");
    let s = stack(true);
    let mut outcomes: Vec<(Backend, Vec<String>)> = Vec::new();
    for backend in backends.all() {
        let env = Env::new(backend, &backends);
        let mut seen = Vec::new();
        for (name, kind, phrase) in &hostile {
            for (tool, args) in [
                ("file_write", json!({"path": name, "content": "x"})),
                ("file_append", json!({"path": name, "content": "x"})),
                ("make_dir", json!({"path": name})),
            ] {
                let err = call(&s, &env.ctx, tool, &args).await.unwrap_err();
                let text = err.to_string();
                assert_eq!(err.kind(), *kind, "{backend:?} {tool} {name:?}: {text}");
                assert!(text.contains(phrase), "{backend:?} {tool} {name:?}: {text}");
                seen.push(text);
            }
        }
        for (i, name) in benign.iter().enumerate() {
            let body = format!("twin {i}");
            call(
                &s,
                &env.ctx,
                "file_write",
                &json!({"path": name, "content": body}),
            )
            .await
            .unwrap_or_else(|e| panic!("{backend:?} {name:?}: {e}"));
            let read = call(&s, &env.ctx, "file_read", &json!({"path": name}))
                .await
                .unwrap();
            assert_eq!(
                read.joined_text(),
                format!("1\t{body}\n"),
                "{backend:?} {name:?}"
            );
        }
        // Nothing of the refusals was created: the root holds the twins only.
        let list = call(&s, &env.ctx, "list_dir", &json!({"include_hidden": true}))
            .await
            .unwrap()
            .joined_text();
        let mut got: Vec<&str> = list.lines().collect();
        got.sort_unstable();
        let mut want = vec![
            "...",
            "..x",
            ".hidden",
            "a..b",
            "a/",
            "back\\slash",
            "d/",
            "dot/",
            "semi;colon'quote",
            "with space",
            "x..",
            "ünïcödé",
            longest.as_str(),
        ];
        want.sort_unstable();
        assert_eq!(
            got, want,
            "{backend:?}: only the twins (and the parent `d` the refused write below it created first) are there"
        );
        env.assert_nothing_outside("hostile names");
        outcomes.push((backend, seen));
    }
    // The local backend learns of a long name earlier (resolving the path on disk), so its
    // sentences start differently; the virtual filesystems must agree word for word.
    outcomes.retain(|(backend, _)| *backend != Backend::Local);
    for (backend, seen) in &outcomes[1..] {
        assert_eq!(
            seen, &outcomes[0].1,
            "{backend:?} and {:?} word the refusals differently",
            outcomes[0].0
        );
    }
}

#[test]
fn opening_a_bad_database_path_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let not_db = dir.path().join("notes.txt");
    std::fs::write(
        &not_db,
        "plain text, long enough to not be an empty database file",
    )
    .unwrap();
    assert!(tools_fs::sqlite_workspace(&not_db).is_err());
    assert!(
        tools_fs::sqlite_workspace(dir.path()).is_err(),
        "a directory"
    );
    assert!(tools_fs::SqliteFs::open(&dir.path().join("no/such/dir/ws.db")).is_err());
}
