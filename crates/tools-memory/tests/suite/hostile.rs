//! Hostile arguments, each beside a benign twin: FTS5 syntax, SQL metacharacters, huge and
//! control-character keys, NUL bytes, empty and oversized queries. Every one is data, a
//! defined answer (a query with no words gives the most recent memories, with a note) or a
//! refusal with a sentence — never syntax, never a crash — and the database stays whole.

use serde_json::{Value, json};
use tool_core::ErrorKind;

use super::{Fixture, fixtures, keys};

/// What a call must give: `Ok(keys the recall returns, in any order)` for memory_recall,
/// `Ok(substring of the text)` for the others, or `Err((kind, substring of the message))`.
enum Want {
    Keys(&'static [&'static str]),
    /// memory_recall answered with the most recent memories, these keys in this order, and a
    /// note containing the text.
    Recent(&'static [&'static str], &'static str),
    Text(&'static str),
    Err(ErrorKind, &'static str),
}

/// The five memories [`seed`] stores last, newest first: what a recall without words returns.
const NEWEST_5: &[&str] = &["caret", "sql", "quote", "snake", "percent"];

async fn seed(f: &Fixture) {
    for (key, content, extra) in [
        ("animals", "cats and dogs live together", ""),
        ("river", "NEAR the river bank we found stones", ""),
        (
            "columns",
            "the key column holds a value",
            r#""session_id": "s1""#,
        ),
        ("percent", "progress is 100% done", r#""session_id": "s1""#),
        ("snake", "variables use snake_case names", ""),
        (
            "quote",
            "she said \"hello\" twice",
            r#""category": "daily""#,
        ),
        (
            "sql",
            "'; DROP TABLE memories; -- is a classic injection",
            "",
        ),
        ("caret", "the caret ^ and star * symbols", ""),
    ] {
        f.store(key, content, extra).await;
    }
}

#[tokio::test]
async fn hostile_queries_are_searched_as_words() {
    for f in fixtures() {
        seed(&f).await;
        let big = "word ".repeat(1000);
        let cases: Vec<(Value, Want)> = vec![
            // FTS5 operators as words, each with its twin.
            (json!({"query": "cats OR dogs"}), Want::Keys(&["animals"])),
            (json!({"query": "cats dogs"}), Want::Keys(&["animals"])),
            (
                json!({"query": "cats AND stones"}),
                Want::Keys(&["animals", "river"]),
            ),
            (json!({"query": "NOT cats"}), Want::Keys(&["animals"])),
            // `NEAR(cats` is one word pair (the phrase "near cats"), which no memory holds.
            (
                json!({"query": "NEAR(cats dogs)"}),
                Want::Keys(&["animals"]),
            ),
            (
                json!({"query": "near cats dogs"}),
                Want::Keys(&["animals", "river"]),
            ),
            // A column filter is a phrase of two words, not a filter on the key column.
            (json!({"query": "key:animals"}), Want::Keys(&[])),
            (
                json!({"query": "key animals"}),
                Want::Keys(&["animals", "columns"]),
            ),
            (json!({"query": "content:cats"}), Want::Keys(&[])),
            (json!({"query": "cats*"}), Want::Keys(&["animals"])),
            (json!({"query": "^cats"}), Want::Keys(&["animals"])),
            (json!({"query": "(cats"}), Want::Keys(&["animals"])),
            (json!({"query": "{cats dogs}"}), Want::Keys(&["animals"])),
            (json!({"query": "\"hello"}), Want::Keys(&["quote"])),
            (
                json!({"query": "said \"hello\" twice"}),
                Want::Keys(&["quote"]),
            ),
            (json!({"query": "sa\"id"}), Want::Keys(&[])),
            (json!({"query": "caret ^ star *"}), Want::Keys(&["caret"])),
            // SQL metacharacters.
            (
                json!({"query": "'; DROP TABLE memories; --"}),
                Want::Keys(&["sql"]),
            ),
            (json!({"query": "100%"}), Want::Keys(&["percent"])),
            (
                json!({"query": "%"}),
                Want::Recent(NEWEST_5, "has no words"),
            ),
            (json!({"query": "snake_case"}), Want::Keys(&["snake"])),
            (
                json!({"query": "_"}),
                Want::Recent(NEWEST_5, "has no words"),
            ),
            // NUL and other control characters separate words.
            (json!({"query": "cats\u{0}dogs"}), Want::Keys(&["animals"])),
            (
                json!({"query": "cats\u{7}\u{1b}[31m"}),
                Want::Keys(&["animals"]),
            ),
            // Nothing to search for: the most recent memories, newest first, within the
            // filters and then the limit, with a note. Each beside a twin that still ranks.
            (
                json!({"query": "\""}),
                Want::Recent(NEWEST_5, "has no words"),
            ),
            (
                json!({"query": "*"}),
                Want::Recent(
                    NEWEST_5,
                    "the query \"*\" has no words to search for (only punctuation or symbols), so the most recent memories are shown",
                ),
            ),
            (json!({"query": "star *"}), Want::Keys(&["caret"])),
            (
                json!({"query": "!!!"}),
                Want::Recent(NEWEST_5, "has no words"),
            ),
            (json!({"query": "dogs!!!"}), Want::Keys(&["animals"])),
            (
                json!({"query": ""}),
                Want::Recent(NEWEST_5, "the query is empty, so the most recent"),
            ),
            (
                json!({"query": "   "}),
                Want::Recent(NEWEST_5, "the query is empty"),
            ),
            (
                json!({"query": "*", "limit": 2}),
                Want::Recent(&["caret", "sql"], "has no words"),
            ),
            (
                json!({"query": "* ^", "limit": 100}),
                Want::Recent(
                    &[
                        "caret", "sql", "quote", "snake", "percent", "columns", "river", "animals",
                    ],
                    "has no words",
                ),
            ),
            (
                json!({"query": "*", "session_id": "s1", "limit": 2}),
                Want::Recent(&["percent", "columns"], "has no words"),
            ),
            (
                json!({"query": "*", "category": "daily"}),
                Want::Recent(&["quote"], "has no words"),
            ),
            (
                json!({"query": "*", "session_id": "nobody"}),
                Want::Recent(&[], "has no words"),
            ),
            (
                json!({"query": big}),
                Want::Err(ErrorKind::InvalidArgs, "4096"),
            ),
            (json!({"query": "word ".repeat(800)}), Want::Keys(&[])),
            // Filters are values too.
            (
                json!({"query": "cats", "session_id": "' OR 1=1 --"}),
                Want::Keys(&[]),
            ),
            (
                json!({"query": "cats", "category": "core' OR '1'='1"}),
                Want::Err(ErrorKind::InvalidArgs, "/category"),
            ),
            (
                json!({"query": "cats", "category": "core"}),
                Want::Keys(&["animals"]),
            ),
        ];
        for (args, want) in cases {
            let result = f.call("memory_recall", &args.to_string()).await;
            check(&args, result, &want);
        }
        let listed = f.ok("memory_list", "{}").await;
        assert_eq!(
            listed.structured.unwrap()["total"],
            8,
            "nothing was dropped"
        );
    }
}

fn check(args: &Value, result: Result<tool_core::ToolOutput, tool_core::ToolError>, want: &Want) {
    match (want, result) {
        (Want::Keys(want), Ok(out)) => {
            // A query with words is searched, never answered with the recent list.
            assert_ne!(out.structured.as_ref().unwrap()["mode"], "recent", "{args}");
            let mut got = keys(out.structured.as_ref().unwrap());
            got.sort();
            let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
            want.sort();
            assert_eq!(got, want, "{args}");
        }
        (Want::Recent(want, note), Ok(out)) => {
            let s = out.structured.as_ref().unwrap();
            assert_eq!(keys(s), *want, "{args}: newest first");
            assert_eq!(s["mode"], "recent", "{args}");
            let text = out.joined_text();
            assert!(
                text.contains(&format!("Note: {}", s["note"].as_str().unwrap())),
                "{args}: {text}"
            );
            assert!(text.contains(note), "{args}: {text}");
        }
        (Want::Text(want), Ok(out)) => {
            let text = out.joined_text();
            assert!(text.contains(want), "{args}: {text}");
        }
        (Want::Err(kind, want), Err(e)) => {
            assert_eq!(e.kind(), *kind, "{args}: {e}");
            assert!(e.to_string().contains(want), "{args}: {e}");
            // Model-visible errors say what to do next.
            assert!(e.to_string().len() > 40, "{args}: {e}");
        }
        (_, Ok(out)) => panic!("{args} should fail but gave:\n{}", out.joined_text()),
        (_, Err(e)) => panic!("{args} failed: {e}"),
    }
}

#[tokio::test]
async fn hostile_keys_and_contents_are_data_or_refused() {
    for f in fixtures() {
        seed(&f).await;
        let k256 = "k".repeat(256);
        let k257 = "k".repeat(257);
        let max = "x".repeat(tools_memory::MAX_CONTENT_BYTES);
        let over = "x".repeat(tools_memory::MAX_CONTENT_BYTES + 1);
        let cases: Vec<(&str, Value, Want)> = vec![
            // Keys with SQL and LIKE metacharacters are stored as given.
            (
                "memory_store",
                json!({"key": "'; DROP TABLE memories; --", "content": "harmless"}),
                Want::Text("Stored memory"),
            ),
            (
                "memory_store",
                json!({"key": "%", "content": "percent key"}),
                Want::Text("Stored"),
            ),
            (
                "memory_store",
                json!({"key": "_", "content": "underscore"}),
                Want::Text("Stored"),
            ),
            (
                "memory_store",
                json!({"key": "a\"b", "content": "quote"}),
                Want::Text("Stored"),
            ),
            // Size limits, with twins at the limit.
            (
                "memory_store",
                json!({"key": k256, "content": "c"}),
                Want::Text("Stored"),
            ),
            (
                "memory_store",
                json!({"key": k257, "content": "c"}),
                Want::Err(ErrorKind::InvalidArgs, "257 bytes long, more than the 256"),
            ),
            (
                "memory_store",
                json!({"key": "big", "content": max}),
                Want::Text("Stored"),
            ),
            (
                "memory_store",
                json!({"key": "bigger", "content": over}),
                Want::Err(ErrorKind::InvalidArgs, "split it over several keys"),
            ),
            // NUL and control characters.
            (
                "memory_store",
                json!({"key": "nul\u{0}key", "content": "c"}),
                Want::Err(ErrorKind::InvalidArgs, "U+0000"),
            ),
            (
                "memory_store",
                json!({"key": "line\nbreak", "content": "c"}),
                Want::Err(ErrorKind::InvalidArgs, "U+000A"),
            ),
            (
                "memory_store",
                json!({"key": "nulkey", "content": "c"}),
                Want::Text("Stored"),
            ),
            (
                "memory_store",
                json!({"key": "k", "content": "a\u{0}b"}),
                Want::Err(ErrorKind::InvalidArgs, "NUL byte"),
            ),
            (
                "memory_store",
                json!({"key": "k", "content": "two\nlines\tand a tab"}),
                Want::Text("Stored"),
            ),
            (
                "memory_store",
                json!({"key": "", "content": "c"}),
                Want::Err(ErrorKind::InvalidArgs, "key is empty"),
            ),
            (
                "memory_store",
                json!({"key": "e", "content": "  "}),
                Want::Err(ErrorKind::InvalidArgs, "memory_forget"),
            ),
            (
                "memory_store",
                json!({"key": "s", "content": "c", "session_id": "x\u{0}"}),
                Want::Err(ErrorKind::InvalidArgs, "/session_id"),
            ),
            (
                "memory_store",
                json!({"key": "s", "content": "c", "extra": 1}),
                Want::Err(ErrorKind::InvalidArgs, "extra"),
            ),
            // Forget takes exactly one key: no patterns.
            (
                "memory_forget",
                json!({"key": "%"}),
                Want::Text("Forgot memory \"%\""),
            ),
            (
                "memory_forget",
                json!({"key": "%"}),
                Want::Err(ErrorKind::NotFound, "matched exactly"),
            ),
            (
                "memory_forget",
                json!({"key": "*"}),
                Want::Err(ErrorKind::NotFound, "memory_list"),
            ),
            (
                "memory_forget",
                json!({"key": "anim"}),
                Want::Err(ErrorKind::NotFound, "memory_list"),
            ),
            (
                "memory_forget",
                json!({"key": "nul\u{0}"}),
                Want::Err(ErrorKind::InvalidArgs, "U+0000"),
            ),
            // The key-value store.
            (
                "remember",
                json!({"key": "%_%", "value": "v"}),
                Want::Text("Remembered"),
            ),
            (
                "remember",
                json!({"key": k257, "value": "v"}),
                Want::Err(ErrorKind::InvalidArgs, "/key"),
            ),
            (
                "remember",
                json!({"key": "v", "value": "a\u{0}"}),
                Want::Err(ErrorKind::InvalidArgs, "/value"),
            ),
            ("recall", json!({"key": "%_%"}), Want::Text("v")),
            (
                "recall",
                json!({"key": "%"}),
                Want::Err(ErrorKind::NotFound, "list_keys"),
            ),
            (
                "list_keys",
                json!({"prefix": "x\u{0}"}),
                Want::Err(ErrorKind::InvalidArgs, "/prefix"),
            ),
            ("list_keys", json!({"prefix": "%_"}), Want::Text("%_%")),
        ];
        for (tool, args, want) in &cases {
            let result = f.call(tool, &args.to_string()).await;
            check(args, result, want);
        }
        // Everything that was stored is there, under exactly its key, and nothing else changed.
        let all = f
            .ok(
                "memory_list",
                r#"{"include_internal":true,"limit":1000,"include_content":false}"#,
            )
            .await
            .structured
            .unwrap();
        let mut stored = keys(&all);
        stored.sort();
        let mut want: Vec<String> = [
            "'; DROP TABLE memories; --",
            "_",
            "a\"b",
            "animals",
            "big",
            "caret",
            "columns",
            "k",
            "nulkey",
            "percent",
            "quote",
            "river",
            "snake",
            "sql",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([k256.clone()])
        .collect();
        want.sort();
        assert_eq!(stored, want);
        let found = f.recall(json!({"query": "harmless"})).await;
        assert_eq!(keys(&found), ["'; DROP TABLE memories; --"]);
    }
}

/// Query syntax of either backend — tsquery operators (`&`, `|`, `!`, `<->`, `:*`), quotes,
/// backslashes, parentheses, SQL — in the terms the store API gets (the tools' word splitting
/// left out), each beside a benign twin: every term is searched as words, on every backend.
#[test]
fn query_syntax_in_terms_is_text_on_every_backend() {
    let memories = [
        ("ops", "the query a & b | !x is syntax, a b x are words"),
        ("prefix", "foo is a word"),
        ("foobar", "foobar alone"),
        ("quote", "it's Bob's book"),
        ("path", r"C:\temp\file and a back\slash"),
        ("arrow", "x <-> y means adjacent"),
        ("paren", "(cats) in parentheses"),
        ("sql", "'); DROP TABLE memories; -- an injection"),
    ];
    let cases: &[(&[&str], &[&str])] = &[
        (&["a & b"], &["ops"]),
        (&["a b"], &["ops"]),
        (&["a & !b"], &["ops"]),
        (&["!x"], &["ops", "arrow"]),
        (&["x"], &["ops", "arrow"]),
        // A prefix query in tsquery: here the word `foo` only.
        (&["foo:*"], &["prefix"]),
        (&["foo"], &["prefix"]),
        (&["foo | bar"], &[]),
        (&[":*"], &[]),
        (&["'"], &[]),
        (&["it's"], &["quote"]),
        (&["\\"], &[]),
        (&[r"back\slash"], &["path"]),
        (&["<->"], &[]),
        (&["x <-> y"], &["arrow"]),
        (&[")"], &[]),
        (&["(cats)"], &["paren"]),
        (&["'); DROP TABLE memories; --"], &["sql"]),
        (&["drop table"], &["sql"]),
        (&["x", "'; SELECT pg_sleep(10); --"], &["ops", "arrow"]),
        (&["\0"], &[]),
        (&["cats\0"], &["paren"]),
    ];
    for b in super::backends() {
        for (key, content) in memories {
            b.memory
                .upsert(
                    &tools_memory::NewMemory {
                        key: key.into(),
                        content: content.into(),
                        category: tools_memory::Category::Core,
                        session_id: None,
                    },
                    1,
                )
                .unwrap();
        }
        for (terms, want) in cases {
            let terms: Vec<String> = terms.iter().map(|t| t.to_string()).collect();
            let mut got: Vec<String> = b
                .memory
                .keyword_search(&terms, &tools_memory::Filter::default(), 10, None)
                .unwrap_or_else(|e| panic!("{}: {terms:?}: {e}", b.name))
                .into_iter()
                .map(|h| h.memory.key)
                .collect();
            got.sort();
            let mut want: Vec<&str> = want.to_vec();
            want.sort();
            assert_eq!(got, want, "{}: {terms:?}", b.name);
        }
        let all = b
            .memory
            .list(&tools_memory::Filter::default(), 100, false)
            .unwrap();
        assert_eq!(all.total, memories.len() as u64, "{}", b.name);
    }
}
