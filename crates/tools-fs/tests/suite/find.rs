//! `find_files` through the real stack, on the fixture of `grep.rs`.

use serde_json::{Value, json};
use tool_core::{ErrorKind, Registry, Stack};

use super::grep::{Fixture, call_on, sqlite_fixture, text};

#[tokio::test]
async fn names_match_at_any_depth_sorted_skipping_hidden_ignored_and_links() {
    let f = Fixture::new();
    let out = f
        .call("find_files", json!({"pattern": "*.rs"}))
        .await
        .unwrap();
    assert_eq!(
        text(&out),
        "src/lib.rs\nsrc/main.rs\nsrc/nested/deep/mod.rs\n"
    );
    let all = f.call("find_files", json!({"pattern": "*"})).await.unwrap();
    assert_eq!(
        text(&all),
        "-e\nbin.dat\ndocs/readme.md\nsrc/-e.txt\nsrc/lib.rs\nsrc/main.rs\nsrc/nested/deep/mod.rs\nsub/kept.txt\n"
    );
    let s = all.structured.unwrap();
    assert_eq!(s["count"], 8);
    assert_eq!(s["truncated"], false);
}

#[tokio::test]
async fn globs_with_a_slash_match_paths_relative_to_path() {
    let f = Fixture::new();
    for (args, want) in [
        (
            json!({"pattern": "src/**/*.rs"}),
            "src/lib.rs\nsrc/main.rs\nsrc/nested/deep/mod.rs\n",
        ),
        (json!({"pattern": "src/*.rs"}), "src/lib.rs\nsrc/main.rs\n"),
        (
            json!({"pattern": "**/*.{md,txt}"}),
            "docs/readme.md\nsrc/-e.txt\nsub/kept.txt\n",
        ),
        (
            json!({"pattern": "nested/**", "path": "src"}),
            "src/nested/deep/mod.rs\n",
        ),
        (
            json!({"pattern": "*.rs", "path": "src/nested"}),
            "src/nested/deep/mod.rs\n",
        ),
        (json!({"pattern": "./docs/"}), "docs/readme.md\n"),
        (json!({"pattern": "-e"}), "-e\n"),
    ] {
        let out = f.call("find_files", args.clone()).await.unwrap();
        assert_eq!(text(&out), want, "{args}");
    }
}

#[tokio::test]
async fn max_results_counts_the_rest() {
    let f = Fixture::new();
    for i in 0..50 {
        f.write(&format!("gen/f{i:02}.rs"), "");
    }
    let out = f
        .call(
            "find_files",
            json!({"pattern": "*.rs", "path": "gen", "max_results": 3}),
        )
        .await
        .unwrap();
    assert_eq!(
        text(&out),
        "gen/f00.rs\ngen/f01.rs\ngen/f02.rs\n[... and 47 more; narrow the pattern or the path, or raise max_results (now 3) to see them]\n"
    );
    assert_eq!(out.structured.unwrap()["count"], 50);
    let none = f
        .call("find_files", json!({"pattern": "*.zig"}))
        .await
        .unwrap();
    assert!(text(&none).starts_with("No files match `*.zig` under ."));
}

#[tokio::test]
async fn the_sqlite_backend_gives_the_same_results() {
    let f = Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = sqlite_fixture(dir.path());
    for args in [
        json!({"pattern": "*"}),
        json!({"pattern": "*.rs", "path": "src"}),
        json!({"pattern": "*.txt", "path": "sub"}),
        json!({"pattern": "src/**", "max_results": 2}),
    ] {
        let local = f.call("find_files", args.clone()).await.unwrap();
        let virt = call_on(&f.stack, &sqlite, "find_files", args.clone())
            .await
            .unwrap();
        assert_eq!(text(&virt), text(&local), "{args}");
    }
}

#[tokio::test]
async fn seed_aliases_reach_find_files() {
    let f = Fixture::new();
    let mut base = Registry::new();
    base.register_all(tools_fs::tools(&Default::default()))
        .unwrap();
    let hrns = Stack::new(base.with_profile("hrns", tools_fs::ALIASES).unwrap());
    let out = call_on(
        &hrns,
        &f.ctx,
        "list_files",
        json!({"dir": "src", "globPattern": "**/*.rs"}),
    )
    .await
    .unwrap();
    assert_eq!(
        text(&out),
        "src/lib.rs\nsrc/main.rs\nsrc/nested/deep/mod.rs\n"
    );
    let sneaky = Stack::new(base.with_profile("sneakycode", tools_fs::ALIASES).unwrap());
    let out = call_on(
        &sneaky,
        &f.ctx,
        "find_files",
        json!({"pattern": "*.md", "path": "docs"}),
    )
    .await
    .unwrap();
    assert_eq!(text(&out), "docs/readme.md\n");
}

enum Expect {
    Ok(&'static str),
    Err(ErrorKind),
}

/// Each attack beside a benign twin; `{ws}` and `{out}` are the workspace and outside dirs.
const HOSTILE: &[(&str, &str, Expect)] = &[
    (
        "traversal",
        r#"{"pattern":"*","path":".."}"#,
        Expect::Err(ErrorKind::Denied),
    ),
    (
        "traversal deep",
        r#"{"pattern":"*","path":"src/../../outside"}"#,
        Expect::Err(ErrorKind::Denied),
    ),
    (
        "traversal twin",
        r#"{"pattern":"*","path":"src/nested"}"#,
        Expect::Ok("src/nested/deep/mod.rs"),
    ),
    (
        "absolute outside",
        r#"{"pattern":"*","path":"{out}"}"#,
        Expect::Err(ErrorKind::Denied),
    ),
    (
        "absolute twin",
        r#"{"pattern":"*.md","path":"{ws}/docs"}"#,
        Expect::Ok("docs/readme.md"),
    ),
    (
        "dir link out",
        r#"{"pattern":"*","path":"dirlink_out"}"#,
        Expect::Err(ErrorKind::Denied),
    ),
    (
        "file link out",
        r#"{"pattern":"*","path":"link_out"}"#,
        Expect::Err(ErrorKind::Denied),
    ),
    (
        "link twin",
        r#"{"pattern":"*.rs","path":"src"}"#,
        Expect::Ok("src/lib.rs"),
    ),
    (
        "dotdot glob",
        r#"{"pattern":"../outside/*"}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    (
        "dotdot glob deep",
        r#"{"pattern":"**/../../*"}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    (
        "absolute glob",
        r#"{"pattern":"{out}/*"}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    (
        "glob through link",
        r#"{"pattern":"dirlink_out/*"}"#,
        Expect::Ok("No files match"),
    ),
    (
        "glob twin",
        r#"{"pattern":"sub/*"}"#,
        Expect::Ok("sub/kept.txt"),
    ),
    (
        "bad class",
        r#"{"pattern":"[abc"}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    (
        "bad brace",
        r#"{"pattern":"{a,b"}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    (
        "empty glob",
        r#"{"pattern":""}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    (
        "brace twin",
        r#"{"pattern":"{lib,main}.rs"}"#,
        Expect::Ok("src/lib.rs\nsrc/main.rs"),
    ),
    (
        "NUL in path",
        r#"{"pattern":"*","path":"a\u0000b"}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
    (
        "file as path",
        r#"{"pattern":"*","path":"src/lib.rs"}"#,
        Expect::Err(ErrorKind::Failed),
    ),
    (
        "unknown field",
        r#"{"pattern":"*","hidden":true}"#,
        Expect::Err(ErrorKind::InvalidArgs),
    ),
];

#[tokio::test]
async fn hostile_inputs_are_refused_and_twins_succeed() {
    let f = Fixture::new();
    for (name, args, expect) in HOSTILE {
        let args = args
            .replace("{ws}", f.root.to_str().unwrap())
            .replace("{out}", f.outside.to_str().unwrap());
        let args: Value = serde_json::from_str(&args).unwrap_or_else(|e| panic!("{name}: {e}"));
        let result = f.call("find_files", args).await;
        match (expect, &result) {
            (Expect::Ok(want), Ok(out)) => {
                assert!(text(out).contains(want), "{name}: {}", text(out));
                assert!(!text(out).contains("secret"), "{name}: {}", text(out));
            }
            (Expect::Err(kind), Err(e)) => assert_eq!(e.kind(), *kind, "{name}: {e}"),
            _ => panic!("{name}: unexpected {result:?}"),
        }
    }
}
