//! `cargo xtask ci`: every check CI runs, in order, stopping at the first failure.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::{docs, util};

/// How a step ended when it did not fail.
enum Outcome {
    Passed,
    Skipped(&'static str),
}

type Step = (&'static str, fn() -> anyhow::Result<Outcome>);

const STEPS: [Step; 5] = [
    ("fmt", fmt),
    ("clippy", clippy),
    ("test", test),
    ("docs", docs_check),
    ("deny", deny),
];

pub(crate) fn run() -> anyhow::Result<()> {
    let started = Instant::now();
    let mut summary = Vec::new();
    for (name, step) in STEPS {
        println!("\n==> ci: {name}");
        let step_started = Instant::now();
        let result = step();
        let took = format_duration(step_started.elapsed());
        let line = match &result {
            Ok(Outcome::Passed) => format!("ci: {name:<7} ok       {took}"),
            Ok(Outcome::Skipped(why)) => format!("ci: {name:<7} skipped  {took}  ({why})"),
            Err(_) => format!("ci: {name:<7} FAILED   {took}"),
        };
        println!("{line}");
        summary.push(line);
        if let Err(err) = result {
            print_summary(&summary, started.elapsed());
            return Err(err.context(format!("ci step `{name}` failed")));
        }
    }
    print_summary(&summary, started.elapsed());
    Ok(())
}

fn print_summary(lines: &[String], total: Duration) {
    println!("\n==> ci summary");
    for line in lines {
        println!("{line}");
    }
    println!("ci: total   {}", format_duration(total));
}

fn step(args: &[&str]) -> anyhow::Result<Outcome> {
    let mut cmd = util::cargo(args);
    println!("$ {}", util::display(&cmd));
    util::run_inherit(&mut cmd)?;
    Ok(Outcome::Passed)
}

fn fmt() -> anyhow::Result<Outcome> {
    // rustfmt does not read CARGO_TERM_COLOR; pass it on so CI logs have no escape codes.
    match std::env::var("CARGO_TERM_COLOR").as_deref() {
        Ok(color @ ("never" | "always" | "auto")) => {
            step(&["fmt", "--all", "--", "--check", "--color", color])
        }
        _ => step(&["fmt", "--all", "--", "--check"]),
    }
}

/// The cargo features CI builds with beyond the defaults: `tools-hw/screenshot` (xcap) when its
/// system libraries and Xvfb are here. `XTASK_SCREENSHOT=1` demands it (`.ci/run` sets it, after
/// installing the packages), `XTASK_SCREENSHOT=0` leaves it out; otherwise it is detected.
fn features() -> anyhow::Result<Vec<&'static str>> {
    const FEATURE: &str = "tools-hw/screenshot";
    match std::env::var("XTASK_SCREENSHOT").as_deref() {
        Ok("1") => return Ok(vec!["--features", FEATURE]),
        Ok("0") => return Ok(Vec::new()),
        Ok(other) => anyhow::bail!("XTASK_SCREENSHOT is `{other}`; set it to 1 or 0, or unset it"),
        Err(_) => {}
    }
    let libraries = std::process::Command::new("pkg-config")
        .args([
            "--exists",
            "libpipewire-0.3",
            "xcb",
            "wayland-client",
            "gbm",
        ])
        .stdin(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let xvfb = std::process::Command::new("Xvfb")
        .arg("-help")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if libraries && xvfb {
        println!("screen capture libraries and Xvfb found: building with {FEATURE}");
        Ok(vec!["--features", FEATURE])
    } else {
        println!(
            "note: building without {FEATURE} (the screenshot tool): it needs the Debian packages \
             libxcb1-dev libwayland-dev libgbm-dev libpipewire-0.3-dev libclang-dev and xvfb, \
             which .ci/run installs"
        );
        Ok(Vec::new())
    }
}

fn clippy() -> anyhow::Result<Outcome> {
    let mut args = vec!["clippy", "--workspace", "--all-targets", "--locked"];
    args.extend(features()?);
    args.extend(["--", "-D", "warnings"]);
    step(&args)
}

/// Plain `cargo test` (which also runs doctests), so CI needs no extra tool. The environment,
/// including `CI`, is inherited by the tests.
///
/// The store suites run each case on SQLite and, when `TOOLSHED_TEST_PG` names a database, on
/// PostgreSQL too (`.ci/run` starts a cluster and sets it, with `TOOLSHED_REQUIRE_PG=1`).
fn test() -> anyhow::Result<Outcome> {
    if std::env::var_os("TOOLSHED_TEST_PG").is_none_or(|v| v.is_empty()) {
        println!(
            "note: TOOLSHED_TEST_PG is not set: the PostgreSQL half of the store suites is \
             skipped; set it to postgres://USER:PASSWORD@HOST:PORT/DATABASE (.ci/run starts one)"
        );
    }
    let mut args = vec!["test", "--workspace", "--locked"];
    args.extend(features()?);
    step(&args)
}

fn docs_check() -> anyhow::Result<Outcome> {
    docs::run(true)?;
    Ok(Outcome::Passed)
}

fn deny() -> anyhow::Result<Outcome> {
    if std::env::var_os("XTASK_SKIP_DENY").is_some_and(|v| v == "1") {
        println!("XTASK_SKIP_DENY=1: not running cargo deny");
        return Ok(Outcome::Skipped("XTASK_SKIP_DENY=1"));
    }
    if !deny_installed() {
        println!("cargo-deny is not installed; installing it (this takes a few minutes)");
        step(&["install", "--locked", "cargo-deny"])?;
    }
    println!(
        "note: the advisories check is skipped: the RustSec advisory database cannot be \
         fetched on this network, so only bans, licenses and sources are checked"
    );
    step(&["deny", "check", "bans", "licenses", "sources"])
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
