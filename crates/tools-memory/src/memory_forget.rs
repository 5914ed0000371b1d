use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

use crate::engine::Engine;
use crate::text::{check_key, memory_json, quoted};

/// Arguments of `memory_forget`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryForgetArgs {
    /// The exact key of the memory to delete, as memory_list shows it. It is matched exactly:
    /// no patterns, no prefixes.
    pub key: String,
}

/// `memory_forget`: delete one memory by its exact key.
#[derive(Debug, Clone)]
pub struct MemoryForget {
    engine: Arc<Engine>,
}

impl MemoryForget {
    pub(crate) fn new(engine: Arc<Engine>) -> Self {
        MemoryForget { engine }
    }
}

#[async_trait]
impl Tool for MemoryForget {
    const NAME: &'static str = "memory_forget";
    type Args = MemoryForgetArgs;

    fn description(&self) -> String {
        "Delete one memory from long-term memory by its exact key (no patterns). Says so when \
         no memory has that key; memory_list shows the keys."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE.idempotent(true)
    }

    fn access(&self, _ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        check_key("/key", &args.key, "user_timezone")?;
        Ok(vec![Access::State {
            store: "memory".into(),
            write: true,
        }])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        check_key("/key", &args.key, "user_timezone")?;
        let store = Arc::clone(&self.engine.memory);
        let key = args.key.clone();
        let removed = blocking(ctx, move || Ok(store.forget(&key)?)).await?;
        match removed {
            Some(memory) => Ok(ToolOutput::text(format!(
                "Forgot memory {} ({}, {} bytes).",
                quoted(&memory.key),
                memory.category,
                memory.bytes
            ))
            .with_structured(memory_json(&memory, false))),
            None => Err(ToolError::NotFound(format!(
                "There is no memory with the key {}, so nothing was deleted; keys are matched exactly. Call memory_list to see the stored keys.",
                quoted(&args.key)
            ))),
        }
    }
}
