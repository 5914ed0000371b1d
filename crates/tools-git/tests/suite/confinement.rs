//! Where the repository may be: at the workspace root or inside it, never around it or
//! pointing out of it; a virtual workspace has none; the policy still decides.

use std::io;
use std::path::Path;
use std::sync::Arc;

use tool_core::workspace::{Backend, DirEntry, Metadata, ReadSeek, Root};
use tool_core::{ErrorKind, Limits, Policy, ToolContext, Workspace};

use super::{Fixture, context, git, stack};

async fn call(ws: Workspace, args: &str) -> Result<String, tool_core::ToolError> {
    stack()
        .call_json("git_operations", args, context(ws, Limits::default()))
        .await
        .map(|o| o.joined_text())
}

#[tokio::test]
async fn a_workspace_inside_a_repository_is_refused_and_its_root_works() {
    let f = Fixture::repo();
    std::fs::create_dir_all(f.path("docs/sub")).unwrap();
    let inner = Workspace::local(f.path("docs")).unwrap();
    for args in [
        r#"{"operation":"status"}"#,
        r#"{"operation":"log"}"#,
        r#"{"operation":"commit","message":"x"}"#,
        r#"{"operation":"status","paths":["sub"]}"#,
    ] {
        let e = call(inner.clone(), args).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Denied, "{args}: {e}");
        assert!(
            e.to_string()
                .contains("Open the workspace at the repository root"),
            "{e}"
        );
    }
    // The twin: the same repository with the workspace at its root.
    let text = call(
        Workspace::local(f.root()).unwrap(),
        r#"{"operation":"status"}"#,
    )
    .await
    .unwrap();
    assert!(text.starts_with("## main"), "{text}");
}

fn refused_as_outside(text: Result<String, tool_core::ToolError>) {
    let e = text.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Denied, "{e}");
    assert!(e.to_string().contains("outside the workspace"), "{e}");
}

#[tokio::test]
async fn a_git_directory_outside_the_workspace_is_refused() {
    let f = Fixture::empty();
    let elsewhere = tempfile::tempdir().unwrap();
    let gitdir = elsewhere.path().join("repo.git");
    git(
        f.root(),
        &[
            "init",
            "-q",
            "--separate-git-dir",
            gitdir.to_str().unwrap(),
            ".",
        ],
    );
    assert!(f.path(".git").is_file());
    refused_as_outside(
        f.call(r#"{"operation":"status"}"#)
            .await
            .map(|o| o.joined_text()),
    );
    refused_as_outside(
        f.call(r#"{"operation":"commit","message":"x"}"#)
            .await
            .map(|o| o.joined_text()),
    );
}

#[tokio::test]
async fn a_symlinked_git_directory_leading_out_is_refused() {
    let f = Fixture::empty();
    let elsewhere = tempfile::tempdir().unwrap();
    git(elsewhere.path(), &["init", "-q"]);
    std::os::unix::fs::symlink(elsewhere.path().join(".git"), f.path(".git")).unwrap();
    refused_as_outside(
        f.call(r#"{"operation":"status"}"#)
            .await
            .map(|o| o.joined_text()),
    );
}

#[tokio::test]
async fn a_work_tree_configured_outside_is_refused() {
    let f = Fixture::repo();
    let elsewhere = tempfile::tempdir().unwrap();
    f.git(&[
        "config",
        "core.worktree",
        elsewhere.path().to_str().unwrap(),
    ]);
    refused_as_outside(
        f.call(r#"{"operation":"checkout","branch":"x","create":true}"#)
            .await
            .map(|o| o.joined_text()),
    );
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn paths_in_an_extra_root_are_refused() {
    let f = Fixture::repo();
    let extra = tempfile::tempdir().unwrap();
    std::fs::write(extra.path().join("x.txt"), "x").unwrap();
    let ws =
        Workspace::local_with_roots(f.root(), vec![(extra.path().to_path_buf(), true)]).unwrap();
    let args = format!(
        r#"{{"operation":"add","paths":["{}/x.txt"]}}"#,
        extra.path().display()
    );
    let e = call(ws, &args).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Denied, "{e}");
    assert!(e.to_string().contains("extra root"), "{e}");
}

#[tokio::test]
async fn read_only_policy_allows_reads_and_refuses_writes() {
    let f = Fixture::repo();
    let ctx = ToolContext::new(
        Workspace::local(f.root()).unwrap(),
        Arc::new(Policy::read_only()),
        Arc::new(Limits::default()),
    );
    let s = stack();
    for args in [
        r#"{"operation":"status"}"#,
        r#"{"operation":"log"}"#,
        r#"{"operation":"branch"}"#,
        r#"{"operation":"stash","action":"list"}"#,
        r#"{"operation":"blame","paths":["src/a.rs"]}"#,
    ] {
        s.call_json("git_operations", args, ctx.for_call())
            .await
            .unwrap_or_else(|e| panic!("{args}: {e}"));
    }
    f.write("src/a.rs", "x\n");
    for args in [
        r#"{"operation":"add","paths":["src/a.rs"]}"#,
        r#"{"operation":"commit","message":"x"}"#,
        r#"{"operation":"stash"}"#,
        r#"{"operation":"branch","branch":"b","create":true}"#,
        r#"{"operation":"init","paths":["sub"]}"#,
    ] {
        let e = s
            .call_json("git_operations", args, ctx.for_call())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Denied, "{args}: {e}");
        assert!(e.to_string().contains("read_only"), "{e}");
    }
    assert_eq!(f.git(&["status", "--short"]), " M src/a.rs\n");
}

/// A backend with no local directory, standing in for the SQLite virtual filesystem.
#[derive(Debug)]
struct Virtual;

fn unsupported<T>() -> io::Result<T> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "virtual"))
}

impl Backend for Virtual {
    fn kind(&self) -> &'static str {
        "virtual"
    }
    fn local_dir(&self, _root: usize) -> Option<&Path> {
        None
    }
    fn metadata(&self, _: &tool_core::WsPath) -> io::Result<Metadata> {
        unsupported()
    }
    fn open_read(&self, _: &tool_core::WsPath) -> io::Result<(Box<dyn ReadSeek>, Metadata)> {
        unsupported()
    }
    fn read_dir(&self, _: &tool_core::WsPath) -> io::Result<Vec<DirEntry>> {
        unsupported()
    }
    fn write_atomic(&self, _: &tool_core::WsPath, _: &[u8]) -> io::Result<()> {
        unsupported()
    }
    fn append(&self, _: &tool_core::WsPath, _: &[u8]) -> io::Result<()> {
        unsupported()
    }
    fn create_dir_all(&self, _: &tool_core::WsPath) -> io::Result<()> {
        unsupported()
    }
    fn remove_file(&self, _: &tool_core::WsPath) -> io::Result<()> {
        unsupported()
    }
    fn remove_dir(&self, _: &tool_core::WsPath, _: bool) -> io::Result<()> {
        unsupported()
    }
}

#[tokio::test]
async fn a_virtual_workspace_is_told_git_needs_a_directory() {
    let ws = Workspace::with_backend(
        vec![Root {
            path: "/".into(),
            writable: true,
        }],
        Arc::new(Virtual),
    );
    for args in [r#"{"operation":"status"}"#, r#"{"operation":"init"}"#] {
        let e = call(ws.clone(), args).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Failed, "{e}");
        assert!(e.to_string().contains("directory on disk"), "{e}");
    }
}
