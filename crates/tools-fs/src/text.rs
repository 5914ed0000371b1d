//! Small text helpers shared by the tools of this crate.

/// Whether `bytes` looks binary: a NUL byte in the first 8 KiB.
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

/// A unified diff of `old` → `new` for `path`, with three lines of context.
pub(crate) fn unified_diff(path: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// Collapses every run of whitespace to one space and trims the ends.
pub(crate) fn squash_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Refuses `content` longer than `max` bytes, with `advice` on how to send it instead.
pub(crate) fn check_content_size(
    content: &str,
    max: usize,
    advice: &str,
) -> Result<(), tool_core::ToolError> {
    if content.len() > max {
        return Err(tool_core::ToolError::invalid(
            "/content",
            format!(
                "the content is {} bytes, more than the {max}-byte limit; {advice}",
                content.len()
            ),
        ));
    }
    Ok(())
}
