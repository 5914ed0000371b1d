//! `cargo xtask dist`: the release artefacts of `toolshed` in `target/dist/`.
//!
//! ```text
//! target/dist/
//!   toolshed                     release build (default features), stripped
//!   completions/toolshed.bash    bash completion (`toolshed completions bash`)
//!   completions/_toolshed        zsh completion
//!   completions/toolshed.fish    fish completion
//!   man/toolshed.1               man page
//!   SHA256SUMS                   `sha256sum -c SHA256SUMS` checks every file above
//! ```
//!
//! The completions and the man page come from the built binary itself, so they describe
//! exactly the command line that ships. The man page is `toolshed man` (roff from clap_mangen)
//! when the binary has that subcommand; otherwise it is assembled from the `--help` text of
//! every (sub)command, help2man-style.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::Context as _;
use sha2::{Digest as _, Sha256};

use crate::util;

const BIN: &str = "toolshed";

pub(crate) fn run() -> anyhow::Result<()> {
    let started = Instant::now();
    let mut build = util::cargo([
        "build",
        "--release",
        "--locked",
        "-p",
        "toolshed-cli",
        "--bin",
        BIN,
    ]);
    println!("$ {}", util::display(&build));
    util::run_inherit(&mut build)?;

    let target = target_dir()?;
    let built = target.join("release").join(BIN);
    anyhow::ensure!(
        built.is_file(),
        "the release build left no binary at {}",
        built.display()
    );
    let dist = target.join("dist");
    if dist.exists() {
        std::fs::remove_dir_all(&dist)
            .with_context(|| format!("cannot clear {}", dist.display()))?;
    }
    std::fs::create_dir_all(dist.join("completions"))?;
    std::fs::create_dir_all(dist.join("man"))?;

    // The binary, stripped into the dist directory (target/release keeps its symbols).
    let bin = dist.join(BIN);
    let built_size = file_size(&built)?;
    let stripped = strip(&built, &bin)?;
    if !stripped {
        std::fs::copy(&built, &bin)
            .with_context(|| format!("cannot copy {} to {}", built.display(), bin.display()))?;
    }
    let version = output(Command::new(&bin).arg("--version"))?
        .trim()
        .to_owned();

    // Shell completions, from the binary's own clap command.
    for (shell, name) in [
        ("bash", "toolshed.bash"),
        ("zsh", "_toolshed"),
        ("fish", "toolshed.fish"),
    ] {
        let script = output(Command::new(&bin).args(["completions", shell]))?;
        anyhow::ensure!(
            !script.trim().is_empty(),
            "`{BIN} completions {shell}` printed nothing"
        );
        write(&dist.join("completions").join(name), &script)?;
    }

    // The man page.
    let (page, man_source) = match toolshed_man(&bin) {
        Some(page) => (page, "`toolshed man` (clap_mangen)"),
        None => (
            man_from_help(&bin, &version)?,
            "assembled from --help (the binary has no `toolshed man`)",
        ),
    };
    write(&dist.join("man").join("toolshed.1"), &page)?;

    // Checksums last, over every file above, in sha256sum's format.
    let mut files = Vec::new();
    collect_files(&dist, &mut files)?;
    files.sort();
    let mut sums = String::new();
    for file in &files {
        let bytes =
            std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        let relative = file.strip_prefix(&dist).unwrap_or(file);
        writeln!(
            sums,
            "{}  {}",
            hex(&Sha256::digest(&bytes)),
            relative.display()
        )?;
    }
    write(&dist.join("SHA256SUMS"), &sums)?;

    // Summary.
    let bin_size = file_size(&bin)?;
    println!();
    println!("dist: {version} in {}", dist.display());
    println!(
        "  {BIN:<28} {}  ({})",
        megabytes(bin_size),
        if stripped {
            format!("stripped; {} before", megabytes(built_size))
        } else {
            "NOT stripped: `strip` is missing (Debian: binutils)".to_owned()
        }
    );
    for file in files.iter().filter(|f| **f != bin) {
        let relative = file.strip_prefix(&dist).unwrap_or(file);
        println!("  {:<28} {:>7} bytes", relative.display(), file_size(file)?);
    }
    println!("  {:<28} {:>7} bytes", "SHA256SUMS", sums.len());
    println!("  man page: {man_source}");
    println!(
        "dist: done in {:.0} s; check with `cd {} && sha256sum -c SHA256SUMS`",
        started.elapsed().as_secs_f64(),
        dist.display()
    );
    Ok(())
}

/// The target directory, as cargo sees it (honours `CARGO_TARGET_DIR` and `build.target-dir`).
pub(crate) fn target_dir() -> anyhow::Result<PathBuf> {
    let mut cmd = util::cargo(["metadata", "--format-version", "1", "--no-deps"]);
    let text = output(&mut cmd)?;
    let meta: serde_json::Value =
        serde_json::from_str(&text).context("cannot parse `cargo metadata`")?;
    meta["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .context("`cargo metadata` gave no target_directory")
}

/// Strips `from` into `to` with binutils' `strip`; `false` when `strip` is not installed.
fn strip(from: &Path, to: &Path) -> anyhow::Result<bool> {
    let status = Command::new("strip")
        .arg("--strip-all")
        .arg("-o")
        .arg(to)
        .arg(from)
        .stdin(Stdio::null())
        .status();
    match status {
        Ok(status) if status.success() => Ok(true),
        Ok(status) => anyhow::bail!(
            "`strip -o {} {}` failed ({status})",
            to.display(),
            from.display()
        ),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("warning: `strip` not found (Debian: binutils); the binary is not stripped");
            Ok(false)
        }
        Err(err) => Err(err).context("cannot run strip"),
    }
}

/// `toolshed man`'s roff, if the binary has that subcommand.
fn toolshed_man(bin: &Path) -> Option<String> {
    let out = Command::new(bin)
        .arg("man")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let roff = text.starts_with(".TH") || text.starts_with(".ie") || text.starts_with(".\\\"");
    (out.status.success() && roff).then_some(text)
}

/// A man page from the `--help` text of the command and of every subcommand (recursively):
/// NAME and SYNOPSIS from the top-level help, then each help verbatim in a no-fill block.
fn man_from_help(bin: &Path, version: &str) -> anyhow::Result<String> {
    let top = help(bin, &[])?;
    let about = top.lines().next().unwrap_or_default().trim().to_owned();
    let mut page = String::new();
    writeln!(
        page,
        ".\\\" Generated by `cargo xtask dist` from `{BIN} --help`."
    )?;
    writeln!(
        page,
        ".TH TOOLSHED 1 \"\" \"{}\" \"User Commands\"",
        roff_text(version)
    )?;
    writeln!(page, ".SH NAME")?;
    writeln!(page, "{BIN} \\- {}", roff_text(&about))?;
    writeln!(page, ".SH SYNOPSIS")?;
    writeln!(page, "\\fB{BIN}\\fR [\\fIOPTIONS\\fR] \\fICOMMAND\\fR")?;
    writeln!(page, ".SH DESCRIPTION")?;
    verbatim(&mut page, &top)?;
    let mut queue: Vec<Vec<String>> = subcommands(&top).into_iter().map(|c| vec![c]).collect();
    if !queue.is_empty() {
        writeln!(page, ".SH COMMANDS")?;
    }
    while !queue.is_empty() {
        let path = queue.remove(0);
        let text = help(bin, &path)?;
        writeln!(page, ".SS \"{BIN} {}\"", roff_text(&path.join(" ")))?;
        verbatim(&mut page, &text)?;
        for (i, sub) in subcommands(&text).into_iter().enumerate() {
            let mut child = path.clone();
            child.push(sub);
            queue.insert(i, child);
        }
    }
    writeln!(page, ".SH SEE ALSO")?;
    writeln!(
        page,
        "\\fB{BIN} completions\\fR SHELL prints shell completions."
    )?;
    Ok(page)
}

fn help(bin: &Path, path: &[String]) -> anyhow::Result<String> {
    output(
        Command::new(bin)
            .args(path)
            .arg("--help")
            .env("COLUMNS", "80"),
    )
}

/// The subcommands a clap help text lists under `Commands:` (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_commands = false;
    for line in help.lines() {
        if line.trim_end() == "Commands:" {
            in_commands = true;
            continue;
        }
        if !in_commands {
            continue;
        }
        if line.trim().is_empty() || !line.starts_with("  ") {
            break;
        }
        // A continuation line of a wrapped description is indented further.
        if line.starts_with("   ") {
            continue;
        }
        if let Some(name) = line.split_whitespace().next()
            && name != "help"
        {
            names.push(name.to_owned());
        }
    }
    names
}

fn verbatim(page: &mut String, text: &str) -> anyhow::Result<()> {
    writeln!(page, ".nf")?;
    for line in text.trim_end().lines() {
        writeln!(page, "\\&{}", roff_text(line))?;
    }
    writeln!(page, ".fi")?;
    Ok(())
}

/// Text safe in a roff line: backslashes escaped, hyphens as minus signs.
fn roff_text(text: &str) -> String {
    text.replace('\\', "\\e").replace('-', "\\-")
}

fn output(cmd: &mut Command) -> anyhow::Result<String> {
    let shown = format!(
        "{} {}",
        cmd.get_program().to_string_lossy(),
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let out = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot run `{shown}`"))?;
    anyhow::ensure!(out.status.success(), "`{shown}` failed ({})", out.status);
    String::from_utf8(out.stdout).with_context(|| format!("`{shown}` printed invalid UTF-8"))
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

fn file_size(path: &Path) -> anyhow::Result<u64> {
    Ok(std::fs::metadata(path)
        .with_context(|| format!("cannot stat {}", path.display()))?
        .len())
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            collect_files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// `12.34 MB (11.77 MiB)`.
fn megabytes(bytes: u64) -> String {
    format!(
        "{:.2} MB ({:.2} MiB)",
        bytes as f64 / 1e6,
        bytes as f64 / (1024.0 * 1024.0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_subcommands_in_clap_help() {
        let help = "About\n\nUsage: toolshed [OPTIONS] <COMMAND>\n\nCommands:\n  tools        List \
                    the tools\n  call         Run one call\n               continued\n  help         \
                    Print this\n\nOptions:\n  -v  More\n";
        assert_eq!(subcommands(help), ["tools", "call"]);
        assert!(subcommands("Usage: toolshed cron daemon [OPTIONS]\n").is_empty());
    }

    #[test]
    fn escapes_roff() {
        assert_eq!(roff_text(r"--poll-secs \n"), r"\-\-poll\-secs \en");
        assert_eq!(hex(&[0, 0xab, 0xff]), "00abff");
    }
}
