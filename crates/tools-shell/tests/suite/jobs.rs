//! Background jobs: start, poll, list, kill; the concurrency cap; jobs die with the registry; no
//! zombies left behind.

use std::time::Duration;

use serde_json::json;
use tool_core::{ErrorKind, Policy};

use super::{Fixture, assert_gone, assert_gone_async, read_pid, text};

#[tokio::test]
async fn start_poll_list_kill() {
    let fx = Fixture::host_pids();
    let out = fx
        .call(
            Policy::full(),
            "shell",
            json!({"command": "echo $$ > job.pid; echo started; sleep 60", "background": true}),
        )
        .await
        .unwrap();
    let id = out.structured.as_ref().unwrap()["job_id"].as_u64().unwrap();
    assert!(out.joined_text().contains(&format!("background job {id}")));
    let pid = read_pid(&fx.path("job.pid"));

    let polled = fx
        .call(
            Policy::full(),
            "job_output",
            json!({"job_id": id, "wait_ms": 3000}),
        )
        .await;
    let t = text(&polled);
    assert!(t.contains("running"), "{t}");
    assert!(t.contains("started"), "{t}");
    // Nothing new on the next poll.
    let again = text(
        &fx.call(
            Policy::full(),
            "job_output",
            json!({"job_id": id, "wait_ms": 50}),
        )
        .await,
    );
    assert!(again.contains("no new output"), "{again}");

    let listed = text(&fx.call(Policy::full(), "job_list", json!({})).await);
    assert!(listed.contains(&format!("job {id} running")), "{listed}");

    let killed = text(
        &fx.call(Policy::full(), "job_kill", json!({"job_id": id}))
            .await,
    );
    assert!(killed.contains("killed"), "{killed}");
    assert_gone(pid, "the killed job");
    let after = fx
        .call(Policy::full(), "job_output", json!({"job_id": id}))
        .await
        .unwrap();
    assert_eq!(after.structured.unwrap()["state"], "killed");

    let missing = fx
        .call(Policy::full(), "job_output", json!({"job_id": 999}))
        .await;
    assert_eq!(missing.unwrap_err().kind(), ErrorKind::NotFound);
}

#[tokio::test]
async fn finished_job_reports_exit_code_and_output() {
    let fx = Fixture::new();
    let out = fx
        .call(
            Policy::full(),
            "shell",
            json!({"command": "echo one; echo two >&2; exit 4", "background": true}),
        )
        .await
        .unwrap();
    let id = out.structured.unwrap()["job_id"].as_u64().unwrap();
    let mut seen = String::new();
    for _ in 0..50 {
        let o = fx
            .call(
                Policy::full(),
                "job_output",
                json!({"job_id": id, "wait_ms": 200}),
            )
            .await
            .unwrap();
        seen.push_str(&o.joined_text());
        if o.structured.unwrap()["state"] == "exited" {
            break;
        }
    }
    assert!(seen.contains("exited with code 4"), "{seen}");
    assert!(seen.contains("one") && seen.contains("two"), "{seen}");
}

#[tokio::test]
async fn background_jobs_still_go_through_the_policy() {
    let fx = Fixture::new();
    let got = fx
        .call(
            Policy::supervised(),
            "shell",
            json!({"command": "rm -rf sub", "background": true}),
        )
        .await;
    // Destroying a tree asks inside the full sandbox and is refused without it; it never
    // runs unasked.
    let want = if super::kernel_has_user_namespaces() {
        ErrorKind::NeedsApproval
    } else {
        ErrorKind::Denied
    };
    assert_eq!(got.unwrap_err().kind(), want);
    assert!(fx.path("sub").exists());
}

#[tokio::test]
async fn concurrency_cap_and_timeout() {
    let fx = Fixture::with_config(
        &tools_shell::Config::default()
            .with_max_jobs(1)
            .with_namespaces(false),
    );
    let first = fx
        .call(
            Policy::full(),
            "shell",
            json!({"command": "echo $$ > a.pid; sleep 60", "background": true, "timeout_secs": 1}),
        )
        .await
        .unwrap();
    let id = first.structured.unwrap()["job_id"].as_u64().unwrap();
    let second = fx
        .call(
            Policy::full(),
            "shell",
            json!({"command": "sleep 60", "background": true}),
        )
        .await;
    assert_eq!(second.unwrap_err().kind(), ErrorKind::Failed);
    // The first job's deadline kills it; then a new job may start.
    let pid = read_pid(&fx.path("a.pid"));
    let o = fx
        .call(
            Policy::full(),
            "job_output",
            json!({"job_id": id, "wait_ms": 5000}),
        )
        .await
        .unwrap();
    assert!(o.joined_text().contains("timeout"), "{}", o.joined_text());
    assert_gone(pid, "the timed-out job");
    let third = fx
        .call(
            Policy::full(),
            "shell",
            json!({"command": "echo ok", "background": true}),
        )
        .await;
    assert!(third.is_ok(), "{third:?}");
}

/// Dropping the registry (the stack with its tools) kills the jobs, and nothing is left as a
/// zombie.
#[tokio::test]
async fn jobs_die_with_the_registry() {
    let fx = Fixture::host_pids();
    let out = fx
        .call(
            Policy::full(),
            "shell",
            json!({"command": "setsid sleep 60 & echo $! > esc.pid; echo $$ > job.pid; sleep 60", "background": true}),
        )
        .await
        .unwrap();
    assert!(out.structured.is_some());
    let job = read_pid(&fx.path("job.pid"));
    let esc = read_pid(&fx.path("esc.pid"));
    // Let the tracker see the escapee.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let root = fx.root.clone();
    drop(fx);
    assert_gone_async(job, "the job").await;
    assert_gone_async(esc, "the job's setsid escapee").await;
    drop(root);
}
