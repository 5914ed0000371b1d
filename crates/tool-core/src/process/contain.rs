//! Finding and killing everything a child started: its process group, its descendants (also
//! those that left the group with `setsid`), and processes that carry the run's marker variable.
//!
//! Toolshed makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`) the first time it spawns,
//! so a process whose parent dies is re-parented to Toolshed instead of init: it stays findable
//! and Toolshed reaps it after killing it. While a child runs, a tracker samples `/proc` every
//! [`TRACK_EVERY`] and remembers every descendant with its start time (so a reused pid is never
//! killed by mistake). At the end, the group, the remembered processes, their descendants and the
//! marked processes are killed, in rounds until none is left, and the re-parented ones reaped.
//!
//! When the run has a pids cgroup ([`super::pids`]), its members are killed too, whatever their
//! ancestry: the cgroup is the one membership a process cannot leave.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::process::{
    Pid, Signal, WaitOptions, getpid, kill_process, kill_process_group, waitpid,
};

use super::pids::Cgroup;

/// How often the tracker samples the process tree.
pub(crate) const TRACK_EVERY: Duration = Duration::from_millis(50);

/// Whether Toolshed is a child subreaper (set once, on first spawn).
pub(crate) fn ensure_subreaper() -> bool {
    static SET: OnceLock<bool> = OnceLock::new();
    *SET.get_or_init(|| rustix::process::set_child_subreaper(Some(getpid())).is_ok())
}

/// One line of `/proc/PID/stat`, the fields we need.
#[derive(Debug, Clone, Copy)]
struct Proc {
    pid: i32,
    ppid: i32,
    pgid: i32,
    start: u64,
    zombie: bool,
}

fn read_stat(pid: i32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: split after the last `)`.
    let (_, rest) = stat.rsplit_once(')')?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); field N is f[N - 3].
    Some(Proc {
        pid,
        ppid: f.get(1)?.parse().ok()?,
        pgid: f.get(2)?.parse().ok()?,
        start: f.get(19)?.parse().ok()?,
        zombie: matches!(*f.first()?, "Z" | "X"),
    })
}

/// The process group of `pid`, when it exists and is not a zombie.
pub(crate) fn running_pgid(pid: i32) -> Option<i32> {
    read_stat(pid).filter(|p| !p.zombie).map(|p| p.pgid)
}

fn all_procs() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .collect()
}

fn has_marker(pid: i32, marker: &str) -> bool {
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes())
}

/// Our own pid and every ancestor: never killed, whatever a scan says.
fn protected() -> HashSet<i32> {
    let mut out = HashSet::new();
    let mut pid = getpid().as_raw_nonzero().get();
    out.insert(1);
    while pid > 1 && out.insert(pid) {
        match read_stat(pid) {
            Some(p) => pid = p.ppid,
            None => break,
        }
    }
    out
}

/// The set of processes belonging to one spawned child.
#[derive(Debug)]
pub(crate) struct Containment {
    /// The child's pid, which is also its process group id.
    root: i32,
    root_start: Option<u64>,
    /// `NAME=VALUE` that every process of this run inherits, when marking is on.
    marker: Option<String>,
    /// Descendants seen so far, with their start times.
    seen: Mutex<HashMap<i32, u64>>,
    /// Set once everything has been killed.
    done: AtomicBool,
    /// The run's pids cgroup, removed once everything in it is dead.
    cgroup: Mutex<Option<Cgroup>>,
}

impl Containment {
    pub(crate) fn new(
        root: i32,
        marker: Option<String>,
        cgroup: Option<Cgroup>,
    ) -> Arc<Containment> {
        let c = Arc::new(Containment {
            root,
            root_start: read_stat(root).map(|p| p.start),
            marker,
            seen: Mutex::new(HashMap::new()),
            done: AtomicBool::new(false),
            cgroup: Mutex::new(cgroup),
        });
        // No first sample here: at this instant only the root exists, and the tracker's first
        // tick (or the final kill) takes the sample that matters. A /proc scan costs about a
        // millisecond, which a quick command would pay for nothing.
        c
    }

    /// Samples the tree once: every live process whose parent chain reaches the root or a
    /// remembered process is remembered.
    pub(crate) fn track(&self) {
        if self.done.load(Ordering::Relaxed) {
            return;
        }
        self.remember(&all_procs());
    }

    /// Remembers, from one scan, the descendants of the root and of what was remembered.
    fn remember(&self, procs: &[Proc]) {
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        let by_pid: HashMap<i32, &Proc> = procs.iter().map(|p| (p.pid, p)).collect();
        let mut members: HashSet<i32> = seen
            .iter()
            .filter(|(pid, start)| by_pid.get(pid).is_some_and(|p| p.start == **start))
            .map(|(pid, _)| *pid)
            .collect();
        if self.root_alive(&by_pid) {
            members.insert(self.root);
        }
        let mut children: HashMap<i32, Vec<&Proc>> = HashMap::new();
        for p in procs {
            children.entry(p.ppid).or_default().push(p);
        }
        let mut stack: Vec<i32> = members.iter().copied().collect();
        while let Some(pid) = stack.pop() {
            for c in children.get(&pid).into_iter().flatten() {
                if members.insert(c.pid) {
                    stack.push(c.pid);
                }
            }
        }
        for pid in members {
            if pid != self.root
                && let Some(p) = by_pid.get(&pid)
            {
                seen.insert(pid, p.start);
            }
        }
    }

    fn root_alive(&self, by_pid: &HashMap<i32, &Proc>) -> bool {
        by_pid
            .get(&self.root)
            .is_some_and(|p| Some(p.start) == self.root_start)
    }

    /// Ends a run whose processes are known to be gone (the namespace view's init has exited,
    /// and the kernel ended its namespace with it): only the cgroup is emptied, as a second
    /// check, and removed; no /proc scan. Returns how many processes the cgroup still held.
    pub(crate) fn finish_emptied(&self) -> usize {
        if self.done.swap(true, Ordering::SeqCst) {
            return 0;
        }
        let cgroup = self.cgroup.lock().ok().and_then(|mut c| c.take());
        let Some(c) = cgroup else {
            return 0;
        };
        let left = c.kill_all(&protected());
        if !left.is_empty() {
            tracing::warn!(
                "{} processes were left in the pids cgroup of a finished run; killed",
                left.len()
            );
        }
        c.remove();
        left.len()
    }

    /// Kills the group and every process found to belong to the run, in rounds until none is
    /// left, then reaps the ones re-parented to Toolshed. Returns how many processes outside the
    /// group were killed (escapees). Safe to call more than once.
    pub(crate) fn kill_all(&self) -> usize {
        if self.done.swap(true, Ordering::SeqCst) {
            return 0;
        }
        // One last sample before the group dies: killing a parent re-parents its children, and
        // then the tree no longer leads to them. Round 0 below reuses this scan.
        let mut scan = Some(all_procs());
        if let Some(procs) = &scan {
            self.remember(procs);
        }
        if let Some(pg) = Pid::from_raw(self.root) {
            let _ = kill_process_group(pg, Signal::KILL);
        }
        let me = getpid().as_raw_nonzero().get();
        let protect = protected();
        let cgroup = self.cgroup.lock().ok().and_then(|mut c| c.take());
        // The cgroup first: it holds every process of the run, escapees included, and a
        // contained fork bomb can only refill it up to its limit.
        let in_cgroup = cgroup
            .as_ref()
            .map(|c| c.kill_all(&protect))
            .unwrap_or_default();
        let mut killed: HashMap<i32, u64> = HashMap::new();
        let mut escapees = 0;
        for (pid, pgid) in in_cgroup {
            killed.insert(pid, read_stat(pid).map_or(0, |p| p.start));
            escapees += usize::from(pgid != self.root);
        }
        for round in 0..10 {
            let procs = scan.take().unwrap_or_else(all_procs);
            let by_pid: HashMap<i32, &Proc> = procs.iter().map(|p| (p.pid, p)).collect();
            let mut members: HashSet<i32> = HashSet::new();
            if let Ok(seen) = self.seen.lock() {
                for (pid, start) in seen.iter() {
                    if by_pid.get(pid).is_some_and(|p| p.start == *start) {
                        members.insert(*pid);
                    }
                }
            }
            for (pid, start) in &killed {
                if by_pid.get(pid).is_some_and(|p| p.start == *start) {
                    members.insert(*pid);
                }
            }
            if self.root_alive(&by_pid) {
                members.insert(self.root);
            }
            if let Some(c) = &cgroup {
                members.extend(c.pids());
            }
            for p in &procs {
                if p.pgid == self.root {
                    members.insert(p.pid);
                }
            }
            if let Some(marker) = &self.marker {
                // Only processes started since the root can carry its marker: reading the
                // environment of every process on the machine would cost milliseconds.
                let since = self.root_start.unwrap_or(0);
                for p in &procs {
                    if !p.zombie
                        && p.start >= since
                        && !members.contains(&p.pid)
                        && has_marker(p.pid, marker)
                    {
                        members.insert(p.pid);
                    }
                }
            }
            // Descendants of members are members.
            let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
            for p in &procs {
                children.entry(p.ppid).or_default().push(p.pid);
            }
            let mut stack: Vec<i32> = members.iter().copied().collect();
            while let Some(pid) = stack.pop() {
                for c in children.get(&pid).into_iter().flatten() {
                    if members.insert(*c) {
                        stack.push(*c);
                    }
                }
            }
            let live: Vec<&Proc> = members
                .iter()
                .filter(|pid| !protect.contains(pid))
                .filter_map(|pid| by_pid.get(pid).copied())
                .filter(|p| !p.zombie)
                .collect();
            // Zombies re-parented to us are reaped below; stop when nothing runs any more.
            for p in &live {
                if let Some(pid) = Pid::from_raw(p.pid) {
                    let _ = kill_process(pid, Signal::KILL);
                }
                if killed.insert(p.pid, p.start).is_none() && p.pgid != self.root {
                    escapees += 1;
                }
            }
            for p in procs.iter().filter(|p| members.contains(&p.pid)) {
                killed.entry(p.pid).or_insert(p.start);
            }
            if live.is_empty() {
                break;
            }
            if round > 0 {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        if let Some(c) = cgroup {
            c.remove();
        }
        // Reap what was re-parented to us; the root itself belongs to tokio, which reaps it.
        let deadline = Instant::now() + Duration::from_millis(500);
        let mut pending: Vec<i32> = killed.keys().copied().filter(|p| *p != self.root).collect();
        while !pending.is_empty() {
            pending.retain(|pid| match read_stat(*pid) {
                None => false,
                Some(p) if p.ppid != me => false,
                Some(p) if !p.zombie => true,
                Some(_) => {
                    let reaped = Pid::from_raw(*pid)
                        .map(|p| waitpid(Some(p), WaitOptions::NOHANG))
                        .is_some_and(|r| matches!(r, Ok(Some(_)) | Err(_)));
                    !reaped
                }
            });
            if pending.is_empty() || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        escapees
    }
}

impl Drop for Containment {
    fn drop(&mut self) {
        self.kill_all();
    }
}
