//! Running cargo from the workspace root.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context as _;

/// The workspace root (the parent of this crate's directory).
pub(crate) fn root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// A `cargo` command (the cargo that runs xtask, if known) in the workspace root.
pub(crate) fn cargo<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let program = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(root());
    cmd
}

/// How a command is shown to humans.
pub(crate) fn display(cmd: &Command) -> String {
    let mut parts = vec!["cargo".to_owned()];
    parts.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    parts.join(" ")
}

/// Runs a command with inherited stdio and fails unless it exits successfully.
pub(crate) fn run_inherit(cmd: &mut Command) -> anyhow::Result<()> {
    let shown = display(cmd);
    let status = cmd
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("could not start `{shown}`"))?;
    if status.success() {
        Ok(())
    } else {
        anyhow::bail!("`{shown}` failed ({status})")
    }
}
