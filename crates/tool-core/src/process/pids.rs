//! Fork-bomb containment: a cap on the number of tasks (processes and threads) one run may have.
//!
//! In order of preference:
//!
//! 1. a per-run **pids cgroup** — cgroup v2 (a child of Toolshed's own cgroup, when the v2
//!    hierarchy has the `pids` controller and it can be enabled there) or cgroup v1 (a child of
//!    Toolshed's cgroup in the `pids` hierarchy). The directory is made and `pids.max` written in
//!    the parent; the child joins it between fork and exec by writing `0` (itself) into a
//!    `cgroup.procs` descriptor opened before the fork, so it never runs a single instruction of
//!    the command outside the cgroup. At the end everything in the cgroup is killed
//!    (`cgroup.kill` on v2, then `cgroup.procs` in rounds) and the directory removed. Membership
//!    cannot be shed: `setsid`, double forks and daemons stay inside.
//! 2. **RLIMIT_NPROC**, when no pids cgroup is writable and Toolshed does not run as root (root
//!    ignores it). The limit is per user, not per run, so it is set to the tasks the user already
//!    runs plus the run's allowance.
//! 3. nothing — and the status says so and why; it is never silent.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

/// How the number of processes of one run is limited, in words a model or a human can read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PidsStatus {
    /// `cgroup v2`, `cgroup v1`, `RLIMIT_NPROC` or `none`.
    pub mechanism: String,
    /// The limit in force (tasks: processes and threads), when there is one. For RLIMIT_NPROC
    /// this is the per-user limit, which includes what the user already runs.
    pub limit: Option<u64>,
    /// Whether the kernel enforces a limit on this run.
    pub enforced: bool,
    /// One line: `pids: cgroup v1 limit 512`, `pids: RLIMIT_NPROC …`, `pids: not contained (…)`.
    pub summary: String,
}

/// A per-run pids cgroup: a directory with `pids.max` set, removed when dropped.
#[derive(Debug)]
pub(crate) struct Cgroup {
    dir: PathBuf,
    version: u8,
}

impl Cgroup {
    /// The pids listed in `cgroup.procs` (empty when it cannot be read).
    pub(crate) fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// Kills every process in the cgroup until it is empty (at most about two seconds: a
    /// contained fork bomb refills the cgroup only up to its limit, and killing the whole list
    /// each round outruns it). Returns the pids it signalled, with their process groups.
    pub(crate) fn kill_all(&self, protect: &HashSet<i32>) -> HashMap<i32, i32> {
        let mut signalled = HashMap::new();
        if self.version == 2 {
            // Linux 5.14+: one write kills the whole cgroup, atomically with respect to forks.
            let _ = std::fs::write(self.dir.join("cgroup.kill"), "1");
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let live: Vec<(i32, i32)> = self
                .pids()
                .into_iter()
                .filter(|p| !protect.contains(p))
                .filter_map(|p| super::contain::running_pgid(p).map(|g| (p, g)))
                .collect();
            if live.is_empty() || Instant::now() > deadline {
                break;
            }
            for (pid, pgid) in live {
                if let Some(p) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
                }
                signalled.entry(pid).or_insert(pgid);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        signalled
    }

    /// Removes the directory, waiting briefly for killed tasks to finish exiting.
    pub(crate) fn remove(&self) {
        let deadline = Instant::now() + Duration::from_millis(500);
        loop {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return,
                Err(e) => {
                    if Instant::now() > deadline {
                        tracing::warn!(
                            "could not remove the pids cgroup {}: {e}",
                            self.dir.display()
                        );
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if !self.pids().is_empty() {
            self.kill_all(&HashSet::new());
        }
        self.remove();
    }
}

/// A containment ready to apply in a forked child.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) status: PidsStatus,
    pub(crate) cgroup: Option<Cgroup>,
    #[cfg(target_os = "linux")]
    procs: Option<std::sync::Arc<std::fs::File>>,
    rlimit: Option<u64>,
}

/// Prepares the containment of one run limited to `max` tasks: a cgroup when `use_cgroup` and
/// one is writable, else RLIMIT_NPROC, else none.
pub(crate) fn prepare(max: u32, use_cgroup: bool) -> Prepared {
    if !use_cgroup {
        return fallback(max, "pids cgroups are switched off".into());
    }
    match imp::create(max) {
        Ok((cgroup, procs)) => {
            #[cfg(not(target_os = "linux"))]
            drop(procs);
            let mechanism = format!("cgroup v{}", cgroup.version);
            Prepared {
                status: PidsStatus {
                    summary: format!("pids: {mechanism} limit {max}"),
                    mechanism,
                    limit: Some(u64::from(max)),
                    enforced: true,
                },
                cgroup: Some(cgroup),
                #[cfg(target_os = "linux")]
                procs: Some(std::sync::Arc::new(procs)),
                rlimit: None,
            }
        }
        Err(why) => fallback(max, why),
    }
}

/// RLIMIT_NPROC, or nothing, with `why` there is no cgroup.
pub(crate) fn fallback(max: u32, why: String) -> Prepared {
    let none = |reason: String| Prepared {
        status: PidsStatus {
            mechanism: "none".into(),
            limit: None,
            enforced: false,
            summary: format!("pids: not contained ({reason})"),
        },
        cgroup: None,
        #[cfg(target_os = "linux")]
        procs: None,
        rlimit: None,
    };
    let uid = rustix::process::getuid();
    if uid.is_root() {
        return none(format!(
            "running as root, where RLIMIT_NPROC does not apply, and no pids cgroup: {why}"
        ));
    }
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nproc).maximum;
    let running = user_tasks(uid.as_raw());
    let limit = rlimit_value(running, max, hard);
    if limit <= running {
        return none(format!(
            "this user already runs {running} tasks, at its hard RLIMIT_NPROC of {limit}; no pids cgroup: {why}"
        ));
    }
    Prepared {
        status: PidsStatus {
            mechanism: "RLIMIT_NPROC".into(),
            limit: Some(limit),
            enforced: true,
            summary: format!(
                "pids: RLIMIT_NPROC {limit} (per user: {running} tasks already running + {}; no pids cgroup: {why})",
                limit - running
            ),
        },
        cgroup: None,
        #[cfg(target_os = "linux")]
        procs: None,
        rlimit: Some(limit),
    }
}

/// The per-user RLIMIT_NPROC that leaves room for `max` more tasks, within the hard limit.
pub(crate) fn rlimit_value(running: u64, max: u32, hard: Option<u64>) -> u64 {
    let want = running.saturating_add(u64::from(max));
    hard.map_or(want, |h| want.min(h))
}

/// Tasks (threads included, as RLIMIT_NPROC counts them) whose real uid is `uid`.
fn user_tasks(uid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut total = 0u64;
    for entry in dir.flatten() {
        let name = entry.file_name();
        if !name
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let field = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        };
        if field("Uid:") == Some(u64::from(uid)) {
            total += field("Threads:").unwrap_or(1);
        }
    }
    total
}

impl Prepared {
    /// The cgroup, to be owned by the run's containment.
    pub(crate) fn into_cgroup(self) -> Option<Cgroup> {
        self.cgroup
    }

    /// Joins the cgroup, or lowers RLIMIT_NPROC, in the calling process. Runs in the child
    /// between fork and exec: one `write` on a descriptor opened before the fork, or one
    /// `setrlimit`; no allocation, no locks.
    pub(crate) fn child_hook(&self) -> impl Fn() -> io::Result<()> + Send + Sync + 'static {
        #[cfg(target_os = "linux")]
        let procs = self.procs.clone();
        let rlimit = self.rlimit;
        move || {
            #[cfg(target_os = "linux")]
            if let Some(file) = &procs {
                // "0" names the writing process itself, in cgroup v1 and v2 alike.
                match rustix::io::write(file.as_ref(), b"0") {
                    Ok(1) => {}
                    Ok(_) => return Err(io::Error::from_raw_os_error(libc::EIO)),
                    Err(e) => return Err(io::Error::from_raw_os_error(e.raw_os_error())),
                }
            }
            if let Some(limit) = rlimit {
                let hard = rustix::process::getrlimit(rustix::process::Resource::Nproc).maximum;
                let _ = rustix::process::setrlimit(
                    rustix::process::Resource::Nproc,
                    rustix::process::Rlimit {
                        current: Some(limit),
                        maximum: hard,
                    },
                );
            }
            Ok(())
        }
    }
}

/// A fresh name for a run's cgroup.
fn next_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "toolshed-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(target_os = "linux")]
mod imp {
    use std::fs::{File, OpenOptions};
    use std::path::{Path, PathBuf};
    use std::sync::OnceLock;

    use super::{Cgroup, next_name};

    /// A mounted cgroup hierarchy: v2, or v1 with the pids controller.
    #[derive(Debug, Clone)]
    struct Mount {
        version: u8,
        /// Where it is mounted.
        point: PathBuf,
        /// Which cgroup the mount shows at its top (not `/` inside containers).
        root: String,
    }

    /// Undoes the octal escapes of /proc/self/mountinfo (`\040` for a space).
    fn unescape(s: &str) -> String {
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\'
                && i + 3 < b.len()
                && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
            {
                out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
                i += 4;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    fn mounts() -> Vec<Mount> {
        let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for line in info.lines() {
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            let l: Vec<&str> = left.split(' ').collect();
            let r: Vec<&str> = right.split(' ').collect();
            let (Some(root), Some(point), Some(fstype)) = (l.get(3), l.get(4), r.first()) else {
                continue;
            };
            let version = match *fstype {
                "cgroup2" => 2,
                "cgroup" if r.get(2).is_some_and(|o| o.split(',').any(|o| o == "pids")) => 1,
                _ => continue,
            };
            out.push(Mount {
                version,
                point: PathBuf::from(unescape(point)),
                root: unescape(root),
            });
        }
        out
    }

    /// Toolshed's own cgroup in hierarchy `version` (v1: the one with the pids controller).
    fn own_cgroup(version: u8) -> Option<String> {
        let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        text.lines().find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let matches = if version == 2 {
                id == "0" && controllers.is_empty()
            } else {
                controllers.split(',').any(|c| c == "pids")
            };
            matches.then(|| path.to_string())
        })
    }

    /// The directory of Toolshed's own cgroup under a mount.
    fn own_dir(mount: &Mount) -> Option<PathBuf> {
        let path = own_cgroup(mount.version)?;
        let rel = if mount.root == "/" {
            path.as_str()
        } else {
            path.strip_prefix(&mount.root)?
        };
        let dir = mount.point.join(rel.trim_start_matches('/'));
        dir.is_dir().then_some(dir)
    }

    /// Removes the empty cgroups of Toolshed processes that died without cleaning up (once per
    /// parent directory and process).
    fn sweep_stale(parent: &Path) {
        static DONE: OnceLock<()> = OnceLock::new();
        DONE.get_or_init(|| {
            let Ok(entries) = std::fs::read_dir(parent) else {
                return;
            };
            for e in entries.flatten() {
                let name = e.file_name();
                let Some(pid) = name
                    .to_str()
                    .and_then(|n| n.strip_prefix("toolshed-"))
                    .and_then(|n| n.split('-').next())
                    .and_then(|p| p.parse::<u32>().ok())
                else {
                    continue;
                };
                if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                    // Fails harmlessly while something still runs in it.
                    let _ = std::fs::remove_dir(e.path());
                }
            }
        });
    }

    fn make_child(parent: &Path, version: u8, max: u32) -> Result<(Cgroup, File), String> {
        sweep_stale(parent);
        let dir = parent.join(next_name());
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot create a cgroup in {}: {e}", parent.display()))?;
        let cgroup = Cgroup { dir, version };
        let max_file = cgroup.dir.join("pids.max");
        if !max_file.exists() {
            return Err(format!(
                "the pids controller is not enabled for the children of {}",
                parent.display()
            ));
        }
        std::fs::write(&max_file, max.to_string())
            .map_err(|e| format!("cannot write {}: {e}", max_file.display()))?;
        let procs = OpenOptions::new()
            .write(true)
            .open(cgroup.dir.join("cgroup.procs"))
            .map_err(|e| format!("cannot open {}/cgroup.procs: {e}", cgroup.dir.display()))?;
        Ok((cgroup, procs))
    }

    fn try_v2(mount: &Mount, max: u32) -> Result<(Cgroup, File), String> {
        let parent = own_dir(mount).ok_or_else(|| {
            "Toolshed's cgroup v2 directory is not visible in the mount".to_string()
        })?;
        let controllers = std::fs::read_to_string(parent.join("cgroup.controllers"))
            .map_err(|e| format!("cannot read {}/cgroup.controllers: {e}", parent.display()))?;
        if !controllers.split_whitespace().any(|c| c == "pids") {
            return Err(format!(
                "the cgroup v2 hierarchy at {} has no pids controller (it may be bound to cgroup v1)",
                mount.point.display()
            ));
        }
        let subtree = parent.join("cgroup.subtree_control");
        let enabled = std::fs::read_to_string(&subtree)
            .is_ok_and(|s| s.split_whitespace().any(|c| c == "pids"));
        if !enabled {
            // Refused (EBUSY) when the parent holds processes and is not the root: the
            // "no internal processes" rule. A delegated, empty parent accepts it.
            std::fs::write(&subtree, "+pids").map_err(|e| {
                format!(
                    "cannot enable the pids controller in {}: {e}",
                    subtree.display()
                )
            })?;
        }
        make_child(&parent, 2, max)
    }

    fn try_v1(mount: &Mount, max: u32) -> Result<(Cgroup, File), String> {
        let parent = own_dir(mount).unwrap_or_else(|| mount.point.clone());
        make_child(&parent, 1, max)
    }

    /// Creates a per-run pids cgroup limited to `max` tasks, v2 first, then v1.
    pub(super) fn create(max: u32) -> Result<(Cgroup, File), String> {
        let mounts = mounts();
        let mut why = Vec::new();
        for version in [2u8, 1] {
            for mount in mounts.iter().filter(|m| m.version == version) {
                let got = if version == 2 {
                    try_v2(mount, max)
                } else {
                    try_v1(mount, max)
                };
                match got {
                    Ok(c) => return Ok(c),
                    Err(e) => why.push(format!("v{version}: {e}")),
                }
            }
        }
        if why.is_empty() {
            Err("no cgroup v2 mount and no cgroup v1 pids mount".into())
        } else {
            Err(why.join("; "))
        }
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn mountinfo_escapes() {
            assert_eq!(super::unescape(r"/a\040b"), "/a b");
            assert_eq!(super::unescape(r"/plain"), "/plain");
            assert_eq!(super::unescape(r"/end\04"), r"/end\04");
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Cgroup;

    pub(super) fn create(_max: u32) -> Result<(Cgroup, std::fs::File), String> {
        Err("cgroups exist only on Linux".into())
    }
}

#[cfg(test)]
mod tests {
    use super::rlimit_value;

    #[test]
    fn rlimit_leaves_room_above_what_runs() {
        assert_eq!(rlimit_value(100, 512, None), 612);
        assert_eq!(rlimit_value(100, 512, Some(400)), 400);
        assert_eq!(rlimit_value(u64::MAX, 512, None), u64::MAX);
    }
}
