//! The one way tools start programs: own process group, scrubbed environment, closed stdin,
//! bounded output, and the whole group killed on timeout, cancellation or drop.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::AsyncReadExt;

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::output::Truncation;

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
}

impl ProcessSpec {
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
    /// stdout and stderr interleaved as they arrived, cut head + tail.
    pub output: String,
    /// Set when the output was cut.
    pub truncated: Option<Truncation>,
    /// Total bytes the process wrote.
    pub total_bytes: u64,
    /// Wall time.
    pub duration: Duration,
}

impl ProcessOutput {
    /// Whether it exited with code 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// Kills the whole process group when dropped: on timeout, cancellation, an aborted task or a
/// panic, no child outlives the call.
#[derive(Debug)]
struct GroupGuard(Option<Pid>);

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pid) = self.0.take() {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Head + tail capture with a fixed memory bound.
#[derive(Debug)]
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

impl Capture {
    fn new(max: usize) -> Self {
        Capture {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap: max / 2,
            tail_cap: max - max / 2,
            total: 0,
        }
    }

    fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.head.len() < self.head_cap {
            let n = (self.head_cap - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        // With no room for a tail (a limit of 0), the rest is only counted: the old byte loop
        // popped from an empty queue and then grew without bound.
        if data.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&data[data.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + data.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(data);
        }
    }

    fn finish(self) -> (String, Option<Truncation>) {
        let kept = (self.head.len() + self.tail.len()) as u64;
        if kept == self.total {
            let mut all = self.head;
            all.extend(self.tail);
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
        let tail_bytes: Vec<u8> = self.tail.into_iter().collect();
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

/// Runs a program to completion (or to its deadline, or until the context is cancelled).
///
/// A non-zero exit is not an error: the caller gets the code and the output. Errors are only
/// for a program that cannot start, and for cancellation.
pub async fn run(spec: ProcessSpec, ctx: &ToolContext) -> Result<ProcessOutput, ToolError> {
    let mut cmd = tokio::process::Command::new(&spec.program);
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for key in &spec.env_allow {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| {
        ToolError::Failed(format!(
            "Could not start `{}`: {e}; check that the program is installed and on PATH.",
            spec.program.to_string_lossy()
        ))
    })?;
    let mut guard = GroupGuard(child.id().and_then(|id| Pid::from_raw(id as i32)));

    let capture = Arc::new(Mutex::new(Capture::new(spec.max_output_bytes)));
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
        let capture = Arc::clone(&capture);
        let events = ctx.clone();
        readers.push(tokio::spawn(async move {
            let mut stream = stream;
            let mut buf = vec![0u8; 8192];
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        events.emit_output(String::from_utf8_lossy(&buf[..n]).into_owned());
                        if let Ok(mut c) = capture.lock() {
                            c.push(&buf[..n]);
                        }
                    }
                }
            }
        }));
    }

    let mut timed_out = false;
    let status = tokio::select! {
        status = child.wait() => Some(status),
        () = tokio::time::sleep(spec.timeout) => { timed_out = true; None }
        () = ctx.cancel.cancelled() => {
            guard.kill();
            let _ = child.wait().await;
            return Err(ToolError::Cancelled);
        }
    };
    // Whatever is left of the group (background children, a timed-out tree) dies now.
    guard.kill();
    let status = match status {
        Some(s) => s.ok(),
        None => child.wait().await.ok(),
    };
    // Descendants that left the group may still hold the pipes; do not wait for them forever.
    let drain = async {
        for r in readers {
            let _ = r.await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;

    let capture = Arc::try_unwrap(capture)
        .ok()
        .and_then(|m| m.into_inner().ok())
        .unwrap_or_else(|| Capture::new(0));
    let total_bytes = capture.total;
    let (output, truncated) = capture.finish();
    Ok(ProcessOutput {
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        timed_out,
        output,
        truncated,
        total_bytes,
        duration: started.elapsed(),
    })
}
