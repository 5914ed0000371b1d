//! From a command line to what the call will touch: the analysis turned into [`Access`]es, and
//! the directories and sandbox the command will run with.

// The protected-path guard checks and renames paths on the local disk after a command, outside
// any tool call's workspace handle: the paths are the plan's own, already confined.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;
use std::sync::OnceLock;

use tool_core::process::{Sandbox, SandboxStatus, probe_sandbox};
use tool_core::workspace::FileKind;
use tool_core::{Access, Autonomy, Risk, ToolContext, ToolError, WsPath};

use crate::Config;
use crate::analyze::{Analysis, Reach, TargetKind, analyze};

/// What a shell call will do, worked out before it runs.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) analysis: Analysis,
    /// The working directory on disk.
    pub(crate) cwd: PathBuf,
    /// The sandbox the command runs in.
    pub(crate) sandbox: Sandbox,
    /// Protected paths that do not exist yet, which the command must not create.
    pub(crate) guard: Guard,
}

/// The protected paths of a command, as they were when it started. The namespace view mounts
/// the existing ones read-only, but a mount needs something to mount over, and a mount moves
/// with its parent directory: a command could create a missing one (a `toolshed.toml` that
/// widens the next start's policy, a `.git/hooks/x` that the user's next `git commit` runs), or
/// rename a protected file's parent away and put a new file in its place. [`Guard::check`]
/// runs while a background job runs and when any command ends: whatever appeared or replaced
/// a protected path is renamed aside, so it has no effect, and the output says so.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    /// Each protected path, with what it was when it existed.
    paths: Vec<(PathBuf, Option<Identity>)>,
    /// The writable roots and the nested repositories found below them at the start: a new
    /// one (`sub/.git` made by opaque code) is git's own files too, unless the command was
    /// allowed to write repositories.
    roots: Vec<(PathBuf, Vec<PathBuf>)>,
    /// Whether the command runs code the analysis cannot see into, or writes: its last check
    /// then looks for new repositories through the whole tree, not the first
    /// [`NESTED_GIT_DIRS`] directories (round 16: `git init aa/d0005/r` beyond them, by
    /// python3, went unseen).
    thorough: bool,
    /// When the command started, less two seconds (the kernel stamps inodes with a coarse
    /// clock, and some filesystems round to two seconds): a repository is new if its `.git`
    /// changed since (a rename changes it too).
    since: std::time::SystemTime,
    /// The paths renamed aside so far, shared by the checks of one command.
    moved: std::sync::Arc<std::sync::Mutex<Vec<PathBuf>>>,
}

/// How often a running command's protected paths are checked.
pub(crate) const GUARD_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// What a protected path was: its device and inode, its type and its birth time (a file made in
/// its place may get the freed inode number at once, as ext4 gives it), and where it led when
/// it was a link.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    kind: u32,
    born: Option<std::time::SystemTime>,
    link: Option<PathBuf>,
}

fn identity(path: &std::path::Path) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::symlink_metadata(path).ok()?;
    Some(Identity {
        dev: m.dev(),
        ino: m.ino(),
        kind: m.mode() & 0o170_000,
        born: m.created().ok(),
        link: if m.file_type().is_symlink() {
            std::fs::read_link(path).ok()
        } else {
            None
        },
    })
}

/// Whether the inode at `path` changed (was made, written, renamed) at or after `since`: its
/// ctime, which no program can set.
fn changed_since(path: &std::path::Path, since: std::time::SystemTime) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let changed = std::time::UNIX_EPOCH
        + std::time::Duration::new(
            u64::try_from(m.ctime()).unwrap_or(0),
            u32::try_from(m.ctime_nsec()).unwrap_or(0),
        );
    changed >= since
}

/// A name beside `path` that nothing has: the time in nanoseconds, the process and a counter,
/// checked before use, so a command cannot occupy it in advance.
fn aside_name(path: &std::path::Path) -> Option<PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name()?.to_string_lossy().into_owned();
    for _ in 0..16 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let candidate = path.with_file_name(format!(
            "{name}.quarantined-{nanos:x}-{}-{n}",
            std::process::id()
        ));
        if std::fs::symlink_metadata(&candidate).is_err() {
            return Some(candidate);
        }
    }
    None
}

/// Moves `path` aside, or, when that fails, removes it (it is what the command made): either
/// way it has no effect afterwards. The sentence says which.
fn quarantine(path: &std::path::Path, what: &str) -> String {
    let shown = path.display();
    if let Some(aside) = aside_name(path)
        && std::fs::rename(path, &aside).is_ok()
    {
        return format!(
            "protected: the command {what} {shown}, a protected path (Toolshed's configuration, git's own files or policy.protected_paths), which no command may change; it was renamed to {} and has no effect",
            aside.display()
        );
    }
    let is_dir = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    let removed = if is_dir {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match removed {
        Ok(()) => format!(
            "protected: the command {what} {shown}, a protected path, which no command may change; it could not be renamed aside, so it was removed"
        ),
        Err(e) => format!(
            "protected: the command {what} {shown}, a protected path, and it could be neither renamed aside nor removed ({e}); remove it before the next start"
        ),
    }
}

impl Guard {
    /// `roots`: each writable root with the nested repositories found below it now.
    fn new(
        protected: &[PathBuf],
        roots: Vec<(PathBuf, Vec<PathBuf>)>,
        repos_allowed: bool,
        thorough: bool,
    ) -> Guard {
        Guard {
            paths: protected.iter().map(|p| (p.clone(), identity(p))).collect(),
            roots: if repos_allowed { Vec::new() } else { roots },
            thorough,
            since: std::time::SystemTime::now() - std::time::Duration::from_secs(2),
            moved: std::sync::Arc::default(),
        }
    }

    /// Moves aside every protected path the command created or replaced, and every
    /// repository it created in the first [`NESTED_GIT_DIRS`] directories below a root; one
    /// sentence per path. Runs while the command runs.
    pub(crate) fn check(&self) -> Vec<String> {
        self.check_within(NESTED_GIT_DEPTH, NESTED_GIT_DIRS)
    }

    /// [`Guard::check`] when the command has ended: for a command that ran opaque code, new
    /// repositories are looked for through the whole tree (up to [`THOROUGH_DIRS`]
    /// directories, and the note says when there were more).
    pub(crate) fn check_last(&self) -> Vec<String> {
        if self.thorough {
            self.check_within(usize::MAX, THOROUGH_DIRS)
        } else {
            self.check()
        }
    }

    /// Notes that `path` was renamed aside.
    fn record(&self, path: &std::path::Path) {
        if let Ok(mut moved) = self.moved.lock() {
            moved.push(path.to_path_buf());
        }
    }

    /// Whether some path was renamed aside more than once: the command made it again after
    /// it was moved (round 16: a background job that renamed the quarantined copy back every
    /// few milliseconds kept a denied path's content in place between checks). Such a
    /// command is stopped.
    pub(crate) fn remade(&self) -> Option<PathBuf> {
        let moved = self.moved.lock().ok()?;
        moved
            .iter()
            .enumerate()
            .find(|(i, p)| moved[..*i].contains(p))
            .map(|(_, p)| p.clone())
    }

    fn check_within(&self, depth: usize, dirs: usize) -> Vec<String> {
        let mut notes = Vec::new();
        for (p, before) in &self.paths {
            let now = identity(p);
            if now.is_none() || now == *before {
                continue;
            }
            let what = if before.is_none() {
                "created"
            } else {
                "replaced"
            };
            notes.push(quarantine(p, what));
            self.record(p);
            // A link is put back as it was (a file's content is gone with it; the namespace
            // view keeps both from being replaced where it holds).
            if let Some(Identity {
                link: Some(target), ..
            }) = before
                && std::fs::symlink_metadata(p).is_err()
                && std::os::unix::fs::symlink(target, p).is_ok()
            {
                notes.push(format!(
                    "protected: the link {} was put back as it was, leading to {}",
                    p.display(),
                    target.display()
                ));
            }
        }
        for (root, before) in &self.roots {
            let (repos, whole) = nested_git_within(root, depth, dirs);
            for repo in repos {
                // One found now but not at the start may have been there all along, beyond
                // the first walk's reach (or pushed into it): only one whose `.git` changed
                // since the command started is its.
                // A directory that became git-shaped now may have got its `HEAD` long ago:
                // the directory's own change (an entry added) counts too.
                let is_dot_git = repo
                    .file_name()
                    .is_some_and(|n| n.as_encoded_bytes().eq_ignore_ascii_case(b".git"));
                let changed = changed_since(&repo, self.since)
                    || (!is_dot_git && repo.parent().is_some_and(|d| changed_since(d, self.since)));
                if !before.contains(&repo) && changed {
                    notes.push(quarantine(&repo, "created"));
                    self.record(&repo);
                }
            }
            if !whole && depth == usize::MAX {
                notes.push(format!(
                    "protected: {} holds more than {dirs} directories, and only the first were searched for repositories the command may have made; look for new `.git` directories there before you run git in them",
                    root.display()
                ));
            }
        }
        notes
    }
}

/// Paths of every writable root that no command writes (mounted read-only in the sandbox):
/// git's directory, whose config and hooks run programs, and Toolshed's own configuration.
pub(crate) const PROTECTED: &[&str] = &[".git", "toolshed.toml", ".toolshed"];

/// The parts of `.git` that stay read-only even when a command was allowed to write the
/// repository (`git commit` in the shell, approved): what runs programs, and what points git at
/// another directory whose config would (`commondir`, submodules' and worktrees' git dirs).
pub(crate) const GIT_PROTECTED: &[&str] = &[
    ".git/config",
    ".git/config.worktree",
    ".git/commondir",
    ".git/hooks",
    ".git/info",
    ".git/modules",
    ".git/worktrees",
];

/// How deep, and over how many directories, [`nested_git`] looks below a root.
const NESTED_GIT_DEPTH: usize = 12;
const NESTED_GIT_DIRS: usize = 1024;

/// The `.git` entries (directories, or the files of submodules and worktrees) in the
/// directories below `root`, breadth first, at most [`NESTED_GIT_DEPTH`] levels down and
/// [`NESTED_GIT_DIRS`] directories in all, so a huge tree costs a bounded look. Links are not
/// followed; the root's own `.git` is in [`PROTECTED`] already.
fn nested_git(root: &std::path::Path) -> Vec<PathBuf> {
    nested_git_within(root, NESTED_GIT_DEPTH, NESTED_GIT_DIRS).0
}

/// How many directories the last check of a command that ran opaque code searches for new
/// repositories.
const THOROUGH_DIRS: usize = 200_000;

/// [`nested_git`] at most `max_depth` levels down and over `max_dirs` directories, and whether
/// that was every directory.
fn nested_git_within(
    root: &std::path::Path,
    max_depth: usize,
    max_dirs: usize,
) -> (Vec<PathBuf>, bool) {
    let mut found = Vec::new();
    let mut queue = std::collections::VecDeque::from([(root.to_path_buf(), 0usize)]);
    let mut visited = 0;
    while let Some((dir, depth)) = queue.pop_front() {
        visited += 1;
        if visited > max_dirs {
            return (found, false);
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        // A directory shaped like git's own (`HEAD` with `objects` and `refs`, or with
        // `commondir`) is a repository to git whatever its name.
        let (mut head, mut objects, mut refs, mut common) = (false, false, false, false);
        let mut below = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            // Of any kind: git accepts executable files and links for `objects` and `refs`
            // (round 19).
            match name.as_encoded_bytes() {
                b"HEAD" => head = true,
                b"objects" => objects = true,
                b"refs" => refs = true,
                b"commondir" => common = true,
                _ => {}
            }
            if name.as_encoded_bytes().eq_ignore_ascii_case(b".git") {
                if depth > 0 {
                    found.push(entry.path());
                }
                continue;
            }
            if kind.is_dir() && depth < max_depth {
                below.push(entry.path());
            }
        }
        if head && ((objects && refs) || common) {
            // What makes it one, and what runs programs: read-only in the view when it was
            // there before, renamed aside when the command made it.
            for part in ["HEAD", "config", "hooks", "commondir"] {
                let p = dir.join(part);
                if std::fs::symlink_metadata(&p).is_ok() {
                    found.push(p);
                }
            }
            continue;
        }
        queue.extend(below.into_iter().map(|p| (p, depth + 1)));
    }
    (found, true)
}

/// How many directories, and how many covered paths, [`glob_covered`] deals with before it
/// gives up.
const GLOB_WALK_DIRS: usize = 20_000;
const GLOB_COVERED_MAX: usize = 512;

/// The existing paths below `root` that globbed kind rules cover.
#[derive(Debug, Default)]
struct Covered {
    hidden: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
}

/// Walks every directory below `root` (links not followed, `.git` skipped) and sorts the paths
/// `covers(rel)` answers `(hide, read-only)` for; an error sentence when the tree or the
/// matches are too many to walk or mount, so that a rule is never silently dropped. A covered
/// directory is taken whole.
fn glob_covered(
    root: &std::path::Path,
    covers: impl Fn(&str) -> (bool, bool),
) -> Result<Covered, String> {
    let mut found = Covered::default();
    let mut queue = std::collections::VecDeque::from([(root.to_path_buf(), String::new())]);
    let mut visited = 0;
    while let Some((dir, rel_dir)) = queue.pop_front() {
        visited += 1;
        if visited > GLOB_WALK_DIRS {
            return Err(format!(
                "the workspace has more than {GLOB_WALK_DIRS} directories, too many to find every file the rule covers before each command"
            ));
        }
        let entries = std::fs::read_dir(&dir).map_err(|e| {
            format!(
                "{} cannot be listed ({e}), so what the rule covers there is unknown",
                dir.display()
            )
        })?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                return Err(format!(
                    "{} has a name that is not UTF-8, which the rule's pattern cannot be matched against",
                    entry.path().display()
                ));
            };
            if rel_dir.is_empty() && name == ".git" {
                continue;
            }
            let rel = if rel_dir.is_empty() {
                name.to_owned()
            } else {
                format!("{rel_dir}/{name}")
            };
            let (hide, read_only) = covers(&rel);
            if hide {
                found.hidden.push(entry.path());
            } else if read_only {
                found.read_only.push(entry.path());
            }
            if found.hidden.len() + found.read_only.len() > GLOB_COVERED_MAX {
                return Err(format!(
                    "it covers more than {GLOB_COVERED_MAX} existing paths, too many to hide one by one"
                ));
            }
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && !hide {
                queue.push_back((entry.path(), rel));
            }
        }
    }
    Ok(found)
}

/// Whether `dir` holds git data under whatever name: a repository git itself would open (a
/// `HEAD` file beside `objects/` and `refs/`: a bare clone, a copied `.git`), or a copied
/// object store (`objects/` with `pack/` or two-hex-digit fan-out directories).
fn is_git_data(dir: &std::path::Path, name: &str) -> bool {
    let is = |p: &str, want_dir: bool| {
        std::fs::symlink_metadata(dir.join(p))
            .is_ok_and(|m| if want_dir { m.is_dir() } else { m.is_file() })
    };
    if is("HEAD", false) && is("objects", true) && is("refs", true) {
        return true;
    }
    if name == "objects" {
        if is("pack", true) || is("info/alternates", false) {
            return true;
        }
        if let Ok(entries) = std::fs::read_dir(dir) {
            return entries.flatten().take(512).any(|e| {
                let n = e.file_name();
                let n = n.as_encoded_bytes();
                n.len() == 2
                    && n.iter().all(u8::is_ascii_hexdigit)
                    && e.file_type().is_ok_and(|t| t.is_dir())
            });
        }
    }
    false
}

/// Whether a file holds git data by its kind (a pack, its index, a bundle).
fn is_git_file(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".pack", ".idx", ".bundle", ".rev", ".midx"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// Every copy of git data below `root` (see [`is_git_data`], [`is_git_file`]), besides `.git`
/// entries (masked by name), walking at most [`GLOB_WALK_DIRS`] directories without following
/// links; an error sentence when the tree is bigger, so that a read rule is never silently
/// left open through a repository's history.
fn git_data(root: &std::path::Path) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut queue = std::collections::VecDeque::from([root.to_path_buf()]);
    let mut visited = 0;
    while let Some(dir) = queue.pop_front() {
        visited += 1;
        if visited > GLOB_WALK_DIRS {
            return Err(format!(
                "the workspace has more than {GLOB_WALK_DIRS} directories, too many to find every copy of git history (which holds the files the rule keeps) before each command"
            ));
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            // A repository's own `.git`, however far down (round 20: one beyond the first
            // 1,024 directories was visible, and a hard link to its config made it writable).
            if name.as_encoded_bytes().eq_ignore_ascii_case(b".git") {
                found.push(entry.path());
                continue;
            }
            let text = name.to_string_lossy();
            if kind.is_dir() {
                if is_git_data(&entry.path(), &text) {
                    found.push(entry.path());
                } else {
                    queue.push_back(entry.path());
                }
            } else if kind.is_file() && is_git_file(&text) {
                found.push(entry.path());
            }
        }
    }
    Ok(found)
}

/// Where programs are looked for, besides the child's own `PATH`, when masking denied ones.
const PROGRAM_DIRS: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// Every file a denied program name can be run from: the name in each `PATH` directory (and
/// the usual system directories), or the path itself when the entry is a path.
fn masked_programs(denied: &[String], env_allow: &[String]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = PROGRAM_DIRS.iter().map(PathBuf::from).collect();
    if env_allow.iter().any(|k| k == "PATH")
        && let Some(path) = std::env::var_os("PATH")
    {
        dirs.extend(std::env::split_paths(&path).filter(|d| d.is_absolute()));
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for entry in denied {
        let candidates: Vec<PathBuf> = if entry.contains('/') {
            vec![PathBuf::from(entry)]
        } else {
            dirs.iter().map(|d| d.join(entry)).collect()
        };
        for c in candidates {
            if c.is_absolute() && !out.contains(&c) {
                out.push(c);
            }
        }
    }
    for other in other_names(&out, &dirs) {
        if !out.contains(&other) {
            out.push(other);
        }
    }
    out
}

/// The base name of the file `program` really is (`gmake` is a link to `make`), looked up
/// like the child would (`PATH`, and the usual system directories), for rules on commands.
// Program directories are system state read to judge a command, not a tool's file access.
#[allow(clippy::disallowed_methods)]
fn real_program_name(program: &str, env_allow: &[String], cwd: &std::path::Path) -> Option<String> {
    let candidates: Vec<PathBuf> = if program.contains('/') {
        // A relative path is where the command starts (round 14: `ln -s /usr/bin/tar t`,
        // then `./t -cf …` met no rule on `tar`, since only absolute paths were followed).
        vec![cwd.join(program)]
    } else {
        let mut dirs: Vec<PathBuf> = PROGRAM_DIRS.iter().map(PathBuf::from).collect();
        if env_allow.iter().any(|k| k == "PATH")
            && let Some(path) = std::env::var_os("PATH")
        {
            dirs.splice(
                0..0,
                std::env::split_paths(&path).filter(|d| d.is_absolute()),
            );
        }
        dirs.iter().map(|d| d.join(program)).collect()
    };
    let real = candidates
        .iter()
        .filter(|c| c.is_absolute())
        .find_map(|c| std::fs::canonicalize(c).ok())?;
    real.file_name()?.to_str().map(str::to_owned)
}

/// Other names of the same files in `dirs`: hard links (Debian's `perl` is also
/// `perl5.36.0`, `gunzip` also `uncompress`), which masking by name alone would leave runnable.
/// Cached per process for one set of files, since the program directories rarely change.
// Program directories are system state read to build the sandbox, not a tool's file access.
#[allow(clippy::disallowed_methods)]
fn other_names(files: &[PathBuf], dirs: &[PathBuf]) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt as _;
    use std::sync::Mutex;
    static CACHE: Mutex<Option<(Vec<PathBuf>, Vec<PathBuf>)>> = Mutex::new(None);
    if let Ok(cache) = CACHE.lock()
        && let Some((key, names)) = cache.as_ref()
        && key == files
    {
        return names.clone();
    }
    let ids: Vec<(u64, u64)> = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .filter(|m| m.is_file())
        .map(|m| (m.dev(), m.ino()))
        .collect();
    let mut names = Vec::new();
    if !ids.is_empty() {
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if let Ok(m) = std::fs::metadata(&path)
                    && ids.contains(&(m.dev(), m.ino()))
                    && !names.contains(&path)
                {
                    names.push(path);
                }
            }
        }
    }
    if let Ok(mut cache) = CACHE.lock() {
        *cache = Some((files.to_vec(), names.clone()));
    }
    names
}

/// What the kernel offers, probed once per process.
pub(crate) fn kernel_sandbox() -> &'static SandboxStatus {
    static PROBE: OnceLock<SandboxStatus> = OnceLock::new();
    PROBE.get_or_init(probe_sandbox)
}

/// What the policy judges a command by: its analysis, its accesses, and where it runs.
pub(crate) struct Judged {
    pub(crate) analysis: Analysis,
    pub(crate) accesses: Vec<Access>,
    /// The working directory on disk.
    pub(crate) cwd: PathBuf,
}

/// Analyses `command` run in `cwd` (relative to the workspace) and lists its accesses: what the
/// policy needs, without the walks of the workspace that only the sandbox needs.
pub(crate) fn judge(
    ctx: &ToolContext,
    config: &Config,
    command: &str,
    cwd: Option<&str>,
) -> Result<Judged, ToolError> {
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

    // With the full sandbox (the namespace view included) the kernel confines the command, so
    // it is judged by what it can reach: what stays in the workspace runs, what leaves it (or
    // destroys work, or writes .git, or is not fully understood) asks. Without it, by what it
    // is, and even a read asks unless the user allowed unsandboxed commands.
    let full_sandbox = config.sandbox && config.namespaces && kernel_sandbox().fully_enforced();
    let (mut risk, mut why) = if full_sandbox {
        (
            analysis.sandboxed_risk,
            analysis.sandboxed_reasons().join("; "),
        )
    } else {
        (analysis.risk, analysis.reasons().join("; "))
    };
    if !full_sandbox && !config.allow_unsandboxed && risk < Risk::Medium {
        risk = Risk::Medium;
        why = if config.sandbox && config.namespaces {
            "the full sandbox does not hold on this machine (`toolshed doctor` says why), so every command asks".into()
        } else {
            "the shell's sandbox is switched off in the configuration, so every command asks".into()
        };
    }
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

    let (commands, complete) =
        analysis.simple_commands(|p| real_program_name(p, &config.env_allow, &cwd_path));
    let mut opaque = analysis.opaque_programs();
    if !complete {
        // Rules on commands could not be checked against every spelling: fail closed.
        opaque.push(format!(
            "a line of more than {} option spellings",
            crate::analyze::MAX_SPELLINGS
        ));
    }
    accesses.insert(
        0,
        Access::Execute {
            command: command.to_string(),
            programs: analysis.programs(),
            risk,
            why,
            commands,
            opaque,
        },
    );
    Ok(Judged {
        analysis,
        accesses,
        cwd: cwd_path,
    })
}

/// The whole plan of a command about to run: [`judge`], and the sandbox it runs in, made from
/// the workspace as it is now (its nested repositories, the paths the rules cover), so that
/// nothing changed between the policy's decision and the start is missed.
pub(crate) fn plan(
    ctx: &ToolContext,
    config: &Config,
    command: &str,
    cwd: Option<&str>,
) -> Result<Plan, ToolError> {
    let Judged {
        analysis,
        cwd: cwd_path,
        ..
    } = judge(ctx, config, command, cwd)?;
    let dirs = |writable: bool| -> Vec<PathBuf> {
        ctx.workspace
            .roots()
            .iter()
            .enumerate()
            .filter(|(_, r)| r.writable == writable)
            .filter_map(|(i, _)| ctx.workspace.backend().local_dir(i).map(PathBuf::from))
            .collect()
    };
    // In read_only, the kernel keeps the workspace read-only too: a command judged a read by
    // what it reaches (opaque code confined to the workspace) cannot write it after all.
    let read_only = ctx.policy.autonomy == Autonomy::ReadOnly;
    let writable = if read_only { Vec::new() } else { dirs(true) };
    let mut sandbox = Sandbox::new(writable.clone(), analysis.network);
    sandbox.namespaces = config.namespaces;
    sandbox.readable = dirs(false);
    if read_only {
        sandbox.readable.extend(dirs(true));
    }
    // A command that writes the repository asks in supervised mode; once approved (or allowed
    // by the user's rules) it may write `.git`, but not what runs programs. Full autonomy asks
    // nothing, so there `.git` stays read-only unless the user allowed git internals.
    let git_allowed = writes_git(&analysis)
        && (ctx.policy.autonomy == Autonomy::Supervised || ctx.policy.allow_git_internals);
    // Each root's nested repositories, walked once for the mounts, the guard and the masks.
    let mut nested: Vec<(PathBuf, Vec<PathBuf>)> = Vec::new();
    let mut nested_in = |root: &PathBuf| -> Vec<PathBuf> {
        if let Some((_, found)) = nested.iter().find(|(r, _)| r == root) {
            return found.clone();
        }
        let found = nested_git(root);
        nested.push((root.clone(), found.clone()));
        found
    };
    for root in &writable {
        let names = PROTECTED
            .iter()
            .filter(|p| !(git_allowed && **p == ".git"))
            .chain(GIT_PROTECTED.iter().filter(|_| git_allowed))
            .map(|p| p.to_string())
            .chain(ctx.policy.protected_paths.iter().cloned());
        sandbox.protected.extend(names.map(|n| root.join(n)));
        // Repositories inside the workspace (`vendor/lib/.git`, a submodule's `.git` file) run
        // their own hooks and config when the user's git next enters them.
        sandbox.protected.extend(nested_in(root));
        // What the user's rules keep from every tool by access kind holds in the view too: a
        // `write(X/**)` rule that asks or refuses makes X read-only, a `read(X/**)` rule that
        // refuses hides X (a command cannot ask mid-run, and `cat X` is no way around it).
        for rel in ctx.policy.kind_rule_paths(true) {
            sandbox.protected.push(root.join(rel));
        }
    }
    sandbox.masked = masked_programs(&ctx.policy.denied_commands, &config.env_allow);
    for root in dirs(true).iter().chain(&dirs(false)) {
        for rel in ctx.policy.kind_rule_paths(false) {
            sandbox.masked.push(root.join(rel));
        }
    }
    // Globbed kind rules (`read(**/*.pem)`) cannot be mounted as one tree: every existing path
    // they cover is hidden or made read-only instead.
    let (hide, keep) = (
        ctx.policy.kind_rule_globs(false),
        ctx.policy.kind_rule_globs(true),
    );
    if !hide.is_empty() || !keep.is_empty() {
        let roots: Vec<(PathBuf, bool)> = writable
            .iter()
            .map(|r| (r.clone(), true))
            .chain(dirs(false).into_iter().map(|r| (r, false)))
            .collect();
        for (root, is_writable) in roots {
            let found = glob_covered(&root, |rel| {
                (
                    !hide.is_empty() && ctx.policy.kind_rule_covers(false, rel),
                    is_writable && !keep.is_empty() && ctx.policy.kind_rule_covers(true, rel),
                )
            })
            .map_err(|too_many| {
                let rules: Vec<&str> = hide.iter().chain(&keep).map(String::as_str).collect();
                ToolError::Denied(format!(
                    "The shell cannot hold to the rule{} `{}` here: {too_many}. Write the rule on a directory instead (`read(keys/**)`), or use the file tools, which match patterns themselves.",
                    if rules.len() == 1 { "" } else { "s" },
                    rules.join("`, `")
                ))
            })?;
            sandbox.masked.extend(found.hidden);
            sandbox.protected.extend(found.read_only);
        }
    }
    // What a read rule keeps may be in a repository's history too (`git show HEAD:secrets/k`,
    // or zlib over `.git/objects`), which no mount of the working tree hides: while read rules
    // hold, the shell does not see the repositories at all (git_operations withholds such
    // files itself).
    // Git data kept under another name (a bare clone, a copied `.git` or object store, a
    // bundle or pack) is hidden too.
    if !ctx.policy.kind_rule_paths(false).is_empty() || !hide.is_empty() {
        for root in dirs(true).iter().chain(&dirs(false)) {
            sandbox.masked.push(root.join(".git"));
            sandbox.masked.extend(nested_in(root));
            let copies = git_data(root).map_err(|too_many| {
                ToolError::Denied(format!(
                    "The shell cannot hold to the workspace's read rules here: {too_many}. Use the file tools and git tools, which apply the rules themselves, or narrow the workspace."
                ))
            })?;
            sandbox.masked.extend(copies);
        }
    }
    let guard = Guard::new(
        &sandbox.protected,
        writable.iter().map(|r| (r.clone(), nested_in(r))).collect(),
        git_allowed,
        !analysis.opaque_programs().is_empty() || !analysis.targets.is_empty(),
    );
    Ok(Plan {
        analysis,
        cwd: cwd_path,
        sandbox,
        guard,
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

/// Whether a command of the analysis writes the repository (`git commit`, `git add` …): then,
/// when the policy allows writes inside `.git`, the sandbox leaves `.git` writable but for its
/// config, hooks and `info/`.
fn writes_git(analysis: &Analysis) -> bool {
    analysis
        .commands
        .iter()
        .any(|c| c.reach == Reach::GitInternals)
}
