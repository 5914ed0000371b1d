//! Round trips of every tool, the lazy open, internal keys, the snowball guard, what each tool
//! declares to the policy, and the schemas the model reads. Everything but the SQLite file's
//! own properties runs on every backend.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;
use tool_core::{ErrorKind, Policy, Registry, Stack};
use tools_memory::Config;

use super::{Fixture, context, fixtures, keys};

#[tokio::test]
async fn building_the_tools_creates_no_file_and_the_first_call_does() {
    let f = Fixture::sqlite();
    let db = f.sqlite_path();
    // Building the registry and reading every schema touches nothing.
    let mut registry = Registry::new();
    registry
        .register_all(tools_memory::tools(&Config::new(db)))
        .unwrap();
    assert_eq!(registry.len(), 7);
    for spec in registry.specs() {
        assert!(spec.input_schema.is_object());
    }
    assert!(!db.parent().unwrap().exists());
    // A read-only call creates the database, private to the user.
    f.ok("memory_list", "{}").await;
    assert!(db.is_file());
    let dir_mode = std::fs::metadata(db.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
    let file_mode = std::fs::metadata(db).unwrap().permissions().mode();
    assert_eq!(file_mode & 0o777, 0o600);
    let conn = f.sql();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 1);
}

#[tokio::test]
async fn store_recall_list_and_forget_round_trip() {
    for f in fixtures() {
        let out = f
            .store(
                "user_timezone",
                "The user lives in Berlin and works in the Europe/Berlin timezone.",
                "",
            )
            .await;
        assert!(
            out.joined_text()
                .starts_with("Stored memory \"user_timezone\" (core,"),
            "{}",
            out.joined_text()
        );
        assert_eq!(out.structured.as_ref().unwrap()["created"], true);
        assert_eq!(out.structured.as_ref().unwrap()["embedding"], "off");
        f.store(
            "project_deadline",
            "The Q3 report is due on 30 September.",
            r#""category":"daily","session_id":"s1""#,
        )
        .await;

        let found = f.recall(json!({"query": "when is the report due"})).await;
        assert_eq!(keys(&found), ["project_deadline"]);
        assert_eq!(found["mode"], "keyword");
        let m = &found["memories"][0];
        assert_eq!(m["content"], "The Q3 report is due on 30 September.");
        assert_eq!(m["category"], "daily");
        assert_eq!(m["session_id"], "s1");
        assert!(m["score"].as_f64().unwrap() > 0.0);

        let text = f
            .text("memory_recall", r#"{"query":"Berlin timezone"}"#)
            .await;
        assert!(
            text.starts_with("1 memory matches \"Berlin timezone\""),
            "{text}"
        );
        assert!(
            text.contains("<recalled_memory key=\"user_timezone\" category=\"core\" updated=\""),
            "{text}"
        );
        assert!(
            text.contains("Europe/Berlin timezone.\n</recalled_memory>"),
            "{text}"
        );

        // Newest first; without content only one line each.
        let listed = f.ok("memory_list", "{}").await;
        assert_eq!(
            keys(listed.structured.as_ref().unwrap()),
            ["project_deadline", "user_timezone"]
        );
        let short = f.text("memory_list", r#"{"include_content":false}"#).await;
        assert!(!short.contains("Berlin"), "{short}");
        assert!(
            short.contains("\"user_timezone\" (core, 65 bytes, updated "),
            "{short}"
        );

        // Upsert: replacing content, then storing the same content again.
        let replaced = f
            .store("user_timezone", "The user moved to Lisbon.", "")
            .await;
        assert!(
            replaced.joined_text().starts_with(
                "Replaced memory \"user_timezone\" (core, 25 bytes; it held 65 bytes before)."
            ),
            "{}",
            replaced.joined_text()
        );
        let same = f
            .store("user_timezone", "The user moved to Lisbon.", "")
            .await;
        assert!(same.joined_text().contains("already held this content"));
        let berlin = f.recall(json!({"query": "Berlin"})).await;
        assert!(keys(&berlin).is_empty(), "the index forgot the old content");
        assert_eq!(
            keys(&f.recall(json!({"query": "Lisbon"})).await),
            ["user_timezone"]
        );

        // Forget deletes exactly that key, and says when there was none.
        let gone = f.text("memory_forget", r#"{"key":"user_timezone"}"#).await;
        assert_eq!(gone, "Forgot memory \"user_timezone\" (core, 25 bytes).");
        assert!(keys(&f.recall(json!({"query": "Lisbon"})).await).is_empty());
        let e = f.err("memory_forget", r#"{"key":"user_timezone"}"#).await;
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.to_string().contains("Call memory_list"), "{e}");
        let listed = f.ok("memory_list", "{}").await;
        assert_eq!(
            keys(listed.structured.as_ref().unwrap()),
            ["project_deadline"]
        );
    }
}

#[tokio::test]
async fn the_key_value_store_round_trips_and_lists_prefixes_literally() {
    for f in fixtures() {
        let kv = [
            "build_cmd",
            "build%x",
            "build_",
            "buildXcmd",
            "build",
            "bu",
            "c",
            "_secret",
            "_sys_x",
            "日本",
            "日本語",
        ];
        for key in kv {
            let out = f
                .text(
                    "remember",
                    &json!({"key": key, "value": format!("value of {key}")}).to_string(),
                )
                .await;
            assert!(out.starts_with("Remembered"), "{out}");
        }
        let again = f.text("remember", r#"{"key":"c","value":"new"}"#).await;
        assert_eq!(again, "Replaced the value of \"c\" (3 bytes).");
        assert_eq!(f.text("recall", r#"{"key":"c"}"#).await, "new");
        assert_eq!(
            f.text("recall", r#"{"key":"build%x"}"#).await,
            "value of build%x"
        );
        let e = f.err("recall", r#"{"key":"build*"}"#).await;
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.to_string().contains("Call list_keys"), "{e}");

        let f = &f;
        let list = |prefix: &str, internal: bool| {
            let args = json!({"prefix": prefix, "include_internal": internal}).to_string();
            async move {
                let out = f.ok("list_keys", &args).await;
                out.structured.unwrap()["keys"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|k| k.as_str().unwrap().to_string())
                    .collect::<Vec<_>>()
            }
        };
        // `_` and `%` are data: LIKE would have matched `build%x`/`buildXcmd` for `build_`.
        assert_eq!(list("build_", false).await, ["build_", "build_cmd"]);
        assert_eq!(list("build%", false).await, ["build%x"]);
        assert_eq!(
            list("build", false).await,
            ["build", "build%x", "buildXcmd", "build_", "build_cmd"]
        );
        assert_eq!(list("%", false).await, Vec::<String>::new());
        assert_eq!(list("日本", false).await, ["日本", "日本語"]);
        // Internal keys only on request, or with a prefix that asks for them.
        let all = list("", false).await;
        assert!(!all.iter().any(|k| k.starts_with('_')), "{all:?}");
        assert_eq!(all.len(), kv.len() - 2);
        assert_eq!(list("", true).await.len(), kv.len());
        assert_eq!(list("_s", false).await, ["_secret", "_sys_x"]);
        assert_eq!(list("_sys_", false).await, ["_sys_x"]);
        let text = f.text("list_keys", r#"{"prefix":"zzz"}"#).await;
        assert_eq!(text, "No keys starting with \"zzz\" are set.");
    }
}

#[tokio::test]
async fn internal_keys_are_hidden_unless_asked_for() {
    for f in fixtures() {
        let out = f
            .store("_agent_state", "summary of the zebra project so far", "")
            .await;
        assert!(out.joined_text().contains("it is internal"));
        f.store("zebra_fact", "zebra stripes are unique", "").await;

        assert_eq!(
            keys(&f.recall(json!({"query": "zebra"})).await),
            ["zebra_fact"]
        );
        let both = f
            .recall(json!({"query": "zebra", "include_internal": true}))
            .await;
        let mut found = keys(&both);
        found.sort();
        assert_eq!(found, ["_agent_state", "zebra_fact"]);

        let listed = f.ok("memory_list", "{}").await;
        assert_eq!(keys(listed.structured.as_ref().unwrap()), ["zebra_fact"]);
        assert_eq!(listed.structured.as_ref().unwrap()["total"], 1);
        assert!(
            listed
                .joined_text()
                .contains("internal keys starting with `_` are not shown")
        );
        let listed = f.ok("memory_list", r#"{"include_internal":true}"#).await;
        assert_eq!(listed.structured.as_ref().unwrap()["total"], 2);

        // Exact-key calls work on internal keys like on any other.
        f.ok("memory_forget", r#"{"key":"_agent_state"}"#).await;
        let listed = f.ok("memory_list", r#"{"include_internal":true}"#).await;
        assert_eq!(listed.structured.as_ref().unwrap()["total"], 1);
    }
}

#[tokio::test]
async fn recall_output_is_never_stored_again() {
    for f in fixtures() {
        f.store("coffee", "The user drinks espresso without sugar.", "")
            .await;
        let recalled = f.text("memory_recall", r#"{"query":"espresso"}"#).await;
        // The snowball: storing the recall blob (alone or wrapped in new text) is refused.
        for content in [
            recalled.clone(),
            format!("Summary of what I know:\n{recalled}\nAlso: the user likes tea."),
            "<RECALLED_MEMORY key=\"x\">old</RECALLED_MEMORY>".to_string(),
        ] {
            let e = f
                .err(
                    "memory_store",
                    &json!({"key": "snowball", "content": content}).to_string(),
                )
                .await;
            assert_eq!(e.kind(), ErrorKind::InvalidArgs, "{e}");
            let msg = e.to_string();
            assert!(msg.contains("at `/content`"), "{msg}");
            assert!(msg.contains("only the new fact"), "{msg}");
        }
        // A memory listing is the same frame.
        let listed = f.text("memory_list", "{}").await;
        let e = f
            .err(
                "remember",
                &json!({"key": "notes", "value": listed}).to_string(),
            )
            .await;
        assert_eq!(e.kind(), ErrorKind::InvalidArgs, "{e}");
        // The benign twins: the new fact alone, and text that merely talks about recalling.
        f.store("tea", "The user also likes green tea.", "").await;
        f.store(
            "about",
            "I recalled a memory about a recalled_memory tag.",
            "",
        )
        .await;
        let listed = f.ok("memory_list", "{}").await;
        assert_eq!(listed.structured.as_ref().unwrap()["total"], 3);
        // Nothing grew: the espresso memory is recalled once, as stored.
        let again = f.recall(json!({"query": "espresso"})).await;
        assert_eq!(keys(&again), ["coffee"]);
    }
}

#[tokio::test]
async fn limits_and_empty_results_are_explained() {
    for f in fixtures() {
        let text = f.text("memory_recall", r#"{"query":"anything"}"#).await;
        assert!(text.starts_with("No memory matches \"anything\""), "{text}");
        assert!(text.contains("memory_list"), "{text}");
        let text = f.text("memory_list", r#"{"session_id":"s9"}"#).await;
        assert_eq!(text, "No memories in session \"s9\" are stored.");
        for i in 0..7 {
            f.store(
                &format!("k{i}"),
                &format!("fact number {i} about llamas"),
                "",
            )
            .await;
        }
        let five = f.recall(json!({"query": "llamas"})).await;
        assert_eq!(keys(&five).len(), 5, "the default limit");
        let listed = f.ok("memory_list", r#"{"limit":3}"#).await;
        assert_eq!(
            keys(listed.structured.as_ref().unwrap()),
            ["k6", "k5", "k4"]
        );
        assert!(
            listed
                .joined_text()
                .starts_with("The newest 3 of 7 memories; pass a larger `limit`"),
            "{}",
            listed.joined_text()
        );
        for (args, path) in [
            (r#"{"query":"x","limit":0}"#, "/limit"),
            (r#"{"query":"x","limit":101}"#, "/limit"),
        ] {
            let e = f.err("memory_recall", args).await;
            assert_eq!(e.kind(), ErrorKind::InvalidArgs);
            assert!(e.to_string().contains(path), "{e}");
        }
        let e = f.err("memory_list", r#"{"limit":1001}"#).await;
        assert_eq!(e.kind(), ErrorKind::InvalidArgs);
    }
}

#[tokio::test]
async fn reads_run_under_a_read_only_policy_and_writes_do_not() {
    for f in fixtures() {
        f.store("fact", "read only policies allow recall", "").await;
        let ro = context(f.dir.path(), Policy::read_only());
        for (tool, args) in [
            ("memory_recall", r#"{"query":"recall"}"#),
            ("memory_list", "{}"),
            ("list_keys", "{}"),
        ] {
            f.stack
                .call_json(tool, args, ro.for_call())
                .await
                .unwrap_or_else(|e| panic!("{tool}: {e}"));
        }
        let e = f
            .stack
            .call_json("recall", r#"{"key":"nothing"}"#, ro.for_call())
            .await
            .unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::NotFound,
            "a read reaches the store: {e}"
        );
        for (tool, args) in [
            ("memory_store", r#"{"key":"k","content":"c"}"#),
            ("memory_forget", r#"{"key":"fact"}"#),
            ("remember", r#"{"key":"k","value":"v"}"#),
        ] {
            let e = f
                .stack
                .call_json(tool, args, ro.for_call())
                .await
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Denied, "{tool}: {e}");
            assert!(e.to_string().contains("change"), "{e}");
        }
        // A rule on the store name: the scratchpad may be denied while memory stays open.
        let policy = Policy::supervised()
            .rule("remember(kv)", tool_core::Decision::Deny)
            .unwrap();
        let ctx = context(f.dir.path(), policy);
        let e = f
            .stack
            .call_json("remember", r#"{"key":"k","value":"v"}"#, ctx.for_call())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Denied);
        f.stack
            .call_json(
                "memory_store",
                r#"{"key":"k","content":"c"}"#,
                ctx.for_call(),
            )
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn schemas_and_annotations_say_what_the_tools_do() {
    let registry = Stack::new({
        let mut r = Registry::new();
        r.register_all(tools_memory::tools(&Config::new(
            "/nonexistent/never/created.db",
        )))
        .unwrap();
        r
    });
    let specs = registry.registry().specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "list_keys",
            "memory_forget",
            "memory_list",
            "memory_recall",
            "memory_store",
            "recall",
            "remember"
        ]
    );
    for spec in &specs {
        assert!(spec.description.ends_with('.'), "{}", spec.name);
        let props = spec.input_schema["properties"].as_object().unwrap();
        for (field, schema) in props {
            let d = schema["description"]
                .as_str()
                .unwrap_or_else(|| panic!("{}.{field} has no description: {schema}", spec.name));
            assert!(d.ends_with('.'), "{}.{field}: {d}", spec.name);
        }
        let a = spec.annotations;
        match spec.name.as_str() {
            "memory_recall" | "memory_list" | "recall" | "list_keys" => assert!(a.read_only),
            "memory_forget" => assert!(a.destructive && !a.read_only),
            "memory_store" | "remember" => {
                assert!(!a.read_only && !a.destructive && a.idempotent)
            }
            other => panic!("unexpected tool {other}"),
        }
        assert!(!a.open_world, "{}", spec.name);
    }
    assert!(!std::path::Path::new("/nonexistent/never").exists());
    // Profiles keep the seeds' names.
    let base = registry.registry().clone();
    for (profile, name) in [("nullclaw", "memory_recall"), ("pig", "list_keys")] {
        let r = base.with_profile(profile, tools_memory::ALIASES).unwrap();
        assert!(r.spec(name).is_some(), "{profile}: {name}");
        assert_eq!(r.len(), 7);
    }
}

#[tokio::test]
async fn an_unusable_database_path_is_a_sentence_not_a_crash() {
    let f = Fixture::sqlite();
    // A file where the directory should be.
    std::fs::write(f.dir.path().join("data"), "not a directory").unwrap();
    let e = f.err("memory_list", "{}").await;
    assert_eq!(e.kind(), ErrorKind::Failed, "{e}");
    assert!(e.to_string().contains("memory database"), "{e}");
    // Another program's SQLite file is refused, not given tables.
    let g = Fixture::sqlite();
    std::fs::create_dir_all(g.sqlite_path().parent().unwrap()).unwrap();
    let conn = rusqlite::Connection::open(g.sqlite_path()).unwrap();
    conn.execute_batch("CREATE TABLE theirs(x)").unwrap();
    drop(conn);
    let e = g.err("memory_recall", r#"{"query":"x"}"#).await;
    assert!(e.to_string().contains("another program"), "{e}");
    // A database of a newer layout is refused rather than misread.
    let h = Fixture::sqlite();
    h.ok("memory_list", "{}").await;
    h.sql().pragma_update(None, "user_version", 99).unwrap();
    let fresh = h.stack_with(|c| c);
    let e = fresh
        .call_json("memory_list", "{}", h.ctx.for_call())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("newer than this Toolshed"), "{e}");
    // After the cause is fixed, the next call opens it.
    std::fs::remove_file(f.dir.path().join("data")).unwrap();
    f.ok("memory_list", "{}").await;
}

fn new_memory(key: &str, content: &str) -> tools_memory::NewMemory {
    tools_memory::NewMemory {
        key: key.into(),
        content: content.into(),
        category: tools_memory::Category::Core,
        session_id: None,
    }
}

/// The store API's contract, on every backend: what an upsert reports, the index, the vector
/// and the embedding queue kept in step with the content, the cache, and the scratchpad.
#[test]
fn stores_keep_the_index_the_vectors_and_the_queue_in_step() {
    use tools_memory::{Filter, Pending, Replaced};
    for b in super::backends() {
        let m = &b.memory;
        let search = |word: &str| -> Vec<String> {
            m.keyword_search(&[word.to_string()], &Filter::default(), 10, None)
                .unwrap()
                .into_iter()
                .map(|h| h.memory.key)
                .collect()
        };
        let first = m.upsert(&new_memory("k", "apples"), 1).unwrap();
        assert_eq!(first.replaced, None, "{}", b.name);
        assert!(m.set_embedding(first.id, "apples", "m", &[1.0]).unwrap());
        assert!(
            m.pending_embeddings("m", 10).unwrap().is_empty(),
            "{}",
            b.name
        );
        // The same content keeps the vector; new content drops it and queues the memory.
        let same = m.upsert(&new_memory("k", "apples"), 2).unwrap();
        assert_eq!(
            same.replaced,
            Some(Replaced {
                previous_bytes: 6,
                same_content: true
            }),
            "{}",
            b.name
        );
        assert!(m.pending_embeddings("m", 10).unwrap().is_empty());
        let changed = m.upsert(&new_memory("k", "pears"), 3).unwrap();
        assert_eq!(changed.id, first.id);
        assert_eq!(
            changed.replaced,
            Some(Replaced {
                previous_bytes: 6,
                same_content: false
            })
        );
        assert_eq!(search("apples"), Vec::<String>::new(), "{}", b.name);
        assert_eq!(search("pears"), ["k"], "{}", b.name);
        assert_eq!(
            m.pending_embeddings("m", 10).unwrap(),
            [Pending {
                id: first.id,
                content: "pears".into()
            }],
            "{}",
            b.name
        );
        // A vector for content that has since changed is not stored.
        assert!(!m.set_embedding(first.id, "apples", "m", &[1.0]).unwrap());
        assert!(m.set_embedding(first.id, "pears", "m", &[1.0]).unwrap());
        assert_eq!(m.embedding_dimension("m").unwrap(), Some(1));
        assert_eq!(m.embedding_dimension("other").unwrap(), None);
        let hits = m
            .vector_search("m", &[1.0], &Filter::default(), 5, None, 0.0)
            .unwrap();
        assert_eq!(hits.len(), 1, "{}", b.name);
        assert!((hits[0].score - 1.0).abs() < 1e-9, "{}", b.name);
        // Another model's recall queues the memory again, for its own vector.
        assert_eq!(
            m.pending_embeddings("m2", 10).unwrap().len(),
            1,
            "{}",
            b.name
        );
        let forgotten = m.forget("k").unwrap().unwrap();
        assert_eq!((forgotten.content.as_str(), forgotten.bytes), ("pears", 5));
        assert_eq!(search("pears"), Vec::<String>::new());
        assert_eq!(m.forget("k").unwrap(), None);
        assert!(m.pending_embeddings("m2", 10).unwrap().is_empty());

        // The embedding cache.
        let hash = [7u8; 32];
        assert_eq!(m.cached_embedding(&hash).unwrap(), None);
        m.cache_embedding(&hash, "m", &[0.6, 0.8], 5).unwrap();
        m.cache_embedding(&hash, "m", &[0.8, 0.6], 6).unwrap();
        assert_eq!(m.cached_embedding(&hash).unwrap(), Some(vec![0.8, 0.6]));

        // The scratchpad: replaced or not, byte order, literal prefixes.
        let kv = &b.kv;
        assert!(!kv.set("b%", "1", 1).unwrap());
        assert!(kv.set("b%", "2", 2).unwrap());
        for key in ["b_", "bX", "b", "_b", "é", "z"] {
            kv.set(key, "v", 3).unwrap();
        }
        let entry = kv.get("b%").unwrap().unwrap();
        assert_eq!((entry.value.as_str(), entry.updated_at), ("2", 2));
        assert_eq!(kv.get("b*").unwrap(), None);
        let listed = kv.keys("b", false, 2).unwrap();
        assert_eq!(
            (listed.keys, listed.total),
            (vec!["b".into(), "b%".into()], 4)
        );
        let listed = kv.keys("", true, 100).unwrap();
        assert_eq!(
            listed.keys,
            ["_b", "b", "b%", "bX", "b_", "z", "é"],
            "{}",
            b.name
        );
        assert_eq!(kv.keys("", false, 100).unwrap().total, 6);
        assert_eq!(kv.keys("b_", false, 100).unwrap().keys, ["b_"]);
    }
}
