//! `cargo xtask release VERSION [--crate NAME] [--dry-run | --execute]`: check, bump and
//! publish the workspace's crates.
//!
//! 1. VERSION must be semver and not lower than the current version (of the workspace, or of
//!    NAME). Equal means "release the current version as it stands": nothing is edited.
//! 2. The edits of a bump are computed with `toml_edit` (formatting and comments kept):
//!    - whole workspace: `[workspace.package] version` and the `version` requirement of every
//!      workspace crate in `[workspace.dependencies]` (and in any member's own `path` + `version`
//!      dependencies);
//!    - `--crate NAME`: NAME gets `version = "VERSION"` in its own manifest, and every crate
//!      that depends on it (transitively, normal and build dependencies) is bumped too — a patch
//!      bump when NAME's bump is semver-compatible, else the same breaking level — since its
//!      published dependency requirement changes; their requirements are updated likewise.
//! 3. `CHANGELOG.md` must have a `## [VERSION]` section (and with `--crate`, a `### NAME`
//!    part in it).
//! 4. `cargo publish --dry-run` packages and verifies every crate to publish, in dependency
//!    order against a local overlay of the others (`--workspace`, or `-p NAME -p DEPENDANT…`).
//!
//! The dry run (the default) never writes to the working tree: with edits, it copies the
//! workspace's files (`git ls-files`) to a temporary directory, edits and verifies there, and
//! prints the edits. `--execute` refuses a dirty tree; with edits it applies them (and refreshes
//! `Cargo.lock`) and stops, so they can be committed and tagged; run without edits (the
//! version already bumped) it publishes for real.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::Context as _;
use semver::Version;
use serde_json::Value;
use toml_edit::{DocumentMut, Item, Table, value};

use crate::util;

const USAGE: &str = "usage: cargo xtask release VERSION [--crate NAME] [--dry-run | --execute]";

#[derive(Debug)]
struct Args {
    version: Version,
    krate: Option<String>,
    execute: bool,
}

fn parse_args(args: &[String]) -> anyhow::Result<Args> {
    let mut version = None;
    let mut krate = None;
    let mut execute = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--dry-run" | "--execute" => {
                let this = arg == "--execute";
                anyhow::ensure!(
                    execute.is_none_or(|e| e == this),
                    "--dry-run and --execute exclude each other\n{USAGE}"
                );
                execute = Some(this);
            }
            "--crate" => {
                let name = it
                    .next()
                    .with_context(|| format!("--crate needs a NAME\n{USAGE}"))?;
                anyhow::ensure!(krate.is_none(), "--crate given twice\n{USAGE}");
                krate = Some(name.clone());
            }
            other if other.starts_with("--crate=") => {
                krate = Some(other["--crate=".len()..].to_owned());
            }
            other if other.starts_with('-') => anyhow::bail!("unknown option `{other}`\n{USAGE}"),
            other => {
                anyhow::ensure!(version.is_none(), "more than one VERSION\n{USAGE}");
                let v = other.strip_prefix('v').unwrap_or(other);
                version = Some(
                    Version::parse(v)
                        .with_context(|| format!("`{other}` is not a semver version"))?,
                );
            }
        }
    }
    Ok(Args {
        version: version.with_context(|| USAGE.to_owned())?,
        krate,
        execute: execute.unwrap_or(false),
    })
}

/// A workspace member, from `cargo metadata`.
#[derive(Debug, Clone)]
struct Member {
    name: String,
    version: Version,
    manifest: PathBuf,
    publish: bool,
    /// Workspace members it depends on (normal and build dependencies).
    deps: BTreeSet<String>,
}

/// One change to one manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Edit {
    /// Relative to the workspace root.
    file: PathBuf,
    /// A TOML path: `workspace.package.version`, `workspace.dependencies.tool-core.version`…
    key: Vec<String>,
    from: String,
    to: String,
}

impl std::fmt::Display for Edit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} = {} -> \"{}\"",
            self.file.display(),
            self.key.join("."),
            self.from,
            self.to
        )
    }
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let started = Instant::now();
    let args = parse_args(args)?;
    let root = util::root();
    let members = members()?;
    let root_manifest = read_doc(&root.join("Cargo.toml"))?;
    let workspace_version = root_manifest["workspace"]["package"]["version"]
        .as_str()
        .context("the root Cargo.toml has no [workspace.package] version")?;
    let workspace_version =
        Version::parse(workspace_version).context("[workspace.package] version is not semver")?;

    // What is released, and at which versions.
    let (current, bumps) = match &args.krate {
        None => {
            let bumps: BTreeMap<String, Version> = members
                .values()
                .filter(|m| m.publish)
                .map(|m| (m.name.clone(), args.version.clone()))
                .collect();
            (workspace_version.clone(), bumps)
        }
        Some(name) => {
            let member = members.get(name).with_context(|| {
                format!(
                    "`{name}` is not a crate of this workspace (crates: {})",
                    members
                        .values()
                        .filter(|m| m.publish)
                        .map(|m| m.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
            anyhow::ensure!(member.publish, "`{name}` has `publish = false`");
            let mut bumps = BTreeMap::new();
            bumps.insert(name.clone(), args.version.clone());
            let compatible = compatible(&member.version, &args.version);
            for dependant in dependants(&members, name) {
                let m = &members[&dependant];
                if !m.publish {
                    continue;
                }
                let next = if args.version == member.version {
                    m.version.clone()
                } else {
                    next_version(&m.version, compatible)
                };
                bumps.insert(dependant, next);
            }
            (member.version.clone(), bumps)
        }
    };
    anyhow::ensure!(
        args.version >= current,
        "{} is lower than the current version {current}",
        args.version
    );
    let what = args
        .krate
        .as_deref()
        .map_or("the workspace".to_owned(), |n| format!("`{n}`"));
    if args.version == current {
        println!("release: {what} is at {current} already: releasing it as it stands (no edits)");
    } else {
        println!("release: {what} {current} -> {}", args.version);
    }

    let edits = plan_edits(
        &root,
        &members,
        &bumps,
        &workspace_version,
        args.krate.is_none(),
    )?;
    if !edits.is_empty() {
        println!("release: edits ({}):", edits.len());
        for edit in &edits {
            println!("  {edit}");
        }
    }
    let to_publish: Vec<String> = bumps.keys().cloned().collect();
    println!(
        "release: crates to publish: {}",
        to_publish
            .iter()
            .map(|n| format!("{n} {}", bumps[n]))
            .collect::<Vec<_>>()
            .join(", ")
    );

    check_changelog(&root, &args.version, args.krate.as_deref())?;
    println!("release: CHANGELOG.md has a section for {}", args.version);

    let dirty = dirty_files(&root)?;
    if args.execute {
        anyhow::ensure!(
            dirty.is_empty(),
            "the working tree has uncommitted changes; commit or stash them first:\n  {}",
            dirty.join("\n  ")
        );
        if !edits.is_empty() {
            apply_edits(&root, &edits)?;
            refresh_lock(&root)?;
            println!(
                "release: edits applied and Cargo.lock refreshed. Commit them (and tag v{}), then \
                 run `cargo xtask release {} {}--execute` again to publish.",
                args.version,
                args.version,
                args.krate
                    .as_deref()
                    .map_or(String::new(), |n| format!("--crate {n} "))
            );
            return Ok(());
        }
        let mut publish = publish_command(&args, &to_publish, false, false);
        println!("$ {}", util::display(&publish));
        util::run_inherit(&mut publish)?;
        println!(
            "release: published in {:.0} s",
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }

    // Dry run.
    if !dirty.is_empty() {
        println!(
            "release: warning: {} uncommitted file(s); the dry run packages them as they are \
             (--allow-dirty), a real release refuses a dirty tree",
            dirty.len()
        );
    }
    forget_stale_packages(&to_publish)?;
    if edits.is_empty() {
        let mut publish = publish_command(&args, &to_publish, true, true);
        println!("$ {}", util::display(&publish));
        util::run_inherit(&mut publish).map_err(|e| crate_mode_hint(e, &args))?;
    } else {
        let copy = TempCopy::new(&root)?;
        println!(
            "release: applying the edits to a copy of the workspace in {}",
            copy.0.display()
        );
        apply_edits(&copy.0, &edits)?;
        refresh_lock(&copy.0)?;
        let target = crate::dist::target_dir()?;
        let mut publish = publish_command(&args, &to_publish, true, true);
        publish
            .current_dir(&copy.0)
            .env("CARGO_TARGET_DIR", &target);
        println!("$ (in the copy) {}", util::display(&publish));
        util::run_inherit(&mut publish).map_err(|e| crate_mode_hint(e, &args))?;
    }
    println!(
        "release: dry run of {} passed in {:.0} s; nothing was published{}",
        args.version,
        started.elapsed().as_secs_f64(),
        if edits.is_empty() {
            ""
        } else {
            " and the working tree is unchanged"
        }
    );
    Ok(())
}

/// With `--crate`, cargo verifies the crates against crates.io for every workspace crate it
/// does not publish itself: say so when the publish fails.
fn crate_mode_hint(err: anyhow::Error, args: &Args) -> anyhow::Error {
    match &args.krate {
        Some(name) => err.context(format!(
            "with --crate, the workspace crates that `{name}` and its dependants depend on must \
             already be on crates.io at the required versions (before the first release, run \
             `cargo xtask release VERSION` for the whole workspace)"
        )),
        None => err,
    }
}

/// Removes what earlier dry runs left in cargo's source cache for our crates.
///
/// A workspace dry run verifies each crate against the others' packages through a temporary
/// local registry, which cargo extracts under `$CARGO_HOME/registry/src/<hash>/NAME-VERSION`,
/// the hash depending on the registry's path. A later dry run from the same checkout path gets
/// the same hash, and cargo reuses the old extraction (it never re-extracts a directory it has
/// marked complete), so the verification would compile the previous run's sources. crates.io's
/// own cache (`index.crates.io-…`) is left alone.
fn forget_stale_packages(crates: &[String]) -> anyhow::Result<()> {
    let Some(home) = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cargo")))
    else {
        return Ok(());
    };
    let Ok(sources) = std::fs::read_dir(home.join("registry").join("src")) else {
        return Ok(());
    };
    for source in sources.flatten() {
        let name = source.file_name().to_string_lossy().into_owned();
        if name.starts_with("index.") || name.contains("crates.io") {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(source.path()) else {
            continue;
        };
        for entry in entries.flatten() {
            let dir = entry.file_name().to_string_lossy().into_owned();
            let ours = crates.iter().any(|c| {
                dir.strip_prefix(c.as_str())
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|v| v.starts_with(|ch: char| ch.is_ascii_digit()))
            });
            if ours {
                std::fs::remove_dir_all(entry.path()).with_context(|| {
                    format!("cannot remove the stale package {}", entry.path().display())
                })?;
                println!(
                    "release: removed a stale dry-run package {}",
                    entry.path().display()
                );
            }
        }
    }
    Ok(())
}

fn publish_command(args: &Args, crates: &[String], dry_run: bool, allow_dirty: bool) -> Command {
    let mut cmd = util::cargo(["publish", "--locked"]);
    if dry_run {
        cmd.arg("--dry-run");
    }
    if allow_dirty {
        cmd.arg("--allow-dirty");
    }
    if args.krate.is_none() {
        cmd.arg("--workspace");
    } else {
        for name in crates {
            cmd.args(["-p", name]);
        }
    }
    cmd
}

/// The workspace members, by name, with their workspace dependencies.
fn members() -> anyhow::Result<BTreeMap<String, Member>> {
    let out = util::cargo(["metadata", "--format-version", "1", "--no-deps"])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run `cargo metadata`")?;
    anyhow::ensure!(
        out.status.success(),
        "`cargo metadata` failed ({})",
        out.status
    );
    let meta: Value = serde_json::from_slice(&out.stdout).context("cannot parse cargo metadata")?;
    let packages = meta["packages"]
        .as_array()
        .context("no packages in cargo metadata")?;
    let names: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut members = BTreeMap::new();
    for p in packages {
        let name = p["name"]
            .as_str()
            .context("a package without a name")?
            .to_owned();
        let deps = p["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["kind"].as_str() != Some("dev"))
            .filter_map(|d| d["name"].as_str())
            .filter(|d| names.contains(d) && *d != name)
            .map(str::to_owned)
            .collect();
        let member = Member {
            version: Version::parse(p["version"].as_str().unwrap_or_default())
                .with_context(|| format!("{name}'s version is not semver"))?,
            manifest: PathBuf::from(p["manifest_path"].as_str().context("no manifest_path")?),
            // `publish: []` means publish = false; null means any registry.
            publish: !p["publish"].as_array().is_some_and(|r| r.is_empty()),
            deps,
            name: name.clone(),
        };
        members.insert(name, member);
    }
    Ok(members)
}

/// Every member that depends on `name`, directly or not (normal and build dependencies).
fn dependants(members: &BTreeMap<String, Member>, name: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut frontier = vec![name.to_owned()];
    while let Some(current) = frontier.pop() {
        for m in members.values() {
            if m.deps.contains(&current) && found.insert(m.name.clone()) {
                frontier.push(m.name.clone());
            }
        }
    }
    found.remove(name);
    found
}

/// Whether `to` is semver-compatible with `from` in Cargo's sense (same leftmost non-zero
/// component, no pre-release).
fn compatible(from: &Version, to: &Version) -> bool {
    if !to.pre.is_empty() {
        return false;
    }
    if from.major != 0 {
        from.major == to.major
    } else if from.minor != 0 {
        to.major == 0 && from.minor == to.minor
    } else {
        to.major == 0 && to.minor == 0 && from.patch == to.patch
    }
}

/// A dependant's next version: a patch release when its dependency's bump is compatible, else
/// a breaking one at its own leftmost non-zero component.
fn next_version(v: &Version, compatible: bool) -> Version {
    let base = Version::new(v.major, v.minor, v.patch);
    if compatible || (v.major == 0 && v.minor == 0) {
        Version::new(base.major, base.minor, base.patch + 1)
    } else if v.major == 0 {
        Version::new(0, v.minor + 1, 0)
    } else {
        Version::new(v.major + 1, 0, 0)
    }
}

/// The edits that give every crate in `bumps` its new version and every requirement on it the
/// new version.
fn plan_edits(
    root: &Path,
    members: &BTreeMap<String, Member>,
    bumps: &BTreeMap<String, Version>,
    workspace_version: &Version,
    whole_workspace: bool,
) -> anyhow::Result<Vec<Edit>> {
    let mut edits = Vec::new();
    let root_file = PathBuf::from("Cargo.toml");
    let root_doc = read_doc(&root.join(&root_file))?;
    // Which member a `path` dependency points at.
    let dir_of: BTreeMap<PathBuf, &str> = members
        .values()
        .filter_map(|m| Some((canonical(m.manifest.parent()?), m.name.as_str())))
        .collect();
    let target_of = |base: &Path, path: &str| dir_of.get(&canonical(&base.join(path))).copied();

    // The versions themselves.
    if whole_workspace {
        if let Some(new) = bumps.values().next()
            && new != workspace_version
        {
            edits.push(Edit {
                file: root_file.clone(),
                key: keys(&["workspace", "package", "version"]),
                from: format!("\"{workspace_version}\""),
                to: new.to_string(),
            });
        }
        // Members with a version of their own (not `version.workspace = true`).
        for (name, new) in bumps {
            let m = &members[name];
            let doc = read_doc(&m.manifest)?;
            if let Some(v) = doc["package"]["version"].as_str()
                && v != new.to_string()
            {
                edits.push(Edit {
                    file: relative(root, &m.manifest),
                    key: keys(&["package", "version"]),
                    from: format!("\"{v}\""),
                    to: new.to_string(),
                });
            }
        }
    } else {
        for (name, new) in bumps {
            let m = &members[name];
            if m.version == *new {
                continue;
            }
            let doc = read_doc(&m.manifest)?;
            let from = match doc["package"].get("version") {
                Some(item) if item.as_str().is_some() => item.to_string().trim().to_owned(),
                _ => format!("{{ workspace = true }} ({})", m.version),
            };
            edits.push(Edit {
                file: relative(root, &m.manifest),
                key: keys(&["package", "version"]),
                from,
                to: new.to_string(),
            });
        }
    }

    // Requirements: [workspace.dependencies] in the root manifest.
    if let Some(table) = root_doc["workspace"]["dependencies"].as_table_like() {
        for (key, item) in table.iter() {
            let (Some(path), Some(req)) = (
                item.get("path").and_then(Item::as_str),
                item.get("version").and_then(Item::as_str),
            ) else {
                continue;
            };
            if let Some(name) = target_of(root, path)
                && let Some(new) = bumps.get(name)
                && req != new.to_string()
            {
                edits.push(Edit {
                    file: root_file.clone(),
                    key: keys(&["workspace", "dependencies", key, "version"]),
                    from: format!("\"{req}\""),
                    to: new.to_string(),
                });
            }
        }
    }
    // Requirements written in a member's own manifest (`path` + `version`, not inherited).
    for m in members.values() {
        let dir = m.manifest.parent().unwrap_or(root);
        let doc = read_doc(&m.manifest)?;
        for (table_path, table) in dependency_tables(doc.as_table()) {
            for (key, item) in table.iter() {
                let (Some(path), Some(req)) = (
                    item.get("path").and_then(Item::as_str),
                    item.get("version").and_then(Item::as_str),
                ) else {
                    continue;
                };
                if let Some(name) = target_of(dir, path)
                    && let Some(new) = bumps.get(name)
                    && req != new.to_string()
                {
                    let mut key_path = table_path.clone();
                    key_path.extend([key.to_owned(), "version".to_owned()]);
                    edits.push(Edit {
                        file: relative(root, &m.manifest),
                        key: key_path,
                        from: format!("\"{req}\""),
                        to: new.to_string(),
                    });
                }
            }
        }
    }
    Ok(edits)
}

/// The dependency tables of a manifest, with their TOML paths: `[dependencies]`,
/// `[dev-dependencies]`, `[build-dependencies]` and their `[target.'cfg(…)'.…]` forms.
fn dependency_tables(doc: &Table) -> Vec<(Vec<String>, &dyn toml_edit::TableLike)> {
    const KINDS: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];
    let mut out = Vec::new();
    for kind in KINDS {
        if let Some(t) = doc.get(kind).and_then(Item::as_table_like) {
            out.push((vec![kind.to_owned()], t));
        }
    }
    if let Some(targets) = doc.get("target").and_then(Item::as_table_like) {
        for (cfg, item) in targets.iter() {
            for kind in KINDS {
                if let Some(t) = item.get(kind).and_then(Item::as_table_like) {
                    out.push((
                        vec!["target".to_owned(), cfg.to_owned(), kind.to_owned()],
                        t,
                    ));
                }
            }
        }
    }
    out
}

fn apply_edits(root: &Path, edits: &[Edit]) -> anyhow::Result<()> {
    let mut by_file: BTreeMap<&Path, Vec<&Edit>> = BTreeMap::new();
    for edit in edits {
        by_file.entry(&edit.file).or_default().push(edit);
    }
    for (file, edits) in by_file {
        let path = root.join(file);
        let mut doc = read_doc(&path)?;
        for edit in edits {
            let (last, parents) = edit.key.split_last().context("an empty key")?;
            let mut item: &mut Item = doc.as_item_mut();
            for k in parents {
                item = item
                    .get_mut(k)
                    .with_context(|| format!("{}: no `{}`", file.display(), edit.key.join(".")))?;
            }
            let table = item.as_table_like_mut().with_context(|| {
                format!(
                    "{}: `{}` is not in a table",
                    file.display(),
                    edit.key.join(".")
                )
            })?;
            // Replacing `version.workspace = true` (a dotted table) by a plain value.
            table.insert(last, value(edit.to.as_str()));
        }
        std::fs::write(&path, doc.to_string())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Brings the workspace members' entries of `Cargo.lock` in line with the edited manifests
/// (no other package changes).
fn refresh_lock(root: &Path) -> anyhow::Result<()> {
    let mut cmd = util::cargo(["update", "--workspace", "--offline"]);
    cmd.current_dir(root);
    println!("$ (in {}) {}", root.display(), util::display(&cmd));
    util::run_inherit(&mut cmd)
}

fn check_changelog(root: &Path, version: &Version, krate: Option<&str>) -> anyhow::Result<()> {
    let path = root.join("CHANGELOG.md");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {} (every release needs one)", path.display()))?;
    let section = changelog_section(&text, &version.to_string()).with_context(|| {
        format!("CHANGELOG.md has no `## [{version}]` section: write the release notes first")
    })?;
    if let Some(name) = krate {
        anyhow::ensure!(
            section.lines().any(|l| {
                let l = l.trim();
                l.starts_with("### ") && l[4..].trim().trim_matches('`') == name
            }),
            "CHANGELOG.md's section for {version} has no `### {name}` part"
        );
    }
    Ok(())
}

/// The text of the `## [VERSION]` (or `## VERSION`) section, up to the next `## ` heading.
fn changelog_section<'a>(text: &'a str, version: &str) -> Option<&'a str> {
    let mut start = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let heading = line.strip_prefix("## ");
        match (start, heading) {
            (None, Some(h)) => {
                let h = h.trim();
                let name = h
                    .strip_prefix('[')
                    .and_then(|r| r.split_once(']'))
                    .map_or_else(|| h.split_whitespace().next().unwrap_or(""), |(v, _)| v);
                if name == version || name.strip_prefix('v') == Some(version) {
                    start = Some(offset + line.len());
                }
            }
            (Some(s), Some(_)) => return Some(&text[s..offset]),
            _ => {}
        }
        offset += line.len();
    }
    start.map(|s| &text[s..])
}

/// `git status --porcelain` lines (empty outside a git checkout).
fn dirty_files(root: &Path) -> anyhow::Result<Vec<String>> {
    let out = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=normal"])
        .current_dir(root)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    match out {
        Ok(out) if out.status.success() => Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()),
        _ => Ok(Vec::new()),
    }
}

/// A copy of the workspace's source files (tracked and untracked-but-not-ignored) in a
/// temporary directory, removed on drop.
struct TempCopy(PathBuf);

impl TempCopy {
    fn new(root: &Path) -> anyhow::Result<TempCopy> {
        let dir = std::env::temp_dir().join(format!("toolshed-release-{}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        let copy = TempCopy(dir);
        let out = Command::new("git")
            .args([
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ])
            .current_dir(root)
            .stdin(Stdio::null())
            .output()
            .context("the dry run of a bump copies the workspace with `git ls-files`")?;
        anyhow::ensure!(
            out.status.success(),
            "`git ls-files` failed ({})",
            out.status
        );
        for file in out.stdout.split(|b| *b == 0).filter(|f| !f.is_empty()) {
            let file = Path::new(std::str::from_utf8(file).context("a non-UTF-8 path")?);
            let from = root.join(file);
            if !from.is_file() {
                continue; // deleted in the working tree
            }
            let to = copy.0.join(file);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::copy(&from, &to).with_context(|| format!("cannot copy {}", from.display()))?;
        }
        Ok(copy)
    }
}

impl Drop for TempCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn read_doc(path: &Path) -> anyhow::Result<DocumentMut> {
    std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .parse::<DocumentMut>()
        .with_context(|| format!("cannot parse {}", path.display()))
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root)
        .or_else(|_| path.strip_prefix(canonical(root)))
        .map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
}

fn keys(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| (*s).to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn parses_arguments() {
        let args = |a: &[&str]| parse_args(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let a = args(&["0.2.0"]).unwrap();
        assert_eq!((a.version, a.krate, a.execute), (v("0.2.0"), None, false));
        let a = args(&["--crate", "tools-fs", "v1.0.0-rc.1", "--execute"]).unwrap();
        assert_eq!(a.version, v("1.0.0-rc.1"));
        assert_eq!(a.krate.as_deref(), Some("tools-fs"));
        assert!(a.execute);
        assert!(args(&["0.2"]).is_err());
        assert!(args(&[]).is_err());
        assert!(args(&["0.2.0", "--dry-run", "--execute"]).is_err());
        assert!(args(&["0.2.0", "--publish"]).is_err());
    }

    #[test]
    fn semver_compatibility_and_dependant_bumps() {
        assert!(compatible(&v("0.1.0"), &v("0.1.3")));
        assert!(!compatible(&v("0.1.0"), &v("0.2.0")));
        assert!(compatible(&v("1.2.0"), &v("1.9.0")));
        assert!(!compatible(&v("1.2.0"), &v("2.0.0")));
        assert!(!compatible(&v("0.0.1"), &v("0.0.2")));
        assert_eq!(next_version(&v("0.1.0"), true), v("0.1.1"));
        assert_eq!(next_version(&v("0.1.4"), false), v("0.2.0"));
        assert_eq!(next_version(&v("1.4.2"), false), v("2.0.0"));
        assert_eq!(next_version(&v("0.0.3"), false), v("0.0.4"));
    }

    #[test]
    fn finds_changelog_sections() {
        let text = "# Changelog\n\n## [Unreleased]\n\n## [0.2.0] - 2026-01-01\n\n### tools-fs\n\n- x\n\n## 0.1.0\n\nfirst\n";
        let s = changelog_section(text, "0.2.0").unwrap();
        assert!(s.contains("### tools-fs") && !s.contains("first"));
        assert_eq!(changelog_section(text, "0.1.0").unwrap().trim(), "first");
        assert!(changelog_section(text, "0.1.1").is_none());
        assert!(changelog_section(text, "0.2").is_none());
    }

    #[test]
    fn edits_keep_the_rest_of_a_manifest() {
        let dir = std::env::temp_dir().join(format!("xtask-release-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"a\"\nversion.workspace = true # keep\nedition = \"2024\"\n\n\
             [dependencies]\nb = { path = \"../b\", version = \"0.1.0\" } # comment\n",
        )
        .unwrap();
        let edits = [
            Edit {
                file: "Cargo.toml".into(),
                key: keys(&["package", "version"]),
                from: String::new(),
                to: "0.2.0".into(),
            },
            Edit {
                file: "Cargo.toml".into(),
                key: keys(&["dependencies", "b", "version"]),
                from: String::new(),
                to: "0.3.0".into(),
            },
        ];
        apply_edits(&dir, &edits).unwrap();
        let text = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let doc: DocumentMut = text.parse().unwrap();
        assert_eq!(doc["package"]["version"].as_str(), Some("0.2.0"));
        assert_eq!(doc["dependencies"]["b"]["version"].as_str(), Some("0.3.0"));
        assert!(text.contains("# comment"), "{text}");
        assert!(text.contains("edition = \"2024\""), "{text}");
    }
}
