//! Shared fixtures: a temp-dir workspace beside an "outside" directory, a stack with the shell
//! tools registered, and helpers to call them and to watch processes.

mod exec;
mod hostile;
mod jobs;
mod limits;
mod sandbox;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tempfile::TempDir;
use tool_core::{Limits, Policy, Registry, Stack, ToolContext, ToolError, ToolOutput, Workspace};

/// Whether this kernel lets the shell build its namespace sandbox, probed directly (not asked
/// of the code under test). `TOOLSHED_REQUIRE_SANDBOX=1` makes a refusal a failure.
pub(crate) fn kernel_has_user_namespaces() -> bool {
    let ok = std::process::Command::new("unshare")
        .args(["-Ur", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok || std::env::var_os("TOOLSHED_REQUIRE_SANDBOX").is_none_or(|v| v != "1"),
        "TOOLSHED_REQUIRE_SANDBOX=1 but this kernel refuses user namespaces"
    );
    ok
}

/// `base/ws` is the workspace; `base/outside` is a directory no command may write to.
pub(crate) struct Fixture {
    _dir: TempDir,
    pub(crate) root: PathBuf,
    pub(crate) outside: PathBuf,
    pub(crate) stack: Stack,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        Fixture::with_config(&tools_shell::Config::default())
    }

    /// Commands run without the namespace view (Landlock and seccomp stay), so the pids they
    /// print are the machine's: for the tests that watch processes die from outside. Inside the
    /// view, the PID namespace ends every process when the command ends (tool-core's
    /// namespace tests check that).
    pub(crate) fn host_pids() -> Fixture {
        Fixture::with_config(&tools_shell::Config::default().with_namespaces(false))
    }

    pub(crate) fn with_config(config: &tools_shell::Config) -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(dir.path()).expect("canonicalize");
        let root = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("f.txt"), "alpha beta\ngamma delta\n").unwrap();
        std::fs::write(root.join("list"), "a\nb\n").unwrap();
        let mut r = Registry::new();
        r.register_all(tools_shell::tools(config)).unwrap();
        Fixture {
            _dir: dir,
            root,
            outside,
            stack: Stack::new(r),
        }
    }

    pub(crate) fn ctx(&self, policy: Policy) -> ToolContext {
        ToolContext::new(
            Workspace::local(&self.root).expect("workspace"),
            Arc::new(policy),
            Arc::new(Limits::default()),
        )
    }

    /// Calls `tool` with JSON arguments under `policy`.
    pub(crate) async fn call(
        &self,
        policy: Policy,
        tool: &str,
        args: serde_json::Value,
    ) -> Result<ToolOutput, ToolError> {
        self.stack
            .call_json(tool, &args.to_string(), self.ctx(policy).for_call())
            .await
    }

    /// Runs `command` with the shell under `policy`.
    pub(crate) async fn sh(&self, policy: Policy, command: &str) -> Result<ToolOutput, ToolError> {
        self.call(policy, "shell", serde_json::json!({ "command": command }))
            .await
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Starts `command` as a background job under `policy` and reads its output (for ten
    /// seconds at most) until it holds `needle`; returns all it read.
    pub(crate) async fn job_until(&self, policy: Policy, command: &str, needle: &str) -> String {
        let started = self
            .call(
                policy.clone(),
                "shell",
                serde_json::json!({"command": command, "background": true}),
            )
            .await
            .unwrap();
        let id = started.structured.unwrap()["job_id"].as_u64().unwrap();
        let mut seen = String::new();
        for _ in 0..100 {
            let out = self
                .call(
                    policy.clone(),
                    "job_output",
                    serde_json::json!({"job_id": id}),
                )
                .await
                .unwrap();
            seen.push_str(&out.joined_text());
            if seen.contains(needle) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        seen
    }
}

/// The state letter of `pid`, if it exists.
pub(crate) fn state(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .map(str::to_string)
}

/// Waits (briefly) for `pid` to die and to be reaped: no zombie may be left either.
pub(crate) fn assert_gone(pid: i32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while let Some(s) = state(pid) {
        assert!(
            Instant::now() < deadline,
            "{what} (pid {pid}) is still there in state {s}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn read_pid(path: &Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(s) = std::fs::read_to_string(path)
            && let Ok(pid) = s.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The text of a successful call.
pub(crate) fn text(r: &Result<ToolOutput, ToolError>) -> String {
    match r {
        Ok(o) => o.joined_text(),
        Err(e) => panic!("expected output, got error: {e}"),
    }
}

/// Like [`assert_gone`], but lets the runtime run meanwhile (aborted tasks drop their children).
pub(crate) async fn assert_gone_async(pid: i32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while let Some(s) = state(pid) {
        assert!(
            Instant::now() < deadline,
            "{what} (pid {pid}) is still there in state {s}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
