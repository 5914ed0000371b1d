use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

use crate::engine::Engine;
use crate::text::{check_content, check_key, now_ms, quoted};

/// The `store` name of the key-value scratchpad in [`Access::State`].
pub const KV_STORE: &str = "kv";

/// Arguments of `remember`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    /// The name to keep the value under, such as `build_command` (at most 256 bytes, one line).
    /// Setting an existing key replaces its value. Keys starting with `_` are internal:
    /// list_keys skips them unless asked.
    pub key: String,
    /// The value, any text up to 64 KiB.
    pub value: String,
}

/// `remember`: set a key in the key-value scratchpad.
#[derive(Debug, Clone)]
pub struct Remember {
    engine: Arc<Engine>,
}

impl Remember {
    pub(crate) fn new(engine: Arc<Engine>) -> Self {
        Remember { engine }
    }
}

fn check(args: &RememberArgs) -> Result<(), ToolError> {
    check_key("/key", &args.key, "build_command")?;
    check_content("/value", &args.value, "remember")
}

#[async_trait]
impl Tool for Remember {
    const NAME: &'static str = "remember";
    type Args = RememberArgs;

    fn description(&self) -> String {
        "Keep a value under a key in the key-value scratchpad, replacing any value the key had. \
         Read it back with recall, see the keys with list_keys. For facts you want to search \
         by their words later, use memory_store instead."
            .into()
    }

    fn annotations(&self) -> Annotations {
        // An upsert, like memory_store.
        Annotations::ADDITIVE.idempotent(true)
    }

    fn access(&self, _ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        check(args)?;
        Ok(vec![Access::State {
            store: KV_STORE.into(),
            write: true,
        }])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        check(&args)?;
        let kv = Arc::clone(&self.engine.kv);
        let (key, value) = (args.key.clone(), args.value);
        let bytes = value.len();
        let replaced = blocking(ctx, move || Ok(kv.set(&key, &value, now_ms())?)).await?;
        let text = if replaced {
            format!(
                "Replaced the value of {} ({bytes} bytes).",
                quoted(&args.key)
            )
        } else {
            format!("Remembered {} ({bytes} bytes).", quoted(&args.key))
        };
        Ok(ToolOutput::text(text).with_structured(json!({
            "key": args.key,
            "bytes": bytes,
            "replaced": replaced,
        })))
    }
}
