use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_serial::{SerialPort, SerialPortBuilderExt, SerialStream};
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

use crate::check::{
    device_failure, device_path, ensure_allowed, escaped, hex_bytes, hex_spaced, in_range, needed,
    unused,
};
use crate::config::Config;
use crate::discover;
use crate::hardware_info::HARDWARE_STATE;

/// The baud rate used when a call gives none.
pub const SERIAL_DEFAULT_BAUD: u32 = 115_200;
/// The baud rates accepted: the Linux standard rates, plus 31250 (MIDI), 74880 (ESP8266 boot
/// messages) and 250000 (3D printers). Anything else is most likely a typo.
pub const SERIAL_BAUD_RATES: &[u32] = &[
    50, 75, 110, 134, 150, 200, 300, 600, 1200, 1800, 2400, 4800, 9600, 19200, 31250, 38400, 57600,
    74880, 115_200, 230_400, 250_000, 460_800, 500_000, 576_000, 921_600, 1_000_000, 1_152_000,
    1_500_000, 2_000_000, 2_500_000, 3_000_000, 3_500_000, 4_000_000,
];
/// The longest wait for bytes, in milliseconds.
pub const SERIAL_MAX_TIMEOUT_MS: u64 = 30_000;
/// The wait for bytes when a call gives none, in milliseconds.
pub const SERIAL_DEFAULT_TIMEOUT_MS: u64 = 1_000;
/// The most bytes one read returns.
pub const SERIAL_MAX_READ_BYTES: u64 = 65_536;
/// The read limit when a call gives none.
pub const SERIAL_DEFAULT_READ_BYTES: u64 = 4_096;
/// The most bytes one write sends.
pub const SERIAL_MAX_WRITE_BYTES: usize = 65_536;

/// What `serial` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SerialAction {
    /// List the serial ports attached (configured patterns) and whether they are allowed.
    List,
    /// Send `data`.
    Write,
    /// Read what arrives within `timeout_ms` (or up to `delimiter` or `max_bytes`).
    Read,
    /// Send `data`, then read until `delimiter` (default a newline) arrives.
    Query,
}

impl SerialAction {
    fn as_str(self) -> &'static str {
        match self {
            SerialAction::List => "list",
            SerialAction::Write => "write",
            SerialAction::Read => "read",
            SerialAction::Query => "query",
        }
    }
}

/// How `data` and `delimiter` are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DataEncoding {
    /// The string's UTF-8 bytes, as is (put line endings such as `\r\n` in the string).
    #[default]
    Text,
    /// Hex bytes: "de ad be ef", "0x0d 0x0a".
    Hex,
}

/// Arguments of `serial`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SerialArgs {
    /// `list` shows the ports attached; `write` sends `data`; `read` returns what arrives;
    /// `query` sends `data` and reads the answer up to `delimiter`.
    pub action: SerialAction,
    /// The port's device path, e.g. /dev/ttyUSB0 or /dev/ttyACM0; it must be on the device
    /// allow list. Needed by write, read and query.
    pub port: Option<String>,
    /// The baud rate (default 115200): a standard rate such as 9600, 57600, 115200 or 921600.
    /// 8 data bits, no parity, 1 stop bit, no flow control.
    pub baud: Option<u64>,
    /// What to send (write and query), as text or, with encoding hex, as hex bytes; at most
    /// 65536 bytes.
    pub data: Option<String>,
    /// How `data` and `delimiter` are written: `text` (default) or `hex`.
    pub encoding: Option<DataEncoding>,
    /// How long to wait for bytes, 1..=30000 ms (default 1000). For read and query.
    pub timeout_ms: Option<u64>,
    /// Stop reading once these bytes arrive (default "\n" for query; none for read, which then
    /// reads until the timeout or `max_bytes`). For read and query.
    pub delimiter: Option<String>,
    /// The most bytes to read, 1..=65536 (default 4096). For read and query.
    pub max_bytes: Option<u64>,
}

#[derive(Debug, Clone)]
struct Io {
    port: PathBuf,
    baud: u32,
    send: Option<Vec<u8>>,
    receive: Option<Receive>,
}

#[derive(Debug, Clone)]
struct Receive {
    timeout: Duration,
    delimiter: Option<Vec<u8>>,
    max_bytes: usize,
}

#[derive(Debug, Clone)]
enum Plan {
    List,
    Io(Io),
}

/// `serial`: list serial ports, and write, read or query one.
#[derive(Debug, Clone)]
pub struct Serial {
    config: Arc<Config>,
}

impl Serial {
    pub(crate) fn new(config: Arc<Config>) -> Self {
        Serial { config }
    }
}

fn plan(args: &SerialArgs) -> Result<Plan, ToolError> {
    let action = args.action.as_str();
    if args.action == SerialAction::List {
        unused("port", &args.port, action)?;
        unused("baud", &args.baud, action)?;
        unused("data", &args.data, action)?;
        unused("encoding", &args.encoding, action)?;
        unused("timeout_ms", &args.timeout_ms, action)?;
        unused("delimiter", &args.delimiter, action)?;
        unused("max_bytes", &args.max_bytes, action)?;
        return Ok(Plan::List);
    }
    let port = needed("port", &args.port, action, "\"/dev/ttyUSB0\"")?;
    let port = device_path("port", port, "/dev/ttyUSB0")?;
    let baud = match args.baud {
        None => SERIAL_DEFAULT_BAUD,
        Some(b) => match u32::try_from(b) {
            Ok(b) if SERIAL_BAUD_RATES.contains(&b) => b,
            _ => {
                return Err(ToolError::invalid(
                    "/baud",
                    format!(
                        "`baud` is {b}, which is not a standard rate; use the device's rate, one of {}",
                        SERIAL_BAUD_RATES
                            .iter()
                            .map(u32::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        },
    };
    let encoding = args.encoding.unwrap_or_default();
    let bytes = |field: &str, s: &str| -> Result<Vec<u8>, ToolError> {
        let b = match encoding {
            DataEncoding::Text => s.as_bytes().to_vec(),
            DataEncoding::Hex => hex_bytes(field, s, SERIAL_MAX_WRITE_BYTES)?,
        };
        if b.is_empty() {
            return Err(ToolError::invalid(
                format!("/{field}"),
                format!("`{field}` is empty; give at least one byte"),
            ));
        }
        if b.len() > SERIAL_MAX_WRITE_BYTES {
            return Err(ToolError::invalid(
                format!("/{field}"),
                format!(
                    "`{field}` is {} bytes; send at most {SERIAL_MAX_WRITE_BYTES} per call",
                    b.len()
                ),
            ));
        }
        Ok(b)
    };
    let send = match args.action {
        SerialAction::Write | SerialAction::Query => {
            let data = needed("data", &args.data, action, "\"AT\\r\\n\"")?;
            Some(bytes("data", data)?)
        }
        _ => {
            unused("data", &args.data, action)?;
            None
        }
    };
    let receive = match args.action {
        SerialAction::Read | SerialAction::Query => {
            let timeout_ms = match args.timeout_ms {
                None => SERIAL_DEFAULT_TIMEOUT_MS,
                Some(t) => in_range(
                    "timeout_ms",
                    t,
                    1,
                    SERIAL_MAX_TIMEOUT_MS,
                    "wait between 1 ms and 30 s per call",
                )?,
            };
            let max_bytes = match args.max_bytes {
                None => SERIAL_DEFAULT_READ_BYTES,
                Some(m) => in_range(
                    "max_bytes",
                    m,
                    1,
                    SERIAL_MAX_READ_BYTES,
                    "read between 1 and 65536 bytes per call",
                )?,
            };
            let delimiter = match (&args.delimiter, args.action) {
                (Some(d), _) => Some(bytes("delimiter", d)?),
                (None, SerialAction::Query) => Some(b"\n".to_vec()),
                (None, _) => None,
            };
            Some(Receive {
                timeout: Duration::from_millis(timeout_ms),
                delimiter,
                max_bytes: max_bytes as usize,
            })
        }
        _ => {
            unused("timeout_ms", &args.timeout_ms, action)?;
            unused("delimiter", &args.delimiter, action)?;
            unused("max_bytes", &args.max_bytes, action)?;
            None
        }
    };
    Ok(Plan::Io(Io {
        port,
        baud,
        send,
        receive,
    }))
}

#[async_trait]
impl Tool for Serial {
    const NAME: &'static str = "serial";
    type Args = SerialArgs;

    fn description(&self) -> String {
        "Use a serial port (UART, USB serial): list the ports attached, write bytes, read what \
         arrives within a timeout, or query (write, then read until a delimiter such as a \
         newline). 8N1 at a standard baud rate (default 115200); data as text or hex. Writes and \
         queries need approval in supervised mode. The port must be on the device allow list \
         (see hardware_info)."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE.open_world(true)
    }

    fn access(&self, _ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        Ok(match plan(args)? {
            Plan::List => vec![Access::State {
                store: HARDWARE_STATE.into(),
                write: false,
            }],
            Plan::Io(io) => vec![Access::Device {
                write: io.send.is_some(),
                path: io.port,
            }],
        })
    }

    fn timeout(&self, args: &Self::Args) -> Option<Duration> {
        // The read may take its whole timeout; leave room for opening and writing.
        args.timeout_ms
            .map(|t| Duration::from_millis(t.min(SERIAL_MAX_TIMEOUT_MS)) + Duration::from_secs(10))
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        match plan(&args)? {
            Plan::List => {
                let config = Arc::clone(&self.config);
                let (found, notes) =
                    blocking(ctx, move || Ok(discover::serial_ports(&config))).await?;
                let mut text = format!(
                    "Serial ports ({}):\n{}",
                    self.config.serial_ports.join(", "),
                    discover::lines(ctx, &found)
                );
                for n in &notes {
                    text.push_str("Note: ");
                    text.push_str(n);
                    text.push('\n');
                }
                Ok(
                    ToolOutput::text(text.trim_end().to_string()).with_structured(json!({
                        "ports": discover::json(ctx, &found),
                        "notes": notes,
                    })),
                )
            }
            Plan::Io(io) => {
                ensure_allowed(ctx, &io.port)?;
                tokio::select! {
                    out = run(io) => out,
                    () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
                }
            }
        }
    }
}

fn open(io: &Io) -> Result<SerialStream, ToolError> {
    tokio_serial::new(io.port.to_string_lossy(), io.baud)
        .data_bits(tokio_serial::DataBits::Eight)
        .parity(tokio_serial::Parity::None)
        .stop_bits(tokio_serial::StopBits::One)
        .flow_control(tokio_serial::FlowControl::None)
        .open_native_async()
        .map_err(|e| serial_error(io, "open", e))
}

fn serial_error(io: &Io, doing: &str, e: tokio_serial::Error) -> ToolError {
    let err = match e.kind {
        tokio_serial::ErrorKind::Io(kind) => std::io::Error::new(kind, e.description.clone()),
        tokio_serial::ErrorKind::NoDevice => {
            if e.description.contains("Not a typewriter") || e.description.contains("ENOTTY") {
                std::io::Error::from_raw_os_error(rustix::io::Errno::NOTTY.raw_os_error())
            } else {
                std::io::Error::new(std::io::ErrorKind::NotFound, e.description.clone())
            }
        }
        _ => std::io::Error::other(e.description.clone()),
    };
    device_failure(&io.port, "serial port", doing, &err)
}

async fn run(io: Io) -> Result<ToolOutput, ToolError> {
    let port = io.port.display().to_string();
    let mut stream = open(&io)?;
    let io_fail =
        |doing: &str, e: std::io::Error| device_failure(&io.port, "serial port", doing, &e);
    let mut text = String::new();
    let mut structured = json!({"port": port, "baud": io.baud});
    if let Some(data) = &io.send {
        if io.receive.is_some() {
            // A query's answer must not be mixed with bytes that arrived earlier.
            stream
                .clear(tokio_serial::ClearBuffer::Input)
                .map_err(|e| serial_error(&io, "clear the input of", e))?;
        }
        stream
            .write_all(data)
            .await
            .map_err(|e| io_fail("write to", e))?;
        stream.flush().await.map_err(|e| io_fail("write to", e))?;
        text.push_str(&format!(
            "Wrote {} byte(s) to {port} at {} baud: {}\n",
            data.len(),
            io.baud,
            escaped(data)
        ));
        structured["written"] = json!(data.len());
    }
    if let Some(receive) = &io.receive {
        let (got, stop, dropped) = read_until(&mut stream, receive)
            .await
            .map_err(|e| io_fail("read from", e))?;
        structured["received_text"] = json!(String::from_utf8_lossy(&got));
        structured["received_hex"] = json!(hex_spaced(&got));
        structured["received_bytes"] = json!(got.len());
        structured["stopped_by"] = json!(stop.as_str());
        structured["dropped_after_delimiter"] = json!(dropped);
        if stop == Stop::Timeout
            && io.send.is_some()
            && let Some(d) = &receive.delimiter
        {
            return Err(ToolError::Timeout(format!(
                "{port} did not answer with {} within {} ms (wrote {} byte(s), received {} byte(s): \"{}\"); check the command, the baud rate and the line ending, or raise timeout_ms.",
                quoted_bytes(d),
                receive.timeout.as_millis(),
                io.send.as_ref().map_or(0, Vec::len),
                got.len(),
                escaped(&got)
            )));
        }
        let why = match stop {
            Stop::Delimiter if dropped > 0 => format!(
                "the delimiter arrived; {dropped} byte(s) that came right after it were dropped"
            ),
            Stop::Delimiter => "the delimiter arrived".to_string(),
            Stop::MaxBytes => format!("max_bytes ({}) reached", receive.max_bytes),
            Stop::Timeout => format!("{} ms passed", receive.timeout.as_millis()),
        };
        if got.is_empty() {
            text.push_str(&format!(
                "Nothing arrived on {port} within {} ms.",
                receive.timeout.as_millis()
            ));
        } else {
            text.push_str(&format!(
                "Received {} byte(s) from {port} ({why}):\n{}\nhex: {}",
                got.len(),
                escaped(&got),
                hex_spaced(&got)
            ));
        }
    }
    Ok(ToolOutput::text(text.trim_end().to_string()).with_structured(structured))
}

fn quoted_bytes(b: &[u8]) -> String {
    format!("\"{}\"", escaped(b))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Delimiter,
    MaxBytes,
    Timeout,
}

impl Stop {
    fn as_str(self) -> &'static str {
        match self {
            Stop::Delimiter => "delimiter",
            Stop::MaxBytes => "max_bytes",
            Stop::Timeout => "timeout",
        }
    }
}

/// Reads until the delimiter arrives, `max_bytes` have arrived, or the timeout passes. The
/// delimiter is searched for only in the new bytes (and the few before them it may straddle).
async fn read_until(
    stream: &mut SerialStream,
    receive: &Receive,
) -> std::io::Result<(Vec<u8>, Stop, usize)> {
    let deadline = tokio::time::Instant::now() + receive.timeout;
    let mut got: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 1024];
    loop {
        let room = receive.max_bytes - got.len();
        let want = room.min(buf.len());
        let n = match tokio::time::timeout_at(deadline, stream.read(&mut buf[..want])).await {
            Err(_) => return Ok((got, Stop::Timeout, 0)),
            Ok(Ok(0)) => return Ok((got, Stop::Timeout, 0)),
            Ok(Ok(n)) => n,
            Ok(Err(e)) => return Err(e),
        };
        let before = got.len();
        got.extend_from_slice(&buf[..n]);
        if let Some(d) = &receive.delimiter {
            let from = before.saturating_sub(d.len() - 1);
            if let Some(at) = got[from..].windows(d.len()).position(|w| w == d.as_slice()) {
                // The answer ends at the delimiter; bytes that came in the same chunk after it
                // are counted and dropped (later chunks stay unread in the port).
                let end = from + at + d.len();
                let dropped = got.len() - end;
                got.truncate(end);
                return Ok((got, Stop::Delimiter, dropped));
            }
        }
        if got.len() >= receive.max_bytes {
            return Ok((got, Stop::MaxBytes, 0));
        }
    }
}
