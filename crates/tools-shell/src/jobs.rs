//! The registry of background jobs, shared by `shell`, `job_output`, `job_kill` and `job_list`.
//!
//! A job's output goes into a bounded ring (the oldest bytes are dropped first); `job_output`
//! returns what arrived since the previous poll. Jobs die with their process group and escapees
//! on `job_kill`, at their deadline, once their output passes the registry's total cap (as a
//! foreground command does), and when the registry is dropped.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tool_core::ToolError;
use tool_core::process::{
    ByteRing, ExitInfo, Killer, PidsStatus, ProcessSpec, SandboxStatus, spawn,
};

/// How many finished jobs are remembered for `job_output` and `job_list`.
const KEEP_FINISHED: usize = 32;

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The main process exited or was killed by a signal.
    Exited(ExitInfo),
    /// `job_kill` (or the registry's end) stopped it.
    Killed(ExitInfo),
    /// Its deadline passed.
    TimedOut(ExitInfo),
    /// Its output passed the total cap (bytes).
    OutputCapped(ExitInfo, u64),
}

#[derive(Debug)]
struct State {
    ring: ByteRing,
    ended: Option<Ended>,
    /// The offset up to which `job_output` has returned output.
    read: u64,
    finished_at: Option<Instant>,
    kill_requested: bool,
}

/// One background job.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) id: u64,
    pub(crate) command: String,
    pub(crate) started: Instant,
    pub(crate) sandbox: Option<SandboxStatus>,
    pub(crate) pids: Option<PidsStatus>,
    /// Shared with the output sink and the task that waits for the job.
    state: Arc<Mutex<State>>,
    notify: Arc<Notify>,
    killer: Killer,
    task: Mutex<Option<JoinHandle<()>>>,
    /// Checked while the job runs, when it ends, and when the registry is dropped.
    guard: crate::plan::Guard,
}

/// A snapshot of a job for the tools.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub(crate) id: u64,
    pub(crate) command: String,
    pub(crate) ended: Option<Ended>,
    pub(crate) runtime: Duration,
    pub(crate) total_bytes: u64,
    pub(crate) sandbox: Option<SandboxStatus>,
    pub(crate) pids: Option<PidsStatus>,
}

/// New output of a job.
#[derive(Debug, Clone)]
pub(crate) struct Chunk {
    pub(crate) text: String,
    /// Bytes that were dropped from the ring before they could be read.
    pub(crate) dropped: u64,
    /// Bytes still waiting (the chunk was capped).
    pub(crate) pending: u64,
}

/// The background jobs of one tool set.
#[derive(Debug)]
pub struct Jobs {
    jobs: Mutex<BTreeMap<u64, Arc<Job>>>,
    next: Mutex<u64>,
    max_running: usize,
    ring_bytes: usize,
    max_output_total_bytes: Option<u64>,
}

impl Jobs {
    /// A registry allowing `max_running` jobs at once, each keeping its last `ring_bytes`.
    pub fn new(max_running: usize, ring_bytes: usize) -> Jobs {
        Jobs {
            jobs: Mutex::new(BTreeMap::new()),
            next: Mutex::new(1),
            max_running,
            ring_bytes: ring_bytes.max(1024),
            max_output_total_bytes: None,
        }
    }

    /// The registry, with every job stopped once its output passes `cap` bytes in all (`None`:
    /// jobs print as much as they like; the ring keeps the newest).
    pub fn with_max_output_total_bytes(mut self, cap: Option<u64>) -> Jobs {
        self.max_output_total_bytes = cap;
        self
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Job>>>, ToolError> {
        self.jobs
            .lock()
            .map_err(|_| ToolError::internal("the job registry lock is poisoned"))
    }

    /// Starts `spec` as a job; `deadline` kills it after that long.
    pub(crate) fn start(
        self: &Arc<Self>,
        spec: ProcessSpec,
        command: &str,
        deadline: Option<Duration>,
        guard: crate::plan::Guard,
    ) -> Result<Arc<Job>, ToolError> {
        let mut jobs = self.lock()?;
        let running = jobs.values().filter(|j| j.ended().is_none()).count();
        if running >= self.max_running {
            return Err(ToolError::Failed(format!(
                "{running} background jobs are already running, the most allowed; stop one with job_kill (see job_list) or wait for one to finish."
            )));
        }
        // Forget the oldest finished jobs beyond the retention limit.
        let finished: Vec<u64> = jobs
            .values()
            .filter(|j| j.ended().is_some())
            .map(|j| j.id)
            .collect();
        for id in finished
            .iter()
            .take(finished.len().saturating_sub(KEEP_FINISHED - 1))
        {
            jobs.remove(id);
        }
        let id = {
            let mut next = self
                .next
                .lock()
                .map_err(|_| ToolError::internal("the job counter lock is poisoned"))?;
            let id = *next;
            *next += 1;
            id
        };
        let state = Arc::new(Mutex::new(State {
            ring: ByteRing::new(self.ring_bytes),
            ended: None,
            read: 0,
            finished_at: None,
            kill_requested: false,
        }));
        let notify = Arc::new(Notify::new());
        let sink_state = Arc::clone(&state);
        let sink_notify = Arc::clone(&notify);
        // Raised once, by the chunk that takes the output past the cap.
        let over_cap = Arc::new(Notify::new());
        let sink_over_cap = Arc::clone(&over_cap);
        let cap = self.max_output_total_bytes;
        let mut spawned = spawn(&spec, move |bytes| {
            if let Ok(mut s) = sink_state.lock() {
                let before = s.ring.total();
                s.ring.push(bytes);
                if let Some(cap) = cap
                    && before <= cap
                    && s.ring.total() > cap
                {
                    sink_over_cap.notify_one();
                }
            }
            sink_notify.notify_waiters();
        })?;
        let job = Arc::new(Job {
            id,
            command: command.to_string(),
            started: Instant::now(),
            sandbox: spawned.sandbox().cloned(),
            pids: spawned.pids().cloned(),
            state: Arc::clone(&state),
            notify: Arc::clone(&notify),
            killer: spawned.killer(),
            task: Mutex::new(None),
            guard: guard.clone(),
        });
        let watch_state = Arc::clone(&state);
        let watch_guard = guard.clone();
        let task = tokio::spawn(async move {
            let mut timed_out = false;
            let mut capped = false;
            // While the job runs, a protected path it creates is renamed aside within a
            // quarter of a second, so a `toolshed` that starts meanwhile does not read it.
            // A job that makes a protected path again after it was renamed aside is stopped.
            let watch = async {
                loop {
                    tokio::time::sleep(crate::plan::GUARD_EVERY).await;
                    let notes = watch_guard.check();
                    if !notes.is_empty()
                        && let Ok(mut s) = watch_state.lock()
                    {
                        for note in notes {
                            s.ring.push(format!("\n{note}\n").as_bytes());
                        }
                    }
                    if let Some(path) = watch_guard.remade() {
                        if let Ok(mut s) = watch_state.lock() {
                            s.ring.push(
                                format!(
                                    "\nprotected: the job was stopped: it made {} again after it was renamed aside\n",
                                    path.display()
                                )
                                .as_bytes(),
                            );
                        }
                        break;
                    }
                }
            };
            let deadline = async {
                match deadline {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = spawned.wait_main() => {}
                () = deadline => timed_out = true,
                () = over_cap.notified() => capped = true,
                () = watch => {}
            }
            let info = spawned.finish().await;
            let notes = guard.check_last();
            if let Ok(mut s) = state.lock() {
                for note in notes {
                    s.ring.push(format!("\n{note}\n").as_bytes());
                }
                s.ended = Some(if timed_out {
                    Ended::TimedOut(info)
                } else if let Some(cap) = cap.filter(|_| capped && info.exit_code.is_none()) {
                    // (A job that printed past the cap but exited by itself before the kill
                    // reached it ran to its end.)
                    Ended::OutputCapped(info, cap)
                } else if s.kill_requested {
                    Ended::Killed(info)
                } else {
                    Ended::Exited(info)
                });
                s.finished_at = Some(Instant::now());
            }
            notify.notify_waiters();
        });
        if let Ok(mut t) = job.task.lock() {
            *t = Some(task);
        }
        jobs.insert(id, Arc::clone(&job));
        Ok(job)
    }

    /// The job with this id.
    pub(crate) fn get(&self, id: u64) -> Result<Arc<Job>, ToolError> {
        self.lock()?.get(&id).cloned().ok_or_else(|| {
            ToolError::NotFound(format!(
                "There is no background job {id}; list the jobs with job_list."
            ))
        })
    }

    /// Every job, oldest first.
    pub(crate) fn all(&self) -> Result<Vec<Arc<Job>>, ToolError> {
        Ok(self.lock()?.values().cloned().collect())
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        if let Ok(jobs) = self.jobs.lock() {
            for job in jobs.values() {
                job.killer.kill();
                // The job's task is aborted below, so its own last check never runs: rename
                // aside here (nobody is left to read the notes).
                let _ = job.guard.check_last();
                if let Ok(mut t) = job.task.lock()
                    && let Some(t) = t.take()
                {
                    t.abort();
                }
            }
        }
    }
}

impl Job {
    /// How it ended, if it has.
    pub(crate) fn ended(&self) -> Option<Ended> {
        self.state.lock().ok().and_then(|st| st.ended)
    }

    /// A snapshot for listings.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let (ended, total, finished_at) = self
            .state
            .lock()
            .map(|st| (st.ended, st.ring.total(), st.finished_at))
            .unwrap_or((None, 0, None));
        Snapshot {
            id: self.id,
            command: self.command.clone(),
            ended,
            runtime: finished_at.unwrap_or_else(Instant::now) - self.started,
            total_bytes: total,
            sandbox: self.sandbox.clone(),
            pids: self.pids.clone(),
        }
    }

    /// Output since the last call (at most `max` bytes), waiting up to `wait` for some to arrive
    /// or for the job to end.
    pub(crate) async fn output(&self, wait: Duration, max: usize) -> Chunk {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let Ok(st) = self.state.lock() else { break };
                if st.ring.total() > st.read || st.ended.is_some() {
                    break;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                break;
            }
        }
        let Ok(mut st) = self.state.lock() else {
            return Chunk {
                text: String::new(),
                dropped: 0,
                pending: 0,
            };
        };
        let start = st.ring.start();
        let dropped = start.saturating_sub(st.read);
        let from = st.read.max(start);
        let skip = (from - start) as usize;
        let available = st.ring.len() - skip;
        let take = available.min(max);
        let mut bytes = st.ring.copy_range(skip, take);
        // Do not split a character at the end; it is returned whole by the next poll.
        if take < available
            && let Err(e) = std::str::from_utf8(&bytes)
            && e.error_len().is_none()
        {
            bytes.truncate(e.valid_up_to());
        }
        st.read = from + bytes.len() as u64;
        Chunk {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            dropped,
            pending: (available - bytes.len()) as u64,
        }
    }

    /// Kills the job and everything it started; waits (briefly) until it is marked as ended.
    pub(crate) async fn kill(&self) -> Option<Ended> {
        if let Ok(mut st) = self.state.lock()
            && st.ended.is_none()
        {
            st.kill_requested = true;
        }
        let killer = self.killer.clone();
        let _ = tokio::task::spawn_blocking(move || killer.kill()).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        loop {
            if let Some(e) = self.ended() {
                return Some(e);
            }
            if tokio::time::Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
