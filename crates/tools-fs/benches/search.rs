//! Whole-process search speed: `toolshed call grep` / `toolshed call find_files` against ripgrep
//! (`rg`) and fd (`fdfind`) on a 50,000-file tree. Run with `cargo xtask bench fs`.
//!
//! The tree (500 directories × 100 small source-like files, deterministic content, a
//! `.gitignore` hiding a few hundred more files) is built once in `target/bench-tree` and reused.
//! Every query runs once to warm the page cache, then `RUNS` times, alternating toolshed and the
//! reference; the table shows the median wall time of the whole process (start-up, walk, search,
//! printing into a pipe) and the number of output lines of each side, so a reader can check both
//! did the same work.
//!
//! The `toolshed` binary is `$TOOLSHED_BIN` or `target/release/toolshed`; build it first with
//! `cargo build --release -p toolshed-cli`. Its output cap is raised with a config file so that
//! no truncation makes it look faster than it is.

// The benchmark builds its tree and runs rg, fd and toolshed as whole processes.
#![allow(clippy::disallowed_methods)]
// A harness-less benchmark reports on stdout; that is its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const DIRS: usize = 500;
const FILES_PER_DIR: usize = 100;
const RUNS: usize = 5;
/// Bump when the generator changes, so an old tree is not reused.
const TREE_VERSION: u32 = 1;

/// One line of the table.
struct Row {
    label: String,
    /// The toolshed command line.
    ours: Vec<String>,
    /// How the reference is shown.
    ref_name: String,
    /// The reference command line, `None` when the program is not installed.
    reference: Option<Vec<String>>,
}

fn main() {
    // `cargo bench` passes `--bench` (and maybe a filter); there is nothing to configure.
    let target = target_dir();
    let bench_dir = target.join("bench-tree");
    let tree = bench_dir.join(format!("tree-v{TREE_VERSION}"));
    if let Err(e) = ensure_tree(&tree) {
        eprintln!(
            "search bench: cannot build the tree in {}: {e}",
            tree.display()
        );
        std::process::exit(1);
    }

    let toolshed = std::env::var_os("TOOLSHED_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("release").join("toolshed"));
    if !toolshed.is_file() {
        println!(
            "search bench: skipped: no toolshed binary at {}.\n\
             Build it with `cargo build --release -p toolshed-cli` (or set TOOLSHED_BIN), then run \
             `cargo xtask bench fs` again.",
            toolshed.display()
        );
        return;
    }
    let config = bench_dir.join("toolshed-bench.toml");
    if let Err(e) = std::fs::write(&config, "[limits]\nmax_output_bytes = 1000000000\n") {
        eprintln!("search bench: cannot write {}: {e}", config.display());
        std::process::exit(1);
    }
    let rg = find_program("rg");
    let fd = find_program("fdfind").or_else(|| find_program("fd"));

    let toolshed_call = |tool: &str, args: &str| -> Vec<String> {
        vec![
            toolshed.display().to_string(),
            "call".into(),
            tool.into(),
            args.into(),
            "--workspace".into(),
            tree.display().to_string(),
            "--config".into(),
            config.display().to_string(),
        ]
    };

    let mut rows: Vec<Row> = Vec::new();
    let grep_queries: [(&str, &str, &[&str]); 4] = [
        ("grep literal `TODO`", r#""pattern":"TODO""#, &["TODO"]),
        (
            "grep regex `fn helper_\\d+7\\(`",
            r#""pattern":"fn helper_\\d+7\\(""#,
            &["fn helper_\\d+7\\("],
        ),
        (
            "grep -i `item42_`",
            r#""pattern":"item42_","case_insensitive":true"#,
            &["-i", "item42_"],
        ),
        (
            "grep no match `zqxj_absent`",
            r#""pattern":"zqxj_absent""#,
            &["zqxj_absent"],
        ),
    ];
    for (label, fields, rg_args) in grep_queries {
        let args = format!("{{{fields},\"max_results\":1000000}}");
        let reference = rg.as_ref().map(|rg| {
            let mut v = vec![rg.display().to_string(), "-n".into()];
            v.extend(rg_args.iter().map(|s| s.to_string()));
            v
        });
        rows.push(Row {
            label: label.into(),
            ours: toolshed_call("grep", &args),
            ref_name: "rg -n".into(),
            reference,
        });
    }
    let find_args = r#"{"pattern":"*.rs","max_results":1000000}"#;
    rows.push(Row {
        label: "find_files `*.rs`".into(),
        ours: toolshed_call("find_files", find_args),
        ref_name: "fdfind -g".into(),
        reference: fd.as_ref().map(|fd| {
            vec![
                fd.display().to_string(),
                "-g".into(),
                "*.rs".into(),
                "--type".into(),
                "f".into(),
            ]
        }),
    });
    rows.push(Row {
        label: "find_files `*.rs`".into(),
        ours: toolshed_call("find_files", find_args),
        ref_name: "rg --files -g".into(),
        reference: rg.as_ref().map(|rg| {
            vec![
                rg.display().to_string(),
                "--files".into(),
                "-g".into(),
                "*.rs".into(),
            ]
        }),
    });

    // Paging from the middle of a 1 GB file: file_read scans to the line and returns one page,
    // never the whole file; sed stopping after the page is the reference.
    let big_dir = bench_dir.join("big");
    match ensure_big_file(&big_dir) {
        Ok(lines) => {
            let start = lines / 2;
            let end = start + 1999;
            let args = format!(r#"{{"path":"big.txt","offset":{start},"limit":2000}}"#);
            rows.push(Row {
                label: format!("file_read 2,000 lines at line {start} of a 1 GB file"),
                ours: vec![
                    toolshed.display().to_string(),
                    "call".into(),
                    "file_read".into(),
                    args,
                    "--workspace".into(),
                    big_dir.display().to_string(),
                    "--config".into(),
                    config.display().to_string(),
                ],
                ref_name: "sed -n 'A,Bp;Bq'".into(),
                reference: Some(vec![
                    "sed".into(),
                    "-n".into(),
                    format!("{start},{end}p;{end}q"),
                    big_dir.join("big.txt").display().to_string(),
                ]),
            });
        }
        Err(e) => println!("search bench: skipping the 1 GB file_read row: {e}"),
    }

    let mut table = String::new();
    table.push_str(&format!(
        "Tree: {} ({DIRS} dirs × {FILES_PER_DIR} files, plus ignored ones); median of {RUNS} runs, \
         whole process, output into a pipe.\n\n",
        tree.display()
    ));
    table.push_str(
        "| query | toolshed ms | reference | reference ms | ratio | output lines (toolshed / reference) |\n",
    );
    table.push_str("|---|---:|---|---:|---:|---|\n");
    let mut json_rows = Vec::new();
    for Row {
        label,
        ours,
        ref_name,
        reference,
    } in rows
    {
        let timed = match compare(&ours, reference.as_deref(), &tree) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("search bench: {label}: {e}");
                std::process::exit(1);
            }
        };
        let (ours_ms, ours_lines) = timed.ours;
        json_rows.push(json_row(
            &label,
            ours_ms,
            ours_lines,
            &ref_name,
            &timed.reference,
        ));
        match timed.reference {
            None => {
                println!(
                    "search bench: {label}: skipping the {ref_name} comparison, the program is not installed (Debian: ripgrep, fd-find)"
                );
                let _ = writeln!(
                    table,
                    "| {label} | {ours_ms:.1} | {ref_name} | n/a | n/a | {ours_lines} / n/a |"
                );
            }
            Some(Ok((ref_ms, ref_lines))) => {
                let _ = writeln!(
                    table,
                    "| {label} | {ours_ms:.1} | {ref_name} | {ref_ms:.1} | {:.2}× | {ours_lines} / {ref_lines} |",
                    ours_ms / ref_ms
                );
            }
            Some(Err(e)) => {
                println!("search bench: {label}: {ref_name} failed: {e}");
                let _ = writeln!(
                    table,
                    "| {label} | {ours_ms:.1} | {ref_name} | failed | n/a | {ours_lines} / n/a |"
                );
            }
        }
    }
    println!("\n{table}");
    write_json(&target, &tree, json_rows);
}

/// One row of `target/bench/fs.json`.
fn json_row(
    label: &str,
    ours_ms: f64,
    ours_lines: usize,
    ref_name: &str,
    reference: &Option<Result<(f64, usize), String>>,
) -> serde_json::Value {
    let (ref_ms, ref_lines, ref_error) = match reference {
        None => (
            None,
            None,
            Some("not installed (Debian: ripgrep, fd-find)".to_owned()),
        ),
        Some(Ok((ms, lines))) => (Some(*ms), Some(*lines), None),
        Some(Err(e)) => (None, None, Some(e.clone())),
    };
    serde_json::json!({
        "label": label,
        "unit": "ms",
        "toolshed": ours_ms,
        "toolshed_lines": ours_lines,
        "reference_name": ref_name,
        "reference": ref_ms,
        "reference_lines": ref_lines,
        "reference_error": ref_error,
    })
}

/// The machine-readable results, `target/bench/fs.json`, read by `cargo xtask bench report`.
fn write_json(target: &Path, tree: &Path, rows: Vec<serde_json::Value>) {
    let report = serde_json::json!({
        "bench": "fs",
        "runs": RUNS,
        "tree": tree.display().to_string(),
        "rows": rows,
    });
    let dir = target.join("bench");
    let out = dir.join("fs.json");
    let text = serde_json::to_string_pretty(&report).unwrap_or_default() + "\n";
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&out, text)) {
        Ok(()) => println!("written to {}", out.display()),
        Err(e) => eprintln!("search bench: could not write {}: {e}", out.display()),
    }
}

/// `$CARGO_TARGET_DIR`, or the workspace's `target`.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
            std::fs::canonicalize(&target).unwrap_or(target)
        }
    }
}

fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Median milliseconds and output lines of each side of one row.
struct Timed {
    ours: (f64, usize),
    /// `None` when there is no reference program.
    reference: Option<Result<(f64, usize), String>>,
}

/// Runs each side once to warm up, then `RUNS` times, alternating toolshed and the reference so
/// that load from elsewhere on the machine falls on both alike.
fn compare(ours: &[String], reference: Option<&[String]>, cwd: &Path) -> Result<Timed, String> {
    let (_, ours_lines) = run_once(ours, cwd).map_err(|e| format!("toolshed failed: {e}"))?;
    let mut reference = reference.map(|argv| run_once(argv, cwd).map(|(_, lines)| (argv, lines)));
    let mut ours_times = Vec::with_capacity(RUNS);
    let mut ref_times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        ours_times.push(
            run_once(ours, cwd)
                .map_err(|e| format!("toolshed failed: {e}"))?
                .0,
        );
        if let Some(Ok((argv, _))) = &reference {
            match run_once(argv, cwd) {
                Ok((t, _)) => ref_times.push(t),
                Err(e) => reference = Some(Err(e)),
            }
        }
    }
    Ok(Timed {
        ours: (median_ms(&mut ours_times), ours_lines),
        reference: reference.map(|r| r.map(|(_, lines)| (median_ms(&mut ref_times), lines))),
    })
}

fn median_ms(times: &mut [Duration]) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1000.0
}

/// One whole-process run: wall time and output lines. Exit status 1 counts as success
/// (ripgrep's "no match").
fn run_once(argv: &[String], cwd: &Path) -> Result<(Duration, usize), String> {
    let started = Instant::now();
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", argv[0]))?;
    let elapsed = started.elapsed();
    if !(out.status.success() || out.status.code() == Some(1)) {
        return Err(format!(
            "{} exited with {}: {}",
            argv.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok((elapsed, out.stdout.iter().filter(|b| **b == b'\n').count()))
}

/// Builds the tree unless a complete one is there.
fn ensure_tree(tree: &Path) -> std::io::Result<()> {
    let done = tree.join(".complete");
    if done.is_file() {
        return Ok(());
    }
    if tree.exists() {
        std::fs::remove_dir_all(tree)?;
    }
    println!(
        "search bench: building {DIRS} × {FILES_PER_DIR} files in {} (once)…",
        tree.display()
    );
    std::fs::create_dir_all(tree)?;
    // An (empty) `.git` makes this a repository for fd and ripgrep, which honour .gitignore only
    // inside one by default; toolshed honours it either way.
    std::fs::create_dir_all(tree.join(".git"))?;
    std::fs::write(tree.join(".gitignore"), "*.log\nbuild/\n")?;
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    for d in 0..DIRS {
        let dir = tree.join(format!("pkg{:02}/mod{d:03}", d % 50));
        std::fs::create_dir_all(&dir)?;
        for f in 0..FILES_PER_DIR {
            let ext = ["rs", "py", "js", "md"][f % 4];
            let body = source_file(d, f, &mut seed);
            std::fs::write(dir.join(format!("item{f:03}.{ext}")), body)?;
        }
        // Ignored files that would match every query: they must not be searched.
        if d % 5 == 0 {
            std::fs::write(dir.join("debug.log"), "TODO fn helper_17( item42_\n")?;
            std::fs::create_dir_all(dir.join("build"))?;
            std::fs::write(dir.join("build/gen.rs"), "TODO fn helper_17( item42_\n")?;
        }
    }
    std::fs::write(done, "")?;
    Ok(())
}

/// A small source-like file (about 1.5 KB), the same every time.
fn source_file(d: usize, f: usize, seed: &mut u64) -> String {
    let mut next = || {
        // xorshift64: deterministic and dependency-free.
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    };
    let mut s = String::with_capacity(2048);
    let _ = writeln!(s, "// Module {d}/{f}: generated for the search benchmark.");
    let _ = writeln!(s, "use std::collections::HashMap;\n");
    let _ = writeln!(
        s,
        "pub struct Item{d}_{f} {{\n    id: u32,\n    name: String,\n}}\n"
    );
    let lines = 20 + (next() % 20) as usize;
    for _ in 0..lines {
        let k = next() % 1000;
        match next() % 10 {
            0 => {
                let _ = writeln!(s, "    // TODO: revisit helper_{k} when the cache lands");
            }
            1..=4 => {
                let _ = writeln!(
                    s,
                    "fn helper_{k}(x: u32) -> u32 {{ x.wrapping_mul({k}) ^ 0x{:x} }}",
                    next() % 65536
                );
            }
            5..=7 => {
                let _ = writeln!(
                    s,
                    "    let value_{k} = map.get(&{}).copied().unwrap_or_default();",
                    next() % 100
                );
            }
            _ => {
                let _ = writeln!(s, "    assert_eq!(compute({k}), expected[{}]);", k % 17);
            }
        }
    }
    s
}

/// A 1 GB file of numbered 80-byte lines (made once); returns its line count.
fn ensure_big_file(dir: &Path) -> std::io::Result<u64> {
    const LINE: usize = 80;
    const LINES: u64 = 1_000_000_000 / LINE as u64;
    let path = dir.join("big.txt");
    if std::fs::metadata(&path).map(|m| m.len()).ok() == Some(LINES * LINE as u64) {
        return Ok(LINES);
    }
    std::fs::create_dir_all(dir)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&path)?);
    for i in 0..LINES {
        let head = format!("line {i:>12} ");
        let pad = LINE - 1 - head.len();
        out.write_all(head.as_bytes())?;
        out.write_all(
            &b"abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789"[..pad],
        )?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(LINES)
}
