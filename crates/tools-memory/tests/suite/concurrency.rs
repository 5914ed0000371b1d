//! Concurrent writers, in one registry and across two registries on the same memories (for
//! SQLite two connections to the file, so WAL and the busy timeout do the work; for PostgreSQL
//! two pools, like two replicas): nothing is lost, on every backend.

use std::sync::Arc;

use serde_json::json;

use super::{Fixture, backend_names, keys};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_writers_lose_nothing() {
    for backend in backend_names() {
        eight_writers_on(Arc::new(Fixture::on(backend, |c| c))).await;
    }
}

async fn eight_writers_on(f: Arc<Fixture>) {
    const TASKS: usize = 8;
    const EACH: usize = 50;
    let other = Arc::new(f.stack_with(|c| c));
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let f = Arc::clone(&f);
        let other = Arc::clone(&other);
        tasks.push(tokio::spawn(async move {
            for i in 0..EACH {
                let args = json!({
                    "key": format!("t{t}-m{i}"),
                    "content": format!("writer {t} stored entry {i} about concurrency"),
                    "session_id": format!("writer-{t}"),
                })
                .to_string();
                // Odd writers go through the second registry, with its own connection.
                let stack = if t % 2 == 0 { &f.stack } else { &*other };
                stack
                    .call_json("memory_store", &args, f.ctx.for_call())
                    .await
                    .unwrap_or_else(|e| panic!("{args}: {e}"));
                let kv = json!({"key": format!("t{t}/{i}"), "value": "v"}).to_string();
                stack
                    .call_json("remember", &kv, f.ctx.for_call())
                    .await
                    .unwrap_or_else(|e| panic!("{kv}: {e}"));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let listed = f.ok("memory_list", r#"{"limit":1000}"#).await;
    let listed = listed.structured.unwrap();
    assert_eq!(listed["total"], TASKS * EACH);
    assert_eq!(keys(&listed).len(), TASKS * EACH);
    // The full-text index agrees with the table.
    let found = f
        .recall(json!({"query": "concurrency", "limit": 100, "session_id": "writer-3"}))
        .await;
    assert_eq!(keys(&found).len(), EACH);
    match f.backend {
        "sqlite" => {
            let conn = f.sql();
            let indexed: i64 = conn
                .query_row(
                    "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'concurrency'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(indexed as usize, TASKS * EACH);
            conn.execute(
                "INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)",
                [],
            )
            .unwrap();
        }
        _ => {
            let indexed = f.count(
                "SELECT count(*) FROM memories WHERE tsv @@ to_tsquery('simple', 'concurrency')",
            );
            assert_eq!(indexed as usize, TASKS * EACH);
            // The trigger-kept corpus statistics of BM25 agree with the table.
            assert_eq!(
                f.count("SELECT sum(docs) FROM memory_stats"),
                f.count("SELECT count(*) FROM memories")
            );
            assert_eq!(
                f.count("SELECT sum(tokens) FROM memory_stats"),
                f.count("SELECT sum(doc_len) FROM memories")
            );
        }
    }
    let kv = f.ok("list_keys", "{}").await.structured.unwrap();
    assert_eq!(kv["total"], TASKS * EACH);
}
