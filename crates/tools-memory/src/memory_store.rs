use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};

use crate::engine::{Embedding, Engine};
use crate::store::{Category, NewMemory, is_internal_key};
use crate::text::{check_content, check_key, check_session, quoted};

/// Arguments of `memory_store`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryStoreArgs {
    /// A short, unique name for the memory, such as `user_timezone` or `project_deadline` (at
    /// most 256 bytes, one line). Storing under an existing key replaces what it held. Keys
    /// starting with `_` are internal: memory_list and memory_recall skip them unless asked.
    pub key: String,
    /// The fact to remember, in plain sentences (at most 64 KiB). Store only new facts in your
    /// own words; text copied from memory_recall or memory_list output is refused.
    pub content: String,
    /// core (lasting facts and preferences; the default; never decays), daily (today's work),
    /// conversation (what was said) or custom.
    pub category: Option<Category>,
    /// The session the memory belongs to, so memory_recall and memory_list can be narrowed to
    /// it. Omit it for memories that hold across sessions.
    pub session_id: Option<String>,
}

/// `memory_store`: keep a fact under a key (an upsert).
#[derive(Debug, Clone)]
pub struct MemoryStoreTool {
    engine: Arc<Engine>,
}

impl MemoryStoreTool {
    pub(crate) fn new(engine: Arc<Engine>) -> Self {
        MemoryStoreTool { engine }
    }
}

fn check(args: &MemoryStoreArgs) -> Result<(), ToolError> {
    check_key("/key", &args.key, "user_timezone")?;
    check_content("/content", &args.content, "memory_store")?;
    if let Some(s) = &args.session_id {
        check_session("/session_id", s)?;
    }
    Ok(())
}

#[async_trait]
impl Tool for MemoryStoreTool {
    const NAME: &'static str = "memory_store";
    type Args = MemoryStoreArgs;

    fn description(&self) -> String {
        "Remember a fact in long-term memory under a key, for later sessions: storing under an \
         existing key replaces its content, category and session. Use one key per fact \
         (`user_timezone`, `project_deadline`) and keep the content short and self-contained; \
         find memories again with memory_recall, browse them with memory_list, delete one with \
         memory_forget. Never store memory_recall output again: content holding a \
         `<recalled_memory>` block is refused, because re-stored recalls snowball."
            .into()
    }

    fn annotations(&self) -> Annotations {
        // An upsert: repeating it changes nothing more. Replacing a key's content is the update
        // path of memory, not a deletion (memory_forget is the destructive one).
        Annotations::ADDITIVE.idempotent(true)
    }

    fn access(&self, _ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        check(args)?;
        Ok(vec![Access::State {
            store: "memory".into(),
            write: true,
        }])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        check(&args)?;
        let category = args.category.unwrap_or_default();
        let key = args.key;
        let bytes = args.content.len();
        let session_id = args.session_id;
        let new = NewMemory {
            key: key.clone(),
            content: args.content,
            category,
            session_id: session_id.clone(),
        };
        let (upserted, embedding) = self.engine.store(ctx, new).await?;
        let mut text = match upserted.replaced {
            None => format!(
                "Stored memory {} ({category}, {bytes} bytes).",
                quoted(&key)
            ),
            Some(r) if r.same_content => format!(
                "Memory {} already held this content; its category ({category}), session and time were updated.",
                quoted(&key)
            ),
            Some(r) => format!(
                "Replaced memory {} ({category}, {bytes} bytes; it held {} bytes before).",
                quoted(&key),
                r.previous_bytes
            ),
        };
        if is_internal_key(&key) {
            text.push_str(
                " Its key starts with `_`, so it is internal: memory_list and memory_recall show it only with `include_internal`.",
            );
        }
        if let Embedding::Pending(reason) = &embedding {
            text.push_str(&format!(
                "\nNote: stored without an embedding for now (the embedding provider {reason}); it will be embedded on a later call, and keyword search finds it meanwhile."
            ));
        }
        Ok(ToolOutput::text(text).with_structured(json!({
            "key": key,
            "created": upserted.replaced.is_none(),
            "replaced": upserted.replaced.is_some(),
            "bytes": bytes,
            "category": category.as_str(),
            "session_id": session_id,
            "embedding": match embedding {
                Embedding::Off => "off",
                Embedding::Stored => "stored",
                Embedding::Pending(_) => "pending",
            },
        })))
    }
}
