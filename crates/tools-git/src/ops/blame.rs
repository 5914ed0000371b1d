//! `blame`: `line  hash  author  text` for one file, at `rev` or in the working tree (where
//! uncommitted lines show as `00000000  Not Committed Yet`).

use std::collections::HashMap;
use std::path::Path;

use git2::{BlameOptions, ErrorCode, Oid};
use serde_json::json;
use tool_core::truncate::cut_line;
use tool_core::{Limits, ToolError};

use super::text::{MAX_STRUCTURED, when};
use super::{Done, Session, check_cancel, git_error};
use crate::git_ops::Plan;

const AUTHOR_WIDTH: usize = 20;
const LINE_CHARS: usize = 400;

pub(crate) fn run(s: &Session, plan: &Plan, limits: &Limits) -> Result<Done, ToolError> {
    let repo = &s.repo;
    let path = &s.paths[0];
    let spec = path.strip_prefix(&s.root).unwrap_or_default().to_string();
    if spec.is_empty() {
        return Err(ToolError::invalid(
            "/paths",
            "blame needs one file, not the repository's root",
        ));
    }
    let not_tracked = |e: git2::Error| {
        if e.code() == ErrorCode::NotFound {
            ToolError::NotFound(format!(
                "{path} is not in the commit being blamed ({}); blame works on committed files — check the name, or commit the file first.",
                e.message().trim_end_matches('.')
            ))
        } else {
            git_error(e, &format!("blame {path}"))
        }
    };
    let mut opts = BlameOptions::new();
    let rev = s.one_rev(plan.rev.as_ref());
    let (content, blame, of) = match rev {
        Some(r) => {
            let commit = s.commit(r)?;
            opts.newest_commit(commit.id());
            let entry = commit
                .tree()
                .map_err(|e| git_error(e, "read a tree"))?
                .get_path(Path::new(&spec))
                .map_err(not_tracked)?;
            let blob = repo.find_blob(entry.id()).map_err(|_| {
                ToolError::Failed(format!("{path} is a directory at {r}; blame one file."))
            })?;
            let blame = repo
                .blame_file(Path::new(&spec), Some(&mut opts))
                .map_err(not_tracked)?;
            (blob.content().to_vec(), blame, r.to_string())
        }
        None => {
            if s.head_commit()?.is_none() {
                return Err(ToolError::Failed(
                    "The repository has no commits yet, so every line is uncommitted; commit first."
                        .into(),
                ));
            }
            let committed = repo
                .blame_file(Path::new(&spec), Some(&mut opts))
                .map_err(not_tracked)?;
            // The working file, read through the workspace (confined), blamed against HEAD.
            let content = s.ws.read_to_end(path, limits.max_file_bytes)?;
            let blame = committed
                .blame_buffer(&content)
                .map_err(|e| git_error(e, &format!("blame {path}")))?;
            // `blame_buffer` borrows `committed`; keep only owned data past this point.
            let rendered = render(s, &content, &blame, path)?;
            return Ok(rendered.finish(path.to_string(), "the working tree"));
        }
    };
    let rendered = render(s, &content, &blame, path)?;
    Ok(rendered.finish(path.to_string(), &of))
}

struct Rendered {
    text: String,
    hunks: Vec<serde_json::Value>,
    lines: usize,
}

impl Rendered {
    fn finish(self, path: String, of: &str) -> Done {
        Done::new(
            self.text,
            json!({"path": path, "of": of, "lines": self.lines, "hunks": self.hunks}),
            "the blame was too long; read the file in parts with file_read and blame it at a rev, or use log with paths",
        )
    }
}

fn render(
    s: &Session,
    content: &[u8],
    blame: &git2::Blame<'_>,
    path: &tool_core::WsPath,
) -> Result<Rendered, ToolError> {
    if content.iter().take(8000).any(|b| *b == 0) {
        return Err(ToolError::Failed(format!(
            "{path} is a binary file; blame works on text."
        )));
    }
    let text = String::from_utf8_lossy(content);
    let lines: Vec<&str> = text.lines().collect();
    let width = lines.len().to_string().len();
    let mut names: HashMap<Oid, (String, String)> = HashMap::new();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if i % 1024 == 0 {
            check_cancel(&s.cancel)?;
        }
        let (hash, author) = match blame.get_line(i + 1) {
            Some(h) if !h.final_commit_id().is_zero() => {
                let id = h.final_commit_id();
                names
                    .entry(id)
                    .or_insert_with(|| {
                        let name = h
                            .final_signature()
                            .map(|sig| String::from_utf8_lossy(sig.name_bytes()).into_owned())
                            .unwrap_or_default();
                        (id.to_string()[..8].to_string(), name)
                    })
                    .clone()
            }
            _ => ("00000000".to_string(), "Not Committed Yet".to_string()),
        };
        let author: String = author.chars().take(AUTHOR_WIDTH).collect();
        out.push_str(&format!(
            "{:>width$}  {hash}  {author:<AUTHOR_WIDTH$}  {}\n",
            i + 1,
            cut_line(line, LINE_CHARS)
        ));
    }
    if lines.is_empty() {
        out.push_str(&format!("{path} is empty.\n"));
    }
    let mut hunks = Vec::new();
    for hunk in blame.iter().take(MAX_STRUCTURED) {
        let sig = hunk.final_signature();
        hunks.push(json!({
            "start_line": hunk.final_start_line(),
            "lines": hunk.lines_in_hunk(),
            "commit": if hunk.final_commit_id().is_zero() { None } else { Some(hunk.final_commit_id().to_string()) },
            "author": sig.as_ref().map(|s| String::from_utf8_lossy(s.name_bytes()).into_owned()),
            "date": sig.as_ref().map(|s| when(s.when())),
        }));
    }
    Ok(Rendered {
        text: out,
        hunks,
        lines: lines.len(),
    })
}
