//! hardware_memory: the memory-window backend on a real file (read-only and write windows,
//! ranges wholly inside one window, overflow), and the probe-rs backend as a real program —
//! absent from PATH, and a scripted stand-in that records its arguments.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{ErrorKind, Policy};
use tools_hw::{Config, MemoryWindow};

use super::{FakeDevices, Fixture, Want, allowing, check, in_child, run_child};

const ROM: u64 = 0x0800_0000;
const RAM: u64 = 0x2000_0000;

/// A 4 KiB file whose byte i is `i * 7 + 3` (mod 256); ROM is bytes 0x100..0x500 of it, RAM
/// bytes 0x800..0x900.
struct Image {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn pattern(i: usize) -> u8 {
    (i * 7 + 3) as u8
}

impl Image {
    fn new() -> Image {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("target.img");
        let data: Vec<u8> = (0..4096).map(pattern).collect();
        std::fs::write(&path, data).unwrap();
        Image { _dir: dir, path }
    }

    fn config(&self) -> Config {
        Config::new()
            .with_read_window(MemoryWindow::new("rom", &self.path, ROM, 0x400).with_offset(0x100))
            .with_write_window(MemoryWindow::new("ram", &self.path, RAM, 0x100).with_offset(0x800))
    }

    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).unwrap()
    }

    fn allowed(&self) -> Vec<&str> {
        vec![self.path.to_str().unwrap()]
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn windows_read_and_write_the_mapped_bytes_of_a_real_file() {
    let img = Image::new();
    let f = Fixture::new(
        img.config(),
        FakeDevices::new(&[], &[]),
        allowing(Policy::supervised(), &img.allowed()),
    );
    let out = f
        .ok(
            "hardware_memory",
            &json!({"action": "read", "address": "0x08000010", "length": 16}),
        )
        .await;
    let want: Vec<u8> = (0x110..0x120).map(pattern).collect();
    assert_eq!(out.structured.clone().unwrap()["hex"], json!(hex(&want)));
    assert!(out.joined_text().contains("window `rom`"));

    let before = img.bytes();
    let out = f
        .ok(
            "hardware_memory",
            &json!({"action": "write", "address": RAM + 0x10, "value": "de ad be ef"}),
        )
        .await;
    assert!(out.joined_text().contains("Wrote 4 byte(s) at 0x20000010"));
    let after = img.bytes();
    assert_eq!(&after[0x810..0x814], &[0xde, 0xad, 0xbe, 0xef]);
    // Nothing else in the file changed, and it did not grow.
    assert_eq!(after.len(), before.len());
    assert_eq!(&after[..0x810], &before[..0x810]);
    assert_eq!(&after[0x814..], &before[0x814..]);

    let out = f
        .ok(
            "hardware_memory",
            &json!({"action": "read", "address": "0x2000000e", "length": 8}),
        )
        .await;
    assert_eq!(
        out.structured.unwrap()["hex"],
        json!(hex(&after[0x80e..0x816]))
    );

    // The last byte of each window, and the default length of 4.
    f.ok(
        "hardware_memory",
        &json!({"action": "read", "address": ROM + 0x3ff, "length": 1}),
    )
    .await;
    let out = f
        .ok(
            "hardware_memory",
            &json!({"action": "read", "address": RAM + 0xfc}),
        )
        .await;
    assert_eq!(
        out.structured.unwrap()["hex"],
        json!(hex(&after[0x8fc..0x900]))
    );
}

#[tokio::test]
async fn argument_table_of_ranges_and_values() {
    use ErrorKind::{Denied, InvalidArgs, NotFound};
    let img = Image::new();
    let f = Fixture::new(
        img.config(),
        FakeDevices::new(&[], &[]),
        allowing(Policy::supervised(), &img.allowed()),
    );
    let rd = |address: Value, length: u64| json!({"action": "read", "address": address, "length": length});
    let wr = |address: Value, value: &str| json!({"action": "write", "address": address, "value": value});
    let big = "00".repeat(257);
    let max = "00".repeat(256);
    let rows: Vec<(Value, Want)> = vec![
        // Ranges that straddle a window's end, beside the ones that just fit.
        (
            rd(json!(ROM + 0x3f0), 17),
            Want::Err(InvalidArgs, "run past the end of memory window `rom`"),
        ),
        (rd(json!(ROM + 0x3f0), 16), Want::Ok("Read 16 byte(s)")),
        (
            rd(json!(ROM - 1), 2),
            Want::Err(InvalidArgs, "lies in no configured memory window"),
        ),
        (rd(json!(ROM), 2), Want::Ok("Read 2 byte(s)")),
        (
            wr(json!(RAM + 0xff), "01 02"),
            Want::Err(InvalidArgs, "at most 1 byte(s) from here"),
        ),
        (wr(json!(RAM + 0xff), "01"), Want::Ok("Wrote 1 byte(s)")),
        (
            rd(json!(RAM + 0x80), 256),
            Want::Err(InvalidArgs, "run past the end of memory window `ram`"),
        ),
        (rd(json!(RAM), 256), Want::Ok("Read 256 byte(s)")),
        (wr(json!(RAM), &max), Want::Ok("Wrote 256 byte(s)")),
        // Overflow: ranges that wrap around 2^64 are refused, never wrapped.
        (
            rd(json!("0xffffffffffffffff"), 2),
            Want::Err(InvalidArgs, "past the end of the 64-bit address space"),
        ),
        (
            rd(json!(u64::MAX - 3), 4),
            Want::Err(InvalidArgs, "64-bit address space"),
        ),
        (
            rd(json!(u64::MAX - 4), 4),
            Want::Err(InvalidArgs, "lies in no configured memory window"),
        ),
        (
            wr(json!("0xfffffffffffffffe"), "01 02 03"),
            Want::Err(InvalidArgs, "64-bit address space"),
        ),
        // Read-only windows are never written.
        (wr(json!(ROM), "00"), Want::Err(Denied, "read-only")),
        (rd(json!(ROM), 1), Want::Ok("Read 1 byte(s)")),
        // Lengths and values.
        (rd(json!(RAM), 0), Want::Err(InvalidArgs, "`length` is 0")),
        (
            rd(json!(RAM), 257),
            Want::Err(InvalidArgs, "`length` is 257"),
        ),
        (
            wr(json!(RAM), &big),
            Want::Err(InvalidArgs, "more than 256 bytes"),
        ),
        (
            wr(json!(RAM), "0xde0"),
            Want::Err(InvalidArgs, "odd number of hex digits"),
        ),
        (wr(json!(RAM), ""), Want::Err(InvalidArgs, "no bytes")),
        (
            json!({"action": "write", "address": RAM, "value": "00", "length": 1}),
            Want::Err(InvalidArgs, "has no meaning for action `write`"),
        ),
        (
            json!({"action": "read", "address": RAM, "value": "00"}),
            Want::Err(InvalidArgs, "has no meaning for action `read`"),
        ),
        (
            json!({"action": "write", "address": RAM}),
            Want::Err(InvalidArgs, "needs `value`"),
        ),
        // Malformed addresses are refused, never defaulted.
        (
            rd(json!("0x2000_000g"), 1),
            Want::Err(InvalidArgs, "not a number"),
        ),
        (
            rd(json!("20000000h"), 1),
            Want::Err(InvalidArgs, "not a number"),
        ),
        (
            rd(json!("0x2000_0000"), 1),
            Want::Ok("Read 1 byte(s) at 0x20000000"),
        ),
        // Boards: unknown, or without probe-rs support.
        (
            json!({"action": "read", "address": 0x100, "board": "arduino-uno"}),
            Want::Err(InvalidArgs, "probe-rs cannot debug the ATmega328P"),
        ),
        (
            json!({"action": "read", "address": RAM, "board": "nucleo"}),
            Want::Err(NotFound, "known boards"),
        ),
    ];
    for (args, want) in &rows {
        let before = img.bytes();
        let got = f.call("hardware_memory", args).await;
        check(args, &got, want);
        if matches!(want, Want::Err(..)) {
            assert_eq!(
                img.bytes(),
                before,
                "{args}: a refused call changed the file"
            );
        }
    }
}

#[tokio::test]
async fn the_policy_decides_on_the_window_file() {
    let img = Image::new();
    // Not on the allow list: denied, for reads too.
    let f = Fixture::new(img.config(), FakeDevices::new(&[], &[]), Policy::full());
    let e = f
        .err(
            "hardware_memory",
            &json!({"action": "read", "address": RAM}),
        )
        .await;
    assert_eq!(e.kind(), ErrorKind::Denied, "{e}");
    // Supervised: reads run, writes ask.
    let f = Fixture::unapproved(
        img.config(),
        FakeDevices::new(&[], &[]),
        allowing(Policy::supervised(), &img.allowed()),
    );
    f.ok(
        "hardware_memory",
        &json!({"action": "read", "address": RAM}),
    )
    .await;
    let before = img.bytes();
    let e = f
        .err(
            "hardware_memory",
            &json!({"action": "write", "address": RAM, "value": "ff"}),
        )
        .await;
    assert_eq!(e.kind(), ErrorKind::NeedsApproval, "{e}");
    assert_eq!(img.bytes(), before);
}

#[tokio::test]
async fn a_window_larger_than_its_file_is_reported_not_padded() {
    let img = Image::new();
    let config = Config::new().with_write_window(MemoryWindow::new("big", &img.path, 0, 0x2000));
    let f = Fixture::new(
        config,
        FakeDevices::new(&[], &[]),
        allowing(Policy::full(), &img.allowed()),
    );
    let before = img.bytes();
    for args in [
        json!({"action": "read", "address": 0xffe, "length": 4}),
        json!({"action": "write", "address": 0xffe, "value": "01 02 03 04"}),
    ] {
        let e = f.err("hardware_memory", &args).await;
        assert_eq!(e.kind(), ErrorKind::Failed, "{e}");
        assert!(e.to_string().contains("is larger than"), "{e}");
    }
    assert_eq!(img.bytes(), before, "the file was extended");
}

/// A stand-in for probe-rs: records its arguments, and for `read … b8 ADDR N` prints N bytes
/// `(ADDR + i) & 0xff` as probe-rs's hex table, eight to a line.
fn fake_probe_rs(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("probe-rs");
    let script = format!(
        r#"#!/bin/sh
printf '%s\n' "$@" > "{log}"
{body}
"#,
        log = dir.join("args.txt").display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

const READER: &str = r#"if [ "$1" = read ]; then
  addr=$(($5)); n=$6; i=0
  while [ $i -lt $n ]; do
    if [ $((i % 8)) -eq 0 ]; then [ $i -gt 0 ] && echo; printf '%08x:' $((addr + i)); fi
    printf ' %02x' $(((addr + i) & 255)); i=$((i + 1))
  done
  echo
fi"#;

fn recorded(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("args.txt"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn probe_rs_gets_the_chip_and_exact_bytes_and_its_output_is_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let probe = fake_probe_rs(dir.path(), READER);
    let f = Fixture::new(
        Config::new().with_probe_rs(&probe),
        FakeDevices::new(&[], &[]),
        Policy::full(),
    );
    let out = f
        .ok(
            "hardware_memory",
            &json!({"action": "read", "address": "0x20000ffa", "length": 10, "board": "nucleo-f401re"}),
        )
        .await;
    assert_eq!(
        recorded(dir.path()),
        ["read", "--chip", "STM32F401RETx", "b8", "0x20000ffa", "10"]
    );
    let want: Vec<u8> = (0..10u64)
        .map(|i| ((0x2000_0ffa + i) & 0xff) as u8)
        .collect();
    assert_eq!(out.structured.clone().unwrap()["bytes"], json!(want));
    assert!(
        out.joined_text()
            .contains("probe-rs (STM32F401RETx, nucleo-f401re)")
    );

    f.ok(
        "hardware_memory",
        &json!({"action": "write", "address": 0x2000_0000u64, "value": "de ad 00", "board": "pico"}),
    )
    .await;
    assert_eq!(
        recorded(dir.path()),
        [
            "write",
            "--chip",
            "RP2040",
            "b8",
            "0x20000000",
            "0xde",
            "0xad",
            "0x00"
        ]
    );

    // Without a board, the configured chip is used for addresses in no window.
    let f = Fixture::new(
        Config::new()
            .with_probe_rs(&probe)
            .with_probe_chip("RP2040"),
        FakeDevices::new(&[], &[]),
        Policy::full(),
    );
    f.ok(
        "hardware_memory",
        &json!({"action": "read", "address": "0x10000000", "length": 1}),
    )
    .await;
    assert_eq!(
        recorded(dir.path()),
        ["read", "--chip", "RP2040", "b8", "0x10000000", "1"]
    );
    // …and still checked against that chip's board map.
    let e = f
        .err(
            "hardware_memory",
            &json!({"action": "write", "address": "0x10000000", "value": "00"}),
        )
        .await;
    assert!(
        e.to_string().contains("which a memory write cannot change"),
        "{e}"
    );
}

#[tokio::test]
async fn probe_addresses_are_checked_against_the_board_map_before_probe_rs_runs() {
    use ErrorKind::InvalidArgs;
    let dir = tempfile::tempdir().unwrap();
    let probe = fake_probe_rs(dir.path(), READER);
    let f = Fixture::new(
        Config::new().with_probe_rs(&probe),
        FakeDevices::new(&[], &[]),
        Policy::full(),
    );
    let board = |address: Value, extra: Value| {
        let mut a = json!({"address": address, "board": "nucleo-f401re"});
        for (k, v) in extra.as_object().unwrap() {
            a[k] = v.clone();
        }
        a
    };
    let sram_end = 0x2000_0000u64 + 96 * 1024;
    let rows: Vec<(Value, Want)> = vec![
        (
            board(json!(sram_end - 4), json!({"action": "read", "length": 8})),
            Want::Err(InvalidArgs, "runs past the end of its region"),
        ),
        (
            board(json!(sram_end - 8), json!({"action": "read", "length": 8})),
            Want::Ok("Read 8 byte(s)"),
        ),
        (
            board(json!("0x30000000"), json!({"action": "read"})),
            Want::Err(InvalidArgs, "not in the board's memory map"),
        ),
        (
            board(
                json!("0x08000000"),
                json!({"action": "write", "value": "00"}),
            ),
            Want::Err(InvalidArgs, "flash region `flash`"),
        ),
        (
            board(json!("0x08000000"), json!({"action": "read"})),
            Want::Ok("Read 4 byte(s)"),
        ),
        (
            board(
                json!("0x40020014"),
                json!({"action": "write", "value": "20 00 00 00"}),
            ),
            Want::Ok("Wrote 4 byte(s)"),
        ),
    ];
    for (args, want) in &rows {
        let _ = std::fs::remove_file(dir.path().join("args.txt"));
        let got = f.call("hardware_memory", args).await;
        check(args, &got, want);
        assert_eq!(
            dir.path().join("args.txt").exists(),
            matches!(want, Want::Ok(_)),
            "{args}: probe-rs ran for a refused call, or did not run for an accepted one"
        );
    }
}

#[tokio::test]
async fn probe_rs_failures_and_timeouts_are_sentences() {
    let dir = tempfile::tempdir().unwrap();
    let failing = fake_probe_rs(dir.path(), "echo 'Error: No probe was found.' >&2; exit 1");
    let f = Fixture::new(
        Config::new().with_probe_rs(&failing),
        FakeDevices::new(&[], &[]),
        Policy::full(),
    );
    let args = json!({"action": "read", "address": "0x20000000", "board": "nucleo-f401re"});
    let e = f.err("hardware_memory", &args).await;
    assert_eq!(e.kind(), ErrorKind::Failed, "{e}");
    assert!(e.to_string().contains("exit code 1"), "{e}");
    assert!(e.to_string().contains("No probe was found"), "{e}");

    let garbled = fake_probe_rs(dir.path(), "echo 'deadbeef'");
    let f = Fixture::new(
        Config::new().with_probe_rs(&garbled),
        FakeDevices::new(&[], &[]),
        Policy::full(),
    );
    let e = f.err("hardware_memory", &args).await;
    assert!(e.to_string().contains("cannot read"), "{e}");

    let slow = fake_probe_rs(dir.path(), "sleep 30");
    let f = Fixture::new(
        Config::new()
            .with_probe_rs(&slow)
            .with_probe_timeout(Duration::from_millis(300)),
        FakeDevices::new(&[], &[]),
        Policy::full(),
    );
    let e = f.err("hardware_memory", &args).await;
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
}

#[tokio::test]
async fn probe_calls_ask_in_supervised_mode() {
    let dir = tempfile::tempdir().unwrap();
    let probe = fake_probe_rs(dir.path(), READER);
    let f = Fixture::unapproved(
        Config::new().with_probe_rs(&probe),
        FakeDevices::new(&[], &[]),
        Policy::supervised(),
    );
    let e = f
        .err(
            "hardware_memory",
            &json!({"action": "write", "address": "0x20000000", "value": "00", "board": "rpi-pico"}),
        )
        .await;
    assert_eq!(e.kind(), ErrorKind::NeedsApproval, "{e}");
    assert!(
        e.to_string()
            .contains("write --chip RP2040 b8 0x20000000 0x00"),
        "{e}"
    );
    assert!(!dir.path().join("args.txt").exists());
}

/// probe-rs missing from PATH: the parent runs the child below with a PATH of one empty directory.
#[test]
fn probe_rs_absent_from_path_is_reported_with_how_to_install_it() {
    let empty = tempfile::tempdir().unwrap();
    run_child(
        "suite::memory::child_probe_rs_absent",
        &[("PATH", empty.path().as_os_str())],
        &[],
    );
}

#[tokio::test]
#[ignore = "runs in a child process with an empty PATH"]
async fn child_probe_rs_absent() {
    if !in_child("probe_rs_absent_from_path_is_reported_with_how_to_install_it") {
        return;
    }
    let f = Fixture::new(Config::new(), FakeDevices::new(&[], &[]), Policy::full());
    let e = f
        .err(
            "hardware_memory",
            &json!({"action": "read", "address": "0x20000000", "board": "stm32f4-discovery"}),
        )
        .await;
    assert_eq!(e.kind(), ErrorKind::Failed, "{e}");
    let msg = e.to_string();
    assert!(msg.contains("probe-rs is not installed"), "{msg}");
    assert!(msg.contains("cargo install probe-rs-tools"), "{msg}");
}
