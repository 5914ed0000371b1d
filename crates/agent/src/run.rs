//! The loop: ask the model, run the tools it calls through the policy stack, feed the results
//! back, until it answers, calls `finish`, or runs out of iterations.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;
use tool_core::{
    Approver, AuditSink, NoApprover, Registry, Stack, ToolContext, ToolError, ToolSpec,
};

use crate::event::{AgentEvent, EventSink};
use crate::message::{Message, Part, ToolCall, ToolResult};
use crate::provider::{ChatRequest, ModelProvider, ProviderError, StreamEvent, Usage};
use crate::spec::{AgentSpec, SUBAGENT_EXCLUDED};
use crate::tools::{self, Channels, RunState};

/// Settings of every run of a [`Runtime`].
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// The most tokens one answer may have (4096).
    pub max_tokens: u32,
    /// Sampling temperature, when set.
    pub temperature: Option<f32>,
    /// Ask for streamed answers (true).
    pub stream: bool,
    /// A tool result longer than this many bytes is cut head + tail (20,000).
    pub max_result_bytes: usize,
    /// How deep subagents may nest (3).
    pub max_depth: u32,
    /// How many subagents may run at once across the run (4).
    pub max_concurrent_subagents: usize,
    /// After this many identical failed calls, the next identical call is not run (2).
    pub repeat_limit: u32,
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            max_tokens: 4096,
            temperature: None,
            stream: true,
            max_result_bytes: 20_000,
            max_depth: 3,
            max_concurrent_subagents: 4,
            repeat_limit: 2,
        }
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishedBy {
    /// The model answered without calling a tool.
    Answer,
    /// The model called `finish`.
    FinishTool,
    /// The iteration limit was reached.
    MaxIterations,
}

/// The end of a run.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The final answer (the `finish` message, or the model's last text).
    pub answer: String,
    /// Why it ended.
    pub finished_by: FinishedBy,
    /// Model calls made.
    pub iterations: u32,
    /// Tokens used, subagents included.
    pub usage: Usage,
}

/// A run that could not finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model call failed after retries.
    #[error("{0}")]
    Provider(#[from] ProviderError),
    /// The run was cancelled.
    #[error("the run was cancelled")]
    Cancelled,
    /// Saving the session failed.
    #[error("the session could not be saved: {0}")]
    Session(String),
}

/// Called with every message appended to the conversation (to persist it).
pub type Persist<'a> = &'a (dyn Fn(&Message) -> Result<(), String> + Send + Sync);

/// Everything a run and its subagents share: the model, the tools, who approves, the named
/// agents and the limits.
pub struct Runtime {
    pub(crate) provider: Arc<dyn ModelProvider>,
    pub(crate) model: String,
    pub(crate) tools: Registry,
    pub(crate) approver: Arc<dyn Approver>,
    pub(crate) audit: Option<Arc<dyn AuditSink>>,
    pub(crate) agents: BTreeMap<String, AgentSpec>,
    pub(crate) settings: RunSettings,
    pub(crate) events: EventSink,
    pub(crate) channels: Channels,
    pub(crate) subagents: Arc<Semaphore>,
    pub(crate) usage: Mutex<Usage>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("provider", &self.provider.name())
            .field("model", &self.model)
            .field("tools", &self.tools.names())
            .field("agents", &self.agents.keys().collect::<Vec<_>>())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// A runtime for `model` on `provider`, offering the tools of `tools` (never more: the
    /// agent tools `finish`, `message`, `delegate` and `spawn` are added per agent).
    pub fn new(
        provider: Arc<dyn ModelProvider>,
        model: impl Into<String>,
        tools: Registry,
    ) -> Self {
        let settings = RunSettings::default();
        Runtime {
            provider,
            model: model.into(),
            tools,
            approver: Arc::new(NoApprover),
            audit: None,
            agents: BTreeMap::new(),
            subagents: Arc::new(Semaphore::new(settings.max_concurrent_subagents)),
            settings,
            events: Arc::new(|_| {}),
            channels: Channels::default(),
            usage: Mutex::new(Usage::default()),
        }
    }

    /// Who answers the policy's `Ask` (the CLI's terminal prompt, `--yes`); by default no one,
    /// so such calls fail with a sentence the model can act on.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    /// Where audit records of tool calls go.
    pub fn with_audit(mut self, audit: Arc<dyn AuditSink>) -> Self {
        self.audit = Some(audit);
        self
    }

    /// The named agents `delegate` may start.
    pub fn with_agents(mut self, agents: impl IntoIterator<Item = AgentSpec>) -> Self {
        self.agents = agents.into_iter().map(|a| (a.name.clone(), a)).collect();
        self
    }

    /// The settings.
    pub fn with_settings(mut self, settings: RunSettings) -> Self {
        self.subagents = Arc::new(Semaphore::new(settings.max_concurrent_subagents.max(1)));
        self.settings = settings;
        self
    }

    /// Where progress goes.
    pub fn with_events(mut self, events: EventSink) -> Self {
        self.events = events;
        self
    }

    /// Where the `message` tool delivers.
    pub fn with_channels(mut self, channels: Channels) -> Self {
        self.channels = channels;
        self
    }

    /// The named agent `name`, or an error listing the names.
    pub fn agent(&self, name: &str) -> Result<AgentSpec, String> {
        if name == "default" && !self.agents.contains_key("default") {
            return Ok(AgentSpec::default_agent());
        }
        self.agents.get(name).cloned().ok_or_else(|| {
            let mut names: Vec<&str> = self.agents.keys().map(String::as_str).collect();
            if !names.contains(&"default") {
                names.insert(0, "default");
            }
            format!(
                "there is no agent `{name}`; the agents are: {}",
                names.join(", ")
            )
        })
    }

    pub(crate) fn emit(&self, event: AgentEvent) {
        (self.events)(event);
    }

    /// Runs `agent` on `messages` (which end with the user's new message), appending every
    /// new message to `messages` and handing it to `persist`.
    pub async fn run(
        self: &Arc<Self>,
        agent: &AgentSpec,
        messages: &mut Vec<Message>,
        ctx: &ToolContext,
        persist: Option<Persist<'_>>,
    ) -> Result<RunOutcome, AgentError> {
        let names: BTreeSet<String> = self.tools.names().into_iter().map(String::from).collect();
        self.run_at(0, agent, &names, messages, ctx, persist).await
    }

    /// The tool names `agent` gets at `depth`, from what its parent had (`inherited`).
    pub(crate) fn tool_names(
        &self,
        depth: u32,
        agent: &AgentSpec,
        inherited: &BTreeSet<String>,
    ) -> BTreeSet<String> {
        // Allow maps and the exclusions name tools canonically: under a profile, `run_command`
        // is `shell`, and `shell = false` must keep it out.
        inherited
            .iter()
            .filter(|n| {
                let canonical = self.tools.canonical(n).unwrap_or(n);
                agent.tools.allows(n)
                    && agent.tools.allows(canonical)
                    // A tool that does the job of one the map refuses is refused with it
                    // (`schedule` with `cron_add = false`).
                    && !self
                        .tools
                        .same_job(n)
                        .iter()
                        .any(|other| agent.tools.refuses(other))
                    && (depth == 0
                        || !(SUBAGENT_EXCLUDED.contains(&n.as_str())
                            || SUBAGENT_EXCLUDED.contains(&canonical)))
            })
            .cloned()
            .collect()
    }

    pub(crate) async fn run_at(
        self: &Arc<Self>,
        depth: u32,
        agent: &AgentSpec,
        inherited: &BTreeSet<String>,
        messages: &mut Vec<Message>,
        ctx: &ToolContext,
        persist: Option<Persist<'_>>,
    ) -> Result<RunOutcome, AgentError> {
        let names = self.tool_names(depth, agent, inherited);
        let state = Arc::new(RunState::default());
        let mut registry = self.tools.subset(names.iter().map(String::as_str));
        let agent_tools = tools::agent_tools(self, depth, agent, &names, &state);
        registry
            .register_all(agent_tools)
            .map_err(|e| AgentError::Session(e.to_string()))?;
        let mut stack = Stack::new(registry).with_approver(Arc::clone(&self.approver));
        if let Some(audit) = &self.audit {
            stack = stack.with_audit(Arc::clone(audit));
        }
        let mut turn = Turn {
            runtime: self,
            depth,
            agent,
            stack: &stack,
            state: &state,
            ctx,
            persist,
            failures: HashMap::new(),
            recalled: Vec::new(),
            usage: Usage::default(),
        };
        let result = turn.run(messages).await;
        *self.usage.lock().unwrap_or_else(|e| e.into_inner()) += turn.usage;
        state.abort_spawned();
        result
    }
}

/// One agent's loop.
struct Turn<'a> {
    runtime: &'a Arc<Runtime>,
    depth: u32,
    agent: &'a AgentSpec,
    stack: &'a Stack,
    state: &'a Arc<RunState>,
    ctx: &'a ToolContext,
    persist: Option<Persist<'a>>,
    /// Failed calls by (tool, canonical arguments): how often, and the last error.
    failures: HashMap<(String, String), (u32, String)>,
    /// Contents memory_recall / memory_list returned in this run (folded).
    recalled: Vec<String>,
    usage: Usage,
}

impl Turn<'_> {
    fn push(&self, messages: &mut Vec<Message>, message: Message) -> Result<(), AgentError> {
        if let Some(persist) = self.persist {
            persist(&message).map_err(AgentError::Session)?;
        }
        messages.push(message);
        Ok(())
    }

    async fn run(&mut self, messages: &mut Vec<Message>) -> Result<RunOutcome, AgentError> {
        let specs: Vec<ToolSpec> = self.stack.registry().specs().into_iter().cloned().collect();
        let model = self
            .agent
            .model
            .clone()
            .unwrap_or_else(|| self.runtime.model.clone());
        let settings = &self.runtime.settings;
        let mut last_text = String::new();
        for iteration in 1..=self.agent.max_iterations.max(1) {
            if self.ctx.cancel.is_cancelled() {
                return Err(AgentError::Cancelled);
            }
            let request = ChatRequest {
                model: model.clone(),
                system: Some(self.agent.system_prompt.clone()),
                messages: messages.clone(),
                tools: specs.clone(),
                max_tokens: settings.max_tokens,
                temperature: settings.temperature,
            };
            let depth = self.depth;
            let runtime = Arc::clone(self.runtime);
            let sink = move |event: StreamEvent| match event {
                StreamEvent::Text(delta) => runtime.emit(AgentEvent::Text { depth, delta }),
                StreamEvent::Retrying {
                    attempt,
                    after,
                    reason,
                } => runtime.emit(AgentEvent::Retrying {
                    depth,
                    attempt,
                    after,
                    reason,
                }),
                _ => {}
            };
            let response = self
                .runtime
                .provider
                .complete(
                    &request,
                    settings.stream.then_some(&sink as _),
                    &self.ctx.cancel,
                )
                .await
                .map_err(|e| match e {
                    ProviderError::Cancelled => AgentError::Cancelled,
                    other => AgentError::Provider(other),
                })?;
            self.usage += response.usage;
            let assistant = Message::Assistant {
                content: response.content,
            };
            let text = assistant.text();
            if !settings.stream && !text.is_empty() {
                self.runtime.emit(AgentEvent::Text {
                    depth,
                    delta: text.clone(),
                });
            }
            self.runtime.emit(AgentEvent::TurnEnd { depth });
            if !text.trim().is_empty() {
                last_text = text.clone();
            }
            let calls: Vec<ToolCall> = assistant.tool_calls().into_iter().cloned().collect();
            if assistant.parts().is_empty() {
                // Nothing to record (providers refuse empty turns): the model has no more to say.
                return Ok(self.outcome(last_text, FinishedBy::Answer, iteration));
            }
            self.push(messages, assistant)?;
            if calls.is_empty() {
                // Subagents still working: wait for them and let the model read their results.
                let notes = self.state.wait_spawned().await;
                if notes.is_empty() {
                    return Ok(self.outcome(last_text, FinishedBy::Answer, iteration));
                }
                let content = notes.into_iter().map(|text| Part::Text { text }).collect();
                self.push(messages, Message::User { content })?;
                continue;
            }
            let mut content: Vec<Part> = self
                .execute(&calls)
                .await?
                .into_iter()
                .map(Part::ToolResult)
                .collect();
            content.extend(
                self.state
                    .finished_spawned()
                    .into_iter()
                    .map(|text| Part::Text { text }),
            );
            self.push(messages, Message::User { content })?;
            if let Some(message) = self.state.take_finish() {
                let answer = message
                    .filter(|m| !m.trim().is_empty())
                    .unwrap_or(last_text);
                return Ok(self.outcome(answer, FinishedBy::FinishTool, iteration));
            }
        }
        let note = format!(
            "(stopped after {} model calls, the iteration limit; the task may be unfinished)",
            self.agent.max_iterations
        );
        let answer = if last_text.is_empty() {
            note
        } else {
            format!("{last_text}\n\n{note}")
        };
        Ok(self.outcome(answer, FinishedBy::MaxIterations, self.agent.max_iterations))
    }

    fn outcome(&self, answer: String, finished_by: FinishedBy, iterations: u32) -> RunOutcome {
        RunOutcome {
            answer,
            finished_by,
            iterations,
            usage: self.usage,
        }
    }

    /// Runs the calls of one turn: consecutive read-only calls together, the others one at a
    /// time in order. Results come back in the order of the calls.
    async fn execute(&mut self, calls: &[ToolCall]) -> Result<Vec<ToolResult>, AgentError> {
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        let mut i = 0;
        while i < calls.len() {
            let mut j = i;
            while j < calls.len() && self.read_only(&calls[j].name) {
                j += 1;
            }
            if j > i {
                let batch = calls[i..j].iter().map(|c| self.call_one(c));
                let done = futures_join(batch).await;
                for (k, r) in done.into_iter().enumerate() {
                    results[i + k] = Some(r?);
                }
                i = j;
            } else {
                results[i] = Some(self.call_one(&calls[i]).await?);
                i += 1;
            }
        }
        let results: Vec<ToolResult> = results.into_iter().flatten().collect();
        for (call, result) in calls.iter().zip(&results) {
            self.remember_outcome(call, result);
        }
        Ok(results)
    }

    fn read_only(&self, name: &str) -> bool {
        self.stack
            .registry()
            .spec(name)
            .is_some_and(|s| s.annotations.read_only)
    }

    /// One call, through the stack, after the loop's own guards.
    async fn call_one(&self, call: &ToolCall) -> Result<ToolResult, AgentError> {
        let depth = self.depth;
        self.runtime.emit(AgentEvent::ToolCall {
            depth,
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        });
        let result = match self.refusal(call) {
            Some(sentence) => Err(sentence),
            None => {
                let args = if call.arguments.trim().is_empty() {
                    "{}"
                } else {
                    call.arguments.as_str()
                };
                match self
                    .stack
                    .call_json(&call.name, args, self.ctx.for_call())
                    .await
                {
                    Ok(out) => {
                        let mut text = out.joined_text();
                        let images = out.content.len()
                            - out
                                .content
                                .iter()
                                .filter(|c| matches!(c, tool_core::Content::Text { .. }))
                                .count();
                        if images > 0 {
                            text.push_str(&format!(
                                "\n({images} image(s) returned; not shown to the model)"
                            ));
                        }
                        Ok(text)
                    }
                    Err(ToolError::Cancelled) => return Err(AgentError::Cancelled),
                    Err(e) => Err(e.to_string()),
                }
            }
        };
        let (content, is_error) = match result {
            Ok(text) => (text, false),
            Err(text) => (text, true),
        };
        let (content, _) = tool_core::truncate::head_tail(
            &content,
            self.runtime.settings.max_result_bytes,
            "ask for less (a narrower range, a more specific pattern)",
        );
        self.runtime.emit(AgentEvent::ToolResult {
            depth,
            name: call.name.clone(),
            is_error,
            content: content.clone(),
        });
        Ok(ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content,
            is_error,
        })
    }

    /// The loop's own refusals: unknown tools (with the list of real ones), a call that already
    /// failed `repeat_limit` times with the same arguments, and re-storing recalled memory.
    fn refusal(&self, call: &ToolCall) -> Option<String> {
        let registry = self.stack.registry();
        if registry.spec(&call.name).is_none() {
            return Some(format!(
                "There is no tool `{}` here; the tools you can call are: {}. Use one of them.",
                call.name,
                registry.names().join(", ")
            ));
        }
        let key = (call.name.clone(), canonical(&call.arguments));
        if let Some((count, last)) = self.failures.get(&key)
            && *count >= self.runtime.settings.repeat_limit
        {
            return Some(format!(
                "This exact `{}` call already failed {count} times (last: {last}); it was not run again. Change the arguments or take another approach.",
                call.name
            ));
        }
        if matches!(call.name.as_str(), "memory_store" | "remember")
            && let Ok(serde_json::Value::Object(args)) =
                serde_json::from_str::<serde_json::Value>(&call.arguments)
        {
            let stored = args
                .get("content")
                .or_else(|| args.get("value"))
                .and_then(|v| v.as_str())
                .map(tool_core::frame::fold)
                .unwrap_or_default();
            if !stored.is_empty()
                && self
                    .recalled
                    .iter()
                    .any(|r| r == &stored || (r.len() >= 40 && stored.contains(r.as_str())))
            {
                return Some(
                    "This content is what a memory recall returned in this run: it is stored already, and storing it again would make every later recall repeat it. Store only new facts.".into(),
                );
            }
        }
        None
    }

    fn remember_outcome(&mut self, call: &ToolCall, result: &ToolResult) {
        let key = (call.name.clone(), canonical(&call.arguments));
        if result.is_error {
            let entry = self.failures.entry(key).or_insert((0, String::new()));
            entry.0 += 1;
            entry.1 = tool_core::truncate::cut_line(&result.content, 200).into_owned();
        } else {
            self.failures.remove(&key);
            if matches!(
                call.name.as_str(),
                "memory_recall" | "memory_list" | "recall"
            ) {
                self.recalled.extend(recalled_contents(&result.content));
            }
        }
    }
}

/// Runs futures concurrently and collects their outputs in order.
async fn futures_join<F, T>(futures: impl Iterator<Item = F>) -> Vec<T>
where
    F: std::future::Future<Output = T>,
{
    let futures: Vec<_> = futures.map(Box::pin).collect();
    let mut outputs = Vec::with_capacity(futures.len());
    // A small join_all: poll every future until all are ready.
    let mut slots: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    let mut futures: Vec<Option<_>> = futures.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, fut) in slots.iter_mut().zip(futures.iter_mut()) {
            if let Some(f) = fut {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        *slot = Some(v);
                        *fut = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.extend(slots.into_iter().flatten());
    outputs
}

/// Arguments as canonical JSON (sorted keys) when they parse, else as written.
fn canonical(arguments: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(v) => v.to_string(),
        Err(_) => arguments.trim().to_owned(),
    }
}

/// The tag of the frame tools-memory shows every recalled memory in.
const RECALL_FRAME: &str = "recalled_memory";

/// The contents of the `<recalled_memory …>…</recalled_memory>` blocks of a recall's output,
/// folded ([`tool_core::frame::fold`]: width, case, invisible characters and spacing do not
/// count) for comparing with what the model stores. The tags are found with
/// [`tool_core::frame::find_tags`], the search tools-memory's own guard uses.
fn recalled_contents(output: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut open: Option<usize> = None;
    for tag in tool_core::frame::find_tags(output, RECALL_FRAME) {
        match (tag.closing, open) {
            (false, _) if tag.complete => open = Some(tag.range.end),
            (false, _) => {
                // The body starts after the opening tag's `>` (its attributes come first).
                open = output[tag.range.end..]
                    .find('>')
                    .map(|at| tag.range.end + at + 1);
            }
            (true, Some(start)) if start <= tag.range.start => {
                // Each line of the body carries the frame's mark (`│ `), which the memory did
                // not hold.
                let body = tool_core::frame::unmark_lines(&output[start..tag.range.start]);
                let content = tool_core::frame::fold(&body);
                if !content.is_empty() {
                    found.push(content);
                }
                open = None;
            }
            (true, _) => open = None,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recalled_blocks_are_extracted() {
        let out = "Found 3:\n<recalled_memory key=\"a\" category=\"core\">\nThe user  likes tea.\n</recalled_memory>\n<recalled_memory key=\"b\">Deploys on Fridays are banned.</recalled_memory><RECALLED_MEMORY>Ｎｏ\u{200B}\u{00A0}cake > pie.</recalled_memory>";
        assert_eq!(
            recalled_contents(out),
            [
                "the user likes tea.",
                "deploys on fridays are banned.",
                "no cake > pie."
            ]
        );
        // As tools-memory shows them: every line of the body marked.
        let marked = format!(
            "<recalled_memory key=\"a\">\n{}</recalled_memory>",
            tool_core::frame::mark_lines("The user\nlikes tea.")
        );
        assert_eq!(recalled_contents(&marked), ["the user likes tea."]);
        assert_eq!(
            canonical(r#"{"b":1, "a":2}"#),
            canonical(r#"{"a":2,"b":1}"#)
        );
    }
}
