use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

use crate::engine::Engine;
use crate::remember::KV_STORE;
use crate::text::{check_key, fmt_time, for_display, quoted};

/// Arguments of `recall`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// The exact key given to remember.
    pub key: String,
}

/// `recall`: read a key of the key-value scratchpad.
#[derive(Debug, Clone)]
pub struct Recall {
    engine: Arc<Engine>,
}

impl Recall {
    pub(crate) fn new(engine: Arc<Engine>) -> Self {
        Recall { engine }
    }
}

#[async_trait]
impl Tool for Recall {
    const NAME: &'static str = "recall";
    type Args = RecallArgs;

    fn description(&self) -> String {
        "Read the value kept under a key with remember. The output is the value itself. Says so \
         when the key is not set; list_keys shows the keys."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn access(&self, _ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        check_key("/key", &args.key, "build_command")?;
        Ok(vec![Access::State {
            store: KV_STORE.into(),
            write: false,
        }])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        check_key("/key", &args.key, "build_command")?;
        let kv = Arc::clone(&self.engine.kv);
        let key = args.key.clone();
        match blocking(ctx, move || Ok(kv.get(&key)?)).await? {
            Some(entry) => Ok(ToolOutput::text(for_display(&entry.value).into_owned())
                .with_structured(json!({
                    "key": entry.key,
                    "value": entry.value,
                    "updated_at": fmt_time(entry.updated_at),
                }))),
            None => Err(ToolError::NotFound(format!(
                "Nothing is kept under the key {}; keys are matched exactly. Call list_keys to see the keys.",
                quoted(&args.key)
            ))),
        }
    }
}
