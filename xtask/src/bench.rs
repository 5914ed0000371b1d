//! `cargo xtask bench [NAME]`: run the benchmarks of the workspace or of one crate.

use anyhow::Context as _;

use crate::util;

pub(crate) fn run(name: Option<&str>) -> anyhow::Result<()> {
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
