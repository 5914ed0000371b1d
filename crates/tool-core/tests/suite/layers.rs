//! The layer stack's order and behaviour (audit → permission → rate limit → timeout/cancel →
//! truncate → tool), and the truncation helpers it uses.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tool_core::{
    Access, Annotations, Approval, ApprovalRequest, ApproveAll, Approver, AuditRecord, Content,
    Decision, ErrorKind, Limits, MemoryAudit, NoApprover, Policy, Registry, Stack, Tool,
    ToolContext, ToolError, ToolOutput, typed,
};

use super::Fixture;

/// What a scripted call declares it touches.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Touch {
    /// Nothing: always allowed.
    #[default]
    Nothing,
    /// A workspace read: allowed everywhere.
    Read,
    /// A write into `.git/hooks`: denied.
    GitWrite,
    /// A host off the allow list: `Ask` in supervised mode.
    Network,
    /// `access` itself panics.
    PanicInAccess,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ScriptArgs {
    /// How long the call sleeps.
    #[serde(default)]
    sleep_ms: u64,
    /// What the call declares.
    #[serde(default)]
    touch: Touch,
    /// How many bytes of (multi-byte) text it returns.
    #[serde(default)]
    output_bytes: usize,
    /// How many text parts the output is split into.
    #[serde(default)]
    parts: Option<usize>,
    /// Whether `call` panics.
    #[serde(default)]
    panic: bool,
    /// The deadline the call asks for.
    #[serde(default)]
    timeout_ms: Option<u64>,
}

/// A tool whose behaviour the arguments script; it logs what happened to it.
#[derive(Clone, Default)]
struct Scripted {
    log: Arc<Mutex<Vec<&'static str>>>,
}

impl Scripted {
    fn log(&self) -> Vec<&'static str> {
        self.log.lock().unwrap().clone()
    }
}

/// Logs `dropped` if the call's future is dropped before it finished.
struct DropGuard {
    log: Arc<Mutex<Vec<&'static str>>>,
    finished: bool,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.log.lock().unwrap().push("dropped");
        }
    }
}

/// Multi-byte text of exactly `n` bytes or one character less.
fn text_of(n: usize) -> String {
    let unit = "héllo wörld ✓ 🦀 line\n";
    let mut s = unit.repeat(n / unit.len() + 1);
    let mut cut = n.min(s.len());
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s
}

#[async_trait]
impl Tool for Scripted {
    const NAME: &'static str = "scripted";
    type Args = ScriptArgs;
    fn description(&self) -> String {
        "Does what its arguments say.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::ADDITIVE
    }
    fn access(&self, ctx: &ToolContext, args: &ScriptArgs) -> Result<Vec<Access>, ToolError> {
        Ok(match args.touch {
            Touch::Nothing => vec![],
            Touch::Read => vec![Access::Read(ctx.workspace.resolve("README.md")?)],
            Touch::GitWrite => vec![Access::Write(
                ctx.workspace.resolve(".git/hooks/pre-commit")?,
            )],
            Touch::Network => vec![Access::Network {
                host: "unlisted.example".into(),
            }],
            Touch::PanicInAccess => panic!("access exploded"),
        })
    }
    fn timeout(&self, args: &ScriptArgs) -> Option<Duration> {
        args.timeout_ms.map(Duration::from_millis)
    }
    async fn call(&self, _ctx: &ToolContext, args: ScriptArgs) -> Result<ToolOutput, ToolError> {
        self.log.lock().unwrap().push("started");
        let mut guard = DropGuard {
            log: Arc::clone(&self.log),
            finished: false,
        };
        if args.sleep_ms > 0 {
            tokio::time::sleep(Duration::from_millis(args.sleep_ms)).await;
        }
        if args.panic {
            panic!("the tool exploded with a secret: hunter2");
        }
        guard.finished = true;
        self.log.lock().unwrap().push("finished");
        let parts = args.parts.unwrap_or(1).max(1);
        let mut out = ToolOutput::default();
        for _ in 0..parts {
            out.content.push(Content::Text {
                text: text_of(args.output_bytes / parts),
            });
        }
        Ok(out.with_image("image/png", "iVBORw0KGgo="))
    }
}

/// Answers after `delay` with `answer`, counting the questions.
#[derive(Debug)]
struct SlowApprover {
    delay: Duration,
    answer: Approval,
    asked: AtomicUsize,
}

impl SlowApprover {
    fn new(delay_ms: u64, answer: Approval) -> Arc<SlowApprover> {
        Arc::new(SlowApprover {
            delay: Duration::from_millis(delay_ms),
            answer,
            asked: AtomicUsize::new(0),
        })
    }
}

#[async_trait]
impl Approver for SlowApprover {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        self.asked.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(self.delay).await;
        self.answer.clone()
    }
}

struct Harness {
    fx: Fixture,
    tool: Scripted,
    audit: MemoryAudit,
    stack: Stack,
}

impl Harness {
    fn new(configure: impl FnOnce(Stack) -> Stack) -> Harness {
        let fx = Fixture::new();
        let tool = Scripted::default();
        let mut reg = Registry::new();
        reg.register(typed(tool.clone())).unwrap();
        let audit = MemoryAudit::default();
        let stack = configure(Stack::new(reg).with_audit(Arc::new(audit.clone())));
        Harness {
            fx,
            tool,
            audit,
            stack,
        }
    }

    async fn call(
        &self,
        policy: Policy,
        limits: Limits,
        args: serde_json::Value,
    ) -> Result<ToolOutput, ToolError> {
        self.stack
            .call("scripted", args, self.fx.ctx(policy, limits))
            .await
    }

    fn last(&self) -> AuditRecord {
        self.audit
            .records()
            .last()
            .cloned()
            .expect("no audit record")
    }
}

fn short_timeout(ms: u64) -> Limits {
    Limits {
        call_timeout: Duration::from_millis(ms),
        ..Limits::default()
    }
}

/// (a) A denied call is still audited, with the decision; its allowed twin too.
#[tokio::test]
async fn denied_calls_are_audited() {
    let h = Harness::new(|s| s);
    let cases = [
        (Policy::supervised(), "git_write", Decision::Deny, "denied"),
        (Policy::read_only(), "read", Decision::Allow, "ok"),
        (Policy::read_only(), "network", Decision::Deny, "denied"),
        (Policy::full(), "network", Decision::Allow, "ok"),
    ];
    for (policy, touch, decision, outcome) in cases {
        let got = h
            .call(policy, Limits::default(), json!({"touch": touch}))
            .await;
        let rec = h.last();
        assert_eq!(rec.decision, Some(decision), "{touch}: {rec:?}");
        assert_eq!(rec.outcome, outcome, "{touch}");
        assert_eq!(rec.tool, "scripted");
        assert_eq!(rec.accesses.len(), 1, "{touch}");
        if decision == Decision::Deny {
            let err = got.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Denied);
            assert_eq!(rec.error.as_deref(), Some(err.to_string().as_str()));
        } else {
            got.unwrap();
            assert!(rec.error.is_none());
        }
    }
    // A denied tool never started.
    assert_eq!(h.tool.log().iter().filter(|e| **e == "started").count(), 2);
}

/// (b) A tool that outlives its deadline is stopped (its future dropped) and audited as a timeout.
#[tokio::test]
async fn timeout_stops_the_tool_and_is_audited() {
    // (tool's own request, default, cap, sleep) → times out?
    let cases: [(Option<u64>, u64, u64, u64, bool); 5] = [
        (None, 100, 10_000, 5_000, true),
        (None, 1_000, 10_000, 10, false),
        (Some(5_000), 100, 150, 5_000, true),
        (Some(1_000), 50, 10_000, 200, false),
        (Some(50), 10_000, 10_000, 5_000, true),
    ];
    for (asked, default_ms, cap_ms, sleep_ms, times_out) in cases {
        let h = Harness::new(|s| s);
        let limits = Limits {
            call_timeout: Duration::from_millis(default_ms),
            max_timeout: Duration::from_millis(cap_ms),
            ..Limits::default()
        };
        let mut args = json!({"sleep_ms": sleep_ms});
        if let Some(t) = asked {
            args["timeout_ms"] = json!(t);
        }
        let got = h.call(Policy::full(), limits, args).await;
        let case = format!("asked {asked:?}, default {default_ms}, cap {cap_ms}, sleep {sleep_ms}");
        let rec = h.last();
        if times_out {
            let err = got.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Timeout, "{case}: {err}");
            assert_eq!(rec.outcome, "timeout", "{case}");
            assert_eq!(rec.decision, Some(Decision::Allow));
            // The aborted task drops the tool's future.
            tokio::task::yield_now().await;
            assert_eq!(h.tool.log(), vec!["started", "dropped"], "{case}");
        } else {
            got.unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(rec.outcome, "ok", "{case}");
            assert_eq!(h.tool.log(), vec!["started", "finished"], "{case}");
        }
    }
}

/// (c) Approval time is not charged to the tool: a slow approver longer than the timeout still
/// lets the call succeed; the twin, a tool that itself takes that long, times out.
#[tokio::test]
async fn approval_time_is_not_charged_to_the_tool() {
    let approver = SlowApprover::new(400, Approval::Approved);
    let h = Harness::new(|s| s.with_approver(approver.clone()));
    let out = h
        .call(
            Policy::supervised(),
            short_timeout(150),
            json!({"touch": "network", "sleep_ms": 10}),
        )
        .await;
    out.unwrap();
    let rec = h.last();
    assert!(rec.approved);
    assert_eq!(rec.decision, Some(Decision::Ask));
    assert!(
        rec.duration_ms >= 400,
        "duration includes approval: {rec:?}"
    );
    assert_eq!(approver.asked.load(Ordering::SeqCst), 1);

    let twin = h
        .call(
            Policy::supervised(),
            short_timeout(150),
            json!({"touch": "read", "sleep_ms": 400}),
        )
        .await;
    assert_eq!(twin.unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(
        approver.asked.load(Ordering::SeqCst),
        1,
        "allowed calls are not asked"
    );
}

/// (d) Truncation happens inside the audit: the record counts the bytes the caller got.
#[tokio::test]
async fn truncation_before_audit() {
    let h = Harness::new(|s| s);
    // (bytes produced, text parts, limit)
    let cases = [
        (1 << 20, 1, 1000),
        (1 << 20, 3, 1000),
        (5000, 1, 1000),
        (100_000, 2, 4096),
        (900, 1, 1000),
        (1000, 2, 1000),
        (0, 1, 1000),
    ];
    for (bytes, parts, max) in cases {
        let limits = Limits {
            max_output_bytes: max,
            ..Limits::default()
        };
        let out = h
            .call(
                Policy::full(),
                limits,
                json!({"output_bytes": bytes, "parts": parts}),
            )
            .await
            .unwrap();
        let produced: usize = (0..parts).map(|_| text_of(bytes / parts).len()).sum();
        let rec = h.last();
        let returned = out.text_bytes();
        let case = format!("{bytes} bytes in {parts} parts, limit {max}");
        assert_eq!(rec.output_bytes, returned, "{case}");
        assert_eq!(rec.truncated, out.truncated.is_some(), "{case}");
        // The image part survives untouched.
        assert!(
            out.content
                .iter()
                .any(|c| matches!(c, Content::Image { .. })),
            "{case}"
        );
        if produced <= max {
            assert!(out.truncated.is_none(), "{case}");
            assert_eq!(returned, produced, "{case}");
        } else {
            let t = out.truncated.as_ref().expect("truncated");
            assert_eq!(t.original_bytes, produced as u64, "{case}");
            assert!(returned <= max, "{case}: returned {returned} bytes");
            assert!(returned < produced, "{case}");
            for part in &out.content {
                if let Content::Text { text } = part {
                    assert!(text.contains("omitted"), "{case}: no notice in a cut part");
                    assert!(text.starts_with("héllo"), "{case}: head lost");
                }
            }
        }
    }
}

/// (e) Rate limit: the third call within a minute fails; calls refused by the policy before the
/// limiter do not use up the budget.
#[tokio::test]
async fn rate_limit() {
    let h = Harness::new(|s| s.with_rate_limit(NonZeroU32::new(2).unwrap()));
    for i in 0..2 {
        h.call(Policy::full(), Limits::default(), json!({}))
            .await
            .unwrap_or_else(|e| panic!("call {i}: {e}"));
    }
    let err = h
        .call(Policy::full(), Limits::default(), json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failed);
    assert!(err.to_string().contains("rate limit"), "{err}");
    assert_eq!(h.last().outcome, "failed");
    assert_eq!(h.tool.log().len(), 4, "the limited call never started");

    // Denials and unanswered questions come before the limiter.
    let h = Harness::new(|s| s.with_rate_limit(NonZeroU32::new(1).unwrap()));
    let denied = h
        .call(
            Policy::supervised(),
            Limits::default(),
            json!({"touch": "git_write"}),
        )
        .await;
    assert_eq!(denied.unwrap_err().kind(), ErrorKind::Denied);
    let unanswered = h
        .call(
            Policy::supervised(),
            Limits::default(),
            json!({"touch": "network"}),
        )
        .await;
    assert_eq!(unanswered.unwrap_err().kind(), ErrorKind::NeedsApproval);
    h.call(Policy::supervised(), Limits::default(), json!({}))
        .await
        .unwrap();
    let limited = h
        .call(Policy::supervised(), Limits::default(), json!({}))
        .await;
    assert_eq!(limited.unwrap_err().kind(), ErrorKind::Failed);
}

/// (f) Cancelling the caller's token stops a long tool; the twin without cancellation finishes.
#[tokio::test]
async fn cancellation() {
    for cancel in [true, false] {
        let h = Harness::new(|s| s);
        let ctx = h.fx.ctx(Policy::full(), Limits::default());
        let token = ctx.cancel.clone();
        let sleep_ms = if cancel { 30_000 } else { 50 };
        let call = h.stack.call("scripted", json!({"sleep_ms": sleep_ms}), ctx);
        let canceller = async {
            if cancel {
                tokio::time::sleep(Duration::from_millis(50)).await;
                token.cancel();
            }
        };
        let (got, ()) = tokio::join!(call, canceller);
        if cancel {
            assert_eq!(got.unwrap_err().kind(), ErrorKind::Cancelled);
            assert_eq!(h.last().outcome, "cancelled");
            tokio::task::yield_now().await;
            assert_eq!(h.tool.log(), vec!["started", "dropped"]);
        } else {
            got.unwrap();
            assert_eq!(h.tool.log(), vec!["started", "finished"]);
        }
    }
}

/// (g) Who answers `Ask`, and what their answer does. A `Deny` never reaches the approver.
#[tokio::test]
async fn approval_table() {
    let refuse = || Approval::Refused(Some("not on a Friday".into()));
    // (approver, touch, expected kind or None for success)
    let cases: Vec<(Arc<dyn Approver>, &str, Option<ErrorKind>)> = vec![
        (
            Arc::new(NoApprover),
            "network",
            Some(ErrorKind::NeedsApproval),
        ),
        (Arc::new(ApproveAll), "network", None),
        (SlowApprover::new(0, Approval::Approved), "network", None),
        (
            SlowApprover::new(0, refuse()),
            "network",
            Some(ErrorKind::Denied),
        ),
        (
            SlowApprover::new(0, Approval::Unavailable),
            "network",
            Some(ErrorKind::NeedsApproval),
        ),
        (Arc::new(ApproveAll), "git_write", Some(ErrorKind::Denied)),
        (Arc::new(ApproveAll), "read", None),
        (Arc::new(NoApprover), "read", None),
    ];
    for (approver, touch, expect) in cases {
        let h = Harness::new(|s| s.with_approver(Arc::clone(&approver)));
        let got = h
            .call(
                Policy::supervised(),
                Limits::default(),
                json!({"touch": touch}),
            )
            .await;
        let rec = h.last();
        let case = format!("{approver:?} / {touch}");
        match expect {
            None => {
                got.unwrap_or_else(|e| panic!("{case}: {e}"));
                assert_eq!(rec.approved, touch == "network", "{case}");
            }
            Some(kind) => {
                let err = got.unwrap_err();
                assert_eq!(err.kind(), kind, "{case}: {err}");
                assert!(!rec.approved);
                match &err {
                    ToolError::NeedsApproval(req) => {
                        assert_eq!(req.tool, "scripted");
                        assert!(req.summary[0].contains("unlisted.example"), "{req:?}");
                        assert!(err.to_string().contains("--yes"), "{err}");
                    }
                    ToolError::Denied(msg) if touch == "network" => {
                        assert!(msg.contains("not on a Friday"), "{msg}");
                    }
                    _ => {}
                }
                assert!(!h.tool.log().contains(&"started"), "{case}: the tool ran");
            }
        }
    }
    // Deny never asks; Ask asks exactly once; Allow never asks.
    for (touch, asked) in [("git_write", 0), ("network", 1), ("read", 0)] {
        let approver = SlowApprover::new(0, Approval::Approved);
        let h = Harness::new(|s| s.with_approver(approver.clone()));
        let _ = h
            .call(
                Policy::supervised(),
                Limits::default(),
                json!({"touch": touch}),
            )
            .await;
        assert_eq!(approver.asked.load(Ordering::SeqCst), asked, "{touch}");
    }
}

/// (h) Unknown names: a near miss gets a suggestion, a far one the list of tools.
#[tokio::test]
async fn unknown_tool_names() {
    let h = Harness::new(|s| s);
    let cases = [
        ("scripted", None),
        ("scriptd", Some(true)),
        ("Scripted", Some(true)),
        ("scripted_", Some(true)),
        ("zzzzzzzzzzzzzzzz", Some(false)),
        ("", Some(false)),
    ];
    for (name, suggests) in cases {
        let got = h
            .stack
            .call(name, json!({}), h.fx.ctx(Policy::full(), Limits::default()))
            .await;
        let rec = h.last();
        assert_eq!(rec.tool, name);
        match suggests {
            None => {
                got.unwrap();
                assert_eq!(rec.outcome, "ok");
            }
            Some(suggests) => {
                let err = got.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::NotFound, "{name}");
                let msg = err.to_string();
                assert_eq!(
                    msg.contains("did you mean `scripted`"),
                    suggests,
                    "{name}: {msg}"
                );
                assert!(msg.contains("scripted"), "{name}: {msg}");
                assert_eq!(rec.outcome, "not_found");
                assert_eq!(rec.decision, None);
            }
        }
    }
}

/// (i) A panic in the tool (or in its access list) becomes `Internal`, does not leak its
/// message, and the stack keeps working.
#[tokio::test]
async fn panics_become_internal() {
    let h = Harness::new(|s| s);
    for args in [
        json!({"panic": true}),
        json!({"touch": "panic_in_access"}),
        json!({"panic": true}),
    ] {
        let err = h
            .call(Policy::full(), Limits::default(), args.clone())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Internal, "{args}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(!err.to_string().contains("exploded"), "{err}");
        assert_eq!(h.last().outcome, "internal");
        // The twin right after works.
        h.call(Policy::full(), Limits::default(), json!({}))
            .await
            .unwrap();
        assert_eq!(h.last().outcome, "ok");
    }
}

/// The audit log sees every outcome, each once, in order.
#[tokio::test]
async fn every_call_is_audited_once() {
    let h = Harness::new(|s| s);
    let calls = [
        ("scripted", json!({}), "ok"),
        ("scripted", json!({"bogus": 1}), "invalid_args"),
        ("nope", json!({}), "not_found"),
        ("scripted", json!({"touch": "git_write"}), "denied"),
        ("scripted", json!({"touch": "network"}), "needs_approval"),
    ];
    for (i, (name, args, outcome)) in calls.iter().enumerate() {
        let _ = h
            .stack
            .call(
                name,
                args.clone(),
                h.fx.ctx(Policy::supervised(), Limits::default()),
            )
            .await;
        let records = h.audit.records();
        assert_eq!(records.len(), i + 1);
        assert_eq!(records[i].outcome, *outcome, "{name} {args}");
    }
    let ids: std::collections::HashSet<_> =
        h.audit.records().into_iter().map(|r| r.call_id).collect();
    assert_eq!(ids.len(), calls.len(), "call ids are unique");
}

// ---------------------------------------------------------------------------------------------
// Truncation helpers.

const HINT: &str = "narrow it";

/// Splits `head_tail` output into (head, omitted bytes, omitted lines, tail).
fn split_notice(out: &str) -> (&str, u64, u64, &str) {
    let start = out.find("\n[... ").expect("notice start");
    let end_marker = format!("; {HINT} ...]\n");
    let end = out[start..].find(&end_marker).expect("notice end") + start;
    let notice = &out[start + "\n[... ".len()..end];
    let mut words = notice.split_whitespace();
    let bytes: u64 = words.next().unwrap().parse().unwrap();
    assert_eq!(words.next(), Some("bytes"));
    let lines: u64 = words
        .next()
        .unwrap()
        .trim_start_matches('(')
        .parse()
        .unwrap();
    (&out[..start], bytes, lines, &out[end + end_marker.len()..])
}

/// head_tail over many texts and every budget: the head is a prefix, the tail a suffix, both
/// within the budget, the notice counts exactly what was left out.
#[test]
fn head_tail_properties() {
    let texts = [
        "plain ascii without newlines ".repeat(20),
        (0..200).map(|i| format!("line {i}\n")).collect::<String>(),
        "é".repeat(300),
        "🦀".repeat(120),
        "日本語のテキスト\n".repeat(30),
        "a\u{301}\u{301}b ".repeat(80),
        "\n".repeat(200),
        "x".repeat(10) + &"é🦀\n".repeat(50) + &"y".repeat(10),
    ];
    for text in &texts {
        for budget in 0..text.len() + 8 {
            let (out, info) = tool_core::truncate::head_tail(text, budget, HINT);
            if text.len() <= budget {
                assert_eq!(&out, text);
                assert!(info.is_none());
                continue;
            }
            let info = info.unwrap_or_else(|| panic!("budget {budget}: not cut"));
            let (head, omitted, lines, tail) = split_notice(&out);
            let case = format!("len {} budget {budget}", text.len());
            assert!(text.starts_with(head), "{case}: head is not a prefix");
            assert!(text.ends_with(tail), "{case}: tail is not a suffix");
            assert!(head.len() + tail.len() <= budget, "{case}");
            assert!(head.len() + tail.len() < text.len(), "{case}");
            assert_eq!(info.original_bytes, text.len() as u64, "{case}");
            assert_eq!(info.kept_bytes, (head.len() + tail.len()) as u64, "{case}");
            assert_eq!(omitted, text.len() as u64 - info.kept_bytes, "{case}");
            let middle = &text[head.len()..text.len() - tail.len()];
            assert_eq!(lines, middle.matches('\n').count() as u64, "{case}");
            assert_eq!(info.omitted_lines, lines, "{case}");
            assert_eq!(info.hint, HINT);
        }
    }
}

/// The stack's truncation layer: within the limit for every limit large enough to hold the
/// notice, and never splitting a character.
#[test]
fn truncate_output_properties() {
    let text = text_of(20_000);
    for parts in 1..=3 {
        for max in (300..6_000).step_by(97) {
            let mut out = ToolOutput::default();
            for _ in 0..parts {
                out.content.push(Content::Text { text: text.clone() });
            }
            let total = out.text_bytes();
            // The floor: nothing but the notices (what a limit of 0 leaves).
            let floor = tool_core::stack::truncate_output(out.clone(), 0).text_bytes();
            let cut = tool_core::stack::truncate_output(out, max);
            let t = cut.truncated.as_ref().expect("truncated");
            assert_eq!(t.original_bytes, total as u64);
            assert!(
                cut.text_bytes() <= max.max(floor),
                "{parts} parts, limit {max}: {} bytes (floor {floor})",
                cut.text_bytes()
            );
            for c in &cut.content {
                let Content::Text { text: part } = c else {
                    continue;
                };
                let (head, _, _, tail) = split_notice_any(part);
                assert!(text.starts_with(head));
                assert!(text.ends_with(tail));
            }
        }
    }
    // Output within the limit is returned as it was.
    let small = ToolOutput::text("short");
    assert_eq!(tool_core::stack::truncate_output(small.clone(), 5), small);
}

fn split_notice_any(out: &str) -> (&str, (), (), &str) {
    let start = out.find("\n[... ").expect("notice start");
    let end = out[start..].find(" ...]\n").expect("notice end") + start;
    (&out[..start], (), (), &out[end + " ...]\n".len()..])
}

#[test]
fn cut_line_table() {
    for line in [
        "",
        "short",
        &"é".repeat(50),
        &"🦀x".repeat(40),
        &"ab".repeat(100),
    ] {
        let chars = line.chars().count();
        for max in 0..chars + 3 {
            let cut = tool_core::truncate::cut_line(line, max);
            if chars <= max {
                assert_eq!(cut, line);
            } else {
                let kept: String = line.chars().take(max).collect();
                assert!(cut.starts_with(&kept), "{line:?} {max}");
                let more = line.len() - kept.len();
                assert!(cut.contains(&format!("{more} more bytes")), "{cut}");
            }
        }
    }
}
