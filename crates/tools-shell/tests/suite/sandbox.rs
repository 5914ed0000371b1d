//! The OS sandbox as measured on this machine: Landlock keeps writes inside the workspace and the
//! private temporary directory; seccomp refuses Internet sockets unless the command is a network
//! command the policy allowed. Where the kernel lacks them, the output says so.

use tool_core::Policy;

use super::{Fixture, text};

fn kernel_has_landlock() -> bool {
    tool_core::process::probe_sandbox().filesystem_enforced
}

#[tokio::test]
async fn landlock_blocks_writes_outside_the_workspace() {
    let fx = Fixture::new();
    let outside = fx.outside.join("planted");
    // The analysis cannot see what a script writes: only the sandbox stands in the way.
    std::fs::write(
        fx.path("w.sh"),
        format!(
            "touch {} && echo outside-written\ntouch inside.txt && echo inside-written\ntouch \"$TMPDIR/t\" && echo tmp-written\n",
            outside.display()
        ),
    )
    .unwrap();
    let out = fx.sh(Policy::full(), "sh w.sh").await;
    let t = text(&out);
    let s = out.unwrap().structured.unwrap();
    if !kernel_has_landlock() {
        assert!(t.contains("not available"), "the output says so: {t}");
        return;
    }
    assert!(
        s["sandbox"]["landlock"]
            .as_str()
            .unwrap()
            .starts_with("enforced"),
        "{s}"
    );
    assert!(
        !outside.exists(),
        "the sandbox let a write outside through: {t}"
    );
    assert!(!t.contains("outside-written"), "{t}");
    assert!(t.contains("inside-written"), "{t}");
    assert!(t.contains("tmp-written"), "{t}");
    assert!(fx.path("inside.txt").exists());
}

#[tokio::test]
async fn seccomp_blocks_sockets_unless_network_is_allowed() {
    let fx = Fixture::new();
    let out = fx
        .sh(
            Policy::full(),
            "python3 -c 'import socket; socket.socket(); print(\"inet-open\")'",
        )
        .await;
    let t = text(&out);
    assert!(!t.contains("inet-open"), "{t}");
    assert!(
        t.contains("PermissionError") || t.contains("Permission denied"),
        "{t}"
    );
    // Twin: Unix sockets still work.
    let out = fx
        .sh(
            Policy::full(),
            "python3 -c 'import socket; socket.socket(socket.AF_UNIX); print(\"unix-open\")'",
        )
        .await;
    assert!(text(&out).contains("unix-open"));
}

/// A recognised network command that the policy allows gets the network: curl reaches a
/// listener on loopback.
#[tokio::test]
async fn allowed_network_commands_can_connect() {
    let fx = Fixture::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 1024];
        let _ = conn.read(&mut buf);
        let _ = conn.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello");
    });
    let out = fx
        .sh(Policy::full(), &format!("curl -s http://127.0.0.1:{port}/"))
        .await;
    let t = text(&out);
    assert!(t.contains("hello"), "{t}");
    server.join().unwrap();
    // Under supervised, a network command asks.
    let got = fx
        .sh(
            Policy::supervised(),
            &format!("curl -s http://127.0.0.1:{port}/"),
        )
        .await;
    assert!(got.is_err());
}
