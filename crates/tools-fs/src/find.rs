use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

use crate::walk::{self, GlobFilter};

/// Arguments of `find_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindFilesArgs {
    /// A glob. Without a `/` it matches file names at any depth (`*.rs`, `Cargo.toml`); with one
    /// it matches paths relative to `path` (`src/**/*.rs`). `*` stays within one directory, `**`
    /// crosses directories, `{a,b}` and `[abc]` work.
    pub pattern: String,
    /// The directory to search, relative to the workspace root. Default: the root.
    #[serde(default)]
    pub path: Option<String>,
    /// The most paths to return. Default 1000.
    #[schemars(range(min = 1, max = 1000000))]
    pub max_results: Option<u32>,
}

/// `find_files`: files whose name or path matches a glob.
#[derive(Debug, Clone, Copy, Default)]
pub struct FindFiles;

const DEFAULT_MAX_RESULTS: u32 = 1000;

#[async_trait]
impl Tool for FindFiles {
    const NAME: &'static str = "find_files";
    type Args = FindFilesArgs;

    fn description(&self) -> String {
        "Find files by glob: `*.rs` matches file names at any depth, `src/**/*.rs` matches paths \
         relative to `path`. Returns paths relative to the workspace root, sorted, one per line. \
         Like ripgrep, skips hidden files, `.git` and whatever .gitignore/.ignore exclude, and \
         does not follow symbolic links. Stops at `max_results` (default 1000) with a count of \
         the rest. To search file contents, use grep."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        Ok(vec![Access::Read(crate::walk::base(
            &ctx.workspace,
            args.path.as_deref(),
        )?)])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let base = crate::walk::base(&ctx.workspace, args.path.as_deref())?;
        let glob = GlobFilter::new(&args.pattern, "/pattern")?;
        let ws = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        let policy = ctx.policy.clone();
        let max = args.max_results.unwrap_or(DEFAULT_MAX_RESULTS).max(1) as usize;
        blocking(ctx, move || {
            let meta = ws.metadata(&base)?;
            if meta.kind != tool_core::workspace::FileKind::Dir {
                return Err(ToolError::Failed(format!(
                    "{base} is not a directory; find_files searches a directory, so give its parent (or `.`) as `path`."
                )));
            }
            let gate = walk::ReadGate {
                policy: &policy,
                tool: Self::NAME,
            };
            let mut found =
                walk::files_under(&ws, gate, &base, &|rel| glob.matches(rel), &cancel)?;
            walk::drop_unreadable(&mut found, &policy, "find_files");
            let total = found.files.len();
            let shown: Vec<String> = found
                .files
                .iter()
                .take(max)
                .map(|f| f.path.to_string())
                .collect();
            let more = total - shown.len();
            let mut text = String::new();
            if shown.is_empty() {
                text.push_str(&format!(
                    "No files match `{}` under {base} (hidden and ignored files are skipped).\n",
                    args.pattern
                ));
            }
            for p in &shown {
                text.push_str(p);
                text.push('\n');
            }
            if more > 0 {
                text.push_str(&format!(
                    "[... and {more} more; narrow the pattern or the path, or raise max_results (now {max}) to see them]\n"
                ));
            }
            if let Some(notice) = found.problems.notice("entries") {
                text.push_str(&notice);
                text.push('\n');
            }
            Ok(ToolOutput::text(text).with_structured(json!({
                "files": shown,
                "count": total,
                "truncated": more > 0,
                "unreadable": found.problems.count,
            })))
        })
        .await
    }
}

// Test fixtures build real files directly.
#[allow(clippy::disallowed_methods)]
#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tool_core::{Limits, Policy, Workspace};

    fn ctx(dir: &std::path::Path) -> ToolContext {
        ToolContext::new(
            Workspace::local(dir).unwrap(),
            Arc::new(Policy::supervised()),
            Arc::new(Limits::default()),
        )
    }

    fn args(v: serde_json::Value) -> FindFilesArgs {
        serde_json::from_value(v).unwrap()
    }

    #[tokio::test]
    async fn finds_sorted_and_counts_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.rs", "a.rs", "sub/c.rs", "sub/d.txt", "a-b/e.rs"] {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let out = FindFiles
            .call(&ctx(dir.path()), args(json!({"pattern": "*.rs"})))
            .await
            .unwrap();
        assert_eq!(out.joined_text(), "a-b/e.rs\na.rs\nb.rs\nsub/c.rs\n");
        let out = FindFiles
            .call(
                &ctx(dir.path()),
                args(json!({"pattern": "*.rs", "max_results": 2})),
            )
            .await
            .unwrap();
        assert!(
            out.joined_text()
                .starts_with("a-b/e.rs\na.rs\n[... and 2 more")
        );
        let s = out.structured.unwrap();
        assert_eq!(s["count"], 4);
        assert_eq!(s["truncated"], true);
    }

    #[tokio::test]
    async fn a_file_as_path_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "x").unwrap();
        let err = FindFiles
            .call(
                &ctx(dir.path()),
                args(json!({"pattern": "*", "path": "f.txt"})),
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not a directory"), "{err}");
    }
}
