use async_trait::async_trait;
use ignore::gitignore::Gitignore;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::workspace::FileKind;
use tool_core::{
    Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, Workspace, WsPath, blocking,
};

/// Arguments of `list_dir`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirArgs {
    /// The directory, relative to the workspace root. Default: the root.
    #[serde(default)]
    pub path: Option<String>,
    /// List subdirectories too (honouring .gitignore).
    #[serde(default)]
    pub recursive: bool,
    /// With `recursive`, how deep to go (1 = only the directory itself). Default 10.
    #[schemars(range(min = 1, max = 64))]
    pub max_depth: Option<u32>,
    /// Include names starting with a dot.
    #[serde(default)]
    pub include_hidden: bool,
    /// The most entries to return. Default 1000.
    #[schemars(range(min = 1, max = 100000))]
    pub max_entries: Option<u32>,
}

/// `list_dir`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListDir;

#[async_trait]
impl Tool for ListDir {
    const NAME: &'static str = "list_dir";
    type Args = ListDirArgs;

    fn description(&self) -> String {
        "List a directory: subdirectories first (with a `/` suffix), then files, each group \
         sorted by name. With `recursive`, lists the tree (honouring .gitignore, not following \
         symbolic links) as paths relative to the listed directory. Hidden names are skipped \
         unless `include_hidden`; long listings stop at `max_entries` with a count of the rest."
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
        let path = crate::walk::base(&ctx.workspace, args.path.as_deref())?;
        let ws = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        let policy = ctx.policy.clone();
        blocking(ctx, move || {
            let max_entries = args.max_entries.unwrap_or(1000) as usize;
            let depth = if args.recursive { args.max_depth.unwrap_or(10) as usize } else { 1 };
            let mut lister = Lister {
                ws: &ws,
                policy: &policy,
                base: &path,
                include_hidden: args.include_hidden,
                max_entries,
                out: Vec::new(),
                omitted: 0,
                ignores: Vec::new(),
                recursive: args.recursive,
                cancel: &cancel,
                withheld: 0,
            };
            lister.walk(&path, "", depth)?;
            let Lister {
                out,
                omitted,
                withheld,
                ..
            } = lister;
            let mut text = if out.is_empty() {
                format!("{path}/ is empty.\n")
            } else {
                out.join("\n") + "\n"
            };
            if withheld > 0 {
                text.push_str(&format!(
                    "[{withheld} director{} not listed inside: the policy does not let list_dir read {}]\n",
                    if withheld == 1 { "y was" } else { "ies were" },
                    if withheld == 1 { "it" } else { "them" }
                ));
            }
            if omitted > 0 {
                text.push_str(&format!(
                    "[... and {omitted} more entries; list a subdirectory or raise max_entries to see them]\n"
                ));
            }
            Ok(ToolOutput::text(text).with_structured(json!({
                "path": path.to_string(), "entries": out, "omitted": omitted,
            })))
        })
        .await
    }
}

struct Lister<'a> {
    ws: &'a Workspace,
    /// Judges the `.gitignore` files read on the way (one the tool may not read is not applied).
    policy: &'a tool_core::Policy,
    base: &'a WsPath,
    include_hidden: bool,
    max_entries: usize,
    out: Vec<String>,
    omitted: usize,
    ignores: Vec<Gitignore>,
    recursive: bool,
    cancel: &'a tool_core::CancellationToken,
    /// Directories not descended into because the policy keeps them from this tool.
    withheld: usize,
}

impl Lister<'_> {
    fn walk(&mut self, dir: &WsPath, prefix: &str, depth: usize) -> Result<(), ToolError> {
        if self.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let entries = self.ws.read_dir(dir)?;
        // The same loader as grep and find_files: read through the workspace, rooted at the
        // directory's workspace-relative path; one that is a link, unreadable or refused by the
        // rules is skipped, not fatal.
        let loaded = if self.recursive && entries.iter().any(|e| e.name == ".gitignore") {
            let mut problems = crate::walk::Problems::default();
            crate::ignore_rules::load_gitignore(
                self.ws,
                crate::walk::ReadGate {
                    policy: self.policy,
                    tool: ListDir::NAME,
                },
                dir,
                std::path::Path::new(dir.rel()),
                &mut problems,
            )
        } else {
            None
        };
        let pushed = loaded.is_some();
        if let Some(ig) = loaded {
            self.ignores.push(ig);
        }
        let mut dirs = Vec::new();
        let mut files = Vec::new();
        for e in entries {
            if !self.include_hidden && e.name.starts_with('.') {
                continue;
            }
            if self.recursive && e.name == ".git" {
                continue;
            }
            let rel = format!("{prefix}{}", e.name);
            let is_dir = e.kind == FileKind::Dir;
            if self.recursive
                && self.ignores.iter().rev().any(|g| {
                    g.matched_path_or_any_parents(self.base_rel(&rel), is_dir)
                        .is_ignore()
                })
            {
                continue;
            }
            if is_dir {
                dirs.push((rel, e.name));
            } else {
                let suffix = match e.kind {
                    FileKind::Symlink => "@",
                    FileKind::Special => "|",
                    _ => "",
                };
                files.push(format!("{rel}{suffix}"));
            }
        }
        for (rel, name) in dirs {
            if self.out.len() >= self.max_entries {
                self.omitted += 1;
                continue;
            }
            self.out.push(format!("{rel}/"));
            if depth > 1 {
                let child = dir.join(&name)?;
                // A directory the rules keep from reading is named (its parent may be listed)
                // but not opened: its entries' names are its contents.
                let verdict = self
                    .policy
                    .decide(ListDir::NAME, &self.ws.read_accesses(&child));
                if verdict.decision != tool_core::Decision::Allow {
                    self.withheld += 1;
                    continue;
                }
                self.walk(&child, &format!("{rel}/"), depth - 1)?;
            }
        }
        for f in files {
            if self.out.len() >= self.max_entries {
                self.omitted += 1;
            } else {
                self.out.push(f);
            }
        }
        if pushed {
            self.ignores.pop();
        }
        Ok(())
    }

    fn base_rel(&self, rel: &str) -> String {
        // Gitignore matchers are rooted at the workspace-relative directory they came from;
        // they are built with an empty root, so match against the path from the listed base.
        if self.base.rel().is_empty() {
            rel.to_string()
        } else {
            format!("{}/{rel}", self.base.rel())
        }
    }
}
