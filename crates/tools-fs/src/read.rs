use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use async_trait::async_trait;
use base64::Engine;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

/// How `file_read` returns content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// Numbered text lines.
    #[default]
    Text,
    /// The raw bytes, base64-encoded (for binary files).
    Base64,
}

/// Arguments of `file_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileReadArgs {
    /// The file, relative to the workspace root.
    pub path: String,
    /// The first line to return, 1-based (for base64: the first byte, 0-based).
    #[schemars(range(min = 0))]
    pub offset: Option<u64>,
    /// How many lines to return (for base64: bytes). Default 2000.
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
    /// `text` (default) or `base64`.
    #[serde(default)]
    pub encoding: Encoding,
}

/// `file_read`: numbered lines, paged.
#[derive(Debug, Clone, Copy, Default)]
pub struct FileRead;

const DEFAULT_LIMIT: u64 = 2000;
const MAX_LINE_CHARS: usize = 2000;
const MAX_BASE64_BYTES: u64 = 4 * 1024 * 1024;

#[async_trait]
impl Tool for FileRead {
    const NAME: &'static str = "file_read";
    type Args = FileReadArgs;

    fn description(&self) -> String {
        "Read a file as numbered lines (`N<TAB>text`). Large files are paged: pass `offset` \
         (1-based line) and `limit` (default 2000); a page that stops early ends with the exact \
         arguments of the next call. Lines longer than 2000 characters are cut with a marker. \
         Binary files are refused unless `encoding` is `base64`."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        Ok(vec![Access::Read(ctx.workspace.resolve(&args.path)?)])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let path = ctx.workspace.resolve(&args.path)?;
        let ws = ctx.workspace.clone();
        let budget = ctx.limits.max_output_bytes;
        blocking(ctx, move || {
            let (file, meta) = ws.open_read(&path)?;
            let shown = path.to_string();
            match args.encoding {
                Encoding::Base64 => read_base64(file, meta.len, &shown, args.offset, args.limit),
                Encoding::Text => read_text(file, &shown, args.offset, args.limit, budget),
            }
        })
        .await
    }
}

fn io_err(path: &str, e: std::io::Error) -> ToolError {
    ToolError::Failed(format!("Reading {path} failed: {e}."))
}

fn read_base64(
    mut file: Box<dyn tool_core::workspace::ReadSeek>,
    len: u64,
    path: &str,
    offset: Option<u64>,
    limit: Option<u64>,
) -> Result<ToolOutput, ToolError> {
    let start = offset.unwrap_or(0);
    let want = limit.unwrap_or(MAX_BASE64_BYTES).min(MAX_BASE64_BYTES);
    if start > len {
        return Err(ToolError::invalid(
            "/offset",
            format!("{path} has {len} bytes; offset {start} is past the end"),
        ));
    }
    file.seek(SeekFrom::Start(start))
        .map_err(|e| io_err(path, e))?;
    let mut buf = Vec::new();
    file.take(want)
        .read_to_end(&mut buf)
        .map_err(|e| io_err(path, e))?;
    let end = start + buf.len() as u64;
    let data = base64::engine::general_purpose::STANDARD.encode(&buf);
    let mut text = data;
    if end < len {
        text.push_str(&format!(
            "\n[bytes {start}..{end} of {len}; next: {{\"path\": {}, \"encoding\": \"base64\", \"offset\": {end}}}]",
            json!(path)
        ));
    }
    Ok(ToolOutput::text(text).with_structured(json!({
        "path": path, "encoding": "base64", "offset": start, "bytes": end - start, "total_bytes": len,
    })))
}

/// Reads one line into `out`, keeping at most `cap` bytes of it but consuming all of it, so a
/// single huge line never sits in memory. Returns the line's full length, or `None` at the end.
fn read_capped_line(
    reader: &mut impl BufRead,
    out: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<Option<(u64, bool)>> {
    out.clear();
    let mut total = 0u64;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(if total == 0 {
                None
            } else {
                Some((total, false))
            });
        }
        let (chunk, done) = match memchr_newline(buf) {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let n = chunk.len();
        if out.len() < cap {
            let room = cap - out.len();
            out.extend_from_slice(&chunk[..n.min(room)]);
        }
        total += n as u64;
        reader.consume(n);
        if done {
            return Ok(Some((total, true)));
        }
    }
}

fn memchr_newline(buf: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', buf)
}

fn read_text(
    file: Box<dyn tool_core::workspace::ReadSeek>,
    path: &str,
    offset: Option<u64>,
    limit: Option<u64>,
    budget: usize,
) -> Result<ToolOutput, ToolError> {
    let start = offset.unwrap_or(1).max(1);
    let limit = limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let mut reader = BufReader::with_capacity(64 * 1024, file);

    // Refuse binary files up front, from the first block only.
    if looks_binary_prefix(&mut reader).map_err(|e| io_err(path, e))? {
        return Err(ToolError::Failed(format!(
            "{path} is a binary file; pass \"encoding\": \"base64\" to get its bytes, or use image_info for images."
        )));
    }

    // Each kept line holds at most MAX_LINE_CHARS characters of up to 4 bytes.
    let cap = MAX_LINE_CHARS * 4 + 4;
    let mut line = Vec::new();
    let mut lineno = 0u64;
    // Skip to the first wanted line a buffer at a time (memchr), never holding more than one.
    let wanted = start - 1;
    let mut partial = false;
    while lineno < wanted {
        let buf = reader.fill_buf().map_err(|e| io_err(path, e))?;
        if buf.is_empty() {
            // A last line without a newline counts as a line too.
            let lines = lineno + u64::from(partial);
            return Err(ToolError::invalid(
                "/offset",
                format!(
                    "{path} has only {lines} lines, so offset {start} is past the end; read from offset 1"
                ),
            ));
        }
        partial = buf.last() != Some(&b'\n');
        let need = (wanted - lineno) as usize;
        let mut consumed = buf.len();
        let mut seen = 0usize;
        for pos in memchr::memchr_iter(b'\n', buf) {
            seen += 1;
            if seen == need {
                consumed = pos + 1;
                break;
            }
        }
        lineno += seen as u64;
        reader.consume(consumed);
    }
    let mut out = String::new();
    let mut shown = 0u64;
    let mut cut_lines = 0u64;
    let mut more = false;
    while shown < limit {
        match read_capped_line(&mut reader, &mut line, cap).map_err(|e| io_err(path, e))? {
            None => break,
            Some((full_len, newline)) => {
                lineno += 1;
                // Strip the terminator from the bytes, then measure the whole line without it
                // (only part of a huge line is kept in `line`).
                let mut body: &[u8] = &line;
                let mut term = u64::from(newline);
                if body.ends_with(b"\n") {
                    body = &body[..body.len() - 1];
                    if body.ends_with(b"\r") {
                        body = &body[..body.len() - 1];
                        term += 1;
                    }
                }
                let text = String::from_utf8_lossy(body).into_owned();
                let full_text_len = full_len.saturating_sub(term).max(body.len() as u64);
                let prefix_end = text
                    .char_indices()
                    .nth(MAX_LINE_CHARS)
                    .map(|(i, _)| i)
                    .unwrap_or(text.len());
                let rendered = if (prefix_end as u64) < full_text_len {
                    cut_lines += 1;
                    format!(
                        "{}… [line cut: {} more bytes]",
                        &text[..prefix_end],
                        full_text_len - prefix_end as u64
                    )
                } else {
                    text
                };
                let entry = format!("{lineno}\t{rendered}\n");
                // Keep room for the closing notice so the truncation layer never cuts the page.
                let line_budget = budget.saturating_sub(512).max(budget / 2);
                if !out.is_empty() && out.len() + entry.len() > line_budget {
                    // Stop at the output budget; the next call starts at this line.
                    more = true;
                    break;
                }
                out.push_str(&entry);
                shown += 1;
            }
        }
    }
    if !more && shown == limit {
        // Peek: is there anything after the page?
        more = !reader.fill_buf().map_err(|e| io_err(path, e))?.is_empty();
    }
    if shown == 0 && start == 1 {
        return Ok(
            ToolOutput::text(format!("{path} is empty.")).with_structured(json!({
                "path": path, "start_line": 1, "end_line": 0, "eof": true,
            })),
        );
    }
    let end = start + shown - 1;
    if more {
        out.push_str(&format!(
            "[Showing lines {start}-{end}; the file continues. Next call: file_read {{\"path\": {}, \"offset\": {}, \"limit\": {limit}}}]\n",
            json!(path),
            end + 1
        ));
    }
    if cut_lines > 0 {
        out.push_str(&format!(
            "[{cut_lines} line(s) were longer than {MAX_LINE_CHARS} characters and were cut.]\n"
        ));
    }
    Ok(ToolOutput::text(out).with_structured(json!({
        "path": path,
        "start_line": start,
        "end_line": end,
        "eof": !more,
        "next_offset": if more { Some(end + 1) } else { None },
    })))
}

fn looks_binary_prefix(
    reader: &mut BufReader<Box<dyn tool_core::workspace::ReadSeek>>,
) -> std::io::Result<bool> {
    let buf = reader.fill_buf()?;
    Ok(crate::text::looks_binary(buf))
}
