use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

use crate::engine::Engine;
use crate::remember::KV_STORE;
use crate::store::is_internal_key;
use crate::text::{MAX_KEY_BYTES, for_display, quoted};

/// The most keys one call lists.
pub const MAX_KEYS_LISTED: usize = 1000;

/// Arguments of `list_keys`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListKeysArgs {
    /// Only keys that start with this text, compared literally (`%`, `_` and `*` are ordinary
    /// characters). Default: all keys.
    #[serde(default)]
    pub prefix: String,
    /// Also list internal keys (starting with `_`). Default false; a prefix starting with `_`
    /// includes them anyway.
    #[serde(default)]
    pub include_internal: bool,
}

/// `list_keys`: the keys of the key-value scratchpad.
#[derive(Debug, Clone)]
pub struct ListKeys {
    engine: Arc<Engine>,
}

impl ListKeys {
    pub(crate) fn new(engine: Arc<Engine>) -> Self {
        ListKeys { engine }
    }
}

fn check(args: &ListKeysArgs) -> Result<(), ToolError> {
    if args.prefix.len() > MAX_KEY_BYTES {
        return Err(ToolError::invalid(
            "/prefix",
            format!(
                "the prefix is {} bytes, longer than any key can be ({MAX_KEY_BYTES}); give a shorter prefix",
                args.prefix.len()
            ),
        ));
    }
    if args.prefix.chars().any(char::is_control) {
        return Err(ToolError::invalid(
            "/prefix",
            "the prefix contains a control character, which no key has; remove it",
        ));
    }
    Ok(())
}

#[async_trait]
impl Tool for ListKeys {
    const NAME: &'static str = "list_keys";
    type Args = ListKeysArgs;

    fn description(&self) -> String {
        "List the keys of the key-value scratchpad (set with remember), in byte order, \
         optionally only those starting with `prefix` (taken literally). Read a value with \
         recall."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn access(&self, _ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        check(args)?;
        Ok(vec![Access::State {
            store: KV_STORE.into(),
            write: false,
        }])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        check(&args)?;
        let include_internal = args.include_internal || is_internal_key(&args.prefix);
        let kv = Arc::clone(&self.engine.kv);
        let prefix = args.prefix.clone();
        let listing = blocking(ctx, move || {
            Ok(kv.keys(&prefix, include_internal, MAX_KEYS_LISTED)?)
        })
        .await?;
        let which = if args.prefix.is_empty() {
            String::new()
        } else {
            format!(" starting with {}", quoted(&args.prefix))
        };
        let shown = listing.keys.len();
        let mut text = if shown == 0 {
            format!("No keys{which} are set.")
        } else if (shown as u64) < listing.total {
            format!(
                "The first {shown} of {} keys{which}; give a longer prefix to see the rest:",
                listing.total
            )
        } else if shown == 1 {
            format!("1 key{which}:")
        } else {
            format!("{shown} keys{which}:")
        };
        if !include_internal && shown > 0 {
            text.push_str(" (internal keys starting with `_` are not shown)");
        }
        for k in &listing.keys {
            text.push('\n');
            text.push_str(&for_display(k));
        }
        Ok(ToolOutput::text(text).with_structured(json!({
            "prefix": args.prefix,
            "total": listing.total,
            "keys": listing.keys,
        })))
    }
}
