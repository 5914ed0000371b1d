//! The benchmark report: `cargo xtask bench report` (also the end of `bench all`) and
//! `cargo xtask bench readme`.
//!
//! Every bench leaves its numbers in `target/bench/NAME.json` (rows of toolshed against a
//! reference, in one unit each); `bench all` adds `run.json` (which benches ran, were skipped
//! or failed, in how long, with which settings). From these the report writes
//! `target/bench/report.md`, `report.json`, one PNG bar chart per comparison and
//! `README-performance.md`, the README's "## Performance" section, which `bench readme` puts
//! between the README's `<!-- bench:start -->` and `<!-- bench:end -->` markers.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::util;

mod chart;

/// The benches of the report, in its order: (name, title, command, what it measures).
pub(crate) const SECTIONS: [(&str, &str, &str, &str); 7] = [
    (
        "size",
        "Binary size and cold start",
        "cargo xtask bench all",
        "The release `toolshed` binary as built and stripped (a copy stripped with `strip`), \
         and `toolshed tools` from process start to exit with a warm page cache.",
    ),
    (
        "core",
        "The stack",
        "cargo xtask bench core",
        "Criterion, median per call: a trivial tool called through strict parsing, schema \
         validation, the policy and every layer, against calling the tool directly.",
    ),
    (
        "fs",
        "Files and search",
        "cargo xtask bench fs",
        "Whole processes on a 50,000-file tree (500 dirs × 100 files, plus ignored ones), \
         median wall time, output into a pipe, against ripgrep, fd and sed.",
    ),
    (
        "mcp",
        "MCP server",
        "cargo xtask bench mcp",
        "`toolshed mcp` against `@modelcontextprotocol/server-filesystem` (Node), both driven \
         over stdio by the same raw JSON-RPC client and by the official Python MCP SDK.",
    ),
    (
        "shell",
        "Shell and git",
        "cargo xtask bench shell",
        "`shell {\"command\":\"true\"}` through the whole stack against a bare `sh -c true` \
         spawn; `git_operations` against the reference Python MCP git server \
         (`mcp-server-git`) on a 2,000-file, 200-commit repository.",
    ),
    (
        "memory",
        "Memory",
        "cargo xtask bench memory",
        "`memory_recall` through the whole stack into a real SQLite file, keyword mode, \
         2,000 two-to-four-word queries over English-like text, 5 results asked for; \
         `memory_store` with one durable transaction each.",
    ),
    (
        "web",
        "Web",
        "cargo xtask bench web",
        "`web_fetch` of `toolshed mcp` against the reference MCP fetch server \
         (`mcp-server-fetch`), both driven alternately by the same raw JSON-RPC client, each \
         asked for a whole generated documentation page from a server on 127.0.0.1, a fresh \
         URL per call.",
    ),
];

/// `target/bench`.
pub(crate) fn bench_dir() -> PathBuf {
    target_dir().join("bench")
}

/// `$CARGO_TARGET_DIR` or the workspace's `target`.
pub(crate) fn target_dir() -> PathBuf {
    let root = util::root();
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}

/// One measured line: toolshed against a reference (if any), in one unit, lower is better.
#[derive(Debug, Clone, Default)]
pub(crate) struct Row {
    pub(crate) label: String,
    pub(crate) unit: String,
    pub(crate) toolshed: Option<f64>,
    pub(crate) toolshed_error: Option<String>,
    pub(crate) reference_name: Option<String>,
    pub(crate) reference: Option<f64>,
    pub(crate) reference_error: Option<String>,
    pub(crate) target: Option<f64>,
    pub(crate) detail: Option<String>,
}

impl Row {
    fn from_json(v: &Value) -> Row {
        let s = |key: &str| v[key].as_str().map(str::to_owned);
        Row {
            label: s("label").unwrap_or_default(),
            unit: s("unit").unwrap_or_else(|| "ms".into()),
            toolshed: v["toolshed"].as_f64(),
            toolshed_error: s("toolshed_error"),
            reference_name: s("reference_name"),
            reference: v["reference"].as_f64(),
            reference_error: s("reference_error"),
            target: v["target"].as_f64(),
            detail: s("detail"),
        }
    }

    /// reference / toolshed: above 1, toolshed is faster (or smaller).
    fn speedup(&self) -> Option<f64> {
        match (self.toolshed, self.reference) {
            (Some(t), Some(r)) if t > 0.0 && r > 0.0 => Some(r / t),
            _ => None,
        }
    }

    fn ratio_text(&self) -> String {
        let Some(r) = self.speedup() else {
            return "–".into();
        };
        let (better, worse) = if self.unit == "MiB" || self.unit == "MB" {
            ("smaller", "larger")
        } else {
            ("faster", "slower")
        };
        if r >= 1.0 {
            format!("{} {better}", times(r))
        } else {
            format!("{} {worse}", times(1.0 / r))
        }
    }

    fn target_met(&self) -> Option<bool> {
        Some(self.toolshed? <= self.target?)
    }

    fn to_json(&self) -> Value {
        json!({
            "label": self.label,
            "unit": self.unit,
            "toolshed": self.toolshed,
            "toolshed_error": self.toolshed_error,
            "reference_name": self.reference_name,
            "reference": self.reference,
            "reference_error": self.reference_error,
            "speedup": self.speedup(),
            "ratio": self.speedup().map(|_| self.ratio_text()),
            "target": self.target,
            "target_met": self.target_met(),
            "detail": self.detail,
        })
    }
}

/// `12×`, `3.4×`, `1.12×`.
fn times(r: f64) -> String {
    if r >= 10.0 {
        format!("{}×", thousands(r.round()))
    } else if r >= 2.0 {
        format!("{r:.1}×")
    } else {
        format!("{r:.2}×")
    }
}

/// 17659 -> "17,659" (whole numbers).
fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 { format!("-{out}") } else { out }
}

/// A value with its unit, to about three significant digits.
fn value_text(v: f64, unit: &str) -> String {
    let number = if v == 0.0 {
        "0".to_owned()
    } else if v.abs() >= 1000.0 {
        thousands(v)
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    if unit.is_empty() {
        number
    } else {
        format!("{number} {unit}")
    }
}

/// One bench's part of the report.
#[derive(Debug, Clone)]
struct Section {
    name: &'static str,
    title: &'static str,
    command: &'static str,
    about: &'static str,
    /// `ok`, `skipped`, `failed` or `not run`.
    status: String,
    reason: Option<String>,
    seconds: Option<f64>,
    settings: Option<String>,
    rows: Vec<Row>,
    notes: Vec<String>,
}

/// The rows and notes of `target/bench/NAME.json`, in whichever form the bench wrote.
fn load_rows(name: &str, v: &Value) -> (Vec<Row>, Vec<String>) {
    let mut notes: Vec<String> = v["notes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if name == "memory" && v["rows"].is_null() {
        // The memory bench's own format.
        let mut rows = Vec::new();
        for r in v["recall"].as_array().into_iter().flatten() {
            let n = r["memories"].as_f64().unwrap_or(0.0);
            let at = format!("at {} memories", thousands(n));
            rows.push(Row {
                label: format!("memory_recall p50 {at}"),
                unit: "ms".into(),
                toolshed: r["p50_ms"].as_f64(),
                target: (n >= 100_000.0).then_some(2.0),
                detail: r["mean_results"]
                    .as_f64()
                    .map(|m| format!("{m:.2} results per recall")),
                ..Row::default()
            });
            rows.push(Row {
                label: format!("memory_recall p99 {at}"),
                unit: "ms".into(),
                toolshed: r["p99_ms"].as_f64(),
                ..Row::default()
            });
            rows.push(Row {
                label: format!("memory_recall mean {at}"),
                unit: "ms".into(),
                toolshed: r["mean_ms"].as_f64(),
                ..Row::default()
            });
        }
        if let Some(per_second) = v["store"]["memories_per_second"].as_f64() {
            notes.push(format!(
                "memory_store: {} memories/s, one durable transaction each; database of {} \
                 memories: {:.1} MiB",
                thousands(per_second),
                thousands(v["store"]["memories"].as_f64().unwrap_or(0.0)),
                v["database_bytes"].as_f64().unwrap_or(0.0) / 1024.0 / 1024.0
            ));
        }
        // `bench memory --backend postgres`: the same recalls on PostgreSQL, beside SQLite's.
        let pg = &v["postgres"];
        for r in pg["recall"].as_array().into_iter().flatten() {
            let n = r["memories"].as_f64().unwrap_or(0.0);
            let same = pg["same_results"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|s| s["memories"].as_f64() == Some(n));
            for (stat, key) in [("p50", "p50_ms"), ("p99", "p99_ms")] {
                rows.push(Row {
                    label: format!(
                        "memory_recall {stat} at {} memories, PostgreSQL",
                        thousands(n)
                    ),
                    unit: "ms".into(),
                    toolshed: r[key].as_f64(),
                    detail: same.map(|s| {
                        format!(
                            "same results as SQLite in {} of {} recalls",
                            s["same"].as_u64().unwrap_or(0),
                            s["recalls"].as_u64().unwrap_or(0)
                        )
                    }),
                    ..Row::default()
                });
            }
        }
        if let Some(per_second) = pg["store"]["memories_per_second"].as_f64() {
            notes.push(format!(
                "{}: memory_store {} memories/s; {:.1} MiB of tables and indexes",
                pg["server"].as_str().unwrap_or("server"),
                thousands(per_second),
                pg["database_bytes"].as_f64().unwrap_or(0.0) / 1024.0 / 1024.0
            ));
        }
        return (rows, notes);
    }
    if let Some(version) = v["reference_version"].as_str() {
        notes.push(format!("reference: {version}"));
    }
    if let Some(client) = v["client"].as_str() {
        notes.push(format!("client: {client}"));
    }
    if name == "fs"
        && let Some(runs) = v["runs"].as_u64()
    {
        notes.push(format!("median of {runs} runs of each side, alternating"));
    }
    let rows = v["rows"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| {
                    let mut row = Row::from_json(r);
                    if row.detail.is_none()
                        && let (Some(t), Some(r)) =
                            (r["toolshed_lines"].as_u64(), r["reference_lines"].as_u64())
                    {
                        row.detail = Some(format!(
                            "{} / {} output lines",
                            thousands(t as f64),
                            thousands(r as f64)
                        ));
                    }
                    row
                })
                .collect()
        })
        .unwrap_or_default();
    (rows, notes)
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

fn sections(run: Option<&Value>) -> Vec<Section> {
    let dir = bench_dir();
    SECTIONS
        .iter()
        .map(|&(name, title, command, about)| {
            let from_run = run.map(|r| &r["benches"][name]);
            let data = read_json(&dir.join(format!("{name}.json")));
            let (rows, notes) = data
                .as_ref()
                .map(|v| load_rows(name, v))
                .unwrap_or_default();
            let status = from_run
                .and_then(|r| r["status"].as_str())
                .map(str::to_owned)
                .unwrap_or_else(|| {
                    if data.is_some() {
                        "ok".into()
                    } else {
                        "not run".into()
                    }
                });
            Section {
                name,
                title,
                command,
                about,
                status,
                reason: from_run.and_then(|r| r["reason"].as_str().map(str::to_owned)),
                seconds: from_run.and_then(|r| r["seconds"].as_f64()),
                settings: from_run.and_then(|r| r["settings"].as_str().map(str::to_owned)),
                rows,
                notes,
            }
        })
        .collect()
}

/// What the report says about the machine.
fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into());
    let memory_gib = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib / 1024.0 / 1024.0)
    });
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned));
    json!({
        "cpu": cpu,
        "cores": cores,
        "kernel": kernel,
        "memory_gib": memory_gib.map(|g| (g * 10.0).round() / 10.0),
        "arch": std::env::consts::ARCH,
        "rustc": command_line("rustc", &["--version"]),
        "commit": command_line("git", &["rev-parse", "--short", "HEAD"]),
        "load_average_at_report": load,
    })
}

fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(program)
        .args(args)
        .current_dir(util::root())
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `2026-11-30 16:40 UTC` for a Unix time.
pub(crate) fn utc_text(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        secs / 3600,
        secs % 3600 / 60
    )
}

pub(crate) fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn machine_text(m: &Value) -> String {
    let mut s = format!(
        "{}, {} cores",
        m["cpu"].as_str().unwrap_or("?"),
        m["cores"].as_u64().unwrap_or(0)
    );
    if let Some(g) = m["memory_gib"].as_f64() {
        let _ = write!(s, ", {g:.0} GiB");
    }
    let _ = write!(
        s,
        ", Linux {} ({})",
        m["kernel"].as_str().unwrap_or("?"),
        m["arch"].as_str().unwrap_or("?")
    );
    s
}

fn duration_text(seconds: f64) -> String {
    if seconds >= 60.0 {
        format!(
            "{} min {:02} s",
            (seconds / 60.0).floor(),
            seconds as u64 % 60
        )
    } else {
        format!("{seconds:.0} s")
    }
}

/// The markdown table of one section.
fn table(rows: &[Row]) -> String {
    let has_ref = rows.iter().any(|r| r.reference_name.is_some());
    let has_target = rows.iter().any(|r| r.target.is_some());
    let has_detail = rows.iter().any(|r| r.detail.is_some());
    let mut head = vec!["what", "toolshed"];
    let mut align = vec!["---", "---:"];
    if has_ref {
        head.extend(["reference", "ratio"]);
        align.extend(["---", "---:"]);
    }
    if has_target {
        head.extend(["target", "met"]);
        align.extend(["---:", "---"]);
    }
    if has_detail {
        head.push("detail");
        align.push("---");
    }
    let mut out = format!("| {} |\n|{}|\n", head.join(" | "), align.join("|"));
    for r in rows {
        let cell = |v: Option<f64>, err: &Option<String>| match (v, err) {
            (Some(v), _) => value_text(v, &r.unit),
            (None, Some(e)) => format!("n/a: {}", one_line(e)),
            (None, None) => "n/a".into(),
        };
        let mut cells = vec![r.label.clone(), cell(r.toolshed, &r.toolshed_error)];
        if has_ref {
            match &r.reference_name {
                Some(name) => {
                    cells.push(format!(
                        "{} ({name})",
                        cell(r.reference, &r.reference_error)
                    ));
                    cells.push(r.ratio_text());
                }
                None => cells.extend(["–".to_owned(), "–".to_owned()]),
            }
        }
        if has_target {
            match r.target {
                Some(t) => {
                    cells.push(format!("< {}", value_text(t, &r.unit)));
                    cells.push(match r.target_met() {
                        Some(true) => "yes".into(),
                        Some(false) => "**no**".into(),
                        None => "–".into(),
                    });
                }
                None => cells.extend(["–".to_owned(), "–".to_owned()]),
            }
        }
        if has_detail {
            cells.push(r.detail.clone().unwrap_or_default());
        }
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

fn one_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    if line.chars().count() > 120 {
        format!("{}…", line.chars().take(120).collect::<String>())
    } else {
        line.to_owned()
    }
}

/// `cargo xtask bench report`: writes the report from the last results in `target/bench`.
pub(crate) fn write() -> anyhow::Result<()> {
    let dir = bench_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let run = read_json(&dir.join("run.json"));
    let sections = sections(run.as_ref());
    let machine = machine();
    let date = run
        .as_ref()
        .and_then(|r| r["finished_unix"].as_u64())
        .unwrap_or_else(now_unix);
    let command = run
        .as_ref()
        .and_then(|r| r["command"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "cargo xtask bench NAME (each), then cargo xtask bench report".into());
    let total = run.as_ref().and_then(|r| r["total_seconds"].as_f64());

    let charts = charts(&sections, &dir);

    let report_md = markdown(&sections, &machine, date, &command, total, &charts, false);
    let readme_md = markdown(&sections, &machine, date, &command, total, &charts, true);
    let report_json = json!({
        "date": utc_text(date),
        "date_unix": date,
        "command": command,
        "total_seconds": total,
        "machine": machine,
        "all_settings": run.as_ref().map(|r| r["settings"].clone()),
        "charts": charts.iter().map(|(_, p)| p.display().to_string()).collect::<Vec<_>>(),
        "benches": sections.iter().map(|s| json!({
            "name": s.name,
            "title": s.title,
            "command": s.command,
            "status": s.status,
            "reason": s.reason,
            "seconds": s.seconds,
            "settings": s.settings,
            "rows": s.rows.iter().map(Row::to_json).collect::<Vec<_>>(),
            "notes": s.notes,
        })).collect::<Vec<_>>(),
    });
    for (file, text) in [
        ("report.md", report_md),
        ("README-performance.md", readme_md),
        (
            "report.json",
            serde_json::to_string_pretty(&report_json)? + "\n",
        ),
    ] {
        let path = dir.join(file);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    for (_, chart) in &charts {
        println!("wrote {}", chart.display());
    }
    Ok(())
}

fn markdown(
    sections: &[Section],
    machine: &Value,
    date: u64,
    command: &str,
    total: Option<f64>,
    charts: &[(String, PathBuf)],
    readme: bool,
) -> String {
    let mut out = String::new();
    let h = if readme { "###" } else { "##" };
    let day = utc_text(date);
    if readme {
        out.push_str("## Performance\n\n");
        let _ = writeln!(
            out,
            "Generated by `{command}` on {} ({}, commit {}), as ratios against the tool a user \
             would otherwise pick; `cargo xtask bench readme` puts the last report here. The \
             figures move by ±10–20% from run to run on a shared 2-core machine.\n",
            machine_text(machine),
            &day[..10],
            machine["commit"].as_str().unwrap_or("?"),
        );
    } else {
        out.push_str("# Toolshed benchmark report\n\n");
        let _ = writeln!(out, "- Date: {day}");
        let _ = writeln!(out, "- Machine: {}", machine_text(machine));
        let _ = writeln!(
            out,
            "- Toolchain: {}; commit {}",
            machine["rustc"].as_str().unwrap_or("?"),
            machine["commit"].as_str().unwrap_or("?")
        );
        let _ = writeln!(out, "- Command: `{command}`");
        if let Some(t) = total {
            let _ = writeln!(out, "- Total time: {}", duration_text(t));
        }
        out.push('\n');
        out.push_str("| bench | status | time | settings |\n|---|---|---:|---|\n");
        for s in sections {
            let status = match &s.reason {
                Some(r) => format!("{}: {}", s.status, one_line(r)),
                None => s.status.clone(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                s.name,
                status.replace('|', "\\|"),
                s.seconds.map(duration_text).unwrap_or_else(|| "–".into()),
                s.settings.as_deref().unwrap_or("–")
            );
        }
        out.push('\n');
    }
    for s in sections {
        let _ = writeln!(out, "{h} {}\n", s.title);
        let _ = write!(out, "`{}`: {}", s.command, s.about);
        if let Some(settings) = &s.settings {
            let _ = write!(out, " Settings in this run: {settings}.");
        }
        out.push_str("\n\n");
        if s.rows.is_empty() {
            let why = s.reason.as_deref().unwrap_or("no results in target/bench");
            let _ = writeln!(out, "Not measured ({}): {}.\n", s.status, one_line(why));
            continue;
        }
        out.push_str(&table(&s.rows));
        out.push('\n');
        for note in &s.notes {
            let _ = writeln!(out, "- {note}");
        }
        if !s.notes.is_empty() {
            out.push('\n');
        }
        if !readme {
            for (name, path) in charts {
                if name == s.name {
                    let file = path
                        .file_name()
                        .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
                    let _ = writeln!(out, "![{} chart]({file})\n", s.title);
                }
            }
        }
    }
    out
}

/// The fonts tried for chart text, in order (Debian: fonts-dejavu-core).
const FONTS: [&str; 4] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// Draws one PNG per bench with comparable times; returns (bench, path) of those written.
fn charts(sections: &[Section], dir: &Path) -> Vec<(String, PathBuf)> {
    let Some(font) = FONTS.iter().find_map(|p| std::fs::read(p).ok()) else {
        println!(
            "warning: no chart font found (tried {}); install Debian's fonts-dejavu-core for the \
             PNG charts",
            FONTS.join(", ")
        );
        return Vec::new();
    };
    let font: &'static [u8] = Box::leak(font.into_boxed_slice());
    if plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, font)
        .is_err()
    {
        println!("warning: the chart font cannot be read; no PNG charts");
        return Vec::new();
    }
    let mut out = Vec::new();
    for s in sections {
        let bars: Vec<(&Row, f64, f64)> = s
            .rows
            .iter()
            .filter(|r| r.unit == "ms" || r.unit == "µs")
            .filter_map(|r| Some((r, r.toolshed?, r.reference?)))
            .collect();
        if bars.is_empty() {
            continue;
        }
        let path = dir.join(format!("{}.png", s.name));
        match chart::bars(&path, s.title, &bars) {
            Ok(()) => out.push((s.name.to_owned(), path)),
            Err(e) => println!("warning: chart {}: {e:#}", path.display()),
        }
    }
    out
}

/// `cargo xtask bench readme`: puts `target/bench/README-performance.md` between the README's
/// `<!-- bench:start -->` and `<!-- bench:end -->` markers.
pub(crate) fn readme() -> anyhow::Result<()> {
    let generated = bench_dir().join("README-performance.md");
    let section = std::fs::read_to_string(&generated).with_context(|| {
        format!(
            "cannot read {}: run `cargo xtask bench all` (or `bench report`) first",
            generated.display()
        )
    })?;
    let path = util::root().join("README.md");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let updated = replace_marked(&text, &section)?;
    if updated == text {
        println!("{} is up to date", path.display());
    } else {
        std::fs::write(&path, updated)
            .with_context(|| format!("cannot write {}", path.display()))?;
        println!("rewrote the marked section of {}", path.display());
    }
    Ok(())
}

const START: &str = "<!-- bench:start -->";
const END: &str = "<!-- bench:end -->";

/// `text` with what lies between the markers replaced by `section`.
fn replace_marked(text: &str, section: &str) -> anyhow::Result<String> {
    let start = text
        .find(START)
        .with_context(|| format!("README.md has no `{START}` marker"))?;
    let body = start + START.len();
    let end = body
        + text[body..]
            .find(END)
            .with_context(|| format!("README.md has no `{END}` marker after `{START}`"))?;
    anyhow::ensure!(
        text[end + END.len()..].find(START).is_none(),
        "README.md has more than one `{START}` marker"
    );
    Ok(format!(
        "{}\n{}\n{}",
        &text[..body],
        section.trim_matches('\n'),
        &text[end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_between_markers() {
        let text = "# T\n\n<!-- bench:start -->\nold\nlines\n<!-- bench:end -->\n\n## Next\n";
        let got = replace_marked(text, "## Performance\n\nnew\n").unwrap();
        assert_eq!(
            got,
            "# T\n\n<!-- bench:start -->\n## Performance\n\nnew\n<!-- bench:end -->\n\n## Next\n"
        );
        assert_eq!(
            replace_marked(&got, "## Performance\n\nnew\n").unwrap(),
            got
        );
        assert!(replace_marked("no markers", "x").is_err());
    }

    #[test]
    fn formats() {
        assert_eq!(thousands(17659.4), "17,659");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(value_text(0.17, "ms"), "0.170 ms");
        assert_eq!(value_text(293.2, "ms"), "293 ms");
        assert_eq!(times(39.4), "39×");
        assert_eq!(times(1.123), "1.12×");
        assert_eq!(utc_text(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_text(1_796_055_600), "2026-11-30 16:20 UTC");
        let row = Row {
            unit: "ms".into(),
            toolshed: Some(2.0),
            reference: Some(1.0),
            ..Row::default()
        };
        assert_eq!(row.ratio_text(), "2.0× slower");
    }
}
