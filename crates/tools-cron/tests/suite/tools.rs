//! The tools through the real stack: ids, limits, policy at add time, history, `schedule`.

use serde_json::json;
use tool_core::{ErrorKind, ToolError};

use super::harness::{Fixture, fixture, fixture_with};

fn kind(r: Result<tool_core::ToolOutput, ToolError>) -> ErrorKind {
    r.map(|_| ()).expect_err("expected an error").kind()
}

#[tokio::test]
async fn building_the_tools_creates_no_file() {
    let f = fixture();
    assert!(!f.db.exists());
    assert!(!f.db.parent().unwrap().exists());
    f.ok("cron_list", json!({})).await;
    assert!(f.db.exists(), "the first call opens the database");
    // Jobs hold command lines: private to the user.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&f.db), 0o600);
    assert_eq!(mode(f.db.parent().unwrap()), 0o700);
}

on_every_backend!(ids_never_repeat_after_removals_or_reopening);

async fn ids_never_repeat_after_removals_or_reopening(f: Fixture) {
    let mut ids = Vec::new();
    for i in 0..3 {
        let v = f
            .ok(
                "cron_add",
                json!({"expression": "@daily", "command": format!("echo {i}")}),
            )
            .await;
        ids.push(v["job"]["id"].as_i64().unwrap());
    }
    // Remove the newest: a plain rowid table would hand its id out again.
    f.ok("cron_remove", json!({"job_id": ids[2]})).await;
    let v = f
        .ok(
            "cron_add",
            json!({"expression": "@daily", "command": "echo 3"}),
        )
        .await;
    let fourth = v["job"]["id"].as_i64().unwrap();
    assert!(!ids.contains(&fourth), "{fourth} reused from {ids:?}");
    ids.push(fourth);
    // Remove everything, then open the database again from a fresh registry.
    for id in &ids[..2] {
        f.ok("cron_remove", json!({"job_id": id})).await;
    }
    f.ok("cron_remove", json!({"job_id": fourth})).await;
    let g = {
        let mut registry = tool_core::Registry::new();
        registry
            .register_all(tools_cron::tools(&f.config()))
            .unwrap();
        tool_core::Stack::new(registry)
    };
    let out = g
        .call_json(
            "cron_add",
            &json!({"expression": "@daily", "command": "echo 4"}).to_string(),
            f.ctx.for_call(),
        )
        .await
        .unwrap();
    let fifth = out.structured.unwrap()["job"]["id"].as_i64().unwrap();
    assert!(ids.iter().all(|i| *i < fifth), "{fifth} after {ids:?}");
    // Removing a removed job says so.
    assert_eq!(
        kind(f.call("cron_remove", json!({"job_id": ids[0]})).await),
        ErrorKind::NotFound
    );
}

#[tokio::test]
async fn schedules_faster_than_the_minimum_interval_are_refused() {
    let f = fixture();
    // (expression, allowed under the default 60 s minimum)
    let table = [
        ("* * * * * *", false),
        ("*/30 * * * * *", false),
        ("0,30 * * * * *", false),
        ("*/10 * 3 * * *", false),
        ("* * * * *", true),
        ("0 * * * * *", true),
        ("*/5 * * * *", true),
        ("@hourly", true),
    ];
    for (expr, allowed) in table {
        let r = f
            .call("cron_add", json!({"expression": expr, "command": "echo x"}))
            .await;
        match (allowed, r) {
            (true, Ok(_)) => {}
            (false, Err(ToolError::InvalidArgs { path, message })) => {
                assert_eq!(path, "expression");
                assert!(message.contains("minimum interval"), "{expr}: {message}");
            }
            (a, r) => panic!("{expr}: allowed={a} but got {r:?}"),
        }
    }
    // A stricter minimum refuses what the default allows.
    let strict = fixture_with(|c| c.with_min_interval(std::time::Duration::from_secs(600)));
    assert_eq!(
        kind(
            strict
                .call(
                    "cron_add",
                    json!({"expression": "*/5 * * * *", "command": "echo x"})
                )
                .await
        ),
        ErrorKind::InvalidArgs
    );
    strict
        .ok(
            "cron_add",
            json!({"expression": "*/10 * * * *", "command": "echo x"}),
        )
        .await;
}

on_every_backend!(the_job_cap_is_per_workspace, |c| c.with_max_jobs(2));

async fn the_job_cap_is_per_workspace(f: Fixture) {
    for i in 0..2 {
        f.ok(
            "cron_add",
            json!({"delay": "1h", "command": format!("echo {i}")}),
        )
        .await;
    }
    let err = f
        .call("cron_add", json!({"delay": "1h", "command": "echo 2"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("max_jobs"), "{err}");
    // Another workspace on the same database still has room.
    let other = tempfile::tempdir().unwrap();
    let ctx = super::harness::context(other.path(), tool_core::Policy::supervised());
    f.stack
        .call_json(
            "cron_add",
            &json!({"delay": "1h", "command": "echo other"}).to_string(),
            ctx,
        )
        .await
        .unwrap();
    // And cannot see this workspace's jobs.
    let listed = f.ok("cron_list", json!({})).await;
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 2);
}

on_every_backend!(the_policy_judges_the_command_when_the_job_is_added);

async fn the_policy_judges_the_command_when_the_job_is_added(f: Fixture) {
    // (command, allowed in supervised mode) — each refusal beside a benign twin.
    let table = [
        ("rm -rf build", false),
        ("echo build", true),
        ("rm x", false),
        ("ls x", true),
    ];
    for (command, allowed) in table {
        let r = f
            .call(
                "cron_add",
                json!({"expression": "@daily", "command": command}),
            )
            .await;
        match (allowed, r) {
            (true, Ok(_)) => {}
            (false, Err(ToolError::Denied(m))) => assert!(m.contains("cron_add"), "{m}"),
            (a, r) => panic!("{command}: allowed={a} but got {r:?}"),
        }
    }
    // Nothing denied was stored.
    let listed = f.ok("cron_list", json!({})).await;
    let commands: Vec<&str> = listed["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["command"].as_str().unwrap())
        .collect();
    assert_eq!(commands, ["echo build", "ls x"]);
    // Changing a job's command is judged the same way.
    let id = listed["jobs"][0]["id"].as_i64().unwrap();
    assert_eq!(
        kind(
            f.call("cron_update", json!({"job_id": id, "command": "rm -rf /"}))
                .await
        ),
        ErrorKind::Denied
    );
    f.ok(
        "cron_update",
        json!({"job_id": id, "command": "echo again"}),
    )
    .await;
}

on_every_backend!(arguments_are_checked_before_anything_is_stored);

async fn arguments_are_checked_before_anything_is_stored(f: Fixture) {
    // (refused arguments, the field the error names, the benign twin that must be stored)
    let table = [
        (
            json!({"command": "echo x"}),
            "expression",
            json!({"expression": "@daily", "command": "echo x"}),
        ),
        (
            json!({"expression": "@daily"}),
            "command",
            json!({"expression": "@daily", "command": "echo y"}),
        ),
        (
            json!({"expression": "@daily", "delay": "1m", "command": "echo x"}),
            "delay",
            json!({"delay": "1m", "command": "echo x"}),
        ),
        (
            json!({"expression": "@daily", "command": "echo x", "prompt": "p"}),
            "prompt",
            json!({"expression": "@hourly", "command": "echo x"}),
        ),
        (
            json!({"expression": "0 9 * * 9", "command": "echo x"}),
            "expression",
            json!({"expression": "0 9 * * 7", "command": "echo x"}),
        ),
        (
            json!({"expression": "@daily", "command": "echo x", "timezone": "Nowhere/Land"}),
            "expression",
            json!({"expression": "@daily", "command": "echo x", "timezone": "Asia/Tokyo"}),
        ),
        (
            json!({"delay": "1m", "command": "echo x", "timezone": "UTC"}),
            "timezone",
            json!({"delay": "2m", "command": "echo x"}),
        ),
        (
            json!({"delay": "soon", "command": "echo x"}),
            "delay",
            json!({"delay": "1d", "command": "echo x"}),
        ),
        (
            json!({"expression": "@daily", "command": "   "}),
            "command",
            json!({"expression": "@daily", "command": " echo spaced "}),
        ),
        (
            json!({"expression": "@daily", "command": "echo \u{0}x"}),
            "command",
            json!({"expression": "@daily", "command": "echo \\0x"}),
        ),
        (
            json!({"expression": "@daily", "command": format!("echo {}", "x".repeat(20_000))}),
            "command",
            json!({"expression": "@daily", "command": format!("echo {}", "x".repeat(10_000))}),
        ),
        (
            json!({"expression": "@daily", "command": "echo x", "name": "a\nb"}),
            "name",
            json!({"expression": "@daily", "command": "echo x", "name": "a b"}),
        ),
        // Schedule texts are capped at 1000 characters; the twins are ordinary ones.
        (
            json!({"expression": format!("0 9 * * {}", "1,".repeat(100_000)), "command": "echo x"}),
            "expression",
            json!({"expression": "0 9 * * 1,2,3,4,5", "command": "echo x"}),
        ),
        (
            json!({"expression": format!("0 9 * *{} 1", " ".repeat(1000)), "command": "echo x"}),
            "expression",
            json!({"expression": format!("0 9 * *{} 1", " ".repeat(900)), "command": "echo x"}),
        ),
        (
            json!({"delay": format!("{}1m", "0".repeat(200_000)), "command": "echo x"}),
            "delay",
            json!({"delay": "0001m", "command": "echo x"}),
        ),
        (
            json!({"expression": "@daily", "command": "echo x", "timezone": "Europe/".repeat(30_000)}),
            "timezone",
            json!({"expression": "@daily", "command": "echo x", "timezone": "Europe/Berlin"}),
        ),
    ];
    let mut stored = 0;
    for (bad, field, twin) in table {
        match f.call("cron_add", bad.clone()).await {
            Err(ToolError::InvalidArgs { path, message }) => {
                assert_eq!(path, field, "{bad}");
                // The message is a sentence, never an echo of a flood.
                assert!(message.len() < 1000, "{path}: {} bytes", message.len());
                if ["expression", "delay", "timezone"].contains(&field)
                    && bad[field]
                        .as_str()
                        .is_some_and(|t| t.chars().count() > 1000)
                {
                    assert!(
                        message.contains("more than the 1000 allowed"),
                        "{path}: {message}"
                    );
                }
            }
            other => panic!("{bad}: {other:?}"),
        }
        f.ok("cron_add", twin).await;
        stored += 1;
    }
    let listed = f.ok("cron_list", json!({})).await;
    assert_eq!(listed["jobs"].as_array().unwrap().len(), stored);
    // Prompts need an agent: the runner says so at add time.
    let err = f
        .call(
            "cron_add",
            json!({"delay": "1m", "prompt": "summarise the logs"}),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("agent"), "{err}");
}

on_every_backend!(manual_runs_are_recorded_in_history);

async fn manual_runs_are_recorded_in_history(f: Fixture) {
    let ok = f
        .ok(
            "cron_add",
            json!({"expression": "@daily", "command": "echo hello"}),
        )
        .await["job"]["id"]
        .as_i64()
        .unwrap();
    let bad = f
        .ok(
            "cron_add",
            json!({"expression": "@daily", "command": "fail now"}),
        )
        .await["job"]["id"]
        .as_i64()
        .unwrap();
    let r = f.ok("cron_run", json!({"job_id": ok})).await;
    assert_eq!(r["status"], "ok");
    assert_eq!(r["exit_code"], 0);
    let r = f.ok("cron_run", json!({"job_id": bad})).await;
    assert_eq!(r["status"], "failed");
    assert_eq!(r["exit_code"], 3);
    f.ok("cron_run", json!({"job_id": ok})).await;

    let runs = f.ok("cron_runs", json!({"job_id": ok})).await;
    let runs = runs["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        assert_eq!(run["trigger"], "manual");
        assert_eq!(run["status"], "ok");
        assert_eq!(run["output"], "hello");
        assert!(run["finished_at"].is_string());
    }
    // Newest first.
    assert!(runs[0]["run_id"].as_i64() > runs[1]["run_id"].as_i64());
    let limited = f.ok("cron_runs", json!({"job_id": ok, "limit": 1})).await;
    assert_eq!(limited["runs"].as_array().unwrap().len(), 1);
    // A manual run leaves the schedule alone.
    let job = f
        .ok("schedule", json!({"action": "get", "job_id": ok}))
        .await;
    assert!(job["job"]["last_run"].is_null());
    assert_eq!(f.runner.count("echo hello"), 2);
}

on_every_backend!(the_schedule_tool_covers_the_same_jobs);

async fn the_schedule_tool_covers_the_same_jobs(f: Fixture) {
    let created = f
        .ok(
            "schedule",
            json!({"action": "create", "expression": "30 2 * * 1-5", "command": "echo nightly", "timezone": "Europe/Berlin", "name": "nightly"}),
        )
        .await;
    let id = created["job"]["id"].as_i64().unwrap();
    assert_eq!(created["job"]["schedule"]["timezone"], "Europe/Berlin");
    let once = f
        .ok(
            "schedule",
            json!({"action": "once", "delay": "10m", "command": "echo once"}),
        )
        .await;
    assert_eq!(once["job"]["type"], "once");
    assert_eq!(
        kind(
            f.call(
                "schedule",
                json!({"action": "once", "expression": "@daily", "command": "echo x"})
            )
            .await
        ),
        ErrorKind::InvalidArgs
    );
    assert_eq!(
        kind(f.call("schedule", json!({"action": "get"})).await),
        ErrorKind::InvalidArgs
    );

    let paused = f
        .ok("schedule", json!({"action": "pause", "job_id": id}))
        .await;
    assert_eq!(paused["job"]["paused"], true);
    let resumed = f
        .ok("schedule", json!({"action": "resume", "job_id": id}))
        .await;
    assert_eq!(resumed["job"]["paused"], false);
    assert!(resumed["job"]["next_run"].is_string());

    // The schedule cap holds for `schedule` and `cron_update` too; the job keeps its schedule.
    let flood = format!("30 2 * * {}", "1,".repeat(100_000));
    for (tool, args) in [
        (
            "schedule",
            json!({"action": "create", "expression": flood, "command": "echo x"}),
        ),
        ("cron_update", json!({"job_id": id, "expression": flood})),
    ] {
        match f.call(tool, args).await {
            Err(ToolError::InvalidArgs { path, message }) => {
                assert_eq!(path, "expression", "{tool}");
                assert!(
                    message.contains("more than the 1000 allowed"),
                    "{tool}: {message}"
                );
            }
            other => panic!("{tool}: {other:?}"),
        }
    }
    let updated = f
        .ok(
            "cron_update",
            json!({"job_id": id, "expression": "30 3 * * 1-5"}),
        )
        .await;
    assert_eq!(updated["job"]["schedule"]["expression"], "30 3 * * 1-5");

    let listed = f.ok("schedule", json!({"action": "list"})).await;
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 2);
    f.ok("schedule", json!({"action": "cancel", "job_id": id}))
        .await;
    let listed = f.ok("cron_list", json!({})).await;
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 1);
}

on_every_backend!(jobs_of_another_workspace_are_invisible);

async fn jobs_of_another_workspace_are_invisible(f: Fixture) {
    let id = f
        .ok(
            "cron_add",
            json!({"expression": "@daily", "command": "echo mine"}),
        )
        .await["job"]["id"]
        .as_i64()
        .unwrap();
    let other = tempfile::tempdir().unwrap();
    let ctx = super::harness::context(other.path(), tool_core::Policy::supervised());
    for (tool, args) in [
        ("cron_run", json!({"job_id": id})),
        ("cron_runs", json!({"job_id": id})),
        ("cron_remove", json!({"job_id": id})),
        ("cron_update", json!({"job_id": id, "paused": true})),
    ] {
        let r = f
            .stack
            .call_json(tool, &args.to_string(), ctx.for_call())
            .await;
        assert_eq!(kind(r), ErrorKind::NotFound, "{tool}");
    }
    assert_eq!(f.runner.total(), 0);
}

on_every_backend!(replicas_adding_at_once_never_pass_the_job_cap);

async fn replicas_adding_at_once_never_pass_the_job_cap(f: Fixture) {
    let ws = f.ctx.workspace.roots()[0].path.display().to_string();
    // Four handles on one database, as four servers would have, each trying to add five jobs
    // under a cap of six.
    let stores: Vec<_> = (0..4).map(|_| f.store()).collect();
    let added = super::harness::off_runtime(|| {
        std::thread::scope(|s| {
            let handles: Vec<_> = stores
                .iter()
                .enumerate()
                .map(|(replica, store)| {
                    let ws = ws.clone();
                    s.spawn(move || {
                        (0..5)
                            .filter(|i| {
                                let job = tools_cron::NewJob {
                                    workspace: ws.clone(),
                                    name: Some(format!("r{replica}-{i}")),
                                    schedule: tools_cron::JobSchedule::Once { at: 4_000_000_000 },
                                    action: tool_core::JobAction::Command("echo x".into()),
                                    created_at: 0,
                                    next_run: Some(4_000_000_000),
                                };
                                store.add(&job, 6).is_ok()
                            })
                            .count()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .sum::<usize>()
        })
    });
    assert_eq!(added, 6);
    let listed = super::harness::off_runtime(|| stores[0].list(&ws).unwrap().len());
    assert_eq!(listed, 6);
    super::harness::off_runtime(move || drop(stores));
}
