//! `cargo xtask ci`: every check CI runs, in order, stopping at the first failure.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::{docs, provision, util};

/// How a step ended when it did not fail.
enum Outcome {
    Passed,
    Skipped(&'static str),
}

/// What the steps share: what `provision` set up for the tests and what it skipped.
#[derive(Default)]
struct Ci {
    provisioned: provision::Provisioned,
}

type Step = (&'static str, fn(&mut Ci) -> anyhow::Result<Outcome>);

const STEPS: [Step; 6] = [
    ("fmt", fmt),
    ("setup", setup),
    ("clippy", clippy),
    ("test", test),
    ("docs", docs_check),
    ("deny", deny),
];

pub(crate) fn run() -> anyhow::Result<()> {
    let started = Instant::now();
    let mut summary = Vec::new();
    let mut ci = Ci::default();
    for (name, step) in STEPS {
        println!("\n==> ci: {name}");
        let step_started = Instant::now();
        let result = step(&mut ci);
        let took = format_duration(step_started.elapsed());
        let line = match &result {
            Ok(Outcome::Passed) => format!("ci: {name:<7} ok       {took}"),
            Ok(Outcome::Skipped(why)) => format!("ci: {name:<7} skipped  {took}  ({why})"),
            Err(_) => format!("ci: {name:<7} FAILED   {took}"),
        };
        println!("{line}");
        summary.push(line);
        if let Err(err) = result {
            print_summary(&summary, &ci, started.elapsed());
            return Err(err.context(format!("ci step `{name}` failed")));
        }
    }
    print_summary(&summary, &ci, started.elapsed());
    Ok(())
}

fn print_summary(lines: &[String], ci: &Ci, total: Duration) {
    println!("\n==> ci summary");
    for line in lines {
        println!("{line}");
    }
    if ci.provisioned.skipped.is_empty() {
        println!("ci: nothing skipped");
    } else {
        println!("ci: skipped (not a failure; each line says how to get it):");
        for line in &ci.provisioned.skipped {
            println!("  - {line}");
        }
    }
    println!("ci: total   {}", format_duration(total));
}

fn step(args: &[&str], ci: &Ci) -> anyhow::Result<Outcome> {
    let mut cmd = util::cargo(args);
    ci.provisioned.apply(&mut cmd);
    println!("$ {}", util::display(&cmd));
    util::run_inherit(&mut cmd)?;
    Ok(Outcome::Passed)
}

fn fmt(ci: &mut Ci) -> anyhow::Result<Outcome> {
    // rustfmt does not read CARGO_TERM_COLOR; pass it on so CI logs have no escape codes.
    match std::env::var("CARGO_TERM_COLOR").as_deref() {
        Ok(color @ ("never" | "always" | "auto")) => {
            step(&["fmt", "--all", "--", "--check", "--color", color], ci)
        }
        _ => step(&["fmt", "--all", "--", "--check"], ci),
    }
}

/// Provisions what the tests need that cargo cannot (the Python MCP SDK) and detects the rest
/// (PostgreSQL, the screenshot libraries, user namespaces); see `provision`.
fn setup(ci: &mut Ci) -> anyhow::Result<Outcome> {
    ci.provisioned = provision::run()?;
    Ok(Outcome::Passed)
}

fn clippy(ci: &mut Ci) -> anyhow::Result<Outcome> {
    let mut args = vec!["clippy", "--workspace", "--all-targets", "--locked"];
    args.extend(ci.provisioned.features.iter().copied());
    args.extend(["--", "-D", "warnings"]);
    step(&args, ci)
}

/// Plain `cargo test` (which also runs doctests), so CI needs no extra tool. The environment,
/// including `CI`, is inherited by the tests, with what `setup` provisioned first on `PATH`.
///
/// The store suites run each case on SQLite and, when `TOOLSHED_TEST_PG` names a database, on
/// PostgreSQL too (`.ci/run` starts a cluster and sets it, with `TOOLSHED_REQUIRE_PG=1`).
fn test(ci: &mut Ci) -> anyhow::Result<Outcome> {
    let mut args = vec!["test", "--workspace", "--locked"];
    args.extend(ci.provisioned.features.iter().copied());
    step(&args, ci)
}

fn docs_check(_: &mut Ci) -> anyhow::Result<Outcome> {
    docs::run(true)?;
    Ok(Outcome::Passed)
}

fn deny(ci: &mut Ci) -> anyhow::Result<Outcome> {
    if std::env::var_os("XTASK_SKIP_DENY").is_some_and(|v| v == "1") {
        println!("XTASK_SKIP_DENY=1: not running cargo deny");
        return Ok(Outcome::Skipped("XTASK_SKIP_DENY=1"));
    }
    if !deny_installed() {
        println!("cargo-deny is not installed; installing it (this takes a few minutes)");
        step(&["install", "--locked", "cargo-deny"], ci)?;
    }
    println!(
        "note: the advisories check is skipped: the RustSec advisory database cannot be \
         fetched on this network, so only bans, licenses and sources are checked"
    );
    step(&["deny", "check", "bans", "licenses", "sources"], ci)
}

fn deny_installed() -> bool {
    util::cargo(["deny", "--version"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn format_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        let whole = d.as_secs();
        format!("{}m{:02}s", whole / 60, whole % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::format_duration;
    use std::time::Duration;

    #[test]
    fn durations_are_short_and_readable() {
        assert_eq!(format_duration(Duration::from_millis(1234)), "1.2s");
        assert_eq!(format_duration(Duration::from_secs(125)), "2m05s");
    }
}
