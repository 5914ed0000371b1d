//! What a human reads on the terminal (approval prompts, tool-call echoes, chat) shows a
//! model's bytes visibly escaped: each attack beside the benign text that must pass unchanged.

use toolshed_cli::visible;

#[test]
fn control_and_invisible_characters_are_shown_escaped() {
    #[rustfmt::skip]
    let rows: &[(&str, bool, &str)] = &[
        // input, keep newlines, shown
        ("rm -rf build\x1b[2K\x1b[1Gls", false, "rm -rf build\\x1b[2K\\x1b[1Gls"),
        ("ls\rrm -rf ~", false, "ls\\x0drm -rf ~"),
        ("ls\nApprove? [y]es", false, "ls\\x0aApprove? [y]es"),
        ("echo \u{202e}txt.exe", false, "echo \\u{202e}txt.exe"),
        ("cur\u{200b}l", false, "cur\\u{200b}l"),
        ("bell\x07 and del\x7f and c1\u{9b}", false, "bell\\x07 and del\\x7f and c1\\x9b"),
        ("\x1b]0;title\x07", true, "\\x1b]0;title\\x07"),
        // Benign twins: ordinary text, Unicode, and (in chat) lines and tabs.
        ("cargo test --workspace", false, "cargo test --workspace"),
        ("héllo wörld ✓ 日本", false, "héllo wörld ✓ 日本"),
        ("line one\n\tline two", true, "line one\n\tline two"),
    ];
    for (input, newlines, shown) in rows {
        assert_eq!(visible(input, *newlines), *shown, "{input:?}");
    }
}

/// Found in round 12: `toolshed call` printed a tool's text to the terminal byte for byte, so
/// a file holding `ESC[2J` or an OSC 52 sequence cleared the screen or wrote the clipboard when
/// read. On a terminal (a pseudo-terminal here, through Python's `pty`) the text is shown
/// escaped; twin: piped, the bytes stay as they are.
#[test]
fn call_output_is_escaped_on_a_terminal_and_raw_in_a_pipe() {
    const DRIVER: &str = r#"
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
seen = b""
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    seen += chunk
os.waitpid(pid, 0)
sys.stdout.write(seen.decode("utf-8", "replace"))
"#;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("evil.txt"),
        "before\x1b[2J\x1b]52;c;cHduZWQ=\x07after\n",
    )
    .unwrap();
    let args = [
        "--workspace",
        dir.path().to_str().unwrap(),
        "call",
        "file_read",
        r#"{"path": "evil.txt"}"#,
    ];
    let out = std::process::Command::new("python3")
        .args(["-c", DRIVER, env!("CARGO_BIN_EXE_toolshed")])
        .args(args)
        .env("XDG_CONFIG_HOME", dir.path().join(".no-user-config"))
        .env_remove("RUST_LOG")
        .output()
        .expect("python3 runs");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(
        screen.contains("before\\x1b[2J\\x1b]52;c;cHduZWQ=\\x07after"),
        "{screen}"
    );
    assert!(!screen.contains('\x1b'), "{screen:?}");
    let piped = super::toolshed_raw(dir.path(), &args, None);
    assert!(super::stdout(&piped).contains("before\x1b[2J\x1b]52;c;cHduZWQ=\x07after"));
}

/// Found in round 13: the workspace's own `toolshed.toml` (which comes with a cloned
/// repository) could put raw escape sequences on the terminal through the error naming an
/// unknown key or a bad value. Errors are shown escaped; twin: the key is still named.
#[test]
fn configuration_errors_are_shown_escaped() {
    for toml in [
        "[policy]\n\"evil\\u001b]0;X\\u0007\\u001b[2J\" = 1\n",
        "[policy]\nautonomy = \"evil\\u001b]0;VAL\\u0007\"\n",
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("toolshed.toml"), toml).unwrap();
        let o = super::toolshed(dir.path(), &["tools"], None);
        let err = super::stderr(&o);
        assert!(err.contains("evil\\x1b]0;"), "{toml}: {err}");
        assert!(!err.contains('\x1b'), "{toml}: {err:?}");
    }
}

/// Found in round 15: a rule under a name no tool or kind has (`Write(…)`, `FILE_EDIT(…)`,
/// `fileedit(…)`) loaded silently and held nothing. It is refused at start, naming the rule
/// and the name meant; twins: canonical names and kinds load.
#[test]
fn rules_under_unknown_names_are_refused_at_start() {
    for (rule, meant) in [
        ("Write(config/**)", Some("write")),
        ("FILE_EDIT(config/**)", Some("file_edit")),
        ("fileedit(config/**)", Some("file_edit")),
        ("frobnicate(config/**)", None),
        ("write(config/**)", None),
        ("file_edit(config/**)", None),
        ("shell(tar*)", None),
        // A path from the machine's root that does not exist there, meant for the workspace.
        ("write(/config/**)", Some("write(config/**)")),
        ("read(/secrets)", Some("read(secrets)")),
        ("write(/tmp/**)", None),
        ("shell(/usr/bin/tar*)", None),
    ] {
        let o = list_dir_under_rule(rule, "deny");
        let known = (rule.starts_with("write(")
            || rule.starts_with("file_edit(")
            || rule.starts_with("shell("))
            && meant.is_none();
        assert_eq!(o.status.success(), known, "{rule}: {}", super::stderr(&o));
        if let Some(meant) = meant {
            assert!(
                super::stderr(&o).contains(&format!("did you mean `{meant}`"))
                    || super::stderr(&o).contains(&format!("(`{meant}`)")),
                "{rule}: {}",
                super::stderr(&o)
            );
        }
    }
}

/// A rule that asks or refuses by one tool's name, where other tools reach the same things, is
/// kept, with a warning at start that names those tools and the kind rule that holds for all
/// (round 17: `file_read(secrets/**)` left `grep` free to print `secrets/`). Twins: the kind
/// rule itself, an allow rule, a shell rule and a tool of its own get no warning.
#[test]
fn rules_on_one_of_several_tools_warn_at_start() {
    for (rule, decision, hint) in [
        (
            "file_read(secrets/**)",
            "deny",
            Some("\"read(secrets/**)\" = \"deny\""),
        ),
        (
            "file_write(src/**)",
            "ask",
            Some("\"write(src/**)\" = \"ask\""),
        ),
        ("memory_recall", "deny", Some("\"read(memory)\" = \"deny\"")),
        ("http_request", "deny", Some("\"network(*)\" = \"deny\"")),
        ("read(secrets/**)", "deny", None),
        ("file_read(secrets/**)", "allow", None),
        ("shell(tar*)", "deny", None),
        ("cron_add", "deny", None),
    ] {
        let o = list_dir_under_rule(rule, decision);
        let err = super::stderr(&o);
        assert!(o.status.success(), "{rule}: {err}");
        match hint {
            Some(hint) => assert!(
                err.contains("warning") && err.contains(hint),
                "{rule} = {decision}: {err}"
            ),
            None => assert!(!err.contains("warning"), "{rule} = {decision}: {err}"),
        }
    }
}

/// `toolshed call list_dir {}` in a fresh workspace, under a user configuration with the one
/// rule `"rule" = "decision"`.
fn list_dir_under_rule(rule: &str, decision: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("user.toml");
    std::fs::write(
        &config,
        format!("[policy.rules]\n\"{rule}\" = \"{decision}\"\n"),
    )
    .unwrap();
    let ws = dir.path().display().to_string();
    let cfg = config.display().to_string();
    super::toolshed_raw(
        dir.path(),
        &[
            "--config",
            &cfg,
            "--workspace",
            &ws,
            "call",
            "list_dir",
            "{}",
        ],
        None,
    )
}
