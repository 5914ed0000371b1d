//! Running real commands: exit codes, output kept on failure, timeouts that kill whole trees
//! (escapees included), truncation with counts, a scrubbed environment, cancellation.

use std::time::Duration;

use serde_json::json;
use tool_core::{ErrorKind, Policy};

use super::{Fixture, assert_gone, read_pid, text};

#[tokio::test]
async fn exit_codes_and_output_kept_on_failure() {
    let fx = Fixture::new();
    for (command, first_line, fragments) in [
        (
            "echo out; echo err >&2; exit 3",
            "exit code 3",
            &["out", "err"][..],
        ),
        ("echo fine", "exit code 0", &["fine"][..]),
        ("cat missing-file", "exit code 1", &["missing-file"][..]),
        (
            "echo before; kill -9 $$",
            "killed by signal 9",
            &["before"][..],
        ),
    ] {
        let out = fx.sh(Policy::full(), command).await;
        let t = text(&out);
        assert_eq!(t.lines().next(), Some(first_line), "{command}: {t}");
        for f in fragments {
            assert!(t.contains(f), "{command}: {t}");
        }
        let s = out.unwrap().structured.unwrap();
        assert_eq!(s["timed_out"], false, "{command}");
    }
}

/// The timeout kills the shell, a background grandchild, a `setsid` escapee (own session and
/// group) and a `nohup` child, and reports the output so far.
#[tokio::test]
async fn timeout_kills_the_tree_and_escapees() {
    let fx = Fixture::host_pids();
    let command = "sleep 60 & echo $! > gc.pid; \
                   setsid sleep 60 & echo $! > esc.pid; \
                   nohup sleep 60 > /dev/null 2>&1 & echo $! > nohup.pid; \
                   (setsid sh script.sh &) ; \
                   echo started; sleep 60";
    std::fs::write(
        fx.path("script.sh"),
        "echo $$ > double.pid; exec sleep 60\n",
    )
    .unwrap();
    let out = fx
        .call(
            Policy::full(),
            "shell",
            json!({"command": command, "timeout_secs": 1}),
        )
        .await;
    let t = text(&out);
    assert!(t.starts_with("killed after 1 s (timeout)"), "{t}");
    assert!(t.contains("started"), "{t}");
    let s = out.unwrap().structured.unwrap();
    assert_eq!(s["timed_out"], true);
    for f in ["gc.pid", "esc.pid", "nohup.pid", "double.pid"] {
        assert_gone(read_pid(&fx.path(f)), f);
    }
}

/// A command that finishes at once still takes its escapees with it.
#[tokio::test]
async fn escapees_die_when_the_command_ends() {
    let fx = Fixture::host_pids();
    let out = fx
        .sh(
            Policy::full(),
            "setsid sleep 60 & echo $! > esc.pid; echo done",
        )
        .await;
    assert!(text(&out).contains("done"));
    assert_gone(read_pid(&fx.path("esc.pid")), "the setsid escapee");
    // Twin: a quick command is not reported as timed out and leaves nothing behind. (Without
    // the namespace view the output says which layers hold.)
    let out = fx.sh(Policy::full(), "echo quick").await;
    let t = text(&out);
    assert!(
        t.starts_with("exit code 0\n") && t.ends_with("\nquick\n"),
        "{t}"
    );
}

#[tokio::test]
async fn large_output_is_cut_with_counts() {
    let fx = Fixture::new();
    // About 200 KB.
    let out = fx
        .sh(Policy::full(), "seq 1 40000; echo END")
        .await
        .unwrap();
    let t = out.joined_text();
    let trunc = out.truncated.as_ref().expect("truncated");
    assert!(trunc.original_bytes > 200_000, "{trunc:?}");
    assert!(t.len() < 70 * 1024, "{} bytes", t.len());
    assert!(t.starts_with("exit code 0\n1\n2\n"), "{}", &t[..40]);
    assert!(t.trim_end().ends_with("END"), "the tail is kept");
    assert!(t.contains("bytes omitted"), "the notice gives counts");
    assert_eq!(out.structured.unwrap()["total_bytes"], 228_898);
}

#[tokio::test]
async fn environment_is_scrubbed() {
    let fx = Fixture::new();
    assert!(std::env::var("CARGO_MANIFEST_DIR").is_ok());
    let t = text(&fx.sh(Policy::full(), "env").await);
    assert!(!t.contains("CARGO_"), "{t}");
    assert!(t.contains("TERM=dumb"), "{t}");
    assert!(t.contains("PATH="), "{t}");
    assert!(t.contains("GIT_PAGER=cat"), "{t}");
    assert!(t.contains("TMPDIR=/"), "a private temporary directory: {t}");
}

#[tokio::test]
async fn stdin_is_closed_and_cwd_is_confined() {
    let fx = Fixture::new();
    let t = text(&fx.sh(Policy::full(), "cat; echo eof").await);
    assert_eq!(t, "exit code 0\neof\n");
    let out = fx
        .call(
            Policy::full(),
            "shell",
            json!({"command": "pwd", "cwd": "sub"}),
        )
        .await;
    assert!(text(&out).contains("/ws/sub"));
    for cwd in ["..", "/", "f.txt", "missing"] {
        let got = fx
            .call(
                Policy::full(),
                "shell",
                json!({"command": "pwd", "cwd": cwd}),
            )
            .await;
        assert!(got.is_err(), "cwd {cwd} was accepted");
    }
}

#[tokio::test]
async fn invalid_arguments() {
    let fx = Fixture::new();
    for args in [
        json!({"command": "ls", "timeout_secs": 0}),
        json!({"command": "ls", "timeout_secs": 601}),
        json!({"command": ""}),
        json!({"command": "ls", "shell": "bash"}),
        json!({"command": "x".repeat(20_000)}),
    ] {
        let got = fx.call(Policy::full(), "shell", args.clone()).await;
        assert_eq!(got.unwrap_err().kind(), ErrorKind::InvalidArgs, "{args}");
    }
}

/// Cancelling the call kills the command and its children.
#[tokio::test]
async fn cancellation_kills_the_command() {
    let fx = Fixture::host_pids();
    let ctx = fx.ctx(Policy::full()).for_call();
    let token = ctx.cancel.clone();
    let pidfile = fx.path("c.pid");
    let call = fx.stack.call_json(
        "shell",
        r#"{"command": "sleep 60 & echo $! > c.pid; wait"}"#,
        ctx,
    );
    let cancel = async {
        let p = pidfile.clone();
        let pid = tokio::task::spawn_blocking(move || read_pid(&p))
            .await
            .unwrap();
        token.cancel();
        pid
    };
    let (got, pid) = tokio::join!(call, cancel);
    assert_eq!(got.unwrap_err().kind(), ErrorKind::Cancelled);
    assert_gone(pid, "the cancelled command's child");
}

/// The stack's deadline is the command's plus a margin, so the command's own timeout (which
/// keeps the output) fires first.
#[tokio::test]
async fn tool_timeout_leaves_a_margin() {
    use tool_core::Tool;
    let shell = tools_shell::Shell::new(
        Default::default(),
        std::sync::Arc::new(tools_shell::Jobs::new(1, 1024)),
    );
    let args: tools_shell::ShellArgs =
        serde_json::from_value(json!({"command": "ls", "timeout_secs": 10})).unwrap();
    assert_eq!(shell.timeout(&args), Some(Duration::from_secs(15)));
    let args: tools_shell::ShellArgs = serde_json::from_value(json!({"command": "ls"})).unwrap();
    assert_eq!(shell.timeout(&args), Some(Duration::from_secs(65)));
}
