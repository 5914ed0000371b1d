//! Resource limits measured on real processes: a fork bomb stops at the process limit and dies
//! with the call; a 1 GB producer neither grows this process's memory nor loses the counts, in
//! the foreground and as a background job; a flood of output is stopped at the total cap.

use std::time::{Duration, Instant};

use serde_json::json;
use tool_core::Policy;

use super::{Fixture, text};

/// Live processes whose command line is exactly `argv` (NUL-separated in /proc).
fn count_cmdline(argv: &[&str]) -> usize {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want)
                && std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().to_string()))
                    .is_some_and(|r| !r.starts_with('Z'))
        })
        .count()
}

/// This process's peak resident memory (VmHWM), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}

/// 1000 background sleeps under the default limit and a 3 s deadline: at no time do more than
/// the limit run, the call returns, the status names the limit, and no sleep survives it.
#[tokio::test]
async fn fork_flood_stops_at_the_process_limit() {
    let fx = Fixture::new();
    let limit = tools_shell::DEFAULT_MAX_PROCESSES as usize;
    // A duration no other test uses, to recognise these sleeps in /proc.
    let argv = ["sleep", "5.4321"];
    let sampler = tokio::task::spawn_blocking(move || {
        let mut peak = 0;
        let until = Instant::now() + Duration::from_millis(2800);
        while Instant::now() < until {
            peak = peak.max(count_cmdline(&argv));
            std::thread::sleep(Duration::from_millis(20));
        }
        peak
    });
    let started = Instant::now();
    let out = fx
        .call(
            Policy::full(),
            "shell",
            json!({"command": "for i in $(seq 1000); do sleep 5.4321 & done; wait", "timeout_secs": 3}),
        )
        .await;
    let took = started.elapsed();
    let peak = sampler.await.unwrap();
    let t = text(&out);
    let s = out.unwrap().structured.unwrap();
    assert!(took < Duration::from_secs(10), "the call took {took:?}");
    let pids = s["pids"].as_str().expect("the pids status is reported");
    if pids.starts_with("pids: not contained") {
        // No cgroup and running as root: the text says so.
        assert!(t.contains("pids: not contained ("), "{t}");
    } else {
        assert!(peak <= limit, "{peak} sleeps ran at once, limit {limit}");
        assert!(peak >= 100, "the flood never got going: {peak}");
        assert!(
            pids == format!("pids: cgroup v1 limit {limit}")
                || pids == format!("pids: cgroup v2 limit {limit}")
                || pids.starts_with("pids: RLIMIT_NPROC"),
            "{pids}"
        );
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    while count_cmdline(&argv) > 0 {
        assert!(
            Instant::now() < deadline,
            "{} sleeps survived the call",
            count_cmdline(&argv)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The machine is fine: the next command runs.
    assert_eq!(
        text(&fx.sh(Policy::full(), "echo next").await),
        "exit code 0\nnext\n"
    );
}

/// Twin: twenty background sleeps that finish on their own run to the end, untouched.
#[tokio::test]
async fn background_sleeps_within_the_limit_finish_normally() {
    let fx = Fixture::new();
    let out = fx
        .sh(
            Policy::full(),
            "for i in $(seq 20); do sleep 0.3 & done; wait; echo twenty-done",
        )
        .await;
    let t = text(&out);
    assert_eq!(t, "exit code 0\ntwenty-done\n");
    let s = out.unwrap().structured.unwrap();
    assert!(s["pids"].as_str().unwrap().starts_with("pids: "), "{s}");
}

/// With the limit switched off the output says so (never silently).
#[tokio::test]
async fn an_unlimited_configuration_is_reported() {
    let fx = Fixture::with_config(&tools_shell::Config::default().with_max_processes(None));
    let t = text(&fx.sh(Policy::full(), "echo unlimited").await);
    assert!(t.contains("pids: not limited"), "{t}");
    assert!(t.ends_with("unlimited\n"), "{t}");
}

const GIGABYTE: u64 = 1_000_000_000;
const MEMORY_SLACK: u64 = 64 * 1024 * 1024;

/// A 1 GB producer through `shell`: the call returns with the head and the tail, the notice
/// counts the bytes, and this process's peak memory grows by less than 64 MiB.
#[tokio::test]
async fn a_gigabyte_of_output_is_cut_without_growing_memory() {
    // No total cap, so the whole gigabyte flows through the capture.
    let fx =
        Fixture::with_config(&tools_shell::Config::default().with_max_output_total_bytes(None));
    let before = peak_rss();
    let out = fx
        .call(
            Policy::full(),
            "shell",
            json!({"command": "head -c 1000000000 /dev/zero | tr '\\0' x; echo; echo END", "timeout_secs": 300}),
        )
        .await
        .unwrap();
    let grown = peak_rss().saturating_sub(before);
    let t = out.joined_text();
    let s = out.structured.as_ref().unwrap();
    assert_eq!(s["timed_out"], false, "{s}");
    assert_eq!(s["exit_code"], 0, "{s}");
    assert_eq!(s["total_bytes"], GIGABYTE + 5, "{s}");
    let cut = out.truncated.as_ref().expect("cut");
    assert_eq!(cut.original_bytes, GIGABYTE + 5);
    assert!(cut.kept_bytes < 70 * 1024, "{cut:?}");
    assert!(t.len() < 70 * 1024, "{} bytes of text", t.len());
    assert!(t.starts_with("exit code 0\nxxxx"), "{}", &t[..40]);
    assert!(t.ends_with("xxx\nEND\n"), "the tail is kept");
    let omitted = GIGABYTE + 5 - cut.kept_bytes;
    assert!(
        t.contains(&format!("[... {omitted} bytes omitted")),
        "the notice counts"
    );
    assert!(grown < MEMORY_SLACK, "peak memory grew by {grown} bytes");
}

/// The same producer as a background job: the ring stays bounded, the polls report what was
/// dropped, and the job's byte count is exact.
#[tokio::test]
async fn a_gigabyte_background_job_keeps_a_bounded_ring() {
    let fx =
        Fixture::with_config(&tools_shell::Config::default().with_max_output_total_bytes(None));
    let before = peak_rss();
    let started = fx
        .call(
            Policy::full(),
            "shell",
            json!({"command": "head -c 1000000000 /dev/zero | tr '\\0' y", "background": true}),
        )
        .await
        .unwrap();
    let id = started.structured.unwrap()["job_id"].as_u64().unwrap();
    let mut dropped = 0u64;
    let mut received = 0u64;
    let mut state = String::new();
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        let o = fx
            .call(
                Policy::full(),
                "job_output",
                json!({"job_id": id, "wait_ms": 500}),
            )
            .await
            .unwrap();
        let s = o.structured.as_ref().unwrap();
        dropped += s["dropped_bytes"].as_u64().unwrap();
        let t = o.joined_text();
        assert!(t.len() < 70 * 1024, "one poll returned {} bytes", t.len());
        received += t
            .lines()
            .filter(|l| !l.is_empty() && l.bytes().all(|b| b == b'y'))
            .map(|l| l.len() as u64)
            .sum::<u64>();
        state = s["state"].as_str().unwrap().to_string();
        if state != "running" && s["pending_bytes"] == 0 {
            assert_eq!(s["total_bytes"], GIGABYTE, "{s}");
            assert_eq!(s["exit_code"], 0, "{s}");
            break;
        }
        if state == "running" {
            // A slow reader: most of the flood passes while it sleeps.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    assert_eq!(state, "exited");
    assert!(dropped > 0, "a 1 MiB ring cannot hold 1 GB");
    assert_eq!(
        dropped + received,
        GIGABYTE,
        "every byte is either returned or counted"
    );
    let grown = peak_rss().saturating_sub(before);
    assert!(grown < MEMORY_SLACK, "peak memory grew by {grown} bytes");
}

/// Commands that print without end are stopped once their output passes the total cap (the
/// default, 64 MiB, and a configured one), long before their timeout: the result is the exit
/// status line replaced by a note saying so and how to get less, then the head and tail, not an
/// error. The twins cut the same floods short themselves and run normally.
#[tokio::test]
async fn a_flood_of_output_is_stopped_at_the_total_cap() {
    let default_cap = tools_shell::DEFAULT_MAX_OUTPUT_TOTAL_BYTES;
    let small_cap: u64 = 1 << 20;
    let default = Fixture::new();
    let small = Fixture::with_config(
        &tools_shell::Config::default().with_max_output_total_bytes(Some(small_cap)),
    );
    // (fixture, its cap, command, Some(the start of the text) when it runs to its end)
    let cases: Vec<(&Fixture, u64, &str, Option<&str>)> = vec![
        (&default, default_cap, "yes", None),
        (&default, default_cap, "cat /dev/zero", None),
        (&default, default_cap, "head -c 20G /dev/zero", None),
        (&default, default_cap, "yes >&2", None),
        (
            &default,
            default_cap,
            "yes | head -5",
            Some("exit code 0\ny\ny\ny\ny\ny\n"),
        ),
        (
            &default,
            default_cap,
            "head -c 20G /dev/zero | head -c 1000 | wc -c",
            Some("exit code 0\n1000\n"),
        ),
        (
            &small,
            small_cap,
            "head -c 20G /dev/zero | tr '\\0' x",
            None,
        ),
        (&small, small_cap, "yes", None),
        // Exactly the cap is not past it.
        (
            &small,
            small_cap,
            "head -c 1M /dev/zero",
            Some("exit code 0\n"),
        ),
        (&small, small_cap, "yes | head -5", Some("exit code 0\ny\n")),
    ];
    for (fx, cap, command, runs) in cases {
        let out = fx
            .call(
                Policy::full(),
                "shell",
                json!({"command": command, "timeout_secs": 300}),
            )
            .await
            .unwrap_or_else(|e| panic!("{command}: {e}"));
        let t = out.joined_text();
        let s = out.structured.as_ref().unwrap();
        assert_eq!(s["timed_out"], false, "{command}: {s}");
        match runs {
            Some(start) => {
                assert_eq!(s["output_capped"], false, "{command}: {s}");
                assert_eq!(s["exit_code"], 0, "{command}: {s}");
                assert!(
                    t.starts_with(start),
                    "{command}: {}",
                    &t[..t.len().min(200)]
                );
            }
            None => {
                assert_eq!(s["output_capped"], true, "{command}: {s}");
                assert_eq!(s["exit_code"], serde_json::Value::Null, "{command}: {s}");
                let total = s["total_bytes"].as_u64().unwrap();
                assert!(total > cap, "{command}: {total} bytes");
                let note = format!(
                    "stopped after {total} bytes of output, past the limit of {cap} bytes for one command; to get less, pipe it through `head -n 100`"
                );
                assert!(
                    t.starts_with(&note),
                    "{command}: {}",
                    &t[..t.len().min(300)]
                );
                assert!(
                    t.contains("bytes omitted"),
                    "{command}: head and tail are kept"
                );
                let cut = out.truncated.as_ref().expect("cut");
                assert_eq!(cut.original_bytes, total, "{command}");
                assert!(t.len() < 70 * 1024, "{command}: {} bytes of text", t.len());
            }
        }
    }
}

/// A background job whose output passes the cap is stopped too, and job_output says so; its
/// twin that cuts the flood short exits normally.
#[tokio::test]
async fn a_flooding_background_job_is_stopped_at_the_total_cap() {
    let cap: u64 = 1 << 20;
    let fx = Fixture::with_config(
        &tools_shell::Config::default().with_max_output_total_bytes(Some(cap)),
    );
    // (command, the state it must end in)
    for (command, want) in [("yes", "output_capped"), ("yes | head -5", "exited")] {
        let started = fx
            .call(
                Policy::full(),
                "shell",
                json!({"command": command, "background": true}),
            )
            .await
            .unwrap();
        let id = started.structured.unwrap()["job_id"].as_u64().unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        let (state, text, s) = loop {
            let o = fx
                .call(
                    Policy::full(),
                    "job_output",
                    json!({"job_id": id, "wait_ms": 500}),
                )
                .await
                .unwrap();
            let s = o.structured.clone().unwrap();
            let state = s["state"].as_str().unwrap().to_string();
            if state != "running" {
                break (state, o.joined_text(), s);
            }
            assert!(Instant::now() < deadline, "{command}: still running");
        };
        assert_eq!(state, want, "{command}: {text}");
        if want == "output_capped" {
            let total = s["total_bytes"].as_u64().unwrap();
            assert!(total > cap, "{command}: {total}");
            assert!(
                text.starts_with(&format!("job {id} was stopped after"))
                    && text.contains(&format!(
                        "and {total} bytes of output, past the limit of 1 MiB for one job"
                    )),
                "{command}: {}",
                &text[..text.len().min(300)]
            );
        } else {
            assert_eq!(s["exit_code"], 0, "{command}: {s}");
        }
    }
}

/// The classic bomb needs a function, which the analysis refuses before anything runs (even
/// under full autonomy); the process limit is for the spellings it cannot refuse.
#[tokio::test]
async fn the_classic_fork_bomb_is_refused_before_it_runs() {
    let fx = Fixture::new();
    for bomb in [":(){ :|:& };:", "bomb() { bomb | bomb & }; bomb"] {
        let got = fx
            .call(
                Policy::full(),
                "shell",
                json!({"command": bomb, "timeout_secs": 3}),
            )
            .await;
        assert_eq!(
            got.unwrap_err().kind(),
            tool_core::ErrorKind::Denied,
            "{bomb}"
        );
    }
}
