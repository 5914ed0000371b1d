use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

use crate::text::{squash_ws, unified_diff};

/// One replacement.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    /// The exact text to find (must not be empty).
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

/// Arguments of `file_edit`: either `old_string`/`new_string` or a list of `edits`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileEditArgs {
    /// The file, relative to the workspace root.
    pub path: String,
    /// The exact text to find; it must occur exactly once unless `replace_all` is true.
    pub old_string: Option<String>,
    /// The replacement text.
    pub new_string: Option<String>,
    /// Replace every occurrence of `old_string`.
    #[serde(default)]
    pub replace_all: bool,
    /// Several edits applied in order, all or nothing (instead of `old_string`/`new_string`).
    pub edits: Option<Vec<Edit>>,
}

impl FileEditArgs {
    fn edits(self) -> Result<Vec<Edit>, ToolError> {
        match (self.edits, self.old_string, self.new_string) {
            (Some(edits), None, None) => {
                if edits.is_empty() {
                    Err(ToolError::invalid(
                        "/edits",
                        "`edits` is empty; give at least one edit",
                    ))
                } else {
                    Ok(edits)
                }
            }
            (None, Some(old_string), Some(new_string)) => Ok(vec![Edit {
                old_string,
                new_string,
                replace_all: self.replace_all,
            }]),
            (Some(_), _, _) => Err(ToolError::invalid(
                "",
                "give either `edits` or `old_string` with `new_string`, not both",
            )),
            (None, None, _) => Err(ToolError::invalid(
                "/old_string",
                "`old_string` is missing; give the exact text to replace (or a list of `edits`)",
            )),
            (None, Some(_), None) => Err(ToolError::invalid(
                "/new_string",
                "`new_string` is missing; give the replacement text (an empty string deletes)",
            )),
        }
    }
}

/// `file_edit`: exact-match replacement with teaching errors.
#[derive(Debug, Clone, Copy, Default)]
pub struct FileEdit;

#[async_trait]
impl Tool for FileEdit {
    const NAME: &'static str = "file_edit";
    type Args = FileEditArgs;

    fn description(&self) -> String {
        "Replace exact text in a file. `old_string` must match exactly once (including \
         whitespace) unless `replace_all` is true; or pass `edits`, a list of replacements \
         applied in order, all or nothing. Returns a unified diff of the change. When the text \
         is not found, the error shows the closest lines and whether a whitespace-insensitive \
         match exists."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        let path = ctx.workspace.resolve(&args.path)?;
        Ok(vec![Access::Read(path.clone()), Access::Write(path)])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let path = ctx.workspace.resolve(&args.path)?;
        let edits = args.edits()?;
        let ws = ctx.workspace.clone();
        let max = ctx.limits.max_file_bytes;
        blocking(ctx, move || {
            let bytes = ws.read_to_end(&path, max)?;
            let original = String::from_utf8(bytes).map_err(|_| {
                ToolError::Failed(format!(
                    "{path} is not UTF-8 text, so it cannot be edited as text; rewrite it with file_write."
                ))
            })?;
            let shown = path.to_string();
            let updated = apply_edits(&shown, &original, &edits)?;
            ws.write_atomic(&path, updated.as_bytes())?;
            let diff = unified_diff(&shown, &original, &updated);
            Ok(ToolOutput::text(format!(
                "Edited {path} ({} edit{}).\n{diff}",
                edits.len(),
                if edits.len() == 1 { "" } else { "s" }
            ))
            .with_structured(json!({"path": shown, "edits": edits.len(), "diff": diff})))
        })
        .await
    }
}

/// Applies `edits` in order to `text`; the first failure aborts with nothing written.
pub(crate) fn apply_edits(path: &str, text: &str, edits: &[Edit]) -> Result<String, ToolError> {
    let mut current = text.to_string();
    for (i, edit) in edits.iter().enumerate() {
        let field = if edits.len() > 1 {
            format!("/edits/{i}/old_string")
        } else {
            "/old_string".to_string()
        };
        let which = if edits.len() > 1 {
            format!("edit {} of {}", i + 1, edits.len())
        } else {
            "the edit".to_string()
        };
        if edit.old_string.is_empty() {
            return Err(ToolError::invalid(
                field,
                format!(
                    "{which} has an empty `old_string`; give the exact text to replace (to create a file, use file_write)"
                ),
            ));
        }
        if edit.old_string == edit.new_string {
            return Err(ToolError::invalid(
                field,
                format!(
                    "{which} has identical `old_string` and `new_string`; there is nothing to change"
                ),
            ));
        }
        let positions: Vec<usize> = current
            .match_indices(&edit.old_string)
            .map(|(p, _)| p)
            .collect();
        match positions.len() {
            0 => return Err(not_found(path, &current, &edit.old_string, &which)),
            1 => {}
            n if !edit.replace_all => {
                let lines: Vec<String> = positions
                    .iter()
                    .take(20)
                    .map(|p| (current[..*p].matches('\n').count() + 1).to_string())
                    .collect();
                return Err(ToolError::Failed(format!(
                    "In {path}, {which}: `old_string` occurs {n} times (at lines {}{}). Add surrounding lines to make it unique, or pass replace_all: true to change every occurrence.",
                    lines.join(", "),
                    if n > 20 { ", …" } else { "" }
                )));
            }
            _ => {}
        }
        current = current.replace(&edit.old_string, &edit.new_string);
    }
    Ok(current)
}

fn not_found(path: &str, text: &str, needle: &str, which: &str) -> ToolError {
    let lines: Vec<&str> = text.lines().collect();
    let needle_lines: Vec<&str> = needle.lines().collect();
    let k = needle_lines.len().max(1);
    let squashed_needle = squash_ws(needle);

    // A whitespace-insensitive match over a window of the same number of lines.
    let mut ws_match = None;
    if !squashed_needle.is_empty() {
        for start in 0..lines.len() {
            for width in [k, k + 1, k.saturating_sub(1).max(1)] {
                let end = (start + width).min(lines.len());
                if squash_ws(&lines[start..end].join("\n")) == squashed_needle {
                    ws_match = Some(start + 1);
                    break;
                }
            }
            if ws_match.is_some() {
                break;
            }
        }
    }

    // The closest line to the needle's first non-blank line.
    let first = needle_lines
        .iter()
        .find(|l| !l.trim().is_empty())
        .copied()
        .unwrap_or(needle)
        .trim();
    let mut best: Option<(f32, usize)> = None;
    for (i, line) in lines.iter().enumerate().take(50_000) {
        let t = line.trim();
        if t.is_empty() || t.len() > first.len() * 3 + 20 || first.len() > t.len() * 3 + 20 {
            continue;
        }
        let ratio = similar::TextDiff::from_chars(first, t).ratio();
        if best.is_none_or(|(r, _)| ratio > r) {
            best = Some((ratio, i));
        }
    }

    let mut msg = format!("In {path}, {which}: `old_string` was not found.");
    match ws_match {
        Some(line) => msg.push_str(&format!(
            " A match exists if whitespace is ignored, starting at line {line}: copy the exact text (indentation, tabs, line endings) from file_read and try again."
        )),
        None => msg.push_str(" No whitespace-insensitive match exists either."),
    }
    if let Some((ratio, i)) = best {
        if ratio >= 0.5 {
            let from = i.saturating_sub(1);
            let to = (i + 2).min(lines.len());
            msg.push_str(&format!(" The closest lines are {}-{}:\n", from + 1, to));
            for (n, l) in lines[from..to].iter().enumerate() {
                msg.push_str(&format!(
                    "{}\t{}\n",
                    from + n + 1,
                    tool_core::truncate::cut_line(l, 300)
                ));
            }
        } else {
            msg.push_str(" Nothing similar was found; read the file with file_read to check its current content.");
        }
    }
    ToolError::Failed(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(o: &str, n: &str, all: bool) -> Edit {
        Edit {
            old_string: o.into(),
            new_string: n.into(),
            replace_all: all,
        }
    }

    #[test]
    fn table() {
        let text = "fn main() {\n    let x = 1;\n    let y = 1;\n}\n";
        // (edits, Ok(expected) | Err(substring of the message))
        let cases: Vec<(Vec<Edit>, Result<&str, &str>)> = vec![
            (
                vec![edit("let x = 1", "let x = 2", false)],
                Ok("fn main() {\n    let x = 2;\n    let y = 1;\n}\n"),
            ),
            (
                vec![edit("= 1", "= 3", false)],
                Err("occurs 2 times (at lines 2, 3)"),
            ),
            (
                vec![edit("= 1", "= 3", true)],
                Ok("fn main() {\n    let x = 3;\n    let y = 3;\n}\n"),
            ),
            (vec![edit("", "x", false)], Err("empty `old_string`")),
            (
                vec![edit("let  x = 1;", "z", false)],
                Err("A match exists if whitespace is ignored, starting at line 2"),
            ),
            (vec![edit("let q = 9;", "z", false)], Err("closest lines")),
            (
                vec![
                    edit("let x = 1", "let x = 2", false),
                    edit("missing", "z", false),
                ],
                Err("edit 2 of 2"),
            ),
            (
                vec![
                    edit("let x = 1", "let x = 2", false),
                    edit("let x = 2", "let x = 5", false),
                ],
                Ok("fn main() {\n    let x = 5;\n    let y = 1;\n}\n"),
            ),
            (vec![edit("same", "same", false)], Err("identical")),
        ];
        for (edits, want) in cases {
            let got = apply_edits("a.rs", text, &edits);
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!(g, w),
                (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{e} should contain {w}"),
                (g, w) => panic!("got {g:?}, want {w:?}"),
            }
        }
    }
}
