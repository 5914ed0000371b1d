//! Architecture invariants, checked from `cargo metadata`.

// The invariant tests run cargo metadata and read manifests.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

/// Every `tools-*` crate, `mcp` and `agent` depend on `tool-core` and on no other workspace crate.
#[test]
fn tool_families_depend_only_on_tool_core() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let members: Vec<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();

    let mut deps: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for p in packages {
        let name = p["name"].as_str().unwrap();
        let internal: Vec<&str> = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            // Normal and build dependencies; dev-dependencies may reach further for tests.
            .filter(|d| d["kind"].is_null() || d["kind"] == "build")
            .map(|d| d["name"].as_str().unwrap())
            .filter(|d| members.contains(d))
            .collect();
        deps.insert(name, internal);
    }

    let families: Vec<&str> = members
        .iter()
        .copied()
        .filter(|m| m.starts_with("tools-") || *m == "toolshed-mcp" || *m == "toolshed-agent")
        .collect();
    // The layout the design card asks for.
    for expected in [
        "tools-fs",
        "tools-shell",
        "tools-git",
        "tools-web",
        "tools-memory",
        "tools-cron",
        "tools-hw",
        "toolshed-mcp",
        "toolshed-agent",
    ] {
        assert!(
            families.contains(&expected),
            "the workspace has no `{expected}` crate"
        );
    }
    for family in families {
        assert_eq!(
            deps[family],
            vec!["tool-core"],
            "`{family}` must depend on tool-core and on no other workspace crate"
        );
    }
    assert!(
        deps["tool-core"].is_empty(),
        "tool-core depends on no workspace crate"
    );
}

/// No crate but `cli` and `xtask` uses anyhow: libraries return typed errors.
#[test]
fn libraries_do_not_use_anyhow() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if name == "cli" {
            continue;
        }
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let deps = manifest.split("[dependencies]").nth(1).unwrap_or("");
        let deps = deps.split("\n[").next().unwrap_or("");
        assert!(
            !deps.contains("anyhow"),
            "crate `{name}` must not depend on anyhow"
        );
    }
}

/// Every outbound HTTP request goes through `tool_core::net` (`Net::send` for URLs a model
/// wrote, `Endpoint` for configured ones): no crate's sources outside `tool-core/src/net`
/// build a reqwest client. clippy.toml bans the constructors too, but a local `#[allow]` would
/// silence clippy; this looks at the text.
#[test]
fn http_clients_are_built_only_in_tool_core_net() {
    const CONSTRUCTORS: &[&str] = &[
        "reqwest::Client::new",
        "Client::builder(",
        "ClientBuilder::new",
    ];
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
    let allowed = crates.join("tool-core/src/net");
    let mut stack: Vec<std::path::PathBuf> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    let mut offenders = Vec::new();
    let mut seen = 0usize;
    while let Some(path) = stack.pop() {
        if path.starts_with(&allowed) {
            continue;
        }
        if path.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            if let Some(c) = CONSTRUCTORS.iter().find(|c| line.contains(*c)) {
                offenders.push(format!("{}:{}: {c}", path.display(), n + 1));
            }
        }
    }
    assert!(seen > 0, "no sources found under {}", crates.display());
    assert!(
        offenders.is_empty(),
        "HTTP clients are built only in crates/tool-core/src/net (send through tool_core::net::Net or Endpoint):\n{}",
        offenders.join("\n")
    );
}
