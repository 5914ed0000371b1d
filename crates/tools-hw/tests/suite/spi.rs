//! spi: the argument table (hostile values beside benign twins, no I/O for a refusal), the exact
//! settings and bytes of a transfer, list, approval, and the real Linux device layer.

use serde_json::{Value, json};
use tool_core::{ErrorKind, Policy};
use tools_hw::{Config, SpiSettings};

use super::{FakeDevices, Fixture, Op, Want, allowing, check, touch};

const DEV: &str = "/dev/spidev0.0";

fn fixture() -> Fixture {
    Fixture::new(
        Config::new(),
        FakeDevices::new(&[DEV], &[]),
        allowing(Policy::supervised(), &[DEV]),
    )
}

fn transfer(extra: Value) -> Value {
    let mut args = json!({"action": "transfer", "device": DEV, "data": "9f 00"});
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    args
}

#[tokio::test]
async fn argument_table_refuses_before_any_io() {
    use ErrorKind::{Denied, InvalidArgs};
    let f = fixture();
    let big = "00".repeat(4097);
    let max = "00".repeat(4096);
    let rows: Vec<(Value, Want)> = vec![
        (
            transfer(json!({"mode": 4})),
            Want::Err(InvalidArgs, "SPI modes are 0, 1, 2 and 3"),
        ),
        (transfer(json!({"mode": 3})), Want::Ok("mode 3")),
        (transfer(json!({"mode": 0})), Want::Ok("mode 0")),
        (
            transfer(json!({"mode": -1})),
            Want::Err(InvalidArgs, "mode"),
        ),
        (
            transfer(json!({"speed_hz": 999})),
            Want::Err(InvalidArgs, "`speed_hz` is 999"),
        ),
        (
            transfer(json!({"speed_hz": 100_000_001u64})),
            Want::Err(InvalidArgs, "speed_hz"),
        ),
        (transfer(json!({"speed_hz": 1000})), Want::Ok("1000 Hz")),
        (
            transfer(json!({"speed_hz": 100_000_000u64})),
            Want::Ok("100000000 Hz"),
        ),
        (
            transfer(json!({"bits_per_word": 0})),
            Want::Err(InvalidArgs, "bits_per_word"),
        ),
        (
            transfer(json!({"bits_per_word": 9})),
            Want::Err(InvalidArgs, "bits_per_word"),
        ),
        (
            transfer(json!({"bits_per_word": 7, "data": "80"})),
            Want::Err(InvalidArgs, "does not fit in 7 bits"),
        ),
        (
            transfer(json!({"bits_per_word": 7, "data": "7f"})),
            Want::Ok("7 bits per word"),
        ),
        (
            transfer(json!({"data": "9f0"})),
            Want::Err(InvalidArgs, "odd number"),
        ),
        (
            transfer(json!({"data": "9g"})),
            Want::Err(InvalidArgs, "hex bytes"),
        ),
        (
            transfer(json!({"data": " , "})),
            Want::Err(InvalidArgs, "no bytes"),
        ),
        (
            transfer(json!({"data": big})),
            Want::Err(InvalidArgs, "more than 4096 bytes"),
        ),
        (
            transfer(json!({"data": max})),
            Want::Ok("Transferred 4096 byte(s)"),
        ),
        // Device paths: `../` must not escape, and only allowed devices open.
        (
            transfer(json!({"device": "../spidev0.0"})),
            Want::Err(InvalidArgs, "not an absolute device path"),
        ),
        (
            transfer(json!({"device": "/dev/spidev0.0/../../etc/shadow"})),
            Want::Err(Denied, "not a plain absolute path"),
        ),
        (
            transfer(json!({"device": "/dev/./spidev0.0"})),
            Want::Err(Denied, "not a plain absolute path"),
        ),
        (
            transfer(json!({"device": "/dev/spidev0.1"})),
            Want::Err(Denied, "not on the device allow list"),
        ),
        (
            transfer(json!({"device": "0.1"})),
            Want::Err(Denied, "/dev/spidev0.1 is not on the device allow list"),
        ),
        (
            transfer(json!({"device": "0.0"})),
            Want::Ok("on /dev/spidev0.0"),
        ),
        (
            transfer(json!({"device": DEV})),
            Want::Ok("on /dev/spidev0.0"),
        ),
        (
            json!({"action": "transfer", "data": "00"}),
            Want::Err(InvalidArgs, "needs `device`"),
        ),
        (
            json!({"action": "transfer", "device": DEV}),
            Want::Err(InvalidArgs, "needs `data`"),
        ),
        (
            json!({"action": "list", "data": "00"}),
            Want::Err(InvalidArgs, "has no meaning for action `list`"),
        ),
        (
            json!({"action": "transfer", "device": DEV, "data": "00", "cs": 1}),
            Want::Err(InvalidArgs, "cs"),
        ),
    ];
    for (args, want) in &rows {
        f.fake.clear();
        let got = f.call("spi", args).await;
        check(args, &got, want);
        let log = f.fake.log();
        match want {
            Want::Err(..) => assert!(log.is_empty(), "{args}: refused, yet saw {log:?}"),
            Want::Ok(_) => assert_eq!(log.len(), 2, "{args}: {log:?}"),
        }
    }
}

#[tokio::test]
async fn a_transfer_applies_the_settings_and_sends_exactly_the_data() {
    let f = fixture();
    let out = f
        .ok(
            "spi",
            &json!({"action": "transfer", "device": DEV, "data": "0x9f 0x00 0x00 0x00", "mode": 3, "speed_hz": 500000}),
        )
        .await;
    let sent = vec![0x9f, 0, 0, 0];
    assert_eq!(
        f.fake.log(),
        vec![
            Op::OpenSpi(
                DEV.into(),
                SpiSettings {
                    mode: 3,
                    speed_hz: 500_000,
                    bits_per_word: 8
                }
            ),
            Op::SpiTransfer { tx: sent.clone() }
        ]
    );
    // The fake answers every byte inverted.
    let received: Vec<String> = sent.iter().map(|b| format!("{:02x}", !b)).collect();
    let s = out.structured.unwrap();
    assert_eq!(s["received"], json!(received.join(" ")));
    assert_eq!(s["sent"], json!("9f 00 00 00"));
}

#[tokio::test]
async fn list_shows_spidev_nodes_and_whether_they_are_allowed() {
    let dev = tempfile::tempdir().unwrap();
    for name in [
        "spidev0.0",
        "spidev0.1",
        "spidev1.10",
        "spidevX",
        "spidev0",
        "i2c-1",
    ] {
        touch(dev.path(), name);
    }
    let allowed = dev.path().join("spidev0.1");
    let f = Fixture::new(
        Config::new().with_dev_dir(dev.path()),
        FakeDevices::new(&[], &[]),
        allowing(Policy::supervised(), &[allowed.to_str().unwrap()]),
    );
    let out = f.ok("spi", &json!({"action": "list"})).await;
    let s = out.structured.clone().unwrap();
    let paths: Vec<&str> = s["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    let want: Vec<String> = ["spidev0.0", "spidev0.1", "spidev1.10"]
        .iter()
        .map(|n| dev.path().join(n).display().to_string())
        .collect();
    assert_eq!(paths, want);
    let allowed_flags: Vec<bool> = s["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["allowed"].as_bool().unwrap())
        .collect();
    assert_eq!(allowed_flags, [false, true, false]);
    assert!(out.joined_text().contains("not a character device"));
    assert!(f.fake.log().is_empty(), "list opened a device");
}

#[tokio::test]
async fn a_transfer_asks_in_supervised_mode() {
    let f = Fixture::unapproved(
        Config::new(),
        FakeDevices::new(&[DEV], &[]),
        allowing(Policy::supervised(), &[DEV]),
    );
    let e = f.err("spi", &transfer(json!({}))).await;
    assert_eq!(e.kind(), ErrorKind::NeedsApproval, "{e}");
    assert!(f.fake.log().is_empty());
    f.ok("spi", &json!({"action": "list"})).await;
}

#[tokio::test]
async fn the_real_device_layer_refuses_what_is_not_an_spi_device() {
    let f = Fixture::real(
        Config::new(),
        allowing(Policy::full(), &["/dev/null", "/dev/spidev9.9"]),
    );
    let e = f
        .err(
            "spi",
            &json!({"action": "transfer", "device": "/dev/null", "data": "00"}),
        )
        .await;
    assert_eq!(e.kind(), ErrorKind::Failed, "{e}");
    assert!(e.to_string().contains("not a working SPI device"), "{e}");
    let e = f
        .err(
            "spi",
            &json!({"action": "transfer", "device": "9.9", "data": "00"}),
        )
        .await;
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}
