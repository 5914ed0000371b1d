//! What `cargo xtask ci` sets up that cargo cannot, before the tests run, and what it finds
//! missing and skips (with one line each saying how to get it).
//!
//! Provisioned: the official Python MCP SDK (the client of the `toolshed mcp` end-to-end tests)
//! in a private virtual environment under the target directory, created once and reused, first on
//! the tests' `PATH`. Detected, never installed (they need system packages or a running server):
//! PostgreSQL, the screenshot libraries with Xvfb, and the kernel's user namespaces for the shell
//! sandbox. `XTASK_STRICT=1` (set by `.ci/run`, which installs all of them) turns every skip into
//! a failure, so CI cannot pass by skipping.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util;

/// The Python package the MCP end-to-end tests import.
const MCP_SDK: &str = "mcp>=1.10";

/// What the tests run with, and what was left out.
#[derive(Debug, Default)]
pub(crate) struct Provisioned {
    /// Directories put first on the tests' `PATH`.
    pub(crate) path_prefix: Vec<PathBuf>,
    /// Variables set for the tests.
    pub(crate) env: Vec<(&'static str, OsString)>,
    /// One line per part that is skipped: what, why, and how to get it.
    pub(crate) skipped: Vec<String>,
    /// The cargo arguments that add optional features.
    pub(crate) features: Vec<&'static str>,
}

impl Provisioned {
    /// Applies the environment to a command.
    pub(crate) fn apply(&self, cmd: &mut Command) {
        if !self.path_prefix.is_empty() {
            let mut paths = self.path_prefix.clone();
            if let Some(old) = std::env::var_os("PATH") {
                paths.extend(std::env::split_paths(&old));
            }
            if let Ok(joined) = std::env::join_paths(paths) {
                cmd.env("PATH", joined);
            }
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
    }

    fn skip(&mut self, line: String) {
        println!("skip: {line}");
        self.skipped.push(line);
    }
}

/// Whether skips fail the run (`XTASK_STRICT=1`).
pub(crate) fn strict() -> anyhow::Result<bool> {
    match std::env::var("XTASK_STRICT").as_deref() {
        Ok("1") => Ok(true),
        Ok("0") | Err(_) => Ok(false),
        Ok(other) => anyhow::bail!("XTASK_STRICT is `{other}`; set it to 1 or 0, or unset it"),
    }
}

/// Sets up and detects everything; see the module documentation.
pub(crate) fn run() -> anyhow::Result<Provisioned> {
    let mut out = Provisioned::default();
    python_sdk(&mut out);
    postgres(&mut out);
    out.features = screenshot(&mut out)?;
    user_namespaces(&mut out);
    if strict()? && !out.skipped.is_empty() {
        anyhow::bail!(
            "XTASK_STRICT=1 and {} part(s) would be skipped:\n  {}",
            out.skipped.len(),
            out.skipped.join("\n  ")
        );
    }
    Ok(out)
}

/// The target directory cargo builds into.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                util::root().join(dir)
            }
        }
        _ => util::root().join("target"),
    }
}

fn quiet(cmd: &mut Command) -> bool {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn has_sdk(python: &Path) -> bool {
    quiet(Command::new(python).args(["-c", "from mcp import Client"]))
}

/// The Python MCP SDK in `target/xtask/python-mcp`, made once and reused.
fn python_sdk(out: &mut Provisioned) {
    let venv = target_dir().join("xtask").join("python-mcp");
    let bin = venv.join("bin");
    let python = bin.join("python3");
    if has_sdk(&python) {
        println!("Python MCP SDK: reusing {}", venv.display());
        out.path_prefix.push(bin);
        return;
    }
    println!(
        "Python MCP SDK: creating a virtual environment in {} (once; pip install '{MCP_SDK}')",
        venv.display()
    );
    let made = (|| -> Result<(), String> {
        if !quiet(Command::new("python3").arg("--version")) {
            return Err("python3 is not on PATH (Debian: python3 python3-venv)".into());
        }
        let status = Command::new("python3")
            .args(["-m", "venv", "--clear"])
            .arg(&venv)
            .stdin(Stdio::null())
            .status()
            .map_err(|e| format!("python3 -m venv could not start: {e}"))?;
        if !status.success() {
            return Err(
                "python3 -m venv failed (on Debian install python3-venv; elsewhere use a Python \
                 with the venv module)"
                    .into(),
            );
        }
        let status = Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg(MCP_SDK)
            .stdin(Stdio::null())
            .status()
            .map_err(|e| format!("pip could not start: {e}"))?;
        if !status.success() {
            return Err(format!(
                "pip install '{MCP_SDK}' failed (is the Python package index reachable?)"
            ));
        }
        if !has_sdk(&python) {
            return Err("the SDK was installed but `from mcp import Client` fails".into());
        }
        Ok(())
    })();
    match made {
        Ok(()) => out.path_prefix.push(bin),
        Err(why) => {
            out.env.push(("TOOLSHED_SKIP_PYTHON_MCP", "1".into()));
            out.skip(format!(
                "the Python MCP SDK end-to-end tests: {why}; fix that and run again"
            ));
        }
    }
}

fn postgres(out: &mut Provisioned) {
    if std::env::var_os("TOOLSHED_TEST_PG").is_none_or(|v| v.is_empty()) {
        out.skip(
            "the PostgreSQL half of the store suites: TOOLSHED_TEST_PG is not set; start a server \
             (Debian: postgresql; .ci/run starts one on 127.0.0.1:55432) and set \
             TOOLSHED_TEST_PG=postgres://USER:PASSWORD@HOST:PORT/DATABASE"
                .into(),
        );
    }
}

/// The cargo features beyond the defaults: `tools-hw/screenshot` (xcap) when its system
/// libraries and Xvfb are here. `XTASK_SCREENSHOT=1` demands it, `XTASK_SCREENSHOT=0` leaves it
/// out (and says so); otherwise it is detected.
fn screenshot(out: &mut Provisioned) -> anyhow::Result<Vec<&'static str>> {
    const FEATURE: &str = "tools-hw/screenshot";
    match std::env::var("XTASK_SCREENSHOT").as_deref() {
        Ok("1") => return Ok(vec!["--features", FEATURE]),
        Ok("0") => {
            out.skip(format!(
                "{FEATURE} (the screenshot tool): XTASK_SCREENSHOT=0"
            ));
            return Ok(Vec::new());
        }
        Ok(other) => anyhow::bail!("XTASK_SCREENSHOT is `{other}`; set it to 1 or 0, or unset it"),
        Err(_) => {}
    }
    let libraries = quiet(Command::new("pkg-config").args([
        "--exists",
        "libpipewire-0.3",
        "xcb",
        "wayland-client",
        "gbm",
    ]));
    let xvfb = Command::new("Xvfb")
        .arg("-help")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if libraries && xvfb {
        println!("screen capture libraries and Xvfb found: building with {FEATURE}");
        Ok(vec!["--features", FEATURE])
    } else {
        out.skip(format!(
            "{FEATURE} (the screenshot tool and its Xvfb tests): needs the Debian packages \
             libxcb1-dev libwayland-dev libgbm-dev libpipewire-0.3-dev libclang-dev xvfb \
             (.ci/run installs them)"
        ));
        Ok(Vec::new())
    }
}

/// The shell's namespace sandbox needs unprivileged user namespaces; without them its tests
/// check the fallback instead.
fn user_namespaces(out: &mut Provisioned) {
    let probe = Command::new("unshare")
        .args(["-Ur", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if probe.is_err() {
        out.skip(
            "the shell's namespace sandbox tests (they test the fallback instead): `unshare` \
             (util-linux) is not installed, so user namespaces cannot be probed"
                .into(),
        );
    } else if !probe.is_ok_and(|s| s.success()) {
        out.skip(
            "the shell's namespace sandbox tests (they test the fallback instead): this kernel \
             refuses unprivileged user namespaces (`unshare -Ur true` fails: check \
             user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns, or the \
             container's seccomp profile)"
                .into(),
        );
    }
}
