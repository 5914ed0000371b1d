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
    /// The other name a plain diff gave the file (`--- x.orig` / `+++ x`): not used, but checked
    /// like every path, so a hostile name fails the patch instead of being silently ignored.
    pub(crate) other_name: Option<String>,
}

impl FilePatch {
    fn new(op: Op) -> FilePatch {
        FilePatch {
            op,
            old_path: None,
            new_path: None,
            hunks: Vec::new(),
            notes: Vec::new(),
            other_name: None,
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
    /// The 1-based first new line, when the header gives one (only for messages).
    pub(crate) new_start: Option<usize>,
    /// The line counts the header declares. They decide where a body ends, and a body that
    /// does not have exactly these counts is refused (see [`check_counts`]).
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
            new_start: None,
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
    // A marker with leading whitespace is a context line of a unified diff, not a marker.
    let envelope = lines.iter().any(|l| l.text.trim_end() == "*** Begin Patch");
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
    // When every line ends with CRLF, headers included, the patch went through something that
    // converted its line endings; the CRs say nothing about the files (a `git diff` of a CRLF
    // file has CRs on the changed lines only).
    let terminated = if text.ends_with('\n') {
        out.len()
    } else {
        out.len().saturating_sub(1)
    };
    if terminated > 0 && out[..terminated].iter().all(|l| l.cr) {
        for l in &mut out {
            l.cr = false;
        }
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

    /// The file's name for messages while the section is read: its `---`/`+++` name, else the
    /// name its git headers give.
    fn label(&self) -> String {
        if self.patch.old_path.is_some() || self.patch.new_path.is_some() {
            return self.patch.label().to_string();
        }
        self.rename_to
            .clone()
            .or_else(|| self.git_paths.as_ref().map(|(_, b)| b.clone()))
            .unwrap_or_else(|| "the file".to_string())
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
        let mut other_name = None;
        if !self.git
            && let (Some(o), Some(n)) = (&old, &new)
            && o != n
        {
            // A plain diff between two differently named files changes one file: like patch(1),
            // take the name with the fewest components, then the shortest base name, then the
            // shortest name (`x.orig` → `x`).
            let key = |p: &str| {
                let base = p.rsplit('/').next().unwrap_or(p).len();
                (p.split('/').count(), base, p.len())
            };
            let (keep, drop) = if key(n) < key(o) { (n, o) } else { (o, n) };
            self.patch.notes.push(format!(
                "is named both `{drop}` and `{keep}` in the patch; `{keep}` was patched"
            ));
            other_name = Some(drop.clone());
            let keep = keep.clone();
            old = Some(keep.clone());
            new = Some(keep);
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
        patch.other_name = other_name;
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
            if !s.git {
                // `diff -N` marks a missing side with the epoch as its time stamp.
                s.new_file |= is_epoch(&t[4..]);
                s.deleted_file |= is_epoch(&lines[i + 1].text[4..]);
            }
            set_file_lines(s, old, new);
            i += 2;
            continue;
        }
        if t.starts_with("@@@") || t.starts_with("diff --cc ") || t.starts_with("diff --combined ")
        {
            return Err(ParseError::Unsupported(format!(
                "Line {} of the patch (`{}`) belongs to a combined diff of a merge, which patch_apply does not apply; send an ordinary diff against one parent (`git diff PARENT -- FILE`).",
                line.no,
                show(t)
            )));
        }
        if t.starts_with("@@") {
            let header_at = i;
            let s = cur.get_or_insert_with(|| Section::new(false, line.no));
            let mut hunk = parse_hunk_header(t, line.no)?;
            let hunk_index = s.patch.hunks.len() + 1;
            i = read_body(lines, i + 1, &mut hunk)?;
            let label = s.label();
            check_after_body(lines, i, &hunk, &label, hunk_index)?;
            check_counts(&hunk, &label, hunk_index, lines[header_at].no)?;
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

fn read_git_headers(
    lines: &[Line<'_>],
    mut i: usize,
    s: &mut Section,
) -> Result<usize, ParseError> {
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
            // Informational only.
        } else {
            check_binary(t)?;
            return Ok(i);
        }
        i += 1;
    }
    Ok(i)
}

/// Whether a `---`/`+++` line carries the epoch as its time stamp (`diff -N` for a missing file).
fn is_epoch(raw: &str) -> bool {
    let Some((_, stamp)) = raw.split_once('\t') else {
        return false;
    };
    let stamp = stamp.trim();
    stamp.starts_with("1970-01-01 00:00:00")
        || stamp.starts_with("1969-12-31 ")
        || stamp.ends_with(" 1970") && stamp.contains("Jan  1 00:00:00")
}

fn set_file_lines(s: &mut Section, old: Option<String>, new: Option<String>) {
    s.has_file_lines = true;
    // `diff -ruN before after`: the names differ only in their first component.
    let (old, new) = match (old, new) {
        (Some(o), Some(n))
            if !s.git
                && o != n
                && !o.starts_with('/')
                && !n.starts_with('/')
                && o.split_once('/').is_some_and(|(_, ro)| {
                    n.split_once('/')
                        .is_some_and(|(_, rn)| ro == rn && !ro.is_empty())
                }) =>
        {
            let strip = |p: &str| p.split_once('/').map(|(_, r)| r.to_string());
            (strip(&o), strip(&n))
        }
        other => other,
    };
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
    let old = parts
        .next()
        .and_then(|p| p.strip_prefix('-'))
        .ok_or_else(bad)?;
    let new = parts
        .next()
        .and_then(|p| p.strip_prefix('+'))
        .ok_or_else(bad)?;
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
    let (new_start, new_count) = range(new).ok_or_else(bad)?;
    let mut h = Hunk::new(format!("@@ {ranges} @@"));
    h.old_start = Some(old_start);
    h.new_start = Some(new_start);
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

/// Refuses a hunk whose header counts (`@@ -a,b +c,d @@`) are not what its body holds: `b`
/// context and removed lines, `d` context and added lines. Such a hunk was cut off, or edited
/// by hand after its header was written, and applying it would guess which part is meant.
fn check_counts(hunk: &Hunk, label: &str, index: usize, line_no: usize) -> Result<(), ParseError> {
    let Some((dold, dnew)) = hunk.old_count.zip(hunk.new_count) else {
        return Ok(());
    };
    let (o, n) = hunk.counts();
    if (o, n) == (dold, dnew) {
        return Ok(());
    }
    let lines = |k: usize| if k == 1 { "line" } else { "lines" };
    let fixed = format!(
        "@@ -{},{o} +{},{n} @@",
        hunk.old_start.unwrap_or(0),
        hunk.new_start.unwrap_or(0)
    );
    Err(ParseError::Malformed(format!(
        "Hunk {index} (`{}`, line {line_no} of the patch) of {label} declares {dold} old and {dnew} new {}, but its body has {o} old {} (context and `-`) and {n} new {} (context and `+`), so the patch may be cut off or edited after it was made. Nothing was changed; check the hunk's lines, then correct its header (for this body, `{fixed}`) and send the patch again.",
        hunk.header,
        lines(dnew),
        lines(o),
        lines(n),
    )))
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
        .position(|l| l.text.trim_end() == "*** Begin Patch")
        .unwrap_or(0);
    let Some(end) = lines[begin + 1..]
        .iter()
        .position(|l| l.text.trim_end() == "*** End Patch")
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
            if let Some(m) = body
                .get(i)
                .and_then(|l| l.text.strip_prefix("*** Move to:"))
            {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Patch {
        parse(text).unwrap_or_else(|e| panic!("{e}\n--- patch ---\n{text}"))
    }

    fn err(text: &str) -> ParseError {
        match parse(text) {
            Ok(p) => panic!("expected an error, got {p:#?}"),
            Err(e) => e,
        }
    }

    fn body(h: &Hunk) -> Vec<String> {
        h.lines
            .iter()
            .map(|l| {
                let p = match l.kind {
                    Kind::Context => ' ',
                    Kind::Remove => '-',
                    Kind::Add => '+',
                };
                format!("{p}{}", l.text)
            })
            .collect()
    }

    /// `git diff --cached -M` output, as git 2.47 writes it.
    const GIT: &str = "diff --git a/del.txt b/del.txt
deleted file mode 100644
index 2fa992c..0000000
--- a/del.txt
+++ /dev/null
@@ -1 +0,0 @@
-keep
diff --git a/empty b/empty
new file mode 100644
index 0000000..e69de29
diff --git a/r.txt b/r2.txt
similarity index 85%
rename from r.txt
rename to r2.txt
index b566061..8767b06 100644
--- a/r.txt
+++ b/r2.txt
@@ -3,4 +3,4 @@ two
 three
 four
 five
-six
+SIX
diff --git \"a/sp ace\\\\t.txt\" \"b/sp ace\\\\t.txt\"
new file mode 100644
index 0000000..45b983b
--- /dev/null
+++ \"b/sp ace\\\\t.txt\"\t
@@ -0,0 +1 @@
+hi
diff --git a/x.txt b/x.txt
index de98044..36ef1ba 100644
--- a/x.txt
+++ b/x.txt
@@ -1,3 +1,3 @@
 a
-b
-c
+B
+c
\\ No newline at end of file
diff --git a/pure b/renamed
similarity index 100%
rename from pure
rename to renamed
";

    #[test]
    fn git_multi_file() {
        let p = ok(GIT);
        assert_eq!(p.format, Format::Unified);
        let got: Vec<(Op, Option<&str>, Option<&str>, usize)> = p
            .files
            .iter()
            .map(|f| {
                (
                    f.op,
                    f.old_path.as_deref(),
                    f.new_path.as_deref(),
                    f.hunks.len(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (Op::Delete, Some("del.txt"), None, 1),
                (Op::Add, None, Some("empty"), 0),
                (Op::Rename, Some("r.txt"), Some("r2.txt"), 1),
                (Op::Add, None, Some("sp ace\\t.txt"), 1),
                (Op::Modify, Some("x.txt"), Some("x.txt"), 1),
                (Op::Rename, Some("pure"), Some("renamed"), 0),
            ]
        );
        let r = &p.files[2].hunks[0];
        assert_eq!(r.header, "@@ -3,4 +3,4 @@");
        assert_eq!(
            (r.old_start, r.old_count, r.new_count),
            (Some(3), Some(4), Some(4))
        );
        let x = &p.files[4].hunks[0];
        assert_eq!(body(x), [" a", "-b", "-c", "+B", "+c"]);
        assert!(x.new_no_newline && !x.old_no_newline);
    }

    #[test]
    fn plain_diff_u_with_timestamps_and_crlf() {
        let p = ok(
            "--- c1\t2026-11-30 12:12:15.992620416 +0000\n+++ c1\t2026-11-30 12:12:15.992620416 +0000\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+B\r\n",
        );
        let f = &p.files[0];
        assert_eq!((f.op, f.old_path.as_deref()), (Op::Modify, Some("c1")));
        assert_eq!(body(&f.hunks[0]), [" a", "-b", "+B"]);
        assert!(f.hunks[0].lines.iter().all(|l| l.cr));
    }

    #[test]
    fn a_b_prefixes_are_stripped_only_in_git_style() {
        let p = ok("--- a/src/x.rs\n+++ b/src/x.rs\n@@ -1 +1 @@\n-a\n+b\n");
        assert_eq!(p.files[0].new_path.as_deref(), Some("src/x.rs"));
        let p = ok("--- a/x.rs\n+++ a/x.rs\n@@ -1 +1 @@\n-a\n+b\n");
        assert_eq!(p.files[0].new_path.as_deref(), Some("a/x.rs"));
        let p = ok("--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+n\n");
        assert_eq!(
            (p.files[0].op, p.files[0].new_path.as_deref()),
            (Op::Add, Some("new.txt"))
        );
        // A hostile name keeps its `..` for the workspace to refuse, even when unused.
        let p = ok("--- a/ok.txt\n+++ b/../../etc/x\n@@ -1 +1 @@\n-a\n+b\n");
        assert_eq!(p.files[0].other_name.as_deref(), Some("../../etc/x"));
        let p = ok(
            "diff --git a/ok.txt b/../../etc/x\n--- a/ok.txt\n+++ b/../../etc/x\n@@ -1 +1 @@\n-a\n+b\n",
        );
        assert_eq!(p.files[0].new_path.as_deref(), Some("../../etc/x"));
    }

    #[test]
    fn plain_diffs_between_differently_named_files() {
        // `diff -ruN before after`: the first component goes; the epoch marks created and
        // deleted files.
        let p = ok(
            "diff -ruN before/x after/x\n--- before/x\t2026-11-30 12:00:00.000000000 +0000\n+++ after/x\t2026-11-30 12:00:01.000000000 +0000\n@@ -1 +1 @@\n-a\n+b\n\
diff -ruN before/n after/n\n--- before/n\t1970-01-01 00:00:00.000000000 +0000\n+++ after/n\t2026-11-30 12:00:01.000000000 +0000\n@@ -0,0 +1 @@\n+new\n\
diff -ruN before/d after/d\n--- before/d\t2026-11-30 12:00:00.000000000 +0000\n+++ after/d\t1970-01-01 00:00:00.000000000 +0000\n@@ -1 +0,0 @@\n-gone\n",
        );
        let got: Vec<(Op, Option<&str>, Option<&str>)> = p
            .files
            .iter()
            .map(|f| (f.op, f.old_path.as_deref(), f.new_path.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (Op::Modify, Some("x"), Some("x")),
                (Op::Add, None, Some("n")),
                (Op::Delete, Some("d"), None)
            ]
        );
        // `x.orig` against `x`: the shorter name is the file; the other is noted and checked.
        let p = ok("--- src/x.rs.orig\n+++ src/x.rs\n@@ -1 +1 @@\n-a\n+b\n");
        let f = &p.files[0];
        assert_eq!(
            (f.op, f.new_path.as_deref(), f.other_name.as_deref()),
            (Op::Modify, Some("src/x.rs"), Some("src/x.rs.orig"))
        );
        // An absolute name is never shortened into a relative one.
        let p = ok("--- /etc/passwd\n+++ b/etc/passwd\n@@ -1 +1 @@\n-a\n+b\n");
        let f = &p.files[0];
        assert_eq!(
            (f.new_path.as_deref(), f.other_name.as_deref()),
            (Some("/etc/passwd"), Some("b/etc/passwd"))
        );
    }

    #[test]
    fn refusals() {
        let link = "diff --git a/l b/l\nnew file mode 120000\nindex 0000000..a2cf6f2\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n";
        assert!(matches!(err(link), ParseError::Refused(m) if m.contains("symbolic link")));
        let changed_link =
            "diff --git a/l b/l\nindex 1..2 120000\n--- a/l\n+++ b/l\n@@ -1 +1 @@\n-a\n+/etc\n";
        assert!(matches!(err(changed_link), ParseError::Refused(_)));
        let sub = "diff --git a/m b/m\nnew file mode 160000\nindex 0000000..a2cf6f2\n--- /dev/null\n+++ b/m\n@@ -0,0 +1 @@\n+Subproject commit a2cf6f2\n";
        assert!(matches!(err(sub), ParseError::Refused(m) if m.contains("submodule")));
        let bin = "diff --git a/i.png b/i.png\nnew file mode 100644\nindex 0000000..e69de29\nGIT binary patch\nliteral 3\nKcmZ?wr~m)}0s#O4\n";
        assert!(matches!(err(bin), ParseError::Unsupported(_)));
        let bin2 = "diff --git a/i.png b/i.png\nindex 1..2 100644\nBinary files a/i.png and b/i.png differ\n";
        assert!(matches!(err(bin2), ParseError::Unsupported(_)));
    }

    #[test]
    fn mode_changes_become_notes() {
        let p = ok(
            "diff --git a/s.sh b/s.sh\nold mode 100644\nnew mode 100755\n--- a/s.sh\n+++ b/s.sh\n@@ -1 +1 @@\n-a\n+b\n",
        );
        assert!(p.files[0].notes[0].contains("mode change"));
    }

    #[test]
    fn headerless_hunks_and_numberless_headers() {
        let p = ok("@@ -1,2 +1,2 @@\n a\n-b\n+c\n");
        assert_eq!(
            (p.files[0].old_path.as_ref(), p.files[0].op),
            (None, Op::Modify)
        );
        let p = ok("@@\n a\n-b\n+c\n@@ fn main() {\n-x\n+y\n");
        let h = &p.files[0].hunks;
        assert_eq!(
            (h[0].old_start, h[1].anchors.as_slice()),
            (None, &["fn main() {".to_string()][..])
        );
    }

    #[test]
    fn counts_that_disagree_with_the_body_are_refused() {
        // (patch, what the message must say); each beside a twin whose counts agree.
        let cases = [
            (
                "--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n a\n-b\n+c\n d\n",
                "declares 1 old and 1 new line, but its body has 3 old lines",
            ),
            (
                "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-b\n+c\n",
                "`@@ -1,1 +1,1 @@`",
            ),
            (
                "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n@@ -5,2 +5,3 @@\n e\n+f\n",
                "Hunk 2 (`@@ -5,2 +5,3 @@`, line 6 of the patch) of x",
            ),
            (
                "diff --git a/y b/y\n--- a/y\n+++ b/y\n@@ -1,2 +1,2 @@\n-a\n+b\n",
                "of y declares 2 old and 2 new lines, but its body has 1 old line",
            ),
        ];
        for (text, want) in cases {
            let e = err(text);
            assert!(
                matches!(&e, ParseError::Malformed(m) if m.contains(want) && m.contains("Nothing was changed")),
                "{text}: {e}"
            );
        }
        let p = ok("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n");
        assert_eq!(body(&p.files[0].hunks[0]), [" a", "-b", "+c", " d"]);
        ok("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n@@ -5,2 +5,3 @@\n e\n+f\n g\n");
        // Without counts there is nothing to disagree with.
        ok("--- a/x\n+++ b/x\n@@\n-b\n+c\n");
    }

    #[test]
    fn blank_lines_are_context_inside_and_dropped_at_the_end() {
        let p = ok("--- a/x\n+++ b/x\n@@ -1,4 +1,4 @@\n a\n\n-b\n+c\n d\n\n\n");
        assert_eq!(body(&p.files[0].hunks[0]), [" a", " ", "-b", "+c", " d"]);
        // A trailing blank line the counts need is kept.
        let p = ok("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-b\n+c\n d\n\n");
        assert_eq!(body(&p.files[0].hunks[0]), ["-b", "+c", " d", " "]);
    }

    #[test]
    fn removed_lines_that_look_like_headers() {
        // `--- x` and `+++ y` inside a hunk whose counts are not yet met are body lines.
        let p = ok("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n--- x\n+++ y\n");
        assert_eq!(body(&p.files[0].hunks[0]), [" a", "--- x", "+++ y"]);
    }

    #[test]
    fn plain_multi_file_and_format_patch_trailer() {
        let text = "From 1234 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n---\n a | 2 +-\n\ndiff --git a/a b/a\nindex 1..2 100644\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n-- \n2.47.3\n\n";
        let p = ok(text);
        assert_eq!(body(&p.files[0].hunks[0]), ["-x", "+y"]);
        let two = "--- a/one\n+++ b/one\n@@ -1 +1 @@\n-1\n+one\n--- a/two\n+++ b/two\n@@ -1 +1 @@\n-2\n+two\n";
        let p = ok(two);
        assert_eq!(p.files.len(), 2);
        assert_eq!(p.files[1].new_path.as_deref(), Some("two"));
    }

    #[test]
    fn malformed_bodies_are_refused() {
        // A context line without its leading space between two hunks.
        let e = err("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\nd\n@@ -9 +9 @@\n-x\n+y\n");
        assert!(
            matches!(&e, ParseError::Malformed(m) if m.contains("Line 7") && m.contains("`d`")),
            "{e}"
        );
        // The same inside a single hunk whose counts say more was coming.
        let e = err("--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n a\nb\n-c\n+C\n");
        assert!(
            matches!(&e, ParseError::Malformed(m) if m.contains("Line 5")),
            "{e}"
        );
        // Bad header, empty hunk, nothing at all.
        assert!(
            matches!(err("--- a/f\n+++ b/f\n@@ -x +1 @@\n-a\n"), ParseError::Malformed(m) if m.contains("not a valid hunk header"))
        );
        assert!(
            matches!(err("--- a/f\n+++ b/f\n@@ -1 +1 @@\n"), ParseError::Malformed(m) if m.contains("has no lines"))
        );
        assert!(
            matches!(err("just some text\n"), ParseError::Malformed(m) if m.contains("no file changes"))
        );
        // Trailing commentary after a hunk whose counts agree is fine.
        ok("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n```\nThat is the fix.\n");
    }

    #[test]
    fn new_file_with_context_is_refused() {
        let e = err("--- /dev/null\n+++ b/n\n@@ -1,1 +1,2 @@\n a\n+b\n");
        assert!(matches!(e, ParseError::Malformed(m) if m.contains("may only add lines")));
    }

    #[test]
    fn git_header_path_forms() {
        assert_eq!(
            git_header_paths("a/with space.txt b/with space.txt"),
            Some(("with space.txt".into(), "with space.txt".into()))
        );
        assert_eq!(git_header_paths("a/x b/y"), Some(("x".into(), "y".into())));
        assert_eq!(
            git_header_paths("\"a/t\\303\\251st\" \"b/t\\303\\251st\""),
            Some(("tést".into(), "tést".into()))
        );
        assert_eq!(
            unquote("\"a\\\"b\\\\c\\nd\" rest"),
            Some(("a\"b\\c\nd".into(), " rest"))
        );
        assert_eq!(unquote("\"unterminated"), None);
    }

    const ENVELOPE: &str = "*** Begin Patch
*** Add File: docs/new.md
+# Title
+
+body
*** Delete File: old.txt
*** Update File: src/app.py
*** Move to: src/main.py
@@ class App:
@@     def run(self):
         x = 1
-        return x
+        return x + 1
@@
 tail
-end
+END
*** End of File
*** Update File: README
 first
-second
+SECOND

*** End Patch
";

    #[test]
    fn envelope() {
        let p = ok(ENVELOPE);
        assert_eq!(p.format, Format::Envelope);
        let f = &p.files;
        assert_eq!(f.len(), 4);
        assert_eq!(
            (f[0].op, f[0].new_path.as_deref()),
            (Op::Add, Some("docs/new.md"))
        );
        assert_eq!(body(&f[0].hunks[0]), ["+# Title", "+", "+body"]);
        assert_eq!(
            (f[1].op, f[1].old_path.as_deref()),
            (Op::Delete, Some("old.txt"))
        );
        assert_eq!(
            (f[2].op, f[2].old_path.as_deref(), f[2].new_path.as_deref()),
            (Op::Rename, Some("src/app.py"), Some("src/main.py"))
        );
        let h = &f[2].hunks;
        assert_eq!(h[0].anchors, ["class App:", "def run(self):"]);
        assert_eq!(
            body(&h[0]),
            [
                "         x = 1",
                "-        return x",
                "+        return x + 1"
            ]
        );
        assert!(h[1].end_of_file && h[1].anchors.is_empty());
        // A first hunk without `@@`, and the blank line before `*** End Patch` dropped.
        assert_eq!(body(&f[3].hunks[0]), [" first", "-second", "+SECOND"]);
    }

    #[test]
    fn envelope_errors() {
        let cut = "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n";
        assert!(matches!(err(cut), ParseError::Malformed(m) if m.contains("cut off")));
        let bad = "*** Begin Patch\n*** Update File: a\n@@\n-x\nno prefix\n*** End Patch\n";
        assert!(
            matches!(err(bad), ParseError::Malformed(m) if m.contains("Line 5") && m.contains("leading space"))
        );
        let add = "*** Begin Patch\n*** Add File: a\nplain\n*** End Patch\n";
        assert!(matches!(err(add), ParseError::Malformed(m) if m.contains("must start with `+`")));
        let empty = "*** Begin Patch\n*** Update File: a\n*** End Patch\n";
        assert!(matches!(err(empty), ParseError::Malformed(m) if m.contains("has no changes")));
        let op = "*** Begin Patch\n*** Frobnicate File: a\n*** End Patch\n";
        assert!(matches!(err(op), ParseError::Malformed(m) if m.contains("not a file operation")));
        let eof = "*** Begin Patch\n*** Update File: a\n*** End of File\n*** End Patch\n";
        assert!(matches!(err(eof), ParseError::Malformed(_)));
    }

    #[test]
    fn crlf_from_transport_is_not_a_file_property() {
        let p = ok("--- /dev/null\r\n+++ b/n\r\n@@ -0,0 +1,2 @@\r\n+a\r\n+b");
        assert!(p.files[0].hunks[0].lines.iter().all(|l| !l.cr));
        // A git diff of a CRLF file: CRs on the body lines only.
        let p = ok("--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+a\r\n+b\r\n");
        assert!(p.files[0].hunks[0].lines.iter().all(|l| l.cr));
    }

    #[test]
    fn combined_diffs_are_refused() {
        let e = err(
            "diff --cc f\nindex 1,2..3\n--- a/f\n+++ b/f\n@@@ -1,1 -1,1 +1,1 @@@\n- a\n -b\n++c\n",
        );
        assert!(matches!(e, ParseError::Unsupported(m) if m.contains("combined diff")));
    }

    #[test]
    fn a_unified_diff_of_an_envelope_is_still_a_unified_diff() {
        let p = ok(
            "--- a/doc.md\n+++ b/doc.md\n@@ -1,3 +1,3 @@\n *** Begin Patch\n-*** Add File: x\n+*** Add File: y\n *** End Patch\n",
        );
        assert_eq!(p.format, Format::Unified);
        assert_eq!(body(&p.files[0].hunks[0])[0], " *** Begin Patch");
    }

    #[test]
    fn envelope_with_surrounding_noise() {
        let p =
            ok("apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF\n");
        assert_eq!(p.files.len(), 1);
    }
}
