//! What is attached right now: serial ports matching the configured patterns, I2C buses, SPI
//! devices and GPIO chips. Discovery only lists names; it opens nothing.

use std::path::Path;

use globset::GlobBuilder;
use serde_json::{Value, json};
use tool_core::ToolContext;

use crate::config::Config;
use crate::device::{Found, list_matching};

/// Serial ports matching `config.serial_ports`, and a note per pattern that cannot be used.
pub(crate) fn serial_ports(config: &Config) -> (Vec<Found>, Vec<String>) {
    let mut found: Vec<Found> = Vec::new();
    let mut notes = Vec::new();
    for pattern in &config.serial_ports {
        let path = Path::new(pattern);
        let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            notes.push(format!(
                "serial pattern {pattern:?} has no file name; ignored"
            ));
            continue;
        };
        let dir_text = dir.to_string_lossy();
        if !path.is_absolute() || dir_text.contains(['*', '?', '[', ']', '{', '}']) {
            notes.push(format!(
                "serial pattern {pattern:?} must be absolute with wildcards in the last component only; ignored"
            ));
            continue;
        }
        let glob = match GlobBuilder::new(name).literal_separator(true).build() {
            Ok(g) => g.compile_matcher(),
            Err(e) => {
                notes.push(format!(
                    "serial pattern {pattern:?} is not a valid glob ({e}); ignored"
                ));
                continue;
            }
        };
        for f in list_matching(dir, |n| glob.is_match(n)) {
            if !found.iter().any(|x| x.path == f.path) {
                found.push(f);
            }
        }
    }
    (found, notes)
}

/// `/dev/i2c-N`.
pub(crate) fn i2c_buses(config: &Config) -> Vec<Found> {
    list_matching(&config.dev_dir, |n| numbered(n, "i2c-"))
}

/// `/dev/spidevB.C`.
pub(crate) fn spi_devices(config: &Config) -> Vec<Found> {
    list_matching(&config.dev_dir, |n| {
        n.strip_prefix("spidev").is_some_and(|rest| {
            let mut parts = rest.split('.');
            matches!(
                (parts.next(), parts.next(), parts.next()),
                (Some(b), Some(c), None) if is_digits(b) && is_digits(c)
            )
        })
    })
}

/// `/dev/gpiochipN`.
pub(crate) fn gpio_chips(config: &Config) -> Vec<Found> {
    list_matching(&config.dev_dir, |n| numbered(n, "gpiochip"))
}

fn numbered(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix).is_some_and(is_digits)
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Whether the policy lets tools open `path`.
pub(crate) fn allowed(ctx: &ToolContext, path: &Path) -> bool {
    ctx.policy.device_allowed(path)
}

/// One line per device: the path and whether it may be opened.
pub(crate) fn lines(ctx: &ToolContext, found: &[Found]) -> String {
    if found.is_empty() {
        return "  (none)\n".into();
    }
    let mut s = String::new();
    for f in found {
        s.push_str("  ");
        s.push_str(&f.path.display().to_string());
        s.push_str(&status(ctx, f));
        s.push('\n');
    }
    s
}

fn status(ctx: &ToolContext, f: &Found) -> String {
    let mut parts = Vec::new();
    parts.push(if allowed(ctx, &f.path) {
        "allowed"
    } else {
        "not on the device allow list"
    });
    if !f.char_device {
        parts.push("not a character device");
    }
    format!("  ({})", parts.join(", "))
}

/// The devices as JSON.
pub(crate) fn json(ctx: &ToolContext, found: &[Found]) -> Value {
    Value::Array(
        found
            .iter()
            .map(|f| {
                json!({
                    "path": f.path.display().to_string(),
                    "allowed": allowed(ctx, &f.path),
                    "char_device": f.char_device,
                })
            })
            .collect(),
    )
}
