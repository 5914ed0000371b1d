//! The agent's own tools: `finish`, `message`, `delegate` and `spawn`. They live here, not in a
//! tool family, because they act on the run itself.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tokio::task::JoinHandle;
use tool_core::net::{Endpoint, EndpointError, EndpointErrorKind, Method, NetConfig, Request, Url};
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, DynTool, Tool, ToolContext, ToolError, ToolOutput, typed};

use crate::event::AgentEvent;
use crate::message::Message;
use crate::run::{AgentError, RunOutcome, Runtime};
use crate::spec::{AgentSpec, DEFAULT_SYSTEM_PROMPT, ToolFilter};

/// Where `message` delivers. The console is always there (an [`AgentEvent::Message`]); a file
/// and a webhook are added by configuration.
#[derive(Debug, Clone, Default)]
pub struct Channels {
    /// Appends one line per message (JSON) to this file.
    pub file: Option<PathBuf>,
    /// POSTs `{"content": …}` to this URL, through [`tool_core::net::Endpoint`]: the host may
    /// be private (a relay the user runs), but a redirect to another origin is never followed
    /// and a URL with user information is refused.
    pub webhook: Option<String>,
}

/// What a run's agent tools share with its loop.
#[derive(Debug, Default)]
pub(crate) struct RunState {
    finish: Mutex<Option<Option<String>>>,
    spawned: Mutex<Vec<Spawned>>,
    next_spawn: Mutex<u32>,
}

#[derive(Debug)]
struct Spawned {
    id: u32,
    label: String,
    handle: JoinHandle<Result<RunOutcome, AgentError>>,
}

fn spawn_note(
    id: u32,
    label: &str,
    result: Result<Result<RunOutcome, AgentError>, tokio::task::JoinError>,
) -> String {
    match result {
        Ok(Ok(outcome)) => format!("[subagent #{id} `{label}` finished]\n{}", outcome.answer),
        Ok(Err(e)) => format!("[subagent #{id} `{label}` failed] {e}"),
        Err(_) => format!("[subagent #{id} `{label}` stopped before it finished]"),
    }
}

impl RunState {
    /// The `finish` call of this turn, if any: `Some(message)`.
    pub(crate) fn take_finish(&self) -> Option<Option<String>> {
        self.finish.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Notes about spawned subagents that have finished, removed from the list.
    pub(crate) fn finished_spawned(&self) -> Vec<String> {
        let mut spawned = self.spawned.lock().unwrap_or_else(|e| e.into_inner());
        let (done, running): (Vec<Spawned>, Vec<Spawned>) =
            spawned.drain(..).partition(|s| s.handle.is_finished());
        *spawned = running;
        done.into_iter()
            .map(|s| {
                let result = futures_now(s.handle);
                spawn_note(s.id, &s.label, result)
            })
            .collect()
    }

    /// Waits for every spawned subagent and returns their notes.
    pub(crate) async fn wait_spawned(&self) -> Vec<String> {
        let all: Vec<Spawned> = self
            .spawned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect();
        let mut notes = Vec::new();
        for s in all {
            let result = s.handle.await;
            notes.push(spawn_note(s.id, &s.label, result));
        }
        notes
    }

    /// Stops spawned subagents still running when their parent ends.
    pub(crate) fn abort_spawned(&self) {
        for s in self
            .spawned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            s.handle.abort();
        }
    }
}

/// The result of a finished task without awaiting (it is finished).
fn futures_now(
    handle: JoinHandle<Result<RunOutcome, AgentError>>,
) -> Result<Result<RunOutcome, AgentError>, tokio::task::JoinError> {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut handle = std::pin::pin!(handle);
    match std::future::Future::poll(handle.as_mut(), &mut cx) {
        std::task::Poll::Ready(r) => r,
        // `is_finished` said it was done; a pending poll cannot happen, but answer sensibly.
        std::task::Poll::Pending => Ok(Err(AgentError::Cancelled)),
    }
}

/// The agent tools for `agent` at `depth`, each only when its allow map offers it.
pub(crate) fn agent_tools(
    runtime: &Arc<Runtime>,
    depth: u32,
    agent: &AgentSpec,
    names: &BTreeSet<String>,
    state: &Arc<RunState>,
) -> Vec<Arc<dyn DynTool>> {
    let mut out = vec![typed(Finish {
        state: Arc::clone(state),
    })];
    let top = depth == 0;
    if top && agent.tools.allows("message") {
        out.push(typed(SendMessage {
            runtime: Arc::clone(runtime),
            depth,
            webhook: OnceLock::new(),
        }));
    }
    // A subagent may delegate only when its own allow map names `delegate` explicitly; the
    // depth limit caps the nesting either way.
    let may_delegate = if top {
        agent.tools.allows("delegate")
    } else {
        agent.tools.0.get("delegate") == Some(&true)
    };
    if may_delegate && depth < runtime.settings.max_depth {
        out.push(typed(Delegate {
            runtime: Arc::clone(runtime),
            depth,
            inherited: names.clone(),
        }));
    }
    if top && agent.tools.allows("spawn") && depth < runtime.settings.max_depth {
        out.push(typed(Spawn {
            runtime: Arc::clone(runtime),
            depth,
            inherited: names.clone(),
            state: Arc::clone(state),
        }));
    }
    out
}

/// The specs of the agent tools (`finish`, `message`, `delegate`, `spawn`) as a top-level
/// agent with every tool sees them: for schema checks and documentation.
pub fn agent_tool_specs() -> Vec<tool_core::ToolSpec> {
    #[derive(Debug)]
    struct Offline;
    #[async_trait]
    impl crate::provider::ModelProvider for Offline {
        fn name(&self) -> &'static str {
            "offline"
        }
        async fn complete(
            &self,
            _request: &crate::provider::ChatRequest,
            _stream: Option<crate::provider::StreamSink<'_>>,
            _cancel: &tool_core::CancellationToken,
        ) -> Result<crate::provider::ChatResponse, crate::provider::ProviderError> {
            Err(crate::provider::ProviderError::Connect(
                "this runtime only describes tools".into(),
            ))
        }
    }
    let runtime = Arc::new(Runtime::new(
        Arc::new(Offline),
        "none",
        tool_core::Registry::new(),
    ));
    let state = Arc::new(RunState::default());
    agent_tools(
        &runtime,
        0,
        &AgentSpec::default_agent(),
        &BTreeSet::new(),
        &state,
    )
    .iter()
    .map(|t| t.spec().clone())
    .collect()
}

// ---- finish ------------------------------------------------------------------------------

/// Arguments of `finish`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FinishArgs {
    /// The final answer for the user: what was done, and anything they must know.
    #[serde(default)]
    pub message: Option<String>,
}

/// `finish`: ends the run.
#[derive(Debug)]
struct Finish {
    state: Arc<RunState>,
}

#[async_trait]
impl Tool for Finish {
    const NAME: &'static str = "finish";
    type Args = FinishArgs;

    fn description(&self) -> String {
        "End the task: call this when the work is done (or cannot be done), with the final \
         answer for the user. Other calls of the same turn still run first."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn access(&self, _ctx: &ToolContext, _args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        Ok(Vec::new())
    }

    async fn call(&self, _ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        *self.state.finish.lock().unwrap_or_else(|e| e.into_inner()) = Some(args.message);
        Ok(ToolOutput::text("Finished."))
    }
}

// ---- message -----------------------------------------------------------------------------

/// Arguments of `message`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageArgs {
    /// The message for the user (at most 4,000 characters).
    pub content: String,
    /// `console` (default), `file` or `webhook`, as configured.
    #[serde(default)]
    pub channel: Option<String>,
}

/// `message`: tell the user something now, while the work goes on.
#[derive(Debug)]
struct SendMessage {
    runtime: Arc<Runtime>,
    depth: u32,
    /// The webhook channel's endpoint, set up on its first message.
    webhook: OnceLock<Result<Endpoint, EndpointError>>,
}

impl SendMessage {
    fn channel<'a>(&self, args: &'a MessageArgs) -> Result<&'a str, ToolError> {
        let channel = args.channel.as_deref().unwrap_or("console");
        let configured = match channel {
            "console" => true,
            "file" => self.runtime.channels.file.is_some(),
            "webhook" => self.runtime.channels.webhook.is_some(),
            _ => false,
        };
        if !configured {
            let mut have = vec!["console"];
            if self.runtime.channels.file.is_some() {
                have.push("file");
            }
            if self.runtime.channels.webhook.is_some() {
                have.push("webhook");
            }
            return Err(ToolError::InvalidArgs {
                path: "/channel".into(),
                message: format!(
                    "`{channel}` is not a configured channel; use one of: {}",
                    have.join(", ")
                ),
            });
        }
        if args.content.trim().is_empty() || args.content.chars().count() > 4000 {
            return Err(ToolError::InvalidArgs {
                path: "/content".into(),
                message: "give a message of 1 to 4,000 characters".into(),
            });
        }
        Ok(channel)
    }
}

impl SendMessage {
    /// POSTs `{"content": …}` to the configured webhook.
    async fn post_webhook(
        &self,
        cancel: &tool_core::CancellationToken,
        content: &str,
    ) -> Result<(), ToolError> {
        /// The most of the webhook's answer that is read: only its status matters.
        const MAX_ANSWER_BYTES: usize = 64 * 1024;
        let console = "tell the user on the console instead";
        let raw = self.runtime.channels.webhook.as_deref().unwrap_or_default();
        let endpoint = self
            .webhook
            .get_or_init(|| Endpoint::new("the webhook", raw, &NetConfig::default()))
            .as_ref()
            .map_err(|e| ToolError::Failed(format!("{e} Until then, {console}.")))?;
        let request = Request::new(
            Method::POST,
            endpoint.url().clone(),
            Duration::from_secs(15),
            MAX_ANSWER_BYTES,
        )
        .json(&json!({ "content": content }));
        let answer = endpoint
            .send(cancel, request)
            .await
            .map_err(|e| match e.kind() {
                EndpointErrorKind::Cancelled => ToolError::Cancelled,
                EndpointErrorKind::Timeout => {
                    ToolError::Timeout(format!("{e} Meanwhile, {console}."))
                }
                _ => ToolError::Failed(format!("{e} Meanwhile, {console}.")),
            })?;
        if !answer.status.is_success() {
            return Err(ToolError::Failed(format!(
                "The webhook answered HTTP {}; {console}.",
                answer.status.as_u16()
            )));
        }
        Ok(())
    }
}

#[async_trait]
impl Tool for SendMessage {
    const NAME: &'static str = "message";
    type Args = MessageArgs;

    fn description(&self) -> String {
        "Send the user a message now (progress, a question, a warning) without ending the task: \
         to the console by default, or to the file or webhook channel when configured."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::ADDITIVE.open_world(true)
    }

    fn access(&self, _ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        let channel = self.channel(args)?;
        Ok(match channel {
            "webhook" => {
                let url = self.runtime.channels.webhook.as_deref().unwrap_or_default();
                let host = Url::parse(url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_owned))
                    .unwrap_or_else(|| url.to_owned());
                vec![Access::Network { host }]
            }
            other => vec![Access::State {
                store: format!("messages:{other}"),
                write: true,
            }],
        })
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let channel = self.channel(&args)?.to_owned();
        match channel.as_str() {
            "file" => {
                let path = self.runtime.channels.file.clone().unwrap_or_default();
                let line = format!("{}\n", json!({ "content": args.content }));
                append_line(&path, &line).map_err(|e| {
                    ToolError::Failed(format!(
                        "The message could not be written to {}: {e}. Tell the user on the console instead.",
                        path.display()
                    ))
                })?;
            }
            "webhook" => self.post_webhook(&ctx.cancel, &args.content).await?,
            _ => self.runtime.emit(AgentEvent::Message {
                depth: self.depth,
                content: args.content.clone(),
            }),
        }
        Ok(ToolOutput::text(format!("Sent to {channel}.")))
    }
}

/// Appends `line` to `path`: the channel file is the operator's, outside the workspace.
#[allow(clippy::disallowed_methods)]
fn append_line(path: &std::path::Path, line: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(line.as_bytes())
}

// ---- delegate ----------------------------------------------------------------------------

/// Arguments of `delegate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DelegateArgs {
    /// The named agent to hand the work to (from the configuration; `default` always exists).
    pub agent: String,
    /// What it should do, as a complete task: it sees nothing of this conversation.
    pub prompt: String,
    /// Facts it needs from this conversation (file names, decisions, constraints).
    #[serde(default)]
    pub context: Option<String>,
}

/// `delegate`: run a named agent on a sub-task and wait for its answer.
#[derive(Debug)]
struct Delegate {
    runtime: Arc<Runtime>,
    depth: u32,
    inherited: BTreeSet<String>,
}

#[async_trait]
impl Tool for Delegate {
    const NAME: &'static str = "delegate";
    type Args = DelegateArgs;

    fn description(&self) -> String {
        let mut names: Vec<&str> = self.runtime.agents.keys().map(String::as_str).collect();
        if !names.contains(&"default") {
            names.insert(0, "default");
        }
        format!(
            "Hand a self-contained sub-task to a named agent and wait for its answer. It works \
             with a subset of your tools (never more), sees only the prompt and context you \
             give, and cannot schedule jobs, write memory or message the user. Agents: {}.",
            names.join(", ")
        )
    }

    fn annotations(&self) -> Annotations {
        // What the subagent does is checked call by call through the same policy.
        Annotations::ADDITIVE
    }

    fn access(&self, _ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        self.runtime
            .agent(&args.agent)
            .map_err(|message| ToolError::InvalidArgs {
                path: "/agent".into(),
                message,
            })?;
        Ok(vec![Access::State {
            store: format!("agent:{}", args.agent),
            write: false,
        }])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let spec = self
            .runtime
            .agent(&args.agent)
            .map_err(|message| ToolError::InvalidArgs {
                path: "/agent".into(),
                message,
            })?;
        if args.prompt.trim().is_empty() {
            return Err(ToolError::InvalidArgs {
                path: "/prompt".into(),
                message: "give the sub-task to do".into(),
            });
        }
        let mut prompt = args.prompt.clone();
        if let Some(context) = args.context.as_deref().filter(|c| !c.trim().is_empty()) {
            prompt.push_str("\n\nContext:\n");
            prompt.push_str(context);
        }
        let outcome = run_child(
            &self.runtime,
            self.depth + 1,
            &spec,
            &self.inherited,
            prompt,
            ctx,
            &args.agent,
        )
        .await?;
        Ok(
            ToolOutput::text(outcome.answer.clone()).with_structured(json!({
                "agent": args.agent,
                "iterations": outcome.iterations,
            })),
        )
    }
}

/// Runs a subagent to its end, within the concurrency limit.
async fn run_child(
    runtime: &Arc<Runtime>,
    depth: u32,
    spec: &AgentSpec,
    inherited: &BTreeSet<String>,
    prompt: String,
    ctx: &ToolContext,
    label: &str,
) -> Result<RunOutcome, ToolError> {
    let _permit = tokio::select! {
        p = Arc::clone(&runtime.subagents).acquire_owned() => p.map_err(|_| ToolError::Failed("The run is ending; no subagent can start.".into()))?,
        () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
    };
    runtime.emit(AgentEvent::SubagentStarted {
        depth,
        label: label.to_owned(),
    });
    let mut messages = vec![Message::user(prompt)];
    Box::pin(runtime.run_at(depth, spec, inherited, &mut messages, ctx, None))
        .await
        .map_err(|e| match e {
            AgentError::Cancelled => ToolError::Cancelled,
            other => ToolError::Failed(format!(
                "The subagent `{label}` stopped: {other}. Do the sub-task yourself or try again later."
            )),
        })
}

// ---- spawn -------------------------------------------------------------------------------

/// Arguments of `spawn`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnArgs {
    /// The task, complete in itself: the subagent sees nothing of this conversation.
    pub task: String,
    /// A short name to recognise its result by.
    #[serde(default)]
    pub label: Option<String>,
}

/// `spawn`: start a subagent in the background; its result arrives in a later turn.
#[derive(Debug)]
struct Spawn {
    runtime: Arc<Runtime>,
    depth: u32,
    inherited: BTreeSet<String>,
    state: Arc<RunState>,
}

#[async_trait]
impl Tool for Spawn {
    const NAME: &'static str = "spawn";
    type Args = SpawnArgs;

    fn description(&self) -> String {
        "Start a subagent on a self-contained task in the background and go on working; its \
         answer is added to the conversation when it finishes (and before the run ends). It \
         has a subset of your tools, and cannot schedule jobs, write memory or message the user."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::ADDITIVE
    }

    fn access(&self, _ctx: &ToolContext, _args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        Ok(vec![Access::State {
            store: "agent:spawn".into(),
            write: false,
        }])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        if args.task.trim().is_empty() {
            return Err(ToolError::InvalidArgs {
                path: "/task".into(),
                message: "give the task to do".into(),
            });
        }
        let id = {
            let mut next = self
                .state
                .next_spawn
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            *next += 1;
            *next
        };
        let label = args
            .label
            .clone()
            .filter(|l| !l.trim().is_empty())
            .unwrap_or_else(|| format!("task {id}"));
        let spec = AgentSpec {
            name: "spawned".into(),
            system_prompt: DEFAULT_SYSTEM_PROMPT.into(),
            tools: ToolFilter::all(),
            model: None,
            max_iterations: 25,
        };
        let runtime = Arc::clone(&self.runtime);
        let inherited = self.inherited.clone();
        // The child keeps the parent's policy and workspace, with a cancellation token tied to
        // the parent's run.
        let child_ctx = ctx.for_call();
        let depth = self.depth + 1;
        let task_label = label.clone();
        let handle = tokio::spawn(async move {
            run_child(
                &runtime,
                depth,
                &spec,
                &inherited,
                args.task,
                &child_ctx,
                &task_label,
            )
            .await
            .map_err(|e| match e {
                ToolError::Cancelled => AgentError::Cancelled,
                other => AgentError::Session(other.to_string()),
            })
        });
        self.state
            .spawned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Spawned {
                id,
                label: label.clone(),
                handle,
            });
        Ok(ToolOutput::text(format!(
            "Started subagent #{id} `{label}`; its answer will arrive in a later turn."
        ))
        .with_structured(json!({ "id": id, "label": label })))
    }
}
