//! Shared fixtures: a temp-dir workspace beside an "outside" directory holding a secret, a
//! context builder, and small helpers. Every test builds its own fixture.

mod confinement;
mod layers;
#[cfg(target_os = "linux")]
mod namespace;
mod policy;
mod process;
mod schema;
mod validation;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tempfile::TempDir;
use tool_core::{Limits, Policy, ToolContext, ToolError, Workspace};

/// The content of the file outside the workspace that no test may ever read or change.
pub(crate) const SECRET: &str = "OUTSIDE-SECRET: if you can read this, confinement failed";

/// `base/ws` is the workspace; `base/outside` holds `secret` and a directory `dir/secret`.
pub(crate) struct Fixture {
    _dir: TempDir,
    pub(crate) base: PathBuf,
    pub(crate) root: PathBuf,
    pub(crate) outside: PathBuf,
    pub(crate) ws: Workspace,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        // Canonical, so absolute paths built from it match the workspace's canonical roots.
        let base = std::fs::canonicalize(dir.path()).expect("canonicalize");
        let root = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(outside.join("dir")).unwrap();
        std::fs::write(outside.join("secret"), SECRET).unwrap();
        std::fs::write(outside.join("dir").join("secret"), SECRET).unwrap();
        let ws = Workspace::local(&root).expect("workspace");
        Fixture {
            _dir: dir,
            base,
            root,
            outside,
            ws,
        }
    }

    /// Writes `content` at `rel` under the workspace (creating parents) with std, not the workspace.
    pub(crate) fn file(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.root.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, content).unwrap();
        p
    }

    pub(crate) fn dir(&self, rel: &str) -> PathBuf {
        let p = self.root.join(rel);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    /// A symbolic link at `rel` (under the workspace) pointing at `target` (used verbatim).
    pub(crate) fn symlink(&self, target: impl AsRef<Path>, rel: &str) -> PathBuf {
        let p = self.root.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::os::unix::fs::symlink(target, &p).unwrap();
        p
    }

    /// The outside secret files are untouched and nothing new appeared outside.
    pub(crate) fn assert_outside_intact(&self) {
        assert_eq!(
            std::fs::read_to_string(self.outside.join("secret")).unwrap(),
            SECRET
        );
        assert_eq!(
            std::fs::read_to_string(self.outside.join("dir").join("secret")).unwrap(),
            SECRET
        );
        let mut names: Vec<String> = std::fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["dir", "secret"], "something was created outside");
        let inner: Vec<_> = std::fs::read_dir(self.outside.join("dir"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(inner.len(), 1, "something was created outside: {inner:?}");
    }

    pub(crate) fn ctx(&self, policy: Policy, limits: Limits) -> ToolContext {
        ToolContext::new(self.ws.clone(), Arc::new(policy), Arc::new(limits))
    }
}

/// Resolves and reads a whole file through the workspace.
pub(crate) fn read(ws: &Workspace, path: &str) -> Result<String, ToolError> {
    let p = ws.resolve(path)?;
    let bytes = ws.read_to_end(&p, 1 << 20)?;
    Ok(String::from_utf8(bytes).expect("utf-8 test content"))
}

/// Fails the test with the error's kind and message when `r` is not an error of `kind`.
#[track_caller]
pub(crate) fn assert_kind<T: std::fmt::Debug>(
    r: &Result<T, ToolError>,
    kind: tool_core::ErrorKind,
    case: &str,
) {
    match r {
        Err(e) => assert_eq!(e.kind(), kind, "{case}: wrong kind for error `{e}`"),
        Ok(v) => panic!("{case}: expected a {kind} error, got Ok({v:?})"),
    }
}
