//! Fixtures: the scripted model, test tools, a runtime builder.

mod guards;
mod loop_;
mod subagents;
mod webhook;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{
    Access, Annotations, CancellationToken, Limits, Policy, Registry, Tool, ToolContext, ToolError,
    ToolOutput, Workspace, typed,
};
use toolshed_agent::provider::{
    ChatRequest, ChatResponse, ModelProvider, ProviderError, StopReason, StreamSink, Usage,
};
use toolshed_agent::{AgentEvent, Message, Part, Runtime, ToolCall};

/// A model that answers from a script, in order, and records what it was asked.
#[derive(Debug, Default)]
pub(crate) struct Scripted {
    answers: Mutex<VecDeque<Vec<Part>>>,
    pub(crate) requests: Mutex<Vec<ChatRequest>>,
}

impl Scripted {
    pub(crate) fn new(answers: Vec<Vec<Part>>) -> Arc<Scripted> {
        Arc::new(Scripted {
            answers: Mutex::new(answers.into()),
            requests: Mutex::default(),
        })
    }

    pub(crate) fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl ModelProvider for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }

    async fn complete(
        &self,
        request: &ChatRequest,
        _stream: Option<StreamSink<'_>>,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, ProviderError> {
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        self.requests.lock().unwrap().push(request.clone());
        let content = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| vec![text("(the script has no more answers)")]);
        let stop = if content.iter().any(|p| matches!(p, Part::ToolCall(_))) {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        };
        Ok(ChatResponse {
            content,
            stop,
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
            },
        })
    }
}

pub(crate) fn text(t: &str) -> Part {
    Part::Text { text: t.into() }
}

pub(crate) fn call(id: &str, name: &str, args: &str) -> Part {
    Part::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    })
}

/// The tool results of the last user message of a request.
pub(crate) fn results(request: &ChatRequest) -> Vec<toolshed_agent::ToolResult> {
    match request.messages.last() {
        Some(Message::User { content }) => content
            .iter()
            .filter_map(|p| match p {
                Part::ToolResult(r) => Some(r.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// `note {text}`: appends to a shared log; a write (not read-only).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoteArgs {
    /// What to note.
    pub(crate) text: String,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Note {
    pub(crate) log: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl Tool for Note {
    const NAME: &'static str = "note";
    type Args = NoteArgs;
    fn description(&self) -> String {
        "Write a note.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::ADDITIVE
    }
    fn access(&self, _ctx: &ToolContext, _args: &NoteArgs) -> Result<Vec<Access>, ToolError> {
        Ok(vec![Access::State {
            store: "notes".into(),
            write: true,
        }])
    }
    async fn call(&self, _ctx: &ToolContext, args: NoteArgs) -> Result<ToolOutput, ToolError> {
        self.log.lock().unwrap().push(args.text.clone());
        Ok(ToolOutput::text(format!("noted: {}", args.text)))
    }
}

/// `wait_pair {}`: read-only; finishes only when two calls run at the same time (or after 2 s,
/// saying it waited alone).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Empty {}

#[derive(Debug, Clone)]
pub(crate) struct WaitPair {
    pub(crate) barrier: Arc<tokio::sync::Barrier>,
}

#[async_trait]
impl Tool for WaitPair {
    const NAME: &'static str = "wait_pair";
    type Args = Empty;
    fn description(&self) -> String {
        "Wait for a partner call.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }
    fn access(&self, _ctx: &ToolContext, _args: &Empty) -> Result<Vec<Access>, ToolError> {
        Ok(Vec::new())
    }
    async fn call(&self, _ctx: &ToolContext, _args: Empty) -> Result<ToolOutput, ToolError> {
        match tokio::time::timeout(Duration::from_secs(2), self.barrier.wait()).await {
            Ok(_) => Ok(ToolOutput::text("met my partner")),
            Err(_) => Ok(ToolOutput::text("waited alone")),
        }
    }
}

/// `flaky {}`: always fails; counts its runs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Flaky {
    pub(crate) runs: Arc<AtomicUsize>,
}

#[async_trait]
impl Tool for Flaky {
    const NAME: &'static str = "flaky";
    type Args = Empty;
    fn description(&self) -> String {
        "Fail.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::ADDITIVE
    }
    fn access(&self, _ctx: &ToolContext, _args: &Empty) -> Result<Vec<Access>, ToolError> {
        Ok(Vec::new())
    }
    async fn call(&self, _ctx: &ToolContext, _args: Empty) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Err(ToolError::Failed(
            "The disk is on fire; try another disk.".into(),
        ))
    }
}

/// `slow {}`: read-only, sleeps 30 s unless cancelled.
#[derive(Debug, Clone, Default)]
pub(crate) struct Slow;

#[async_trait]
impl Tool for Slow {
    const NAME: &'static str = "slow";
    type Args = Empty;
    fn description(&self) -> String {
        "Take a long time.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }
    fn access(&self, _ctx: &ToolContext, _args: &Empty) -> Result<Vec<Access>, ToolError> {
        Ok(Vec::new())
    }
    async fn call(&self, ctx: &ToolContext, _args: Empty) -> Result<ToolOutput, ToolError> {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(30)) => Ok(ToolOutput::text("slept")),
            () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
        }
    }
}

/// `memory_recall {}` and `memory_store {content}` stand-ins with tools-memory's output frame.
#[derive(Debug, Clone, Default)]
pub(crate) struct Recall;

#[async_trait]
impl Tool for Recall {
    const NAME: &'static str = "memory_recall";
    type Args = Empty;
    fn description(&self) -> String {
        "Recall.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }
    fn access(&self, _ctx: &ToolContext, _args: &Empty) -> Result<Vec<Access>, ToolError> {
        Ok(Vec::new())
    }
    async fn call(&self, _ctx: &ToolContext, _args: Empty) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(
            "1 memory:\n<recalled_memory key=\"deploy\" category=\"core\">\nDeploys happen on Tuesdays after the standup meeting.\n</recalled_memory>",
        ))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StoreArgs {
    /// Key.
    pub(crate) key: String,
    /// Content.
    pub(crate) content: String,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Store {
    pub(crate) stored: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl Tool for Store {
    const NAME: &'static str = "memory_store";
    type Args = StoreArgs;
    fn description(&self) -> String {
        "Store.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::ADDITIVE
    }
    fn access(&self, _ctx: &ToolContext, _args: &StoreArgs) -> Result<Vec<Access>, ToolError> {
        Ok(Vec::new())
    }
    async fn call(&self, _ctx: &ToolContext, args: StoreArgs) -> Result<ToolOutput, ToolError> {
        self.stored.lock().unwrap().push(args.content);
        Ok(ToolOutput::text(format!("stored {}", args.key)))
    }
}

/// The test tools, registered.
pub(crate) struct Tools {
    pub(crate) note: Note,
    pub(crate) flaky: Flaky,
    pub(crate) store: Store,
}

pub(crate) fn tools() -> (Registry, Tools) {
    let t = Tools {
        note: Note::default(),
        flaky: Flaky::default(),
        store: Store::default(),
    };
    let mut r = Registry::new();
    r.register(typed(t.note.clone())).unwrap();
    r.register(typed(t.flaky.clone())).unwrap();
    r.register(typed(WaitPair {
        barrier: Arc::new(tokio::sync::Barrier::new(2)),
    }))
    .unwrap();
    r.register(typed(Slow)).unwrap();
    r.register(typed(Recall)).unwrap();
    r.register(typed(t.store.clone())).unwrap();
    (r, t)
}

/// A context on a temp workspace under `policy`.
pub(crate) fn context(dir: &std::path::Path, policy: Policy) -> ToolContext {
    ToolContext::new(
        Workspace::local(dir).unwrap(),
        Arc::new(policy),
        Arc::new(Limits::default()),
    )
}

/// A runtime over the scripted model and `registry`, collecting events.
pub(crate) fn runtime(
    model: Arc<Scripted>,
    registry: Registry,
) -> (Runtime, Arc<Mutex<Vec<AgentEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let rt = Runtime::new(model, "test-model", registry)
        .with_events(Arc::new(move |e| sink.lock().unwrap().push(e)));
    (rt, events)
}
