use std::fs;

use super::{json, stderr, stdout, toolshed, toolshed_raw};

#[test]
fn write_read_edit_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let o = toolshed(
        ws,
        &[
            "call",
            "file_write",
            r#"{"path":"src/a.txt","content":"one\ntwo\n"}"#,
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        fs::read_to_string(ws.join("src/a.txt")).unwrap(),
        "one\ntwo\n"
    );

    let o = toolshed(ws, &["call", "file_read", r#"{"path":"src/a.txt"}"#], None);
    assert_eq!(stdout(&o), "1\tone\n2\ttwo\n");

    let o = toolshed(
        ws,
        &[
            "call",
            "file_edit",
            r#"{"path":"src/a.txt","old_string":"two","new_string":"2"}"#,
            "--json",
        ],
        None,
    );
    let v = json(&o);
    assert_eq!(v["ok"], true);
    assert!(v["structured"]["diff"].as_str().unwrap().contains("+2"));
    assert_eq!(
        fs::read_to_string(ws.join("src/a.txt")).unwrap(),
        "one\n2\n"
    );
}

#[test]
fn arguments_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("x.txt"), "hi\n").unwrap();
    let o = toolshed(
        dir.path(),
        &["call", "file_read", "-"],
        Some(r#"{"path":"x.txt"}"#),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "1\thi\n");
}

/// Each hostile call beside its benign twin: (args, expected exit code, expected error kind).
#[test]
fn exit_codes_and_error_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret"), "s3cret").unwrap();
    let ws = dir.path();
    fs::write(ws.join("ok.txt"), "fine\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), ws.join("link")).unwrap();
    fs::create_dir(ws.join("tree")).unwrap();
    fs::write(ws.join("tree/f"), "x").unwrap();
    let secret = outside.path().join("secret").display().to_string();
    let inside_abs = ws.join("ok.txt").display().to_string();

    let cases: Vec<(&str, Vec<String>, i32, Option<&str>)> = vec![
        (
            "traversal",
            vec!["file_read".into(), r#"{"path":"../x"}"#.into()],
            1,
            Some("denied"),
        ),
        (
            "benign twin",
            vec!["file_read".into(), r#"{"path":"ok.txt"}"#.into()],
            0,
            None,
        ),
        (
            "absolute outside",
            vec!["file_read".into(), format!(r#"{{"path":"{secret}"}}"#)],
            1,
            Some("denied"),
        ),
        (
            "absolute inside",
            vec!["file_read".into(), format!(r#"{{"path":"{inside_abs}"}}"#)],
            0,
            None,
        ),
        (
            "symlink out",
            vec!["file_read".into(), r#"{"path":"link"}"#.into()],
            1,
            Some("denied"),
        ),
        (
            "unknown field",
            vec!["file_read".into(), r#"{"path":"ok.txt","x":1}"#.into()],
            1,
            Some("invalid_args"),
        ),
        (
            "duplicate key",
            vec![
                "file_read".into(),
                r#"{"path":"ok.txt","path":"../x"}"#.into(),
            ],
            1,
            Some("invalid_args"),
        ),
        (
            "wrong type",
            vec![
                "file_read".into(),
                r#"{"path":"ok.txt","limit":"ten"}"#.into(),
            ],
            1,
            Some("invalid_args"),
        ),
        (
            "missing file",
            vec!["file_read".into(), r#"{"path":"nope.txt"}"#.into()],
            1,
            Some("not_found"),
        ),
        (
            "unknown tool",
            vec!["file_raed".into(), "{}".into()],
            1,
            Some("not_found"),
        ),
        (
            "needs approval",
            vec![
                "delete_file".into(),
                r#"{"path":"tree","recursive":true}"#.into(),
            ],
            1,
            Some("needs_approval"),
        ),
        (
            "not JSON",
            vec!["file_read".into(), "{path:".into()],
            1,
            Some("invalid_args"),
        ),
    ];
    for (name, args, code, kind) in cases {
        let mut argv = vec!["call".to_string()];
        argv.extend(args);
        argv.push("--json".into());
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let o = toolshed(ws, &argv, None);
        assert_eq!(
            o.status.code(),
            Some(code),
            "{name}: {}{}",
            stdout(&o),
            stderr(&o)
        );
        let v = json(&o);
        match kind {
            Some(k) => {
                assert_eq!(v["ok"], false, "{name}");
                assert_eq!(v["error"]["kind"], k, "{name}: {v}");
                assert!(
                    !v["error"]["message"].as_str().unwrap().contains("s3cret"),
                    "{name}"
                );
            }
            None => assert_eq!(v["ok"], true, "{name}: {v}"),
        }
    }
    // The refused recursive delete left the tree alone; --yes approves it.
    assert!(ws.join("tree/f").exists());
    let o = toolshed(
        ws,
        &[
            "call",
            "delete_file",
            r#"{"path":"tree","recursive":true}"#,
            "--yes",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!ws.join("tree").exists());
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let o = toolshed(dir.path(), &["call"], None);
    assert_eq!(o.status.code(), Some(2));
    let o = toolshed(dir.path(), &["frobnicate"], None);
    assert_eq!(o.status.code(), Some(2));
    let missing = dir.path().join("missing");
    let o = toolshed(&missing, &["call", "file_read", "{}"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--workspace"));
}

#[test]
fn plain_errors_go_to_stderr_with_kind() {
    let dir = tempfile::tempdir().unwrap();
    let o = toolshed(
        dir.path(),
        &["call", "file_read", r#"{"path":"../etc/passwd"}"#],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).is_empty());
    assert!(stderr(&o).starts_with("error (denied): "), "{}", stderr(&o));
}

#[test]
fn config_policy_and_limits_apply() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    fs::write(
        ws.join("toolshed.toml"),
        "[policy]\nautonomy = \"supervised\"\n[policy.rules]\n\"file_write(secrets/**)\" = \"deny\"\n\n[limits]\nmax_output_bytes = 2000\n",
    )
    .unwrap();
    // The rule denies one subtree; its twin elsewhere is written.
    let o = toolshed(
        ws,
        &[
            "call",
            "file_write",
            r#"{"path":"secrets/k","content":"x"}"#,
            "--json",
        ],
        None,
    );
    assert_eq!(json(&o)["error"]["kind"], "denied");
    let o = toolshed(
        ws,
        &[
            "call",
            "file_write",
            r#"{"path":"public/k","content":"x"}"#,
            "--json",
        ],
        None,
    );
    assert_eq!(json(&o)["ok"], true);

    // Output is cut head + tail to the configured limit, and says so.
    let long: String = (0..500).map(|i| format!("line {i}\n")).collect();
    fs::write(ws.join("long.txt"), long).unwrap();
    let o = toolshed(
        ws,
        &["call", "file_read", r#"{"path":"long.txt"}"#, "--json"],
        None,
    );
    let v = json(&o);
    assert_eq!(v["ok"], true);
    // file_read pages within the output budget and names the next call.
    let next = v["structured"]["next_offset"]
        .as_u64()
        .expect("a next offset");
    let text = v["content"][0]["text"].as_str().unwrap();
    assert!(text.len() <= 2000, "{text}");
    assert!(
        v["truncated"].is_null(),
        "the page fits, so nothing is cut: {v}"
    );
    assert!(text.contains(&format!("\"offset\": {next}")), "{text}");

    // read_only refuses writes.
    fs::write(ws.join("ro.toml"), "[policy]\nautonomy = \"read_only\"\n").unwrap();
    let ro = ws.join("ro.toml").display().to_string();
    let o = toolshed(
        ws,
        &[
            "--config",
            &ro,
            "call",
            "file_write",
            r#"{"path":"p","content":"x"}"#,
            "--json",
        ],
        None,
    );
    assert_eq!(json(&o)["error"]["kind"], "denied");
    let o = toolshed(
        ws,
        &[
            "--config",
            &ro,
            "call",
            "file_read",
            r#"{"path":"long.txt","limit":1}"#,
            "--json",
        ],
        None,
    );
    assert_eq!(json(&o)["ok"], true);
}

#[test]
fn unknown_config_keys_are_named() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("toolshed.toml"),
        "[policy]\nautonmy = \"full\"\n",
    )
    .unwrap();
    let o = toolshed(dir.path(), &["call", "file_read", r#"{"path":"x"}"#], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("autonmy"), "{}", stderr(&o));
}

/// `--workspace sqlite:FILE`: the same tools over the virtual filesystem, persisted in the file,
/// and the same refusals.
#[test]
fn sqlite_workspace_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite:{}", dir.path().join("ws.db").display());
    let run = |args: &[&str]| {
        let mut argv = vec!["--workspace", db.as_str()];
        argv.extend_from_slice(args);
        toolshed_raw(dir.path(), &argv, None)
    };
    let o = run(&[
        "call",
        "file_write",
        r#"{"path":"docs/a.md","content":"alpha\nbeta\n"}"#,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !dir.path().join("docs").exists(),
        "nothing is written to the real directory"
    );
    let o = run(&["call", "file_read", r#"{"path":"docs/a.md","offset":2}"#]);
    assert_eq!(stdout(&o), "2\tbeta\n");
    let o = run(&["call", "file_read", r#"{"path":"../etc/passwd"}"#, "--json"]);
    assert_eq!(json(&o)["error"]["kind"], "denied");
}

/// `[mcp_servers]`: another MCP server's tools (here, a second toolshed serving one tool) are
/// imported as `name__tool`, asked about in supervised mode, and run with approval.
#[test]
fn imported_mcp_tools_run_under_our_policy() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let other = tempfile::tempdir().unwrap();
    fs::write(other.path().join("far.txt"), "from the other server\n").unwrap();
    let bin = env!("CARGO_BIN_EXE_toolshed");
    // Servers are started only from the user's own configuration (see trust.rs).
    let user = other.path().join("user.toml");
    let user_arg = user.display().to_string();
    fs::write(
        &user,
        format!(
            "[mcp_servers.peer]\ncommand = \"{bin}\"\nargs = [\"--workspace\", \"{}\", \"mcp\", \"--tools\", \"file_read\"]\n",
            other.path().display()
        ),
    )
    .unwrap();
    let o = toolshed(
        ws,
        &["--config", &user_arg, "tools", "--format", "json"],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let names: Vec<String> = json(&o)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"peer__file_read".to_string()), "{names:?}");
    // Open-world tools ask in supervised mode; nobody can be asked here.
    let o = toolshed(
        ws,
        &[
            "--config",
            &user_arg,
            "call",
            "peer__file_read",
            r#"{"path":"far.txt"}"#,
            "--json",
        ],
        None,
    );
    assert_eq!(
        json(&o)["error"]["kind"],
        "needs_approval",
        "{}",
        stdout(&o)
    );
    let o = toolshed(
        ws,
        &[
            "--config",
            &user_arg,
            "call",
            "peer__file_read",
            r#"{"path":"far.txt"}"#,
            "--yes",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("from the other server"));
    // The remote server's own confinement still holds, and its refusal comes back as an error.
    let o = toolshed(
        ws,
        &[
            "--config",
            &user_arg,
            "call",
            "peer__file_read",
            r#"{"path":"../x"}"#,
            "--yes",
            "--json",
        ],
        None,
    );
    assert_eq!(json(&o)["ok"], false, "{}", stdout(&o));
}
