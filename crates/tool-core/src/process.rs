//! The one way tools start programs: own session (so no controlling terminal) and process
//! group, scrubbed environment, closed stdin, bounded output, a bound on the size of any file
//! written ([`ProcessSpec::max_file_bytes`], `RLIMIT_FSIZE`), and the whole group killed on
//! timeout, cancellation or drop — together with descendants that left the group (`setsid`,
//! double forks), found through `/proc` with Toolshed as their subreaper (module `contain`). On
//! Linux a child can also run in an OS sandbox ([`Sandbox`]): a namespace view of the machine,
//! Landlock for writes, seccomp for network sockets and terminal injection. A run can be capped
//! to a number of processes ([`ProcessSpec::max_processes`]): a per-run pids cgroup where one is
//! writable, else RLIMIT_NPROC, and the result ([`PidsStatus`]) says which.
//!
//! The first spawn also makes this process non-dumpable ([`harden_self`]), so that no child
//! running as the same user can read its memory or `/proc/PID/environ` (API keys, tokens).

// This module is the process helper every tool goes through: it is where programs start and /proc
// and cgroup files are read.
#![allow(clippy::disallowed_methods)]

mod contain;
#[cfg(target_os = "linux")]
mod namespace;
mod pids;
mod sandbox;

pub use pids::PidsStatus;
pub use sandbox::{Sandbox, SandboxStatus, probe as probe_sandbox};

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::task::JoinHandle;

use self::contain::Containment;

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::output::Truncation;

/// Bytes of a run's output sent to the context's event sink as they arrive; the rest is only
/// captured (head + tail) and counted.
pub const STREAM_LIMIT: u64 = 4 * 1024 * 1024;

/// `path` (a `PATH` value) without the entries a sandboxed child could write: relative or
/// empty ones (the working directory), those beneath a writable root, and in the namespace
/// view those beneath `$HOME`, `/tmp` and `/dev/shm`, which are private and writable there,
/// unless a readable root (mounted read-only) holds them (`policy.readable_roots =
/// ["~/.cargo/bin"]`). An entry is judged where it really leads when it exists (a link into
/// the workspace is beneath it).
pub(crate) fn unwritable_path(
    path: &std::ffi::OsStr,
    sandbox: &Sandbox,
    in_view: bool,
    home: Option<&std::path::Path>,
) -> OsString {
    let beneath = |entry: &std::path::Path, real: &std::path::Path, roots: &[PathBuf]| {
        roots
            .iter()
            .any(|w| entry.starts_with(w) || real.starts_with(w))
    };
    let mut private: Vec<PathBuf> = sandbox.writable.clone();
    if in_view {
        private.extend(home.map(PathBuf::from));
        private.push(PathBuf::from("/tmp"));
        private.push(PathBuf::from("/dev/shm"));
    }
    let kept: Vec<PathBuf> = std::env::split_paths(path)
        .filter(|entry| entry.is_absolute())
        .filter(|entry| {
            let real = std::fs::canonicalize(entry).unwrap_or_else(|_| entry.clone());
            if beneath(entry, &real, &sandbox.writable) {
                return false;
            }
            !beneath(entry, &real, &private) || beneath(entry, &real, &sandbox.readable)
        })
        .collect();
    std::env::join_paths(kept).unwrap_or_default()
}

/// Environment variables a child inherits unless configured otherwise.
pub const DEFAULT_ENV_ALLOW: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
];

/// What to run.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// The program (looked up in the child's `PATH` when not a path).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The working directory (already confined by the caller).
    pub cwd: PathBuf,
    /// Variables copied from this process's environment when set.
    pub env_allow: Vec<String>,
    /// Variables set explicitly.
    pub env: Vec<(String, String)>,
    /// The deadline.
    pub timeout: Duration,
    /// Output beyond this is cut head + tail.
    pub max_output_bytes: usize,
    /// Stops the run once its output (stdout and stderr together, every byte read) passes this
    /// many bytes: the group is killed as at the deadline, and [`run`] returns the head and tail
    /// with [`ProcessOutput::output_capped`] set. `None` reads until the program ends, however
    /// much it prints (`yes` then runs to the deadline).
    pub max_output_total_bytes: Option<u64>,
    /// The OS sandbox to run in (Linux), if any. `None` runs without one.
    pub sandbox: Option<Sandbox>,
    /// Give the child a marker variable (`TOOLSHED_RUN=…`) so that descendants which leave the
    /// process group and the process tree are still found and killed at the end.
    pub mark_descendants: bool,
    /// The most tasks (processes and threads) the run may have at once: a fork bomb stops
    /// there. `None` sets no limit.
    pub max_processes: Option<u32>,
    /// Enforce `max_processes` with a per-run pids cgroup when one is writable (true), or go
    /// straight to RLIMIT_NPROC (false).
    pub pids_cgroup: bool,
    /// The largest file the run may write (`RLIMIT_FSIZE`: a bigger write fails with `EFBIG`
    /// and the writer gets `SIGXFSZ`). `None` sets no limit.
    pub max_file_bytes: Option<u64>,
}

impl ProcessSpec {
    /// The value of `key` the child gets: the last setting in `env`, else Toolshed's own when
    /// `env_allow` passes it on.
    fn child_var(&self, key: &str) -> Option<OsString> {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| OsString::from(v))
            .or_else(|| {
                self.env_allow
                    .iter()
                    .any(|k| k == key)
                    .then(|| std::env::var_os(key))
                    .flatten()
            })
    }

    /// A spec with the default environment allow list, a 60 s timeout and 64 KiB of output.
    pub fn new(program: impl Into<OsString>, cwd: impl Into<PathBuf>) -> Self {
        ProcessSpec {
            program: program.into(),
            args: Vec::new(),
            cwd: cwd.into(),
            env_allow: DEFAULT_ENV_ALLOW.iter().map(|s| s.to_string()).collect(),
            env: vec![("TERM".into(), "dumb".into())],
            timeout: Duration::from_secs(60),
            max_output_bytes: 64 * 1024,
            max_output_total_bytes: None,
            sandbox: None,
            mark_descendants: false,
            max_processes: None,
            pids_cgroup: true,
            max_file_bytes: None,
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOutput {
    /// The exit code, when it exited normally.
    pub exit_code: Option<i32>,
    /// The signal that killed it, if any.
    pub signal: Option<i32>,
    /// Whether the deadline killed it.
    pub timed_out: bool,
    /// Whether it was killed because its output passed [`ProcessSpec::max_output_total_bytes`].
    pub output_capped: bool,
    /// stdout and stderr interleaved as they arrived, cut head + tail.
    pub output: String,
    /// Set when the output was cut.
    pub truncated: Option<Truncation>,
    /// Total bytes the process wrote.
    pub total_bytes: u64,
    /// Wall time.
    pub duration: Duration,
    /// What the sandbox enforced, when one was asked for.
    pub sandbox: Option<SandboxStatus>,
    /// Processes outside the process group (`setsid` escapees) killed at the end.
    pub escapees_killed: usize,
    /// How the number of processes was limited, when a limit was asked for.
    pub pids: Option<PidsStatus>,
}

impl ProcessOutput {
    /// Whether it exited with code 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// The last `capacity` bytes of a stream and how many came in total: fixed memory, and a
/// push costs at most two slice copies however much arrives (a 1 GB flood is 1 GB of memcpy
/// into the same buffer, not a growing queue).
#[derive(Debug, Clone)]
pub struct ByteRing {
    /// Grows up to `cap`, then wraps; while it grows, `head` is 0.
    buf: Vec<u8>,
    /// The index of the oldest byte once the buffer is full.
    head: usize,
    cap: usize,
    total: u64,
}

impl ByteRing {
    /// An empty ring keeping at most `capacity` bytes (memory is taken as bytes arrive).
    pub fn new(capacity: usize) -> ByteRing {
        ByteRing {
            buf: Vec::new(),
            head: 0,
            cap: capacity,
            total: 0,
        }
    }

    /// Appends `data`, dropping the oldest bytes beyond the capacity.
    pub fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if data.len() >= self.cap {
            self.buf.clear();
            self.buf.extend_from_slice(&data[data.len() - self.cap..]);
            self.head = 0;
            return;
        }
        if self.buf.len() < self.cap {
            let n = (self.cap - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        while !data.is_empty() {
            let n = (self.cap - self.head).min(data.len());
            self.buf[self.head..self.head + n].copy_from_slice(&data[..n]);
            self.head = (self.head + n) % self.cap;
            data = &data[n..];
        }
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes pushed in total.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The stream offset of the oldest byte held.
    pub fn start(&self) -> u64 {
        self.total - self.buf.len() as u64
    }

    /// `len` bytes beginning `skip` bytes after the oldest one held (clamped to what is held).
    pub fn copy_range(&self, skip: usize, len: usize) -> Vec<u8> {
        let n = self.buf.len();
        let skip = skip.min(n);
        let len = len.min(n - skip);
        let mut out = Vec::with_capacity(len);
        if len == 0 {
            return out;
        }
        let from = (self.head + skip) % n;
        let first = (n - from).min(len);
        out.extend_from_slice(&self.buf[from..from + first]);
        out.extend_from_slice(&self.buf[..len - first]);
        out
    }

    /// Everything held, oldest first.
    pub fn to_vec(&self) -> Vec<u8> {
        self.copy_range(0, self.buf.len())
    }
}

/// Head + tail capture with a fixed memory bound.
#[derive(Debug)]
pub(crate) struct Capture {
    head: Vec<u8>,
    tail: ByteRing,
    head_cap: usize,
    total: u64,
}

impl Capture {
    pub(crate) fn new(max: usize) -> Self {
        Capture {
            head: Vec::new(),
            tail: ByteRing::new(max - max / 2),
            head_cap: max / 2,
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.head.len() < self.head_cap {
            let n = (self.head_cap - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        self.tail.push(data);
    }

    pub(crate) fn finish(self) -> (String, Option<Truncation>) {
        let kept = (self.head.len() + self.tail.len()) as u64;
        if kept == self.total {
            let mut all = self.head;
            all.extend_from_slice(&self.tail.to_vec());
            return (String::from_utf8_lossy(&all).into_owned(), None);
        }
        // Drop a character the head cut in two, so it does not end in U+FFFD.
        let mut head_bytes = self.head;
        if let Err(e) = std::str::from_utf8(&head_bytes)
            && e.error_len().is_none()
        {
            head_bytes.truncate(e.valid_up_to());
        }
        let head = String::from_utf8_lossy(&head_bytes).into_owned();
        let tail_bytes: Vec<u8> = self.tail.to_vec();
        // Skip continuation bytes so the tail starts on a character.
        let start = tail_bytes
            .iter()
            .position(|b| (*b & 0xC0) != 0x80)
            .unwrap_or(tail_bytes.len());
        let tail = String::from_utf8_lossy(&tail_bytes[start..]).into_owned();
        let kept = (head_bytes.len() + tail_bytes.len() - start) as u64;
        let omitted = self.total - kept;
        let hint = "the command printed more than fits; redirect its output to a file and read it in pages, or filter it (grep, head, tail)";
        let text = format!("{head}\n[... {omitted} bytes omitted; {hint} ...]\n{tail}");
        (
            text,
            Some(Truncation {
                original_bytes: self.total,
                kept_bytes: kept,
                omitted_lines: 0,
                hint: hint.to_string(),
            }),
        )
    }
}

/// How the main process of a spawned child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
    /// The exit code, when it exited normally.
    pub exit_code: Option<i32>,
    /// The signal that killed it, if any.
    pub signal: Option<i32>,
    /// Processes outside the process group killed at the end.
    pub escapees_killed: usize,
}

/// Kills a spawned child and everything it started, from any thread, at any time.
#[derive(Debug, Clone)]
pub struct Killer(Arc<Containment>);

impl Killer {
    /// Kills the group, the escapees and the marked processes. Returns how many escapees died.
    pub fn kill(&self) -> usize {
        self.0.kill_all()
    }
}

/// A running child started by [`spawn`]. Dropping it kills the child and everything it started.
#[derive(Debug)]
pub struct Spawned {
    child: tokio::process::Child,
    contain: Arc<Containment>,
    readers: Vec<JoinHandle<()>>,
    tracker: JoinHandle<()>,
    sandbox: Option<SandboxStatus>,
    pids: Option<PidsStatus>,
    /// Removed (with its contents) when the child is done.
    private_tmp: Option<PathBuf>,
    pid: Option<u32>,
    started: Instant,
    /// The child runs in the namespace view, whose PID namespace holds all it started.
    in_view: bool,
    /// The view's mount namespace, held so that its teardown (unmounting every bind, which
    /// waits for RCU grace periods) happens later, off the path of the result ([`later`]).
    view_mounts: Option<std::os::fd::OwnedFd>,
}

/// Work that may wait: dropped on a thread of its own, so the caller does not wait for it (the
/// teardown of a view's mount namespace).
enum Later {
    Close(#[allow(dead_code)] std::os::fd::OwnedFd),
}

/// Hands `work` to the thread that does [`Later`] work (started on first use; where it cannot
/// start, the work is done here and now).
fn later(work: Later) {
    use std::sync::mpsc::{Sender, channel};
    static LATER: OnceLock<Option<Mutex<Sender<Later>>>> = OnceLock::new();
    let sender = LATER.get_or_init(|| {
        let (tx, rx) = channel::<Later>();
        std::thread::Builder::new()
            .name("toolshed-later".into())
            .spawn(move || {
                for work in rx {
                    drop(work);
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    if let Some(Ok(tx)) = sender.as_ref().map(|s| s.lock()) {
        // Where the thread is gone, the work is dropped here, with the error.
        let _ = tx.send(work);
    }
}

/// Makes this process non-dumpable (`PR_SET_DUMPABLE` 0), once: processes of the same user —
/// every child a tool starts — can then neither attach to it nor read its memory or its
/// `/proc/PID/environ`, where provider keys and database URLs live. Called by the first
/// [`spawn`]; programs should call it at start too, before they read secrets.
pub fn harden_self() -> bool {
    static DONE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DONE.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
                .is_ok()
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    })
}

/// Marks every descriptor from 3 up close-on-exec, in a forked child before it execs: raw
/// syscalls only. Kernels before 5.11 lack `close_range`; there each descriptor up to the
/// open-files limit is marked on its own.
#[cfg(target_os = "linux")]
fn close_inherited_on_exec() {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range, getrlimit and fcntl are raw syscalls on integers and a stack
    // struct; they allocate nothing and take no locks.
    #[allow(unsafe_code)]
    unsafe {
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC) == 0 {
            return;
        }
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur.min(1 << 20) as libc::c_int
        } else {
            4096
        };
        for fd in 3..top {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
}

/// Replaces the session keyring of a forked child with a new anonymous one, before it execs:
/// one raw syscall. Kernels built without keys (`ENOSYS`) have no keyring to leak; any other
/// failure stops the start, since the child would otherwise hold the login's keys.
#[cfg(target_os = "linux")]
fn join_fresh_session_keyring() -> std::io::Result<()> {
    const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;
    // SAFETY: keyctl with a null name pointer reads no memory; it allocates nothing in this
    // process and takes no userspace locks.
    #[allow(unsafe_code)]
    let r = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_JOIN_SESSION_KEYRING,
            std::ptr::null::<libc::c_char>(),
        )
    };
    if r >= 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ENOSYS) {
        return Ok(());
    }
    Err(err)
}

/// The private temporary directory of a sandboxed child.
fn make_private_tmp() -> Option<PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = std::env::temp_dir();
    for _ in 0..16 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = base.join(format!("toolshed-run-{}-{n}-{nanos:x}", std::process::id()));
        if std::fs::create_dir(&dir).is_ok() {
            return Some(dir);
        }
    }
    None
}

fn next_marker() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "TOOLSHED_RUN={}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The command for `spec`, with the child hooks installed, in this order: the pids cgroup is
/// joined before anything else runs; then a new session and the file-size limit; then the
/// namespace view (which forks); then Landlock and seccomp, which forbid mounting.
fn command(
    spec: &ProcessSpec,
    marker: Option<&str>,
    tmpdir: Option<&std::path::Path>,
    sandbox: Option<&sandbox::Prepared>,
    pids: Option<&pids::Prepared>,
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(&spec.program);
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for key in &spec.env_allow {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    if let Some(m) = marker
        && let Some((k, v)) = m.split_once('=')
    {
        cmd.env(k, v);
    }
    if let Some(tmp) = tmpdir {
        cmd.env("TMPDIR", tmp);
    }
    if let (Some(sb), Some(prepared)) = (&spec.sandbox, sandbox) {
        // A `PATH` entry the child can write lets it put any program under a name the
        // analysis trusts (round 13: `~/.cargo/bin` is in the private, writable $HOME of the
        // view, so `cp /usr/bin/tar ~/.cargo/bin/ls && ls -cf x` ran tar as `ls`): such
        // entries are left out.
        if let Some(path) = spec.child_var("PATH") {
            // The child's `$HOME`, else Toolshed's own (stricter: either may be on `PATH`).
            let home = spec
                .child_var("HOME")
                .or_else(|| std::env::var_os("HOME"))
                .map(PathBuf::from);
            cmd.env(
                "PATH",
                unwritable_path(&path, sb, prepared.in_view, home.as_deref()),
            );
        }
    }
    if let Some(p) = pids {
        // SAFETY: see `pids::Prepared::child_hook`: one write on a descriptor opened before the
        // fork, or one setrlimit; no allocation, no locks.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(p.child_hook());
        }
    }
    let fsize = spec.max_file_bytes;
    let sandboxed = spec.sandbox.is_some();
    // SAFETY: setsid, keyctl and setrlimit are raw syscalls on stack data; no allocation, no
    // locks.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(move || {
            // A session of its own: the child has no controlling terminal, so it cannot type
            // into (TIOCSTI) or read from the terminal Toolshed was started from. It is also
            // the leader of a new process group with its own pid, which is what the killer
            // signals.
            rustix::process::setsid()?;
            // And a session keyring of its own: the one it would inherit is the login's (a
            // Kerberos ticket, an ecryptfs key, ssh or gpg agents' secrets), readable through
            // `@s` and writable for keys that outlive the command (round 22a).
            #[cfg(target_os = "linux")]
            if sandboxed {
                join_fresh_session_keyring()?;
            }
            // Descriptors above stderr that Toolshed inherited without close-on-exec (an IDE's
            // or MCP client's pipes, files its launcher opened) must not reach the command:
            // they would bypass every filesystem layer.
            #[cfg(target_os = "linux")]
            close_inherited_on_exec();
            if let Some(max) = fsize {
                let limit = rustix::process::Rlimit {
                    current: Some(max),
                    maximum: Some(max),
                };
                rustix::process::setrlimit(rustix::process::Resource::Fsize, limit)?;
            }
            Ok(())
        });
    }
    #[cfg(target_os = "linux")]
    if let Some(p) = sandbox {
        if let Some(hook) = p.view_hook() {
            // SAFETY: see `namespace::Prepared::enter`: raw syscalls on data laid out before
            // the fork; the process that forks there never returns into Rust code.
            #[allow(unsafe_code)]
            unsafe {
                cmd.pre_exec(hook);
            }
        }
        // SAFETY: see `Prepared::child_hook`: only raw syscalls on data prepared before
        // the fork run in the child; no allocation, no locks.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(p.child_hook());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = sandbox;
    cmd
}

/// Starts a program in its own process group with a scrubbed environment and closed stdin, and
/// calls `sink` with every chunk of stdout and stderr as it arrives.
///
/// The child is killed (with its group and escapees) when the returned [`Spawned`] is dropped.
pub fn spawn(
    spec: &ProcessSpec,
    sink: impl Fn(&[u8]) + Send + Sync + 'static,
) -> Result<Spawned, ToolError> {
    let subreaper = contain::ensure_subreaper();
    if !subreaper {
        tracing::debug!(
            "could not become a child subreaper; escapees are found while tracked only"
        );
    }
    harden_self();
    let marker = spec.mark_descendants.then(next_marker);
    let private_tmp = spec.sandbox.as_ref().and_then(|_| make_private_tmp());
    let prepared = spec.sandbox.as_ref().map(|sandbox| {
        if let Some(tmp) = &private_tmp {
            // In the view, `tmp/` is the child's /tmp, `home/` its empty $HOME, `shm/` its
            // /dev/shm.
            for sub in ["tmp", "home", "shm"] {
                let _ = std::fs::create_dir(tmp.join(sub));
            }
        }
        let home = spec.child_var("HOME").map(PathBuf::from);
        let place = sandbox::Placement {
            cwd: spec.cwd.clone(),
            private_tmp: private_tmp.clone(),
            home,
        };
        sandbox::prepare(sandbox, &place)
    });
    let tmpdir: Option<PathBuf> = match (&prepared, &private_tmp) {
        (Some(p), Some(_)) if p.in_view => Some(PathBuf::from("/tmp")),
        (_, Some(tmp)) => Some(tmp.clone()),
        _ => None,
    };
    let mut pids = spec
        .max_processes
        .map(|max| pids::prepare(max, spec.pids_cgroup));
    let started = Instant::now();
    let spawn_with = |pids: Option<&pids::Prepared>| {
        command(
            spec,
            marker.as_deref(),
            tmpdir.as_deref(),
            prepared.as_ref(),
            pids,
        )
        .spawn()
    };
    let mut result = spawn_with(pids.as_ref());
    if let Err(e) = &result
        && let Some(max) = spec.max_processes
        && pids.as_ref().is_some_and(|p| p.cgroup.is_some())
    {
        // Joining the cgroup is the one step the parent cannot try first. If the start works
        // without it, it was the cause: say so and fall back. If not, the error is the
        // program's own.
        let fallback = pids::fallback(max, format!("joining the pids cgroup failed: {e}"));
        let retry = spawn_with(Some(&fallback));
        if retry.is_ok() {
            pids = Some(fallback);
            result = retry;
        }
    }
    let mut child = result.map_err(|e| {
        if let Some(tmp) = &private_tmp {
            let _ = std::fs::remove_dir_all(tmp);
        }
        #[cfg(target_os = "linux")]
        if spec.sandbox.is_some() && e.raw_os_error() == Some(libc::EDQUOT) {
            // The one quota a start can hit: each sandboxed command's own session keyring.
            return ToolError::Failed(format!(
                "Could not start `{}`: this user's key quota is full (each sandboxed command \
                 gets a keyring of its own); wait for other commands to end, or raise \
                 /proc/sys/kernel/keys/maxkeys.",
                spec.program.to_string_lossy()
            ));
        }
        ToolError::Failed(format!(
            "Could not start `{}`: {e}; check that the program is installed and on PATH.",
            spec.program.to_string_lossy()
        ))
    })?;
    // The ruleset descriptor is no longer needed once the child has exec'd.
    let in_view = prepared.as_ref().is_some_and(|p| p.in_view);
    let sandbox = prepared.map(|p| p.status.clone());
    let (pids_status, cgroup) = match pids {
        Some(p) => (Some(p.status.clone()), p.into_cgroup()),
        None => (None, None),
    };
    let pid = child.id();
    // The child outside the namespaces is in the view's mount namespace until it exits.
    let view_mounts = match pid {
        Some(pid) if in_view => std::fs::File::open(format!("/proc/{pid}/ns/mnt"))
            .ok()
            .map(std::os::fd::OwnedFd::from),
        _ => None,
    };
    let contain = Containment::new(pid.map(|p| p as i32).unwrap_or(-1), marker, cgroup);
    let weak = Arc::downgrade(&contain);
    let tracker = tokio::spawn(async move {
        loop {
            tokio::time::sleep(contain::TRACK_EVERY).await;
            match weak.upgrade() {
                Some(c) => c.track(),
                None => break,
            }
        }
    });

    let sink = Arc::new(sink);
    let mut readers = Vec::new();
    for stream in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let sink = Arc::clone(&sink);
        readers.push(tokio::spawn(async move {
            let mut stream = stream;
            // A pipe holds 64 KiB: read it whole, so a flood costs few wake-ups. The buffer is
            // not zeroed first: while a sandboxed child's relay lives, every page this process
            // writes is copied on write (with a TLB shootdown), so only what is read is written.
            let mut buf = Vec::with_capacity(64 * 1024);
            loop {
                buf.clear();
                match stream.read_buf(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => sink(&buf),
                }
            }
        }));
    }
    Ok(Spawned {
        child,
        contain,
        readers,
        tracker,
        sandbox,
        pids: pids_status,
        private_tmp,
        pid,
        started,
        in_view,
        view_mounts,
    })
}

impl Spawned {
    /// The main process's id.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// What the sandbox enforced, when one was asked for.
    pub fn sandbox(&self) -> Option<&SandboxStatus> {
        self.sandbox.as_ref()
    }

    /// How the number of processes is limited, when a limit was asked for.
    pub fn pids(&self) -> Option<&PidsStatus> {
        self.pids.as_ref()
    }

    /// A handle that kills the child and everything it started.
    pub fn killer(&self) -> Killer {
        Killer(Arc::clone(&self.contain))
    }

    /// Time since the start.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Waits for the main process to exit (cancel-safe: dropping the future leaves the child
    /// running). Call [`Spawned::finish`] afterwards.
    pub async fn wait_main(&mut self) -> Option<std::process::ExitStatus> {
        self.child.wait().await.ok()
    }

    /// Kills whatever is left (group, escapees), reaps the main process, and waits (at most 2 s)
    /// for the output readers to drain.
    pub async fn finish(mut self) -> ExitInfo {
        let contain = Arc::clone(&self.contain);
        // In the view, the child outside the namespace exits (by `_exit`, with the command's
        // code) only after the namespace's init, and the kernel ends an init only once every
        // process in its namespace is gone: nothing of the run is left to find, and the /proc
        // scans (a millisecond or more per command on a busy machine) are skipped. Any other
        // end (a signal, a deadline, a cancellation) takes the full search.
        let exited_in_view = self.in_view
            && matches!(self.child.try_wait(), Ok(Some(status)) if status.code().is_some());
        let escapees = if exited_in_view {
            contain.finish_emptied()
        } else {
            // The kill scans /proc and may wait a little for reaping: keep it off the async
            // threads.
            tokio::task::spawn_blocking(move || contain.kill_all())
                .await
                .unwrap_or(0)
        };
        let status = self.child.wait().await.ok();
        self.tracker.abort();
        let readers = std::mem::take(&mut self.readers);
        let drain = async {
            for r in readers {
                let _ = r.await;
            }
        };
        // Descendants that could not be killed may still hold the pipes; do not wait forever.
        let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
        ExitInfo {
            exit_code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
            escapees_killed: escapees,
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        self.contain.kill_all();
        // Reap the main process now rather than leave a zombie until tokio's next SIGCHLD
        // sweep (which may never come if the runtime is shutting down). It was just killed, so
        // this takes a few milliseconds at most.
        for _ in 0..100 {
            match self.child.try_wait() {
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                _ => break,
            }
        }
        self.tracker.abort();
        for r in &self.readers {
            r.abort();
        }
        if let Some(mounts) = self.view_mounts.take() {
            later(Later::Close(mounts));
        }
        // Removed here and now, not later: a process that exits right after the call (one
        // `toolshed call`) would leave the run's files on the host (round 22a).
        if let Some(tmp) = self.private_tmp.take() {
            let _ = std::fs::remove_dir_all(tmp);
        }
    }
}

/// Runs a program to completion (or to its deadline, or until the context is cancelled).
///
/// A non-zero exit is not an error: the caller gets the code and the output. Errors are only
/// for a program that cannot start, and for cancellation.
pub async fn run(spec: ProcessSpec, ctx: &ToolContext) -> Result<ProcessOutput, ToolError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let capture = Arc::new(Mutex::new(Capture::new(spec.max_output_bytes)));
    let sink_capture = Arc::clone(&capture);
    let events = ctx.clone();
    let streamed = AtomicU64::new(0);
    // Raised once, by the chunk that takes the output past the cap.
    let over_cap = Arc::new(tokio::sync::Notify::new());
    let sink_over_cap = Arc::clone(&over_cap);
    let cap = spec.max_output_total_bytes;
    let mut child = spawn(&spec, move |bytes| {
        // Stream the first STREAM_LIMIT bytes to the event sink, then only count: a flood
        // must not become a flood of events (and of allocations) downstream.
        let before = streamed.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if let Some(cap) = cap
            && before <= cap
            && before + bytes.len() as u64 > cap
        {
            sink_over_cap.notify_one();
        }
        if before < STREAM_LIMIT {
            let room = (STREAM_LIMIT - before).min(bytes.len() as u64) as usize;
            events.emit_output(String::from_utf8_lossy(&bytes[..room]).into_owned());
            if room < bytes.len() {
                events.emit_output(format!(
                    "\n[... streaming stopped after {STREAM_LIMIT} bytes; the result has the head and tail ...]\n"
                ));
            }
        }
        if let Ok(mut c) = sink_capture.lock() {
            c.push(bytes);
        }
    })?;
    let mut timed_out = false;
    let mut over_cap_first = false;
    tokio::select! {
        _ = child.wait_main() => {}
        () = tokio::time::sleep(spec.timeout) => { timed_out = true; }
        () = over_cap.notified() => { over_cap_first = true; }
        () = ctx.cancel.cancelled() => {
            child.finish().await;
            return Err(ToolError::Cancelled);
        }
    }
    let sandbox = child.sandbox().cloned();
    let pids = child.pids().cloned();
    let duration = child.elapsed();
    let info = child.finish().await;
    // A program that printed past the cap but exited by itself before the kill reached it (a
    // fast `head -c 2M`) ran to its end: it was not stopped.
    let output_capped = over_cap_first && info.exit_code.is_none();
    let capture = match Arc::try_unwrap(capture) {
        Ok(m) => m.into_inner().unwrap_or_else(|e| e.into_inner()),
        // A reader that did not drain in time still holds the capture: take what it has.
        Err(shared) => shared
            .lock()
            .map(|mut c| std::mem::replace(&mut *c, Capture::new(0)))
            .unwrap_or_else(|_| Capture::new(0)),
    };
    let total_bytes = capture.total;
    let (output, truncated) = capture.finish();
    Ok(ProcessOutput {
        exit_code: info.exit_code,
        signal: info.signal,
        timed_out,
        output_capped,
        output,
        truncated,
        total_bytes,
        duration,
        sandbox,
        escapees_killed: info.escapees_killed,
        pids,
    })
}

#[cfg(test)]
mod tests {
    use super::ByteRing;

    /// The ring against a naive model: every capacity, chunk size and read window.
    #[test]
    fn byte_ring_matches_a_naive_model() {
        let stream: Vec<u8> = (0..2000u32).map(|i| (i % 251) as u8).collect();
        for cap in [0, 1, 2, 7, 64, 100, 1999, 2000, 5000] {
            for chunk in [1, 3, 64, 99, 100, 101, 2000] {
                let mut ring = ByteRing::new(cap);
                let mut model: Vec<u8> = Vec::new();
                for part in stream.chunks(chunk) {
                    ring.push(part);
                    model.extend_from_slice(part);
                    let kept = &model[model.len().saturating_sub(cap)..];
                    assert_eq!(ring.to_vec(), kept, "cap {cap}, chunk {chunk}");
                    assert_eq!(ring.total(), model.len() as u64);
                    assert_eq!(ring.start(), (model.len() - kept.len()) as u64);
                    for (skip, len) in [(0, 5), (3, 10), (kept.len() / 2, kept.len()), (9999, 1)] {
                        let want: Vec<u8> = kept.iter().skip(skip).take(len).copied().collect();
                        assert_eq!(ring.copy_range(skip, len), want, "cap {cap} {skip}+{len}");
                    }
                }
            }
        }
    }
}
