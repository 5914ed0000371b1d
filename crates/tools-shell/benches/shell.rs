//! `cargo xtask bench shell`: what the shell and git tools cost, in one run.
//!
//! 1. **Per-command overhead of `shell`**: `Stack::call_json("shell", {"command": "true"})`
//!    through the whole stack (strict parse, validation, command analysis, policy, process
//!    helper) with the sandbox off and on, against a bare `std::process::Command::new("sh")
//!    .args(["-c", "true"])` spawn. Median of `SHELL_RUNS`, the variants interleaved.
//! 2. **git status / log / diff latency** of `git_operations` against the reference Python MCP
//!    git server (PyPI `mcp-server-git`) on the same generated repository (2,000 files, 200
//!    commits, 20 files changed in the working tree), three ways:
//!    - warm, over MCP stdio: `toolshed mcp` and `python3 -m mcp_server_git`, each driven by the
//!      same small Python client (`benches/mcp_client.py`), one `tools/call` at a time;
//!    - in-process: `Stack::call_json("git_operations", …)`, no protocol, against the same warm
//!      reference numbers;
//!    - cold, one call from nothing: the whole `toolshed call git_operations …` process against
//!      starting the Python server, initializing it and making the one call.
//!
//! The repository is made with the git CLI in `target/bench-repo` and reused. The `toolshed`
//! binary is `$TOOLSHED_BIN` or `target/release/toolshed` (`cargo xtask bench shell` builds it);
//! rows that need a missing program say why instead of a number. Prints a markdown table.

// The benchmark builds a repository and spawns the reference programs.
#![allow(clippy::disallowed_methods)]
// A harness-less benchmark reports on stdout; that is its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_core::{Limits, Policy, Registry, Stack, ToolContext, Workspace};

/// Samples of each shell variant.
const SHELL_RUNS: usize = 200;
/// Timed calls of each warm git row.
const WARM_RUNS: usize = 50;
/// Timed calls of each cold git row (the Python server takes most of a second to start).
const COLD_RUNS: usize = 10;
const FILES: usize = 2_000;
const DIRS: usize = 40;
const COMMITS: usize = 200;
const FILES_PER_COMMIT: usize = 10;
const DIRTY_FILES: usize = 20;
/// Bump when the generator changes, so an old repository is not reused.
const REPO_VERSION: u32 = 1;

/// One line of the table.
struct Row {
    what: String,
    ours: Result<f64, String>,
    reference_name: String,
    reference: Result<f64, String>,
}

fn main() {
    let target = target_dir();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut rows = Vec::new();
    let mut notes = Vec::new();

    // `TOOLSHED_BENCH_ONLY=shell` or `=git` runs one half.
    let only = std::env::var("TOOLSHED_BENCH_ONLY").unwrap_or_default();
    if only != "git" {
        shell_rows(&runtime, &target, &mut rows, &mut notes);
    }
    let repo = target
        .join("bench-repo")
        .join(format!("repo-v{REPO_VERSION}"));
    if only != "shell" {
        match ensure_repo(&repo) {
            Ok(()) => git_rows(&runtime, &target, &repo, &mut rows, &mut notes),
            Err(e) => notes.push(format!(
                "git rows skipped: cannot build the repository in {}: {e}",
                repo.display()
            )),
        }
    }

    println!();
    println!("| what | toolshed | reference | ratio |");
    println!("|---|---|---|---|");
    for row in &rows {
        let ours = match &row.ours {
            Ok(ms) => fmt_ms(*ms),
            Err(why) => format!("n/a ({why})"),
        };
        let (reference, ratio) = match (&row.reference, &row.ours) {
            (Ok(r), Ok(o)) => (
                format!("{} ({})", fmt_ms(*r), row.reference_name),
                format!("{:.2}×", o / r),
            ),
            (Ok(r), Err(_)) => (
                format!("{} ({})", fmt_ms(*r), row.reference_name),
                "–".into(),
            ),
            (Err(why), _) => (format!("n/a: {why}"), "–".into()),
        };
        println!("| {} | {ours} | {reference} | {ratio} |", row.what);
    }
    println!();
    for note in &notes {
        println!("- {note}");
    }
    write_json(&target, &rows, &notes);
}

/// The machine-readable results, `target/bench/shell.json`, read by `cargo xtask bench report`.
fn write_json(target: &Path, rows: &[Row], notes: &[String]) {
    let rows: Vec<Value> = rows
        .iter()
        .map(|row| {
            json!({
                "label": row.what,
                "unit": "ms",
                "toolshed": row.ours.as_ref().ok(),
                "toolshed_error": row.ours.as_ref().err(),
                "reference_name": row.reference_name,
                "reference": row.reference.as_ref().ok(),
                "reference_error": row.reference.as_ref().err(),
            })
        })
        .collect();
    let report = json!({
        "bench": "shell",
        "shell_runs": SHELL_RUNS,
        "warm_runs": WARM_RUNS,
        "cold_runs": COLD_RUNS,
        "rows": rows,
        "notes": notes,
    });
    let dir = target.join("bench");
    let out = dir.join("shell.json");
    let text = serde_json::to_string_pretty(&report).unwrap_or_default() + "\n";
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&out, text)) {
        Ok(()) => println!("written to {}", out.display()),
        Err(e) => eprintln!("shell bench: could not write {}: {e}", out.display()),
    }
}

fn fmt_ms(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.0} µs", ms * 1000.0)
    } else {
        format!("{ms:.2} ms")
    }
}

fn median_ms(times: &mut [Duration]) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1000.0
}

fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
            std::fs::canonicalize(&target).unwrap_or(target)
        }
    }
}

fn context(root: &Path) -> ToolContext {
    ToolContext::new(
        Workspace::local(root).expect("a workspace"),
        Arc::new(Policy::full()),
        Arc::new(Limits::default()),
    )
}

// ---------------------------------------------------------------------------------------------
// 1. shell

fn shell_rows(
    runtime: &tokio::runtime::Runtime,
    target: &Path,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) {
    let ws = target.join("bench-shell-ws");
    std::fs::create_dir_all(&ws).expect("the shell bench workspace");
    let ws = std::fs::canonicalize(&ws).expect("canonical workspace");
    let variants: Vec<(&str, tools_shell::Config)> = vec![
        (
            "`shell` `true`: sandbox off, no process limit",
            tools_shell::Config::default()
                .with_sandbox(false)
                .with_max_processes(None),
        ),
        (
            "`shell` `true`: sandbox off, process limit",
            tools_shell::Config::default().with_sandbox(false),
        ),
        (
            "`shell` `true`: Landlock + seccomp + process limit, no namespaces",
            tools_shell::Config::default().with_namespaces(false),
        ),
        (
            "`shell` `true`: defaults (namespace view + Landlock + seccomp + process limit)",
            tools_shell::Config::default(),
        ),
    ];
    let stacks: Vec<Stack> = variants
        .iter()
        .map(|(_, config)| {
            let mut r = Registry::new();
            r.register_all(tools_shell::tools(config))
                .expect("register");
            Stack::new(r)
        })
        .collect();
    let ctx = context(&ws);
    let args = json!({"command": "true"}).to_string();
    let call = |stack: &Stack| -> (Duration, Value) {
        let started = Instant::now();
        let out = runtime
            .block_on(stack.call_json("shell", &args, ctx.for_call()))
            .expect("shell true runs");
        (started.elapsed(), out.structured.unwrap_or(Value::Null))
    };
    let bare = || {
        let started = Instant::now();
        let status = Command::new("sh")
            .args(["-c", "true"])
            .stdin(Stdio::null())
            .status()
            .expect("sh runs");
        assert!(status.success());
        started.elapsed()
    };
    // Warm up: the first calls probe the kernel and fault pages in.
    let mut statuses = Vec::new();
    for stack in &stacks {
        for _ in 0..10 {
            let (_, s) = call(stack);
            assert_eq!(s["exit_code"], 0, "{s}");
            statuses.push(s);
        }
    }
    for _ in 0..10 {
        bare();
    }
    let mut ours: Vec<Vec<Duration>> = vec![Vec::new(); stacks.len()];
    let mut reference = Vec::new();
    for _ in 0..SHELL_RUNS {
        reference.push(bare());
        for (i, stack) in stacks.iter().enumerate() {
            ours[i].push(call(stack).0);
        }
    }
    let reference_ms = median_ms(&mut reference);
    for ((what, _), times) in variants.iter().zip(ours.iter_mut()) {
        let ms = median_ms(times);
        rows.push(Row {
            what: what.to_string(),
            ours: Ok(ms),
            reference_name: "bare `sh -c true` spawn".into(),
            reference: Ok(reference_ms),
        });
        notes.push(format!(
            "{what}: overhead over a bare spawn {} (median of {SHELL_RUNS})",
            fmt_ms(ms - reference_ms)
        ));
    }
    if let Some(s) = statuses.last() {
        notes.push(format!(
            "sandbox of the default row: {}; {}",
            s["sandbox"]["landlock"]
                .as_str()
                .map(|l| format!(
                    "namespaces {}, landlock {l}, seccomp {}",
                    s["sandbox"]["namespaces"], s["sandbox"]["seccomp"]
                ))
                .unwrap_or_else(|| "none".into()),
            s["pids"].as_str().unwrap_or("pids: no status")
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// 2. git

/// (label, our arguments, the reference tool, its arguments without `repo_path`)
fn git_calls() -> Vec<(&'static str, Value, &'static str, Value)> {
    vec![
        (
            "status",
            json!({"operation": "status"}),
            "git_status",
            json!({}),
        ),
        (
            "log (10 commits)",
            json!({"operation": "log", "limit": 10}),
            "git_log",
            json!({"max_count": 10}),
        ),
        (
            "diff (unstaged, 20 files)",
            json!({"operation": "diff"}),
            "git_diff_unstaged",
            json!({}),
        ),
    ]
}

fn git_rows(
    runtime: &tokio::runtime::Runtime,
    target: &Path,
    repo: &Path,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) {
    let calls = git_calls();
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/mcp_client.py");
    let repo_str = repo.display().to_string();
    let reference_calls: Vec<Value> = calls
        .iter()
        .map(|(label, _, tool, args)| {
            let mut args = args.clone();
            args["repo_path"] = json!(repo_str);
            json!({"label": label, "tool": tool, "arguments": args})
        })
        .collect();
    let our_calls: Vec<Value> = calls
        .iter()
        .map(|(label, args, _, _)| {
            json!({"label": label, "tool": "git_operations", "arguments": args})
        })
        .collect();

    // The reference server, warm and cold.
    let python = reference_available();
    let python_server = ["python3", "-m", "mcp_server_git", "--repository", &repo_str];
    let (ref_warm, ref_cold) = match &python {
        Ok(()) => (
            mcp_client(&client, "warm", WARM_RUNS, &reference_calls, &python_server),
            mcp_client(&client, "cold", COLD_RUNS, &reference_calls, &python_server),
        ),
        Err(why) => (Err(why.clone()), Err(why.clone())),
    };

    // Toolshed over MCP and as a whole process.
    let toolshed = std::env::var_os("TOOLSHED_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("release").join("toolshed"));
    let config = target.join("bench-repo").join("toolshed-bench.toml");
    let _ = std::fs::write(&config, "# the defaults; written by the shell bench\n");
    let toolshed_ok = if toolshed.is_file() {
        Ok(())
    } else {
        Err(format!(
            "no toolshed binary at {}; build it with `cargo build --release -p toolshed-cli`",
            toolshed.display()
        ))
    };
    let toolshed_str = toolshed.display().to_string();
    let config_str = config.display().to_string();
    let ours_mcp = toolshed_ok.clone().and_then(|()| {
        mcp_client(
            &client,
            "warm",
            WARM_RUNS,
            &our_calls,
            &[
                &toolshed_str,
                "mcp",
                "--workspace",
                &repo_str,
                "--config",
                &config_str,
            ],
        )
    });

    // In-process.
    let mut registry = Registry::new();
    registry
        .register_all(tools_git::tools(&Default::default()))
        .expect("register");
    let stack = Stack::new(registry);
    let ctx = context(repo);

    for (label, args, _, _) in &calls {
        let pick = |set: &Result<Value, String>| -> Result<f64, String> {
            let set = set.as_ref().map_err(Clone::clone)?;
            let entry = &set["calls"][label];
            if let Some(e) = entry["error"].as_str() {
                return Err(format!("the call failed: {e}"));
            }
            entry["median_ms"]
                .as_f64()
                .ok_or_else(|| format!("no result for {label}"))
        };
        let bytes = |set: &Result<Value, String>| -> String {
            set.as_ref()
                .ok()
                .and_then(|s| s["calls"][label]["bytes"].as_u64())
                .map_or_else(|| "?".into(), |b| b.to_string())
        };

        rows.push(Row {
            what: format!("git {label}: warm, MCP stdio `tools/call`"),
            ours: pick(&ours_mcp),
            reference_name: "mcp-server-git".into(),
            reference: pick(&ref_warm),
        });

        let raw = args.to_string();
        let mut times = Vec::new();
        let mut size = 0;
        for n in 0..WARM_RUNS + 3 {
            let started = Instant::now();
            let out = runtime.block_on(stack.call_json("git_operations", &raw, ctx.for_call()));
            let took = started.elapsed();
            match out {
                Ok(o) => size = o.joined_text().len(),
                Err(e) => panic!("git_operations {raw} failed: {e}"),
            }
            if n >= 3 {
                times.push(took);
            }
        }
        rows.push(Row {
            what: format!("git {label}: in-process `Stack::call_json` (no protocol)"),
            ours: Ok(median_ms(&mut times)),
            reference_name: "mcp-server-git, warm".into(),
            reference: pick(&ref_warm),
        });

        let cold = toolshed_ok.clone().and_then(|()| {
            let argv = [
                toolshed_str.as_str(),
                "call",
                "git_operations",
                &raw,
                "--workspace",
                &repo_str,
                "--config",
                &config_str,
            ];
            let mut times = Vec::new();
            for n in 0..COLD_RUNS + 1 {
                let started = Instant::now();
                let out = Command::new(argv[0])
                    .args(&argv[1..])
                    .stdin(Stdio::null())
                    .stderr(Stdio::piped())
                    .output()
                    .map_err(|e| format!("cannot run toolshed: {e}"))?;
                if !out.status.success() {
                    return Err(format!(
                        "toolshed call failed: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                }
                if n > 0 {
                    times.push(started.elapsed());
                }
            }
            Ok(median_ms(&mut times))
        });
        rows.push(Row {
            what: format!("git {label}: cold, one call (whole process)"),
            ours: cold,
            reference_name: "start mcp-server-git + initialize + call".into(),
            reference: pick(&ref_cold),
        });
        notes.push(format!(
            "git {label}: output bytes in-process {size}, toolshed MCP {}, mcp-server-git {}",
            bytes(&ours_mcp),
            bytes(&ref_warm)
        ));
    }
    for (what, argv) in [
        ("status", vec!["status"]),
        ("log -10", vec!["log", "-10"]),
        ("diff", vec!["diff"]),
    ] {
        let mut times = Vec::new();
        for _ in 0..COLD_RUNS {
            let started = Instant::now();
            let ok = git_cmd(repo, &argv)
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                times.push(started.elapsed());
            }
        }
        if !times.is_empty() {
            notes.push(format!(
                "for scale, the `git {what}` CLI alone (which mcp-server-git runs per call): {}",
                fmt_ms(median_ms(&mut times))
            ));
        }
    }
    if let Ok(set) = &ref_warm {
        notes.push(format!(
            "reference: {} {} (Python {}), driven by benches/mcp_client.py; toolshed MCP rows use the same client",
            set["server"]["name"].as_str().unwrap_or("?"),
            set["server"]["version"].as_str().unwrap_or("?"),
            python_version()
        ));
    }
    notes.push(format!(
        "repository: {FILES} files in {DIRS} directories, {COMMITS} commits, {DIRTY_FILES} files changed in the working tree ({})",
        repo.display()
    ));
    notes.push(format!(
        "medians: {SHELL_RUNS} shell calls per variant, {WARM_RUNS} warm git calls, {COLD_RUNS} cold git calls"
    ));
}

/// Whether the reference server can be imported, or why not.
fn reference_available() -> Result<(), String> {
    let out = Command::new("python3")
        .args(["-c", "import mcp_server_git"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("python3 cannot run ({e})"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "mcp-server-git is not installed (`python3 -m pip install mcp-server-git`): {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ))
    }
}

fn python_version() -> String {
    Command::new("python3")
        .arg("--version")
        .output()
        .ok()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .trim_start_matches("Python ")
                .to_string()
        })
        .unwrap_or_else(|| "?".into())
}

/// Runs the MCP client script; its JSON report, or why there is none.
fn mcp_client(
    script: &Path,
    mode: &str,
    runs: usize,
    calls: &[Value],
    server: &[&str],
) -> Result<Value, String> {
    let out = Command::new("python3")
        .arg(script)
        .arg(mode)
        .arg(runs.to_string())
        .arg(Value::from(calls.to_vec()).to_string())
        .arg("--")
        .args(server)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("python3 cannot run ({e})"))?;
    let report: Value = serde_json::from_slice(&out.stdout).map_err(|_| {
        format!(
            "the MCP client printed no report: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })?;
    match report["error"].as_str() {
        Some(e) => Err(e.to_string()),
        None => Ok(report),
    }
}

// ---------------------------------------------------------------------------------------------
// The repository.

fn git_cmd(repo: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(repo)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Bench Author")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "Bench Author")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::null());
    cmd
}

fn git(repo: &Path, args: &[&str], date: Option<&str>) -> std::io::Result<()> {
    let mut cmd = git_cmd(repo, args);
    if let Some(d) = date {
        cmd.env("GIT_AUTHOR_DATE", d).env("GIT_COMMITTER_DATE", d);
    }
    let out = cmd.stdout(Stdio::null()).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

fn file_path(i: usize) -> String {
    format!("dir{:02}/file{:04}.rs", i % DIRS, i)
}

fn content(i: usize, version: usize) -> String {
    let mut s = format!("//! File {i}, version {version}.\n\n");
    for line in 0..40 {
        s.push_str(&format!(
            "pub fn f{i}_{line}(x: u64) -> u64 {{ x.wrapping_mul({}) ^ {} }}\n",
            line + 1,
            (i * 31 + line * 7 + version * 13) % 1009
        ));
    }
    s
}

/// Makes the repository once: `FILES` files, `COMMITS` commits touching `FILES_PER_COMMIT`
/// files each, then `DIRTY_FILES` files changed and left unstaged.
fn ensure_repo(repo: &Path) -> std::io::Result<()> {
    let ready = repo.with_extension("ready");
    if ready.exists() && repo.join(".git").is_dir() {
        return Ok(());
    }
    eprintln!(
        "shell bench: making the repository in {} (once)…",
        repo.display()
    );
    let _ = std::fs::remove_dir_all(repo);
    std::fs::create_dir_all(repo)?;
    git(repo, &["init", "-q", "-b", "main"], None)?;
    let mut version = vec![0usize; FILES];
    for (i, v) in version.iter().enumerate() {
        let p = repo.join(file_path(i));
        std::fs::create_dir_all(p.parent().unwrap_or(repo))?;
        std::fs::write(p, content(i, *v))?;
    }
    git(repo, &["add", "-A"], None)?;
    git(
        repo,
        &["commit", "-q", "-m", "commit 1: every file"],
        Some("1704067200 +0000"),
    )?;
    let mut seed: u64 = 0x5eed;
    let mut next = || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize
    };
    for c in 2..=COMMITS {
        for _ in 0..FILES_PER_COMMIT {
            let i = next() % FILES;
            version[i] += 1;
            std::fs::write(repo.join(file_path(i)), content(i, version[i]))?;
        }
        let when = format!("{} +0000", 1_704_067_200 + c * 3600);
        git(
            repo,
            &["commit", "-q", "-a", "-m", &format!("commit {c}")],
            Some(&when),
        )?;
    }
    for k in 0..DIRTY_FILES {
        let i = (k * 97) % FILES;
        let p = repo.join(file_path(i));
        let mut text = std::fs::read_to_string(&p)?;
        text = text.replacen("pub fn", "pub(crate) fn", 2);
        text.push_str("// changed in the working tree\n");
        std::fs::write(p, text)?;
    }
    // Refresh the index's stat cache so no side pays for it first.
    git(repo, &["status", "--short"], None)?;
    std::fs::write(ready, "")?;
    Ok(())
}
