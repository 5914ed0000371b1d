//! `toolshed doctor`: which layers of the shell's sandbox hold on this machine, and why not.
//!
//! It runs `true` the way the shell runs a command (the same sandbox and process limit) and
//! reports what the kernel enforced, beside the kernel settings that decide it.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use tool_core::process::{ProcessSpec, Sandbox, harden_self, run};
use tool_core::{Limits, Policy, ToolContext, Workspace};
use toolshed_cli::config::Loaded;

/// One layer: its name, whether it holds, and what was seen.
struct Layer {
    name: &'static str,
    holds: bool,
    detail: String,
}

fn sysctl(path: &str) -> Option<String> {
    // Kernel settings are read, never written; `/proc/sys` is outside every workspace.
    #[allow(clippy::disallowed_methods)]
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The report, and whether every layer holds.
pub(crate) async fn report(workspace: &Path, loaded: &Loaded) -> Result<(String, bool)> {
    use std::fmt::Write as _;
    let shell = &loaded.config.shell_config();
    let dir = tempfile::tempdir().context("cannot make a temporary workspace for the probe")?;
    let root = dir.path();
    let ws = Workspace::local(root).context("cannot open the probe's workspace")?;
    let ctx = ToolContext::new(
        ws,
        std::sync::Arc::new(Policy::full()),
        std::sync::Arc::new(Limits::default()),
    );
    let mut spec = ProcessSpec::new("true", root);
    spec.timeout = Duration::from_secs(10);
    spec.max_processes = shell.max_processes;
    spec.pids_cgroup = shell.pids_cgroup;
    spec.max_file_bytes = shell.max_file_bytes;
    let mut sandbox = Sandbox::new(vec![root.to_path_buf()], false);
    sandbox.namespaces = shell.namespaces;
    spec.sandbox = shell.sandbox.then_some(sandbox);
    let out = run(spec, &ctx)
        .await
        .map_err(|e| anyhow::anyhow!("the probe command could not run: {e}"))?;

    let mut layers = Vec::new();
    match &out.sandbox {
        None => layers.push(Layer {
            name: "sandbox",
            holds: false,
            detail: "switched off in the configuration ([shell] sandbox = false)".into(),
        }),
        Some(s) => {
            layers.push(Layer {
                name: "namespaces",
                holds: s.namespaces_enforced,
                detail: format!(
                    "{} — the command sees system directories read-only, the workspace with .git and toolshed.toml read-only, a private /tmp and $HOME, no parent process, no terminal",
                    s.namespaces
                ),
            });
            layers.push(Layer {
                name: "landlock",
                holds: s.filesystem_enforced,
                detail: format!("{} — writes only beneath the writable roots", s.landlock),
            });
            layers.push(Layer {
                name: "seccomp",
                holds: s.network_enforced,
                detail: s.seccomp.clone(),
            });
        }
    }
    layers.push(Layer {
        name: "session",
        holds: true,
        detail: "every command starts a session of its own: no controlling terminal".into(),
    });
    layers.push(Layer {
        name: "dumpable",
        holds: harden_self(),
        detail: "toolshed is not dumpable: children cannot read its memory or environment".into(),
    });
    layers.push(Layer {
        name: "file size",
        holds: shell.max_file_bytes.is_some(),
        detail: match shell.max_file_bytes {
            Some(n) => format!("RLIMIT_FSIZE {n} bytes ([shell] max_file_bytes)"),
            None => "no limit".into(),
        },
    });
    layers.push(Layer {
        name: "processes",
        holds: out.pids.as_ref().is_some_and(|p| p.enforced),
        detail: out
            .pids
            .as_ref()
            .map(|p| p.summary.clone())
            .unwrap_or_else(|| "no limit ([shell] max_processes)".into()),
    });

    let mut text = String::new();
    let _ = writeln!(text, "toolshed doctor: the shell's layers on this machine");
    let _ = writeln!(text, "workspace: {}", workspace.display());
    let _ = writeln!(
        text,
        "user configuration: {}",
        loaded
            .user_file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "none (the defaults)".into())
    );
    if let Some(file) = &loaded.workspace_file {
        let how = if loaded.workspace_trusted {
            "trusted, applied in full".to_string()
        } else if loaded.ignored.is_empty() {
            "untrusted, applied where it narrows (nothing ignored)".to_string()
        } else {
            format!(
                "untrusted, applied where it narrows; ignored: {}",
                loaded.ignored.join(", ")
            )
        };
        let _ = writeln!(text, "workspace configuration: {} ({how})", file.display());
    }
    for l in &layers {
        let mark = if l.holds { "ok     " } else { "MISSING" };
        let _ = writeln!(text, "{mark} {:<11} {}", l.name, l.detail);
    }
    let _ = writeln!(text, "kernel settings:");
    for (name, path) in [
        (
            "user.max_user_namespaces",
            "/proc/sys/user/max_user_namespaces",
        ),
        (
            "kernel.unprivileged_userns_clone",
            "/proc/sys/kernel/unprivileged_userns_clone",
        ),
        (
            "kernel.apparmor_restrict_unprivileged_userns",
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        ),
        ("dev.tty.legacy_tiocsti", "/proc/sys/dev/tty/legacy_tiocsti"),
    ] {
        if let Some(v) = sysctl(path) {
            let _ = writeln!(text, "        {name} = {v}");
        }
    }
    let full = out.sandbox.as_ref().is_some_and(|s| s.fully_enforced());
    let verdict = if full {
        "verdict: the full sandbox holds; in supervised mode commands confined to the workspace run without asking"
    } else {
        "verdict: the full sandbox does not hold; in supervised mode every command asks first (see the MISSING lines)"
    };
    let _ = writeln!(text, "{verdict}");
    Ok((text, full))
}
