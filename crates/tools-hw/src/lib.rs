//! The hardware family: `hardware_info` (known boards and what is attached), `serial`, `i2c`,
//! `spi`, `hardware_memory` (memory windows and debug probes) and, with the `screenshot`
//! feature, `screenshot`.
//!
//! Hardware is where a wrong write bricks a device, so this crate has two rules: nothing is
//! opened that is not on an allow list, and every argument is checked before any I/O.
//!
//! # Allow lists
//!
//! Every call that opens a device declares [`tool_core::Access::Device`] with the exact path
//! it will open and whether it writes. The policy denies any path that is not on
//! `policy.allowed_devices` (exact paths, or patterns such as `/dev/ttyUSB*` whose wildcards stay
//! within one path component; see [`tool_core::Policy::device_allowed`]), asks for writes in supervised mode and
//! refuses all device access in read-only mode. The tools check the allow list again right
//! before they open anything, so they stay safe when called without the layer stack. The
//! [`Config`] does not grant access: it says where to *look* (serial-port patterns, `/dev`)
//! and which memory windows exist, and discovery marks each device with whether it is allowed.
//! Discovery (`hardware_info`, `serial list`, `spi list`) only lists names and opens nothing;
//! it declares an [`tool_core::Access::State`] on the `hardware` store so that per-tool rules
//! apply to it.
//!
//! # Validation before I/O
//!
//! Arguments are parsed into a checked plan in `access()` — before the policy runs — and again
//! in `call()`. I2C addresses must lie in 0x03..=0x77 (0x00–0x02 and 0x78–0x7F are reserved),
//! registers in 0x00..=0xFF, lengths in 1..=32; SPI modes in 0..=3, clocks in
//! 1 kHz..=100 MHz, words of 1..=8 bits with every byte fitting; serial baud rates must be
//! standard rates; numbers may be JSON integers or strings (`72`, `"0x48"`, `"0x2000_0000"`)
//! and hex byte strings (`"de ad be ef"`) are parsed strictly. A value that fails a check is
//! refused with a sentence naming the field and the allowed range, never replaced by a
//! default, and a field that has no meaning for the chosen action is refused rather than
//! ignored. Device paths must be plain absolute paths (no `.`, `..` or empty components), and
//! a screenshot's file goes through [`tool_core::Workspace`] like any other write.
//!
//! # Backends and traits
//!
//! - I2C and SPI go through the [`Devices`] trait. [`LinuxDevices`] is the real
//!   implementation over linux-embedded-hal (`I2C_RDWR` and `SPI_IOC_MESSAGE` ioctls on the
//!   character devices); tests plug in a fake that records every byte, through
//!   [`tools_with_devices`].
//! - Serial ports are opened with tokio-serial (exclusive, raw mode) and tested over a real
//!   pseudo-terminal pair.
//! - `hardware_memory` has two backends. Memory windows ([`MemoryWindow`]) map an address
//!   range onto a device or file (`/dev/mem`, a memory image); read-only and writable windows
//!   are configured separately, and a range must lie wholly inside one window (computed with
//!   checked arithmetic, so ranges that wrap around are refused). A debug probe is driven
//!   through the `probe-rs` program (`probe-rs read|write --chip … b8 …`) with tool-core's
//!   process helper; addresses are checked against the board's memory map from the board
//!   table, writes only reach RAM and peripheral registers, and a missing `probe-rs` is
//!   reported with how to install it.
//! - `screenshot` uses xcap (X11, Wayland through the portal) and the `image` crate (PNG only)
//!   to crop and scale; the capture runs on a blocking thread.
//!
//! The one module that opens device nodes and lists `/dev` (`device.rs`) opts out of the
//! workspace's `disallowed-methods` lint, with the reason written at its top.
//!
//! # Features
//!
//! - `screenshot` (off by default): adds the `screenshot` tool. It links xcap, which needs the
//!   Debian packages `libxcb1-dev libwayland-dev libgbm-dev libpipewire-0.3-dev libclang-dev`
//!   to build. Without the feature the tool is not registered at all. No feature switches a
//!   check off.
//!
//! # Example
//!
//! The board table and the tools, without opening any device:
//!
//! ```
//! let tools = tools_hw::tools(&tools_hw::Config::default());
//! let names: Vec<_> = tools.iter().map(|t| t.spec().name.clone()).collect();
//! assert!(names.iter().any(|n| n == "hardware_info"));
//! assert!(names.iter().any(|n| n == "i2c"));
//! assert!(tools_hw::find_board("no such board").is_none());
//! ```

mod boards;
mod check;
mod config;
mod device;
mod discover;
mod hardware_info;
mod hardware_memory;
mod i2c;
#[cfg(feature = "screenshot")]
mod screenshot;
mod serial;
mod spi;

use std::sync::Arc;

use tool_core::{Alias, DynTool, typed};

pub use boards::{BOARDS, Board, MemoryRegion, RegionKind, find_board};
pub use check::{DeviceName, Number};
pub use config::{Config, DEFAULT_SCREENSHOT_MAX_WIDTH, DEFAULT_SERIAL_PORTS, MemoryWindow};
pub use device::{Devices, I2cBus, LinuxDevices, SpiBus, SpiSettings};
pub use hardware_info::{HardwareInfo, HardwareInfoArgs};
pub use hardware_memory::{
    HardwareMemory, HardwareMemoryArgs, MEMORY_DEFAULT_READ_BYTES, MEMORY_MAX_BYTES, MemoryAction,
};
pub use i2c::{I2C_ADDRESS_MAX, I2C_ADDRESS_MIN, I2C_MAX_BYTES, I2c, I2cAction, I2cArgs};
#[cfg(feature = "screenshot")]
pub use screenshot::{Region, SCREENSHOT_MAX_SIDE, Screenshot, ScreenshotArgs};
pub use serial::{
    DataEncoding, SERIAL_BAUD_RATES, SERIAL_DEFAULT_BAUD, SERIAL_DEFAULT_READ_BYTES,
    SERIAL_DEFAULT_TIMEOUT_MS, SERIAL_MAX_READ_BYTES, SERIAL_MAX_TIMEOUT_MS,
    SERIAL_MAX_WRITE_BYTES, Serial, SerialAction, SerialArgs,
};
pub use spi::{
    SPI_DEFAULT_SPEED_HZ, SPI_MAX_BYTES, SPI_MAX_SPEED_HZ, SPI_MIN_SPEED_HZ, Spi, SpiAction,
    SpiArgs,
};

/// Every tool of this crate, on the real Linux devices.
pub fn tools(config: &Config) -> Vec<Arc<dyn DynTool>> {
    tools_with_devices(config, Arc::new(LinuxDevices))
}

/// Every tool of this crate, with I2C and SPI going through `devices` (a fake in tests).
pub fn tools_with_devices(config: &Config, devices: Arc<dyn Devices>) -> Vec<Arc<dyn DynTool>> {
    let config = Arc::new(config.clone());
    #[cfg_attr(not(feature = "screenshot"), allow(unused_mut))]
    let mut tools = vec![
        typed(HardwareInfo::new(Arc::clone(&config))),
        typed(Serial::new(Arc::clone(&config))),
        typed(HardwareMemory::new(Arc::clone(&config))),
        typed(I2c::new(Arc::clone(&config), Arc::clone(&devices))),
        typed(Spi::new(Arc::clone(&config), devices)),
    ];
    #[cfg(feature = "screenshot")]
    tools.push(typed(Screenshot::new(Arc::clone(&config))));
    tools
}

/// Seed-compatible names: none needed, the canonical names are NullClaw's own
/// (`hardware_info`, `hardware_memory`, `i2c`, `spi`, `screenshot`).
pub const ALIASES: &[Alias] = &[];
