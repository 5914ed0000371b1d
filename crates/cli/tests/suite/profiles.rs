//! Every rule table under every profile: rules name tools canonically, and a call made under a
//! profile's name (with its argument names) meets exactly the rules the canonical call meets.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tool_core::{Limits, PROFILES, Stack, ToolContext, Workspace};
use toolshed_cli::config::Config;

/// The rule table, written with canonical names: each rule refuses what its row's attack does
/// and nothing its twin does.
const RULES: &str = r#"
[policy]
autonomy = "full"

[policy.rules]
"file_write(secret/**)" = "deny"
"file_read(secret/**)" = "deny"
"file_edit(secret/**)" = "deny"
"file_append(secret/**)" = "deny"
"delete_file(secret/**)" = "deny"
"make_dir(secret/**)" = "deny"
"list_dir(secret/**)" = "deny"
"grep(secret/**)" = "deny"
"find_files(secret/**)" = "deny"
"git_operations(secret/**)" = "deny"
"shell(echo secret*)" = "deny"
"memory_store" = "deny"
"memory_recall" = "deny"
"memory_list" = "deny"
"memory_forget" = "deny"
"remember" = "deny"
"recall" = "deny"
"list_keys" = "deny"
"#;

/// (canonical tool, attack arguments, twin arguments; `None`: the twin is the same call without
/// the rules).
fn rows() -> Vec<(&'static str, Value, Option<Value>)> {
    let p = |tool: &'static str, extra: Value, attack: &str, twin: &str| {
        let with = |path: &str| {
            let mut m = extra.as_object().cloned().unwrap_or_default();
            m.insert("path".into(), json!(path));
            Value::Object(m)
        };
        (tool, with(attack), Some(with(twin)))
    };
    vec![
        p(
            "file_write",
            json!({"content": "x"}),
            "secret/new.txt",
            "open/new.txt",
        ),
        p("file_read", json!({}), "secret/k.txt", "open/k.txt"),
        p(
            "file_edit",
            json!({"old_string": "a", "new_string": "b"}),
            "secret/k.txt",
            "open/k.txt",
        ),
        p(
            "file_append",
            json!({"content": "x"}),
            "secret/k.txt",
            "open/k.txt",
        ),
        p("delete_file", json!({}), "secret/k.txt", "open/k.txt"),
        p("make_dir", json!({}), "secret/d", "open/d"),
        p("list_dir", json!({}), "secret", "open"),
        p("grep", json!({"pattern": "a"}), "secret", "open"),
        p(
            "find_files",
            json!({"pattern": "*", "max_results": 10}),
            "secret",
            "open",
        ),
        (
            "git_operations",
            json!({"operation": "diff", "paths": ["secret/k.txt"]}),
            Some(json!({"operation": "diff", "paths": ["open/k.txt"]})),
        ),
        (
            "shell",
            json!({"command": "echo secret"}),
            Some(json!({"command": "echo open"})),
        ),
        ("memory_store", json!({"key": "k", "content": "c"}), None),
        ("memory_recall", json!({"query": "c"}), None),
        ("memory_list", json!({}), None),
        ("memory_forget", json!({"key": "k"}), None),
        ("remember", json!({"key": "k", "value": "v"}), None),
        ("recall", json!({"key": "k"}), None),
        ("list_keys", json!({}), None),
    ]
}

/// `args` with the canonical field names replaced by the alias's.
fn renamed(args: &Value, renames: &[(&str, &str)]) -> Value {
    let mut out = Map::new();
    for (k, v) in args.as_object().unwrap() {
        let name = renames
            .iter()
            .find(|(_, canonical)| canonical == k)
            .map(|(alias, _)| *alias)
            .unwrap_or(k);
        out.insert(name.to_owned(), v.clone());
    }
    Value::Object(out)
}

fn config(text: &str, data: &std::path::Path) -> Config {
    let mut c: Config = toml::from_str(text).unwrap();
    c.data_dir = Some(data.to_path_buf());
    c
}

async fn denied(stack: &Stack, ctx: &ToolContext, tool: &str, args: &Value) -> Option<String> {
    match stack.call(tool, args.clone(), ctx.for_call()).await {
        Err(e) if e.kind() == tool_core::ErrorKind::Denied => None,
        Err(e) if e.kind() == tool_core::ErrorKind::InvalidArgs => {
            panic!("{tool} {args}: the row's arguments do not fit: {e}")
        }
        Err(e) => Some(e.to_string()),
        Ok(_) => Some("ok".into()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rule_table_holds_under_every_profile() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    for d in ["secret", "open"] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
        std::fs::write(ws.join(d).join("k.txt"), "a\n").unwrap();
    }
    let ruled = config(RULES, &dir.path().join("data"));
    let open = config("[policy]\nautonomy = \"full\"\n", &dir.path().join("data"));
    let ctx = |c: &Config| {
        ToolContext::new(
            Workspace::local(&ws).unwrap(),
            Arc::new(c.policy().unwrap()),
            Arc::new(Limits::default()),
        )
    };
    let aliases = toolshed_cli::aliases();
    let mut checked = 0;
    for profile in [None].into_iter().chain(PROFILES.iter().copied().map(Some)) {
        let stack = Stack::new(toolshed_cli::registry_for(&ruled, profile).unwrap());
        let twin_stack = Stack::new(toolshed_cli::registry_for(&open, profile).unwrap());
        for (canonical, attack, twin) in rows() {
            // The names this profile calls the tool by, with their argument renames.
            let names: Vec<(&str, &[(&str, &str)])> = match profile {
                None => vec![(canonical, &[])],
                Some(p) => aliases
                    .iter()
                    .filter(|a| a.profile == p && a.target == canonical)
                    .map(|a| (a.name, a.renames))
                    .collect(),
            };
            for (name, renames) in names {
                let label = format!("{profile:?} {name} (= {canonical})");
                let attack = renamed(&attack, renames);
                let outcome = denied(&stack, &ctx(&ruled), name, &attack).await;
                assert_eq!(outcome, None, "{label} {attack}: not refused");
                let (twin_stack, twin_ctx, twin_args) = match &twin {
                    Some(t) => (&stack, ctx(&ruled), renamed(t, renames)),
                    None => (&twin_stack, ctx(&open), attack.clone()),
                };
                let outcome = denied(twin_stack, &twin_ctx, name, &twin_args).await;
                assert!(outcome.is_some(), "{label} twin {twin_args}: refused");
                checked += 1;
            }
        }
    }
    // Every row under the canonical names, and every alias of those tools in every profile.
    let expected = rows().len()
        + aliases
            .iter()
            .filter(|a| rows().iter().any(|(c, _, _)| *c == a.target))
            .count();
    assert_eq!(checked, expected);
}

/// What a human reads names the canonical tool, and the alias the call used: the approval
/// request and the audit record. Twin: a call by the canonical name has no alias.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_and_audit_records_name_the_canonical_tool() {
    #[derive(Debug, Default)]
    struct Recording(std::sync::Mutex<Vec<tool_core::ApprovalRequest>>);
    #[async_trait::async_trait]
    impl tool_core::Approver for Recording {
        async fn approve(&self, request: &tool_core::ApprovalRequest) -> tool_core::Approval {
            self.0.lock().unwrap().push(request.clone());
            tool_core::Approval::Approved
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let c = config(
        "[policy.rules]\n\"file_write\" = \"ask\"\n",
        &dir.path().join("data"),
    );
    let ctx = ToolContext::new(
        Workspace::local(&ws).unwrap(),
        Arc::new(c.policy().unwrap()),
        Arc::new(Limits::default()),
    );
    for (profile, name, args, alias) in [
        (
            Some("sneakycode"),
            "write_file",
            json!({"file_path": "a.txt", "content": "x"}),
            Some("write_file"),
        ),
        (
            None,
            "file_write",
            json!({"path": "b.txt", "content": "x"}),
            None,
        ),
    ] {
        let approver = Arc::new(Recording::default());
        let audit = tool_core::MemoryAudit::default();
        let stack = Stack::new(toolshed_cli::registry_for(&c, profile).unwrap())
            .with_approver(Arc::clone(&approver) as Arc<dyn tool_core::Approver>)
            .with_audit(Arc::new(audit.clone()));
        stack.call(name, args, ctx.for_call()).await.unwrap();
        let asked = approver.0.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "{name}");
        assert_eq!(asked[0].tool, "file_write", "{name}");
        assert_eq!(asked[0].called_as.as_deref(), alias, "{name}");
        assert!(
            asked[0]
                .tool_label()
                .contains(alias.unwrap_or("file_write")),
            "{name}"
        );
        let record = audit.records().pop().unwrap();
        assert_eq!(record.tool, "file_write", "{name}");
        assert_eq!(record.called_as.as_deref(), alias, "{name}");
    }
}

/// Found by the adversary: a symbolic link's target was not judged, so `notes.txt ->
/// secrets/db.txt` (planted in a clone, or made by `ln -s` in the shell) showed a read-denied
/// file. A read of a link meets the rules on the file it leads to, through chains of links too.
/// Twins: links to readable files, and the files themselves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_is_judged_as_the_file_it_leads_to() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    for (rel, text) in [
        ("secrets/db.txt", "TOPSECRET"),
        ("literal.txt", "LITERAL"),
        ("a/b/key.pem", "PEMSECRET"),
        ("open/ok.txt", "fine"),
    ] {
        std::fs::create_dir_all(ws.join(rel).parent().unwrap()).unwrap();
        std::fs::write(ws.join(rel), text).unwrap();
    }
    for (link, target) in [
        ("notes.txt", "secrets/db.txt"),
        ("l2.txt", "literal.txt"),
        ("link.txt", "a/b/key.pem"),
        ("c2.txt", "notes.txt"),
        ("c1.txt", "c2.txt"),
        ("sdir", "secrets"),
        ("ok-link.txt", "open/ok.txt"),
    ] {
        symlink(target, ws.join(link)).unwrap();
    }
    let c = config(
        "[policy.rules]\n\"read(secrets/**)\" = \"deny\"\n\"read(literal.txt)\" = \"deny\"\n\"read(**/*.pem)\" = \"deny\"\n",
        &dir.path().join("data"),
    );
    let ctx = ToolContext::new(
        Workspace::local(&ws).unwrap(),
        Arc::new(c.policy().unwrap()),
        Arc::new(Limits::default()),
    );
    let stack = Stack::new(toolshed_cli::registry_for(&c, None).unwrap());
    #[rustfmt::skip]
    let rows: Vec<(&str, Value, bool)> = vec![
        ("file_read", json!({"path": "notes.txt"}), true),
        ("file_read", json!({"path": "l2.txt"}), true),
        ("file_read", json!({"path": "link.txt"}), true),
        ("file_read", json!({"path": "c1.txt"}), true),
        ("grep", json!({"pattern": "SECRET", "path": "notes.txt"}), true),
        ("list_dir", json!({"path": "sdir"}), true),
        ("file_read", json!({"path": "ok-link.txt"}), false),
        ("file_read", json!({"path": "open/ok.txt"}), false),
        ("grep", json!({"pattern": "fine", "path": "ok-link.txt"}), false),
    ];
    for (tool, args, refused) in rows {
        let result = stack.call(tool, args.clone(), ctx.for_call()).await;
        match result {
            Err(e) if e.kind() == tool_core::ErrorKind::Denied => {
                assert!(refused, "{tool} {args}: {e}");
            }
            other => {
                assert!(!refused, "{tool} {args}: {other:?}");
                let text = other.unwrap().joined_text();
                assert!(
                    !text.contains("SECRET") && !text.contains("LITERAL"),
                    "{text}"
                );
            }
        }
    }
}

/// Two tools that do the same job meet each other's rules: a rule on `cron_add` holds for
/// `schedule` with `once`, one on `schedule` for `cron_add`, one on `browser_open` or
/// `web_fetch` for `browser` with `open` or `read`, and the reverse (round 16: each named one
/// and left the other open). Each row's twin is the same call under a rule on a tool whose job
/// it does not do, which must not refuse it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_holds_for_every_tool_that_does_the_same_job() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let base = r#"
[policy]
autonomy = "full"
allow_http = true
allowed_hosts = ["127.0.0.1"]
[web]
browser_command = ["true"]
allow_loopback_for_tests = ["127.0.0.1"]
"#;
    let once = json!({"action": "once", "delay": "1h", "command": "echo hi"});
    let add = json!({"delay": "1h", "command": "echo hi"});
    let page = "http://127.0.0.1:9/";
    let rows: Vec<(&str, &str, Value, &str)> = vec![
        // (rule on, call, arguments, a rule that must not refuse it)
        ("cron_add", "schedule", once.clone(), "cron_remove"),
        ("schedule", "cron_add", add.clone(), "cron_remove"),
        (
            "cron_list",
            "schedule",
            json!({"action": "list"}),
            "cron_add",
        ),
        ("schedule", "cron_list", json!({}), "cron_add"),
        (
            "cron_remove",
            "schedule",
            json!({"action": "cancel", "job_id": 1}),
            "cron_add",
        ),
        ("schedule", "cron_remove", json!({"job_id": 1}), "cron_add"),
        (
            "cron_update",
            "schedule",
            json!({"action": "pause", "job_id": 1}),
            "cron_add",
        ),
        (
            "schedule",
            "cron_update",
            json!({"job_id": 1, "paused": true}),
            "cron_add",
        ),
        (
            "cron_runs",
            "schedule",
            json!({"action": "get", "job_id": 1}),
            "cron_add",
        ),
        ("schedule", "cron_runs", json!({"job_id": 1}), "cron_add"),
        (
            "web_fetch",
            "browser",
            json!({"action": "read", "url": page}),
            "browser_open",
        ),
        ("browser", "web_fetch", json!({"url": page}), "browser_open"),
        (
            "browser_open",
            "browser",
            json!({"action": "open", "url": "https://127.0.0.1:9/"}),
            "web_fetch",
        ),
        (
            "browser",
            "browser_open",
            json!({"url": "https://127.0.0.1:9/"}),
            "web_fetch",
        ),
    ];
    for (rule, tool, args, other) in rows {
        for (ruled, must_refuse) in [(rule, true), (other, false)] {
            let text = format!("{base}[policy.rules]\n\"{ruled}\" = \"deny\"\n");
            let c = config(&text, &dir.path().join("data"));
            let ctx = ToolContext::new(
                Workspace::local(&ws).unwrap(),
                Arc::new(c.policy().unwrap()),
                Arc::new(Limits::default()),
            );
            let stack = Stack::new(toolshed_cli::registry_for(&c, None).unwrap());
            let outcome = denied(&stack, &ctx, tool, &args).await;
            if must_refuse {
                assert_eq!(outcome, None, "`{ruled}` = deny did not stop {tool} {args}");
            } else {
                assert!(
                    outcome.is_some(),
                    "`{ruled}` = deny refused {tool} {args}, whose job it does not do"
                );
            }
        }
    }
}

/// Doing the same job goes both ways, and names tools that exist: when `schedule` does
/// `cron_add`'s job, `cron_add` does `schedule`'s, so a rule or an allow map on either holds
/// for both.
#[test]
fn the_same_job_is_named_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let c = config("[policy]\nautonomy = \"full\"\n", &dir.path().join("data"));
    let registry = toolshed_cli::registry_for(&c, None).unwrap();
    let mut pairs = 0;
    for name in registry.names() {
        for other in registry.same_job(name) {
            assert!(
                registry.offers(other),
                "{name} names {other}, which no tool is"
            );
            assert!(
                registry.same_job(other).contains(&name),
                "{name} does {other}'s job, but {other} does not say it does {name}'s"
            );
            pairs += 1;
        }
    }
    assert!(pairs >= 14, "{pairs}");
}

/// No tool makes a directory that git would take for a repository (`HEAD` with `objects/` and
/// `refs/`, or with `commondir`), whatever its name: git runs programs from its config when
/// the user's git next works there (round 18: four `file_write` calls planted one in `src/`).
/// Each row is a write that would complete (or write into) such a directory, beside a twin
/// that does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_tool_makes_a_directory_shaped_like_git() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    for d in [
        "a/objects",
        "a/refs",
        "b/refs",
        "c/objects",
        "c/refs",
        "objects",
        "refs",
    ] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    std::fs::write(ws.join("b/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(ws.join("c/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir_all(ws.join("d")).unwrap();
    std::fs::write(ws.join("d/HEAD"), "ref: refs/heads/main\n").unwrap();
    // `objects` and `refs` as an executable file and as links out (round 19).
    std::fs::create_dir_all(ws.join("f")).unwrap();
    std::fs::write(ws.join("f/objects"), "#!/bin/sh\n").unwrap();
    std::fs::write(ws.join("f/refs"), "#!/bin/sh\n").unwrap();
    std::fs::create_dir_all(ws.join("g")).unwrap();
    std::os::unix::fs::symlink("/usr", ws.join("g/objects")).unwrap();
    std::os::unix::fs::symlink("/usr", ws.join("g/refs")).unwrap();
    let c = config("[policy]\nautonomy = \"full\"\n", &dir.path().join("data"));
    let ctx = ToolContext::new(
        Workspace::local(&ws).unwrap(),
        Arc::new(c.policy().unwrap()),
        Arc::new(Limits::default()),
    );
    let stack = Stack::new(toolshed_cli::registry_for(&c, None).unwrap());
    let write = |path: &str| json!({"path": path, "content": "ref: refs/heads/main\n"});
    let rows: Vec<(&str, Value, Value)> = vec![
        // HEAD into a directory with objects/ and refs/; twin: one without objects/.
        ("file_write", write("a/HEAD"), write("b/HEAD.txt")),
        // objects/ beside HEAD and refs/; twin: beside refs/ alone.
        (
            "make_dir",
            json!({"path": "b/objects"}),
            json!({"path": "a/objects/x"}),
        ),
        // config into a finished one; twin: config where there is no HEAD.
        (
            "file_write",
            json!({"path": "c/config", "content": "[core]\n"}),
            json!({"path": "a/config", "content": "[core]\n"}),
        ),
        // commondir beside HEAD; twin: beside nothing.
        (
            "file_write",
            json!({"path": "d/commondir", "content": "../.git\n"}),
            json!({"path": "e/commondir", "content": "../.git\n"}),
        ),
        // The workspace root itself; twin: a file named like it elsewhere.
        ("file_write", write("HEAD"), write("notes/HEAD")),
        (
            "file_append",
            json!({"path": "c/hooks/pre-commit", "content": "x"}),
            json!({"path": "notes/hooks", "content": "x"}),
        ),
        ("file_write", write("f/HEAD"), write("f/HEAD.txt")),
        ("file_write", write("g/HEAD"), write("g/README")),
        // One patch that makes the whole shape; twin: the same files under other names.
        (
            "patch_apply",
            json!({"patch": "--- /dev/null\n+++ b/p/HEAD\n@@ -0,0 +1 @@\n+ref: refs/heads/main\n--- /dev/null\n+++ b/p/objects/k\n@@ -0,0 +1 @@\n+x\n--- /dev/null\n+++ b/p/refs/heads/k\n@@ -0,0 +1 @@\n+x\n--- /dev/null\n+++ b/p/config\n@@ -0,0 +1 @@\n+[core]\n"}),
            json!({"patch": "--- /dev/null\n+++ b/q/HEAD.md\n@@ -0,0 +1 @@\n+ref: refs/heads/main\n--- /dev/null\n+++ b/q/objects/k\n@@ -0,0 +1 @@\n+x\n--- /dev/null\n+++ b/q/refs/heads/k\n@@ -0,0 +1 @@\n+x\n"}),
        ),
        (
            "patch_apply",
            json!({"patch": "--- /dev/null\n+++ b/s/HEAD\n@@ -0,0 +1 @@\n+ref: refs/heads/main\n--- /dev/null\n+++ b/s/commondir\n@@ -0,0 +1 @@\n+../r\n"}),
            json!({"patch": "--- /dev/null\n+++ b/t/HEAD\n@@ -0,0 +1 @@\n+ref: refs/heads/main\n"}),
        ),
    ];
    for (tool, attack, twin) in rows {
        assert_eq!(
            denied(&stack, &ctx, tool, &attack).await,
            None,
            "{tool} {attack} was let through"
        );
        assert!(
            denied(&stack, &ctx, tool, &twin).await.is_some(),
            "{tool} {twin} was refused"
        );
    }
    assert!(!ws.join("a/HEAD").exists());
    assert!(!ws.join("c/config").exists());
    assert!(!ws.join("p/HEAD").exists() && !ws.join("s/commondir").exists());
}
