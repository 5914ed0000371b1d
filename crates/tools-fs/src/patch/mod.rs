//! `patch_apply`: unified diffs and `*** Begin Patch` envelopes, all files or none.
//!
//! The call runs in three steps. [`plan`] parses the patch and resolves every path through the
//! workspace (it also feeds [`Tool::access`], so hostile paths are refused before anything runs).
//! The in-memory step reads each file once and applies every hunk of every file to a copy; any
//! failure stops there with nothing written. Only then are the files written (atomically, one by
//! one) and deleted; if a write fails midway, the files already changed are restored from the
//! originals still in memory and the error says exactly what happened.

mod apply;
mod parse;

use std::collections::HashMap;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::workspace::{DirEntry, FileKind};
use tool_core::{
    Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, Workspace, WsPath, blocking,
};

use self::apply::{Applied, apply_hunks, new_file_content, verify_delete};
use self::parse::{FilePatch, Op, ParseError};

/// Arguments of `patch_apply`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchApplyArgs {
    /// The patch: a unified diff (`git diff` or `diff -u` output; several files, new, deleted and
    /// renamed files allowed) or a `*** Begin Patch` … `*** End Patch` envelope.
    pub patch: String,
    /// The file to patch when the patch has no `---`/`+++` headers; with a multi-file patch, only
    /// this file's part is applied.
    pub path: Option<String>,
}

/// `patch_apply`: applies a patch to one or more files, all or nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct PatchApply;

#[async_trait]
impl Tool for PatchApply {
    const NAME: &'static str = "patch_apply";
    type Args = PatchApplyArgs;

    fn description(&self) -> String {
        "Apply a patch to one or more files, all or nothing. Accepts a unified diff (`git diff` or \
         `diff -u` output: several files, new, deleted and renamed files, `\\ No newline at end of \
         file`) or the `*** Begin Patch` envelope (`*** Add File:`, `*** Update File:` with \
         optional `*** Move to:`, `*** Delete File:`, hunks starting with `@@` and an optional \
         anchor line, `*** End Patch`). A hunk is found near its stated line even if the file has \
         shifted, and trailing-whitespace differences are tolerated, but every context line must \
         match; a failed hunk names the file, the hunk and the first line that differs, and \
         nothing is changed. A hunk header's line counts (`@@ -a,b +c,d @@`) must be those of \
         its body (`@@` alone gives none); file names are relative to the workspace, with `/` \
         between directories. Pass `path` for hunks without file headers, or to apply only that \
         file's part of a larger patch. Returns one line per file: `M path (+added -removed)`, \
         `A path`, `D path`, `R old → new`."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        let plan = plan(&ctx.workspace, args)?;
        let mut out: Vec<Access> = Vec::new();
        let mut add = |a: Access| {
            if !out.contains(&a) {
                out.push(a);
            }
        };
        for ch in &plan.changes {
            match (ch.op, &ch.src, &ch.dst) {
                (Op::Add, _, Some(dst)) => add(Access::Write(dst.clone())),
                (Op::Delete, Some(src), _) => {
                    add(Access::Read(src.clone()));
                    add(Access::Delete {
                        path: src.clone(),
                        recursive: false,
                    });
                }
                (Op::Modify, Some(src), _) => {
                    add(Access::Read(src.clone()));
                    add(Access::Write(src.clone()));
                }
                (Op::Rename, Some(src), Some(dst)) => {
                    add(Access::Read(src.clone()));
                    add(Access::Delete {
                        path: src.clone(),
                        recursive: false,
                    });
                    add(Access::Write(dst.clone()));
                }
                (Op::Copy, Some(src), Some(dst)) => {
                    add(Access::Read(src.clone()));
                    add(Access::Write(dst.clone()));
                }
                _ => return Err(ToolError::internal("a patch change without its paths")),
            }
        }
        Ok(out)
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let ws = ctx.workspace.clone();
        let max_read = ctx.limits.max_file_bytes;
        let max_write = ctx.limits.max_write_bytes;
        let cancel = ctx.cancel.clone();
        blocking(ctx, move || {
            let plan = plan(&ws, &args)?;
            let mut staged = stage(&ws, &plan, max_read)?;
            let ops = staged.operations();
            for op in &ops {
                if let Some(text) = &op.new
                    && text.len() > max_write
                {
                    return Err(ToolError::Failed(format!(
                        "The patched {} would be {} bytes, more than the {max_write}-byte write limit. Nothing was changed; split the change or write the file in parts.",
                        op.path,
                        text.len()
                    )));
                }
            }
            refuse_links(&ws, &ops)?;
            // The last point where stopping leaves everything as it was.
            if cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            commit(&ws, &ops)?;
            Ok(staged.output(ops.is_empty()))
        })
        .await
    }
}

/// One file change with its paths resolved.
#[derive(Debug)]
struct Change {
    op: Op,
    src: Option<WsPath>,
    dst: Option<WsPath>,
    file: FilePatch,
}

#[derive(Debug)]
struct Plan {
    changes: Vec<Change>,
    notes: Vec<String>,
}

fn parse_error(e: ParseError) -> ToolError {
    match e {
        ParseError::Refused(m) => ToolError::Denied(m),
        ParseError::Malformed(m) | ParseError::Unsupported(m) => ToolError::invalid("/patch", m),
    }
}

/// Refuses a file name from the patch text that would become a strange name on Unix rather
/// than the file meant: a backslash (a Windows separator: `src\main.rs` would be one file
/// named so), a drive letter (`C:\x`, `C:x`), or a NUL or other control character.
fn check_patch_path(name: &str) -> Result<(), ToolError> {
    let shown = name.escape_debug().to_string();
    let why = if let Some(c) = name.chars().find(|c| c.is_control()) {
        format!("contains the control character {:?}", c)
    } else if name.as_bytes().get(1) == Some(&b':') && name.as_bytes()[0].is_ascii_alphabetic() {
        format!(
            "starts with the drive letter `{}`, so it is a Windows path",
            &name[..2]
        )
    } else if name.contains('\\') {
        "contains a backslash, which is not a directory separator here".to_string()
    } else {
        return Ok(());
    };
    Err(ToolError::invalid(
        "/patch",
        format!(
            "the patch names the file `{shown}`, which {why}; nothing was changed. Name files relative to the workspace root with `/` between directories, such as `src/main.rs`, and send the patch again"
        ),
    ))
}

/// Parses the patch, applies `path`, and resolves every path through the workspace.
fn plan(ws: &Workspace, args: &PatchApplyArgs) -> Result<Plan, ToolError> {
    let patch = parse::parse(&args.patch).map_err(parse_error)?;
    let mut files = patch.files;
    for f in &files {
        for name in [&f.old_path, &f.new_path, &f.other_name]
            .into_iter()
            .flatten()
        {
            check_patch_path(name)?;
        }
    }
    let mut notes = Vec::new();
    let headerless = |f: &FilePatch| f.old_path.is_none() && f.new_path.is_none();

    if let Some(p) = args.path.as_deref() {
        let target = ws.resolve(p)?;
        for f in files.iter_mut().filter(|f| headerless(f)) {
            f.old_path = Some(p.to_string());
            f.new_path = Some(p.to_string());
        }
        let same = |name: &Option<String>| {
            name.as_deref()
                .is_some_and(|n| ws.resolve(n).is_ok_and(|r| r == target))
        };
        if files.len() == 1 && matches!(files[0].op, Op::Add | Op::Delete | Op::Modify) {
            // One file: `path` says which file it is, whatever the headers call it.
            let f = &mut files[0];
            if let Some(named) = f.new_path.clone().or_else(|| f.old_path.clone())
                && !same(&Some(named.clone()))
            {
                notes.push(format!(
                    "the patch names `{named}`; it was applied to {target}, as `path` asks"
                ));
            }
            match f.op {
                Op::Add => f.new_path = Some(p.to_string()),
                Op::Delete => f.old_path = Some(p.to_string()),
                _ => {
                    f.old_path = Some(p.to_string());
                    f.new_path = Some(p.to_string());
                }
            }
        } else {
            let names: Vec<String> = files.iter().map(|f| f.label().to_string()).collect();
            files.retain(|f| same(&f.old_path) || same(&f.new_path));
            if files.is_empty() {
                return Err(ToolError::invalid(
                    "/path",
                    format!(
                        "the patch does not change `{p}`; it changes {}. Omit `path` to apply the whole patch, or pass one of those names",
                        names
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
    } else if files.iter().any(headerless) {
        return Err(ToolError::invalid(
            "/path",
            "the patch has hunks without file headers (`--- a/FILE` and `+++ b/FILE`), so it does not say which file to change; pass `path`, or add the headers",
        ));
    }

    let mut changes = Vec::with_capacity(files.len());
    for file in files {
        let resolve = |p: &Option<String>| -> Result<Option<WsPath>, ToolError> {
            p.as_deref().map(|p| ws.resolve(p)).transpose()
        };
        let src = resolve(&file.old_path)?;
        let dst = resolve(&file.new_path)?;
        resolve(&file.other_name)?;
        for p in src.iter().chain(dst.iter()) {
            if p.is_root() {
                return Err(ToolError::invalid(
                    "/patch",
                    format!(
                        "the patch names the workspace root (`{}`) as a file; name a file inside it",
                        file.label()
                    ),
                ));
            }
        }
        let op = match file.op {
            Op::Rename | Op::Copy if src == dst => Op::Modify,
            op => op,
        };
        let (src, dst) = match op {
            Op::Modify => (src.clone(), src),
            _ => (src, dst),
        };
        changes.push(Change { op, src, dst, file });
    }
    Ok(Plan { changes, notes })
}

/// A file as it was and as the patch leaves it (`None`: absent).
#[derive(Debug)]
struct Slot {
    original: Option<String>,
    current: Option<String>,
}

/// One line of the result.
#[derive(Debug)]
struct Summary {
    status: &'static str,
    path: String,
    from: Option<String>,
    added: usize,
    removed: usize,
}

impl Summary {
    fn line(&self) -> String {
        let counts = if self.added + self.removed > 0 {
            format!(" (+{} -{})", self.added, self.removed)
        } else {
            String::new()
        };
        match self.status {
            "added" => format!("A {}", self.path),
            "deleted" => format!("D {}", self.path),
            "renamed" => format!(
                "R {} → {}{counts}",
                self.from.as_deref().unwrap_or(""),
                self.path
            ),
            "copied" => format!(
                "C {} → {}{counts}",
                self.from.as_deref().unwrap_or(""),
                self.path
            ),
            _ => format!("M {}{counts}", self.path),
        }
    }
}

/// The patched state of every file the patch touches, in memory.
#[derive(Debug)]
struct Staged {
    order: Vec<WsPath>,
    slots: HashMap<WsPath, Slot>,
    summary: Vec<Summary>,
    notes: Vec<String>,
}

/// A write or delete to carry out.
#[derive(Debug)]
struct Operation {
    path: WsPath,
    original: Option<String>,
    new: Option<String>,
}

impl Staged {
    fn slot(&mut self, ws: &Workspace, path: &WsPath, max: u64) -> Result<&mut Slot, ToolError> {
        if !self.slots.contains_key(path) {
            let original = if ws.exists(path)? {
                if ws.metadata(path)?.kind == FileKind::Dir {
                    return Err(ToolError::Failed(format!(
                        "{path} is a directory, and a patch can only change files. Nothing was changed; check the names in the patch."
                    )));
                }
                let bytes = ws.read_to_end(path, max)?;
                Some(String::from_utf8(bytes).map_err(|_| {
                    ToolError::Failed(format!(
                        "{path} is not UTF-8 text, so a patch cannot change it. Nothing was changed; rewrite it with file_write instead."
                    ))
                })?)
            } else {
                None
            };
            self.order.push(path.clone());
            self.slots.insert(
                path.clone(),
                Slot {
                    current: original.clone(),
                    original,
                },
            );
        }
        Ok(self.slots.get_mut(path).expect("inserted above"))
    }

    fn record(&mut self, s: Summary) {
        match self
            .summary
            .iter_mut()
            .find(|e| e.status == s.status && e.path == s.path && e.from == s.from)
        {
            Some(e) => {
                e.added += s.added;
                e.removed += s.removed;
            }
            None => self.summary.push(s),
        }
    }

    /// Writes first, in the order the patch touched the files, then deletes: a failure midway
    /// never leaves a renamed file only in its deleted place.
    fn operations(&mut self) -> Vec<Operation> {
        let mut writes = Vec::new();
        let mut deletes = Vec::new();
        for path in &self.order {
            let slot = &self.slots[path];
            if slot.original == slot.current {
                continue;
            }
            let op = Operation {
                path: path.clone(),
                original: slot.original.clone(),
                new: slot.current.clone(),
            };
            if op.new.is_some() {
                writes.push(op);
            } else {
                deletes.push(op);
            }
        }
        writes.extend(deletes);
        writes
    }

    fn output(&self, nothing: bool) -> ToolOutput {
        let mut text = if nothing {
            "The patch applied, but no file's content changed.".to_string()
        } else {
            let n = self.summary.len();
            format!(
                "Applied the patch to {n} file{}:",
                if n == 1 { "" } else { "s" }
            )
        };
        for s in &self.summary {
            text.push('\n');
            text.push_str(&s.line());
        }
        if !self.notes.is_empty() {
            text.push_str("\nNotes:");
            for n in &self.notes {
                text.push_str("\n- ");
                text.push_str(n);
            }
        }
        let files: Vec<_> = self
            .summary
            .iter()
            .map(|s| {
                let mut v = json!({
                    "status": s.status,
                    "path": s.path,
                    "added": s.added,
                    "removed": s.removed,
                });
                if let Some(from) = &s.from {
                    v["from"] = json!(from);
                }
                v
            })
            .collect();
        ToolOutput::text(text).with_structured(json!({"files": files, "notes": self.notes}))
    }
}

fn failed(msg: String) -> ToolError {
    ToolError::Failed(msg)
}

/// Applies every change in memory.
fn stage(ws: &Workspace, plan: &Plan, max: u64) -> Result<Staged, ToolError> {
    let mut st = Staged {
        order: Vec::new(),
        slots: HashMap::new(),
        summary: Vec::new(),
        notes: plan.notes.clone(),
    };
    for ch in &plan.changes {
        let hunks = &ch.file.hunks;
        for note in &ch.file.notes {
            st.notes.push(format!("{} {note}", ch.file.label()));
        }
        match (ch.op, &ch.src, &ch.dst) {
            (Op::Add, _, Some(dst)) => {
                let slot = st.slot(ws, dst, max)?;
                if slot.current.is_some() {
                    return Err(failed(format!(
                        "The patch creates {dst}, but it already exists. Nothing was changed; change it with hunks against its current content, or delete it first."
                    )));
                }
                let (content, added) = new_file_content(hunks);
                slot.current = Some(content);
                st.record(Summary {
                    status: "added",
                    path: dst.to_string(),
                    from: None,
                    added,
                    removed: 0,
                });
            }
            (Op::Delete, Some(src), _) => {
                let label = src.to_string();
                let slot = st.slot(ws, src, max)?;
                let Some(current) = slot.current.take() else {
                    return Err(ToolError::NotFound(format!(
                        "The patch deletes {src}, but it does not exist. Nothing was changed; check the name with list_dir or find_files."
                    )));
                };
                if !hunks.is_empty() {
                    verify_delete(&label, &current, hunks).map_err(failed)?;
                }
                st.record(Summary {
                    status: "deleted",
                    path: label,
                    from: None,
                    added: 0,
                    removed: current.lines().count(),
                });
            }
            (Op::Modify, Some(src), _) => {
                let label = src.to_string();
                let slot = st.slot(ws, src, max)?;
                // `--- x` / `+++ x` / `@@ -0,0 +1,3 @@` for a missing file creates it.
                if slot.current.is_none()
                    && !hunks.is_empty()
                    && hunks
                        .iter()
                        .all(|h| h.is_pure_addition() && h.old_start.is_none_or(|s| s == 0))
                {
                    let (content, added) = new_file_content(hunks);
                    slot.current = Some(content);
                    st.record(Summary {
                        status: "added",
                        path: label,
                        from: None,
                        added,
                        removed: 0,
                    });
                    continue;
                }
                let Some(current) = slot.current.as_deref() else {
                    return Err(ToolError::NotFound(format!(
                        "The patch changes {src}, but it does not exist. Nothing was changed; check the name with list_dir, or create the file with `--- /dev/null` and `+++ b/{src}` (or `*** Add File: {src}`)."
                    )));
                };
                let applied = apply_hunks(&label, current, hunks).map_err(failed)?;
                slot.current = Some(applied.text);
                st.notes.extend(applied.notes);
                st.record(Summary {
                    status: "modified",
                    path: label,
                    from: None,
                    added: applied.added,
                    removed: applied.removed,
                });
            }
            (op @ (Op::Rename | Op::Copy), Some(src), Some(dst)) => {
                let verb = if op == Op::Rename {
                    "renames"
                } else {
                    "copies"
                };
                let label = src.to_string();
                let Some(current) = st.slot(ws, src, max)?.current.clone() else {
                    return Err(ToolError::NotFound(format!(
                        "The patch {verb} {src} to {dst}, but {src} does not exist. Nothing was changed; check the name with list_dir or find_files."
                    )));
                };
                let applied = if hunks.is_empty() {
                    Applied {
                        text: current,
                        added: 0,
                        removed: 0,
                        notes: Vec::new(),
                    }
                } else {
                    apply_hunks(&label, &current, hunks).map_err(failed)?
                };
                let target = st.slot(ws, dst, max)?;
                if target.current.is_some() {
                    return Err(failed(format!(
                        "The patch {verb} {src} to {dst}, but {dst} already exists. Nothing was changed; delete {dst} first or choose another name."
                    )));
                }
                target.current = Some(applied.text);
                if op == Op::Rename {
                    st.slot(ws, src, max)?.current = None;
                }
                st.notes.extend(applied.notes);
                st.record(Summary {
                    status: if op == Op::Rename {
                        "renamed"
                    } else {
                        "copied"
                    },
                    path: dst.to_string(),
                    from: Some(label),
                    added: applied.added,
                    removed: applied.removed,
                });
            }
            _ => return Err(ToolError::internal("a patch change without its paths")),
        }
    }
    Ok(st)
}

/// Refuses to replace or delete symbolic links, before anything is written (the backend would
/// refuse the write anyway, but by then other files could have been changed).
fn refuse_links(ws: &Workspace, ops: &[Operation]) -> Result<(), ToolError> {
    let mut listings: HashMap<WsPath, Vec<DirEntry>> = HashMap::new();
    for op in ops {
        let (Some(parent), Some(name)) = (op.path.parent(), op.path.file_name()) else {
            continue;
        };
        if !listings.contains_key(&parent) {
            // A parent that does not exist yet holds no links.
            let entries = match ws.read_dir(&parent) {
                Ok(entries) => entries,
                Err(ToolError::NotFound(_)) => Vec::new(),
                Err(e) => return Err(e),
            };
            listings.insert(parent.clone(), entries);
        }
        let is_link = listings[&parent]
            .iter()
            .any(|e| e.name == name && e.kind == FileKind::Symlink);
        if is_link {
            return Err(ToolError::Denied(format!(
                "{} is a symbolic link, and patch_apply does not write through or replace links. Nothing was changed; patch the file it points to instead.",
                op.path
            )));
        }
    }
    Ok(())
}

/// Carries out `ops`; on a failure, restores what was already done and says exactly what
/// happened.
fn commit(ws: &Workspace, ops: &[Operation]) -> Result<(), ToolError> {
    let carry = |path: &WsPath, content: &Option<String>| match content {
        Some(text) => ws.write_atomic(path, text.as_bytes()),
        None => ws.remove_file(path),
    };
    for (k, op) in ops.iter().enumerate() {
        let Err(err) = carry(&op.path, &op.new) else {
            continue;
        };
        let doing = if op.new.is_some() {
            "writing"
        } else {
            "deleting"
        };
        let mut msg = format!(
            "Applying the patch stopped while {doing} {}: {err}",
            op.path
        );
        let done = &ops[..k];
        if done.is_empty() {
            msg.push_str(" No file had been changed yet, so the workspace is as it was.");
            return Err(ToolError::Failed(msg));
        }
        let mut restored = Vec::new();
        let mut stuck = Vec::new();
        for d in done.iter().rev() {
            match carry(&d.path, &d.original) {
                Ok(()) => restored.push(d.path.to_string()),
                Err(e) => stuck.push(format!("{} ({e})", d.path)),
            }
        }
        let changed: Vec<String> = done.iter().map(|d| d.path.to_string()).collect();
        if stuck.is_empty() {
            msg.push_str(&format!(
                " Before that, {} had been changed; {} restored to the original content, so the workspace is as it was.",
                changed.join(", "),
                if changed.len() == 1 {
                    "it was"
                } else {
                    "they were"
                }
            ));
        } else {
            msg.push_str(&format!(
                " Before that, {} had been changed. Restored: {}. Could not be restored: {}; check these files with file_read before doing anything else.",
                changed.join(", "),
                if restored.is_empty() {
                    "none".to_string()
                } else {
                    restored.join(", ")
                },
                stuck.join("; ")
            ));
        }
        return Err(ToolError::Failed(msg));
    }
    Ok(())
}
