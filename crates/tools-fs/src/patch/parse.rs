//! Parsers for the two patch formats `patch_apply` accepts.
//!
//! - **Unified diffs**, as `git diff`, `git format-patch`, `diff -u` and models write them: several
//!   files per patch, git's extended headers (`new file mode`, `deleted file mode`,
//!   `rename from/to`, `copy from/to`), `/dev/null` for created and deleted files, quoted paths,
//!   `\ No newline at end of file`, and hunks without headers when the caller names the file.
//! - **The `*** Begin Patch` envelope** of OpenAI's apply_patch tool: `*** Add File:`,
//!   `*** Delete File:`, `*** Update File:` (with `*** Move to:`), hunks introduced by `@@` with an
//!   optional anchor line, and `*** End of File`.
//!
//! Both produce the same [`FilePatch`] list. Nothing here touches the filesystem or resolves paths:
//! paths are returned as written (minus git's `a/` and `b/` prefixes) and the tool resolves them
//! through the workspace.

use std::fmt;

/// Why a patch could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParseError {
    /// The text is not a well-formed patch; the message says where and how to fix it.
    Malformed(String),
    /// The patch is well-formed but asks for something Toolshed refuses (links, submodules).
    Refused(String),
    /// The patch is well-formed but uses a feature this tool does not support (binary patches).
    Unsupported(String),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Malformed(m) | ParseError::Refused(m) | ParseError::Unsupported(m) => {
                f.write_str(m)
            }
        }
    }
}

/// Which syntax a patch was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `---`/`+++`/`@@` (git or plain).
    Unified,
    /// `*** Begin Patch` … `*** End Patch`.
    Envelope,
}

/// What a file section does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// Create `new_path`; it must not exist.
    Add,
    /// Remove `old_path`.
    Delete,
    /// Change `old_path` in place (`old_path == new_path`, or both `None` for headerless hunks).
    Modify,
    /// Move `old_path` to `new_path`, applying the hunks on the way.
    Rename,
    /// Copy `old_path` to `new_path`, applying the hunks to the copy.
    Copy,
}

/// The patch for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FilePatch {
    pub(crate) op: Op,
    /// The source path as written (after stripping `a/`); `None` for `Add` and for headerless hunks.
    pub(crate) old_path: Option<String>,
    /// The target path as written (after stripping `b/`); `None` for `Delete` and headerless hunks.
    pub(crate) new_path: Option<String>,
    pub(crate) hunks: Vec<Hunk>,
    /// Things the tool will not do but that do not stop the patch (mode changes), as sentences.
    pub(crate) notes: Vec<String>,
}

impl FilePatch {
    fn new(op: Op) -> FilePatch {
        FilePatch {
            op,
            old_path: None,
            new_path: None,
            hunks: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The name to use in messages.
    pub(crate) fn label(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("the file")
    }
}

/// The role of one line of a hunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Present before and after (` `).
    Context,
    /// Present only before (`-`).
    Remove,
    /// Present only after (`+`).
    Add,
}

/// One line of a hunk, without its prefix and line ending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HunkLine {
    pub(crate) kind: Kind,
    pub(crate) text: String,
    /// Whether the patch line ended with `\r\n` (a diff of a CRLF file).
    pub(crate) cr: bool,
}

/// One hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    /// The header as written (`@@ -10,4 +10,5 @@`, `@@ def foo():`), for messages.
    pub(crate) header: String,
    /// The 1-based first old line, when the header gives one.
    pub(crate) old_start: Option<usize>,
    /// The line counts the header declares (used only to read bodies, never trusted over them).
    pub(crate) old_count: Option<usize>,
    pub(crate) new_count: Option<usize>,
    /// Lines that locate the hunk (`@@ class A` then `@@ def f():`), searched in order.
    pub(crate) anchors: Vec<String>,
    pub(crate) lines: Vec<HunkLine>,
    /// `\ No newline at end of file` after the last old-side line.
    pub(crate) old_no_newline: bool,
    /// `\ No newline at end of file` after the last new-side line.
    pub(crate) new_no_newline: bool,
    /// `*** End of File`: the hunk's old lines must end the file.
    pub(crate) end_of_file: bool,
}

impl Hunk {
    fn new(header: String) -> Hunk {
        Hunk {
            header,
            old_start: None,
            old_count: None,
            new_count: None,
            anchors: Vec::new(),
            lines: Vec::new(),
            old_no_newline: false,
            new_no_newline: false,
            end_of_file: false,
        }
    }

    /// The lines the file must contain (context and removed).
    pub(crate) fn old_lines(&self) -> impl Iterator<Item = &HunkLine> {
        self.lines.iter().filter(|l| l.kind != Kind::Add)
    }

    /// The lines the file will contain (context and added).
    pub(crate) fn new_lines(&self) -> impl Iterator<Item = &HunkLine> {
        self.lines.iter().filter(|l| l.kind != Kind::Remove)
    }

    fn counts(&self) -> (usize, usize) {
        let old = self.old_lines().count();
        let new = self.new_lines().count();
        (old, new)
    }

    /// Whether the hunk only adds lines.
    pub(crate) fn is_pure_addition(&self) -> bool {
        self.lines.iter().all(|l| l.kind == Kind::Add)
    }
}

/// A parsed patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Patch {
    pub(crate) format: Format,
    pub(crate) files: Vec<FilePatch>,
}

/// Parses either format, chosen by the presence of a `*** Begin Patch` line.
pub(crate) fn parse(text: &str) -> Result<Patch, ParseError> {
    let lines = split(text);
    let envelope = lines.iter().any(|l| l.text.trim() == "*** Begin Patch");
    let (format, files) = if envelope {
        (Format::Envelope, parse_envelope(&lines)?)
    } else {
        (Format::Unified, parse_unified(&lines)?)
    };
    if files.is_empty() {
        return Err(ParseError::Malformed(
            "The patch contains no file changes: expected a unified diff (`--- a/file`, `+++ b/file`, `@@ -1,3 +1,3 @@` hunks) or a `*** Begin Patch` envelope.".into(),
        ));
    }
    Ok(Patch { format, files })
}

/// One line of the patch text: its 1-based number, its text without line ending, and whether it
/// ended with `\r\n`.
#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    no: usize,
    text: &'a str,
    cr: bool,
}

fn split(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut no = 1;
    while !rest.is_empty() {
        let (line, next) = match rest.find('\n') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        let (line, cr) = match line.strip_suffix('\r') {
            Some(l) => (l, true),
            None => (line, false),
        };
        out.push(Line { no, text: line, cr });
        no += 1;
        rest = next;
    }
    out
}

fn show(text: &str) -> String {
    tool_core::truncate::cut_line(text, 120).into_owned()
}

// ---------------------------------------------------------------------------------------------
// Unified diffs.
// ---------------------------------------------------------------------------------------------

/// A file section being read.
struct Section {
    patch: FilePatch,
    /// Whether it started with `diff --git` (paths carry `a/` and `b/` prefixes).
    git: bool,
    /// The paths of the `diff --git` line, used when no other header names the files.
    git_paths: Option<(String, String)>,
    /// Whether `---`/`+++` lines were read.
    has_file_lines: bool,
    /// Whether the `---`/`+++` lines or the git headers named `/dev/null` or a file mode.
    new_file: bool,
    deleted_file: bool,
    rename_from: Option<String>,
    rename_to: Option<String>,
    copy: bool,
    /// Where it starts, for messages.
    line_no: usize,
}

impl Section {
    fn new(git: bool, line_no: usize) -> Section {
        Section {
            patch: FilePatch::new(Op::Modify),
            git,
            git_paths: None,
            has_file_lines: false,
            new_file: false,
            deleted_file: false,
            rename_from: None,
            rename_to: None,
            copy: false,
            line_no,
        }
    }

    fn finish(mut self) -> Result<FilePatch, ParseError> {
        let git_paths = self.git_paths.take();
        let (mut old, mut new) = (self.patch.old_path.take(), self.patch.new_path.take());
        if !self.has_file_lines {
            // Only git sections get here (a plain section starts at its `---` line).
            if let Some((a, b)) = git_paths {
                old = Some(a);
                new = Some(b);
            }
        }
        if let Some(from) = self.rename_from.take() {
            old = Some(from);
        }
        if let Some(to) = self.rename_to.take() {
            new = Some(to);
        }
        let op = if self.new_file || (self.has_file_lines && old.is_none()) {
            Op::Add
        } else if self.deleted_file || (self.has_file_lines && new.is_none()) {
            Op::Delete
        } else if old.is_some() && new.is_some() && old != new {
            if self.copy { Op::Copy } else { Op::Rename }
        } else {
            Op::Modify
        };
        let mut patch = self.patch;
        patch.op = op;
        match op {
            Op::Add => {
                patch.old_path = None;
                patch.new_path = new.or(old);
                if let Some(h) = patch.hunks.iter().find(|h| !h.is_pure_addition()) {
                    return Err(ParseError::Malformed(format!(
                        "The patch creates {} (its old side is /dev/null or it has `new file mode`), but its hunk `{}` has context or removed lines; a new file's hunk may only add lines (`+`).",
                        patch.label(),
                        h.header
                    )));
                }
            }
            Op::Delete => {
                patch.old_path = old.or(new);
                patch.new_path = None;
                if let Some(h) = patch
                    .hunks
                    .iter()
                    .find(|h| h.lines.iter().any(|l| l.kind != Kind::Remove))
                {
                    return Err(ParseError::Malformed(format!(
                        "The patch deletes {} (its new side is /dev/null or it has `deleted file mode`), but its hunk `{}` has context or added lines; a deleted file's hunk may only remove lines (`-`).",
                        patch.label(),
                        h.header
                    )));
                }
            }
            Op::Modify => {
                let path = new.or(old);
                patch.old_path.clone_from(&path);
                patch.new_path = path;
            }
            Op::Rename | Op::Copy => {
                patch.old_path = old;
                patch.new_path = new;
            }
        }
        if patch.op == Op::Modify && patch.hunks.is_empty() && patch.notes.is_empty() {
            return Err(ParseError::Malformed(format!(
                "The section for {} starting at line {} of the patch has no hunks (`@@ -l,n +l,n @@`); add the changes or remove the section.",
                patch.label(),
                self.line_no
            )));
        }
        Ok(patch)
    }
}

fn parse_unified(lines: &[Line<'_>]) -> Result<Vec<FilePatch>, ParseError> {
    let mut files = Vec::new();
    let mut cur: Option<Section> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.text;
        if let Some(rest) = t.strip_prefix("diff --git ") {
            if let Some(s) = cur.take() {
                files.push(s.finish()?);
            }
            let mut s = Section::new(true, line.no);
            s.git_paths = git_header_paths(rest);
            i += 1;
            i = read_git_headers(lines, i, &mut s)?;
            cur = Some(s);
            continue;
        }
        if t.starts_with("--- ") && lines.get(i + 1).is_some_and(|n| n.text.starts_with("+++ ")) {
            let reuse = cur
                .as_ref()
                .is_some_and(|s| s.git && !s.has_file_lines && s.patch.hunks.is_empty());
            if !reuse {
                if let Some(s) = cur.take() {
                    files.push(s.finish()?);
                }
                cur = Some(Section::new(false, line.no));
            }
            let s = cur.as_mut().expect("a section was just set");
            let old = header_path(&t[4..], line.no)?;
            let new = header_path(&lines[i + 1].text[4..], line.no + 1)?;
            set_file_lines(s, old, new);
            i += 2;
            continue;
        }
        if t.starts_with("@@") {
            let s = cur.get_or_insert_with(|| Section::new(false, line.no));
            let mut hunk = parse_hunk_header(t, line.no)?;
            let hunk_index = s.patch.hunks.len() + 1;
            i = read_body(lines, i + 1, &mut hunk)?;
            check_after_body(lines, i, &hunk, s.patch.label(), hunk_index)?;
            s.patch.hunks.push(hunk);
            continue;
        }
        check_binary(t)?;
        // Anything else between sections (commit messages, `Index:` lines, `diff -u` command
        // lines) is commentary, as for git apply and patch.
        i += 1;
    }
    if let Some(s) = cur.take() {
        files.push(s.finish()?);
    }
    Ok(files)
}

fn check_binary(t: &str) -> Result<(), ParseError> {
    if t == "GIT binary patch" || (t.starts_with("Binary files ") && t.ends_with(" differ")) {
        return Err(ParseError::Unsupported(
            "The patch contains a binary file change (`GIT binary patch` or `Binary files … differ`), which patch_apply does not apply; change binary files with file_write or a command, and send only text changes as a patch.".into(),
        ));
    }
    Ok(())
}

fn check_mode(mode: &str, what: &str) -> Result<(), ParseError> {
    let mode = mode.trim();
    if mode.starts_with("120") {
        return Err(ParseError::Refused(format!(
            "The patch {what} a symbolic link (mode {mode}); patch_apply does not create or change links, because a link can point outside the workspace. Send regular file contents instead."
        )));
    }
    if mode.starts_with("160") {
        return Err(ParseError::Refused(format!(
            "The patch {what} a git submodule (mode {mode}); patch_apply does not change submodules. Use the git tools instead."
        )));
    }
    Ok(())
}

fn read_git_headers(lines: &[Line<'_>], mut i: usize, s: &mut Section) -> Result<usize, ParseError> {
    while let Some(line) = lines.get(i) {
        let t = line.text;
        if let Some(m) = t.strip_prefix("new file mode ") {
            check_mode(m, "creates")?;
            s.new_file = true;
            if m.trim() == "100755" {
                s.patch
                    .notes
                    .push("is executable in the patch, but file modes are not changed".into());
            }
        } else if let Some(m) = t.strip_prefix("deleted file mode ") {
            check_mode(m, "deletes")?;
            s.deleted_file = true;
        } else if let Some(m) = t.strip_prefix("old mode ") {
            check_mode(m, "changes")?;
        } else if let Some(m) = t.strip_prefix("new mode ") {
            check_mode(m, "changes")?;
            s.patch.notes.push(format!(
                "has a mode change to {} in the patch, which was not applied (file modes are not changed)",
                m.trim()
            ));
        } else if let Some(p) = t.strip_prefix("rename from ") {
            s.rename_from = Some(plain_path(p, line.no)?);
        } else if let Some(p) = t.strip_prefix("rename to ") {
            s.rename_to = Some(plain_path(p, line.no)?);
        } else if let Some(p) = t.strip_prefix("copy from ") {
            s.copy = true;
            s.rename_from = Some(plain_path(p, line.no)?);
        } else if let Some(p) = t.strip_prefix("copy to ") {
            s.copy = true;
            s.rename_to = Some(plain_path(p, line.no)?);
        } else if let Some(rest) = t.strip_prefix("index ") {
            // `index abc..def 100644`: the mode of a changed file.
            if let Some(mode) = rest.split_whitespace().nth(1) {
                check_mode(mode, "changes")?;
            }
        } else if t.starts_with("similarity index ") || t.starts_with("dissimilarity index ") {
        } else {
            check_binary(t)?;
            return Ok(i);
        }
        i += 1;
    }
    Ok(i)
}

fn set_file_lines(s: &mut Section, old: Option<String>, new: Option<String>) {
    s.has_file_lines = true;
    // Git's prefixes go when the section is git-style, or when both sides carry them (a diff
    // written by hand or by a model in git's style without the `diff --git` line).
    let strip = s.git
        || match (&old, &new) {
            (Some(o), Some(n)) => o.starts_with("a/") && n.starts_with("b/"),
            (None, Some(n)) => n.starts_with("b/"),
            (Some(o), None) => o.starts_with("a/"),
            (None, None) => false,
        };
    let strip_one = |p: Option<String>, prefix: &str| -> Option<String> {
        p.map(|p| match p.strip_prefix(prefix) {
            Some(rest) if strip => rest.to_string(),
            _ => p,
        })
    };
    s.patch.old_path = strip_one(old, "a/");
    s.patch.new_path = strip_one(new, "b/");
}

/// The paths of a `diff --git a/x b/y` line, without prefixes. `None` when they cannot be told
/// apart (unquoted names with spaces that differ); the other headers then name the files.
fn git_header_paths(rest: &str) -> Option<(String, String)> {
    let strip = |p: &str, prefix: &str| p.strip_prefix(prefix).unwrap_or(p).to_string();
    if rest.starts_with('"') {
        let (a, tail) = unquote(rest)?;
        let tail = tail.trim_start();
        let b = if tail.starts_with('"') {
            unquote(tail)?.0
        } else {
            tail.to_string()
        };
        return Some((strip(&a, "a/"), strip(&b, "b/")));
    }
    if let Some(q) = rest.find(" \"") {
        let a = &rest[..q];
        let b = unquote(&rest[q + 1..])?.0;
        return Some((strip(a, "a/"), strip(&b, "b/")));
    }
    // Unquoted: the usual case is the same name twice.
    if rest.len() % 2 == 1 {
        let mid = rest.len() / 2;
        if rest.is_char_boundary(mid) && rest.as_bytes()[mid] == b' ' {
            let (a, b) = (strip(&rest[..mid], "a/"), strip(&rest[mid + 1..], "b/"));
            if a == b {
                return Some((a, b));
            }
        }
    }
    let cut = rest.find(" b/")?;
    Some((strip(&rest[..cut], "a/"), strip(&rest[cut + 1..], "b/")))
}

/// The path of a `---`/`+++` line: quoted (C escapes) or up to a tab (after which `diff -u`
/// writes a timestamp). `None` for `/dev/null`.
fn header_path(raw: &str, line_no: usize) -> Result<Option<String>, ParseError> {
    let path = if raw.starts_with('"') {
        match unquote(raw) {
            Some((p, _)) => p,
            None => {
                return Err(ParseError::Malformed(format!(
                    "Line {line_no} of the patch has a badly quoted file name: `{}`.",
                    show(raw)
                )));
            }
        }
    } else {
        raw.split('\t').next().unwrap_or("").trim_end().to_string()
    };
    if path == "/dev/null" {
        return Ok(None);
    }
    if path.is_empty() {
        return Err(ParseError::Malformed(format!(
            "Line {line_no} of the patch has no file name after `---` or `+++`."
        )));
    }
    Ok(Some(path))
}

/// The path of a `rename from`/`copy to` line (no prefix; possibly quoted).
fn plain_path(raw: &str, line_no: usize) -> Result<String, ParseError> {
    if raw.starts_with('"') {
        return unquote(raw).map(|(p, _)| p).ok_or_else(|| {
            ParseError::Malformed(format!(
                "Line {line_no} of the patch has a badly quoted file name: `{}`.",
                show(raw)
            ))
        });
    }
    Ok(raw.trim_end().to_string())
}

/// Reads a C-style quoted string (as git writes unusual names) at the start of `s`; returns it
/// and the rest. Invalid UTF-8 from octal escapes is replaced, which the workspace then refuses
/// or treats as an ordinary name.
fn unquote(s: &str) -> Option<(String, &str)> {
    let body = s.strip_prefix('"')?;
    let mut out: Vec<u8> = Vec::new();
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                return Some((String::from_utf8_lossy(&out).into_owned(), &body[i + 1..]));
            }
            b'\\' => {
                let c = *bytes.get(i + 1)?;
                i += 2;
                match c {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'a' => out.push(7),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'v' => out.push(11),
                    b'0'..=b'3' => {
                        let digits = bytes.get(i - 1..i + 2)?;
                        if !digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                            return None;
                        }
                        out.push(
                            (digits[0] - b'0') * 64 + (digits[1] - b'0') * 8 + (digits[2] - b'0'),
                        );
                        i += 2;
                    }
                    other => out.push(other),
                }
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    None
}

/// Parses `@@ -a,b +c,d @@ section`, `@@` alone, or `@@ anchor` (a model's envelope-style hunk).
fn parse_hunk_header(t: &str, line_no: usize) -> Result<Hunk, ParseError> {
    let after = t[2..].trim();
    if after.is_empty() || after == "@@" {
        return Ok(Hunk::new("@@".into()));
    }
    if !after.starts_with('-') {
        let mut h = Hunk::new(t.to_string());
        h.anchors.push(after.to_string());
        return Ok(h);
    }
    let bad = || {
        ParseError::Malformed(format!(
            "Line {line_no} of the patch is not a valid hunk header: `{}`; write it as `@@ -OLD_START,OLD_COUNT +NEW_START,NEW_COUNT @@`.",
            show(t)
        ))
    };
    let end = after.find("@@").ok_or_else(bad)?;
    let ranges = after[..end].trim();
    let mut parts = ranges.split_whitespace();
    let old = parts.next().and_then(|p| p.strip_prefix('-')).ok_or_else(bad)?;
    let new = parts.next().and_then(|p| p.strip_prefix('+')).ok_or_else(bad)?;
    if parts.next().is_some() {
        return Err(bad());
    }
    let range = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((s, c)) => Some((s.parse().ok()?, c.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (old_start, old_count) = range(old).ok_or_else(bad)?;
    let (_, new_count) = range(new).ok_or_else(bad)?;
    let mut h = Hunk::new(format!("@@ {ranges} @@"));
    h.old_start = Some(old_start);
    h.old_count = Some(old_count);
    h.new_count = Some(new_count);
    Ok(h)
}

/// Whether `lines[i]` starts a new file section of a unified diff.
fn at_file_header(lines: &[Line<'_>], i: usize) -> bool {
    let Some(line) = lines.get(i) else {
        return false;
    };
    line.text.starts_with("diff --git ")
        || (line.text.starts_with("--- ")
            && lines.get(i + 1).is_some_and(|n| n.text.starts_with("+++ ")))
}

fn push_line(hunk: &mut Hunk, kind: Kind, text: &str, cr: bool) {
    hunk.lines.push(HunkLine {
        kind,
        text: text.to_string(),
        cr,
    });
}

/// Reads a unified hunk body from `lines[i]`; returns the index of the first line after it.
///
/// The body is every following line that starts with ` `, `-`, `+` or `\`; a blank line is read
/// as an empty context line (editors and models strip the lone space). The header's counts are
/// only used to tell a following `--- `/`+++ ` pair from removed lines and to decide how many
/// trailing blank lines belong to the hunk; when they disagree with the body, the body wins.
fn read_body(lines: &[Line<'_>], mut i: usize, hunk: &mut Hunk) -> Result<usize, ParseError> {
    let declared = hunk.old_count.zip(hunk.new_count);
    let start = i;
    // Blank lines not yet known to be part of the body.
    let mut blanks: Vec<bool> = Vec::new();
    while let Some(line) = lines.get(i) {
        let t = line.text;
        if t.starts_with("@@") || t.starts_with("diff --git ") {
            break;
        }
        if at_file_header(lines, i) {
            let (o, n) = hunk.counts();
            let satisfied = declared.is_none_or(|(dold, dnew)| o >= dold && n >= dnew);
            let hunk_follows = lines.get(i + 2).is_some_and(|n| n.text.starts_with("@@"));
            if satisfied || hunk_follows {
                break;
            }
        }
        let (kind, text) = match t.as_bytes().first() {
            None => {
                blanks.push(line.cr);
                i += 1;
                continue;
            }
            Some(b' ') => (Kind::Context, &t[1..]),
            Some(b'-') => (Kind::Remove, &t[1..]),
            Some(b'+') => (Kind::Add, &t[1..]),
            Some(b'\\') => {
                for cr in blanks.drain(..) {
                    push_line(hunk, Kind::Context, "", cr);
                }
                let Some(last) = hunk.lines.last() else {
                    return Err(ParseError::Malformed(format!(
                        "Line {} of the patch (`{}`) marks a missing final newline, but no line of hunk `{}` comes before it.",
                        line.no,
                        show(t),
                        hunk.header
                    )));
                };
                match last.kind {
                    Kind::Context => {
                        hunk.old_no_newline = true;
                        hunk.new_no_newline = true;
                    }
                    Kind::Remove => hunk.old_no_newline = true,
                    Kind::Add => hunk.new_no_newline = true,
                }
                i += 1;
                continue;
            }
            Some(_) => break,
        };
        for cr in blanks.drain(..) {
            push_line(hunk, Kind::Context, "", cr);
        }
        push_line(hunk, kind, text, line.cr);
        i += 1;
    }
    // Trailing blank lines belong to the hunk only as far as the declared counts need them.
    if let Some((dold, dnew)) = declared {
        let (o, n) = hunk.counts();
        let needed = dold.saturating_sub(o).min(dnew.saturating_sub(n));
        for cr in blanks.into_iter().take(needed) {
            push_line(hunk, Kind::Context, "", cr);
        }
    }
    // A `git format-patch` signature (`-- ` then the version) after the last hunk.
    if let Some((dold, dnew)) = declared
        && i > start
        && lines[i - 1].text == "-- "
        && hunk.lines.last().is_some_and(|l| l.kind == Kind::Remove)
        && !lines.get(i).is_some_and(|l| l.text.starts_with("@@"))
    {
        let (o, n) = hunk.counts();
        if o == dold + 1 && n == dnew {
            hunk.lines.pop();
        }
    }
    if hunk.lines.is_empty() {
        return Err(ParseError::Malformed(format!(
            "Hunk `{}` (line {} of the patch) has no lines; a hunk needs context (` `), removed (`-`) or added (`+`) lines after its header.",
            hunk.header,
            lines[start - 1].no
        )));
    }
    Ok(i)
}

/// After a hunk body that ended on a line that is neither a hunk nor a file header, decides
/// whether that line is commentary between sections (fine) or a broken body line (refused).
fn check_after_body(
    lines: &[Line<'_>],
    i: usize,
    hunk: &Hunk,
    label: &str,
    index: usize,
) -> Result<(), ParseError> {
    let Some(stop) = lines.get(i) else {
        return Ok(());
    };
    if stop.text.starts_with("@@") || at_file_header(lines, i) {
        return Ok(());
    }
    let (o, n) = hunk.counts();
    let counts_agree = hunk
        .old_count
        .zip(hunk.new_count)
        .is_some_and(|(dold, dnew)| dold == o && dnew == n);
    let mut j = i;
    while j < lines.len() && !at_file_header(lines, j) {
        let t = lines[j].text;
        let hunk_line = t.starts_with(' ') || t.starts_with('-') || t.starts_with('+');
        if t.starts_with("@@") || (!counts_agree && hunk_line) {
            return Err(ParseError::Malformed(format!(
                "Line {} of the patch (`{}`) follows hunk {index} ({}) of {label} but does not start with ` `, `-`, `+` or `\\`; every line of a hunk needs one of these prefixes (a blank context line is a single space). Fix that line and send the patch again.",
                stop.no,
                show(stop.text),
                hunk.header
            )));
        }
        j += 1;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The `*** Begin Patch` envelope.
// ---------------------------------------------------------------------------------------------

fn envelope_path(raw: &str, line_no: usize, what: &str) -> Result<String, ParseError> {
    let p = raw.trim();
    if p.is_empty() {
        return Err(ParseError::Malformed(format!(
            "Line {line_no} of the patch (`*** {what}:`) has no file name."
        )));
    }
    Ok(p.to_string())
}

fn parse_envelope(lines: &[Line<'_>]) -> Result<Vec<FilePatch>, ParseError> {
    let begin = lines
        .iter()
        .position(|l| l.text.trim() == "*** Begin Patch")
        .unwrap_or(0);
    let Some(end) = lines[begin + 1..]
        .iter()
        .position(|l| l.text.trim() == "*** End Patch")
        .map(|p| p + begin + 1)
    else {
        return Err(ParseError::Malformed(
            "The patch has `*** Begin Patch` but no `*** End Patch` line, so it may have been cut off; send the complete patch.".into(),
        ));
    };
    let body = &lines[begin + 1..end];
    let mut files = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let line = body[i];
        let t = line.text;
        if t.trim().is_empty() {
            i += 1;
            continue;
        }
        if let Some(p) = t.strip_prefix("*** Add File:") {
            let mut fp = FilePatch::new(Op::Add);
            fp.new_path = Some(envelope_path(p, line.no, "Add File")?);
            let mut hunk = Hunk::new("*** Add File".into());
            let mut blanks: Vec<bool> = Vec::new();
            i += 1;
            while let Some(l) = body.get(i) {
                if l.text.starts_with("*** ") {
                    break;
                }
                if l.text.is_empty() {
                    blanks.push(l.cr);
                } else if let Some(c) = l.text.strip_prefix('+') {
                    for cr in blanks.drain(..) {
                        push_line(&mut hunk, Kind::Add, "", cr);
                    }
                    push_line(&mut hunk, Kind::Add, c, l.cr);
                } else {
                    return Err(ParseError::Malformed(format!(
                        "Line {} of the patch (`{}`) is inside `*** Add File: {}`, where every line of the new file must start with `+`.",
                        l.no,
                        show(l.text),
                        fp.label()
                    )));
                }
                i += 1;
            }
            if !hunk.lines.is_empty() {
                fp.hunks.push(hunk);
            }
            files.push(fp);
            continue;
        }
        if let Some(p) = t.strip_prefix("*** Delete File:") {
            let mut fp = FilePatch::new(Op::Delete);
            fp.old_path = Some(envelope_path(p, line.no, "Delete File")?);
            files.push(fp);
            i += 1;
            continue;
        }
        if let Some(p) = t.strip_prefix("*** Update File:") {
            let path = envelope_path(p, line.no, "Update File")?;
            let mut fp = FilePatch::new(Op::Modify);
            fp.old_path = Some(path.clone());
            fp.new_path = Some(path.clone());
            i += 1;
            if let Some(m) = body.get(i).and_then(|l| l.text.strip_prefix("*** Move to:")) {
                let to = envelope_path(m, body[i].no, "Move to")?;
                if to != path {
                    fp.op = Op::Rename;
                    fp.new_path = Some(to);
                }
                i += 1;
            }
            i = read_envelope_hunks(body, i, &mut fp)?;
            if fp.hunks.is_empty() && fp.op == Op::Modify {
                return Err(ParseError::Malformed(format!(
                    "`*** Update File: {path}` (line {} of the patch) has no changes; add hunks (`@@`, then lines starting with ` `, `-` or `+`) or remove the section.",
                    line.no
                )));
            }
            files.push(fp);
            continue;
        }
        return Err(ParseError::Malformed(format!(
            "Line {} of the patch (`{}`) is not a file operation; expected `*** Add File: PATH`, `*** Delete File: PATH`, `*** Update File: PATH` or `*** End Patch`.",
            line.no,
            show(t)
        )));
    }
    Ok(files)
}

/// Reads the hunks of an `*** Update File:` section from `body[i]`; returns the index after them.
fn read_envelope_hunks(
    body: &[Line<'_>],
    mut i: usize,
    fp: &mut FilePatch,
) -> Result<usize, ParseError> {
    let mut cur: Option<Hunk> = None;
    let mut blanks: Vec<bool> = Vec::new();
    let finish = |cur: &mut Option<Hunk>, fp: &mut FilePatch, no: usize| {
        if let Some(h) = cur.take() {
            if h.lines.is_empty() {
                return Err(ParseError::Malformed(format!(
                    "Hunk `{}` of {} (before line {no} of the patch) has no lines; after `@@`, give lines starting with ` ` (context), `-` (removed) or `+` (added).",
                    h.header,
                    fp.label()
                )));
            }
            fp.hunks.push(h);
        }
        Ok(())
    };
    while let Some(line) = body.get(i) {
        let t = line.text;
        if t.trim_end() == "*** End of File" {
            blanks.clear();
            match cur.as_mut() {
                Some(h) if !h.lines.is_empty() => h.end_of_file = true,
                _ => {
                    return Err(ParseError::Malformed(format!(
                        "Line {} of the patch (`*** End of File`) does not follow any changed lines of {}.",
                        line.no,
                        fp.label()
                    )));
                }
            }
            finish(&mut cur, fp, line.no)?;
            i += 1;
            continue;
        }
        if t.starts_with("*** ") {
            break;
        }
        if let Some(anchor) = t.strip_prefix("@@") {
            blanks.clear();
            let anchor = anchor.trim();
            // `@@ class A` directly followed by `@@ def f():` narrows the search step by step.
            let nested = cur.as_ref().is_some_and(|h| h.lines.is_empty());
            if nested {
                let h = cur.as_mut().expect("checked above");
                if !anchor.is_empty() {
                    h.anchors.push(anchor.to_string());
                    h.header = format!("{} {}", h.header, t.trim_end());
                }
            } else {
                finish(&mut cur, fp, line.no)?;
                let mut h = Hunk::new(t.trim_end().to_string());
                if !anchor.is_empty() {
                    h.anchors.push(anchor.to_string());
                }
                cur = Some(h);
            }
            i += 1;
            continue;
        }
        let (kind, text) = match t.as_bytes().first() {
            None => {
                blanks.push(line.cr);
                i += 1;
                continue;
            }
            Some(b' ') => (Kind::Context, &t[1..]),
            Some(b'-') => (Kind::Remove, &t[1..]),
            Some(b'+') => (Kind::Add, &t[1..]),
            Some(_) => {
                return Err(ParseError::Malformed(format!(
                    "Line {} of the patch (`{}`) is inside `*** Update File: {}` but does not start with ` ` (context), `-` (removed), `+` (added) or `@@`; a context line needs its leading space.",
                    line.no,
                    show(t),
                    fp.old_path.as_deref().unwrap_or_default()
                )));
            }
        };
        let h = cur.get_or_insert_with(|| Hunk::new("@@".into()));
        for cr in blanks.drain(..) {
            push_line(h, Kind::Context, "", cr);
        }
        push_line(h, kind, text, line.cr);
        i += 1;
    }
    let no = body.get(i).map_or(0, |l| l.no);
    finish(&mut cur, fp, no)?;
    Ok(i)
}
