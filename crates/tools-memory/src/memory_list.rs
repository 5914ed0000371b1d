use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

use crate::engine::Engine;
use crate::store::{Category, Filter};
use crate::text::{
    check_session, describe_filter, fmt_time, for_display, frame, memory_json, quoted,
};

/// The default number of memories listed.
pub const DEFAULT_LIST_LIMIT: u32 = 20;
/// The most memories one listing returns.
pub const MAX_LIST_LIMIT: u32 = 1000;

/// Arguments of `memory_list`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryListArgs {
    /// How many memories to show, newest first, 1 to 1000. Default 20.
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<u32>,
    /// Only memories of this category: core, daily, conversation or custom.
    pub category: Option<Category>,
    /// Only memories stored with this session id.
    pub session_id: Option<String>,
    /// Show each memory's content (true, the default) or only its key, category, size and time.
    pub include_content: Option<bool>,
    /// Also list internal memories (keys starting with `_`). Default false.
    #[serde(default)]
    pub include_internal: bool,
}

/// `memory_list`: the newest memories.
#[derive(Debug, Clone)]
pub struct MemoryList {
    engine: Arc<Engine>,
}

impl MemoryList {
    pub(crate) fn new(engine: Arc<Engine>) -> Self {
        MemoryList { engine }
    }
}

fn check(args: &MemoryListArgs) -> Result<usize, ToolError> {
    let limit = args.limit.unwrap_or(DEFAULT_LIST_LIMIT);
    if !(1..=MAX_LIST_LIMIT).contains(&limit) {
        return Err(ToolError::invalid(
            "/limit",
            format!("`limit` is {limit}; give a number from 1 to {MAX_LIST_LIMIT}"),
        ));
    }
    if let Some(s) = &args.session_id {
        check_session("/session_id", s)?;
    }
    Ok(limit as usize)
}

#[async_trait]
impl Tool for MemoryList {
    const NAME: &'static str = "memory_list";
    type Args = MemoryListArgs;

    fn description(&self) -> String {
        "List long-term memories, most recently stored first, optionally only one category or \
         session. With content (the default) each memory comes in a `<recalled_memory …>` \
         block; with `include_content: false` one line per key. Use memory_recall to search \
         instead."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn access(&self, _ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        check(args)?;
        Ok(vec![Access::State {
            store: "memory".into(),
            write: false,
        }])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let limit = check(&args)?;
        let with_content = args.include_content.unwrap_or(true);
        let filter = Filter {
            category: args.category,
            session_id: args.session_id.clone(),
            include_internal: args.include_internal,
        };
        let store = Arc::clone(&self.engine.memory);
        let listing = blocking(ctx, move || Ok(store.list(&filter, limit, with_content)?)).await?;
        let scope = describe_filter(args.category, args.session_id.as_deref());
        let shown = listing.memories.len();
        let mut text = if shown == 0 {
            format!("No memories{scope} are stored.")
        } else if (shown as u64) < listing.total {
            format!(
                "The newest {shown} of {} memories{scope}; pass a larger `limit` (up to {MAX_LIST_LIMIT}) to see more:",
                listing.total
            )
        } else {
            format!("All {shown} memories{scope}, newest first:")
        };
        if !args.include_internal && shown > 0 {
            text.push_str(" (internal keys starting with `_` are not shown)");
        }
        for m in &listing.memories {
            text.push('\n');
            if with_content {
                text.push_str(&frame(m, &[]));
            } else {
                text.push_str(&format!(
                    "{} ({}, {} bytes{}, updated {})",
                    quoted(&for_display(&m.key)),
                    m.category,
                    m.bytes,
                    m.session_id
                        .as_deref()
                        .map(|s| format!(", session {}", quoted(&for_display(s))))
                        .unwrap_or_default(),
                    fmt_time(m.updated_at)
                ));
            }
        }
        let items: Vec<_> = listing
            .memories
            .iter()
            .map(|m| memory_json(m, with_content))
            .collect();
        Ok(ToolOutput::text(text).with_structured(json!({
            "total": listing.total,
            "memories": items,
        })))
    }
}
