//! The daemon on simulated time: exactly once per occurrence across several daemons, restarts,
//! catch-up, crashes mid-run, pauses, and the policy at run time.

use std::collections::BTreeSet;
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, DurationRound, Timelike, Utc};
use serde_json::json;
use tool_core::Policy;
use tools_cron::RunStatus;

use super::harness::{Fixture, ManualClock, context};

/// Now, rounded down to the minute, so occurrences fall on round times.
fn start() -> DateTime<Utc> {
    Utc::now().duration_trunc(Duration::minutes(1)).unwrap()
}

on_every_backend!(three_daemons_on_one_database_run_each_occurrence_once);

async fn three_daemons_on_one_database_run_each_occurrence_once(f: Fixture) {
    let t0 = start();
    let hourly = f
        .ok(
            "cron_add",
            json!({"expression": "0 * * * *", "command": "echo hourly"}),
        )
        .await["job"]["id"]
        .as_i64()
        .unwrap();
    let quarter = f
        .ok(
            "cron_add",
            json!({"expression": "*/15 * * * *", "command": "echo quarter"}),
        )
        .await["job"]["id"]
        .as_i64()
        .unwrap();
    let clock = ManualClock::at(t0);
    let daemons: Vec<_> = (0..3).map(|_| f.daemon(clock.clone())).collect();
    let hours = 6;
    for _ in 0..hours * 60 {
        clock.advance(Duration::minutes(1));
        let (a, b, c) = tokio::join!(daemons[0].tick(), daemons[1].tick(), daemons[2].tick());
        for r in [a, b, c] {
            r.unwrap();
        }
    }
    let runs = f.runs_by_job();
    for (job, period, label) in [
        (hourly, 3600, "echo hourly"),
        (quarter, 900, "echo quarter"),
    ] {
        let runs = &runs[&job];
        let occurrences: BTreeSet<i64> = runs.iter().filter_map(|r| r.scheduled_for).collect();
        assert_eq!(
            occurrences.len(),
            runs.len(),
            "an occurrence ran twice: {runs:?}"
        );
        // Every occurrence in (t0, t0 + 6 h] ran: exactly the multiples of the period there.
        let expected: BTreeSet<i64> = (t0.timestamp() + 1..=t0.timestamp() + hours * 3600)
            .filter(|t| t % period == 0)
            .collect();
        assert_eq!(occurrences, expected, "{label}");
        assert!(
            runs.iter()
                .all(|r| r.status == RunStatus::Ok && r.trigger == "schedule")
        );
        assert_eq!(f.runner.count(label), expected.len());
        // The work was shared out: the leases name the daemon that won each claim.
        let owners: BTreeSet<&str> = runs.iter().map(|r| r.owner.as_str()).collect();
        assert!(
            owners
                .iter()
                .all(|o| daemons.iter().any(|d| d.owner() == *o))
        );
    }
}

on_every_backend!(a_restart_neither_repeats_nor_loses_a_run);

async fn a_restart_neither_repeats_nor_loses_a_run(f: Fixture) {
    let t0 = start();
    let id = f
        .ok(
            "cron_add",
            json!({"expression": "0 * * * *", "command": "echo tick"}),
        )
        .await["job"]["id"]
        .as_i64()
        .unwrap();
    let first_hour = (t0 + Duration::hours(1))
        .duration_trunc(Duration::hours(1))
        .unwrap();
    let clock = ManualClock::at(first_hour + Duration::seconds(5));
    let a = f.daemon(clock.clone());
    assert_eq!(a.tick().await.unwrap().finished.len(), 1);
    drop(a);
    // Restarted at the same moment: nothing is due again.
    let b = f.daemon(clock.clone());
    assert!(b.tick().await.unwrap().finished.is_empty());
    drop(b);
    // Down for five hours: one catch-up run for the latest occurrence, covering the rest.
    clock.set(first_hour + Duration::hours(5) + Duration::seconds(5));
    let c = f.daemon(clock.clone());
    let report = c.tick().await.unwrap();
    assert_eq!(report.finished.len(), 1);
    assert_eq!(
        report.finished[0].scheduled_for,
        (first_hour + Duration::hours(5)).timestamp()
    );
    assert!(c.tick().await.unwrap().finished.is_empty());
    let runs = &f.runs_by_job()[&id];
    assert_eq!(runs.len(), 2);
    let catch_up = &runs[0];
    assert_eq!(catch_up.trigger, "catch_up");
    assert_eq!(catch_up.missed, 4);
    assert!(
        catch_up.output.contains("4 earlier occurrence"),
        "{}",
        catch_up.output
    );
    assert_eq!(f.runner.count("echo tick"), 2);
}

on_every_backend!(a_daemon_that_dies_mid_run_leaves_an_abandoned_run_not_a_repeat);

async fn a_daemon_that_dies_mid_run_leaves_an_abandoned_run_not_a_repeat(f: Fixture) {
    f.ok(
        "cron_add",
        json!({"delay": "1m", "command": "hang forever"}),
    )
    .await;
    let clock = ManualClock::at(Utc::now() + Duration::minutes(2));
    let a = f.daemon(clock.clone());
    let crashed = tokio::spawn(async move { a.tick().await });
    for _ in 0..200 {
        if f.runner.count("hang forever") == 1 {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(10)).await;
    }
    assert_eq!(f.runner.count("hang forever"), 1);
    // The daemon dies: its task (and the run inside it) is gone without recording an end.
    crashed.abort();
    let _ = crashed.await;
    let b = f.daemon(clock.clone());
    // Within the lease the run still counts as running.
    clock.advance(Duration::seconds(30));
    let r = b.tick().await.unwrap();
    assert!(r.abandoned.is_empty() && r.finished.is_empty());
    // After it, the run is reported abandoned and not started again.
    clock.advance(Duration::seconds(60));
    let r = b.tick().await.unwrap();
    assert_eq!(r.abandoned.len(), 1);
    assert!(r.finished.is_empty());
    let runs = f.runs_by_job().into_values().next().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Abandoned);
    assert!(
        runs[0].output.contains("lease expired"),
        "{}",
        runs[0].output
    );
    assert_eq!(f.runner.count("hang forever"), 1);
}

on_every_backend!(paused_jobs_wait_and_resuming_skips_what_was_missed);

async fn paused_jobs_wait_and_resuming_skips_what_was_missed(f: Fixture) {
    let t0 = start();
    let id = f
        .ok(
            "cron_add",
            json!({"expression": "*/15 * * * *", "command": "echo q"}),
        )
        .await["job"]["id"]
        .as_i64()
        .unwrap();
    f.ok("cron_update", json!({"job_id": id, "paused": true}))
        .await;
    let clock = ManualClock::at(t0 + Duration::hours(2));
    let d = f.daemon(clock.clone());
    assert!(d.tick().await.unwrap().finished.is_empty());
    f.ok("cron_update", json!({"job_id": id, "paused": false}))
        .await;
    // Resumed now (real time), so the next occurrence is the next quarter hour after now.
    let job = f
        .ok("schedule", json!({"action": "get", "job_id": id}))
        .await;
    let next = DateTime::parse_from_rfc3339(job["job"]["next_run"].as_str().unwrap()).unwrap();
    assert!(next.to_utc() > Utc::now() && next.timestamp() % 900 == 0);
    assert_eq!(f.runner.total(), 0);
}

on_every_backend!(the_policy_is_asked_again_at_run_time);

async fn the_policy_is_asked_again_at_run_time(f: Fixture) {
    // Added while the policy was `full`, which lets `rm` run…
    let full = context(f.ctx.workspace.local_root().unwrap(), Policy::full());
    f.stack
        .call_json(
            "cron_add",
            &json!({"delay": "1m", "command": "rm -rf cache"}).to_string(),
            full,
        )
        .await
        .unwrap();
    f.ok("cron_add", json!({"delay": "1m", "command": "echo fine"}))
        .await;
    // …run by a daemon under the supervised policy, which refuses it.
    let clock = ManualClock::at(Utc::now() + Duration::minutes(2));
    let d = f.daemon(clock);
    let report = d.tick().await.unwrap();
    let statuses: Vec<RunStatus> = report.finished.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [RunStatus::Denied, RunStatus::Ok]);
    let runs: Vec<_> = f.runs_by_job().into_values().flatten().collect();
    let denied = runs.iter().find(|r| r.status == RunStatus::Denied).unwrap();
    assert!(denied.output.contains("refused"), "{}", denied.output);
}

on_every_backend!(the_run_loop_fires_a_job_on_the_real_clock_and_stops_on_cancel);

async fn the_run_loop_fires_a_job_on_the_real_clock_and_stops_on_cancel(f: Fixture) {
    f.ok("cron_add", json!({"delay": "1s", "command": "echo soon"}))
        .await;
    let daemon = tools_cron::Daemon::new(&f.config(), f.ctx.for_call());
    let cancel = tool_core::CancellationToken::new();
    let stop = cancel.clone();
    let task = tokio::spawn(async move { daemon.run(stop, StdDuration::from_millis(200)).await });
    for _ in 0..100 {
        if f.runner.count("echo soon") == 1 {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
    // Give it a few more polls to be sure it does not fire twice.
    tokio::time::sleep(StdDuration::from_millis(600)).await;
    cancel.cancel();
    tokio::time::timeout(StdDuration::from_secs(5), task)
        .await
        .expect("the daemon stops when cancelled")
        .unwrap()
        .unwrap();
    assert_eq!(f.runner.count("echo soon"), 1);
    let runs: Vec<_> = f.runs_by_job().into_values().flatten().collect();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Ok);
}

on_every_backend!(one_of_three_daemons_dies_mid_run_and_nothing_is_lost_or_repeated);

async fn one_of_three_daemons_dies_mid_run_and_nothing_is_lost_or_repeated(f: Fixture) {
    let t0 = start();
    // Quarter-hourly, at minutes that never fall on simulated minute 2, when only the doomed
    // daemon ticks (with plain `*/15`, a start at xx:13, :28, :43 or :58 gave it an occurrence
    // to abandon, and the test failed one time in fifteen by the wall clock).
    let offset = (i64::from(t0.minute()) + 2 + 5) % 15;
    let quarter = f
        .ok(
            "cron_add",
            json!({"expression": format!("{offset}-59/15 * * * *"), "command": "echo quarter"}),
        )
        .await["job"]["id"]
        .as_i64()
        .unwrap();
    // Due within the first two simulated minutes (its delay counts from the real now).
    let hang = f
        .ok(
            "cron_add",
            json!({"delay": "1m", "command": "hang forever"}),
        )
        .await["job"]["id"]
        .as_i64()
        .unwrap();
    let clock = ManualClock::at(t0);
    let doomed = f.daemon(clock.clone());
    let survivors: Vec<_> = (0..2).map(|_| f.daemon(clock.clone())).collect();
    let minutes = 3 * 60;
    let mut abandoned = Vec::new();
    for minute in 1..=minutes {
        clock.advance(Duration::minutes(1));
        if minute == 2 {
            // The doomed daemon claims the long job alone and dies while it runs.
            let d = doomed.clone();
            let crashed = tokio::spawn(async move { d.tick().await });
            for _ in 0..500 {
                if f.runner.count("hang forever") == 1 {
                    break;
                }
                tokio::time::sleep(StdDuration::from_millis(10)).await;
            }
            assert_eq!(f.runner.count("hang forever"), 1);
            crashed.abort();
            let _ = crashed.await;
        }
        let (a, b) = tokio::join!(survivors[0].tick(), survivors[1].tick());
        for report in [a.unwrap(), b.unwrap()] {
            abandoned.extend(report.abandoned);
        }
    }
    let runs = f.runs_by_job();
    // The quarter-hourly job: every occurrence of the three hours, once each.
    let occurrences: Vec<i64> = runs[&quarter]
        .iter()
        .filter_map(|r| r.scheduled_for)
        .collect();
    let unique: BTreeSet<i64> = occurrences.iter().copied().collect();
    assert_eq!(unique.len(), occurrences.len(), "an occurrence ran twice");
    let expected: BTreeSet<i64> = (t0.timestamp() + 1..=t0.timestamp() + minutes * 60)
        .filter(|t| t % 60 == 0 && (t / 60) % 15 == offset)
        .collect();
    assert_eq!(unique, expected);
    assert_eq!(f.runner.count("echo quarter"), expected.len());
    assert!(
        runs[&quarter]
            .iter()
            .all(|r| r.status == RunStatus::Ok && r.owner != doomed.owner())
    );
    // The dead daemon's run: reported once, as abandoned, by a survivor; never started again.
    assert_eq!(abandoned.len(), 1, "{abandoned:?}");
    assert_eq!(abandoned[0].job_id, hang);
    assert_eq!(abandoned[0].owner, doomed.owner());
    let hang_runs = &runs[&hang];
    assert_eq!(hang_runs.len(), 1);
    assert_eq!(hang_runs[0].status, RunStatus::Abandoned);
    assert!(hang_runs[0].output.contains("lease expired"));
    assert_eq!(f.runner.count("hang forever"), 1);
}
