//! hardware_info: the board table and discovery of what is attached (against a stand-in /dev),
//! each device marked with whether the allow list lets the tools open it.

use serde_json::{Value, json};
use tool_core::{Decision, ErrorKind, Policy};
use tools_hw::{BOARDS, Config, MemoryWindow};

use super::{FakeDevices, Fixture, allowing, touch};

fn paths(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn lists_boards_and_attached_devices_with_their_allow_status() {
    let dev = tempfile::tempdir().unwrap();
    for name in [
        "i2c-1",
        "i2c-10",
        "i2c-2",
        "i2c-x",
        "spidev0.0",
        "gpiochip0",
        "gpiochip1",
        "ttyUSB1",
        "ttyUSB0",
        "ttyUSB10",
        "ttyACM0",
        "ttyS0",
        "null",
    ] {
        touch(dev.path(), name);
    }
    let d = |n: &str| dev.path().join(n).display().to_string();
    let config = Config::new()
        .with_dev_dir(dev.path())
        .with_serial_ports([
            format!("{}/ttyUSB*", dev.path().display()),
            format!("{}/ttyACM*", dev.path().display()),
            // Overlapping patterns list a port once.
            format!("{}/ttyUSB0", dev.path().display()),
            "relative/tty*".to_string(),
            format!("{}/*/tty*", dev.path().display()),
        ])
        .with_read_window(MemoryWindow::new("rom", d("null"), 0x0800_0000, 0x1000));
    let f = Fixture::new(
        config,
        FakeDevices::new(&[], &[]),
        allowing(Policy::read_only(), &[&d("i2c-1"), &d("ttyUSB1")]),
    );
    let out = f.ok("hardware_info", &json!({})).await;
    let s = out.structured.clone().unwrap();
    assert_eq!(s["boards"].as_array().unwrap().len(), BOARDS.len());
    let attached = &s["attached"];
    assert_eq!(
        paths(&attached["serial"]),
        vec![d("ttyUSB0"), d("ttyUSB1"), d("ttyUSB10"), d("ttyACM0")]
    );
    assert_eq!(attached["serial"][1]["allowed"], json!(true));
    assert_eq!(attached["serial"][0]["allowed"], json!(false));
    assert_eq!(
        paths(&attached["i2c"]),
        vec![d("i2c-1"), d("i2c-2"), d("i2c-10")]
    );
    assert_eq!(attached["i2c"][0]["allowed"], json!(true));
    assert_eq!(paths(&attached["spi"]), vec![d("spidev0.0")]);
    assert_eq!(
        paths(&attached["gpio"]),
        vec![d("gpiochip0"), d("gpiochip1")]
    );
    let notes: Vec<&str> = s["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes.iter().all(|n| n.contains("ignored")));
    assert_eq!(s["memory_windows"][0]["name"], json!("rom"));
    assert_eq!(s["memory_windows"][0]["writable"], json!(false));
    let text = out.joined_text();
    assert!(text.contains(&format!(
        "{}  (allowed, not a character device)",
        d("ttyUSB1")
    )));
    assert!(text.contains("nucleo-f401re"));
    // Discovery opened nothing.
    assert!(f.fake.log().is_empty());
}

#[tokio::test]
async fn one_board_by_name_or_a_sentence_listing_the_known_ones() {
    let f = Fixture::new(
        Config::new().with_serial_ports(Vec::<String>::new()),
        FakeDevices::new(&[], &[]),
        Policy::supervised(),
    );
    let out = f
        .ok("hardware_info", &json!({"board": "NUCLEO_F401RE"}))
        .await;
    let s = out.structured.unwrap();
    assert_eq!(s["boards"].as_array().unwrap().len(), 1);
    let board = &s["boards"][0];
    assert_eq!(board["chip"], json!("STM32F401RE"));
    assert_eq!(board["probe_rs_chip"], json!("STM32F401RETx"));
    let sram = board["memory"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == json!("sram"))
        .unwrap();
    assert_eq!(sram["start"], json!("0x20000000"));
    assert_eq!(sram["size"], json!(96 * 1024));
    assert_eq!(sram["writable"], json!(true));

    let e = f.err("hardware_info", &json!({"board": "nucleo"})).await;
    assert_eq!(e.kind(), ErrorKind::NotFound);
    for b in BOARDS {
        assert!(e.to_string().contains(b.id), "{e}");
    }
    let e = f.err("hardware_info", &json!({"chip": "x"})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArgs);
}

#[tokio::test]
async fn a_per_tool_rule_applies_to_discovery() {
    let policy = Policy::full()
        .rule("hardware_info", Decision::Deny)
        .unwrap();
    let f = Fixture::new(Config::new(), FakeDevices::new(&[], &[]), policy);
    let e = f.err("hardware_info", &json!({})).await;
    assert_eq!(e.kind(), ErrorKind::Denied, "{e}");
}
