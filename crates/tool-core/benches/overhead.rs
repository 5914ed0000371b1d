//! The per-call overhead of the stack (strict parse + validation + policy + layers) on a trivial
//! tool, against calling the tool's logic directly. Run with `cargo xtask bench core`.

use std::sync::Arc;

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use serde::Deserialize;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{
    Access, Annotations, Limits, Policy, Registry, Stack, Tool, ToolContext, ToolError, ToolOutput,
    Workspace, typed,
};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EchoArgs {
    /// Text to echo.
    text: String,
    /// How many times.
    times: Option<u32>,
    /// A path, so the policy has an access to decide.
    path: String,
}

struct Echo;

#[async_trait]
impl Tool for Echo {
    const NAME: &'static str = "echo";
    type Args = EchoArgs;
    fn description(&self) -> String {
        "Echo.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }
    fn access(&self, ctx: &ToolContext, args: &EchoArgs) -> Result<Vec<Access>, ToolError> {
        Ok(vec![Access::Read(ctx.workspace.resolve(&args.path)?)])
    }
    async fn call(&self, _ctx: &ToolContext, args: EchoArgs) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(
            args.text.repeat(args.times.unwrap_or(1) as usize),
        ))
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut registry = Registry::new();
    registry.register(typed(Echo)).unwrap();
    let stack = Stack::new(registry);
    let ctx = ToolContext::new(
        Workspace::local(dir.path()).unwrap(),
        Arc::new(Policy::supervised()),
        Arc::new(Limits::default()),
    );
    let args = r#"{"text":"hi","times":2,"path":"src/lib.rs"}"#;

    c.bench_function(
        "stack call_json (parse + validate + policy + layers)",
        |b| {
            b.to_async(&rt)
                .iter(|| async { stack.call_json("echo", args, ctx.for_call()).await.unwrap() })
        },
    );
    c.bench_function("direct tool call (no stack)", |b| {
        b.to_async(&rt).iter(|| async {
            let parsed: EchoArgs = serde_json::from_str(args).unwrap();
            Echo.call(&ctx, parsed).await.unwrap()
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
