use std::fmt::Write as _;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

use crate::boards::{BOARDS, board_ids, find_board, human_size};
use crate::config::Config;
use crate::discover;

/// Arguments of `hardware_info`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HardwareInfoArgs {
    /// A board id (`nucleo-f401re`, `rpi-pico`, `esp32`, `arduino-uno`, `stm32f4-discovery`)
    /// to show only that board's chip and memory map. Leave it out to list every known board.
    pub board: Option<String>,
}

/// `hardware_info`: known boards (chip, memory map) and what is attached right now.
#[derive(Debug, Clone)]
pub struct HardwareInfo {
    config: Arc<Config>,
}

impl HardwareInfo {
    pub(crate) fn new(config: Arc<Config>) -> Self {
        HardwareInfo { config }
    }
}

/// The store name hardware discovery declares (`Access::State`), so that per-tool rules apply.
pub(crate) const HARDWARE_STATE: &str = "hardware";

#[async_trait]
impl Tool for HardwareInfo {
    const NAME: &'static str = "hardware_info";
    type Args = HardwareInfoArgs;

    fn description(&self) -> String {
        format!(
            "Show known development boards (chip, probe-rs chip name, memory map) and the \
             hardware attached right now: serial ports, I2C buses (/dev/i2c-*), SPI devices \
             (/dev/spidev*) and GPIO chips, each marked with whether the device allow list lets \
             the serial, i2c and spi tools open it. Known boards: {}. Opens no device.",
            board_ids()
        )
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn access(&self, _ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        board(args.board.as_deref())?;
        Ok(vec![Access::State {
            store: HARDWARE_STATE.into(),
            write: false,
        }])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let boards = board(args.board.as_deref())?;
        let config = Arc::clone(&self.config);
        let (serial, notes, i2c, spi, gpio) = blocking(ctx, move || {
            let (serial, notes) = discover::serial_ports(&config);
            Ok((
                serial,
                notes,
                discover::i2c_buses(&config),
                discover::spi_devices(&config),
                discover::gpio_chips(&config),
            ))
        })
        .await?;

        let mut text = String::from("Boards:\n");
        for b in &boards {
            text.push_str(&b.describe());
        }
        text.push_str("\nAttached now:\nSerial ports (");
        text.push_str(&self.config.serial_ports.join(", "));
        text.push_str("):\n");
        text.push_str(&discover::lines(ctx, &serial));
        let _ = write!(
            text,
            "I2C buses ({}/i2c-*):\n{}",
            self.config.dev_dir.display(),
            discover::lines(ctx, &i2c)
        );
        let _ = write!(
            text,
            "SPI devices ({}/spidev*):\n{}",
            self.config.dev_dir.display(),
            discover::lines(ctx, &spi)
        );
        let _ = write!(
            text,
            "GPIO chips ({}/gpiochip*):\n{}",
            self.config.dev_dir.display(),
            discover::lines(ctx, &gpio)
        );
        let windows: Vec<_> = self
            .config
            .read_windows
            .iter()
            .map(|w| (w, false))
            .chain(self.config.write_windows.iter().map(|w| (w, true)))
            .collect();
        if !windows.is_empty() {
            text.push_str("Memory windows (hardware_memory):\n");
            for (w, writable) in &windows {
                let _ = writeln!(
                    text,
                    "  {} {:#x}..{:#x} ({}) on {}  ({}{})",
                    w.name,
                    w.base,
                    w.base.saturating_add(w.size),
                    human_size(w.size),
                    w.path.display(),
                    if *writable { "read-write" } else { "read-only" },
                    if discover::allowed(ctx, &w.path) {
                        ""
                    } else {
                        ", not on the device allow list"
                    }
                );
            }
        }
        if let Some(chip) = &self.config.probe_chip {
            let _ = writeln!(text, "Debug probe target (probe-rs): {chip}");
        }
        for note in &notes {
            let _ = writeln!(text, "Note: {note}");
        }

        let structured = json!({
            "boards": boards.iter().map(|b| b.to_json()).collect::<Vec<_>>(),
            "attached": {
                "serial": discover::json(ctx, &serial),
                "i2c": discover::json(ctx, &i2c),
                "spi": discover::json(ctx, &spi),
                "gpio": discover::json(ctx, &gpio),
            },
            "memory_windows": windows.iter().map(|(w, writable)| json!({
                "name": w.name,
                "base": format!("{:#x}", w.base),
                "size": w.size,
                "path": w.path.display().to_string(),
                "writable": writable,
                "allowed": discover::allowed(ctx, &w.path),
            })).collect::<Vec<_>>(),
            "probe_chip": self.config.probe_chip,
            "notes": notes,
        });
        Ok(ToolOutput::text(text.trim_end().to_string()).with_structured(structured))
    }
}

fn board(name: Option<&str>) -> Result<Vec<&'static crate::boards::Board>, ToolError> {
    match name {
        None => Ok(BOARDS.iter().collect()),
        Some(name) => find_board(name).map(|b| vec![b]).ok_or_else(|| {
            ToolError::NotFound(format!(
                "There is no board called {name:?} in the table; known boards: {}. Leave `board` out to list them all.",
                board_ids()
            ))
        }),
    }
}
