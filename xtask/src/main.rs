//! Maintainer tasks for the Toolshed workspace, run as `cargo xtask <task>`.
//!
//! The `xtask` alias lives in `.cargo/config.toml`. Tasks shell out to the same `cargo` that
//! runs them, always from the workspace root.

// xtask is a maintainer tool: it runs cargo, npm and benchmarks and writes docs.
#![allow(clippy::disallowed_methods)]
// This crate is a command-line program: printing progress and results is its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench;
mod ci;
mod dist;
mod docs;
mod provision;
mod release;
mod util;

use std::process::ExitCode;

const USAGE: &str = "\
Usage: cargo xtask <TASK>

Tasks:
  ci              Run every check CI runs, in order, stopping at the first failure:
                  fmt, setup, clippy, tests, docs --check, cargo deny (bans, licenses,
                  sources). setup provisions the Python MCP SDK in a virtual environment
                  under target/xtask/ (once) and detects what needs system packages or a
                  server: PostgreSQL (TOOLSHED_TEST_PG), the screenshot libraries with Xvfb
                  (or XTASK_SCREENSHOT=1|0), user namespaces; what is missing is skipped
                  with a line saying how to get it, and listed in the summary.
                  XTASK_STRICT=1 makes any skip a failure (.ci/run sets it).
                  Installs cargo-deny if missing; set XTASK_SKIP_DENY=1 to skip that step.
  docs [--check]  Regenerate docs/tools.md from `toolshed tools --format json`;
                  with --check, fail if the committed file is out of date.
  bench [NAME] [--backend sqlite|postgres]
                  Run `cargo bench --workspace`, or one benchmark:
                  core   per-call overhead of the stack (criterion)
                  fs     grep / find_files / paging against rg and fd on a 50,000-file tree
                  shell  shell overhead against a bare spawn; git against mcp-server-git
                  mcp    `toolshed mcp` against @modelcontextprotocol/server-filesystem
                  memory memory_recall / memory_store on 10k and 100k memories
                         (SQLite); with `--backend postgres`, on PostgreSQL too, side by
                         side, in a schema of the database named by TOOLSHED_BENCH_PG (or
                         TOOLSHED_TEST_PG) that is dropped afterwards
                  web    web_fetch against the reference MCP fetch server (mcp-server-fetch)
                  size   release binary size (stripped) and `toolshed tools` cold start
                  all    every bench above (shorter settings where slow), then `report`;
                         memory also on PostgreSQL when TOOLSHED_BENCH_PG or
                         TOOLSHED_TEST_PG names a database
                  report write target/bench/report.md, report.json, *.png and
                         README-performance.md from the last results
                  readme put target/bench/README-performance.md between README.md's
                         <!-- bench:start --> and <!-- bench:end --> markers
  dist            Release-build `toolshed` into target/dist/: the stripped binary, bash, zsh
                  and fish completions, a man page and SHA256SUMS; prints a summary.
  release VERSION [--crate NAME] [--dry-run | --execute]
                  Check VERSION (semver, not lower than the current one) and CHANGELOG.md,
                  compute the version bump (the workspace, or NAME and its dependants) and
                  run `cargo publish --dry-run` on the crates. A dry run (the default) edits
                  only a temporary copy; --execute applies the bump, or publishes when
                  there is nothing left to bump.
  help            Print this message.
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> anyhow::Result<()> {
    let (task, rest) = match args.split_first() {
        Some((task, rest)) => (task.as_str(), rest),
        None => ("help", &[][..]),
    };
    match task {
        "ci" => {
            no_more_args("ci", rest)?;
            ci::run()
        }
        "docs" => {
            let check = match rest {
                [] => false,
                [flag] if flag == "--check" => true,
                _ => anyhow::bail!("usage: cargo xtask docs [--check]"),
            };
            docs::run(check)
        }
        "bench" => match rest {
            [] => bench::run(None),
            [name] if !name.starts_with('-') => bench::run(Some(name)),
            [name, flag, backend] if flag == "--backend" => bench::run_with_backend(name, backend),
            _ => anyhow::bail!(
                "usage: cargo xtask bench [NAME], or cargo xtask bench memory --backend BACKEND \
                 with BACKEND {}",
                bench::MEMORY_BACKENDS
            ),
        },
        "dist" => {
            no_more_args("dist", rest)?;
            dist::run()
        }
        "release" => release::run(rest),
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            Ok(())
        }
        other => {
            eprint!("{USAGE}");
            anyhow::bail!("unknown task `{other}`")
        }
    }
}

fn no_more_args(task: &str, rest: &[String]) -> anyhow::Result<()> {
    if rest.is_empty() {
        Ok(())
    } else {
        anyhow::bail!(
            "`cargo xtask {task}` takes no arguments (got `{}`)",
            rest.join(" ")
        )
    }
}
