use std::fmt::Write as _;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

use crate::check::{
    DeviceName, Number, device_failure, device_path, ensure_allowed, hex_bytes, hex_spaced,
    in_range, needed, number_in, unused,
};
use crate::config::Config;
use crate::device::{Devices, I2cBus};

/// The lowest 7-bit address a device may have: 0x00–0x02 are reserved (general call, CBUS,
/// other bus formats).
pub const I2C_ADDRESS_MIN: u8 = 0x03;
/// The highest 7-bit address a device may have: 0x78–0x7F are reserved (10-bit addressing,
/// future use).
pub const I2C_ADDRESS_MAX: u8 = 0x77;
/// The most bytes one read or write moves.
pub const I2C_MAX_BYTES: usize = 32;

/// What `i2c` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum I2cAction {
    /// Whether a device answers at `address` (a one-byte read).
    Detect,
    /// Which addresses 0x03..=0x77 answer on the bus (a one-byte read at each).
    Scan,
    /// Read `length` bytes from `address`, from `register` when given.
    Read,
    /// Write `value` to `address`, after `register` when given.
    Write,
}

impl I2cAction {
    fn as_str(self) -> &'static str {
        match self {
            I2cAction::Detect => "detect",
            I2cAction::Scan => "scan",
            I2cAction::Read => "read",
            I2cAction::Write => "write",
        }
    }
}

/// Arguments of `i2c`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct I2cArgs {
    /// `scan` lists the addresses that answer; `detect` checks one address; `read` reads bytes
    /// (from a register when `register` is given); `write` writes bytes.
    pub action: I2cAction,
    /// The bus: its device path (`/dev/i2c-1`) or its number (`1`). It must be on the device
    /// allow list; hardware_info lists the buses attached.
    pub bus: DeviceName,
    /// The device's 7-bit address, 0x03..=0x77, as an integer (72) or a hex string ("0x48").
    /// Needed by detect, read and write; not by scan.
    pub address: Option<Number>,
    /// An 8-bit register, 0x00..=0xFF (72 or "0x48"): read from it (write then repeated-start
    /// read), or write it before `value`. Only for read and write.
    pub register: Option<Number>,
    /// The bytes to write, in hex: "0x1f", "de ad be ef" (1 to 32 bytes). Only for write.
    pub value: Option<String>,
    /// How many bytes to read, 1..=32 (default 1). Only for read.
    pub length: Option<u64>,
}

/// A checked call.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Scan,
    Detect {
        address: u8,
    },
    Read {
        address: u8,
        register: Option<u8>,
        length: usize,
    },
    Write {
        address: u8,
        register: Option<u8>,
        value: Vec<u8>,
    },
}

#[derive(Debug, Clone)]
struct Plan {
    bus: PathBuf,
    op: Op,
}

/// `i2c`: detect, scan, read and write devices on an I2C bus.
#[derive(Debug, Clone)]
pub struct I2c {
    config: Arc<Config>,
    devices: Arc<dyn Devices>,
}

impl I2c {
    pub(crate) fn new(config: Arc<Config>, devices: Arc<dyn Devices>) -> Self {
        I2c { config, devices }
    }

    fn plan(&self, args: &I2cArgs) -> Result<Plan, ToolError> {
        let bus = bus_path(&self.config, &args.bus)?;
        let action = args.action.as_str();
        let address = |args: &I2cArgs| -> Result<u8, ToolError> {
            let n = needed("address", &args.address, action, "\"0x48\"")?;
            let v = number_in(
                "address",
                n,
                u64::from(I2C_ADDRESS_MIN),
                u64::from(I2C_ADDRESS_MAX),
                "7-bit I2C device addresses run from 0x03 to 0x77 (0x00-0x02 and 0x78-0x7F are reserved); give the address from the device's datasheet or from action=scan",
            )?;
            Ok(v as u8)
        };
        let register = |args: &I2cArgs| -> Result<Option<u8>, ToolError> {
            args.register
                .as_ref()
                .map(|r| {
                    number_in("register", r, 0, 0xFF, "registers are 8-bit (0x00-0xFF)")
                        .map(|v| v as u8)
                })
                .transpose()
        };
        let op = match args.action {
            I2cAction::Scan => {
                unused("address", &args.address, action)?;
                unused("register", &args.register, action)?;
                unused("value", &args.value, action)?;
                unused("length", &args.length, action)?;
                Op::Scan
            }
            I2cAction::Detect => {
                unused("register", &args.register, action)?;
                unused("value", &args.value, action)?;
                unused("length", &args.length, action)?;
                Op::Detect {
                    address: address(args)?,
                }
            }
            I2cAction::Read => {
                unused("value", &args.value, action)?;
                let length = match args.length {
                    None => 1,
                    Some(n) => in_range(
                        "length",
                        n,
                        1,
                        I2C_MAX_BYTES as u64,
                        "read between 1 and 32 bytes per call",
                    )? as usize,
                };
                Op::Read {
                    address: address(args)?,
                    register: register(args)?,
                    length,
                }
            }
            I2cAction::Write => {
                unused("length", &args.length, action)?;
                let value = needed("value", &args.value, action, "\"0x1f\"")?;
                Op::Write {
                    address: address(args)?,
                    register: register(args)?,
                    value: hex_bytes("value", value, I2C_MAX_BYTES)?,
                }
            }
        };
        Ok(Plan { bus, op })
    }
}

/// `1` → `<dev_dir>/i2c-1`; a path is checked for shape only.
fn bus_path(config: &Config, bus: &DeviceName) -> Result<PathBuf, ToolError> {
    let text = bus.text();
    if text.bytes().all(|b| b.is_ascii_digit())
        && let Ok(n) = text.parse::<u16>()
    {
        return Ok(config.dev_dir.join(format!("i2c-{n}")));
    }
    device_path("bus", &text, "/dev/i2c-1 or the bus number 1")
}

#[async_trait]
impl Tool for I2c {
    const NAME: &'static str = "i2c";
    type Args = I2cArgs;

    fn description(&self) -> String {
        "Talk to devices on an I2C bus: scan for addresses that answer, detect one address, \
         read bytes (optionally from a register), or write bytes. Addresses are 7-bit \
         (0x03-0x77), registers 8-bit, at most 32 bytes per read or write; every value is \
         checked before the bus is touched. Writes change the device and need approval in \
         supervised mode. The bus must be on the device allow list (see hardware_info)."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE.open_world(true)
    }

    fn access(&self, _ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        let plan = self.plan(args)?;
        Ok(vec![Access::Device {
            path: plan.bus,
            write: matches!(plan.op, Op::Write { .. }),
        }])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let plan = self.plan(&args)?;
        ensure_allowed(ctx, &plan.bus)?;
        let devices = Arc::clone(&self.devices);
        let cancel = ctx.cancel.clone();
        blocking(ctx, move || {
            let mut bus = devices
                .open_i2c(&plan.bus)
                .map_err(|e| device_failure(&plan.bus, "I2C bus", "open", &e))?;
            run(&plan, bus.as_mut(), &cancel)
        })
        .await
    }
}

/// Whether an error means "no device acknowledged": ENXIO is the standard, but drivers also
/// use EREMOTEIO, EIO and ENODEV.
fn is_nack(e: &io::Error) -> bool {
    use rustix::io::Errno;
    [Errno::NXIO, Errno::REMOTEIO, Errno::IO, Errno::NODEV]
        .iter()
        .any(|x| e.raw_os_error() == Some(x.raw_os_error()))
}

fn nack(plan: &Plan, address: u8) -> ToolError {
    ToolError::Failed(format!(
        "No device acknowledged address {address:#04x} on {}; check the wiring and the address (action=scan lists the addresses that answer).",
        plan.bus.display()
    ))
}

fn run(
    plan: &Plan,
    bus: &mut dyn I2cBus,
    cancel: &tool_core::CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let path = plan.bus.display().to_string();
    let fail = |doing: &str, e: &io::Error| device_failure(&plan.bus, "I2C bus", doing, e);
    match &plan.op {
        Op::Scan => {
            let mut found = Vec::new();
            for address in I2C_ADDRESS_MIN..=I2C_ADDRESS_MAX {
                if cancel.is_cancelled() {
                    return Err(ToolError::Cancelled);
                }
                let mut byte = [0u8];
                match bus.read(address, &mut byte) {
                    Ok(()) => found.push(address),
                    Err(e) if is_nack(&e) => {}
                    Err(e) => return Err(fail("scan", &e)),
                }
            }
            let mut text = format!(
                "Scanned {path} (0x03-0x77, one-byte reads): {} device(s) answered{}\n",
                found.len(),
                if found.is_empty() {
                    ".".to_string()
                } else {
                    format!(
                        ": {}.",
                        found
                            .iter()
                            .map(|a| format!("{a:#04x}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            );
            text.push_str(&grid(&found));
            Ok(ToolOutput::text(text).with_structured(json!({
                "bus": path,
                "found": found.iter().map(|a| format!("{a:#04x}")).collect::<Vec<_>>(),
            })))
        }
        Op::Detect { address } => {
            let mut byte = [0u8];
            let present = match bus.read(*address, &mut byte) {
                Ok(()) => true,
                Err(e) if is_nack(&e) => false,
                Err(e) => return Err(fail("read from", &e)),
            };
            Ok(ToolOutput::text(format!(
                "{} at address {address:#04x} on {path}.",
                if present {
                    "A device answered"
                } else {
                    "No device answered"
                }
            ))
            .with_structured(json!({
                "bus": path,
                "address": format!("{address:#04x}"),
                "present": present,
            })))
        }
        Op::Read {
            address,
            register,
            length,
        } => {
            let mut buf = vec![0u8; *length];
            let result = match register {
                Some(r) => bus.write_read(*address, &[*r], &mut buf),
                None => bus.read(*address, &mut buf),
            };
            match result {
                Ok(()) => {}
                Err(e) if is_nack(&e) => return Err(nack(plan, *address)),
                Err(e) => return Err(fail("read from", &e)),
            }
            let from = register
                .map(|r| format!(" register {r:#04x}"))
                .unwrap_or_default();
            Ok(ToolOutput::text(format!(
                "Read {length} byte(s) from {address:#04x}{from} on {path}: {}",
                hex_spaced(&buf)
            ))
            .with_structured(json!({
                "bus": path,
                "address": format!("{address:#04x}"),
                "register": register.map(|r| format!("{r:#04x}")),
                "hex": hex_spaced(&buf),
                "bytes": buf,
            })))
        }
        Op::Write {
            address,
            register,
            value,
        } => {
            let mut bytes = Vec::with_capacity(value.len() + 1);
            bytes.extend(register.iter().copied());
            bytes.extend_from_slice(value);
            match bus.write(*address, &bytes) {
                Ok(()) => {}
                Err(e) if is_nack(&e) => return Err(nack(plan, *address)),
                Err(e) => return Err(fail("write to", &e)),
            }
            let to = register
                .map(|r| format!(" register {r:#04x}"))
                .unwrap_or_default();
            Ok(ToolOutput::text(format!(
                "Wrote {} byte(s) to {address:#04x}{to} on {path}: {}",
                value.len(),
                hex_spaced(value)
            ))
            .with_structured(json!({
                "bus": path,
                "address": format!("{address:#04x}"),
                "register": register.map(|r| format!("{r:#04x}")),
                "written": hex_spaced(&bytes),
            })))
        }
    }
}

/// An i2cdetect-style grid of the addresses that answered.
fn grid(found: &[u8]) -> String {
    let mut s = String::from("     0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f\n");
    for row in 0..8u8 {
        let _ = write!(s, "{:02x}:", row * 16);
        for col in 0..16u8 {
            let a = row * 16 + col;
            if !(I2C_ADDRESS_MIN..=I2C_ADDRESS_MAX).contains(&a) {
                s.push_str("   ");
            } else if found.contains(&a) {
                let _ = write!(s, " {a:02x}");
            } else {
                s.push_str(" --");
            }
        }
        s.push('\n');
    }
    s
}
