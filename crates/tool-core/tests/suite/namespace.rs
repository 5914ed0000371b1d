//! The namespace view of sandboxed children, tried from inside with real programs: each row
//! is something a hostile command tries, beside a benign twin that must still work.
//!
//! Whether the kernel allows user namespaces is probed here with `unshare -Ur true`, not asked
//! of the code under test. Where it does not, these tests check the fallback instead, unless
//! `TOOLSHED_REQUIRE_SANDBOX=1` (set by `.ci/run`) makes that a failure.

// A skipped layer says so on stderr, the only place a test can.
#![allow(clippy::print_stderr)]

use std::path::PathBuf;
use std::time::Duration;

use tool_core::process::{ProcessOutput, ProcessSpec, Sandbox, run};
use tool_core::{Limits, Policy};

use super::Fixture;

/// Whether this kernel lets an unprivileged process make a user namespace, probed directly.
fn kernel_has_user_namespaces() -> bool {
    let ok = std::process::Command::new("unshare")
        .args(["-Ur", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("TOOLSHED_REQUIRE_SANDBOX").is_none_or(|v| v != "1"),
            "TOOLSHED_REQUIRE_SANDBOX=1 but this kernel refuses user namespaces (`unshare -Ur true` fails)"
        );
        eprintln!("skipped: user namespaces are not available here; checking the fallback");
    }
    ok
}

/// Runs `script` under `bash -c` in the workspace with `sandbox`.
async fn sandboxed(fx: &Fixture, sandbox: Sandbox, script: &str) -> ProcessOutput {
    let mut spec = ProcessSpec::new("bash", &fx.root).arg("-c").arg(script);
    spec.timeout = Duration::from_secs(20);
    spec.sandbox = Some(sandbox);
    run(spec, &fx.ctx(Policy::full(), Limits::default()))
        .await
        .expect("the sandboxed command starts")
}

fn view(fx: &Fixture) -> Sandbox {
    Sandbox::new(vec![fx.root.clone()], false)
}

/// Each row: a script that prints `ESCAPED` if the attack works, with the benign twin that
/// prints `OK`.
struct Row {
    what: &'static str,
    attack: String,
    twin: String,
}

#[tokio::test]
async fn the_view_holds_what_it_promises() {
    if !kernel_has_user_namespaces() {
        return;
    }
    let fx = Fixture::new();
    fx.file(".git/config", "[core]\n");
    fx.file("toolshed.toml", "[policy]\n");
    fx.file("src/main.rs", "fn main() {}\n");
    let mut sandbox = view(&fx);
    sandbox.protected = vec![fx.root.join(".git"), fx.root.join("toolshed.toml")];
    let parent = std::process::id();
    let outside = fx.outside.display().to_string();
    let rows = [
        Row {
            what: "write .git",
            attack: "echo x >> .git/config && echo ESCAPED".into(),
            twin: "echo x >> src/main.rs && echo OK".into(),
        },
        Row {
            what: "plant a hook",
            attack: "mkdir -p .git/hooks && echo 'id' > .git/hooks/pre-commit && echo ESCAPED"
                .into(),
            twin: "mkdir -p build/hooks && echo 'id' > build/hooks/x && echo OK".into(),
        },
        Row {
            what: "replace .git by a rename",
            attack: "mv .git g2 && echo ESCAPED".into(),
            twin: "mv src s2 && mv s2 src && echo OK".into(),
        },
        Row {
            what: "rewrite toolshed.toml",
            attack: "echo 'autonomy = \"full\"' > toolshed.toml && echo ESCAPED".into(),
            twin: "echo 'x' > other.toml && echo OK".into(),
        },
        Row {
            what: "read outside the workspace",
            attack: format!("cat {outside}/secret && echo ESCAPED"),
            twin: "cat src/main.rs >/dev/null && echo OK".into(),
        },
        Row {
            what: "write outside the workspace",
            attack: format!("echo x > {outside}/planted && echo ESCAPED"),
            twin: "echo x > \"$TMPDIR/x\" && echo OK".into(),
        },
        Row {
            what: "see the parent process",
            attack: format!(
                "test -e /proc/{parent}/environ && cat /proc/{parent}/environ >/dev/null && echo ESCAPED"
            ),
            twin: "test -r /proc/self/status && echo OK".into(),
        },
        Row {
            what: "count the machine's processes",
            attack: "[ \"$(ls /proc | grep -c '^[0-9]')\" -gt 5 ] && echo ESCAPED".into(),
            twin: "[ \"$$\" -eq 2 ] && echo OK".into(),
        },
        Row {
            what: "open the terminal",
            attack: ": < /dev/tty && echo ESCAPED".into(),
            twin: ": < /dev/null && head -c1 /dev/urandom >/dev/null && echo OK".into(),
        },
        Row {
            what: "write a system directory",
            attack: "touch /usr/bin/planted 2>/dev/null && echo ESCAPED; touch /etc/planted 2>/dev/null && echo ESCAPED".into(),
            twin: "test -x /usr/bin/env && test -r /etc/passwd && echo OK".into(),
        },
        Row {
            what: "write the root of the view",
            attack: "mkdir /planted 2>/dev/null && echo ESCAPED".into(),
            twin: "mkdir -p \"$TMPDIR/d\" && echo OK".into(),
        },
        Row {
            what: "unmount the protection (no capabilities left)",
            attack: "umount .git 2>/dev/null && echo ESCAPED; mount -o remount,rw .git 2>/dev/null && echo ESCAPED".into(),
            twin: "grep -q ' .git ' /proc/self/mounts 2>/dev/null; echo OK".into(),
        },
        Row {
            what: "an Internet socket",
            attack: "python3 -c 'import socket; socket.socket(); print(\"ESCAPED\")' 2>/dev/null"
                .into(),
            twin: "python3 -c 'import socket; socket.socket(socket.AF_UNIX); print(\"OK\")'".into(),
        },
    ];
    for row in &rows {
        let out = sandboxed(&fx, sandbox.clone(), &row.attack).await;
        assert!(
            !out.output.contains("ESCAPED"),
            "{}: the attack worked: {out:?}",
            row.what
        );
        let twin = sandboxed(&fx, sandbox.clone(), &row.twin).await;
        assert!(
            twin.output.contains("OK"),
            "{}: the benign twin failed: {twin:?}",
            row.what
        );
        let status = out.sandbox.expect("a status");
        assert!(status.namespaces_enforced, "{}: {status:?}", row.what);
    }
    assert_eq!(
        std::fs::read_to_string(fx.root.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert_eq!(
        std::fs::read_to_string(fx.root.join("toolshed.toml")).unwrap(),
        "[policy]\n"
    );
    assert!(!fx.root.join(".git/hooks/pre-commit").exists());
    fx.assert_outside_intact();
}

/// `$HOME` in the view is an empty directory of its own: the real one's files (`~/.ssh`,
/// `~/.aws`, `~/.gitconfig`) do not exist there, and what a command writes there is gone after.
#[tokio::test]
async fn home_is_empty_and_private() {
    if !kernel_has_user_namespaces() {
        return;
    }
    let fx = Fixture::new();
    let home = fx.base.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    let mut spec = ProcessSpec::new("bash", &fx.root).arg("-c").arg(
        "echo \"home=$HOME\"; ls -A \"$HOME\" | wc -l; cat \"$HOME/.ssh/id_ed25519\" 2>/dev/null; \
         echo kept > \"$HOME/note\" && echo wrote",
    );
    spec.env.push(("HOME".into(), home.display().to_string()));
    spec.sandbox = Some(view(&fx));
    let out = run(spec, &fx.ctx(Policy::full(), Limits::default()))
        .await
        .unwrap();
    assert!(
        out.output.contains(&format!("home={}", home.display())),
        "{out:?}"
    );
    assert!(out.output.contains("\n0\n"), "HOME is not empty: {out:?}");
    assert!(!out.output.contains("PRIVATE KEY"), "{out:?}");
    assert!(out.output.contains("wrote"), "{out:?}");
    assert!(
        !home.join("note").exists(),
        "the command wrote the real home"
    );
}

/// Denied programs are masked in the view, so indirection cannot reach them either.
#[tokio::test]
async fn masked_programs_cannot_run_by_any_name() {
    if !kernel_has_user_namespaces() {
        return;
    }
    let fx = Fixture::new();
    let touch = ["/usr/bin/touch", "/bin/touch"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("touch is installed");
    let mut sandbox = view(&fx);
    sandbox.masked = vec![touch.clone()];
    let attacks = [
        "touch a && echo ESCAPED",
        "printf touch | xargs -I{} sh -c '{} b' && echo ESCAPED",
        &format!("{} c && echo ESCAPED", touch.display()),
        &format!("cp {} t && ./t d && echo ESCAPED", touch.display()),
        "env touch e && echo ESCAPED",
    ];
    for attack in attacks {
        let out = sandboxed(&fx, sandbox.clone(), attack).await;
        assert!(!out.output.contains("ESCAPED"), "{attack}: {out:?}");
    }
    for name in ["a", "b", "c", "d", "e"] {
        assert!(!fx.root.join(name).exists(), "{name} was created");
    }
    // Twin: other programs still run.
    let out = sandboxed(
        &fx,
        sandbox,
        "cp /etc/hostname h 2>/dev/null || : > h; ls h && echo OK",
    )
    .await;
    assert!(out.output.contains("OK"), "{out:?}");
}

/// A readable root is there read-only; a directory that is neither is not there at all.
#[tokio::test]
async fn readable_roots_are_read_only_and_nothing_else_is_there() {
    if !kernel_has_user_namespaces() {
        return;
    }
    let fx = Fixture::new();
    let docs = fx.base.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("guide.md"), "GUIDE").unwrap();
    let mut sandbox = view(&fx);
    sandbox.readable = vec![docs.clone()];
    let script = format!(
        "cat {d}/guide.md; echo x > {d}/guide.md 2>/dev/null && echo ESCAPED; ls {o} 2>/dev/null && echo ESCAPED; echo done",
        d = docs.display(),
        o = fx.outside.display()
    );
    let out = sandboxed(&fx, sandbox, &script).await;
    assert!(out.output.contains("GUIDE"), "{out:?}");
    assert!(out.output.contains("done"), "{out:?}");
    assert!(!out.output.contains("ESCAPED"), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(docs.join("guide.md")).unwrap(),
        "GUIDE"
    );
}

/// Abstract Unix sockets are per network namespace: a run without network cannot reach a
/// listener of the host (a desktop bus, an X server); with network it can.
#[tokio::test]
async fn no_network_means_no_abstract_sockets_of_the_host() {
    if !kernel_has_user_namespaces() {
        return;
    }
    use std::os::linux::net::SocketAddrExt;
    let fx = Fixture::new();
    let name = format!("toolshed-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    let script = format!(
        "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"\\0{name}\"); print(\"CONNECTED\")'"
    );
    let out = sandboxed(&fx, view(&fx), &script).await;
    assert!(!out.output.contains("CONNECTED"), "{out:?}");
    let out = sandboxed(&fx, Sandbox::new(vec![fx.root.clone()], true), &script).await;
    assert!(out.output.contains("CONNECTED"), "{out:?}");
    drop(listener);
}

/// Without the network, every way out of the run but a Unix socket is closed: a TCP listener
/// and a UDP socket of the host on loopback, IPv6, an abstract Unix socket of the host,
/// netlink, packet and VM sockets; and a host program cannot reach an abstract name the run
/// listens on (round 17: without a network namespace of its own, a run listening on
/// `@/tmp/.X11-unix/X77` got an X client's cookie; Landlock's scope covers connecting only).
/// Twin: a pathname Unix socket in the workspace, which no network namespace hides, works.
#[tokio::test]
async fn without_the_network_every_socket_family_but_unix_is_closed() {
    // (The run's own abstract listener, which a host program must not reach, is below.)
    if !kernel_has_user_namespaces() {
        return;
    }
    use std::os::linux::net::SocketAddrExt;
    let fx = Fixture::new();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let uport = udp.local_addr().unwrap().port();
    let name = format!("toolshed-family-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let _abstract = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    let _path = std::os::unix::net::UnixListener::bind(fx.root.join("w.sock")).unwrap();
    let script = format!(
        r#"python3 - <<'PY'
import socket
tries = {{
    "tcp": lambda: socket.create_connection(("127.0.0.1", {port}), timeout=2),
    "udp": lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", {uport})),
    "tcp6": lambda: socket.socket(socket.AF_INET6),
    "abstract": lambda: socket.socket(socket.AF_UNIX).connect(b"\0{name}"),
    "netlink": lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0),
    "packet": lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0),
    "vsock": lambda: socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM),
    "path": lambda: socket.socket(socket.AF_UNIX).connect("w.sock"),
}}
for what, attempt in tries.items():
    try:
        attempt()
        print("OPEN", what)
    except OSError as e:
        print("closed", what, e.errno)
PY"#
    );
    let out = sandboxed(&fx, view(&fx), &script).await;
    let text = out.output.clone();
    for what in [
        "tcp", "udp", "tcp6", "abstract", "netlink", "packet", "vsock",
    ] {
        assert!(
            text.contains(&format!("closed {what} ")),
            "{what} is reachable without the network: {text}"
        );
    }
    assert!(text.contains("OPEN path"), "twin: {text}");
    let status = out.sandbox.expect("a sandbox status");
    assert!(status.namespaces.contains("net"), "{status:?}");

    // The run listens on an abstract name; the host tries to connect while it does.
    let squat = format!("toolshed-squat-test-{}", std::process::id());
    let listen = format!(
        r#"python3 - <<'PY'
import socket
s = socket.socket(socket.AF_UNIX)
s.bind(b"\0{squat}")
s.listen(1)
s.settimeout(3)
print("LISTENING", flush=True)
try:
    c, _ = s.accept()
    print("ACCEPTED")
except OSError as e:
    print("alone", e)
PY"#
    );
    let host = {
        let squat = squat.clone();
        std::thread::spawn(move || {
            let addr =
                std::os::unix::net::SocketAddr::from_abstract_name(squat.as_bytes()).unwrap();
            for _ in 0..25 {
                if std::os::unix::net::UnixStream::connect_addr(&addr).is_ok() {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            false
        })
    };
    let out = sandboxed(&fx, view(&fx), &listen).await;
    let reached = host.join().unwrap();
    assert!(out.output.contains("LISTENING"), "{out:?}");
    assert!(
        !reached && !out.output.contains("ACCEPTED"),
        "a host program reached the run's abstract socket: {out:?}"
    );
}

/// Layers that hold with or without namespaces: a session of its own (no controlling
/// terminal), the file-size limit, and (as root, where the kernel would otherwise allow it)
/// no TIOCSTI.
#[tokio::test]
async fn session_file_size_and_terminal_injection() {
    let fx = Fixture::new();
    let mut sandbox = view(&fx);
    sandbox.namespaces = false;
    let mut spec = ProcessSpec::new("bash", &fx.root).arg("-c").arg(
        "[ \"$(cut -d' ' -f6 /proc/$$/stat)\" = \"$$\" ] && echo own-session; \
         head -c 2000000 /dev/zero > big 2>/dev/null; echo \"big=$(stat -c %s big)\"; \
         head -c 500000 /dev/zero > small && echo small-ok",
    );
    spec.max_file_bytes = Some(1_000_000);
    spec.sandbox = Some(sandbox.clone());
    let out = run(spec, &fx.ctx(Policy::full(), Limits::default()))
        .await
        .unwrap();
    assert!(out.output.contains("own-session"), "{out:?}");
    assert!(out.output.contains("big=1000000"), "{out:?}");
    assert!(out.output.contains("small-ok"), "{out:?}");

    // A process that makes the pty its controlling terminal needs no privilege to type into
    // it: only the filter stands in the way. (Landlock must let the script open the pty.)
    let sti = "python3 -c '\nimport os, fcntl, termios\nm, s = os.openpty()\nname = os.ttyname(s)\npid = os.fork()\nif pid == 0:\n    os.setsid()\n    fd = os.open(name, os.O_RDWR)\n    try:\n        fcntl.ioctl(fd, termios.TIOCSTI, b\"x\")\n        print(\"INJECTED\", flush=True)\n    except OSError as e:\n        print(\"refused\", e.errno, flush=True)\n    os._exit(0)\nos.waitpid(pid, 0)\n'";
    sandbox
        .writable
        .extend(["/dev/ptmx", "/dev/pts"].map(PathBuf::from));
    let out = sandboxed(&fx, sandbox, sti).await;
    assert!(out.output.contains("refused 1"), "{out:?}");
    if std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").is_ok_and(|v| v.trim() == "1") {
        // Twin: without the sandbox the same script types into its terminal, so the refusal
        // above came from the filter.
        let mut spec = ProcessSpec::new("bash", &fx.root).arg("-c").arg(sti);
        spec.timeout = Duration::from_secs(20);
        let out = run(spec, &fx.ctx(Policy::full(), Limits::default()))
            .await
            .unwrap();
        assert!(out.output.contains("INJECTED"), "{out:?}");
    }
}

/// The parent is not dumpable once it has spawned: a child of the same user cannot read its
/// environment even without namespaces.
#[tokio::test]
async fn the_parent_environment_is_not_readable() {
    let fx = Fixture::new();
    let mut sandbox = view(&fx);
    sandbox.namespaces = false;
    let parent = std::process::id();
    let out = sandboxed(
        &fx,
        sandbox,
        &format!("cat /proc/{parent}/environ >/dev/null 2>&1 && echo ESCAPED; echo done"),
    )
    .await;
    assert!(out.output.contains("done"), "{out:?}");
    assert!(!out.output.contains("ESCAPED"), "{out:?}");
    assert!(tool_core::process::harden_self());
}

/// Landlock's scopes hold without the namespace view too (ABI 6): a command cannot signal a
/// process outside itself (toolshed, another job) or reach an abstract Unix socket made outside
/// it (an X server's, D-Bus's) when it may not use the network. Twins: signals within the
/// command, and the socket with network allowed.
#[tokio::test]
async fn landlock_scopes_fence_signals_and_abstract_sockets() {
    let abi = landlock_abi();
    if abi < 6 {
        assert!(
            std::env::var_os("TOOLSHED_REQUIRE_SANDBOX").is_none_or(|v| v != "1"),
            "TOOLSHED_REQUIRE_SANDBOX=1 but this kernel's Landlock ABI is {abi} (scopes need 6)"
        );
        eprintln!("skipped: Landlock ABI {abi} has no scopes");
        return;
    }
    use std::os::linux::net::SocketAddrExt;
    let name = format!("toolshed-scope-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    listener.set_nonblocking(true).unwrap();
    let fx = Fixture::new();
    let parent = std::process::id();
    let connect = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect(b'\\\\0{name}'); print('CONNECTED')\" 2>&1"
    );
    for namespaces in [false, true] {
        if namespaces && !kernel_has_user_namespaces() {
            continue;
        }
        let mut closed = Sandbox::new(vec![fx.root.clone()], false);
        closed.namespaces = namespaces;
        let mut open = Sandbox::new(vec![fx.root.clone()], true);
        open.namespaces = namespaces;
        let out = sandboxed(
            &fx,
            closed.clone(),
            &format!("kill -0 {parent} && echo ESCAPED; sleep 5 & kill $! && echo OK"),
        )
        .await;
        let text = out.output.clone();
        assert!(
            !text.contains("ESCAPED") && text.contains("OK"),
            "namespaces={namespaces}: {text}"
        );
        let out = sandboxed(&fx, closed, &connect).await;
        let text = out.output.clone();
        assert!(
            !text.contains("CONNECTED"),
            "namespaces={namespaces}: {text}"
        );
        if !namespaces {
            // With the network allowed (and so no network namespace) the socket is reachable.
            let out = sandboxed(&fx, open, &connect).await;
            let text = out.output.clone();
            assert!(text.contains("CONNECTED"), "twin: {text}");
        }
    }
}

/// The Landlock ABI of this kernel, probed directly (0: none).
fn landlock_abi() -> i64 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only returns
    // the ABI version; it reads and writes no memory.
    #[allow(unsafe_code)]
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    v.max(0)
}

/// A descriptor Toolshed inherited without close-on-exec (a launcher's file, an MCP client's
/// pipe) does not reach the command, with or without the namespace view; stdout still does.
#[tokio::test]
async fn inherited_descriptors_do_not_reach_the_command() {
    use std::os::fd::AsRawFd;
    let fx = Fixture::new();
    let secret = fx.outside.join("inherited.txt");
    std::fs::write(&secret, "INHERITED-SECRET").unwrap();
    let file = std::fs::File::open(&secret).unwrap();
    let fd = file.as_raw_fd();
    // SAFETY: clears FD_CLOEXEC on a descriptor this test owns, as a careless launcher would.
    #[allow(unsafe_code)]
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        assert!(libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) == 0);
    }
    for namespaces in [false, true] {
        if namespaces && !kernel_has_user_namespaces() {
            continue;
        }
        let mut sandbox = view(&fx);
        sandbox.namespaces = namespaces;
        let out = sandboxed(
            &fx,
            sandbox,
            &format!("cat <&{fd} 2>/dev/null; ls /proc/self/fd; echo VISIBLE"),
        )
        .await;
        assert!(
            !out.output.contains("INHERITED-SECRET"),
            "namespaces={namespaces}: {}",
            out.output
        );
        assert!(
            out.output.contains("VISIBLE"),
            "namespaces={namespaces}: {}",
            out.output
        );
    }
    drop(file);
}

/// Host processes whose command line holds `needle` (found from outside, in the host's /proc).
fn host_processes_with(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().filter(|n| n.parse::<u32>().is_ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        });
        if text.contains(needle) && !zombie {
            out.push(format!("{pid}: {text}"));
        }
    }
    out
}

/// A run in the view that ends by itself ends the rest with it: escapees that left the group
/// and the tree (`setsid`, a double fork, a background child) are gone when the call returns,
/// with and without the pids cgroup — the kernel ends the PID namespace with its init, so no
/// /proc search is needed to find them. Their twins: the same escapees, found by the search,
/// when the run is cut by its deadline.
#[tokio::test]
async fn escapees_end_with_the_view() {
    if !kernel_has_user_namespaces() {
        return;
    }
    for (cgroup, deadline) in [(false, false), (true, false), (false, true), (true, true)] {
        let fx = Fixture::new();
        let needle = format!("3{}", 100 + u32::from(cgroup) * 10 + u32::from(deadline));
        let script = format!(
            "setsid sh -c ': > a; exec sleep {needle}' & (setsid sh -c ': > b; exec sleep {needle}' &); \
             sh -c ': > c; exec sleep {needle}' & \
             while [ ! -e a ] || [ ! -e b ] || [ ! -e c ]; do sleep 0.01; done; echo started{}",
            if deadline { "; sleep 60" } else { "" }
        );
        let mut spec = ProcessSpec::new("bash", &fx.root).arg("-c").arg(&script);
        spec.timeout = Duration::from_secs(if deadline { 2 } else { 20 });
        spec.sandbox = Some(view(&fx));
        spec.max_processes = Some(64);
        spec.pids_cgroup = cgroup;
        let started = std::time::Instant::now();
        let out = run(spec, &fx.ctx(Policy::full(), Limits::default()))
            .await
            .expect("the sandboxed command starts");
        assert!(out.output.contains("started"), "cgroup={cgroup}: {out:?}");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "cgroup={cgroup} deadline={deadline}: the run waited for its escapees"
        );
        let left = host_processes_with(&format!("sleep {needle}"));
        assert!(
            left.is_empty(),
            "cgroup={cgroup} deadline={deadline}: escapees outlived the run: {left:?}"
        );
    }
}

/// Found in round 13: the view's `$HOME` is private and writable, and the user's `PATH` began
/// with `~/.cargo/bin`, so a command could plant a program there under a name the analysis
/// trusts (`cp /usr/bin/tar ~/.cargo/bin/ls && ls -cf x` ran tar). Entries the child could
/// write are left out of its `PATH` (beneath `$HOME`, `/tmp`, a writable root, relative
/// ones); twins: system directories stay, and so does a directory under `$HOME` that is a
/// readable root (mounted read-only).
#[tokio::test]
async fn path_holds_no_directory_the_command_can_write() {
    if !kernel_has_user_namespaces() {
        return;
    }
    let fx = Fixture::new();
    let home = fx.base.join("home");
    let tools = home.join(".tools/bin");
    std::fs::create_dir_all(&tools).unwrap();
    let path = format!(
        "{h}/.cargo/bin:/tmp/bin:{ws}/bin:bin::/usr/bin:/bin:{t}",
        h = home.display(),
        ws = fx.root.display(),
        t = tools.display()
    );
    let mut sandbox = view(&fx);
    sandbox.readable = vec![tools.clone()];
    let mut spec = ProcessSpec::new("bash", &fx.root)
        .arg("-c")
        .arg("echo \"PATH=$PATH\"");
    spec.timeout = Duration::from_secs(20);
    spec.sandbox = Some(sandbox);
    spec.env = vec![
        ("PATH".into(), path),
        ("HOME".into(), home.display().to_string()),
    ];
    let out = run(spec, &fx.ctx(Policy::full(), Limits::default()))
        .await
        .expect("the sandboxed command starts");
    let line = out
        .output
        .lines()
        .find_map(|l| l.strip_prefix("PATH="))
        .unwrap_or_else(|| panic!("{out:?}"))
        .to_string();
    assert_eq!(
        line,
        format!("/usr/bin:/bin:{}", tools.display()),
        "{out:?}"
    );
}

/// Runs share one user and one network namespace, made once per process (making a network
/// namespace per command cost half a millisecond), and nothing else: each has its own mount,
/// PID and IPC namespaces, and the shared ones are not the host's. The command is PID 2 of its
/// namespace, and `kill $$` ends it as it would outside (its twin: an exit code passes on).
#[tokio::test]
async fn runs_share_only_the_user_and_network_namespaces() {
    if !kernel_has_user_namespaces() {
        return;
    }
    let fx = Fixture::new();
    let script = "for n in user net mnt pid ipc; do printf '%s=%s\\n' $n \"$(readlink /proc/self/ns/$n)\"; done; echo self=$$";
    let ns = |out: &ProcessOutput| -> std::collections::BTreeMap<String, String> {
        out.output
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    // The two runs overlap: a namespace's number is reused once it is freed.
    let script = format!("{script}; sleep 0.5");
    let (first, second) = tokio::join!(
        sandboxed(&fx, view(&fx), &script),
        sandboxed(&fx, view(&fx), &script)
    );
    let (first, second) = (ns(&first), ns(&second));
    assert_eq!(first.len(), 6, "{first:?}");
    for kind in ["user", "net"] {
        let host = std::fs::read_link(format!("/proc/self/ns/{kind}"))
            .unwrap()
            .display()
            .to_string();
        assert_eq!(first[kind], second[kind], "{kind}: {first:?} {second:?}");
        assert_ne!(first[kind], host, "{kind} is the host's");
    }
    for kind in ["mnt", "pid", "ipc"] {
        assert_ne!(first[kind], second[kind], "{kind}: {first:?} {second:?}");
    }
    assert_eq!(
        first["self"], "2",
        "the command is PID 2 of its namespace: {first:?}"
    );

    let killed = sandboxed(&fx, view(&fx), "kill $$; echo survived").await;
    assert_eq!(killed.signal, Some(15), "{killed:?}");
    assert!(!killed.output.contains("survived"), "{killed:?}");
    let exited = sandboxed(&fx, view(&fx), "exit 7").await;
    assert_eq!(exited.exit_code, Some(7), "{exited:?}");
}

/// The session keyring of the host (a login's Kerberos ticket, an agent's secrets) is not the
/// command's: with or without the namespace view, it can neither read a key there nor leave one
/// that is still there after it ends (round 22a, S1 and S2). Twin: the command's own session
/// keyring works, for a key it adds and reads back.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_host_session_keyring_is_not_the_commands() {
    const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;
    const KEYCTL_SEARCH: libc::c_long = 10;
    const KEY_SPEC_SESSION_KEYRING: libc::c_long = -3;
    let fx = Fixture::new();
    let tag = format!("toolshed-test-{}", std::process::id());
    let ring = std::ffi::CString::new(format!("{tag}-ring")).unwrap();
    let secret = std::ffi::CString::new(format!("{tag}-secret")).unwrap();
    let planted = std::ffi::CString::new(format!("{tag}-planted")).unwrap();
    let user = c"user";
    // This thread (a current-thread runtime forks from it) joins a keyring of its own with one
    // key in it, as a login session would.
    // SAFETY: keyctl and add_key read the NUL-terminated strings and the buffer passed here.
    #[allow(unsafe_code)]
    let key = unsafe {
        if libc::syscall(libc::SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, ring.as_ptr()) < 0 {
            let err = std::io::Error::last_os_error();
            assert_eq!(err.raw_os_error(), Some(libc::ENOSYS), "{err}");
            eprintln!("skipped: this kernel has no keyrings");
            return;
        }
        libc::syscall(
            libc::SYS_add_key,
            user.as_ptr(),
            secret.as_ptr(),
            b"hunter2".as_ptr(),
            7usize,
            KEY_SPEC_SESSION_KEYRING,
        )
    };
    assert!(key > 0, "{}", std::io::Error::last_os_error());
    let probe = |script: &str| {
        format!(
            "python3 -c '
import ctypes
c = ctypes.CDLL(None, use_errno=True)
L = ctypes.c_long
def keyctl(*a): return c.syscall(L({keyctl}), *[L(x) if isinstance(x, int) else x for x in a])
def add(name, data): return c.syscall(L({add_key}), b\"user\", name.encode(), data, L(len(data)), L(-3))
def read(k):
    b = ctypes.create_string_buffer(64)
    n = keyctl(11, k, b, 64)
    return b.raw[:n] if n > 0 else None
def search(name): return keyctl(10, -3, b\"user\", name.encode(), 0)
{script}
'",
            keyctl = libc::SYS_keyctl,
            add_key = libc::SYS_add_key,
        )
    };
    let rows = [
        Row {
            what: "read the host's key by its number",
            attack: probe(&format!(
                "print(\"ESCAPED\" if read({key}) == b\"hunter2\" else \"refused\")"
            )),
            twin: probe(
                "k = add(\"own\", b\"mine\"); print(\"OK\" if read(k) == b\"mine\" else \"no\")",
            ),
        },
        Row {
            what: "find the host's key in @s",
            attack: probe(&format!(
                "print(\"ESCAPED\" if search(\"{tag}-secret\") > 0 else \"refused\")"
            )),
            twin: probe(
                "add(\"own\", b\"mine\"); print(\"OK\" if search(\"own\") > 0 else \"no\")",
            ),
        },
        Row {
            what: "plant a key in @s",
            attack: probe(&format!("print(add(\"{tag}-planted\", b\"x\"))")),
            twin: probe("print(\"OK\" if add(\"own\", b\"mine\") > 0 else \"no\")"),
        },
    ];
    let mut plain = view(&fx);
    plain.namespaces = false;
    for sandbox in [view(&fx), plain] {
        for row in &rows {
            let out = sandboxed(&fx, sandbox.clone(), &row.attack).await;
            assert!(!out.output.contains("ESCAPED"), "{}: {out:?}", row.what);
            let out = sandboxed(&fx, sandbox.clone(), &row.twin).await;
            assert!(out.output.contains("OK"), "twin of {}: {out:?}", row.what);
        }
        // SAFETY: as above.
        #[allow(unsafe_code)]
        let found = unsafe {
            libc::syscall(
                libc::SYS_keyctl,
                KEYCTL_SEARCH,
                KEY_SPEC_SESSION_KEYRING,
                user.as_ptr(),
                planted.as_ptr(),
                0,
            )
        };
        assert!(
            found < 0,
            "a key planted by the command is in the host's session keyring (namespaces: {})",
            sandbox.namespaces
        );
    }
}

/// A run's private temporary directory is gone from the host when its result returns, with or
/// without the view (round 22a, S3: removed later, a one-shot `toolshed call` exited first and
/// left it behind). Twin: while the command runs, what it writes to its /tmp is there.
#[tokio::test]
async fn the_private_tmp_is_gone_when_the_result_returns() {
    let fx = Fixture::new();
    let mut plain = view(&fx);
    plain.namespaces = false;
    let held_by = |mark: &str| -> Vec<PathBuf> {
        let prefix = format!("toolshed-run-{}-", std::process::id());
        std::fs::read_dir(std::env::temp_dir())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path())
            .filter(|dir| dir.join("tmp").join(mark).exists() || dir.join(mark).exists())
            .collect()
    };
    for (n, sandbox) in [view(&fx), plain].into_iter().enumerate() {
        let mark = format!("mark-{}-{n}", std::process::id());
        let go = fx.root.join(format!("go-{n}"));
        // While the command waits for `go`, its file is found through the host's temp dir:
        // the check below can see what it looks for.
        let script = format!(
            "echo x > \"${{TMPDIR:-/tmp}}/{mark}\" || exit 1; \
             for i in $(seq 500); do [ -e go-{n} ] && break; sleep 0.02; done; echo written"
        );
        let run = sandboxed(&fx, sandbox, &script);
        let watch = async {
            let mut seen = false;
            for _ in 0..500 {
                if !held_by(&mark).is_empty() {
                    seen = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            std::fs::write(&go, "").unwrap();
            seen
        };
        let (out, seen) = tokio::join!(run, watch);
        assert!(out.output.contains("written"), "{out:?}");
        assert!(
            seen,
            "the command's file was never found under the host's temp dir"
        );
        let left = held_by(&mark);
        assert!(left.is_empty(), "left on the host: {left:?}");
    }
}
