//! Integration test modules of tools-git, and their shared fixture.

mod confinement;
mod hostile;
mod operations;
mod unconfigured;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use tempfile::TempDir;
use tool_core::{
    ApproveAll, Limits, Policy, Registry, Stack, ToolContext, ToolError, ToolOutput, Workspace,
};

/// Makes libgit2 in this test binary ignore the machine's global, XDG and system git config
/// (a developer's `~/.gitconfig` must not change results, and the fallback identity must be
/// testable). Every test reaches this before its first libgit2 call.
#[allow(unsafe_code)] // `set_search_path` is unsafe only because it mutates libgit2's globals.
pub(crate) fn hermetic_libgit2() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let empty = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tools-git-no-git-config");
        std::fs::create_dir_all(&empty).unwrap();
        for level in [
            git2::ConfigLevel::Global,
            git2::ConfigLevel::XDG,
            git2::ConfigLevel::System,
        ] {
            // SAFETY: runs once, inside `Once::call_once`, and every test calls this before it
            // touches libgit2, so no other thread reads the search path meanwhile.
            unsafe { git2::opts::set_search_path(level, &empty).unwrap() };
        }
    });
}

/// The stack with this crate's tools, approving whatever the policy asks about.
pub(crate) fn stack() -> Stack {
    hermetic_libgit2();
    let mut registry = Registry::new();
    registry
        .register_all(tools_git::tools(&Default::default()))
        .unwrap();
    Stack::new(registry).with_approver(Arc::new(ApproveAll))
}

/// A supervised context on `ws`.
pub(crate) fn context(ws: Workspace, limits: Limits) -> ToolContext {
    ToolContext::new(ws, Arc::new(Policy::supervised()), Arc::new(limits))
}

/// Runs the real `git` in `dir` with a fixed identity and no global or system config, and
/// returns its standard output; panics if it fails.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_command(dir, args).output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `git` command used by [`git`], for tests that need its exit status.
pub(crate) fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "Test Author")
        .env("GIT_COMMITTER_EMAIL", "author@example.com")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE");
    cmd
}

/// A temp dir holding a workspace, a stack and a context.
pub(crate) struct Fixture {
    pub(crate) dir: TempDir,
    pub(crate) stack: Stack,
    pub(crate) ctx: ToolContext,
}

impl Fixture {
    /// An empty directory workspace.
    pub(crate) fn empty() -> Fixture {
        Fixture::with_limits(Limits::default())
    }

    /// An empty directory workspace with other limits.
    pub(crate) fn with_limits(limits: Limits) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let ctx = context(Workspace::local(dir.path()).unwrap(), limits);
        Fixture {
            dir,
            stack: stack(),
            ctx,
        }
    }

    /// A repository made by the real `git` with two commits on `main`:
    /// `src/a.rs` and `docs/guide.md` first ("first"), then a change to `src/a.rs` ("second").
    pub(crate) fn repo() -> Fixture {
        let f = Fixture::empty();
        f.git(&["init", "-q", "-b", "main"]);
        f.git(&["config", "user.name", "Repo Person"]);
        f.git(&["config", "user.email", "repo@example.com"]);
        f.write("src/a.rs", "fn a() {}\n");
        f.write("docs/guide.md", "# Guide\n");
        f.git(&["add", "."]);
        f.git_at(
            "2024-02-29T12:34:56+02:00",
            &["commit", "-q", "-m", "first"],
        );
        f.write("src/a.rs", "fn a() {}\nfn b() {}\n");
        f.git(&["add", "."]);
        f.git_at(
            "2024-03-01T08:00:00+00:00",
            &["commit", "-q", "-m", "second"],
        );
        f
    }

    /// The workspace root.
    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    /// A path under the workspace root.
    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes a file (creating parents).
    pub(crate) fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// Reads a file.
    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// Runs the real `git` at the workspace root.
    pub(crate) fn git(&self, args: &[&str]) -> String {
        git(self.root(), args)
    }

    /// Runs the real `git` with author and committer dates set.
    pub(crate) fn git_at(&self, date: &str, args: &[&str]) -> String {
        let out = git_command(self.root(), args)
            .env("GIT_AUTHOR_DATE", date)
            .env("GIT_COMMITTER_DATE", date)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Calls `git_operations` with raw JSON arguments through the whole stack.
    pub(crate) async fn call(&self, args: &str) -> Result<ToolOutput, ToolError> {
        self.stack
            .call_json("git_operations", args, self.ctx.for_call())
            .await
    }

    /// Calls and expects success; returns the text.
    pub(crate) async fn ok(&self, args: &str) -> String {
        match self.call(args).await {
            Ok(out) => out.joined_text(),
            Err(e) => panic!("{args} failed: {e}"),
        }
    }

    /// Calls and expects success; returns the whole output.
    pub(crate) async fn output(&self, args: &str) -> ToolOutput {
        match self.call(args).await {
            Ok(out) => out,
            Err(e) => panic!("{args} failed: {e}"),
        }
    }

    /// Calls and expects an error.
    pub(crate) async fn err(&self, args: &str) -> ToolError {
        match self.call(args).await {
            Ok(out) => panic!("{args} should fail but gave:\n{}", out.joined_text()),
            Err(e) => e,
        }
    }
}
