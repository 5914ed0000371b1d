//! The process helper with real programs: exit codes, closed stdin, scrubbed environment, group
//! kill on timeout, cancellation and drop, bounded head + tail output.

use std::path::Path;
use std::time::{Duration, Instant};

use tool_core::process::{ProcessOutput, ProcessSpec, run};
use tool_core::{ErrorKind, Limits, Policy, ToolContext};

use super::Fixture;

fn ctx(fx: &Fixture) -> ToolContext {
    fx.ctx(Policy::full(), Limits::default())
}

fn sh(fx: &Fixture, script: &str) -> ProcessSpec {
    let mut spec = ProcessSpec::new("sh", &fx.root).arg("-c").arg(script);
    spec.timeout = Duration::from_secs(20);
    spec
}

/// Whether `pid` is a live process (a zombie counts as dead: it runs nothing).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("?");
            state != "Z" && state != "X"
        }
    }
}

/// Waits (briefly) for `pid` to die; the kill is asynchronous.
fn assert_dies(pid: i32, what: &str) {
    // Generous: a loaded 2-core CI machine can take a while to reap; only a hang fails.
    let deadline = Instant::now() + Duration::from_secs(15);
    while alive(pid) {
        assert!(
            Instant::now() < deadline,
            "{what} (pid {pid}) is still running"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_pid(path: &Path) -> i32 {
    // Generous for the same reason: the child may be slow to start under load.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(s) = std::fs::read_to_string(path)
            && let Ok(pid) = s.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// (script, exit code, signal, fragments the output contains)
type StatusRow = (
    &'static str,
    Option<i32>,
    Option<i32>,
    &'static [&'static str],
);

#[tokio::test]
async fn exit_status_and_output_table() {
    let fx = Fixture::new();
    let cases: [StatusRow; 6] = [
        (
            "echo out; echo err >&2; exit 3",
            Some(3),
            None,
            &["out", "err"],
        ),
        ("echo out; echo err >&2", Some(0), None, &["out", "err"]),
        ("echo partial; exit 255", Some(255), None, &["partial"]),
        ("echo before; kill -TERM $$", None, Some(15), &["before"]),
        ("echo before; kill -KILL $$", None, Some(9), &["before"]),
        ("printf 'no newline'", Some(0), None, &["no newline"]),
    ];
    for (script, code, signal, fragments) in cases {
        let out: ProcessOutput = run(sh(&fx, script), &ctx(&fx)).await.unwrap();
        assert_eq!(out.exit_code, code, "{script}: {out:?}");
        assert_eq!(out.signal, signal, "{script}");
        assert_eq!(out.success(), code == Some(0), "{script}");
        assert!(!out.timed_out, "{script}");
        assert!(out.truncated.is_none(), "{script}");
        assert_eq!(out.total_bytes, out.output.len() as u64, "{script}");
        for f in fragments {
            assert!(out.output.contains(f), "{script}: {:?}", out.output);
        }
    }
}

/// stdin is closed: programs that read it see end-of-file at once instead of waiting.
#[tokio::test]
async fn stdin_is_closed() {
    let fx = Fixture::new();
    // Give this test process a stdin that never ends (a pipe whose write end stays open), so a
    // child that inherited it would wait until its deadline instead of passing by luck when the
    // harness's own stdin is /dev/null. No test reads this process's stdin.
    let (reader, writer) = rustix::pipe::pipe().unwrap();
    rustix::stdio::dup2_stdin(&reader).unwrap();
    std::mem::forget(writer);
    for (program, args, expect) in [
        ("cat", vec![], ""),
        (
            "sh",
            vec!["-c", "read line; echo \"got:$line:$?\""],
            "got::1\n",
        ),
        ("sh", vec!["-c", "echo twin"], "twin\n"),
    ] {
        let mut spec = ProcessSpec::new(program, &fx.root);
        spec.args = args.iter().map(Into::into).collect();
        spec.timeout = Duration::from_secs(3);
        let out = run(spec, &ctx(&fx)).await.unwrap();
        assert!(!out.timed_out, "{program} {args:?} waited for input");
        assert_eq!(out.exit_code, Some(0), "{program} {args:?}");
        assert_eq!(out.output, expect, "{program} {args:?}");
    }
}

/// The child's environment holds only the allowed variables (and the explicit ones). Cargo sets
/// `CARGO_MANIFEST_DIR` for this test process; it must not leak unless allowed.
#[tokio::test]
async fn environment_is_scrubbed() {
    let fx = Fixture::new();
    let leaked = ("CARGO_MANIFEST_DIR", env!("CARGO_MANIFEST_DIR"));
    assert_eq!(std::env::var(leaked.0).ok().as_deref(), Some(leaked.1));
    let cases: [(Vec<&str>, bool); 3] = [
        (vec!["PATH"], false),
        (vec!["PATH", "CARGO_MANIFEST_DIR"], true),
        (vec!["PATH", "NOT_SET_ANYWHERE_12345"], false),
    ];
    for (allow, visible) in cases {
        let mut spec = ProcessSpec::new("env", &fx.root);
        spec.env_allow = allow.iter().map(|s| s.to_string()).collect();
        spec.env = vec![("EXPLICIT_VAR".into(), "explicit value".into())];
        let out = run(spec, &ctx(&fx)).await.unwrap();
        let vars: Vec<&str> = out.output.lines().collect();
        let names: Vec<&str> = vars
            .iter()
            .filter_map(|l| l.split_once('=').map(|(k, _)| k))
            .collect();
        let line = format!("{}={}", leaked.0, leaked.1);
        assert_eq!(
            vars.contains(&line.as_str()),
            visible,
            "{allow:?}: {vars:?}"
        );
        assert!(vars.contains(&"EXPLICIT_VAR=explicit value"), "{vars:?}");
        // Nothing but the allowed and explicit variables (sh may not add any: `env` is exec'd).
        for name in &names {
            assert!(
                allow.contains(name) || *name == "EXPLICIT_VAR",
                "{allow:?}: {name} leaked"
            );
        }
    }
    // The default allow list does not carry cargo's (or any other) variables.
    let out = run(ProcessSpec::new("env", &fx.root), &ctx(&fx))
        .await
        .unwrap();
    assert!(!out.output.contains("CARGO_"), "{}", out.output);
    assert!(out.output.contains("TERM=dumb"), "{}", out.output);
}

/// On timeout the whole group dies, including a grandchild in the background.
#[tokio::test]
async fn timeout_kills_the_group() {
    let fx = Fixture::new();
    let pidfile = fx.root.join("grandchild.pid");
    let script = format!(
        "sleep 30 & echo $! > {}; echo started; sleep 30",
        pidfile.display()
    );
    let mut spec = sh(&fx, &script);
    spec.timeout = Duration::from_secs(1);
    let out = run(spec, &ctx(&fx)).await.unwrap();
    assert!(out.timed_out, "{out:?}");
    assert_eq!(out.exit_code, None);
    assert_eq!(out.signal, Some(9));
    assert!(!out.success());
    assert!(
        out.output.contains("started"),
        "output before the kill is kept"
    );
    assert_dies(read_pid(&pidfile), "the grandchild");

    // Twin: a quick command under the same deadline is not marked as timed out.
    let mut spec = sh(&fx, "echo quick");
    spec.timeout = Duration::from_secs(1);
    let out = run(spec, &ctx(&fx)).await.unwrap();
    assert!(!out.timed_out);
    assert_eq!(out.output, "quick\n");
}

/// A background child that keeps the pipes open does not make `run` wait for it: the group is
/// killed when the main process exits.
#[tokio::test]
async fn background_child_does_not_hang_run() {
    let fx = Fixture::new();
    for script in ["sleep 30 & echo $!", "(sleep 30; echo late) & echo $!"] {
        let mut spec = sh(&fx, script);
        spec.timeout = Duration::from_secs(20);
        let out = run(spec, &ctx(&fx)).await.unwrap();
        assert!(
            !out.timed_out,
            "{script}: run waited for the background child"
        );
        assert_eq!(out.exit_code, Some(0), "{script}");
        assert!(!out.output.contains("late"), "{script}");
        let pid: i32 = out.output.trim().parse().unwrap();
        assert_dies(pid, "the background child");
    }
}

/// Cancelling the context kills the group and returns `Cancelled`.
#[tokio::test]
async fn cancellation_kills_the_group() {
    let fx = Fixture::new();
    let pidfile = fx.root.join("child.pid");
    let ctx = ctx(&fx);
    let token = ctx.cancel.clone();
    let spec = sh(
        &fx,
        &format!("sleep 30 & echo $! > {}; wait", pidfile.display()),
    );
    let pidfile2 = pidfile.clone();
    let canceller = async move {
        let pid = tokio::task::spawn_blocking(move || read_pid(&pidfile2))
            .await
            .unwrap();
        token.cancel();
        pid
    };
    let (got, pid) = tokio::join!(run(spec, &ctx), canceller);
    assert_eq!(got.unwrap_err().kind(), ErrorKind::Cancelled);
    assert_dies(pid, "the cancelled child's child");
}

/// Dropping the `run` future (an aborted task) kills the group too.
#[tokio::test]
async fn dropping_the_future_kills_the_group() {
    let fx = Fixture::new();
    let pidfile = fx.root.join("dropped.pid");
    let spec = sh(
        &fx,
        &format!("sleep 30 & echo $! > {}; wait", pidfile.display()),
    );
    let c = ctx(&fx);
    let got = tokio::time::timeout(Duration::from_millis(500), run(spec, &c)).await;
    assert!(got.is_err(), "run finished although its child sleeps 30 s");
    assert_dies(read_pid(&pidfile), "the dropped call's child");
}

/// Head + tail truncation of large output: total bytes reported, head a prefix, tail a suffix,
/// no broken characters, memory bounded.
#[tokio::test]
async fn output_is_cut_head_and_tail() {
    let fx = Fixture::new();
    let content: String = (0..20_000).map(|i| format!("{i} é🦀 ligne\n")).collect();
    std::fs::write(fx.root.join("big.txt"), &content).unwrap();
    for max in [
        0,
        1,
        7,
        1000,
        1001,
        4097,
        65_536,
        content.len(),
        content.len() + 1,
    ] {
        let mut spec = ProcessSpec::new("cat", &fx.root).arg("big.txt");
        spec.max_output_bytes = max;
        let out = run(spec, &ctx(&fx)).await.unwrap();
        let case = format!("limit {max}");
        assert_eq!(out.total_bytes, content.len() as u64, "{case}");
        assert_eq!(out.exit_code, Some(0), "{case}");
        if max >= content.len() {
            assert!(out.truncated.is_none(), "{case}");
            assert_eq!(out.output, content, "{case}");
            continue;
        }
        let t = out.truncated.as_ref().expect("truncated");
        assert_eq!(t.original_bytes, content.len() as u64, "{case}");
        assert!(t.kept_bytes <= max as u64, "{case}: kept {}", t.kept_bytes);
        assert!(
            !out.output.contains('\u{FFFD}'),
            "{case}: a character was split"
        );
        let start = out.output.find("\n[... ").expect("notice");
        let end = out.output.find(" ...]\n").expect("notice end") + " ...]\n".len();
        let (head, tail) = (&out.output[..start], &out.output[end..]);
        assert!(content.starts_with(head), "{case}");
        assert!(content.ends_with(tail), "{case}");
        assert!(head.len() + tail.len() <= max, "{case}");
        // Memory is bounded by the limit plus the notice.
        assert!(
            out.output.len() <= max + 400,
            "{case}: {} bytes",
            out.output.len()
        );
    }
}

/// A flood of output stops the run once it passes `max_output_total_bytes`, long before the
/// deadline, with the group killed and the head and tail kept; output under the cap, and a
/// flood that a pipe cuts short, run to their end.
#[tokio::test]
async fn a_flood_of_output_is_stopped_at_the_total_cap() {
    let fx = Fixture::new();
    let cap: u64 = 1 << 20;
    // (script, stopped by the cap)
    let cases = [
        ("yes", true),
        ("cat /dev/zero", true),
        ("head -c 20G /dev/zero", true),
        ("yes >&2", true),
        ("yes & yes >&2; wait", true),
        // Twins: the same programs with their output cut short, or just under the cap.
        ("yes | head -5", false),
        ("head -c 1048576 /dev/zero", false),
        ("yes | head -c 1000000 >&2", false),
    ];
    for (script, stopped) in cases {
        let mut spec = sh(&fx, script);
        spec.timeout = Duration::from_secs(120);
        spec.max_output_bytes = 4096;
        spec.max_output_total_bytes = Some(cap);
        let out = run(spec, &ctx(&fx)).await.unwrap();
        assert!(!out.timed_out, "{script}: ran to the deadline");
        assert_eq!(out.output_capped, stopped, "{script}: {out:?}");
        if stopped {
            assert!(out.total_bytes > cap, "{script}: {}", out.total_bytes);
            assert_eq!(out.exit_code, None, "{script}");
            let t = out.truncated.as_ref().expect("head and tail are kept");
            assert_eq!(t.original_bytes, out.total_bytes, "{script}");
        } else {
            assert_eq!(out.exit_code, Some(0), "{script}");
            assert!(out.total_bytes <= cap, "{script}: {}", out.total_bytes);
        }
    }
    // Without a cap, the flood runs to the deadline.
    let mut spec = sh(&fx, "yes");
    spec.timeout = Duration::from_secs(1);
    spec.max_output_bytes = 4096;
    let out = run(spec, &ctx(&fx)).await.unwrap();
    assert!(out.timed_out && !out.output_capped, "{out:?}");
}

/// A program that does not exist is a model-visible failure; the twin runs.
#[tokio::test]
async fn missing_program() {
    let fx = Fixture::new();
    let err = run(
        ProcessSpec::new("definitely-not-a-program-xyz", &fx.root),
        &ctx(&fx),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failed);
    assert!(
        err.to_string().contains("definitely-not-a-program-xyz"),
        "{err}"
    );
    let ok = run(ProcessSpec::new("true", &fx.root), &ctx(&fx))
        .await
        .unwrap();
    assert!(ok.success());
}

/// The child runs in the directory it is given, in its own process group.
#[tokio::test]
async fn cwd_and_process_group() {
    let fx = Fixture::new();
    let sub = fx.dir("sub dir");
    let out = run(
        ProcessSpec::new("sh", &sub)
            .arg("-c")
            .arg("pwd; ps -o pgid= -p $$ 2>/dev/null || cut -d' ' -f5 /proc/$$/stat; echo $$"),
        &ctx(&fx),
    )
    .await
    .unwrap();
    let lines: Vec<&str> = out.output.lines().map(str::trim).collect();
    assert_eq!(lines[0], sub.display().to_string());
    // The shell leads its own group: its group id is its pid, not ours.
    assert_eq!(lines[1], lines[2], "{lines:?}");
    assert_ne!(lines[1], std::process::id().to_string());
}

/// The state letter of `pid`, if it exists (zombies included).
fn state(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .map(str::to_string)
}

/// Gone and reaped: neither running nor a zombie.
fn assert_reaped(pid: i32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(3);
    while let Some(s) = state(pid) {
        assert!(
            Instant::now() < deadline,
            "{what} (pid {pid}) is still there in state {s}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Descendants that leave the process group (`setsid`, a double fork) are found and killed when
/// the run ends, whether by exit or by timeout, and reaped: no zombie is left.
#[tokio::test]
async fn escapees_are_killed_and_reaped() {
    let fx = Fixture::new();
    for (script, timeout) in [
        // The escapee writes its pid after `setsid`: the run ends only once it has really left
        // the group (otherwise the group kill takes it and no escapee is counted).
        (
            "setsid sh -c 'echo $$ > p1; exec sleep 30' & while [ ! -s p1 ]; do sleep 0.01; done; echo done",
            20,
        ),
        (
            "(setsid sh -c 'echo $$ > p1; exec sleep 30' &); sleep 30",
            1,
        ),
    ] {
        let p1 = fx.root.join("p1");
        let _ = std::fs::remove_file(&p1);
        let mut spec = sh(&fx, script);
        spec.timeout = Duration::from_secs(timeout);
        spec.mark_descendants = true;
        let out = run(spec, &ctx(&fx)).await.unwrap();
        assert_eq!(out.timed_out, timeout == 1, "{script}: {out:?}");
        let pid = read_pid(&p1);
        assert_reaped(pid, script);
        assert!(out.escapees_killed >= 1, "{script}: {out:?}");
    }
    // Twin: the same escape without the marker is still found through the process tree while
    // the run lasts.
    let mut spec = sh(&fx, "setsid sleep 30 & echo $! > p2; sleep 0.3; echo done");
    spec.timeout = Duration::from_secs(20);
    let out = run(spec, &ctx(&fx)).await.unwrap();
    assert!(out.output.contains("done"));
    assert_reaped(read_pid(&fx.root.join("p2")), "the unmarked escapee");
}

/// Landlock: writes outside the allowed directories fail, writes inside and in the private
/// temporary directory work. Seccomp: Internet sockets fail unless network is allowed.
#[tokio::test]
async fn sandbox_confines_writes_and_sockets() {
    use tool_core::process::{Sandbox, probe_sandbox};
    let fx = Fixture::new();
    let probe = probe_sandbox();
    let target = fx.outside.join("planted");
    let script = format!(
        "touch {} && echo outside-ok; touch inside && echo inside-ok; touch \"$TMPDIR/x\" && echo tmp-ok; \
         python3 -c 'import socket; socket.socket(); print(\"inet-ok\")'",
        target.display()
    );
    for allow_network in [false, true] {
        let mut spec = sh(&fx, &script);
        spec.sandbox = Some(Sandbox::new(vec![fx.root.clone()], allow_network));
        let out = run(spec, &ctx(&fx)).await.unwrap();
        let status = out.sandbox.clone().expect("a status");
        assert!(out.output.contains("inside-ok"), "{out:?}");
        assert!(out.output.contains("tmp-ok"), "{out:?}");
        if probe.filesystem_enforced {
            assert!(status.landlock.starts_with("enforced"), "{status:?}");
            assert!(!target.exists(), "{out:?}");
            assert!(!out.output.contains("outside-ok"), "{out:?}");
        } else {
            assert!(status.landlock.contains("not available"), "{status:?}");
            let _ = std::fs::remove_file(&target);
        }
        assert_eq!(out.output.contains("inet-ok"), allow_network, "{out:?}");
        assert_eq!(
            status.seccomp,
            if allow_network {
                "network allowed by policy; terminal injection blocked"
            } else {
                "network blocked; terminal injection blocked"
            }
        );
    }
    assert!(!target.exists() || !probe.filesystem_enforced);
    let _ = std::fs::remove_file(&target);
    fx.assert_outside_intact();
    // Twin: without a sandbox nothing is reported and nothing is confined.
    let out = run(sh(&fx, "echo plain"), &ctx(&fx)).await.unwrap();
    assert!(out.sandbox.is_none());
}

/// Every live (non-zombie) process whose process group is `pgid`.
fn group_members(pgid: i32) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .filter(|stat| {
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            f.first().is_some_and(|s| *s != "Z" && *s != "X")
                && f.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid)
        })
        .count()
}

/// The pids cgroup directory of `pid` (v1 `pids` hierarchy or v2), if it is in a Toolshed one.
fn toolshed_cgroup_of(pid: i32) -> Option<std::path::PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if !path.contains("/toolshed-") {
            return None;
        }
        if controllers.split(',').any(|c| c == "pids") {
            Some(Path::new("/sys/fs/cgroup/pids").join(path.trim_start_matches('/')))
        } else if id == "0" {
            ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
                .iter()
                .map(|m| Path::new(m).join(path.trim_start_matches('/')))
                .find(|d| d.join("pids.max").exists())
        } else {
            None
        }
    })
}

/// A fork bomb (a shell function that pipes itself into itself in the background and waits, so
/// the tree stays up) under a limit of 40 tasks and a 2 s deadline: the group never grows past
/// the limit (the cgroup counts the forks it refused), the deadline still fires, everything dies
/// and the cgroup is removed; the test process can still fork afterwards.
#[tokio::test]
async fn fork_bomb_is_contained() {
    let fx = Fixture::new();
    const LIMIT: u32 = 40;
    // The shell dies when one of its own forks fails, so the root starts the bomb and waits.
    let mut spec = sh(
        &fx,
        "echo $$ > root.pid; bomb() { bomb | bomb & wait; }; sleep 30 & bomb & wait",
    );
    spec.max_processes = Some(LIMIT);
    spec.mark_descendants = true;
    spec.timeout = Duration::from_secs(2);
    let pidfile = fx.root.join("root.pid");
    let sampler = tokio::task::spawn_blocking(move || {
        let root = read_pid(&pidfile);
        let cgroup = toolshed_cgroup_of(root);
        let mut peak = 0;
        let mut peak_current = 0;
        let mut events = String::new();
        let until = Instant::now() + Duration::from_millis(1800);
        while Instant::now() < until {
            peak = peak.max(group_members(root));
            if let Some(dir) = &cgroup {
                let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
                peak_current = peak_current.max(read("pids.current").trim().parse().unwrap_or(0));
                events = read("pids.events");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        (root, cgroup, peak, peak_current, events)
    });
    let started = Instant::now();
    let out = run(spec, &ctx(&fx)).await.unwrap();
    let took = started.elapsed();
    let (root, cgroup, peak, peak_current, events) = sampler.await.unwrap();
    assert!(out.timed_out, "{out:?}");
    assert!(took < Duration::from_secs(8), "the call took {took:?}");
    let status = out.pids.clone().expect("a pids status");
    if !status.enforced {
        // No cgroup here and running as root: the run said so.
        assert!(
            status.summary.starts_with("pids: not contained ("),
            "{status:?}"
        );
    } else {
        assert_eq!(status.limit, Some(u64::from(LIMIT)), "{status:?}");
        assert!(peak <= LIMIT as usize, "{peak} processes, limit {LIMIT}");
    }
    if status.mechanism.starts_with("cgroup") {
        assert_eq!(
            status.summary,
            format!("pids: {} limit {LIMIT}", status.mechanism)
        );
        let dir = cgroup.expect("the child ran in a toolshed cgroup");
        assert!(peak_current <= u64::from(LIMIT), "{peak_current}");
        // The bomb reached the limit: forks were refused.
        assert!(
            events.starts_with("max ") && events.trim() != "max 0",
            "{events}"
        );
        assert!(!dir.exists(), "{} was not removed", dir.display());
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    while group_members(root) > 0 {
        assert!(
            Instant::now() < deadline,
            "{} bomb processes survive",
            group_members(root)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The machine is fine: this process still starts programs.
    let ok = run(sh(&fx, "echo alive"), &ctx(&fx)).await.unwrap();
    assert_eq!(ok.output, "alive\n");
}

/// Twin: twenty background sleeps under the same kind of limit all start and finish normally,
/// and the status names the mechanism.
#[tokio::test]
async fn work_within_the_process_limit_runs_normally() {
    let fx = Fixture::new();
    let mut spec = sh(
        &fx,
        "for i in $(seq 20); do sleep 0.2 & done; wait; echo twenty-done",
    );
    spec.max_processes = Some(40);
    let out = run(spec, &ctx(&fx)).await.unwrap();
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    assert_eq!(out.output, "twenty-done\n", "{out:?}");
    let pids = out.pids.expect("a pids status");
    assert!(
        ["cgroup v1", "cgroup v2", "RLIMIT_NPROC", "none"].contains(&pids.mechanism.as_str()),
        "{pids:?}"
    );
    // Without a limit there is no status.
    let out = run(sh(&fx, "echo plain"), &ctx(&fx)).await.unwrap();
    assert!(out.pids.is_none());
}

/// With cgroups switched off the fallback is RLIMIT_NPROC, which root ignores: then the status
/// says the run is not contained, and why. The command runs either way.
#[tokio::test]
async fn without_a_cgroup_the_fallback_is_reported() {
    let fx = Fixture::new();
    let mut spec = sh(&fx, "echo fallback-ran");
    spec.max_processes = Some(64);
    spec.pids_cgroup = false;
    let out = run(spec, &ctx(&fx)).await.unwrap();
    assert_eq!(out.output, "fallback-ran\n");
    let pids = out.pids.expect("a pids status");
    assert!(
        pids.summary.contains("pids cgroups are switched off"),
        "{pids:?}"
    );
    if rustix::process::getuid().is_root() {
        assert_eq!(pids.mechanism, "none", "{pids:?}");
        assert!(!pids.enforced);
        assert!(
            pids.summary
                .starts_with("pids: not contained (running as root"),
            "{pids:?}"
        );
    } else {
        assert_eq!(pids.mechanism, "RLIMIT_NPROC", "{pids:?}");
        assert!(pids.enforced);
        // The child really runs under the limit.
        let mut spec = sh(&fx, "ulimit -u");
        spec.max_processes = Some(64);
        spec.pids_cgroup = false;
        let out = run(spec, &ctx(&fx)).await.unwrap();
        assert_eq!(out.output.trim(), pids.limit.unwrap().to_string());
    }
}

/// Escapees that leave the process group and the process tree are still in the cgroup: killed
/// and counted even when the tracker never saw them.
#[tokio::test]
async fn cgroup_members_die_with_the_run() {
    let fx = Fixture::new();
    let mut spec = sh(
        &fx,
        // Wait for the escapee to record itself: under load it could otherwise be killed with
        // the run before it writes its pid, and the test would wait for a file that never comes.
        "(setsid sh -c 'echo $$ > esc.pid; exec sleep 30' &); while [ ! -s esc.pid ]; do sleep 0.01; done; echo done",
    );
    spec.max_processes = Some(32);
    let out = run(spec, &ctx(&fx)).await.unwrap();
    assert!(out.output.contains("done"), "{out:?}");
    let pid = read_pid(&fx.root.join("esc.pid"));
    assert_reaped(pid, "the escapee");
    if out
        .pids
        .as_ref()
        .is_some_and(|p| p.mechanism.starts_with("cgroup"))
    {
        assert!(out.escapees_killed >= 1, "{out:?}");
    }
}
