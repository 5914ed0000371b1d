//! The layer stack every call goes through, outermost first:
//!
//! 1. **audit** — records every call, including refusals and timeouts;
//! 2. **validate** — strict JSON, schema check with field paths, typed parse, access list;
//! 3. **permission** — the policy decides; `Ask` goes to the [`Approver`] (its time is not
//!    charged to the tool);
//! 4. **rate limit** — calls per minute;
//! 5. **timeout / cancel** — the deadline and the caller's cancellation stop the tool (its task
//!    is aborted, and child processes die with their process group);
//! 6. **truncate** — head + tail, UTF-8 safe, innermost so the model and the audit log see the
//!    same output;
//! 7. the tool.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::approve::{Approval, Approver, NoApprover};
use crate::context::ToolContext;
use crate::error::{ApprovalRequest, ErrorKind, ToolError};
use crate::output::{Content, ToolOutput};
use crate::policy::{Access, Decision};
use crate::registry::Registry;

/// One line of the audit log.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AuditRecord {
    /// The call's id.
    pub call_id: String,
    /// The tool's canonical name (`file_write`), whatever a profile calls it.
    pub tool: String,
    /// The name the call used when it was not the canonical one (a profile's `write_file`).
    pub called_as: Option<String>,
    /// The policy's decision, when the call got that far.
    pub decision: Option<Decision>,
    /// Whether a human approved it.
    pub approved: bool,
    /// What the call touched (or wanted to).
    pub accesses: Vec<String>,
    /// `ok` or the error kind.
    pub outcome: String,
    /// The error's message, for failures.
    pub error: Option<String>,
    /// Wall time, including approval.
    pub duration_ms: u64,
    /// Bytes of text output returned.
    pub output_bytes: usize,
    /// Whether the output was cut.
    pub truncated: bool,
}

/// Where audit records go.
pub trait AuditSink: Send + Sync + fmt::Debug {
    /// Records one finished call.
    fn record(&self, record: &AuditRecord);
}

/// Writes audit records as `tracing` events (target `toolshed::audit`).
#[derive(Debug, Clone, Copy, Default)]
pub struct TracingAudit;

impl AuditSink for TracingAudit {
    fn record(&self, r: &AuditRecord) {
        tracing::info!(
            target: "toolshed::audit",
            call_id = %r.call_id,
            tool = %r.tool,
            called_as = r.called_as.as_deref(),
            decision = ?r.decision,
            outcome = %r.outcome,
            duration_ms = r.duration_ms,
            output_bytes = r.output_bytes,
            truncated = r.truncated,
            "tool call"
        );
    }
}

/// Keeps audit records in memory (tests, the agent's transcript).
#[derive(Debug, Clone, Default)]
pub struct MemoryAudit(Arc<Mutex<Vec<AuditRecord>>>);

impl MemoryAudit {
    /// The records so far.
    pub fn records(&self) -> Vec<AuditRecord> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl AuditSink for MemoryAudit {
    fn record(&self, record: &AuditRecord) {
        if let Ok(mut v) = self.0.lock() {
            v.push(record.clone());
        }
    }
}

/// A sliding-window limit of calls per minute.
#[derive(Debug)]
struct RateLimiter {
    per_minute: usize,
    window: Mutex<VecDeque<Instant>>,
}

impl RateLimiter {
    fn check(&self) -> Result<(), ToolError> {
        let now = Instant::now();
        let minute = Duration::from_secs(60);
        let mut w = self
            .window
            .lock()
            .map_err(|_| ToolError::internal("rate limiter lock poisoned"))?;
        while w.front().is_some_and(|t| now.duration_since(*t) >= minute) {
            w.pop_front();
        }
        if w.len() >= self.per_minute {
            let wait = w
                .front()
                .map(|t| minute.saturating_sub(now.duration_since(*t)))
                .unwrap_or(minute);
            return Err(ToolError::Failed(format!(
                "The rate limit of {} calls per minute is reached; wait {} seconds before the next call.",
                self.per_minute,
                wait.as_secs().max(1)
            )));
        }
        w.push_back(now);
        Ok(())
    }
}

/// The registry plus the layers around it. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Stack {
    registry: Registry,
    approver: Arc<dyn Approver>,
    audit: Arc<dyn AuditSink>,
    rate: Option<RateLimiter>,
}

impl Stack {
    /// A stack over `registry` that asks no one (every `Ask` fails with `needs_approval`) and
    /// audits to `tracing`.
    pub fn new(registry: Registry) -> Self {
        Stack {
            registry,
            approver: Arc::new(NoApprover),
            audit: Arc::new(TracingAudit),
            rate: None,
        }
    }

    /// Sets who answers `Ask`.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    /// Sets where audit records go.
    pub fn with_audit(mut self, audit: Arc<dyn AuditSink>) -> Self {
        self.audit = audit;
        self
    }

    /// Limits calls per minute across all tools.
    pub fn with_rate_limit(mut self, per_minute: std::num::NonZeroU32) -> Self {
        self.rate = Some(RateLimiter {
            per_minute: per_minute.get() as usize,
            window: Mutex::new(VecDeque::new()),
        });
        self
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Calls `name` with a raw JSON argument document (parsed strictly: duplicate keys and absurd
    /// nesting are refused).
    pub async fn call_json(
        &self,
        name: &str,
        raw_args: &str,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let started = Instant::now();
        let mut trace = Trace::default();
        let result = match crate::args::parse_strict(
            raw_args,
            ctx.limits.max_json_depth,
            ctx.limits.max_args_bytes,
        ) {
            Ok(args) => self.inner(name, args, &ctx, &mut trace).await,
            Err(e) => Err(e),
        };
        self.audit(name, &ctx, &trace, &result, started);
        result
    }

    /// Calls `name` with parsed arguments through every layer.
    pub async fn call(
        &self,
        name: &str,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let started = Instant::now();
        let mut trace = Trace::default();
        // Parsed values skip `parse_strict`, so the nesting limit is checked here too.
        let result = if json_depth(&args, ctx.limits.max_json_depth + 1) > ctx.limits.max_json_depth
        {
            Err(ToolError::invalid(
                "",
                format!(
                    "the arguments are nested deeper than {} levels; send a flatter JSON object",
                    ctx.limits.max_json_depth
                ),
            ))
        } else {
            self.inner(name, args, &ctx, &mut trace).await
        };
        self.audit(name, &ctx, &trace, &result, started);
        result
    }

    fn audit(
        &self,
        name: &str,
        ctx: &ToolContext,
        trace: &Trace,
        result: &Result<ToolOutput, ToolError>,
        started: Instant,
    ) {
        if let Err(ToolError::Internal(source)) = result {
            tracing::error!(call_id = %ctx.call_id, tool = name, error = %source, "internal error in tool");
        }
        let canonical = self.registry.canonical(name).unwrap_or(name);
        let record = AuditRecord {
            call_id: ctx.call_id.clone(),
            tool: canonical.to_string(),
            called_as: (canonical != name).then(|| name.to_string()),
            decision: trace.decision,
            approved: trace.approved,
            accesses: trace.accesses.clone(),
            outcome: match result {
                Ok(_) => "ok".into(),
                Err(e) => e.kind().as_str().into(),
            },
            error: result.as_ref().err().map(|e| e.to_string()),
            duration_ms: started.elapsed().as_millis() as u64,
            output_bytes: result.as_ref().map(|o| o.text_bytes()).unwrap_or(0),
            truncated: result.as_ref().is_ok_and(|o| o.truncated.is_some()),
        };
        self.audit.record(&record);
    }

    async fn inner(
        &self,
        name: &str,
        args: Value,
        ctx: &ToolContext,
        trace: &mut Trace,
    ) -> Result<ToolOutput, ToolError> {
        // Validate: schema first, then the typed parse and the access list.
        let entry = self.registry.entry(name)?;
        let args = entry.check(args)?;
        // `prepare` runs the tool's own `access` code on the caller's task: a panic there must
        // not take the caller down either.
        let mut prepared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            entry.tool.prepare(ctx, args)
        }))
        .map_err(|_| ToolError::internal(format!("the tool `{name}` panicked in prepare")))??;
        // A read of a symbolic link reads the file it links to: the policy judges that file too
        // (`notes.txt -> secrets/db.txt` meets the rules on `secrets/**`).
        let targets: Vec<Access> = prepared
            .accesses
            .iter()
            .filter_map(|a| match a {
                Access::Read(p) => ctx.workspace.read_target(p).map(Access::Read),
                _ => None,
            })
            .collect();
        prepared.accesses.extend(targets);
        trace.accesses = prepared.accesses.iter().map(ToString::to_string).collect();

        // No tool makes a directory that git would take for a repository of its own, with
        // one write or several (a patch). (Inside `.git` the policy's own refusal speaks.)
        if !ctx.policy.allow_git_internals {
            let writes: Vec<&crate::workspace::WsPath> = prepared
                .accesses
                .iter()
                .filter_map(|a| match a {
                    Access::Write(p) if !p.is_git_internal() => Some(p),
                    _ => None,
                })
                .collect();
            if let Some(dir) = ctx.workspace.git_dir_among(&writes) {
                trace.decision = Some(Decision::Deny);
                let shown = if dir.rel().is_empty() { "." } else { dir.rel() };
                return Err(ToolError::Denied(format!(
                    "`{name}` would write in `{shown}`, which is (or would then be) shaped like git's own directory (`HEAD` with `objects` and `refs`, or with `commondir`): git takes such a directory for a repository and runs programs from its config when the user's git next works there. Do not retry it; choose another directory, or use git_operations `init` for a real repository."
                )));
            }
        }

        // Deferred work (a job's command, run later as `shell`) is only for callers who could
        // call that tool directly: an agent without `shell` does not get it through a schedule.
        if let Some(later) = Access::deferred_tools(&prepared.accesses)
            .into_iter()
            .find(|t| !self.registry.offers(t))
        {
            trace.decision = Some(Decision::Deny);
            return Err(ToolError::Denied(format!(
                "`{name}` would hand work to `{later}` to do later, and `{later}` is not a tool this caller may use. Do not retry it; do the work with the tools you have, or ask the user."
            )));
        }

        // Permission.
        // Rules name tools canonically (`file_write`), whatever a profile calls them
        // (`write_file`); a rule written for the alias applies too, and the stricter wins.
        let canonical = &entry.tool.spec().name;
        let mut verdict = ctx.policy.decide(canonical, &prepared.accesses);
        if *canonical != entry.spec.name {
            let by_alias = ctx.policy.decide(&entry.spec.name, &prepared.accesses);
            if by_alias.decision > verdict.decision {
                verdict = by_alias;
            }
        }
        // A tool that does another's job (`schedule` with `once` is `cron_add`) is held to that
        // tool's rules too (round 16: `"cron_add" = "deny"` did not stop `schedule`).
        for other in &prepared.same_as {
            let by_other = ctx.policy.decide(other, &prepared.accesses);
            if by_other.decision > verdict.decision {
                verdict = by_other;
            }
        }
        trace.decision = Some(verdict.decision);
        match verdict.decision {
            Decision::Allow => {}
            Decision::Deny => {
                return Err(ToolError::Denied(format!(
                    "The policy refused `{name}`: {} ({}). Do not retry the same call; choose another way or ask the user.",
                    verdict.reason,
                    verdict.accesses.join("; ")
                )));
            }
            Decision::Ask => {
                let request = ApprovalRequest {
                    tool: canonical.clone(),
                    called_as: (*canonical != entry.spec.name).then(|| name.to_string()),
                    summary: verdict.accesses.clone(),
                    reason: verdict.reason.clone(),
                    rules: verdict.rules.clone(),
                };
                match self.approver.approve(&request).await {
                    Approval::Approved => trace.approved = true,
                    Approval::Refused(why) => {
                        return Err(ToolError::Denied(format!(
                            "The user refused `{name}`{}. Do not retry it; ask the user what to do instead.",
                            why.map(|w| format!(": {w}")).unwrap_or_default()
                        )));
                    }
                    Approval::Unavailable => return Err(ToolError::NeedsApproval(request)),
                }
            }
        }

        // Rate limit.
        if let Some(rate) = &self.rate {
            rate.check()?;
        }

        // Timeout and cancellation. The tool's future is polled in place (spawning a task per
        // call costs more than the rest of the stack); a deadline or a cancellation drops it,
        // which kills child process groups, and a panic is caught and reported as internal.
        let deadline = prepared
            .timeout
            .unwrap_or(ctx.limits.call_timeout)
            .min(ctx.limits.max_timeout);
        let call_ctx = ToolContext {
            cancel: ctx.cancel.child_token(),
            ..ctx.clone()
        };
        let token = call_ctx.cancel.clone();
        let max_output = ctx.limits.max_output_bytes;
        let run = CatchUnwind(prepared.run(call_ctx));
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {
                token.cancel();
                Err(ToolError::Cancelled)
            }
            result = run => match result {
                Ok(out) => out.map(|o| truncate_output(o, max_output)),
                Err(()) => Err(ToolError::internal(format!("the tool `{name}` panicked"))),
            },
            () = tokio::time::sleep(deadline) => {
                token.cancel();
                Err(ToolError::Timeout(format!(
                    "`{name}` did not finish within {} s and was stopped; narrow the request, or ask for a longer timeout if the tool takes one.",
                    deadline.as_secs_f64()
                )))
            }
        }
    }
}

/// Polls a future, turning a panic into `Err(())`.
struct CatchUnwind(crate::tool::CallFuture);

impl std::future::Future for CatchUnwind {
    type Output = Result<Result<ToolOutput, ToolError>, ()>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let fut = &mut self.0;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(std::task::Poll::Ready(r)) => std::task::Poll::Ready(Ok(r)),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(_) => std::task::Poll::Ready(Err(())),
        }
    }
}

#[derive(Debug, Default)]
struct Trace {
    decision: Option<Decision>,
    approved: bool,
    accesses: Vec<String>,
}

/// The truncation layer: cuts text parts head + tail so their total, notices included, stays
/// within `max_bytes` (unless `max_bytes` is too small to hold even the notices).
pub fn truncate_output(mut out: ToolOutput, max_bytes: usize) -> ToolOutput {
    let total = out.text_bytes();
    if total <= max_bytes {
        return out;
    }
    let parts = out
        .content
        .iter()
        .filter(|c| matches!(c, Content::Text { .. }))
        .count()
        .max(1);
    let budget = max_bytes / parts;
    let mut info = None;
    for part in &mut out.content {
        if let Content::Text { text } = part {
            let (cut, t) = crate::truncate::head_tail_within(
                text,
                budget,
                "the output was too long; narrow the request (a smaller range, a more specific pattern or path) to see the omitted part",
            );
            if t.is_some() {
                *text = cut;
                info = info.or(t);
            }
        }
    }
    if out.truncated.is_none()
        && let Some(mut t) = info
    {
        t.original_bytes = total as u64;
        out.truncated = Some(t);
    }
    out
}

/// Whether an error kind is one the model caused (as opposed to a fault in Toolshed).
pub fn is_model_visible(kind: ErrorKind) -> bool {
    kind != ErrorKind::Internal
}

/// The nesting depth of `v`, counting stops at `cap`.
fn json_depth(v: &Value, cap: usize) -> usize {
    if cap == 0 {
        return 0;
    }
    match v {
        Value::Array(a) => 1 + a.iter().map(|x| json_depth(x, cap - 1)).max().unwrap_or(0),
        Value::Object(o) => {
            1 + o
                .values()
                .map(|x| json_depth(x, cap - 1))
                .max()
                .unwrap_or(0)
        }
        _ => 0,
    }
}
