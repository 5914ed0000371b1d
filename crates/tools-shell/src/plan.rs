//! From a command line to what the call will touch: the analysis turned into [`Access`]es, and
//! the directories and sandbox the command will run with.

use std::path::PathBuf;
use std::sync::OnceLock;

use tool_core::process::{SandboxStatus, probe_sandbox};
use tool_core::workspace::FileKind;
use tool_core::{Access, Risk, ToolContext, ToolError, WsPath};

use crate::Config;
use crate::analyze::{Analysis, TargetKind, analyze};

/// What a shell call will do, worked out before it runs.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) analysis: Analysis,
    pub(crate) accesses: Vec<Access>,
    /// The working directory on disk.
    pub(crate) cwd: PathBuf,
    /// Directories the sandbox lets the command write beneath.
    pub(crate) writable: Vec<PathBuf>,
}

/// What the kernel offers, probed once per process.
pub(crate) fn kernel_sandbox() -> &'static SandboxStatus {
    static PROBE: OnceLock<SandboxStatus> = OnceLock::new();
    PROBE.get_or_init(probe_sandbox)
}

/// Analyses `command` run in `cwd` (relative to the workspace) and lists its accesses.
pub(crate) fn plan(
    ctx: &ToolContext,
    config: &Config,
    command: &str,
    cwd: Option<&str>,
) -> Result<Plan, ToolError> {
    let Some(_root) = ctx.workspace.local_root() else {
        return Err(ToolError::Failed(
            "The shell needs a workspace on the local disk, and this one is virtual; use the file tools instead.".into(),
        ));
    };
    if command.trim().is_empty() {
        return Err(ToolError::invalid(
            "/command",
            "the command is empty; give a shell command such as `ls -la`",
        ));
    }
    if command.len() > config.max_command_bytes {
        return Err(ToolError::invalid(
            "/command",
            format!(
                "the command is {} bytes, more than the {}-byte limit; put long scripts in a file and run it",
                command.len(),
                config.max_command_bytes
            ),
        ));
    }
    if command.contains('\0') {
        return Err(ToolError::invalid(
            "/command",
            "the command contains a NUL byte; remove it",
        ));
    }
    let cwd_ws = ctx.workspace.resolve(cwd.unwrap_or("."))?;
    let cwd_path = ctx.workspace.local_path(&cwd_ws).ok_or_else(|| {
        ToolError::Failed("The working directory is not on the local disk.".into())
    })?;
    if !ctx.workspace.metadata(&cwd_ws)?.kind.eq(&FileKind::Dir) {
        return Err(ToolError::invalid(
            "/cwd",
            format!("{cwd_ws} is not a directory; give a directory inside the workspace"),
        ));
    }
    let analysis = analyze(command).map_err(|u| {
        ToolError::Denied(format!(
            "The shell command was refused because Toolshed cannot check it: {u}."
        ))
    })?;

    let mut risk = analysis.risk;
    let mut accesses = Vec::new();
    for target in &analysis.targets {
        let paths = resolve_target(ctx, &cwd_path, &target.path, target.bases.as_deref())?;
        for p in paths {
            refuse_symlink(ctx, &p)?;
            accesses.push(match target.kind {
                TargetKind::Write => Access::Write(p),
                TargetKind::Delete => Access::Delete {
                    path: p,
                    recursive: false,
                },
                TargetKind::DeleteTree => Access::Delete {
                    path: p,
                    recursive: true,
                },
            });
        }
    }
    if analysis.network {
        accesses.push(Access::Network { host: "*".into() });
    }

    let unsandboxed = !config.sandbox || !kernel_sandbox().fully_enforced();
    if unsandboxed && !config.allow_unsandboxed && risk < Risk::Medium {
        // Without the sandbox nothing but the analysis stands between the command and the
        // machine: supervised mode asks (see `Config::allow_unsandboxed`).
        risk = Risk::Medium;
    }
    accesses.insert(
        0,
        Access::Execute {
            command: command.to_string(),
            programs: analysis.programs(),
            risk,
        },
    );

    let writable = ctx
        .workspace
        .roots()
        .iter()
        .enumerate()
        .filter(|(_, r)| r.writable)
        .filter_map(|(i, _)| ctx.workspace.backend().local_dir(i).map(PathBuf::from))
        .collect();
    Ok(Plan {
        analysis,
        accesses,
        cwd: cwd_path,
        writable,
    })
}

/// Resolves a written path against every directory the shell may be in.
fn resolve_target(
    ctx: &ToolContext,
    cwd: &std::path::Path,
    path: &str,
    bases: Option<&[String]>,
) -> Result<Vec<WsPath>, ToolError> {
    if path.starts_with('/') {
        return Ok(vec![ctx.workspace.resolve(path).map_err(outside(path))?]);
    }
    if path.starts_with('~') {
        return Err(ToolError::Denied(format!(
            "The shell command writes to `{path}`, in the home directory, outside the workspace; write inside the workspace instead."
        )));
    }
    let Some(bases) = bases else {
        return Err(ToolError::Denied(format!(
            "The shell command changes directory in a way Toolshed cannot follow (cd to a computed path, cd -, popd) and then writes to the relative path `{path}`; use `cd` with a literal directory, or a path from the workspace root."
        )));
    };
    let mut out = Vec::new();
    for base in bases {
        let dir = if base.starts_with('/') {
            PathBuf::from(base)
        } else {
            cwd.join(base)
        };
        let full = dir.join(path);
        let full = full.to_string_lossy();
        let p = ctx.workspace.resolve(&full).map_err(outside(path))?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

fn outside(path: &str) -> impl Fn(ToolError) -> ToolError + '_ {
    move |e| match e {
        ToolError::Denied(why) | ToolError::InvalidArgs { message: why, .. } => ToolError::Denied(
            format!("The shell command writes to `{path}`, which is refused: {why}"),
        ),
        other => other,
    }
}

/// A redirection to an existing symbolic link writes wherever the link points: refuse it.
fn refuse_symlink(ctx: &ToolContext, p: &WsPath) -> Result<(), ToolError> {
    let (Some(parent), Some(name)) = (p.parent(), p.file_name()) else {
        return Ok(());
    };
    if name.contains(['*', '?', '[']) {
        return Ok(());
    }
    let Ok(entries) = ctx.workspace.backend().read_dir(&parent) else {
        return Ok(());
    };
    if entries
        .iter()
        .any(|e| e.name == name && e.kind == FileKind::Symlink)
    {
        return Err(ToolError::Denied(format!(
            "The shell command writes to {p}, which is a symbolic link, and Toolshed does not write through links; write to the file it points to."
        )));
    }
    Ok(())
}
