mod agent;
mod call;
mod commands;
mod cron;
mod display;
mod llm;
mod mcp;
#[cfg(feature = "postgres")]
mod postgres;
mod profiles;
mod trust;
mod web;

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs `toolshed` with `args` in `workspace`, optionally feeding `stdin`.
pub(crate) fn toolshed(workspace: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let ws = workspace.display().to_string();
    let mut argv = vec!["--workspace", ws.as_str()];
    argv.extend_from_slice(args);
    toolshed_raw(workspace, &argv, stdin)
}

/// Runs `toolshed` with exactly `args`; `home` keeps the user's own config out of the test.
pub(crate) fn toolshed_raw(home: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolshed"));
    cmd.args(args)
        .env("XDG_CONFIG_HOME", home.join(".no-user-config"))
        .env_remove("RUST_LOG")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("toolshed starts");
    if let Some(input) = stdin {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    child.wait_with_output().unwrap()
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Parses the single JSON object `--json` prints.
pub(crate) fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", stdout(o), stderr(o)))
}
