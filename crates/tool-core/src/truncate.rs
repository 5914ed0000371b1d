//! UTF-8-safe head + tail truncation.

use crate::output::Truncation;

/// Keeps the first and last parts of `text` within `max_bytes` (plus a notice line), cutting only
/// at character boundaries and preferring line boundaries. Returns the text unchanged when it fits.
///
/// `hint` tells the reader how to see what was left out; it ends the notice.
pub fn head_tail(text: &str, max_bytes: usize, hint: &str) -> (String, Option<Truncation>) {
    if text.len() <= max_bytes {
        return (text.to_string(), None);
    }
    let head_budget = max_bytes / 2;
    let tail_budget = max_bytes - head_budget;
    let mut head_end = floor_char_boundary(text, head_budget);
    // Prefer to end the head after a newline if one is reasonably close.
    if let Some(nl) = text[..head_end].rfind('\n')
        && nl + 1 >= head_end / 2
    {
        head_end = nl + 1;
    }
    let mut tail_start = ceil_char_boundary(text, text.len() - tail_budget);
    if let Some(nl) = text[tail_start..].find('\n') {
        let candidate = tail_start + nl + 1;
        if candidate < text.len() && candidate - tail_start <= tail_budget / 2 {
            tail_start = candidate;
        }
    }
    let tail_start = tail_start.max(head_end);
    let omitted = &text[head_end..tail_start];
    let omitted_lines = omitted.matches('\n').count() as u64;
    let notice = notice(omitted.len() as u64, omitted_lines, hint);
    let mut out = String::with_capacity(head_end + notice.len() + (text.len() - tail_start));
    out.push_str(&text[..head_end]);
    out.push_str(&notice);
    out.push_str(&text[tail_start..]);
    let info = Truncation {
        original_bytes: text.len() as u64,
        kept_bytes: (head_end + text.len() - tail_start) as u64,
        omitted_lines,
        hint: hint.to_string(),
    };
    (out, Some(info))
}

/// Like [`head_tail`], but the notice counts against `max_bytes`: the result is never longer
/// than `max_bytes`, unless `max_bytes` cannot hold even the notice.
pub fn head_tail_within(text: &str, max_bytes: usize, hint: &str) -> (String, Option<Truncation>) {
    if text.len() <= max_bytes {
        return (text.to_string(), None);
    }
    // The longest notice this text can need: no count exceeds its length.
    let reserve = notice(text.len() as u64, text.len() as u64, hint).len();
    head_tail(text, max_bytes.saturating_sub(reserve), hint)
}

fn notice(omitted_bytes: u64, omitted_lines: u64, hint: &str) -> String {
    format!("\n[... {omitted_bytes} bytes ({omitted_lines} lines) omitted; {hint} ...]\n")
}

/// The largest character boundary `<= i`.
pub fn floor_char_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    let mut i = i;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest character boundary `>= i`.
pub fn ceil_char_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    let mut i = i;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Cuts one line to at most `max_chars` characters, adding a marker that says how much was cut.
pub fn cut_line(line: &str, max_chars: usize) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(max_chars) {
        None => std::borrow::Cow::Borrowed(line),
        Some((idx, _)) => std::borrow::Cow::Owned(format!(
            "{}… [line cut: {} more bytes]",
            &line[..idx],
            line.len() - idx
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (input, budget, must contain, must not panic) — multi-byte text at every cut point.
    #[test]
    fn never_splits_a_character() {
        let text = "héllo wörld ✓ 🦀 ".repeat(50);
        for budget in 0..text.len() {
            let (out, info) = head_tail(&text, budget, "see more");
            assert!(info.is_some());
            assert!(out.contains("omitted"));
            // `out` is a String, so it is valid UTF-8 by construction; check the parts add up.
            let info = info.unwrap();
            assert_eq!(info.original_bytes, text.len() as u64);
            assert!(info.kept_bytes <= budget as u64 + 4, "budget {budget}");
        }
    }

    #[test]
    fn short_text_is_unchanged() {
        let (out, info) = head_tail("abc\n", 10, "x");
        assert_eq!(out, "abc\n");
        assert!(info.is_none());
    }

    #[test]
    fn keeps_head_and_tail_lines() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let (out, info) = head_tail(&text, 200, "narrow it");
        assert!(out.starts_with("line 0\n"));
        assert!(out.ends_with("line 999\n"));
        let info = info.unwrap();
        assert!(info.omitted_lines > 900);
        assert!(out.contains("narrow it"));
    }

    #[test]
    fn cut_line_marks_the_cut() {
        assert_eq!(cut_line("short", 10), "short");
        let long = "é".repeat(30);
        let cut = cut_line(&long, 10);
        assert!(cut.starts_with(&"é".repeat(10)));
        assert!(cut.contains("40 more bytes"));
    }
}
