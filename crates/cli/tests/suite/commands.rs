use super::{json, stderr, stdout, toolshed};

#[test]
fn tools_lists_every_tool_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let registry = toolshed_cli::registry().unwrap();
    let names = registry.names();
    assert!(names.contains(&"file_read"));

    let o = toolshed(dir.path(), &["tools"], None);
    assert!(o.status.success());
    for name in &names {
        assert!(stdout(&o).contains(name), "table lacks {name}");
    }
    for (format, name_of) in [
        ("json", "/name"),
        ("mcp", "/name"),
        ("anthropic", "/name"),
        ("gemini", "/name"),
        ("openai", "/function/name"),
    ] {
        let o = toolshed(dir.path(), &["tools", "--format", format], None);
        assert!(o.status.success(), "{format}: {}", stderr(&o));
        let v = json(&o);
        let listed: Vec<&str> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.pointer(name_of).and_then(|n| n.as_str()).unwrap())
            .collect();
        assert_eq!(listed, names, "{format}");
    }
}

#[test]
fn profiles_rename_tools_and_arguments() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.py"), "def old():\n    pass\n").unwrap();
    // SneakyCode names and argument names.
    let o = toolshed(
        dir.path(),
        &[
            "--profile",
            "sneakycode",
            "call",
            "read_file",
            r#"{"file_path":"a.py"}"#,
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("def old"));
    let o = toolshed(
        dir.path(),
        &[
            "--profile",
            "sneakycode",
            "call",
            "str_replace",
            r#"{"file_path":"a.py","old_str":"old","new_str":"new"}"#,
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        std::fs::read_to_string(dir.path().join("a.py"))
            .unwrap()
            .contains("def new")
    );
    // hrns: an edit whose old text is missing is an error, not a silent "OK".
    let o = toolshed(
        dir.path(),
        &[
            "--profile",
            "hrns",
            "call",
            "write_file",
            r#"{"fileName":"a.py","oldString":"absent","newString":"x"}"#,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    // The canonical name is not exposed under a profile that renames it.
    let o = toolshed(
        dir.path(),
        &[
            "--profile",
            "hrns",
            "call",
            "file_read",
            r#"{"path":"a.py"}"#,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    let o = toolshed(dir.path(), &["--profile", "nosuch", "tools"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("sneakycode"));
}

#[test]
fn completions_and_help() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let o = toolshed(dir.path(), &["completions", shell], None);
        assert!(o.status.success());
        assert!(stdout(&o).contains("toolshed"));
    }
    let o = toolshed(dir.path(), &["call", "--help"], None);
    assert!(o.status.success());
    for word in [
        "--yes",
        "--json",
        "--workspace",
        "--config",
        "--profile",
        "Exit status",
    ] {
        assert!(stdout(&o).contains(word), "call --help lacks {word}");
    }
}

#[test]
fn tour_runs_and_shows_a_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let o = toolshed(dir.path(), &["tour"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("error (denied)"));
    assert!(out.contains("error (needs_approval)"));
    assert!(out.contains("+toolshed"));
}

#[test]
fn a_reader_that_stops_early_ends_the_output_quietly() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    // The JSON listing is larger than a pipe buffer, so the writer meets the closed pipe.
    for format in ["json", "table"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolshed"))
            .args(["--workspace"])
            .arg(dir.path())
            .args(["tools", "--format", format])
            .env("XDG_CONFIG_HOME", dir.path().join(".no-user-config"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 16];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        // The read end is closed here, as `| head -c 16` would.
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{format}: {:?} {err}", out.status);
        assert!(!err.contains("panicked"), "{format}: {err}");
    }
}

/// `toolshed doctor` reports every layer, and its verdict agrees with the kernel as probed here
/// (`unshare -Ur true`), not as the code under test says.
#[test]
fn doctor_reports_each_layer_and_agrees_with_the_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolshed(dir.path(), &["doctor"], None);
    let text = stdout(&out);
    for layer in [
        "namespaces",
        "landlock",
        "seccomp",
        "session",
        "dumpable",
        "file size",
        "processes",
    ] {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().nth(1) == Some(layer)
                    || l.contains(&format!(" {layer} "))),
            "no line for {layer}: {text}"
        );
    }
    let userns = std::process::Command::new("unshare")
        .args(["-Ur", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let namespaces_line = text
        .lines()
        .find(|l| l.contains(" namespaces "))
        .unwrap_or_default();
    assert_eq!(
        namespaces_line.starts_with("ok"),
        userns,
        "{namespaces_line}"
    );
    if !userns {
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(text.contains("every command asks first"), "{text}");
    }
    // The workspace's own file cannot switch the sandbox off: doctor names the ignored key.
    std::fs::write(
        dir.path().join("toolshed.toml"),
        "[shell]\nsandbox = false\n",
    )
    .unwrap();
    let out = toolshed(dir.path(), &["doctor"], None);
    assert!(
        stdout(&out).contains("ignored: shell.sandbox"),
        "{}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("switched off"), "{}", stdout(&out));
    // Twin: with the sandbox switched off in the user's configuration, it says so and exits 1.
    let user = tempfile::tempdir().unwrap();
    let user_file = user.path().join("config.toml");
    std::fs::write(&user_file, "[shell]\nsandbox = false\n").unwrap();
    let user_arg = user_file.display().to_string();
    let out = toolshed(dir.path(), &["--config", &user_arg, "doctor"], None);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("switched off"), "{}", stdout(&out));
}

/// A sandboxed command does not outlive a `toolshed` that is killed outright (SIGKILL, when
/// nothing of it can clean up): the namespace dies with it.
#[test]
fn a_killed_toolshed_takes_its_sandboxed_command_with_it() {
    let userns = std::process::Command::new("unshare")
        .args(["-Ur", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !userns {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let marker = format!(
        "{}.{}",
        300 + std::process::id() % 600,
        std::process::id() % 97
    );
    let args = serde_json::json!({ "command": format!("sleep {marker}; echo late") }).to_string();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .arg("--workspace")
        .arg(dir.path())
        .args(["call", "shell", &args])
        .env("XDG_CONFIG_HOME", dir.path().join(".no-user-config"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sleeping = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .any(|c| c == format!("sleep\0{marker}\0").as_bytes())
    };
    let started = std::time::Instant::now();
    while !sleeping() && started.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(sleeping(), "the command never started");
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = std::time::Instant::now();
    while sleeping() && killed.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!sleeping(), "the sandboxed command outlived its toolshed");
}
