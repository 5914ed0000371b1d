//! The loop's guards: unknown tools, malformed arguments, repeated failures, re-stored memory.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tool_core::Policy;
use toolshed_agent::{AgentSpec, Message};

use super::{Scripted, call, context, results, runtime, text, tools};

async fn run(answers: Vec<Vec<toolshed_agent::Part>>) -> (Arc<Scripted>, super::Tools) {
    let model = Scripted::new(answers);
    let (registry, t) = tools();
    let (rt, _) = runtime(Arc::clone(&model), registry);
    let rt = Arc::new(rt);
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path(), Policy::supervised());
    let mut messages = vec![Message::user("go")];
    rt.run(&AgentSpec::default_agent(), &mut messages, &ctx, None)
        .await
        .unwrap();
    (model, t)
}

#[tokio::test]
async fn unknown_tools_and_malformed_arguments_are_error_results() {
    let (model, t) = run(vec![
        vec![
            call("u", "file_delete_everything", "{}"),
            call("m", "note", r#"{"text": "unterminated"#),
            call("w", "note", r#"{"txt": "wrong field"}"#),
            call("ok", "note", r#"{"text":"fine"}"#),
        ],
        vec![text("recovered")],
    ])
    .await;
    let r = results(&model.requests()[1]);
    assert!(r[0].is_error);
    assert!(
        r[0].content
            .contains("There is no tool `file_delete_everything`"),
        "{}",
        r[0].content
    );
    assert!(
        r[0].content.contains("note"),
        "lists the real tools: {}",
        r[0].content
    );
    assert!(
        r[1].is_error && r[1].content.to_lowercase().contains("json"),
        "{}",
        r[1].content
    );
    assert!(
        r[2].is_error && r[2].content.contains("txt"),
        "{}",
        r[2].content
    );
    assert!(!r[3].is_error);
    assert_eq!(*t.note.log.lock().unwrap(), ["fine"]);
}

#[tokio::test]
async fn the_same_failing_call_is_not_run_a_third_time() {
    let (model, t) = run(vec![
        vec![call("1", "flaky", "{}")],
        vec![call("2", "flaky", "{}")],
        vec![call("3", "flaky", " { } ")],
        vec![text("giving up")],
    ])
    .await;
    assert_eq!(t.flaky.runs.load(Ordering::SeqCst), 2);
    let third = results(&model.requests()[3]);
    assert!(third[0].is_error);
    assert!(
        third[0].content.contains("already failed 2 times") && third[0].content.contains("on fire"),
        "{}",
        third[0].content
    );
}

#[tokio::test]
async fn recalled_memory_is_not_stored_again() {
    let (model, t) = run(vec![
        vec![call("r", "memory_recall", "{}")],
        vec![
            call(
                "s1",
                "memory_store",
                r#"{"key":"deploy2","content":"Deploys happen on Tuesdays   after the standup meeting."}"#,
            ),
            call(
                "s2",
                "memory_store",
                r#"{"key":"new","content":"The staging database moved to db2."}"#,
            ),
        ],
        vec![text("ok")],
    ])
    .await;
    let r = results(&model.requests()[2]);
    assert!(
        r[0].is_error && r[0].content.contains("stored already"),
        "{}",
        r[0].content
    );
    assert!(!r[1].is_error);
    assert_eq!(
        *t.store.stored.lock().unwrap(),
        ["The staging database moved to db2."]
    );
}

/// The recalled memory again, spelled so that only invisible characters, width or case tell
/// it apart, is still the recalled memory; new facts in any script are stored as given.
#[tokio::test]
async fn recalled_memory_in_another_spelling_is_not_stored_again() {
    let respellings = [
        // Zero-width space and word joiner between words.
        "Deploys happen\u{200B} on Tuesdays after the\u{2060} standup meeting.",
        // Soft hyphen and a bidi mark inside words.
        "De\u{00AD}ploys happen on Tues\u{200E}days after the standup meeting.",
        // Full-width letters and another case.
        "\u{FF24}\u{FF25}\u{FF30}\u{FF2C}\u{FF2F}\u{FF39}\u{FF33} HAPPEN ON TUESDAYS AFTER THE STANDUP MEETING.",
        // No-break and ideographic spaces, and the recall wrapped in new text.
        "Note: deploys\u{00A0}happen on\u{3000}Tuesdays after the standup meeting. Thanks!",
    ];
    let benign = [
        "👩\u{200D}💻 Ada deploys on Tuesdays from the Große Straße office.",
        "東京のチームは火曜日にデプロイします。",
        "Deploys happen on Tuesdays after the standup meeting, except in December.",
    ];
    let mut calls = Vec::new();
    for (i, content) in respellings.iter().chain(benign.iter()).enumerate() {
        calls.push(call(
            &format!("s{i}"),
            "memory_store",
            &serde_json::json!({"key": format!("k{i}"), "content": content}).to_string(),
        ));
    }
    let (model, t) = run(vec![
        vec![call("r", "memory_recall", "{}")],
        calls,
        vec![text("ok")],
    ])
    .await;
    let r = results(&model.requests()[2]);
    for (i, content) in respellings.iter().enumerate() {
        assert!(
            r[i].is_error && r[i].content.contains("stored already"),
            "{content:?} was not refused: {}",
            r[i].content
        );
    }
    for (i, content) in benign.iter().enumerate() {
        let r = &r[respellings.len() + i];
        assert!(!r.is_error, "{content:?} was refused: {}", r.content);
    }
    assert_eq!(*t.store.stored.lock().unwrap(), benign);
}
