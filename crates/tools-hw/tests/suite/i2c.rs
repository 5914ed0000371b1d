//! i2c: the argument table (each hostile value beside a benign twin, and no I/O at all for a
//! refused call), the exact bytes sent, scan/detect, the policy's ask/deny, and the real Linux
//! device layer on files that are not I2C buses.

use serde_json::{Value, json};
use tool_core::{ErrorKind, Policy};
use tools_hw::Config;

use super::{FakeDevices, Fixture, Op, Want, allowing, check};

const BUS: &str = "/dev/i2c-1";

fn fixture() -> Fixture {
    Fixture::new(
        Config::new(),
        FakeDevices::new(&[BUS], &[0x3c, 0x48]),
        allowing(Policy::supervised(), &[BUS, "/dev/i2c-9"]),
    )
}

fn detect(address: Value) -> Value {
    json!({"action": "detect", "bus": BUS, "address": address})
}

#[tokio::test]
async fn argument_table_refuses_before_any_io() {
    use ErrorKind::{Denied, InvalidArgs, NotFound};
    let f = fixture();
    let big: String = "ab".repeat(33);
    let max: String = "ab".repeat(32);
    let rows: Vec<(Value, Want)> = vec![
        // Reserved addresses, each beside the nearest valid one.
        (detect(json!(0)), Want::Err(InvalidArgs, "0x03 to 0x77")),
        (detect(json!(1)), Want::Err(InvalidArgs, "0x03 to 0x77")),
        (detect(json!("0x02")), Want::Err(InvalidArgs, "reserved")),
        (
            detect(json!("0x03")),
            Want::Ok("No device answered at address 0x03"),
        ),
        (
            detect(json!("0x77")),
            Want::Ok("No device answered at address 0x77"),
        ),
        (
            detect(json!("0x78")),
            Want::Err(InvalidArgs, "0x03 to 0x77"),
        ),
        (detect(json!(0x7f)), Want::Err(InvalidArgs, "0x03 to 0x77")),
        (detect(json!(0x80)), Want::Err(InvalidArgs, "0x03 to 0x77")),
        (detect(json!(0x148)), Want::Err(InvalidArgs, "0x03 to 0x77")),
        (
            detect(json!("0xffffffffffffffff")),
            Want::Err(InvalidArgs, "0x03 to 0x77"),
        ),
        (
            detect(json!("0x1_0000_0000_0000_0000")),
            Want::Err(InvalidArgs, "larger than"),
        ),
        // Malformed numbers are refused, never read as a default address.
        (
            detect(json!("0x4g")),
            Want::Err(InvalidArgs, "not a number"),
        ),
        (detect(json!("48h")), Want::Err(InvalidArgs, "not a number")),
        (detect(json!("0x")), Want::Err(InvalidArgs, "not a number")),
        (
            detect(json!(" 0x48")),
            Want::Err(InvalidArgs, "not a number"),
        ),
        (detect(json!("-1")), Want::Err(InvalidArgs, "not a number")),
        (detect(json!("")), Want::Err(InvalidArgs, "address")),
        (detect(json!(-1)), Want::Err(InvalidArgs, "address")),
        (detect(json!(72.5)), Want::Err(InvalidArgs, "address")),
        (detect(json!(null)), Want::Err(InvalidArgs, "address")),
        (
            detect(json!("0x48")),
            Want::Ok("A device answered at address 0x48"),
        ),
        (
            detect(json!("72")),
            Want::Ok("A device answered at address 0x48"),
        ),
        (
            detect(json!(72)),
            Want::Ok("A device answered at address 0x48"),
        ),
        // Registers are 8-bit.
        (
            json!({"action": "read", "bus": BUS, "address": "0x48", "register": "0x100"}),
            Want::Err(InvalidArgs, "registers are 8-bit"),
        ),
        (
            json!({"action": "read", "bus": BUS, "address": "0x48", "register": "0xff"}),
            Want::Ok("register 0xff"),
        ),
        // Lengths 1..=32.
        (
            json!({"action": "read", "bus": BUS, "address": "0x48", "length": 0}),
            Want::Err(InvalidArgs, "`length` is 0"),
        ),
        (
            json!({"action": "read", "bus": BUS, "address": "0x48", "length": 33}),
            Want::Err(InvalidArgs, "`length` is 33"),
        ),
        (
            json!({"action": "read", "bus": BUS, "address": "0x48", "length": 32}),
            Want::Ok("Read 32 byte(s)"),
        ),
        // Values are strict hex, 1..=32 bytes.
        (
            json!({"action": "write", "bus": BUS, "address": "0x48", "value": "0x1"}),
            Want::Err(InvalidArgs, "odd number of hex digits"),
        ),
        (
            json!({"action": "write", "bus": BUS, "address": "0x48", "value": "zz"}),
            Want::Err(InvalidArgs, "hex bytes"),
        ),
        (
            json!({"action": "write", "bus": BUS, "address": "0x48", "value": ""}),
            Want::Err(InvalidArgs, "no bytes"),
        ),
        (
            json!({"action": "write", "bus": BUS, "address": "0x48", "value": big}),
            Want::Err(InvalidArgs, "more than 32 bytes"),
        ),
        (
            json!({"action": "write", "bus": BUS, "address": "0x48", "value": max}),
            Want::Ok("Wrote 32 byte(s)"),
        ),
        (
            json!({"action": "write", "bus": BUS, "address": "0x48", "value": "0x01"}),
            Want::Ok("Wrote 1 byte(s) to 0x48"),
        ),
        // Fields that mean nothing for the action are refused, not ignored.
        (
            json!({"action": "read", "bus": BUS, "address": "0x48", "value": "01"}),
            Want::Err(InvalidArgs, "has no meaning for action `read`"),
        ),
        (
            json!({"action": "write", "bus": BUS, "address": "0x48", "value": "01", "length": 1}),
            Want::Err(InvalidArgs, "has no meaning for action `write`"),
        ),
        (
            json!({"action": "scan", "bus": BUS, "address": "0x48"}),
            Want::Err(InvalidArgs, "has no meaning for action `scan`"),
        ),
        (
            json!({"action": "read", "bus": BUS}),
            Want::Err(InvalidArgs, "needs `address`"),
        ),
        (
            json!({"action": "write", "bus": BUS, "address": "0x48"}),
            Want::Err(InvalidArgs, "needs `value`"),
        ),
        (
            json!({"action": "read", "bus": BUS, "addr": "0x48"}),
            Want::Err(InvalidArgs, "addr"),
        ),
        (
            json!({"action": "probe", "bus": BUS, "address": "0x48"}),
            Want::Err(InvalidArgs, "action"),
        ),
        // Buses: exact paths on the allow list, or a number that names one.
        (
            json!({"action": "detect", "bus": "/dev/i2c-2", "address": "0x48"}),
            Want::Err(Denied, "not on the device allow list"),
        ),
        (
            json!({"action": "detect", "bus": 2, "address": "0x48"}),
            Want::Err(Denied, "/dev/i2c-2 is not on the device allow list"),
        ),
        (
            json!({"action": "detect", "bus": "/dev/../dev/i2c-1", "address": "0x48"}),
            Want::Err(Denied, "not a plain absolute path"),
        ),
        (
            json!({"action": "detect", "bus": "/dev//i2c-1", "address": "0x48"}),
            Want::Err(Denied, "not a plain absolute path"),
        ),
        (
            json!({"action": "detect", "bus": "/dev/i2c-1/", "address": "0x48"}),
            Want::Err(Denied, "not a plain absolute path"),
        ),
        (
            json!({"action": "detect", "bus": "dev/i2c-1", "address": "0x48"}),
            Want::Err(InvalidArgs, "not an absolute device path"),
        ),
        (
            json!({"action": "detect", "bus": "/dev/i2c-1\n", "address": "0x48"}),
            Want::Err(InvalidArgs, "control character"),
        ),
        (
            json!({"action": "detect", "bus": "/etc/passwd", "address": "0x48"}),
            Want::Err(Denied, "not on the device allow list"),
        ),
        (
            json!({"action": "detect", "bus": 1, "address": "0x48"}),
            Want::Ok("A device answered at address 0x48 on /dev/i2c-1"),
        ),
        (
            json!({"action": "detect", "bus": "1", "address": "0x48"}),
            Want::Ok("A device answered"),
        ),
        // Allowed but absent: the open fails with a sentence.
        (
            json!({"action": "detect", "bus": "/dev/i2c-9", "address": "0x48"}),
            Want::Err(NotFound, "does not exist"),
        ),
    ];
    for (args, want) in &rows {
        f.fake.clear();
        let got = f.call("i2c", args).await;
        check(args, &got, want);
        let log = f.fake.log();
        match want {
            Want::Err(_, _) if args["bus"] != json!("/dev/i2c-9") => {
                assert!(
                    log.is_empty(),
                    "{args}: refused, yet the device layer saw {log:?}"
                )
            }
            _ => assert!(!log.is_empty(), "{args}: no I/O recorded"),
        }
    }
}

#[tokio::test]
async fn reads_and_writes_send_exactly_the_bytes_asked_for() {
    let f = fixture();
    let out = f
        .ok(
            "i2c",
            &json!({"action": "write", "bus": BUS, "address": "0x48", "register": "0x10", "value": "de ad"}),
        )
        .await;
    assert!(out.joined_text().contains("register 0x10"));
    assert_eq!(
        f.fake.log(),
        vec![
            Op::OpenI2c(BUS.into()),
            Op::I2cWrite {
                address: 0x48,
                bytes: vec![0x10, 0xde, 0xad]
            }
        ]
    );
    assert_eq!(f.fake.register(0x48, 0x10), 0xde);
    assert_eq!(f.fake.register(0x48, 0x11), 0xad);

    f.fake.clear();
    let out = f
        .ok(
            "i2c",
            &json!({"action": "read", "bus": BUS, "address": 72, "register": 16, "length": 3}),
        )
        .await;
    let want = [
        f.fake.register(0x48, 0x10),
        f.fake.register(0x48, 0x11),
        f.fake.register(0x48, 0x12),
    ];
    assert_eq!(
        f.fake.log(),
        vec![
            Op::OpenI2c(BUS.into()),
            Op::I2cWriteRead {
                address: 0x48,
                bytes: vec![0x10],
                len: 3
            }
        ]
    );
    let s = out.structured.unwrap();
    assert_eq!(s["bytes"], json!(want));
    assert_eq!(
        s["hex"],
        json!(format!("{:02x} {:02x} {:02x}", want[0], want[1], want[2]))
    );

    // Without a register: a plain read at the chip's current pointer (0x13 after the read above).
    f.fake.clear();
    let out = f
        .ok(
            "i2c",
            &json!({"action": "read", "bus": BUS, "address": "0x48"}),
        )
        .await;
    assert_eq!(
        f.fake.log(),
        vec![
            Op::OpenI2c(BUS.into()),
            Op::I2cRead {
                address: 0x48,
                len: 1
            }
        ]
    );
    assert_eq!(
        out.structured.unwrap()["bytes"],
        json!([f.fake.register(0x48, 0x13)])
    );
}

#[tokio::test]
async fn scan_probes_every_valid_address_once_and_reports_the_ones_that_answer() {
    let f = fixture();
    let out = f.ok("i2c", &json!({"action": "scan", "bus": BUS})).await;
    let log = f.fake.log();
    assert_eq!(log[0], Op::OpenI2c(BUS.into()));
    let probed: Vec<u8> = log[1..]
        .iter()
        .map(|op| match op {
            Op::I2cRead { address, len: 1 } => *address,
            other => panic!("scan did {other:?}"),
        })
        .collect();
    assert_eq!(probed, (0x03..=0x77).collect::<Vec<u8>>());
    assert_eq!(
        out.structured.clone().unwrap()["found"],
        json!(["0x3c", "0x48"])
    );
    let text = out.joined_text();
    assert!(text.contains("2 device(s) answered: 0x3c, 0x48."), "{text}");
    assert!(
        text.contains("30: -- -- -- -- -- -- -- -- -- -- -- -- 3c"),
        "{text}"
    );
}

#[tokio::test]
async fn a_missing_device_is_reported_not_read_as_zero() {
    let f = fixture();
    let e = f
        .err(
            "i2c",
            &json!({"action": "read", "bus": BUS, "address": "0x50"}),
        )
        .await;
    assert_eq!(e.kind(), ErrorKind::Failed);
    assert!(
        e.to_string()
            .contains("No device acknowledged address 0x50"),
        "{e}"
    );
    let e = f
        .err(
            "i2c",
            &json!({"action": "write", "bus": BUS, "address": "0x50", "value": "00"}),
        )
        .await;
    assert!(
        e.to_string()
            .contains("No device acknowledged address 0x50"),
        "{e}"
    );
}

#[tokio::test]
async fn writes_ask_in_supervised_mode_and_read_only_refuses_the_bus() {
    let f = Fixture::unapproved(
        Config::new(),
        FakeDevices::new(&[BUS], &[0x48]),
        allowing(Policy::supervised(), &[BUS]),
    );
    f.ok(
        "i2c",
        &json!({"action": "read", "bus": BUS, "address": "0x48"}),
    )
    .await;
    f.fake.clear();
    let e = f
        .err(
            "i2c",
            &json!({"action": "write", "bus": BUS, "address": "0x48", "value": "01"}),
        )
        .await;
    assert_eq!(e.kind(), ErrorKind::NeedsApproval, "{e}");
    assert!(e.to_string().contains("write to device /dev/i2c-1"), "{e}");
    assert!(
        f.fake.log().is_empty(),
        "an unapproved write reached the bus"
    );

    let f = Fixture::new(
        Config::new(),
        FakeDevices::new(&[BUS], &[0x48]),
        allowing(Policy::read_only(), &[BUS]),
    );
    let e = f.err("i2c", &json!({"action": "scan", "bus": BUS})).await;
    assert_eq!(e.kind(), ErrorKind::Denied, "{e}");
    assert!(f.fake.log().is_empty());

    let f = Fixture::new(
        Config::new(),
        FakeDevices::new(&[BUS], &[0x48]),
        allowing(Policy::full(), &[BUS]),
    );
    f.ok(
        "i2c",
        &json!({"action": "write", "bus": BUS, "address": "0x48", "value": "01"}),
    )
    .await;
}

#[tokio::test]
async fn the_tool_itself_refuses_devices_off_the_allow_list() {
    // Straight through the registry, without the stack's policy layer.
    use std::sync::Arc;
    let fake = FakeDevices::new(&[BUS], &[0x48]);
    let tools = tools_hw::tools_with_devices(&Config::new(), Arc::new(fake.clone()));
    let i2c = tools.iter().find(|t| t.spec().name == "i2c").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = tool_core::ToolContext::new(
        tool_core::Workspace::local(dir.path()).unwrap(),
        Arc::new(Policy::full()),
        Arc::new(tool_core::Limits::default()),
    );
    let call = i2c
        .prepare(&ctx, json!({"action": "scan", "bus": BUS}))
        .unwrap();
    let e = call.run(ctx.for_call()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Denied, "{e}");
    assert!(fake.log().is_empty());
}

#[tokio::test]
async fn the_real_device_layer_refuses_what_is_not_an_i2c_bus() {
    let f = Fixture::real(
        Config::new(),
        allowing(Policy::full(), &["/dev/null", "/dev/i2c-250"]),
    );
    // /dev/null opens, and then refuses the I2C_SLAVE ioctl.
    let e = f
        .err(
            "i2c",
            &json!({"action": "detect", "bus": "/dev/null", "address": "0x48"}),
        )
        .await;
    assert_eq!(e.kind(), ErrorKind::Failed, "{e}");
    assert!(e.to_string().contains("not a working I2C bus"), "{e}");
    let e = f.err("i2c", &json!({"action": "scan", "bus": 250})).await;
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("/dev/i2c-250 does not exist"), "{e}");
}

/// On a machine with a real bus, `TOOLS_HW_I2C_BUS=/dev/i2c-N` scans it through linux-embedded-hal.
#[tokio::test]
async fn a_real_bus_is_scanned_when_one_is_named() {
    let Ok(bus) = std::env::var("TOOLS_HW_I2C_BUS") else {
        println!("skipped: set TOOLS_HW_I2C_BUS=/dev/i2c-N to scan a real I2C bus");
        return;
    };
    let f = Fixture::real(Config::new(), allowing(Policy::full(), &[bus.as_str()]));
    let out = f.ok("i2c", &json!({"action": "scan", "bus": bus})).await;
    assert!(
        out.joined_text().contains("Scanned"),
        "{}",
        out.joined_text()
    );
}
