//! Applying hunks to a file's text, in memory.
//!
//! Each hunk's old side (context and removed lines) must be found in the file, line for line. A
//! hunk with line numbers is searched for at its stated line first, then outward (nearest wins),
//! never before the end of the previous hunk; a hunk without numbers (the envelope format) is
//! searched forward from the previous hunk, after its anchor lines. A first pass compares lines
//! exactly, a second ignores trailing whitespace. Context is never dropped: if the old side is not
//! there, the hunk fails with the first line that differs.
//!
//! Line endings are kept: lines taken from the file keep their own ending, added lines get the
//! file's dominant one (CRLF or LF), and the final newline follows the patch's
//! `\ No newline at end of file` markers or, without markers, stays as it was.

use super::parse::{Hunk, Kind};
use crate::text::squash_ws;

/// The result of applying a file's hunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    pub(crate) text: String,
    pub(crate) added: usize,
    pub(crate) removed: usize,
    /// Where hunks drifted or needed whitespace tolerance, as sentence fragments.
    pub(crate) notes: Vec<String>,
}

const CLOSING: &str = "Nothing was changed; read the file and regenerate the patch.";

/// One line of the file: its text without the line ending, and the ending (`""` for a last line
/// without newline).
#[derive(Debug, Clone, Copy)]
struct FileLine<'a> {
    text: &'a str,
    eol: &'a str,
}

fn split_lines(s: &str) -> Vec<FileLine<'_>> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        match rest.find('\n') {
            Some(i) => {
                let (text, eol) = if i > 0 && rest.as_bytes()[i - 1] == b'\r' {
                    (&rest[..i - 1], &rest[i - 1..=i])
                } else {
                    (&rest[..i], &rest[i..=i])
                };
                out.push(FileLine { text, eol });
                rest = &rest[i + 1..];
            }
            None => {
                out.push(FileLine {
                    text: rest,
                    eol: "",
                });
                rest = "";
            }
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compare {
    Exact,
    IgnoreTrailingWs,
}

fn same(file: &str, patch: &str, how: Compare) -> bool {
    match how {
        Compare::Exact => file == patch,
        Compare::IgnoreTrailingWs => file.trim_end() == patch.trim_end(),
    }
}

fn matches_at(lines: &[FileLine<'_>], pos: usize, old: &[&str], how: Compare) -> bool {
    pos + old.len() <= lines.len()
        && old
            .iter()
            .zip(&lines[pos..])
            .all(|(o, l)| same(l.text, o, how))
}

/// Where the old lines are, at or after `min`: at the end only (`at_end`), nearest to `expected`,
/// or the first position.
fn locate(
    lines: &[FileLine<'_>],
    old: &[&str],
    min: usize,
    expected: Option<usize>,
    at_end: bool,
    how: Compare,
) -> Option<usize> {
    let max = lines.len().checked_sub(old.len())?;
    if min > max {
        return None;
    }
    if at_end {
        return matches_at(lines, max, old, how).then_some(max);
    }
    let Some(e) = expected else {
        return (min..=max).find(|&p| matches_at(lines, p, old, how));
    };
    let e = e.clamp(min, max);
    for d in 0..=(max - e).max(e - min) {
        if e + d <= max && matches_at(lines, e + d, old, how) {
            return Some(e + d);
        }
        if d > 0 && e >= min + d && matches_at(lines, e - d, old, how) {
            return Some(e - d);
        }
    }
    None
}

fn find_anchor(lines: &[FileLine<'_>], anchor: &str, from: usize) -> Option<usize> {
    let rest = lines.get(from..)?;
    let found = rest
        .iter()
        .position(|l| l.text == anchor)
        .or_else(|| {
            rest.iter()
                .position(|l| l.text.trim_end() == anchor.trim_end())
        })
        .or_else(|| rest.iter().position(|l| l.text.trim() == anchor.trim()))
        // `@@ fn main()` for `fn main() {`: an anchor only locates; the context still has to match.
        .or_else(|| {
            let a = anchor.trim();
            (a.len() >= 3)
                .then(|| rest.iter().position(|l| l.text.trim_start().starts_with(a)))
                .flatten()
        })?;
    Some(from + found)
}

/// The line most like `anchor` at or after `from`, for error messages.
fn closest_line(lines: &[FileLine<'_>], anchor: &str, from: usize) -> Option<usize> {
    let a = anchor.trim();
    let mut best: Option<(f32, usize)> = None;
    for (i, l) in lines.iter().enumerate().skip(from).take(50_000) {
        let t = l.text.trim();
        if t.is_empty() || t.len() > a.len() * 3 + 20 || a.len() > t.len() * 3 + 20 {
            continue;
        }
        let ratio = similar::TextDiff::from_chars(a, t).ratio();
        if ratio >= 0.6 && best.is_none_or(|(r, _)| ratio > r) {
            best = Some((ratio, i));
        }
    }
    best.map(|(_, i)| i)
}

fn quote(s: &str) -> String {
    format!("`{}`", tool_core::truncate::cut_line(s, 200))
}

/// `lines` around `at` (0-based), numbered, the line `at` marked with `>`.
fn excerpt(lines: &[FileLine<'_>], at: usize) -> String {
    if lines.is_empty() {
        return "The file is empty.\n".into();
    }
    let at = at.min(lines.len() - 1);
    let from = at.saturating_sub(2);
    let to = (at + 3).min(lines.len());
    let mut out = format!("The file's lines {}-{}:\n", from + 1, to);
    for (i, l) in lines[from..to].iter().enumerate() {
        let n = from + i;
        out.push_str(&format!(
            "{}{}\t{}\n",
            if n == at { "> " } else { "  " },
            n + 1,
            tool_core::truncate::cut_line(l.text, 200)
        ));
    }
    out
}

/// Applies `hunks` to `original`. `label` names the file in messages.
pub(crate) fn apply_hunks(label: &str, original: &str, hunks: &[Hunk]) -> Result<Applied, String> {
    let lines = split_lines(original);
    let len = lines.len();
    let crlf = lines.iter().filter(|l| l.eol == "\r\n").count();
    let lf = lines.iter().filter(|l| l.eol == "\n").count();
    let dominant = if crlf + lf == 0 {
        patch_eol(hunks)
    } else if crlf > lf {
        "\r\n"
    } else {
        "\n"
    };

    // Output lines: text and ending (`None`: the dominant one).
    let mut out: Vec<(&str, Option<&str>)> = Vec::with_capacity(len + 16);
    let mut final_missing = lines.last().is_some_and(|l| l.eol.is_empty());
    let mut cursor = 0usize;
    let mut offset: isize = 0;
    let (mut added, mut removed) = (0, 0);
    let mut notes = Vec::new();

    for (k, hunk) in hunks.iter().enumerate() {
        let n = k + 1;
        let head = format!("patch for {label}, hunk {n} ({})", hunk.header);
        let old: Vec<&str> = hunk.old_lines().map(|l| l.text.as_str()).collect();

        let mut from = cursor;
        let mut anchor_at = None;
        for a in &hunk.anchors {
            match find_anchor(&lines, a, from) {
                Some(i) => {
                    anchor_at = Some(i);
                    from = i + 1;
                }
                None => {
                    let where_ = if from == 0 {
                        String::new()
                    } else {
                        format!(" after line {from}")
                    };
                    let closest = match closest_line(&lines, a, from) {
                        Some(i) => format!(
                            " The most similar line is {}: {}.",
                            i + 1,
                            quote(lines[i].text)
                        ),
                        None => String::new(),
                    };
                    return Err(format!(
                        "{head}: the anchor line {} was not found in the file{where_}.{closest} {CLOSING}",
                        quote(a)
                    ));
                }
            }
        }
        // The stated position, shifted by the drift of the previous hunks.
        let base = hunk.old_start.map(|s| {
            if old.is_empty() && hunk.old_count == Some(0) {
                s
            } else {
                s.saturating_sub(1)
            }
        });
        let expected = base.map(|b| (b as isize + offset).max(0) as usize);

        let (pos, how) = if old.is_empty() {
            // Nothing to verify: insert after the anchor, at the stated line, or at the end.
            let pos = match (anchor_at, expected) {
                (Some(a), _) => a + 1,
                (None, Some(e)) => {
                    if e > len {
                        return Err(format!(
                            "{head}: it adds lines after line {e}, but the file has only {len} lines. {CLOSING}"
                        ));
                    }
                    if e < cursor {
                        return Err(format!(
                            "{head}: it adds lines at line {}, inside the previous hunk (which ended at line {cursor}); hunks must be in file order. {CLOSING}",
                            e + 1
                        ));
                    }
                    e
                }
                (None, None) => len,
            };
            (pos, Compare::Exact)
        } else {
            let search_from = anchor_at.unwrap_or(cursor);
            let near = if hunk.anchors.is_empty() {
                expected
            } else {
                None
            };
            let found = [Compare::Exact, Compare::IgnoreTrailingWs]
                .into_iter()
                .find_map(|how| {
                    locate(&lines, &old, search_from, near, hunk.end_of_file, how).map(|p| (p, how))
                });
            match found {
                Some(f) => f,
                None => {
                    return Err(diagnose(
                        &head,
                        &lines,
                        &old,
                        hunk,
                        cursor,
                        near.unwrap_or(search_from),
                    ));
                }
            }
        };

        if how == Compare::IgnoreTrailingWs {
            notes.push(format!(
                "hunk {n} of {label} matched only when trailing whitespace is ignored"
            ));
        }
        // Drift is reported against the line the hunk states, as patch(1) does.
        if let Some(b) = base
            && !old.is_empty()
            && pos != b
        {
            let d = pos as isize - b as isize;
            notes.push(format!(
                "hunk {n} of {label} applied at line {} (offset {d:+} line{})",
                pos + 1,
                if d.abs() == 1 { "" } else { "s" }
            ));
        }
        if let Some(b) = base {
            offset = pos as isize - b as isize;
        }

        out.extend(lines[cursor..pos].iter().map(|l| (l.text, Some(l.eol))));
        let mut idx = pos;
        for line in &hunk.lines {
            match line.kind {
                Kind::Context => {
                    let l = lines[idx];
                    out.push((l.text, Some(l.eol)));
                    idx += 1;
                }
                Kind::Remove => {
                    idx += 1;
                    removed += 1;
                }
                Kind::Add => {
                    out.push((line.text.as_str(), None));
                    added += 1;
                }
            }
        }
        cursor = idx;
        if idx == len && (hunk.old_no_newline || hunk.new_no_newline) {
            final_missing = hunk.new_no_newline;
        }
    }
    out.extend(lines[cursor..].iter().map(|l| (l.text, Some(l.eol))));

    let mut text = String::with_capacity(original.len() + 64);
    let last = out.len().saturating_sub(1);
    for (i, (t, eol)) in out.iter().enumerate() {
        text.push_str(t);
        let eol = match eol {
            Some(e) if !e.is_empty() => e,
            _ => dominant,
        };
        if i < last || !final_missing {
            text.push_str(eol);
        }
    }
    Ok(Applied {
        text,
        added,
        removed,
        notes,
    })
}

/// The line ending the patch itself used for added lines (for files with no line ending yet).
fn patch_eol(hunks: &[Hunk]) -> &'static str {
    let (mut cr, mut plain) = (0, 0);
    for l in hunks.iter().flat_map(|h| &h.lines) {
        if l.kind == Kind::Add {
            if l.cr {
                cr += 1;
            } else {
                plain += 1;
            }
        }
    }
    if cr > plain { "\r\n" } else { "\n" }
}

/// The content of a file created by `hunks` (which only add lines), and its line count.
pub(crate) fn new_file_content(hunks: &[Hunk]) -> (String, usize) {
    let eol = patch_eol(hunks);
    let mut text = String::new();
    let mut count = 0;
    for line in hunks.iter().flat_map(|h| &h.lines) {
        if line.kind == Kind::Add {
            text.push_str(&line.text);
            text.push_str(eol);
            count += 1;
        }
    }
    if hunks.last().is_some_and(|h| h.new_no_newline) {
        text.truncate(text.len() - eol.len().min(text.len()));
    }
    (text, count)
}

/// Checks that `hunks` (which only remove lines) remove the whole of `original`.
pub(crate) fn verify_delete(label: &str, original: &str, hunks: &[Hunk]) -> Result<(), String> {
    let applied = apply_hunks(label, original, hunks)?;
    if applied.text.trim().is_empty() {
        return Ok(());
    }
    let total = split_lines(original).len();
    Err(format!(
        "patch for {label}: the patch deletes the file, but its hunks remove only {} of the file's {total} lines, so the file has changed since the patch was made. {CLOSING}",
        applied.removed
    ))
}

/// Explains why `old` was not found: the nearest window and its first differing line.
fn diagnose(
    head: &str,
    lines: &[FileLine<'_>],
    old: &[&str],
    hunk: &Hunk,
    cursor: usize,
    expected: usize,
) -> String {
    let len = lines.len();
    let loose = Compare::IgnoreTrailingWs;
    if hunk.end_of_file
        && let Some(p) = locate(lines, old, cursor, Some(expected), false, loose)
    {
        return format!(
            "{head}: its lines are at line {}, but `*** End of File` says they end the file, which has {len} lines. {CLOSING}",
            p + 1
        );
    }
    if cursor > 0
        && let Some(p) = locate(lines, old, 0, Some(expected), false, loose)
        && p < cursor
    {
        return format!(
            "{head}: its lines are at line {}, which is before the end of the previous hunk (line {cursor}); hunks must be in file order and must not overlap. {CLOSING}",
            p + 1
        );
    }
    let new: Vec<&str> = hunk.new_lines().map(|l| l.text.as_str()).collect();
    let mut already = String::new();
    if !new.is_empty()
        && new != old
        && let Some(p) = locate(lines, &new, 0, Some(expected), false, loose)
    {
        already = format!(
            " The file already has the hunk's result at line {}, so the patch may have been applied already.",
            p + 1
        );
    }

    // The window (possibly running past the end) where most of the old lines agree.
    let (lo, hi) = if len.saturating_mul(old.len()) > 20_000_000 {
        (
            expected.saturating_sub(20_000),
            (expected + 20_000).min(len),
        )
    } else {
        (0, len)
    };
    let mut best: Option<(usize, usize)> = None; // (score, pos)
    for p in lo..=hi {
        let score = old
            .iter()
            .zip(lines.get(p..).unwrap_or_default())
            .filter(|(o, l)| same(l.text, o, loose))
            .count();
        let better = match best {
            None => true,
            Some((s, bp)) => {
                score > s || (score == s && p.abs_diff(expected) < bp.abs_diff(expected))
            }
        };
        if better {
            best = Some((score, p));
        }
    }
    let (score, pos) = best.unwrap_or((0, expected.min(len)));
    let (pos, nowhere) = if score == 0 {
        let none = if old.len() > 1 {
            format!(
                " None of its {} context and removed lines is in the file.",
                old.len()
            )
        } else {
            String::new()
        };
        (expected.min(len), none)
    } else {
        (pos, String::new())
    };
    let i = old
        .iter()
        .enumerate()
        .find(|(i, o)| lines.get(pos + i).is_none_or(|l| !same(l.text, o, loose)))
        .map_or(0, |(i, _)| i);
    let at = pos + i;
    let detail = match lines.get(at) {
        None => format!(
            "line {} expected {} but the file ends at line {len}",
            at + 1,
            quote(old[i])
        ),
        Some(l) => {
            let ws = if squash_ws(l.text) == squash_ws(old[i]) {
                " (they differ only in whitespace inside the line)"
            } else {
                ""
            };
            format!(
                "line {} expected {} but the file has {}{ws}",
                at + 1,
                quote(old[i]),
                quote(l.text)
            )
        }
    };
    format!(
        "{head}: {detail}.{nowhere}{already}\n{}{CLOSING}",
        excerpt(lines, at)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::parse::{HunkLine, Kind};

    fn hunk(start: Option<usize>, body: &[&str]) -> Hunk {
        let lines = body
            .iter()
            .map(|l| {
                let (k, t) = l.split_at(1);
                HunkLine {
                    kind: match k {
                        " " => Kind::Context,
                        "-" => Kind::Remove,
                        "+" => Kind::Add,
                        _ => panic!("bad test line {l}"),
                    },
                    text: t.to_string(),
                    cr: false,
                }
            })
            .collect::<Vec<_>>();
        let old = lines.iter().filter(|l| l.kind != Kind::Add).count();
        let new = lines.iter().filter(|l| l.kind != Kind::Remove).count();
        Hunk {
            header: match start {
                Some(s) => format!("@@ -{s},{old} +{s},{new} @@"),
                None => "@@".into(),
            },
            old_start: start,
            new_start: start,
            old_count: start.map(|_| old),
            new_count: start.map(|_| new),
            anchors: Vec::new(),
            lines,
            old_no_newline: false,
            new_no_newline: false,
            end_of_file: false,
        }
    }

    const FILE: &str = "a\nb\nc\nd\ne\nf\ng\n";

    #[test]
    fn exact_position() {
        let got = apply_hunks("f", FILE, &[hunk(Some(2), &[" b", "-c", "+C", " d"])]).unwrap();
        assert_eq!(got.text, "a\nb\nC\nd\ne\nf\ng\n");
        assert_eq!((got.added, got.removed), (1, 1));
        assert!(got.notes.is_empty());
    }

    #[test]
    fn drift_picks_the_nearest_match() {
        let file = "x\ny\nx\ny\nx\ny\n";
        // Stated at line 5 (x at index 4); matches at 0, 2 and 4; nearest to 5 is 4.
        let got = apply_hunks("f", file, &[hunk(Some(5), &[" x", "-y", "+Y"])]).unwrap();
        assert_eq!(got.text, "x\ny\nx\ny\nx\nY\n");
        // Stated at line 2: nearest candidates are index 0 and 2 (distance 1 each); forward wins.
        let got = apply_hunks("f", file, &[hunk(Some(2), &[" x", "-y", "+Y"])]).unwrap();
        assert_eq!(got.text, "x\ny\nx\nY\nx\ny\n");
        assert!(got.notes[0].contains("offset +1"), "{:?}", got.notes);
    }

    #[test]
    fn offsets_carry_to_later_hunks() {
        let file = "new1\nnew2\na\nb\nc\nd\ne\nf\ng\n";
        let got = apply_hunks(
            "f",
            file,
            &[
                hunk(Some(1), &[" a", "-b", "+B"]),
                hunk(Some(6), &[" f", "-g", "+G"]),
            ],
        )
        .unwrap();
        assert_eq!(got.text, "new1\nnew2\na\nB\nc\nd\ne\nf\nG\n");
    }

    #[test]
    fn trailing_whitespace_second_pass_keeps_file_context() {
        let file = "a  \nb\t\nc\n";
        let got = apply_hunks("f", file, &[hunk(Some(1), &[" a", "-b", "+B", " c"])]).unwrap();
        assert_eq!(got.text, "a  \nB\nc\n");
        assert!(got.notes[0].contains("trailing whitespace"));
    }

    #[test]
    fn crlf_is_kept() {
        let file = "a\r\nb\r\nc\r\n";
        let got = apply_hunks("f", file, &[hunk(Some(1), &[" a", "-b", "+B", "+B2"])]).unwrap();
        assert_eq!(got.text, "a\r\nB\r\nB2\r\nc\r\n");
    }

    #[test]
    fn final_newline_follows_markers() {
        let mut h = hunk(Some(2), &[" b", "-c", "+C"]);
        h.new_no_newline = true;
        let got = apply_hunks("f", "a\nb\nc\n", &[h]).unwrap();
        assert_eq!(got.text, "a\nb\nC");

        let mut h = hunk(Some(2), &[" b", "-c", "+C"]);
        h.old_no_newline = true;
        let got = apply_hunks("f", "a\nb\nc", &[h]).unwrap();
        assert_eq!(got.text, "a\nb\nC\n");

        // Without markers the file's state is kept, and a line that stops being last gets one.
        let got = apply_hunks("f", "a\nb", &[hunk(Some(2), &[" b", "+c"])]).unwrap();
        assert_eq!(got.text, "a\nb\nc");
    }

    #[test]
    fn mismatch_names_the_first_differing_line() {
        let file = "fn main() {\n    let y = 0;\n    let x = 2;\n}\n";
        let err = apply_hunks(
            "src/a.rs",
            file,
            &[hunk(
                Some(2),
                &["     let y = 0;", "-    let x = 1;", "+    let x = 3;"],
            )],
        )
        .unwrap_err();
        assert!(
            err.starts_with("patch for src/a.rs, hunk 1 (@@ -2,2 +2,2 @@): line 3 expected `    let x = 1;` but the file has `    let x = 2;`."),
            "{err}"
        );
        assert!(err.contains("> 3\t    let x = 2;"), "{err}");
        assert!(err.ends_with("regenerate the patch."), "{err}");
    }

    #[test]
    fn never_fuzzes_context_away() {
        // Two of three context lines match; the hunk must still fail.
        let err = apply_hunks("f", FILE, &[hunk(Some(2), &[" b", " X", "-d", "+D"])]).unwrap_err();
        assert!(
            err.contains("line 3 expected `X` but the file has `c`"),
            "{err}"
        );
    }

    #[test]
    fn already_applied_is_detected() {
        let err = apply_hunks(
            "f",
            "a\nB\nc\n",
            &[hunk(Some(1), &[" a", "-b", "+B", " c"])],
        )
        .unwrap_err();
        assert!(err.contains("may have been applied already"), "{err}");
    }

    #[test]
    fn envelope_hunks_search_forward_after_anchors() {
        let file = "def a():\n    return 1\ndef b():\n    return 1\n";
        let mut h = hunk(None, &["-    return 1", "+    return 2"]);
        h.anchors.push("def b():".into());
        let got = apply_hunks("f", file, &[h]).unwrap();
        assert_eq!(got.text, "def a():\n    return 1\ndef b():\n    return 2\n");

        let mut h = hunk(None, &["-    return 1", "+    return 2"]);
        h.anchors.push("def c():".into());
        let err = apply_hunks("f", file, &[h]).unwrap_err();
        assert!(
            err.contains("the anchor line `def c():` was not found"),
            "{err}"
        );
        assert!(
            err.contains("The most similar line is 1: `def a():`."),
            "{err}"
        );

        // An anchor that is the start of the line is enough to locate.
        let mut h = hunk(None, &["-    return 1", "+    return 3"]);
        h.anchors.push("def b".into());
        let got = apply_hunks("f", file, &[h]).unwrap();
        assert_eq!(got.text, "def a():\n    return 1\ndef b():\n    return 3\n");
    }

    #[test]
    fn end_of_file_hunks_must_end_the_file() {
        let file = "x\ny\nx\n";
        let mut h = hunk(None, &["-x", "+z"]);
        h.end_of_file = true;
        let got = apply_hunks("f", file, &[h]).unwrap();
        assert_eq!(got.text, "x\ny\nz\n");
    }

    #[test]
    fn overlapping_and_misplaced_hunks_are_explained() {
        let err = apply_hunks(
            "f",
            FILE,
            &[
                hunk(Some(5), &[" e", "-f", "+F"]),
                hunk(Some(1), &[" a", "-b", "+B"]),
            ],
        )
        .unwrap_err();
        assert!(
            err.contains("hunk 2 (@@ -1,2 +1,2 @@): its lines are at line 1, which is before the end of the previous hunk (line 6)"),
            "{err}"
        );
        let mut h = hunk(None, &["-c", "+C"]);
        h.end_of_file = true;
        let err = apply_hunks("f", FILE, &[h]).unwrap_err();
        assert!(
            err.contains("`*** End of File` says they end the file"),
            "{err}"
        );
    }

    #[test]
    fn pure_insertions() {
        let mut h = hunk(Some(2), &["+new"]);
        h.old_count = Some(0);
        let got = apply_hunks("f", "a\nb\nc\n", &[h]).unwrap();
        assert_eq!(got.text, "a\nb\nnew\nc\n");
        let got = apply_hunks("f", "", &[hunk(None, &["+x", "+y"])]).unwrap();
        assert_eq!(got.text, "x\ny\n");
        let mut h = hunk(Some(9), &["+new"]);
        h.old_count = Some(0);
        assert!(
            apply_hunks("f", "a\n", &[h])
                .unwrap_err()
                .contains("only 1 lines")
        );
    }

    #[test]
    fn delete_must_remove_everything() {
        verify_delete("f", "a\nb\n", &[hunk(Some(1), &["-a", "-b"])]).unwrap();
        let err = verify_delete("f", "a\nb\nc\n", &[hunk(Some(1), &["-a", "-b"])]).unwrap_err();
        assert!(err.contains("remove only 2 of the file's 3 lines"), "{err}");
    }

    #[test]
    fn new_files() {
        let mut h = hunk(Some(0), &["+a", "+b"]);
        assert_eq!(
            new_file_content(std::slice::from_ref(&h)),
            ("a\nb\n".into(), 2)
        );
        h.new_no_newline = true;
        assert_eq!(new_file_content(&[h]), ("a\nb".into(), 2));
    }
}
