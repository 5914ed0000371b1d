use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

use crate::check::{
    DeviceName, device_failure, device_path, ensure_allowed, hex_bytes, hex_spaced, in_range,
    needed, unused,
};
use crate::config::Config;
use crate::device::{Devices, SpiSettings};
use crate::discover;
use crate::hardware_info::HARDWARE_STATE;

/// The most bytes one transfer moves (the spidev driver's default buffer size).
pub const SPI_MAX_BYTES: usize = 4096;
/// The slowest clock accepted, in Hz.
pub const SPI_MIN_SPEED_HZ: u64 = 1_000;
/// The fastest clock accepted, in Hz.
pub const SPI_MAX_SPEED_HZ: u64 = 100_000_000;
/// The clock used when a call gives none, in Hz.
pub const SPI_DEFAULT_SPEED_HZ: u32 = 1_000_000;

/// What `spi` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SpiAction {
    /// List the SPI devices attached (/dev/spidev*) and whether they are allowed.
    List,
    /// Clock `data` out to `device` and return the bytes clocked in (full duplex).
    Transfer,
}

/// Arguments of `spi`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpiArgs {
    /// `list` shows the SPI devices attached; `transfer` sends `data` and returns what came back.
    pub action: SpiAction,
    /// The SPI device: its path (`/dev/spidev0.0`) or bus.chip-select (`"0.0"`). It must be on
    /// the device allow list. Only for transfer.
    pub device: Option<DeviceName>,
    /// The bytes to clock out, in hex ("9f 00 00 00"), 1 to 4096 bytes; as many bytes are
    /// clocked in and returned. Only for transfer.
    pub data: Option<String>,
    /// The clock in Hz, 1000..=100000000 (default 1000000). Only for transfer.
    pub speed_hz: Option<u64>,
    /// The SPI mode, 0..=3 (clock polarity and phase; default 0). Only for transfer.
    pub mode: Option<u64>,
    /// Bits per word, 1..=8 (default 8); every data byte must fit in that many bits. Only for
    /// transfer.
    pub bits_per_word: Option<u64>,
}

#[derive(Debug, Clone)]
enum Plan {
    List,
    Transfer {
        device: PathBuf,
        data: Vec<u8>,
        settings: SpiSettings,
    },
}

/// `spi`: list SPI devices and run full-duplex transfers.
#[derive(Debug, Clone)]
pub struct Spi {
    config: Arc<Config>,
    devices: Arc<dyn Devices>,
}

impl Spi {
    pub(crate) fn new(config: Arc<Config>, devices: Arc<dyn Devices>) -> Self {
        Spi { config, devices }
    }

    fn plan(&self, args: &SpiArgs) -> Result<Plan, ToolError> {
        match args.action {
            SpiAction::List => {
                unused("device", &args.device, "list")?;
                unused("data", &args.data, "list")?;
                unused("speed_hz", &args.speed_hz, "list")?;
                unused("mode", &args.mode, "list")?;
                unused("bits_per_word", &args.bits_per_word, "list")?;
                Ok(Plan::List)
            }
            SpiAction::Transfer => {
                let device = needed("device", &args.device, "transfer", "\"/dev/spidev0.0\"")?;
                let device = device_path_of(&self.config, device)?;
                let mode = match args.mode {
                    None => 0,
                    Some(m) => in_range("mode", m, 0, 3, "SPI modes are 0, 1, 2 and 3")? as u8,
                };
                let speed_hz = match args.speed_hz {
                    None => SPI_DEFAULT_SPEED_HZ,
                    Some(s) => in_range(
                        "speed_hz",
                        s,
                        SPI_MIN_SPEED_HZ,
                        SPI_MAX_SPEED_HZ,
                        "give the clock in Hz that the device's datasheet allows, e.g. 1000000",
                    )? as u32,
                };
                let bits_per_word = match args.bits_per_word {
                    None => 8,
                    Some(b) => in_range(
                        "bits_per_word",
                        b,
                        1,
                        8,
                        "words of 1 to 8 bits are sent one per byte",
                    )? as u8,
                };
                let data = needed("data", &args.data, "transfer", "\"9f 00 00 00\"")?;
                let data = hex_bytes("data", data, SPI_MAX_BYTES)?;
                if bits_per_word < 8
                    && let Some((i, b)) = data
                        .iter()
                        .enumerate()
                        .find(|(_, b)| u32::from(**b) >= 1u32 << bits_per_word)
                {
                    return Err(ToolError::invalid(
                        "/data",
                        format!(
                            "byte {i} of `data` is {b:#04x}, which does not fit in {bits_per_word} bits per word; send values below {:#04x} or use bits_per_word 8",
                            1u32 << bits_per_word
                        ),
                    ));
                }
                Ok(Plan::Transfer {
                    device,
                    data,
                    settings: SpiSettings {
                        mode,
                        speed_hz,
                        bits_per_word,
                    },
                })
            }
        }
    }
}

/// `"0.1"` → `<dev_dir>/spidev0.1`; a path is checked for shape only.
fn device_path_of(config: &Config, device: &DeviceName) -> Result<PathBuf, ToolError> {
    let text = device.text();
    if let Some((b, c)) = text.split_once('.')
        && let (Ok(b), Ok(c)) = (b.parse::<u16>(), c.parse::<u16>())
        && text.bytes().all(|x| x.is_ascii_digit() || x == b'.')
    {
        return Ok(config.dev_dir.join(format!("spidev{b}.{c}")));
    }
    device_path("device", &text, "/dev/spidev0.0 or \"0.0\"")
}

#[async_trait]
impl Tool for Spi {
    const NAME: &'static str = "spi";
    type Args = SpiArgs;

    fn description(&self) -> String {
        "List SPI devices, or run one full-duplex SPI transfer: clock hex `data` out to a \
         device (/dev/spidevB.C) and return the bytes clocked in. Mode 0-3, clock \
         1 kHz-100 MHz, 1-8 bits per word, at most 4096 bytes; every value is checked before \
         the device is opened. A transfer can change the device and needs approval in \
         supervised mode. The device must be on the device allow list (see hardware_info)."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE.open_world(true)
    }

    fn access(&self, _ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        Ok(match self.plan(args)? {
            Plan::List => vec![Access::State {
                store: HARDWARE_STATE.into(),
                write: false,
            }],
            Plan::Transfer { device, .. } => vec![Access::Device {
                path: device,
                write: true,
            }],
        })
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        match self.plan(&args)? {
            Plan::List => {
                let config = Arc::clone(&self.config);
                let found = blocking(ctx, move || Ok(discover::spi_devices(&config))).await?;
                Ok(ToolOutput::text(format!(
                    "SPI devices in {}:\n{}",
                    self.config.dev_dir.display(),
                    discover::lines(ctx, &found).trim_end()
                ))
                .with_structured(json!({"devices": discover::json(ctx, &found)})))
            }
            Plan::Transfer {
                device,
                data,
                settings,
            } => {
                ensure_allowed(ctx, &device)?;
                let devices = Arc::clone(&self.devices);
                blocking(ctx, move || {
                    let mut spi = devices
                        .open_spi(&device, &settings)
                        .map_err(|e| device_failure(&device, "SPI device", "open", &e))?;
                    let mut rx = vec![0u8; data.len()];
                    spi.transfer(&data, &mut rx)
                        .map_err(|e| device_failure(&device, "SPI device", "transfer on", &e))?;
                    Ok(ToolOutput::text(format!(
                        "Transferred {} byte(s) on {} (mode {}, {} Hz, {} bits per word).\nsent:     {}\nreceived: {}",
                        data.len(),
                        device.display(),
                        settings.mode,
                        settings.speed_hz,
                        settings.bits_per_word,
                        hex_spaced(&data),
                        hex_spaced(&rx)
                    ))
                    .with_structured(json!({
                        "device": device.display().to_string(),
                        "mode": settings.mode,
                        "speed_hz": settings.speed_hz,
                        "bits_per_word": settings.bits_per_word,
                        "sent": hex_spaced(&data),
                        "received": hex_spaced(&rx),
                    })))
                })
                .await
            }
        }
    }
}
