//! serial over a real pseudo-terminal pair: the tool opens the pty's slave as its port, the
//! test plays the device on the master side. Write, read with a timeout, query (write, then
//! read up to a delimiter), port listing, and the argument table.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use rustix::termios::{OptionalActions, tcgetattr, tcsetattr};
use serde_json::{Value, json};
use tool_core::{ErrorKind, Policy};
use tools_hw::Config;

use super::{FakeDevices, Fixture, Want, allowing, check};

/// A pseudo-terminal pair: the master held here, the slave's path for the tool.
struct Pty {
    master: OwnedFd,
    path: String,
}

impl Pty {
    fn open() -> Arc<Pty> {
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let path = ptsname(&master, Vec::new()).unwrap().into_string().unwrap();
        // Raw from the start, so that nothing is echoed back or held for a whole line before the
        // tool opens the port (which makes it raw too).
        let mut t = tcgetattr(&master).unwrap();
        t.make_raw();
        tcsetattr(&master, OptionalActions::Now, &t).unwrap();
        Arc::new(Pty { master, path })
    }

    /// Writes all of `bytes` as the device.
    fn send(&self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let n = rustix::io::write(&self.master, bytes).unwrap();
            bytes = &bytes[n..];
        }
    }

    /// Reads what the tool sends until `stop` says the bytes are complete or `limit` passes.
    fn receive(&self, limit: Duration, stop: impl Fn(&[u8]) -> bool) -> Vec<u8> {
        let deadline = Instant::now() + limit;
        let mut got = Vec::new();
        let mut buf = [0u8; 256];
        while !stop(&got) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let mut fds = [PollFd::new(&self.master, PollFlags::IN)];
            let wait = Timespec {
                tv_sec: 0,
                tv_nsec: left.min(Duration::from_millis(20)).as_nanos() as i64,
            };
            if poll(&mut fds, Some(&wait)).unwrap_or(0) == 0 {
                continue;
            }
            match rustix::io::read(&self.master, &mut buf) {
                Ok(n) => got.extend_from_slice(&buf[..n]),
                // EIO while no slave is open (before the tool opens the port, or after it
                // closes it): wait and look again.
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        got
    }
}

fn fixture(pty: &Pty) -> Fixture {
    Fixture::new(
        Config::new().with_serial_ports(["/dev/pts/*"]),
        FakeDevices::new(&[], &[]),
        allowing(Policy::supervised(), &[pty.path.as_str()]),
    )
}

#[tokio::test]
async fn write_sends_exactly_the_bytes() {
    let pty = Pty::open();
    let f = fixture(&pty);
    let device = {
        let pty = Arc::clone(&pty);
        std::thread::spawn(move || pty.receive(Duration::from_secs(10), |b| b.len() >= 6))
    };
    let out = f
        .ok(
            "serial",
            &json!({"action": "write", "port": pty.path, "data": "00 01 fe ff 0d 0a", "encoding": "hex", "baud": 9600}),
        )
        .await;
    assert_eq!(
        device.join().unwrap(),
        vec![0x00, 0x01, 0xfe, 0xff, 0x0d, 0x0a]
    );
    assert!(
        out.joined_text().contains("Wrote 6 byte(s)"),
        "{}",
        out.joined_text()
    );
    assert!(out.joined_text().contains("9600 baud"));

    let device = {
        let pty = Arc::clone(&pty);
        std::thread::spawn(move || pty.receive(Duration::from_secs(10), |b| b.ends_with(b"\r\n")))
    };
    f.ok(
        "serial",
        &json!({"action": "write", "port": pty.path, "data": "AT+GMR\r\n"}),
    )
    .await;
    assert_eq!(device.join().unwrap(), b"AT+GMR\r\n");
}

#[tokio::test]
async fn read_returns_what_arrives_within_the_timeout() {
    let pty = Pty::open();
    let f = fixture(&pty);
    let sent: Vec<u8> = b"hello\xff\x00world".to_vec();
    let device = {
        let pty = Arc::clone(&pty);
        let sent = sent.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            pty.send(&sent);
        })
    };
    let started = Instant::now();
    let out = f
        .ok(
            "serial",
            &json!({"action": "read", "port": pty.path, "timeout_ms": 1500}),
        )
        .await;
    device.join().unwrap();
    let s = out.structured.clone().unwrap();
    assert_eq!(s["received_bytes"], json!(sent.len()));
    let hex: Vec<String> = sent.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(s["received_hex"], json!(hex.join(" ")));
    assert_eq!(s["stopped_by"], json!("timeout"));
    assert!(
        out.joined_text().contains("hello\\xff\\x00world"),
        "{}",
        out.joined_text()
    );
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "returned before the timeout"
    );

    // Nothing arrives: not an error, and no longer than asked.
    let started = Instant::now();
    let out = f
        .ok(
            "serial",
            &json!({"action": "read", "port": pty.path, "timeout_ms": 100}),
        )
        .await;
    assert!(
        out.joined_text().contains("Nothing arrived"),
        "{}",
        out.joined_text()
    );
    assert!(started.elapsed() < Duration::from_secs(5));

    // max_bytes ends the read early.
    let device = {
        let pty = Arc::clone(&pty);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            pty.send(b"0123456789");
        })
    };
    let started = Instant::now();
    let out = f
        .ok(
            "serial",
            &json!({"action": "read", "port": pty.path, "timeout_ms": 10000, "max_bytes": 4}),
        )
        .await;
    device.join().unwrap();
    let s = out.structured.unwrap();
    assert_eq!(s["received_text"], json!("0123"));
    assert_eq!(s["stopped_by"], json!("max_bytes"));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "max_bytes did not end the read"
    );
}

#[tokio::test]
async fn query_writes_then_reads_up_to_the_delimiter() {
    let pty = Pty::open();
    let f = fixture(&pty);
    let device = {
        let pty = Arc::clone(&pty);
        std::thread::spawn(move || {
            let request = pty.receive(Duration::from_secs(10), |b| b.ends_with(b"\n"));
            // Answer with the request's length, so the answer depends on what arrived.
            let answer = format!("LEN {}\r\n", request.len());
            pty.send(answer.as_bytes());
            std::thread::sleep(Duration::from_millis(300));
            pty.send(b"late noise\n");
            (request, answer)
        })
    };
    let started = Instant::now();
    let out = f
        .ok(
            "serial",
            &json!({"action": "query", "port": pty.path, "data": "MEASURE?\n", "timeout_ms": 5000}),
        )
        .await;
    let (request, answer) = device.join().unwrap();
    assert_eq!(request, b"MEASURE?\n");
    let s = out.structured.unwrap();
    assert_eq!(s["received_text"], json!(answer));
    assert_eq!(s["stopped_by"], json!("delimiter"));
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "query waited for the timeout"
    );

    // A custom delimiter in hex.
    let device = {
        let pty = Arc::clone(&pty);
        std::thread::spawn(move || {
            pty.receive(Duration::from_secs(10), |b| b.len() >= 2);
            pty.send(&[0x02, 0x10, 0x20, 0x03, 0x99]);
        })
    };
    let out = f
        .ok(
            "serial",
            &json!({"action": "query", "port": pty.path, "data": "0x05 0x01", "encoding": "hex", "delimiter": "03", "timeout_ms": 5000}),
        )
        .await;
    device.join().unwrap();
    let s = out.structured.unwrap();
    assert_eq!(s["received_hex"], json!("02 10 20 03"));
    assert_eq!(s["dropped_after_delimiter"], json!(1));

    // No answer: a timeout error that says what was sent and received.
    let e = f
        .err(
            "serial",
            &json!({"action": "query", "port": pty.path, "data": "PING\n", "timeout_ms": 200}),
        )
        .await;
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(
        e.to_string()
            .contains("did not answer with \"\\n\" within 200 ms"),
        "{e}"
    );
}

#[tokio::test]
async fn list_includes_the_pty_and_marks_it_allowed() {
    let pty = Pty::open();
    let other = Pty::open();
    let f = fixture(&pty);
    let out = f.ok("serial", &json!({"action": "list"})).await;
    let ports = out.structured.clone().unwrap()["ports"].clone();
    let find = |path: &str| {
        ports
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["path"] == json!(path))
            .cloned()
            .unwrap_or_else(|| panic!("{path} not listed: {ports}"))
    };
    assert_eq!(find(&pty.path)["allowed"], json!(true));
    assert_eq!(find(&pty.path)["char_device"], json!(true));
    assert_eq!(find(&other.path)["allowed"], json!(false));
    assert!(
        out.joined_text()
            .contains(&format!("{}  (allowed)", pty.path))
    );
}

#[tokio::test]
async fn writes_and_queries_ask_and_reads_do_not() {
    let pty = Pty::open();
    let f = Fixture::unapproved(
        Config::new(),
        FakeDevices::new(&[], &[]),
        allowing(Policy::supervised(), &[pty.path.as_str()]),
    );
    for args in [
        json!({"action": "write", "port": pty.path, "data": "x"}),
        json!({"action": "query", "port": pty.path, "data": "x"}),
    ] {
        let e = f.err("serial", &args).await;
        assert_eq!(e.kind(), ErrorKind::NeedsApproval, "{args}: {e}");
    }
    assert!(
        pty.receive(Duration::from_millis(200), |_| false)
            .is_empty()
    );
    f.ok(
        "serial",
        &json!({"action": "read", "port": pty.path, "timeout_ms": 10}),
    )
    .await;
}

#[tokio::test]
async fn argument_table() {
    use ErrorKind::{Denied, InvalidArgs, NotFound};
    let pty = Pty::open();
    let f = fixture(&pty);
    let p = pty.path.as_str();
    let escape = format!("/dev/pts/../pts/{}", p.rsplit('/').next().unwrap());
    let rows: Vec<(Value, Want)> = vec![
        (
            json!({"action": "write", "port": p, "data": "x", "baud": 115201}),
            Want::Err(InvalidArgs, "not a standard rate"),
        ),
        (
            json!({"action": "write", "port": p, "data": "x", "baud": 0}),
            Want::Err(InvalidArgs, "not a standard rate"),
        ),
        (
            json!({"action": "write", "port": p, "data": "x", "baud": 4294967296u64 + 9600}),
            Want::Err(InvalidArgs, "not a standard rate"),
        ),
        (
            json!({"action": "write", "port": p, "data": "x", "baud": 250000}),
            Want::Ok("250000 baud"),
        ),
        (
            json!({"action": "read", "port": p, "timeout_ms": 0}),
            Want::Err(InvalidArgs, "`timeout_ms` is 0"),
        ),
        (
            json!({"action": "read", "port": p, "timeout_ms": 30001}),
            Want::Err(InvalidArgs, "`timeout_ms` is 30001"),
        ),
        (
            json!({"action": "read", "port": p, "timeout_ms": 1}),
            Want::Ok("Nothing arrived"),
        ),
        (
            json!({"action": "read", "port": p, "timeout_ms": 1, "max_bytes": 0}),
            Want::Err(InvalidArgs, "`max_bytes` is 0"),
        ),
        (
            json!({"action": "read", "port": p, "timeout_ms": 1, "max_bytes": 65537}),
            Want::Err(InvalidArgs, "`max_bytes` is 65537"),
        ),
        (
            json!({"action": "read", "port": p, "timeout_ms": 1, "max_bytes": 65536}),
            Want::Ok("Nothing arrived"),
        ),
        (
            json!({"action": "write", "port": p, "data": "0x1", "encoding": "hex"}),
            Want::Err(InvalidArgs, "odd number of hex digits"),
        ),
        (
            json!({"action": "write", "port": p, "data": "0x01", "encoding": "hex"}),
            Want::Ok("Wrote 1 byte(s)"),
        ),
        (
            json!({"action": "write", "port": p, "data": ""}),
            Want::Err(InvalidArgs, "`data` is empty"),
        ),
        (
            json!({"action": "write", "port": p}),
            Want::Err(InvalidArgs, "needs `data`"),
        ),
        (
            json!({"action": "read", "port": p, "data": "x"}),
            Want::Err(InvalidArgs, "has no meaning for action `read`"),
        ),
        (
            json!({"action": "write", "port": p, "data": "x", "delimiter": "\n"}),
            Want::Err(InvalidArgs, "has no meaning for action `write`"),
        ),
        (
            json!({"action": "list", "port": p}),
            Want::Err(InvalidArgs, "has no meaning for action `list`"),
        ),
        (
            json!({"action": "query", "port": p, "data": "x", "delimiter": ""}),
            Want::Err(InvalidArgs, "`delimiter` is empty"),
        ),
        (
            json!({"action": "write", "port": p, "data": "x", "parity": "even"}),
            Want::Err(InvalidArgs, "parity"),
        ),
        (
            json!({"action": "read"}),
            Want::Err(InvalidArgs, "needs `port`"),
        ),
        // Ports: the exact allowed path only.
        (
            json!({"action": "read", "port": "pts/0", "timeout_ms": 1}),
            Want::Err(InvalidArgs, "not an absolute device path"),
        ),
        (
            json!({"action": "read", "port": escape, "timeout_ms": 1}),
            Want::Err(Denied, "not a plain absolute path"),
        ),
        (
            json!({"action": "read", "port": "/dev/ttyUSB0", "timeout_ms": 1}),
            Want::Err(Denied, "not on the device allow list"),
        ),
        (
            json!({"action": "read", "port": "/etc/shadow", "timeout_ms": 1}),
            Want::Err(Denied, "not on the device allow list"),
        ),
    ];
    for (args, want) in &rows {
        let got = f.call("serial", args).await;
        check(args, &got, want);
    }
    // Allowed but absent.
    let f = Fixture::new(
        Config::new(),
        FakeDevices::new(&[], &[]),
        allowing(Policy::full(), &["/dev/ttyUSB250"]),
    );
    let e = f
        .err(
            "serial",
            &json!({"action": "read", "port": "/dev/ttyUSB250", "timeout_ms": 1}),
        )
        .await;
    assert_eq!(e.kind(), NotFound, "{e}");
}
