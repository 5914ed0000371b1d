//! Argument checks shared by the tools: numbers given as integers or hex strings, hex byte
//! strings, device paths and the device allow list. Every check runs before any I/O, and a
//! value that fails one is refused with a sentence saying what to give instead: it is never
//! replaced by a default.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use tool_core::schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use tool_core::{ToolContext, ToolError};

/// A whole number given either as a JSON integer (`72`) or as a string: decimal (`"72"`) or
/// hexadecimal with `0x` (`"0x48"`); `_` may separate digits (`"0x2000_0000"`).
///
/// The raw value is kept as given and parsed by the tool, so that a malformed one is refused
/// with the field's name rather than replaced.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct Number(Value);

impl Number {
    /// The value, or a sentence saying why it is not a whole number.
    pub fn parse(&self) -> Result<u64, String> {
        match &self.0 {
            Value::Number(n) => n
                .as_u64()
                .ok_or_else(|| format!("{n} is not a whole number between 0 and 2^64-1")),
            Value::String(s) => parse_u64(s),
            other => Err(format!("{other} is neither an integer nor a string")),
        }
    }

    /// The value as given, for messages.
    pub fn raw(&self) -> String {
        match &self.0 {
            Value::String(s) => format!("{s:?}"),
            other => other.to_string(),
        }
    }
}

impl From<u64> for Number {
    fn from(n: u64) -> Self {
        Number(Value::from(n))
    }
}

impl From<&str> for Number {
    fn from(s: &str) -> Self {
        Number(Value::from(s))
    }
}

impl JsonSchema for Number {
    fn schema_name() -> Cow<'static, str> {
        "Number".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "minLength": 1, "maxLength": 40}
            ]
        })
    }
}

/// A device named by its path (`/dev/i2c-1`) or by its number (`1`, `"0.1"`), as a JSON
/// string or integer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct DeviceName(Value);

impl DeviceName {
    /// The name as text (`1` for the integer 1).
    pub fn text(&self) -> String {
        match &self.0 {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

impl From<&str> for DeviceName {
    fn from(s: &str) -> Self {
        DeviceName(Value::from(s))
    }
}

impl JsonSchema for DeviceName {
    fn schema_name() -> Cow<'static, str> {
        "DeviceName".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "minLength": 1, "maxLength": 255}
            ]
        })
    }
}

/// Parses `72`, `0x48`, `0X48`, `0x2000_0000`. No sign, no spaces, no other bases.
pub(crate) fn parse_u64(s: &str) -> Result<u64, String> {
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(rest) => (rest, 16),
        None => (s, 10),
    };
    let bad =
        || format!("{s:?} is not a number; write it in decimal (72) or in hex with 0x (\"0x48\")");
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return Err(bad());
    }
    let mut value: u64 = 0;
    for c in digits.chars().filter(|c| *c != '_') {
        let d = c.to_digit(radix).ok_or_else(bad)?;
        value = value
            .checked_mul(u64::from(radix))
            .and_then(|v| v.checked_add(u64::from(d)))
            .ok_or_else(|| format!("{s:?} is larger than 2^64-1"))?;
    }
    Ok(value)
}

/// The value of a number field, or an error naming the field.
pub(crate) fn number(field: &str, n: &Number) -> Result<u64, ToolError> {
    n.parse()
        .map_err(|why| ToolError::invalid(format!("/{field}"), format!("`{field}` {why}")))
}

/// A number that must lie in `lo..=hi`; `what` explains the range.
pub(crate) fn number_in(
    field: &str,
    n: &Number,
    lo: u64,
    hi: u64,
    what: &str,
) -> Result<u64, ToolError> {
    let v = number(field, n)?;
    in_range(field, v, lo, hi, what)
}

/// Refuses `v` outside `lo..=hi`, in hex when the range is written in hex.
pub(crate) fn in_range(
    field: &str,
    v: u64,
    lo: u64,
    hi: u64,
    what: &str,
) -> Result<u64, ToolError> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(ToolError::invalid(
            format!("/{field}"),
            format!("`{field}` is {v} ({v:#x}), outside {lo}..={hi} ({lo:#x}..={hi:#x}): {what}"),
        ))
    }
}

/// Refuses a field that has no meaning for the action, instead of ignoring it.
pub(crate) fn unused<T>(field: &str, value: &Option<T>, action: &str) -> Result<(), ToolError> {
    if value.is_some() {
        return Err(ToolError::invalid(
            format!("/{field}"),
            format!("`{field}` has no meaning for action `{action}`; leave it out"),
        ));
    }
    Ok(())
}

/// A field the action needs.
pub(crate) fn needed<'a, T>(
    field: &str,
    value: &'a Option<T>,
    action: &str,
    example: &str,
) -> Result<&'a T, ToolError> {
    value.as_ref().ok_or_else(|| {
        ToolError::invalid(
            format!("/{field}"),
            format!("action `{action}` needs `{field}`, e.g. {example}"),
        )
    })
}

/// Parses hex bytes: `"DEADBEEF"`, `"de ad be ef"`, `"0xde 0xad"`, `"de:ad"`, `"de,ad"`.
/// Every byte is two digits (a group may hold several bytes); at least one byte, at most `max`.
pub(crate) fn hex_bytes(field: &str, s: &str, max: usize) -> Result<Vec<u8>, ToolError> {
    let err = |msg: String| ToolError::invalid(format!("/{field}"), msg);
    let mut out = Vec::new();
    for group in s
        .split(|c: char| c.is_ascii_whitespace() || c == ',' || c == ':')
        .filter(|g| !g.is_empty())
    {
        let digits = group
            .strip_prefix("0x")
            .or_else(|| group.strip_prefix("0X"))
            .unwrap_or(group);
        if let Some(bad) = digits.chars().find(|c| !c.is_ascii_hexdigit()) {
            return Err(err(format!(
                "`{field}` must be hex bytes such as \"de ad be ef\" or \"0x01 0x02\", but {group:?} holds {bad:?}"
            )));
        }
        if digits.is_empty() || digits.len() % 2 != 0 {
            return Err(err(format!(
                "`{field}` holds {group:?}, an odd number of hex digits; write every byte as two digits (\"0x01\", not \"0x1\")"
            )));
        }
        for pair in digits.as_bytes().chunks(2) {
            let text = std::str::from_utf8(pair).unwrap_or("00");
            // The digits were checked above, so this cannot fail; map it anyway.
            let byte = u8::from_str_radix(text, 16)
                .map_err(|_| err(format!("`{field}` holds the bad byte {text:?}")))?;
            out.push(byte);
            if out.len() > max {
                return Err(err(format!(
                    "`{field}` holds more than {max} bytes; send at most {max} per call"
                )));
            }
        }
    }
    if out.is_empty() {
        return Err(err(format!(
            "`{field}` holds no bytes; give hex bytes such as \"de ad be ef\""
        )));
    }
    Ok(out)
}

/// Checks the shape of a device path: absolute, plain components (no `.`, `..` or empty ones),
/// no control characters. Whether it may be opened is the allow list's business.
pub(crate) fn device_path(field: &str, input: &str, example: &str) -> Result<PathBuf, ToolError> {
    let err = |msg: String| ToolError::invalid(format!("/{field}"), msg);
    if let Some(c) = input.chars().find(|c| c.is_control()) {
        return Err(err(format!(
            "`{field}` contains the control character {c:?}; give a device path such as {example}"
        )));
    }
    if input.len() > 255 {
        return Err(err(format!(
            "`{field}` is {} bytes long; give a device path such as {example}",
            input.len()
        )));
    }
    if !input.starts_with('/') {
        return Err(err(format!(
            "`{field}` is {input:?}, not an absolute device path; give one such as {example}"
        )));
    }
    let plain = input.len() > 1
        && !input.ends_with('/')
        && !input.contains("//")
        && Path::new(input)
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        && !input.split('/').any(|part| part == "." || part == "..");
    if !plain {
        return Err(ToolError::Denied(format!(
            "The device path {input:?} is not a plain absolute path (it has `.`, `..`, an empty component or a trailing `/`); give the device's exact path, such as {example}."
        )));
    }
    Ok(PathBuf::from(input))
}

/// Refuses a device that is not on the policy's device allow list. The policy already denies
/// such a call before it runs; this keeps the tools safe when called without the stack.
pub(crate) fn ensure_allowed(ctx: &ToolContext, path: &Path) -> Result<(), ToolError> {
    if ctx.policy.device_allowed(path) {
        return Ok(());
    }
    Err(ToolError::Denied(format!(
        "{} is not on the device allow list (policy.allowed_devices), so it is not opened; ask the user to add it, or use a device that hardware_info shows as allowed.",
        path.display()
    )))
}

/// Turns an I/O error on a device into a sentence that says what to do next. `kind` names
/// the device kind (`I2C bus`, `SPI device`, `serial port`), `doing` the operation.
pub(crate) fn device_failure(path: &Path, kind: &str, doing: &str, e: &io::Error) -> ToolError {
    let p = path.display();
    let errno = |x: rustix::io::Errno| e.raw_os_error() == Some(x.raw_os_error());
    if e.kind() == io::ErrorKind::NotFound {
        return ToolError::NotFound(format!(
            "{p} does not exist; hardware_info lists the devices attached now."
        ));
    }
    if e.kind() == io::ErrorKind::PermissionDenied {
        return ToolError::Denied(format!(
            "The operating system refused to open {p} (permission denied); the user running Toolshed needs read-write access to it (often the dialout, i2c or spi group)."
        ));
    }
    if errno(rustix::io::Errno::NOTTY) || (errno(rustix::io::Errno::INVAL) && doing == "open") {
        return ToolError::Failed(format!(
            "{p} is not a working {kind} (it refused the {kind} ioctl); check the path with hardware_info."
        ));
    }
    if errno(rustix::io::Errno::BUSY) || e.kind() == io::ErrorKind::WouldBlock {
        return ToolError::Failed(format!(
            "{p} is busy (another program holds it); close that program or wait, then try again."
        ));
    }
    ToolError::Failed(format!("Could not {doing} {p} ({kind}): {e}."))
}

/// `de ad be ef`.
pub(crate) fn hex_spaced(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 3);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Bytes as text for the model: printable ASCII as is, `\n`, `\r`, `\t`, `\\` escaped, and
/// everything else as `\xNN`.
pub(crate) fn escaped(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_parse_strictly() {
        let ok: &[(&str, u64)] = &[
            ("72", 72),
            ("0x48", 0x48),
            ("0X4f", 0x4f),
            ("0x2000_0000", 0x2000_0000),
            ("18446744073709551615", u64::MAX),
            ("0xffffffffffffffff", u64::MAX),
        ];
        for (s, want) in ok {
            assert_eq!(parse_u64(s), Ok(*want), "{s}");
        }
        for bad in [
            "",
            "0x",
            "x48",
            "48h",
            "-1",
            "+1",
            " 72",
            "72 ",
            "0x4g",
            "1e3",
            "0b101",
            "0o17",
            "_1",
            "1_",
            "1__0",
            "0x_1",
            "18446744073709551616",
            "0x1_0000_0000_0000_0000",
        ] {
            assert!(parse_u64(bad).is_err(), "{bad:?} should be refused");
        }
        assert_eq!(Number::from(7).parse(), Ok(7));
        assert!(Number(serde_json::json!(-1)).parse().is_err());
        assert!(Number(serde_json::json!(1.5)).parse().is_err());
        assert!(Number(serde_json::json!(true)).parse().is_err());
    }

    #[test]
    fn hex_bytes_accept_the_usual_spellings_and_nothing_else() {
        let want = vec![0xde, 0xad, 0xbe, 0xef];
        for s in [
            "deadbeef",
            "DEADBEEF",
            "de ad be ef",
            "0xde 0xad 0xbe 0xef",
            "de:ad:be:ef",
            "de,ad,be,ef",
            "0xdead 0xbeef",
            "  de ad\tbe\nef  ",
        ] {
            assert_eq!(hex_bytes("data", s, 4).unwrap(), want, "{s:?}");
        }
        for bad in [
            "",
            "   ",
            "0x",
            "d",
            "0x1",
            "dea",
            "de ad b",
            "zz",
            "de-ad",
            "0xde 0xg0",
            "de\0ad",
            "ÿÿ",
        ] {
            let e = hex_bytes("data", bad, 4).unwrap_err();
            assert!(e.to_string().contains("`data`"), "{bad:?}: {e}");
        }
        assert!(hex_bytes("data", "0102030405", 4).is_err(), "more than max");
        assert_eq!(hex_bytes("data", "01020304", 4).unwrap().len(), 4);
    }

    #[test]
    fn device_paths_are_plain_and_absolute() {
        for ok in [
            "/dev/ttyUSB0",
            "/dev/i2c-1",
            "/dev/serial/by-id/usb-FTDI_1-if00",
        ] {
            assert_eq!(
                device_path("port", ok, "/dev/ttyUSB0").unwrap(),
                PathBuf::from(ok)
            );
        }
        for bad in [
            "",
            "dev/ttyUSB0",
            "ttyUSB0",
            "/",
            "/dev/../etc/passwd",
            "/dev/./ttyUSB0",
            "/dev//ttyUSB0",
            "/dev/ttyUSB0/",
            "/dev/tty\nUSB0",
            "/dev/tty\0",
            "../dev/ttyUSB0",
        ] {
            assert!(device_path("port", bad, "/dev/ttyUSB0").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn bytes_are_shown_safely() {
        assert_eq!(hex_spaced(&[0, 0xff, 0x10]), "00 ff 10");
        assert_eq!(escaped(b"ok\r\n\x00\x7f\\"), "ok\\r\\n\\x00\\x7f\\\\");
    }
}
