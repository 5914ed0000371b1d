//! Special files and huge files: refused or bounded, never a hang, never the whole file in memory.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tool_core::{
    ErrorKind, Limits, Policy, Registry, Stack, ToolContext, ToolError, ToolOutput, Workspace,
};

fn stack() -> Stack {
    let mut r = Registry::new();
    r.register_all(tools_fs::tools(&Default::default()))
        .unwrap();
    Stack::new(r)
}

async fn call(
    stack: &Stack,
    ws: &Workspace,
    tool: &str,
    args: serde_json::Value,
) -> Result<ToolOutput, ToolError> {
    let ctx = ToolContext::new(
        ws.clone(),
        Arc::new(Policy::supervised()),
        Arc::new(Limits::default()),
    );
    // A hang would be the bug; the deadline turns it into a failure instead of a stuck test.
    tokio::time::timeout(
        Duration::from_secs(20),
        stack.call(tool, args, ctx.for_call()),
    )
    .await
    .expect("the call returns instead of hanging")
}

/// Each special file beside a regular twin that reads fine.
#[tokio::test]
async fn special_files_are_refused_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("regular.txt"), "ok\n").unwrap();
    let fifo = root.join("pipe");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let sock_path = root.join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock_path).unwrap();
    // Extra read-only roots reach /dev and /proc, as a careless configuration might.
    let ws =
        Workspace::local_with_roots(root, vec![("/dev".into(), false), ("/proc".into(), false)])
            .unwrap();
    let stack = stack();

    let cases: Vec<(&str, &str, Option<ErrorKind>)> = vec![
        ("regular file", "regular.txt", None),
        ("FIFO with no writer", "pipe", Some(ErrorKind::Failed)),
        ("unix socket", "sock", Some(ErrorKind::Failed)),
        (
            "endless character device",
            "/dev/zero",
            Some(ErrorKind::Failed),
        ),
        ("terminal device", "/dev/tty", Some(ErrorKind::Failed)),
        ("a /proc file reads bounded", "/proc/self/status", None),
    ];
    for (name, path, want) in cases {
        for tool in ["file_read", "image_info"] {
            if tool == "image_info" && want.is_none() {
                continue;
            }
            let got = call(&stack, &ws, tool, json!({"path": path})).await;
            match (want, got) {
                (None, Ok(out)) => assert!(!out.joined_text().is_empty(), "{name}"),
                (Some(kind), Err(e)) => {
                    assert_eq!(e.kind(), kind, "{name} via {tool}: {e}");
                    assert!(e.to_string().contains("not a regular file"), "{name}: {e}");
                }
                (w, g) => panic!("{name} via {tool}: wanted {w:?}, got {g:?}"),
            }
        }
    }
    // grep walks past special files instead of blocking on them.
    let out = call(&stack, &ws, "grep", json!({"pattern": "ok"}))
        .await
        .unwrap();
    assert!(
        out.joined_text().contains("regular.txt:1:ok"),
        "{}",
        out.joined_text()
    );
}

/// A 100 MB file that is one single line: the page is bounded, the line cut with a marker.
#[tokio::test]
async fn one_huge_line_is_cut_not_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = std::fs::File::create(dir.path().join("huge.txt")).unwrap();
    let block = vec![b'x'; 1 << 20];
    for _ in 0..100 {
        f.write_all(&block).unwrap();
    }
    f.write_all(b"\nsecond line\n").unwrap();
    drop(f);
    let ws = Workspace::local(dir.path()).unwrap();
    let out = call(
        &stack(),
        &ws,
        "file_read",
        json!({"path": "huge.txt", "limit": 1}),
    )
    .await
    .unwrap();
    let text = out.joined_text();
    assert!(text.len() < 16 * 1024, "{} bytes returned", text.len());
    assert!(
        text.contains("[line cut: "),
        "{}",
        &text[text.len().saturating_sub(300)..]
    );
    let cut: u64 = text
        .split("[line cut: ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert_eq!(
        cut,
        100 * (1 << 20) - 2000,
        "the marker counts the bytes left out"
    );
    assert!(
        text.contains("\"offset\": 2"),
        "the page names the next call: {text}"
    );
    // The next page reads the line after the huge one.
    let out = call(
        &stack(),
        &ws,
        "file_read",
        json!({"path": "huge.txt", "offset": 2}),
    )
    .await
    .unwrap();
    assert_eq!(out.joined_text(), "2\tsecond line\n");
}

/// Paging arithmetic at the end of a file without a final newline.
#[tokio::test]
async fn paging_at_the_end_of_a_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.txt"), "a\nb").unwrap();
    let ws = Workspace::local(dir.path()).unwrap();
    let s = stack();
    let cases: Vec<(u64, Result<&str, &str>)> = vec![
        (1, Ok("1\ta\n2\tb\n")),
        (2, Ok("2\tb\n")),
        (3, Err("has only 2 lines")),
    ];
    for (offset, want) in cases {
        let got = call(
            &s,
            &ws,
            "file_read",
            json!({"path": "t.txt", "offset": offset}),
        )
        .await;
        match (got, want) {
            (Ok(out), Ok(text)) => assert_eq!(out.joined_text(), text, "offset {offset}"),
            (Err(e), Err(msg)) => assert!(e.to_string().contains(msg), "offset {offset}: {e}"),
            (g, w) => panic!("offset {offset}: got {g:?}, want {w:?}"),
        }
    }
}

/// The write size cap, for both tools that write content: one byte over is refused with nothing
/// written, exactly at the cap succeeds.
#[tokio::test]
async fn write_size_cap_with_benign_twin() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::local(dir.path()).unwrap();
    let limits = Limits {
        max_write_bytes: 16,
        ..Limits::default()
    };
    let ctx = ToolContext::new(ws, Arc::new(Policy::supervised()), Arc::new(limits));
    let s = stack();
    for tool in ["file_write", "file_append"] {
        let path = format!("{tool}.txt");
        let over = s
            .call(
                tool,
                json!({"path": path, "content": "x".repeat(17)}),
                ctx.for_call(),
            )
            .await
            .unwrap_err();
        assert_eq!(over.kind(), ErrorKind::InvalidArgs, "{tool}: {over}");
        assert!(over.to_string().contains("16-byte limit"), "{tool}: {over}");
        assert!(
            !dir.path().join(&path).exists(),
            "{tool} wrote despite the refusal"
        );
        s.call(
            tool,
            json!({"path": path, "content": "y".repeat(16)}),
            ctx.for_call(),
        )
        .await
        .unwrap();
        assert_eq!(
            std::fs::read(dir.path().join(&path)).unwrap().len(),
            16,
            "{tool}"
        );
    }
}
