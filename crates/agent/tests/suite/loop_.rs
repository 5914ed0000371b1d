//! The loop itself: tool rounds, order of results, concurrency, finish, limits, cancellation,
//! policy refusals and approvals.

use std::sync::Arc;
use std::time::Duration;

use tool_core::{Approval, ApprovalRequest, Approver, Policy};
use toolshed_agent::{AgentEvent, AgentSpec, FinishedBy, Message, Part};

use super::{Scripted, call, context, results, runtime, text, tools};

#[tokio::test]
async fn tool_round_then_answer() {
    let model = Scripted::new(vec![
        vec![text("Noting."), call("c1", "note", r#"{"text":"one"}"#)],
        vec![text("Done: noted one.")],
    ]);
    let (registry, t) = tools();
    let (rt, events) = runtime(Arc::clone(&model), registry);
    let rt = Arc::new(rt);
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path(), Policy::supervised());
    let mut messages = vec![Message::user("note one")];
    let out = rt
        .run(&AgentSpec::default_agent(), &mut messages, &ctx, None)
        .await
        .unwrap();
    assert_eq!(out.answer, "Done: noted one.");
    assert_eq!(out.finished_by, FinishedBy::Answer);
    assert_eq!(out.iterations, 2);
    assert_eq!(out.usage.input_tokens, 20);
    assert_eq!(*t.note.log.lock().unwrap(), ["one"]);
    // The second request carries the result, matched to the call id.
    let requests = model.requests();
    let r = results(&requests[1]);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].call_id, "c1");
    assert_eq!(r[0].content, "noted: one");
    assert!(!r[0].is_error);
    // The tools offered include the test tools and `finish`, and the system prompt is sent.
    let names: Vec<&str> = requests[0].tools.iter().map(|s| s.name.as_str()).collect();
    assert!(
        names.contains(&"note") && names.contains(&"finish"),
        "{names:?}"
    );
    assert!(requests[0].system.as_deref().unwrap().contains("finish"));
    // Conversation: user, assistant, user(results), assistant.
    assert_eq!(messages.len(), 4);
    let ev = events.lock().unwrap();
    assert!(
        ev.iter()
            .any(|e| matches!(e, AgentEvent::ToolCall { name, .. } if name == "note"))
    );
}

#[tokio::test]
async fn read_only_calls_of_a_turn_run_together_and_results_keep_call_order() {
    let model = Scripted::new(vec![
        vec![
            call("a", "wait_pair", "{}"),
            call("b", "wait_pair", "{}"),
            call("c", "note", r#"{"text":"after"}"#),
        ],
        vec![text("ok")],
    ]);
    let (registry, _t) = tools();
    let (rt, _) = runtime(Arc::clone(&model), registry);
    let rt = Arc::new(rt);
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path(), Policy::supervised());
    let mut messages = vec![Message::user("go")];
    rt.run(&AgentSpec::default_agent(), &mut messages, &ctx, None)
        .await
        .unwrap();
    let r = results(&model.requests()[1]);
    let ids: Vec<&str> = r.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert_eq!(r[0].content, "met my partner");
    assert_eq!(r[1].content, "met my partner");
}

#[tokio::test]
async fn finish_ends_the_run_with_its_message_after_the_turns_other_calls() {
    let model = Scripted::new(vec![vec![
        call("n", "note", r#"{"text":"last"}"#),
        call("f", "finish", r#"{"message":"All done."}"#),
    ]]);
    let (registry, t) = tools();
    let (rt, _) = runtime(Arc::clone(&model), registry);
    let rt = Arc::new(rt);
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path(), Policy::supervised());
    let mut messages = vec![Message::user("go")];
    let out = rt
        .run(&AgentSpec::default_agent(), &mut messages, &ctx, None)
        .await
        .unwrap();
    assert_eq!(out.answer, "All done.");
    assert_eq!(out.finished_by, FinishedBy::FinishTool);
    assert_eq!(*t.note.log.lock().unwrap(), ["last"]);
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn iteration_limit_stops_the_run() {
    let answers = (0..10)
        .map(|i| {
            vec![call(
                &format!("c{i}"),
                "note",
                &format!(r#"{{"text":"{i}"}}"#),
            )]
        })
        .collect();
    let model = Scripted::new(answers);
    let (registry, _t) = tools();
    let (rt, _) = runtime(Arc::clone(&model), registry);
    let rt = Arc::new(rt);
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path(), Policy::supervised());
    let mut agent = AgentSpec::default_agent();
    agent.max_iterations = 3;
    let mut messages = vec![Message::user("go")];
    let out = rt.run(&agent, &mut messages, &ctx, None).await.unwrap();
    assert_eq!(out.finished_by, FinishedBy::MaxIterations);
    assert_eq!(model.requests().len(), 3);
    assert!(out.answer.contains("iteration limit"), "{}", out.answer);
}

#[tokio::test]
async fn cancellation_stops_a_running_tool_and_the_turn() {
    let model = Scripted::new(vec![vec![call("s", "slow", "{}")]]);
    let (registry, _t) = tools();
    let (rt, _) = runtime(Arc::clone(&model), registry);
    let rt = Arc::new(rt);
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path(), Policy::supervised());
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let mut messages = vec![Message::user("go")];
    let err = rt
        .run(&AgentSpec::default_agent(), &mut messages, &ctx, None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, toolshed_agent::AgentError::Cancelled),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Refuses everything it is asked about.
#[derive(Debug)]
struct Refuse;

#[async_trait::async_trait]
impl Approver for Refuse {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        Approval::Refused(Some("not today".into()))
    }
}

/// A denied call and a refused approval come back as error results; the model goes on.
#[tokio::test]
async fn policy_refusals_are_results_the_model_recovers_from() {
    let model = Scripted::new(vec![
        vec![call("n", "note", r#"{"text":"x"}"#)],
        vec![text(
            "I could not write the note, so here is the answer instead.",
        )],
    ]);
    let (registry, t) = tools();
    let (rt, _) = runtime(Arc::clone(&model), registry);
    let rt = Arc::new(rt);
    let dir = tempfile::tempdir().unwrap();
    // read_only refuses the write outright.
    let ctx = context(dir.path(), Policy::read_only());
    let mut messages = vec![Message::user("go")];
    let out = rt
        .run(&AgentSpec::default_agent(), &mut messages, &ctx, None)
        .await
        .unwrap();
    assert!(out.answer.contains("answer instead"));
    let r = results(&model.requests()[1]);
    assert!(
        r[0].is_error && r[0].content.contains("read_only"),
        "{:?}",
        r[0]
    );
    assert!(t.note.log.lock().unwrap().is_empty());

    // An `ask` rule with an approver that refuses.
    let model = Scripted::new(vec![
        vec![call("n", "note", r#"{"text":"x"}"#)],
        vec![text("fine")],
    ]);
    let (registry, t) = tools();
    let (rt, _) = runtime(Arc::clone(&model), registry);
    let rt = Arc::new(rt.with_approver(Arc::new(Refuse)));
    let policy = Policy::supervised()
        .rule("note", tool_core::Decision::Ask)
        .unwrap();
    let ctx = context(dir.path(), policy);
    let mut messages = vec![Message::user("go")];
    rt.run(&AgentSpec::default_agent(), &mut messages, &ctx, None)
        .await
        .unwrap();
    let r = results(&model.requests()[1]);
    assert!(
        r[0].is_error && r[0].content.contains("not today"),
        "{:?}",
        r[0]
    );
    assert!(t.note.log.lock().unwrap().is_empty());
}

#[tokio::test]
async fn persisted_messages_match_the_conversation() {
    let model = Scripted::new(vec![
        vec![call("c1", "note", r#"{"text":"one"}"#)],
        vec![text("done")],
    ]);
    let (registry, _t) = tools();
    let (rt, _) = runtime(Arc::clone(&model), registry);
    let rt = Arc::new(rt);
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path(), Policy::supervised());
    let store = toolshed_agent::SessionStore::open(&dir.path().join("s.db")).unwrap();
    let id = store.create("default", "m", "go").unwrap();
    let first = Message::user("go");
    store.append(&id, &first).unwrap();
    let mut messages = vec![first];
    let persist = |m: &Message| store.append(&id, m);
    rt.run(
        &AgentSpec::default_agent(),
        &mut messages,
        &ctx,
        Some(&persist),
    )
    .await
    .unwrap();
    let (_, loaded) = store.load(&id).unwrap();
    assert_eq!(loaded, messages);
    assert!(matches!(loaded[2].parts()[0], Part::ToolResult(_)));
}
