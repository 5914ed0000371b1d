//! The device layer: the one place this crate opens device nodes and lists `/dev`.
//!
//! Device nodes live outside the workspace by nature, so they cannot go through
//! [`tool_core::Workspace`]; instead, every tool declares [`tool_core::Access::Device`] for the
//! node a call opens, the policy decides (exact-path allow list), and the tool checks the allow
//! list again right before it calls in here. Serial ports are opened by `tokio-serial` in
//! `serial.rs`; screenshots go through xcap.
//!
//! I2C and SPI sit behind the [`Devices`] trait so that the tools' logic (validation, the bytes
//! sent, error mapping) runs unchanged against a fake where no bus exists; [`LinuxDevices`] is
//! the real implementation over linux-embedded-hal.

// This module is the device layer: it opens device nodes and memory-window files (already
// allowed by the policy's device allow list) and lists /dev for discovery, which the workspace
// cannot do because they lie outside it.
#![allow(clippy::disallowed_methods)]

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::{Path, PathBuf};

use embedded_hal::i2c::I2c as _;
use embedded_hal::spi::SpiDevice as _;
use linux_embedded_hal::spidev::{SpiModeFlags, SpidevOptions};
use linux_embedded_hal::{I2cdev, SpidevDevice};

/// Opens I2C buses and SPI devices. Implemented by [`LinuxDevices`] and by test fakes.
pub trait Devices: Send + Sync + fmt::Debug {
    /// Opens the I2C bus at `path` (a `/dev/i2c-N` character device).
    fn open_i2c(&self, path: &Path) -> io::Result<Box<dyn I2cBus>>;
    /// Opens the SPI device at `path` (a `/dev/spidevB.C` character device) and applies
    /// `settings`.
    fn open_spi(&self, path: &Path, settings: &SpiSettings) -> io::Result<Box<dyn SpiBus>>;
}

/// An open I2C bus. Addresses are 7-bit; each call is one combined transaction.
pub trait I2cBus: Send {
    /// Reads `buf.len()` bytes from the device at `address`.
    fn read(&mut self, address: u8, buf: &mut [u8]) -> io::Result<()>;
    /// Writes `bytes` to the device at `address`.
    fn write(&mut self, address: u8, bytes: &[u8]) -> io::Result<()>;
    /// Writes `bytes`, then reads `buf.len()` bytes after a repeated start (a register read).
    fn write_read(&mut self, address: u8, bytes: &[u8], buf: &mut [u8]) -> io::Result<()>;
}

/// An open, configured SPI device.
pub trait SpiBus: Send {
    /// Clocks `tx` out while clocking as many bytes into `rx` (full duplex, chip select held
    /// for the whole transfer). `rx.len() == tx.len()`.
    fn transfer(&mut self, tx: &[u8], rx: &mut [u8]) -> io::Result<()>;
}

/// The settings of an SPI transfer, already range-checked by the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpiSettings {
    /// SPI mode 0..=3 (clock polarity and phase).
    pub mode: u8,
    /// The clock in Hz.
    pub speed_hz: u32,
    /// Bits per word, 1..=8.
    pub bits_per_word: u8,
}

/// The real devices, through linux-embedded-hal (`I2C_RDWR` and `SPI_IOC_MESSAGE` ioctls).
#[derive(Debug, Default, Clone, Copy)]
pub struct LinuxDevices;

impl Devices for LinuxDevices {
    fn open_i2c(&self, path: &Path) -> io::Result<Box<dyn I2cBus>> {
        let dev = I2cdev::new(path).map_err(|e| i2c_io(&e))?;
        Ok(Box::new(LinuxI2c(dev)))
    }

    fn open_spi(&self, path: &Path, settings: &SpiSettings) -> io::Result<Box<dyn SpiBus>> {
        let mut dev = SpidevDevice::open(path).map_err(|e| clone_io(e.inner()))?;
        let mode = match settings.mode {
            0 => SpiModeFlags::SPI_MODE_0,
            1 => SpiModeFlags::SPI_MODE_1,
            2 => SpiModeFlags::SPI_MODE_2,
            _ => SpiModeFlags::SPI_MODE_3,
        };
        let options = SpidevOptions::new()
            .bits_per_word(settings.bits_per_word)
            .max_speed_hz(settings.speed_hz)
            .mode(mode)
            .build();
        dev.configure(&options)?;
        Ok(Box::new(LinuxSpi(dev)))
    }
}

struct LinuxI2c(I2cdev);

impl I2cBus for LinuxI2c {
    fn read(&mut self, address: u8, buf: &mut [u8]) -> io::Result<()> {
        self.0.read(address, buf).map_err(|e| i2c_io(e.inner()))
    }

    fn write(&mut self, address: u8, bytes: &[u8]) -> io::Result<()> {
        self.0.write(address, bytes).map_err(|e| i2c_io(e.inner()))
    }

    fn write_read(&mut self, address: u8, bytes: &[u8], buf: &mut [u8]) -> io::Result<()> {
        self.0
            .write_read(address, bytes, buf)
            .map_err(|e| i2c_io(e.inner()))
    }
}

struct LinuxSpi(SpidevDevice);

impl SpiBus for LinuxSpi {
    fn transfer(&mut self, tx: &[u8], rx: &mut [u8]) -> io::Result<()> {
        self.0.transfer(rx, tx).map_err(|e| clone_io(e.inner()))
    }
}

fn clone_io(e: &io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

fn i2c_io(e: &linux_embedded_hal::i2cdev::linux::LinuxI2CError) -> io::Error {
    use linux_embedded_hal::i2cdev::linux::LinuxI2CError;
    match e {
        LinuxI2CError::Errno(code) => io::Error::from_raw_os_error(*code),
        LinuxI2CError::Io(io) => clone_io(io),
    }
}

/// Reads `len` bytes at `offset` of a memory window's device or file.
pub(crate) fn read_window(path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let file = File::open(path)?;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}

/// Writes `data` at `offset` of a memory window's device or file, which must exist; it is never
/// created, truncated or extended past its end.
pub(crate) fn write_window(path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
    let file = OpenOptions::new().write(true).open(path)?;
    let meta = file.metadata()?;
    if meta.is_file() {
        let end = offset.saturating_add(data.len() as u64);
        if end > meta.len() {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
    }
    file.write_all_at(data, offset)?;
    match file.sync_data() {
        // Character devices such as /dev/mem have nothing to sync.
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => Ok(()),
        other => other,
    }
}

/// A device node found by discovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// Its path.
    pub(crate) path: PathBuf,
    /// Whether it is a character device (a regular file or a link to nothing is listed too,
    /// marked, so that a misconfiguration is visible).
    pub(crate) char_device: bool,
}

/// The entries of `dir` whose names match `matches`, sorted; a missing directory is empty.
pub(crate) fn list_matching(dir: &Path, matches: impl Fn(&str) -> bool) -> Vec<Found> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<Found> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            if !matches(&name) {
                return None;
            }
            let path = dir.join(&name);
            // Follow links (/dev/serial/by-id/* are links to the ttys).
            let char_device = std::fs::metadata(&path)
                .map(|m| m.file_type().is_char_device())
                .unwrap_or(false);
            Some(Found { path, char_device })
        })
        .collect();
    out.sort_by_key(|f| natural_key(&f.path));
    out
}

/// Sorts `ttyUSB2` before `ttyUSB10`.
fn natural_key(path: &Path) -> (String, u64, String) {
    let s = path.to_string_lossy();
    let digits_at = s
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_digit())
        .last()
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let number = s[digits_at..].parse().unwrap_or(0);
    (s[..digits_at].to_string(), number, s.to_string())
}
