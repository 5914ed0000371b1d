//! The settings of the hardware tools. They come from the operator's configuration, never from a
//! model's arguments: which serial ports are listed, which memory windows exist and whether they
//! may be written, which chip a debug probe talks to.
//!
//! The configuration does not grant access to anything: every device a call opens must also be
//! on the policy's device allow list (`policy.allowed_devices`), which decides.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The serial-port patterns listed when nothing else is configured: USB serial adapters and
/// USB CDC-ACM boards (Arduino, Pico, Nucleo virtual COM ports).
pub const DEFAULT_SERIAL_PORTS: &[&str] = &["/dev/ttyUSB*", "/dev/ttyACM*"];

/// The width a screenshot returned as image content is scaled down to when it is wider.
pub const DEFAULT_SCREENSHOT_MAX_WIDTH: u32 = 1280;

/// Settings of the hardware tools.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Where device nodes live (`/dev`). `hardware_info`, `spi list` and the `i2c` bus-number
    /// short form (`1` for `/dev/i2c-1`) look here.
    pub dev_dir: PathBuf,
    /// Absolute patterns of serial ports that `serial list` and `hardware_info` look for, such
    /// as `/dev/ttyUSB*` or `/dev/serial/by-id/*`. `*`, `?` and `[…]` may appear in the last
    /// component only.
    pub serial_ports: Vec<String>,
    /// Memory windows that `hardware_memory` may read but never write.
    pub read_windows: Vec<MemoryWindow>,
    /// Memory windows that `hardware_memory` may read and write.
    pub write_windows: Vec<MemoryWindow>,
    /// The probe-rs chip name (`STM32F401RETx`, `RP2040`) of the target a debug probe is
    /// attached to, used when a `hardware_memory` call names no board and its address lies in
    /// no memory window. `None`: such calls are refused.
    pub probe_chip: Option<String>,
    /// The probe-rs program: a name looked up on `PATH` (the default, `probe-rs`) or a path.
    pub probe_rs: OsString,
    /// How long one probe-rs run may take. Default 30 s.
    pub probe_timeout: Duration,
    /// Screenshots returned as image content are scaled down to this width (keeping the aspect
    /// ratio) when wider. A saved PNG keeps the full resolution. Default 1280.
    pub screenshot_max_width: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

impl Config {
    /// Devices under `/dev`, the [`DEFAULT_SERIAL_PORTS`], no memory windows, no probe chip,
    /// `probe-rs` from `PATH`, screenshots up to [`DEFAULT_SCREENSHOT_MAX_WIDTH`] wide.
    pub fn new() -> Config {
        Config {
            dev_dir: PathBuf::from("/dev"),
            serial_ports: DEFAULT_SERIAL_PORTS.iter().map(|s| s.to_string()).collect(),
            read_windows: Vec::new(),
            write_windows: Vec::new(),
            probe_chip: None,
            probe_rs: OsString::from("probe-rs"),
            probe_timeout: Duration::from_secs(30),
            screenshot_max_width: DEFAULT_SCREENSHOT_MAX_WIDTH,
        }
    }

    /// Looks for device nodes in `dir` instead of `/dev`.
    pub fn with_dev_dir(mut self, dir: impl Into<PathBuf>) -> Config {
        self.dev_dir = dir.into();
        self
    }

    /// Replaces the serial-port patterns (see [`Config::serial_ports`]).
    pub fn with_serial_ports<I, S>(mut self, patterns: I) -> Config
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.serial_ports = patterns.into_iter().map(Into::into).collect();
        self
    }

    /// Adds a memory window that may be read but never written.
    pub fn with_read_window(mut self, window: MemoryWindow) -> Config {
        self.read_windows.push(window);
        self
    }

    /// Adds a memory window that may be read and written.
    pub fn with_write_window(mut self, window: MemoryWindow) -> Config {
        self.write_windows.push(window);
        self
    }

    /// Sets the probe-rs chip of the attached target (see [`Config::probe_chip`]).
    pub fn with_probe_chip(mut self, chip: impl Into<String>) -> Config {
        self.probe_chip = Some(chip.into());
        self
    }

    /// Runs this probe-rs program (a name on `PATH` or a path) instead of `probe-rs`.
    pub fn with_probe_rs(mut self, program: impl Into<OsString>) -> Config {
        self.probe_rs = program.into();
        self
    }

    /// Sets how long one probe-rs run may take.
    pub fn with_probe_timeout(mut self, timeout: Duration) -> Config {
        self.probe_timeout = timeout;
        self
    }

    /// Sets the width returned screenshots are scaled down to (at least 16 pixels).
    pub fn with_screenshot_max_width(mut self, width: u32) -> Config {
        self.screenshot_max_width = width.max(16);
        self
    }
}

/// A range of addresses backed by a device or a file: `size` bytes starting at address `base`
/// are bytes `offset..offset + size` of `path`.
///
/// For `/dev/mem` the offset is usually the physical address itself
/// (`MemoryWindow::new("gpio", "/dev/mem", 0x3F20_0000, 0xB4).with_offset(0x3F20_0000)`); for a
/// memory image in a file it is where the range starts in the file. The path must also be on
/// the policy's device allow list. Whether a window may be written depends only on which list
/// it was added to ([`Config::with_read_window`] or [`Config::with_write_window`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryWindow {
    /// A short name shown to the model (`sram`, `gpio`).
    pub name: String,
    /// The device or file holding the bytes.
    pub path: PathBuf,
    /// The first address of the window.
    pub base: u64,
    /// The number of bytes in the window.
    pub size: u64,
    /// Where address `base` lies in `path`, in bytes. Default 0.
    pub offset: u64,
}

impl MemoryWindow {
    /// A window of `size` bytes at address `base`, backed by `path` from its first byte.
    pub fn new(name: impl Into<String>, path: impl AsRef<Path>, base: u64, size: u64) -> Self {
        MemoryWindow {
            name: name.into(),
            path: path.as_ref().to_path_buf(),
            base,
            size,
            offset: 0,
        }
    }

    /// Sets where address `base` lies in the file.
    pub fn with_offset(mut self, offset: u64) -> Self {
        self.offset = offset;
        self
    }

    /// The address one past the window's last byte, or `None` when the window reaches the end
    /// of the 64-bit address space (or past it, which the window refuses to serve).
    pub fn end(&self) -> Option<u64> {
        self.base.checked_add(self.size)
    }

    /// Whether the `len` bytes at `address` lie wholly inside the window (and inside the
    /// address space, and inside the file's 64-bit offsets).
    pub fn contains(&self, address: u64, len: u64) -> bool {
        let (Some(end), Some(last)) = (self.end(), address.checked_add(len)) else {
            return false;
        };
        self.size > 0
            && self.offset.checked_add(self.size).is_some()
            && address >= self.base
            && last <= end
    }

    /// The file offset of `address`, for an address inside the window.
    pub(crate) fn file_offset(&self, address: u64) -> Option<u64> {
        address
            .checked_sub(self.base)
            .and_then(|d| self.offset.checked_add(d))
    }
}

#[cfg(test)]
mod tests {
    use super::MemoryWindow;

    #[test]
    fn a_range_lies_wholly_inside_or_is_refused() {
        let w = MemoryWindow::new("w", "/dev/null", 0x1000, 0x100);
        assert!(w.contains(0x1000, 1));
        assert!(w.contains(0x1000, 0x100));
        assert!(w.contains(0x10ff, 1));
        assert!(!w.contains(0x10ff, 2), "straddles the end");
        assert!(!w.contains(0x0fff, 2), "straddles the start");
        assert!(!w.contains(0x1100, 1), "one past the end");
        assert!(!w.contains(u64::MAX, 2), "wraps around");
        let high = MemoryWindow::new("high", "/dev/null", u64::MAX - 0x1f, 0x10);
        assert!(high.contains(u64::MAX - 0x1f, 0x10));
        assert!(
            !high.contains(u64::MAX - 0x10, 0x10),
            "straddles the end near 2^64"
        );
        assert!(!high.contains(u64::MAX, 1));
        let overflowing = MemoryWindow::new("o", "/dev/null", u64::MAX - 1, 0x10);
        assert!(
            !overflowing.contains(u64::MAX - 1, 1),
            "a window past 2^64 serves nothing"
        );
        let far = MemoryWindow::new("f", "/dev/null", 0, 0x10).with_offset(u64::MAX - 4);
        assert!(!far.contains(0, 1), "file offsets past 2^64 serve nothing");
        assert_eq!(
            MemoryWindow::new("m", "/dev/mem", 0x3F20_0000, 0xB4)
                .with_offset(0x3F20_0000)
                .file_offset(0x3F20_0004),
            Some(0x3F20_0004)
        );
    }
}
