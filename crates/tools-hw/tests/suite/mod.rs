//! Integration test modules of tools-hw and their shared fixture: a temp-dir workspace, the
//! hardware tools behind the real stack (schema validation, policy, approval), and a fake I2C/SPI
//! device layer.

mod fake;
mod hardware_info;
mod i2c;
mod memory;
mod schemas;
mod screenshot;
mod serial;
mod spi;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tempfile::TempDir;
use tool_core::{
    ApproveAll, ErrorKind, Limits, Policy, Registry, Stack, ToolContext, ToolError, ToolOutput,
    Workspace,
};
use tools_hw::Config;

pub(crate) use fake::{FakeDevices, Op};

/// A workspace in a temp dir, the hardware tools over a fake device layer, and a context.
pub(crate) struct Fixture {
    pub(crate) dir: TempDir,
    pub(crate) fake: FakeDevices,
    pub(crate) stack: Stack,
    pub(crate) ctx: ToolContext,
}

impl Fixture {
    /// Tools built from `config`, fake devices `fake`, under `policy`, approving what it asks.
    pub(crate) fn new(config: Config, fake: FakeDevices, policy: Policy) -> Fixture {
        Fixture::build(config, Some(fake), policy, true)
    }

    /// Like [`Fixture::new`] but nobody approves: an `Ask` fails with `needs_approval`.
    pub(crate) fn unapproved(config: Config, fake: FakeDevices, policy: Policy) -> Fixture {
        Fixture::build(config, Some(fake), policy, false)
    }

    /// The tools exactly as `tools_hw::tools` builds them: the real Linux device layer.
    pub(crate) fn real(config: Config, policy: Policy) -> Fixture {
        Fixture::build(config, None, policy, true)
    }

    fn build(config: Config, fake: Option<FakeDevices>, policy: Policy, approve: bool) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let mut registry = Registry::new();
        let tools = match &fake {
            Some(fake) => tools_hw::tools_with_devices(&config, Arc::new(fake.clone())),
            None => tools_hw::tools(&config),
        };
        registry.register_all(tools).unwrap();
        let fake = fake.unwrap_or_else(|| FakeDevices::new(&[], &[]));
        let mut stack = Stack::new(registry);
        if approve {
            stack = stack.with_approver(Arc::new(ApproveAll));
        }
        let ctx = ToolContext::new(
            Workspace::local(&ws).unwrap(),
            Arc::new(policy),
            Arc::new(Limits::default()),
        );
        Fixture {
            dir,
            fake,
            stack,
            ctx,
        }
    }

    /// The workspace directory.
    // Only the screenshot tests look into the workspace.
    #[cfg_attr(not(feature = "screenshot"), allow(dead_code))]
    pub(crate) fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// Calls `tool` with `args` through the whole stack.
    pub(crate) async fn call(&self, tool: &str, args: &Value) -> Result<ToolOutput, ToolError> {
        self.stack
            .call_json(tool, &args.to_string(), self.ctx.for_call())
            .await
    }

    /// Calls and expects success.
    pub(crate) async fn ok(&self, tool: &str, args: &Value) -> ToolOutput {
        match self.call(tool, args).await {
            Ok(out) => out,
            Err(e) => panic!("{tool} {args} failed: {e}"),
        }
    }

    /// Calls and expects an error.
    pub(crate) async fn err(&self, tool: &str, args: &Value) -> ToolError {
        match self.call(tool, args).await {
            Ok(out) => panic!("{tool} {args} should fail but gave:\n{}", out.joined_text()),
            Err(e) => e,
        }
    }
}

/// A policy of `base` with `devices` on the device allow list.
pub(crate) fn allowing(base: Policy, devices: &[&str]) -> Policy {
    let mut p = base;
    p.allowed_devices = devices.iter().map(PathBuf::from).collect();
    p
}

/// What a table row expects.
#[derive(Debug)]
pub(crate) enum Want {
    /// Success whose text holds this.
    Ok(&'static str),
    /// An error of this kind whose message holds this.
    Err(ErrorKind, &'static str),
}

/// Checks one table row's result.
pub(crate) fn check(args: &Value, got: &Result<ToolOutput, ToolError>, want: &Want) {
    match (got, want) {
        (Ok(out), Want::Ok(text)) => assert!(
            out.joined_text().contains(text),
            "{args}: output lacks {text:?}:\n{}",
            out.joined_text()
        ),
        (Err(e), Want::Err(kind, text)) => {
            assert_eq!(e.kind(), *kind, "{args}: wrong kind: {e}");
            assert!(
                e.to_string().contains(text),
                "{args}: message lacks {text:?}: {e}"
            );
        }
        (Ok(out), Want::Err(..)) => {
            panic!(
                "{args} should fail ({want:?}) but gave:\n{}",
                out.joined_text()
            )
        }
        (Err(e), Want::Ok(_)) => panic!("{args} should succeed but failed: {e}"),
    }
}

/// Creates an empty file standing in for a device node (discovery lists names only).
pub(crate) fn touch(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, b"").unwrap();
    p
}

/// Set in the environment of a child process started by [`run_child`].
pub(crate) const CHILD: &str = "TOOLS_HW_TEST_CHILD";

/// Whether this test runs as the child of `parent` (the only place where it can, since it needs
/// an environment that a test cannot set for itself). Says so when it does not.
pub(crate) fn in_child(parent: &str) -> bool {
    let child = std::env::var_os(CHILD).is_some();
    if !child {
        println!("not run here: this test runs in a child process started by `{parent}`");
    }
    child
}

/// Runs the ignored test `test` of this binary in a child process with `set` added to and
/// `remove` taken from the environment, and fails unless it ran and passed. Returns its output.
pub(crate) fn run_child(test: &str, set: &[(&str, &OsStr)], remove: &[&str]) -> String {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = std::process::Command::new(exe);
    cmd.args([
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, "1");
    for k in remove {
        cmd.env_remove(k);
    }
    for (k, v) in set {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("test result: ok. 1 passed"),
        "child test {test} failed:\n{text}"
    );
    text
}
