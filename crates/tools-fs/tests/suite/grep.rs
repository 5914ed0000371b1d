//! `grep` through the real stack, on a real temp tree and on the SQLite backend; plus the search
//! fixture `find.rs` shares.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use tempfile::TempDir;
use tool_core::{
    ErrorKind, Limits, Policy, Registry, Stack, ToolContext, ToolError, ToolOutput, Workspace,
};

/// Text that lives only outside the workspace; it contains the word the tests search for, so a
/// leak would show up in results.
pub(crate) const SECRET: &str = "OUTSIDE-SECRET needle: if you can read this, confinement failed\n";

/// `base/ws` is the workspace, `base/outside` a directory beside it holding the secret.
///
/// ```text
/// ws/.gitignore            ignored/  *.log
/// ws/-e                    a file named like a flag
/// ws/bin.dat               binary (NUL byte) containing "needle"
/// ws/build.log             ignored by *.log
/// ws/docs/readme.md        "Needle" (capital N)
/// ws/ignored/x.rs          ignored by ignored/
/// ws/src/-e.txt  src/lib.rs  src/main.rs  src/nested/deep/mod.rs  src/x.log (ignored from above)
/// ws/sub/.gitignore        local.txt
/// ws/sub/kept.txt  sub/local.txt (ignored by the nested .gitignore)
/// ws/.hidden/h.rs  ws/.env  ws/.git/config      hidden
/// ws/link_out -> ../outside/secret              file link leading out
/// ws/dirlink_out -> ../outside                  directory link leading out
/// ws/src/link_in -> lib.rs                      file link inside (not followed by the walk)
/// ```
pub(crate) struct Fixture {
    _dir: TempDir,
    pub(crate) root: PathBuf,
    pub(crate) outside: PathBuf,
    pub(crate) stack: Stack,
    pub(crate) ctx: ToolContext,
}

pub(crate) const TREE: &[(&str, &[u8])] = &[
    (".gitignore", b"ignored/\n*.log\n"),
    ("-e", b"dash file needle\n"),
    ("bin.dat", b"needle\x00binary\n"),
    ("build.log", b"needle log\n"),
    ("docs/readme.md", b"Needle in docs\n"),
    ("ignored/x.rs", b"needle ignored\n"),
    ("src/-e.txt", b"-e is a flag-looking line\nneedle\n"),
    ("src/lib.rs", b"pub fn needle() {}\n// TODO: needle again\n"),
    ("src/main.rs", b"fn main() {\n    println!(\"hello\");\n}\n"),
    ("src/nested/deep/mod.rs", b"needle deep\n"),
    ("src/x.log", b"needle in a log below an ignoring parent\n"),
    ("sub/.gitignore", b"local.txt\n"),
    ("sub/kept.txt", b"needle\n"),
    ("sub/local.txt", b"needle local\n"),
    (".hidden/h.rs", b"needle hidden\n"),
    (".env", b"needle env\n"),
    (".git/config", b"needle git\n"),
];

impl Fixture {
    pub(crate) fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(dir.path()).expect("canonicalize");
        let root = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), SECRET).unwrap();
        std::fs::write(outside.join("secret.rs"), SECRET).unwrap();
        for (rel, content) in TREE {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        std::os::unix::fs::symlink("../outside/secret", root.join("link_out")).unwrap();
        std::os::unix::fs::symlink("../outside", root.join("dirlink_out")).unwrap();
        std::os::unix::fs::symlink("lib.rs", root.join("src/link_in")).unwrap();
        let ws = Workspace::local(&root).expect("workspace");
        Fixture {
            _dir: dir,
            root,
            outside,
            stack: stack(),
            ctx: context(ws),
        }
    }

    /// Writes a file under the workspace with std (test setup only).
    pub(crate) fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    /// Calls `tool` through the stack; no output or error may ever contain the secret.
    pub(crate) async fn call(&self, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
        call_on(&self.stack, &self.ctx, tool, args).await
    }
}

pub(crate) fn stack() -> Stack {
    let mut registry = Registry::new();
    registry
        .register_all(tools_fs::tools(&Default::default()))
        .unwrap();
    Stack::new(registry)
}

pub(crate) fn context(ws: Workspace) -> ToolContext {
    ToolContext::new(
        ws,
        Arc::new(Policy::supervised()),
        Arc::new(Limits::default()),
    )
}

pub(crate) async fn call_on(
    stack: &Stack,
    ctx: &ToolContext,
    tool: &str,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let result = stack
        .call_json(tool, &args.to_string(), ctx.for_call())
        .await;
    let shown = match &result {
        Ok(out) => format!("{}\n{:?}", out.joined_text(), out.structured),
        Err(e) => e.to_string(),
    };
    assert!(
        !shown.contains("OUTSIDE-SECRET"),
        "{tool} {args} leaked the secret:\n{shown}"
    );
    result
}

pub(crate) fn text(out: &ToolOutput) -> String {
    out.joined_text()
}

/// The tree of [`TREE`] in a SQLite workspace (no links: that backend has none).
pub(crate) fn sqlite_fixture(dir: &Path) -> ToolContext {
    let ws = tools_fs::sqlite_workspace(&dir.join("ws.db")).expect("sqlite workspace");
    for (rel, content) in TREE {
        ws.write_atomic(&ws.resolve(rel).unwrap(), content).unwrap();
    }
    context(ws)
}

const NEEDLE: &str = "\
-e:1:dash file needle
src/-e.txt:2:needle
src/lib.rs:1:pub fn needle() {}
src/lib.rs:2:// TODO: needle again
src/nested/deep/mod.rs:1:needle deep
sub/kept.txt:1:needle
";

#[tokio::test]
async fn content_is_sorted_and_skips_hidden_ignored_binary_and_links() {
    let f = Fixture::new();
    let out = f.call("grep", json!({"pattern": "needle"})).await.unwrap();
    assert_eq!(text(&out), NEEDLE);
    let s = out.structured.unwrap();
    assert_eq!(s["matches"], 6);
    assert_eq!(s["files"], 5);
    assert_eq!(s["truncated"], false);
    assert_eq!(s["binary_files_skipped"], 1);
}

#[tokio::test]
async fn the_sqlite_backend_gives_the_same_results() {
    let f = Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = sqlite_fixture(dir.path());
    let cases = [
        json!({"pattern": "needle"}),
        json!({"pattern": "needle", "path": "src", "output_mode": "count"}),
        json!({"pattern": "needle", "path": "sub", "output_mode": "files_with_matches"}),
        json!({"pattern": "NEEDLE", "case_insensitive": true, "include": "*.md"}),
        json!({"pattern": "needle", "context": 1, "path": "src"}),
    ];
    for args in cases {
        let local = f.call("grep", args.clone()).await.unwrap();
        let virt = call_on(&f.stack, &sqlite, "grep", args.clone())
            .await
            .unwrap();
        assert_eq!(text(&virt), text(&local), "{args}");
    }
    let out = call_on(
        &f.stack,
        &sqlite,
        "grep",
        json!({"pattern": "needle", "path": "src", "output_mode": "count"}),
    )
    .await
    .unwrap();
    // src/x.log is ignored by the root .gitignore even when only src is searched.
    assert_eq!(
        text(&out),
        "src/-e.txt:1\nsrc/lib.rs:2\nsrc/nested/deep/mod.rs:1\n"
    );
}

#[tokio::test]
async fn modes_case_and_include() {
    let f = Fixture::new();
    let files = f
        .call(
            "grep",
            json!({"pattern": "NEEDLE", "case_insensitive": true, "output_mode": "files_with_matches"}),
        )
        .await
        .unwrap();
    assert_eq!(
        text(&files),
        "-e\ndocs/readme.md\nsrc/-e.txt\nsrc/lib.rs\nsrc/nested/deep/mod.rs\nsub/kept.txt\n"
    );
    let count = f
        .call(
            "grep",
            json!({"pattern": "needle", "output_mode": "count", "include": "*.rs"}),
        )
        .await
        .unwrap();
    assert_eq!(text(&count), "src/lib.rs:2\nsrc/nested/deep/mod.rs:1\n");
    let by_path = f
        .call(
            "grep",
            json!({"pattern": "needle", "include": "src/nested/**", "output_mode": "files_with_matches"}),
        )
        .await
        .unwrap();
    assert_eq!(text(&by_path), "src/nested/deep/mod.rs\n");
    let fixed = f
        .call(
            "grep",
            json!({"pattern": "needle()", "fixed_strings": true}),
        )
        .await
        .unwrap();
    assert_eq!(text(&fixed), "src/lib.rs:1:pub fn needle() {}\n");
}

#[tokio::test]
async fn context_lines_and_separators() {
    let f = Fixture::new();
    f.write("ctx/a.txt", "1\n2\nhit\n4\n5\n6\n7\nhit\n9\n");
    f.write("ctx/b.txt", "hit\nz\n");
    let out = f
        .call(
            "grep",
            json!({"pattern": "hit", "path": "ctx", "context": 1}),
        )
        .await
        .unwrap();
    assert_eq!(
        text(&out),
        "ctx/a.txt-2-2\nctx/a.txt:3:hit\nctx/a.txt-4-4\n--\nctx/a.txt-7-7\nctx/a.txt:8:hit\nctx/a.txt-9-9\n--\nctx/b.txt:1:hit\nctx/b.txt-2-z\n"
    );
    let err = f
        .call("grep", json!({"pattern": "hit", "context": 11}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgs, "{err}");
}

#[tokio::test]
async fn max_results_stops_with_a_notice_and_is_deterministic() {
    let f = Fixture::new();
    for i in 0..300 {
        f.write(&format!("many/f{i:03}.txt"), "match\nmatch\n");
    }
    let args = json!({"pattern": "match", "path": "many", "max_results": 5});
    let first = f.call("grep", args.clone()).await.unwrap();
    assert_eq!(
        text(&first).lines().take(5).collect::<Vec<_>>(),
        [
            "many/f000.txt:1:match",
            "many/f000.txt:2:match",
            "many/f001.txt:1:match",
            "many/f001.txt:2:match",
            "many/f002.txt:1:match",
        ]
    );
    assert!(text(&first).contains("[Stopped at max_results=5 matching lines; there are more."));
    assert_eq!(first.structured.as_ref().unwrap()["truncated"], true);
    for _ in 0..5 {
        let again = f.call("grep", args.clone()).await.unwrap();
        assert_eq!(text(&again), text(&first));
    }
    // Exactly as many results as allowed is not truncated.
    let exact = f
        .call(
            "grep",
            json!({"pattern": "match", "path": "many/f007.txt", "max_results": 2}),
        )
        .await
        .unwrap();
    assert_eq!(
        text(&exact),
        "many/f007.txt:1:match\nmany/f007.txt:2:match\n"
    );
    let files = f
        .call(
            "grep",
            json!({"pattern": "match", "path": "many", "output_mode": "files_with_matches", "max_results": 300}),
        )
        .await
        .unwrap();
    assert_eq!(text(&files).lines().count(), 300);
    assert_eq!(files.structured.unwrap()["truncated"], false);
}

#[tokio::test]
async fn a_single_file_path_is_searched_even_if_ignored() {
    let f = Fixture::new();
    let out = f
        .call("grep", json!({"pattern": "needle", "path": "src/lib.rs"}))
        .await
        .unwrap();
    assert_eq!(
        text(&out),
        "src/lib.rs:1:pub fn needle() {}\nsrc/lib.rs:2:// TODO: needle again\n"
    );
    let out = f
        .call("grep", json!({"pattern": "needle", "path": "build.log"}))
        .await
        .unwrap();
    assert_eq!(text(&out), "build.log:1:needle log\n");
    let out = f
        .call("grep", json!({"pattern": "needle", "path": "bin.dat"}))
        .await
        .unwrap();
    assert!(text(&out).starts_with("No matches"), "{}", text(&out));
    assert!(text(&out).contains("1 binary file"), "{}", text(&out));
}

#[tokio::test]
async fn no_matches_is_not_an_error() {
    let f = Fixture::new();
    let out = f
        .call(
            "grep",
            json!({"pattern": "zzz_not_there", "include": "*.rs"}),
        )
        .await
        .unwrap();
    assert!(
        text(&out).starts_with("No matches for `zzz_not_there` in . (files matching `*.rs`)"),
        "{}",
        text(&out)
    );
    let missing = f
        .call("grep", json!({"pattern": "x", "path": "no/such/dir"}))
        .await
        .unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound, "{missing}");
}

#[tokio::test]
async fn long_lines_are_cut_at_500_characters() {
    let f = Fixture::new();
    f.write("long/l.txt", format!("needle{}\n", "x".repeat(2000)));
    let out = f
        .call("grep", json!({"pattern": "needle", "path": "long"}))
        .await
        .unwrap();
    let t = text(&out);
    assert!(t.starts_with("long/l.txt:1:needlexxx"), "{t}");
    assert!(t.contains("[line cut: 1506 more bytes]"), "{t}");
    assert!(t.len() < 700, "{}", t.len());
}

#[tokio::test]
async fn seed_aliases_reach_grep() {
    let f = Fixture::new();
    let base = {
        let mut r = Registry::new();
        r.register_all(tools_fs::tools(&Default::default()))
            .unwrap();
        r
    };
    let sneaky = Stack::new(base.with_profile("sneakycode", tools_fs::ALIASES).unwrap());
    let out = call_on(
        &sneaky,
        &f.ctx,
        "grep_files",
        json!({"pattern": "needle", "path": "src", "file_pattern": "*.rs"}),
    )
    .await
    .unwrap();
    assert_eq!(
        text(&out),
        "src/lib.rs:1:pub fn needle() {}\nsrc/lib.rs:2:// TODO: needle again\nsrc/nested/deep/mod.rs:1:needle deep\n"
    );
    let pig = Stack::new(base.with_profile("pig", tools_fs::ALIASES).unwrap());
    let out = call_on(
        &pig,
        &f.ctx,
        "grep",
        json!({"pattern": "needle", "include": "*.txt", "max_results": 1}),
    )
    .await
    .unwrap();
    assert!(
        text(&out).starts_with("src/-e.txt:2:needle\n[Stopped"),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn a_cancelled_call_stops() {
    let f = Fixture::new();
    let ctx = f.ctx.for_call();
    ctx.cancel.cancel();
    let result = f
        .stack
        .call_json("grep", r#"{"pattern": "needle"}"#, ctx)
        .await;
    assert_eq!(result.unwrap_err().kind(), ErrorKind::Cancelled);
}

/// What a hostile-input case must produce.
enum Expect {
    /// Success whose text contains this.
    Ok(&'static str),
    /// An error of this kind.
    Err(ErrorKind),
}

/// Each attack beside a benign twin that must still work. Args are built with `{ws}` and
/// `{out}` replaced by the workspace and outside directories.
const HOSTILE: &[(&str, &str, Expect)] = &[
    // Traversal in `path`.
    (
        "traversal",
        r#"{"pattern":"needle","path":"../outside"}"#,
        Expect::Err(ErrorKind::Denied),
    ),
    (
        "traversal twin",
        r#"{"pattern":"needle","path":"src/nested"}"#,
        Expect::Ok("src/nested/deep/mod.rs:1:needle deep"),
    ),
    (
        "dotdot inside",
        r#"{"pattern":"needle","path":"src/../../outside/secret"}"#,
        Expect::Err(ErrorKind::Denied),
    ),
    // Absolute paths.
    (
        "absolute outside",
        r#"{"pattern":"needle","path":"{out}"}"#,
        Expect::Err(ErrorKind::Denied),
    ),
    (
        "absolute outside file",
        r#"{"pattern":"needle","path":"{out}/secret"}"#,
        Expect::Err(ErrorKind::Denied),
    ),
    (
        "absolute inside twin",
        r#"{"pattern":"needle","path":"{ws}/sub"}"#,
        Expect::Ok("sub/kept.txt:1:needle"),
    ),
    // Links leading out.
    (
        "file link out",
        r#"{"pattern":"needle","path":"link_out"}"#,
        Expect::Err(ErrorKind::Denied),
    ),
    (
        "dir link out",
        r#"{"pattern":"needle","path":"dirlink_out"}"#,
        Expect::Err(ErrorKind::Denied),
    ),
    (
        "through dir link",
        r#"{"pattern":"needle","path":"dirlink_out/secret"}"#,
        Expect::Err(ErrorKind::Denied),
    ),
    (
        // A link inside is searched where it leads, and named so (round 12).
        "link inside twin",
        r#"{"pattern":"needle","path":"src/link_in"}"#,
        Expect::Ok("src/lib.rs:1:pub fn needle() {}"),
    ),
    // Globs that try to leave.
    (
        "dotdot include",
        r#"{"pattern":"needle","include":"../outside/*"}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    (
        "dotdot include deep",
        r#"{"pattern":"needle","include":"src/../../*"}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    (
        "absolute include",
        r#"{"pattern":"needle","include":"/etc/*"}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    (
        "include twin",
        r#"{"pattern":"needle","include":"sub/*"}"#,
        Expect::Ok("sub/kept.txt:1:needle"),
    ),
    (
        "bad glob",
        r#"{"pattern":"needle","include":"[abc"}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    // Control characters.
    (
        "NUL in path",
        r#"{"pattern":"needle","path":"src\u0000/x"}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    // Patterns that look like flags are patterns.
    (
        "dash e",
        r#"{"pattern":"-e"}"#,
        Expect::Ok("src/-e.txt:1:-e is a flag-looking line"),
    ),
    (
        "dash files",
        r#"{"pattern":"--files"}"#,
        Expect::Ok("No matches for `--files`"),
    ),
    (
        "dash pre",
        r#"{"pattern":"--pre=sh","path":"-e"}"#,
        Expect::Ok("No matches"),
    ),
    (
        "dash path twin",
        r#"{"pattern":"dash","path":"-e"}"#,
        Expect::Ok("-e:1:dash file needle"),
    ),
    // Catastrophic backtracking shapes finish (the engine is linear time).
    (
        "nested star",
        r#"{"pattern":"(a*)*b","path":"evil"}"#,
        Expect::Ok("No matches"),
    ),
    (
        "nested plus",
        r#"{"pattern":"(x+x+)+y","path":"evil"}"#,
        Expect::Ok("No matches"),
    ),
    (
        "alternation blowup",
        r#"{"pattern":"(a|a)*(a|a)*(a|a)*c","path":"evil"}"#,
        Expect::Ok("No matches"),
    ),
    (
        "regex twin",
        r#"{"pattern":"a+$","path":"evil","output_mode":"count"}"#,
        Expect::Ok("evil/a.txt:1"),
    ),
    // Programs too big to compile are refused, not built.
    (
        "huge repetition",
        r#"{"pattern":"a{100000}{100000}"}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    (
        "huge counted class",
        r#"{"pattern":"\\w{50000}"}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    (
        "repetition twin",
        r#"{"pattern":"e{2}d","include":"*.rs"}"#,
        Expect::Ok("src/lib.rs:1:pub fn needle() {}"),
    ),
    (
        "unclosed group",
        r#"{"pattern":"(needle"}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    (
        "unclosed twin",
        r#"{"pattern":"(needle","fixed_strings":true}"#,
        Expect::Ok("No matches"),
    ),
    // Unknown fields and out-of-range numbers.
    (
        "unknown field",
        r#"{"pattern":"needle","follow":true}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    (
        "zero results",
        r#"{"pattern":"needle","max_results":0}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
];

#[tokio::test]
async fn hostile_inputs_are_refused_and_twins_succeed() {
    let f = Fixture::new();
    f.write("evil/a.txt", format!("{}\n", "a".repeat(100_000)));
    f.write("evil/x.txt", format!("{}\n", "x".repeat(100_000)));
    for (name, args, expect) in HOSTILE {
        let args = args
            .replace("{ws}", f.root.to_str().unwrap())
            .replace("{out}", f.outside.to_str().unwrap());
        let args: Value = serde_json::from_str(&args).unwrap_or_else(|e| panic!("{name}: {e}"));
        let result = f.call("grep", args).await;
        match (expect, &result) {
            (Expect::Ok(want), Ok(out)) => {
                assert!(text(out).contains(want), "{name}: {}", text(out));
            }
            (Expect::Err(kind), Err(e)) => assert_eq!(e.kind(), *kind, "{name}: {e}"),
            _ => panic!("{name}: unexpected {result:?}"),
        }
    }
}

#[tokio::test]
async fn order_holds_across_more_files_than_the_search_window() {
    let f = Fixture::new();
    for i in 0..1500 {
        f.write(
            &format!("wide/d{}/f{i:04}.txt", i % 7),
            format!("hit {i}\n"),
        );
    }
    let out = f
        .call(
            "grep",
            json!({"pattern": "hit", "path": "wide", "output_mode": "files_with_matches", "max_results": 5000}),
        )
        .await
        .unwrap();
    let got: Vec<String> = text(&out).lines().map(str::to_string).collect();
    let mut want: Vec<String> = (0..1500)
        .map(|i| format!("wide/d{}/f{i:04}.txt", i % 7))
        .collect();
    want.sort();
    assert_eq!(got, want);
    let first = f
        .call(
            "grep",
            json!({"pattern": "hit", "path": "wide", "max_results": 1400}),
        )
        .await
        .unwrap();
    assert_eq!(
        text(&first).lines().count(),
        1401,
        "1400 lines and the notice"
    );
    assert!(
        text(&first)
            .lines()
            .last()
            .unwrap()
            .starts_with("[Stopped at max_results=1400")
    );
}

/// Found by the adversary: with `read(src/nested/**)` (or `read(sub/kept.txt)`) refused, a grep
/// or find of a directory above it printed the refused files. Each file a walk finds is judged
/// on its own and skipped (with a line saying so) unless the policy lets the tool read it;
/// an `ask` counts as no, since nobody was asked. Twins: the other files still match.
#[tokio::test]
async fn walks_skip_files_the_rules_keep_from_reading() {
    for decision in [tool_core::Decision::Deny, tool_core::Decision::Ask] {
        let fx = Fixture::new();
        let policy = Policy::supervised()
            .rule("read(src/nested/**)", decision)
            .unwrap()
            .rule("grep(sub/kept.txt)", decision)
            .unwrap()
            .rule("find_files(sub/kept.txt)", decision)
            .unwrap();
        let ctx = ToolContext::new(
            fx.ctx.workspace.clone(),
            Arc::new(policy),
            Arc::new(Limits::default()),
        );
        for path in [".", "src", "sub"] {
            let out = call_on(
                &fx.stack,
                &ctx,
                "grep",
                json!({"pattern": "needle", "path": path}),
            )
            .await
            .unwrap()
            .joined_text();
            assert!(
                !out.contains("needle deep") && !out.contains("kept.txt:1:"),
                "{decision:?} {path}: {out}"
            );
            assert!(out.contains("skipped"), "{decision:?} {path}: {out}");
        }
        let out = call_on(&fx.stack, &ctx, "grep", json!({"pattern": "needle"}))
            .await
            .unwrap()
            .joined_text();
        assert!(out.contains("src/lib.rs"), "{decision:?}: {out}");
        let out = call_on(&fx.stack, &ctx, "find_files", json!({"pattern": "**/*"}))
            .await
            .unwrap()
            .joined_text();
        assert!(
            !out.lines()
                .any(|l| l == "sub/kept.txt" || l == "src/nested/deep/mod.rs"),
            "{decision:?}: {out}"
        );
        assert!(out.contains("src/lib.rs"), "{decision:?}: {out}");
    }
}

/// Found in round 7: with `read(secrets/**)` = deny, `list_dir` of `secrets` was refused but a
/// recursive listing of `.` showed the names inside. A recursive listing names such a
/// directory (its parent may be listed) and does not open it; twin: its sibling is listed whole.
#[tokio::test]
async fn recursive_listings_do_not_open_directories_the_rules_keep() {
    let fx = Fixture::new();
    fx.write("secrets/db-password.txt", "x");
    fx.write("secrets/inner/k.txt", "x");
    fx.write("open/visible.txt", "x");
    let policy = Policy::supervised()
        .rule("read(secrets/**)", tool_core::Decision::Deny)
        .unwrap();
    let ctx = ToolContext::new(
        fx.ctx.workspace.clone(),
        Arc::new(policy),
        Arc::new(Limits::default()),
    );
    let out = call_on(
        &fx.stack,
        &ctx,
        "list_dir",
        json!({"path": ".", "recursive": true}),
    )
    .await
    .unwrap()
    .joined_text();
    assert!(out.contains("secrets/"), "{out}");
    assert!(
        !out.contains("db-password") && !out.contains("inner"),
        "{out}"
    );
    assert!(out.contains("open/visible.txt"), "{out}");
    assert!(out.contains("not listed inside"), "{out}");
}

/// Found in round 12: a search or listing whose base is a symbolic link inside the workspace
/// (`self -> .`, `s -> secrets`) walked it by the link's name, so `self/secrets/key.txt` met no
/// rule on `secrets/**`. The base is followed first and the walk judged where it really is.
/// Each row is an attack beside its benign twin (a link to an open directory still works).
#[tokio::test]
async fn a_base_that_is_a_link_is_walked_where_it_leads() {
    let fx = Fixture::new();
    fx.write("secrets/key.txt", "TOPSECRET needle\n");
    fx.write("open/notes.txt", "open needle\n");
    std::os::unix::fs::symlink(".", fx.root.join("self")).unwrap();
    std::os::unix::fs::symlink("secrets", fx.root.join("s")).unwrap();
    std::os::unix::fs::symlink("open", fx.root.join("o")).unwrap();
    let policy = Policy::supervised()
        .rule("read(secrets/**)", tool_core::Decision::Deny)
        .unwrap();
    let ctx = ToolContext::new(
        fx.ctx.workspace.clone(),
        Arc::new(policy),
        Arc::new(Limits::default()),
    );
    let rows = [
        ("grep", json!({"pattern": "needle", "path": "self"})),
        ("grep", json!({"pattern": "needle", "path": "s"})),
        ("find_files", json!({"pattern": "**/*.txt", "path": "self"})),
        ("find_files", json!({"pattern": "**/*.txt", "path": "s"})),
        ("list_dir", json!({"path": "self", "recursive": true})),
        ("list_dir", json!({"path": "s", "recursive": true})),
    ];
    for (tool, args) in rows {
        let out = match call_on(&fx.stack, &ctx, tool, args.clone()).await {
            Ok(out) => out.joined_text(),
            Err(e) => e.to_string(),
        };
        assert!(
            !out.contains("TOPSECRET") && !out.contains("key.txt"),
            "{tool} {args}: {out}"
        );
    }
    for (tool, args, want) in [
        (
            "grep",
            json!({"pattern": "needle", "path": "o"}),
            "open needle",
        ),
        (
            "grep",
            json!({"pattern": "needle", "path": "self"}),
            "open needle",
        ),
        (
            "find_files",
            json!({"pattern": "*.txt", "path": "o"}),
            "notes.txt",
        ),
        (
            "list_dir",
            json!({"path": "o", "recursive": true}),
            "notes.txt",
        ),
    ] {
        let out = call_on(&fx.stack, &ctx, tool, args.clone())
            .await
            .unwrap()
            .joined_text();
        assert!(out.contains(want), "{tool} {args}: {out}");
    }
}
