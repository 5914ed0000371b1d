use std::fmt::Write as _;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::process::{ProcessSpec, run as run_process};
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Risk, Tool, ToolContext, ToolError, ToolOutput, blocking};

use crate::boards::{Board, MemoryRegion, board_for_chip, board_ids, find_board};
use crate::check::{Number, ensure_allowed, hex_bytes, in_range, needed, number, unused};
use crate::config::{Config, MemoryWindow};
use crate::device::{read_window, write_window};

/// The most bytes one read or write moves.
pub const MEMORY_MAX_BYTES: u64 = 256;
/// The bytes read when a call gives no length.
pub const MEMORY_DEFAULT_READ_BYTES: u64 = 4;

/// What `hardware_memory` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryAction {
    /// Read `length` bytes from `address`.
    Read,
    /// Write `value` at `address`.
    Write,
}

/// Arguments of `hardware_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HardwareMemoryArgs {
    /// `read` returns `length` bytes from `address`; `write` writes `value` there.
    pub action: MemoryAction,
    /// The first address, as an integer or a hex string ("0x20000000").
    pub address: Number,
    /// How many bytes to read, 1..=256 (default 4). Only for read.
    pub length: Option<u64>,
    /// The bytes to write, in hex, lowest address first ("de ad be ef"), 1 to 256 bytes. Only
    /// for write.
    pub value: Option<String>,
    /// A board id from hardware_info (`nucleo-f401re`, `rpi-pico`, …): go through a debug probe
    /// (probe-rs) with that board's chip, checked against its memory map. Leave it out to use
    /// the configured memory windows (and, for addresses in none, the configured probe chip).
    pub board: Option<String>,
}

#[derive(Debug, Clone)]
enum Backend {
    Window {
        window: MemoryWindow,
    },
    Probe {
        chip: String,
        /// The board whose map the range was checked against, when the chip is in the table.
        board: Option<&'static Board>,
    },
}

#[derive(Debug, Clone)]
struct Plan {
    write: bool,
    address: u64,
    length: u64,
    value: Option<Vec<u8>>,
    backend: Backend,
}

/// `hardware_memory`: read and write target memory through memory windows or a debug probe.
#[derive(Debug, Clone)]
pub struct HardwareMemory {
    config: Arc<Config>,
}

impl HardwareMemory {
    pub(crate) fn new(config: Arc<Config>) -> Self {
        HardwareMemory { config }
    }

    fn plan(&self, args: &HardwareMemoryArgs) -> Result<Plan, ToolError> {
        let address = number("address", &args.address)?;
        let write = args.action == MemoryAction::Write;
        let (length, value) = if write {
            unused("length", &args.length, "write")?;
            let v = needed("value", &args.value, "write", "\"de ad be ef\"")?;
            let v = hex_bytes("value", v, MEMORY_MAX_BYTES as usize)?;
            (v.len() as u64, Some(v))
        } else {
            unused("value", &args.value, "read")?;
            let len = match args.length {
                None => MEMORY_DEFAULT_READ_BYTES,
                Some(l) => in_range(
                    "length",
                    l,
                    1,
                    MEMORY_MAX_BYTES,
                    "read between 1 and 256 bytes per call",
                )?,
            };
            (len, None)
        };
        if address.checked_add(length).is_none() {
            return Err(ToolError::invalid(
                "/address",
                format!(
                    "{length} bytes at {address:#x} run past the end of the 64-bit address space; give an address inside the target's memory"
                ),
            ));
        }
        let backend = match &args.board {
            Some(name) => {
                let board = find_board(name).ok_or_else(|| {
                    ToolError::NotFound(format!(
                        "There is no board called {name:?}; known boards: {}. hardware_info shows their memory maps.",
                        board_ids()
                    ))
                })?;
                let chip = board.probe_rs_chip.ok_or_else(|| {
                    ToolError::invalid(
                        "/board",
                        format!(
                            "probe-rs cannot debug the {} on the {} ({}); {}",
                            board.chip, board.id, board.core, board.notes
                        ),
                    )
                })?;
                check_region(board, address, length, write)?;
                Backend::Probe {
                    chip: chip.to_string(),
                    board: Some(board),
                }
            }
            None => self.route(address, length, write)?,
        };
        Ok(Plan {
            write,
            address,
            length,
            value,
            backend,
        })
    }

    /// Picks the window that holds the whole range, or the configured probe chip.
    fn route(&self, address: u64, length: u64, write: bool) -> Result<Backend, ToolError> {
        let config = &self.config;
        let holds = |w: &&MemoryWindow| w.contains(address, length);
        if let Some(w) = config.write_windows.iter().find(holds) {
            return Ok(Backend::Window { window: w.clone() });
        }
        if let Some(w) = config.read_windows.iter().find(holds) {
            if write {
                return Err(ToolError::Denied(format!(
                    "Memory window `{}` ({:#x}..{:#x}) is read-only, so {address:#x} is not written; only the write windows in the configuration can be written{}.",
                    w.name,
                    w.base,
                    w.base.saturating_add(w.size),
                    list_windows(&config.write_windows, " (")
                        .map(|l| format!("{l})"))
                        .unwrap_or_default()
                )));
            }
            return Ok(Backend::Window { window: w.clone() });
        }
        let all = || config.write_windows.iter().chain(&config.read_windows);
        if let Some(w) = all().find(|w| w.contains(address, 1)) {
            let room = w.base.saturating_add(w.size) - address;
            return Err(ToolError::invalid(
                "/address",
                format!(
                    "{length} bytes at {address:#x} run past the end of memory window `{}` ({:#x}..{:#x}); a range must lie wholly inside one window, so {} at most {room} byte(s) from here",
                    w.name,
                    w.base,
                    w.base.saturating_add(w.size),
                    if write { "write" } else { "read" }
                ),
            ));
        }
        if let Some(chip) = &config.probe_chip {
            let board = board_for_chip(chip);
            if let Some(board) = board {
                check_region(board, address, length, write)?;
            }
            return Ok(Backend::Probe {
                chip: chip.clone(),
                board,
            });
        }
        let windows = list_windows(
            &config
                .read_windows
                .iter()
                .chain(&config.write_windows)
                .cloned()
                .collect::<Vec<_>>(),
            "",
        );
        Err(ToolError::invalid(
            "/address",
            format!(
                "{address:#x} lies in no configured memory window ({}) and no debug probe chip is configured; use an address inside a window, or pass `board` (one of {}) to go through a debug probe",
                windows.unwrap_or_else(|| "none is configured".into()),
                board_ids()
            ),
        ))
    }

    fn probe_command(&self, plan: &Plan, chip: &str) -> Vec<String> {
        let mut args = vec![
            if plan.write { "write" } else { "read" }.to_string(),
            "--chip".to_string(),
            chip.to_string(),
            "b8".to_string(),
            format!("{:#x}", plan.address),
        ];
        match &plan.value {
            Some(v) => args.extend(v.iter().map(|b| format!("{b:#04x}"))),
            None => args.push(plan.length.to_string()),
        }
        args
    }
}

fn list_windows(windows: &[MemoryWindow], prefix: &str) -> Option<String> {
    if windows.is_empty() {
        return None;
    }
    Some(format!(
        "{prefix}{}",
        windows
            .iter()
            .map(|w| format!(
                "`{}` {:#x}..{:#x}",
                w.name,
                w.base,
                w.base.saturating_add(w.size)
            ))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// The range must lie wholly inside one region of the board's map; writes only reach RAM and
/// peripheral registers.
fn check_region(board: &Board, address: u64, length: u64, write: bool) -> Result<(), ToolError> {
    let map = || {
        board
            .regions
            .iter()
            .map(|r| {
                format!(
                    "{} {:#x}..{:#x} ({})",
                    r.name,
                    r.start,
                    r.start.saturating_add(r.size),
                    r.kind.as_str()
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let found: Option<&MemoryRegion> = board.regions.iter().find(|r| r.contains(address, length));
    let Some(region) = found else {
        let why = if board.regions.iter().any(|r| r.contains(address, 1)) {
            "runs past the end of its region; a range must lie wholly inside one region"
        } else {
            "is not in the board's memory map"
        };
        return Err(ToolError::invalid(
            "/address",
            format!(
                "{length} bytes at {address:#x} {why}; the {} map is: {}",
                board.id,
                map()
            ),
        ));
    };
    if write && !region.kind.writable() {
        return Err(ToolError::invalid(
            "/address",
            format!(
                "{address:#x} is in the {} region `{}` of the {}, which a memory write cannot change; only RAM and peripheral registers are written here (program flash with a flasher such as probe-rs download)",
                region.kind.as_str(),
                region.name,
                board.id
            ),
        ));
    }
    Ok(())
}

#[async_trait]
impl Tool for HardwareMemory {
    const NAME: &'static str = "hardware_memory";
    type Args = HardwareMemoryArgs;

    fn description(&self) -> String {
        "Read or write target memory: 1 to 256 bytes at an address, either in a configured \
         memory window (a device such as /dev/mem, or a memory image file; some windows are \
         read-only) or through a debug probe with probe-rs (pass `board`, checked against the \
         board's memory map; writes reach only RAM and peripheral registers). A range must lie \
         wholly inside one window or region. Writes need approval in supervised mode."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE.open_world(true)
    }

    fn access(&self, _ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        let plan = self.plan(args)?;
        Ok(match &plan.backend {
            Backend::Window { window } => vec![Access::Device {
                path: window.path.clone(),
                write: plan.write,
            }],
            Backend::Probe { chip, .. } => {
                let program = self.config.probe_rs.to_string_lossy().into_owned();
                let command = std::iter::once(program.clone())
                    .chain(self.probe_command(&plan, chip))
                    .collect::<Vec<_>>()
                    .join(" ");
                // Attaching a probe halts and resumes the core even for a read, so both ask in
                // supervised mode (add probe-rs to policy.allowed_commands to run without asking).
                vec![Access::Execute {
                    commands: vec![command.clone()],
                    opaque: Vec::new(),
                    command,
                    programs: vec![program],
                    risk: Risk::Medium,
                    why: "a debug probe reads and writes a device's memory".into(),
                }]
            }
        })
    }

    fn timeout(&self, _args: &Self::Args) -> Option<Duration> {
        Some(self.config.probe_timeout + Duration::from_secs(5))
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let plan = self.plan(&args)?;
        let (bytes, via) = match &plan.backend {
            Backend::Window { window } => {
                ensure_allowed(ctx, &window.path)?;
                (
                    window_io(ctx, &plan, window).await?,
                    format!("window `{}`", window.name),
                )
            }
            Backend::Probe { chip, board } => (
                self.probe_io(ctx, &plan, chip).await?,
                format!(
                    "probe-rs ({chip}{})",
                    board.map(|b| format!(", {}", b.id)).unwrap_or_default()
                ),
            ),
        };
        let mut structured = json!({
            "action": if plan.write { "write" } else { "read" },
            "address": format!("{:#x}", plan.address),
            "length": plan.length,
            "via": via,
        });
        let text = if plan.write {
            structured["written"] = json!(crate::check::hex_spaced(&bytes));
            format!(
                "Wrote {} byte(s) at {:#x} through {via}:\n{}",
                bytes.len(),
                plan.address,
                dump(plan.address, &bytes)
            )
        } else {
            structured["hex"] = json!(crate::check::hex_spaced(&bytes));
            structured["bytes"] = json!(bytes);
            format!(
                "Read {} byte(s) at {:#x} through {via}:\n{}",
                bytes.len(),
                plan.address,
                dump(plan.address, &bytes)
            )
        };
        Ok(ToolOutput::text(text.trim_end().to_string()).with_structured(structured))
    }
}

async fn window_io(
    ctx: &ToolContext,
    plan: &Plan,
    window: &MemoryWindow,
) -> Result<Vec<u8>, ToolError> {
    let Some(offset) = window.file_offset(plan.address) else {
        return Err(ToolError::internal(
            "an address inside a window had no file offset",
        ));
    };
    let path: PathBuf = window.path.clone();
    let name = window.name.clone();
    let length = plan.length as usize;
    let value = plan.value.clone();
    blocking(ctx, move || {
        let result = match &value {
            Some(v) => write_window(&path, offset, v).map(|()| v.clone()),
            None => read_window(&path, offset, length),
        };
        result.map_err(|e| window_error(&name, &path, offset, &e))
    })
    .await
}

fn window_error(name: &str, path: &std::path::Path, offset: u64, e: &io::Error) -> ToolError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        return ToolError::Failed(format!(
            "Memory window `{name}` is larger than {} (it ends before byte {offset:#x} plus the range); the window's size in the configuration is wrong, ask the user to fix it.",
            path.display()
        ));
    }
    crate::check::device_failure(path, "memory window", "access", e)
}

impl HardwareMemory {
    async fn probe_io(
        &self,
        ctx: &ToolContext,
        plan: &Plan,
        chip: &str,
    ) -> Result<Vec<u8>, ToolError> {
        let cwd = ctx
            .workspace
            .local_root()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_else(std::env::temp_dir);
        let mut spec = ProcessSpec::new(self.config.probe_rs.clone(), cwd);
        spec.args = self
            .probe_command(plan, chip)
            .into_iter()
            .map(Into::into)
            .collect();
        spec.timeout = self.config.probe_timeout;
        let program = self.config.probe_rs.to_string_lossy().into_owned();
        let out = match run_process(spec, ctx).await {
            Ok(out) => out,
            Err(ToolError::Failed(msg)) if msg.starts_with("Could not start") => {
                return Err(ToolError::Failed(format!(
                    "probe-rs is not installed here (`{program}` could not be started: {msg}) Install it (`cargo install probe-rs-tools --locked`, see probe.rs), or ask the user to set the probe-rs path in the configuration; memory windows work without it."
                )));
            }
            Err(e) => return Err(e),
        };
        if out.timed_out {
            return Err(ToolError::Timeout(format!(
                "probe-rs did not finish within {} s; check that the probe is connected and the target powered (`probe-rs list`), then try again.",
                self.config.probe_timeout.as_secs_f32()
            )));
        }
        if !out.success() {
            let text = out.output.trim();
            let cut = text.char_indices().rev().nth(800).map_or(0, |(i, _)| i);
            let tail = &text[cut..];
            return Err(ToolError::Failed(format!(
                "probe-rs failed ({}): {tail}. Check that a probe is connected and the target is the {chip} (`probe-rs list`).",
                match (out.exit_code, out.signal) {
                    (Some(c), _) => format!("exit code {c}"),
                    (None, Some(s)) => format!("killed by signal {s}"),
                    _ => "no exit code".to_string(),
                }
            )));
        }
        match &plan.value {
            Some(v) => Ok(v.clone()),
            None => parse_probe_read(&out.output, plan.length as usize).map_err(|why| {
                ToolError::Failed(format!(
                    "probe-rs printed something this tool cannot read ({why}); its output was: {}",
                    out.output.trim()
                ))
            }),
        }
    }
}

/// Parses `probe-rs read … b8` output: a table (`20000000: de ad be ef …` per line) or a plain
/// list of two-digit hex bytes. Anything else is refused rather than guessed at.
fn parse_probe_read(output: &str, want: usize) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::with_capacity(want);
    for line in output.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let data = match line.split_once(':') {
            Some((addr, rest))
                if !addr.is_empty() && addr.chars().all(|c| c.is_ascii_hexdigit()) =>
            {
                rest
            }
            Some(_) => return Err(format!("unexpected line {line:?}")),
            None => line,
        };
        for token in data.split_whitespace() {
            if token.len() != 2 {
                return Err(format!("{token:?} is not one byte"));
            }
            let b = u8::from_str_radix(token, 16).map_err(|_| format!("{token:?} is not hex"))?;
            bytes.push(b);
        }
    }
    if bytes.len() != want {
        return Err(format!("{} byte(s) instead of {want}", bytes.len()));
    }
    Ok(bytes)
}

/// A hex dump, 16 bytes a line, with addresses.
fn dump(address: u64, bytes: &[u8]) -> String {
    let mut s = String::new();
    for (i, chunk) in bytes.chunks(16).enumerate() {
        let at = address.saturating_add(16 * i as u64);
        let _ = writeln!(s, "{at:#010x}: {}", crate::check::hex_spaced(chunk));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::parse_probe_read;

    #[test]
    fn probe_output_is_parsed_in_both_formats_and_nothing_else() {
        assert_eq!(
            parse_probe_read("de ad be ef\n", 4),
            Ok(vec![0xde, 0xad, 0xbe, 0xef])
        );
        assert_eq!(
            parse_probe_read("20000000: 00 01 02 03 04 05 06 07\n20000008: 08 09\n", 10),
            Ok((0..10).collect())
        );
        assert!(parse_probe_read("de ad\n", 4).is_err(), "too few");
        assert!(parse_probe_read("deadbeef\n", 4).is_err(), "32-bit words");
        assert!(parse_probe_read("WARN probe: something\n", 0).is_err());
        assert!(parse_probe_read("zz\n", 1).is_err());
    }
}
