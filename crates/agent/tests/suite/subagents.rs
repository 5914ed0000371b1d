//! delegate and spawn: restricted subsets, depth, results.

use std::sync::Arc;

use tool_core::Policy;
use toolshed_agent::{AgentEvent, AgentSpec, Message, ToolFilter};

use super::{Scripted, call, context, results, runtime, text, tools};

/// The parent delegates to `reader` (allowed: memory_recall only); the child tries `note`,
/// which is outside its subset, gets an unknown-tool result, and answers; the parent gets the
/// answer as the delegate result.
#[tokio::test]
async fn delegate_runs_a_named_agent_on_a_subset() {
    let model = Scripted::new(vec![
        // parent
        vec![call(
            "d",
            "delegate",
            r#"{"agent":"reader","prompt":"find the deploy day","context":"ask memory"}"#,
        )],
        // child
        vec![call("n", "note", r#"{"text":"sneaky"}"#)],
        vec![text("Tuesdays.")],
        // parent again
        vec![text("The deploy day is Tuesday.")],
    ]);
    let (registry, t) = tools();
    let (rt, events) = runtime(Arc::clone(&model), registry);
    let reader = AgentSpec {
        name: "reader".into(),
        system_prompt: "You only read.".into(),
        tools: ToolFilter::only(["memory_recall", "memory_store"]),
        model: None,
        max_iterations: 5,
    };
    let rt = Arc::new(rt.with_agents([reader]));
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path(), Policy::supervised());
    let mut messages = vec![Message::user("when do we deploy?")];
    let out = rt
        .run(&AgentSpec::default_agent(), &mut messages, &ctx, None)
        .await
        .unwrap();
    assert_eq!(out.answer, "The deploy day is Tuesday.");
    assert!(
        t.note.log.lock().unwrap().is_empty(),
        "the child wrote a note"
    );
    let requests = model.requests();
    // The child's request: its own prompt and context, its own system prompt, its subset
    // (memory_store is excluded for subagents whatever the allow map says).
    let child = &requests[1];
    assert_eq!(child.system.as_deref(), Some("You only read."));
    assert!(child.messages[0].text().contains("find the deploy day"));
    assert!(child.messages[0].text().contains("ask memory"));
    let names: Vec<&str> = child.tools.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["finish", "memory_recall"]);
    let child_results = results(&requests[2]);
    assert!(child_results[0].is_error);
    assert!(child_results[0].content.contains("There is no tool `note`"));
    let parent_results = results(&requests[3]);
    assert_eq!(parent_results[0].content, "Tuesdays.");
    assert!(events.lock().unwrap().iter().any(
        |e| matches!(e, AgentEvent::SubagentStarted { depth: 1, label } if label == "reader")
    ));
}

#[tokio::test]
async fn delegate_to_an_unknown_agent_is_an_argument_error() {
    let model = Scripted::new(vec![
        vec![call("d", "delegate", r#"{"agent":"ghost","prompt":"x"}"#)],
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
    assert!(
        r[0].is_error && r[0].content.contains("no agent `ghost`"),
        "{}",
        r[0].content
    );
    assert!(r[0].content.contains("default"), "{}", r[0].content);
}

/// A subagent gets neither spawn nor (unless named) delegate; a spawned one reports back
/// before the parent's run ends.
#[tokio::test]
async fn spawn_reports_back_before_the_run_ends() {
    let model = Scripted::new(vec![
        vec![call("s", "spawn", r#"{"task":"say hi","label":"greeter"}"#)],
        // parent's next turn (may come before or after the child's; both answer text)
        vec![text("waiting")],
        vec![text("hi")],
        vec![text("The greeter said hi.")],
    ]);
    let (registry, _t) = tools();
    let (rt, _) = runtime(Arc::clone(&model), registry);
    let rt = Arc::new(rt);
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path(), Policy::supervised());
    let mut messages = vec![Message::user("go")];
    let out = rt
        .run(&AgentSpec::default_agent(), &mut messages, &ctx, None)
        .await
        .unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    // The spawned child's tool list has no spawn, delegate or message.
    let child = requests
        .iter()
        .find(|r| r.messages[0].text() == "say hi")
        .expect("the child was asked");
    let names: Vec<&str> = child.tools.iter().map(|s| s.name.as_str()).collect();
    assert!(
        !names.contains(&"spawn") && !names.contains(&"delegate") && !names.contains(&"message")
    );
    // The parent saw the child's note in its conversation.
    assert!(
        messages
            .iter()
            .any(|m| m.text().contains("[subagent #1 `greeter` finished]")),
        "{messages:?}"
    );
    assert!(!out.answer.is_empty());
}

/// Found by the adversary (issue 28): under a profile, an allow map saying `note = false` let
/// the same tool through under its alias. Allow maps name tools canonically; twin: the other
/// tools (and the alias of an allowed one) are offered.
#[tokio::test]
async fn allow_maps_hold_under_a_profiles_names() {
    let model = Scripted::new(vec![vec![text("done")]]);
    let (registry, _t) = tools();
    let aliases = [
        tool_core::Alias {
            profile: "seed",
            name: "jot",
            target: "note",
            renames: &[],
        },
        tool_core::Alias {
            profile: "seed",
            name: "look_up",
            target: "memory_recall",
            renames: &[],
        },
    ];
    let registry = registry.with_profile("seed", &aliases).unwrap();
    let names = offered(model, registry, "note").await;
    assert!(!names.contains(&"jot".to_string()), "{names:?}");
    assert!(names.contains(&"look_up".to_string()), "{names:?}");
}

/// A tool that does another's job (`schedule` does `cron_add`'s) is withheld from an agent
/// whose allow map refuses that other tool (round 16: `cron_add = false` left `schedule`
/// offered). Twin: a map that refuses an unrelated tool still offers it.
#[tokio::test]
async fn allow_maps_hold_for_tools_that_do_the_same_job() {
    #[derive(Debug, Clone, Default)]
    struct Journal;
    #[async_trait::async_trait]
    impl tool_core::Tool for Journal {
        const NAME: &'static str = "journal";
        type Args = super::NoteArgs;
        const SAME_JOB: &'static [&'static str] = &["note"];
        fn description(&self) -> String {
            "Write a note in the journal.".into()
        }
        fn annotations(&self) -> tool_core::Annotations {
            tool_core::Annotations::ADDITIVE
        }
        fn access(
            &self,
            _ctx: &tool_core::ToolContext,
            _args: &super::NoteArgs,
        ) -> Result<Vec<tool_core::Access>, tool_core::ToolError> {
            Ok(Vec::new())
        }
        async fn call(
            &self,
            _ctx: &tool_core::ToolContext,
            args: super::NoteArgs,
        ) -> Result<tool_core::ToolOutput, tool_core::ToolError> {
            Ok(tool_core::ToolOutput::text(args.text))
        }
    }
    for (refused, expected) in [("note", false), ("wait_pair", true)] {
        let model = Scripted::new(vec![vec![text("done")]]);
        let (mut registry, _t) = tools();
        registry.register(tool_core::typed(Journal)).unwrap();
        let names = offered(model, registry, refused).await;
        assert_eq!(
            names.contains(&"journal".to_string()),
            expected,
            "{refused} = false: {names:?}"
        );
    }
}

/// The tool names the model is offered in one run of an agent whose allow map is every tool
/// but `refused`.
async fn offered(
    model: Arc<Scripted>,
    registry: tool_core::Registry,
    refused: &str,
) -> Vec<String> {
    let (rt, _) = runtime(Arc::clone(&model), registry);
    let rt = Arc::new(rt);
    let mut agent = AgentSpec::default_agent();
    agent.tools = ToolFilter(
        [("*".to_string(), true), (refused.to_string(), false)]
            .into_iter()
            .collect(),
    );
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path(), Policy::supervised());
    let mut messages = vec![Message::user("go")];
    rt.run(&agent, &mut messages, &ctx, None).await.unwrap();
    model.requests()[0]
        .tools
        .iter()
        .map(|s| s.name.clone())
        .collect()
}
