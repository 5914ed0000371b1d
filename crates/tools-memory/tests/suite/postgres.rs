//! What only PostgreSQL has: several processes (replicas) on one schema, writers racing on one
//! key, lock timeouts, a layout from a newer Toolshed, and text that cannot hold NUL. Each test
//! skips when `TOOLSHED_TEST_PG` is unset (and fails when `TOOLSHED_REQUIRE_PG` is set).

use std::sync::{Arc, Barrier};
use std::time::Duration;

use tool_core::pg::{PgConfig, PgPool, test_pool};
use tools_memory::{
    Category, Filter, KvStore, MemoryStore, NewMemory, PgStore, StoreError, Upserted,
};

use super::replica;

/// Drops the test schema at the end, also when the test fails.
struct Schema(PgPool);

impl Drop for Schema {
    fn drop(&mut self) {
        let _ = self.0.drop_schema();
    }
}

fn memory(key: &str, content: &str, category: Category, session: Option<&str>) -> NewMemory {
    NewMemory {
        key: key.into(),
        content: content.into(),
        category,
        session_id: session.map(str::to_string),
    }
}

fn keys(hits: Vec<tools_memory::Hit>) -> Vec<String> {
    hits.into_iter().map(|h| h.memory.key).collect()
}

#[test]
fn two_replicas_on_one_schema_see_each_others_memories_and_keys() {
    let Some(pool) = test_pool("memory_replicas") else {
        return;
    };
    let _schema = Schema(pool.clone());
    let a = PgStore::open(pool.clone()).unwrap();
    // The second replica starts with the tables in place: its migration is a no-op.
    let b = PgStore::open(replica(&pool)).unwrap();

    a.upsert(
        &memory("deploy", "deploys go out on Tuesdays", Category::Core, None),
        1,
    )
    .unwrap();
    b.upsert(
        &memory("standup", "standup at nine", Category::Daily, Some("s1")),
        2,
    )
    .unwrap();
    let find = |s: &PgStore, word: &str| {
        keys(
            s.keyword_search(&[word.into()], &Filter::default(), 5, None)
                .unwrap(),
        )
    };
    assert_eq!(find(&b, "tuesdays"), ["deploy"]);
    assert_eq!(find(&a, "standup"), ["standup"]);
    let replaced = b
        .upsert(
            &memory(
                "deploy",
                "deploys go out on Thursdays",
                Category::Core,
                None,
            ),
            3,
        )
        .unwrap();
    assert!(replaced.replaced.is_some_and(|r| !r.same_content));
    assert_eq!(find(&a, "tuesdays"), Vec::<String>::new());
    assert_eq!(find(&a, "thursdays"), ["deploy"]);
    assert_eq!(
        a.forget("standup").unwrap().unwrap().content,
        "standup at nine"
    );
    assert_eq!(b.list(&Filter::default(), 10, true).unwrap().total, 1);

    assert!(!a.set("build", "cargo build", 1).unwrap());
    assert!(b.set("build", "cargo build --release", 2).unwrap());
    assert_eq!(
        a.get("build").unwrap().unwrap().value,
        "cargo build --release"
    );
    assert_eq!(a.keys("bu", false, 10).unwrap().keys, ["build"]);
}

#[test]
fn four_replicas_upserting_one_key_at_once_leave_one_row() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 25;
    let Some(pool) = test_pool("memory_race") else {
        return;
    };
    let _schema = Schema(pool.clone());
    let stores: Vec<Arc<PgStore>> = (0..THREADS)
        .map(|_| Arc::new(PgStore::open(replica(&pool)).unwrap()))
        .collect();
    let start = Arc::new(Barrier::new(THREADS));
    let results: Vec<Vec<Upserted>> = std::thread::scope(|s| {
        let handles: Vec<_> = stores
            .iter()
            .enumerate()
            .map(|(t, store)| {
                let start = Arc::clone(&start);
                s.spawn(move || {
                    start.wait();
                    (0..ROUNDS)
                        .map(|i| {
                            // Every other round stores what the previous round of this thread
                            // stored, so some replacements keep the same content.
                            let content = format!("shared fact from writer {t} round {}", i / 2);
                            store
                                .upsert(&memory("shared", &content, Category::Core, None), i as i64)
                                .unwrap()
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all: Vec<&Upserted> = results.iter().flatten().collect();
    assert_eq!(all.len(), THREADS * ROUNDS);
    let created = all.iter().filter(|u| u.replaced.is_none()).count();
    assert_eq!(created, 1, "exactly one writer created the key");
    let id = all[0].id;
    assert!(all.iter().all(|u| u.id == id), "one row, one id");
    let listed = stores[0]
        .list(
            &Filter {
                include_internal: true,
                ..Filter::default()
            },
            10,
            true,
        )
        .unwrap();
    assert_eq!(listed.total, 1);
    let content = &listed.memories[0].content;
    assert!(content.starts_with("shared fact from writer"), "{content}");
    // The last writer's content is what the row holds, and what the index finds.
    let hits = stores[1]
        .keyword_search(&["shared".into()], &Filter::default(), 10, None)
        .unwrap();
    assert_eq!(keys(hits), ["shared"]);
    // The statistics BM25 reads were kept exact through the race.
    let mut conn = tool_core::pg::off_runtime(|| pool.get()).unwrap();
    let row = conn
        .query_one(
            "SELECT (SELECT sum(docs) FROM memory_stats)::bigint,
                    (SELECT sum(tokens) FROM memory_stats)::bigint,
                    (SELECT doc_len FROM memories)::bigint,
                    (SELECT count(*) FROM embedding_queue)",
            &[],
        )
        .unwrap();
    let (docs, tokens, len, queued): (i64, i64, i64, i64) =
        (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!((docs, tokens, queued), (1, len, 1));
}

#[test]
fn a_lock_held_too_long_is_busy_not_a_crash() {
    let Some(pool) = test_pool("memory_lock") else {
        return;
    };
    let _schema = Schema(pool.clone());
    let store = PgStore::open(pool.clone()).unwrap();
    store.set("held", "v", 1).unwrap();
    // A replica whose statements give up on a lock after 200 ms.
    let url = std::env::var(tool_core::pg::TEST_URL_VAR).unwrap();
    let mut config = PgConfig::new(url).with_schema(pool.schema());
    config.statement_timeout = Duration::from_millis(200);
    let impatient = PgStore::open(PgPool::connect(&config).unwrap()).unwrap();
    let mut holder = pool.get().unwrap();
    let mut tx = holder.transaction().unwrap();
    tx.execute("SELECT 1 FROM kv WHERE key = 'held' FOR UPDATE", &[])
        .unwrap();
    let e = impatient.set("held", "w", 2).unwrap_err();
    assert!(matches!(e, StoreError::Busy), "{e:?}");
    assert!(e.to_string().contains("try the call again"), "{e}");
    // Other keys are not held up.
    assert!(!impatient.set("free", "w", 2).unwrap());
    tx.rollback().unwrap();
    assert!(impatient.set("held", "w", 3).unwrap());
}

#[test]
fn a_layout_from_a_newer_toolshed_is_refused_with_a_sentence() {
    let Some(pool) = test_pool("memory_newer") else {
        return;
    };
    let _schema = Schema(pool.clone());
    drop(PgStore::open(pool.clone()).unwrap());
    pool.get()
        .unwrap()
        .execute(
            "UPDATE toolshed_migrations SET version = 99 WHERE store = 'memory'",
            &[],
        )
        .unwrap();
    let e = PgStore::open(pool.clone()).unwrap_err();
    assert!(matches!(e, StoreError::Unavailable(_)), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("newer Toolshed (version 99"), "{msg}");
    assert!(msg.contains("upgrade toolshed"), "{msg}");
}

#[test]
fn nul_bytes_find_nothing_and_are_refused_as_data() {
    let Some(pool) = test_pool("memory_nul") else {
        return;
    };
    let _schema = Schema(pool.clone());
    let store = PgStore::open(pool).unwrap();
    store
        .upsert(&memory("a", "plain text", Category::Core, None), 1)
        .unwrap();
    assert_eq!(store.forget("a\0").unwrap(), None);
    assert_eq!(store.get("a\0").unwrap(), None);
    assert_eq!(store.keys("a\0", true, 10).unwrap().total, 0);
    let filter = Filter {
        session_id: Some("s\0".into()),
        ..Filter::default()
    };
    assert!(
        store
            .keyword_search(&["plain".into()], &filter, 5, None)
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.list(&filter, 5, true).unwrap().total, 0);
    assert!(
        store
            .upsert(&memory("b\0", "x", Category::Core, None), 1)
            .is_err()
    );
    assert!(store.set("k", "v\0", 1).is_err());
    assert_eq!(store.list(&Filter::default(), 5, true).unwrap().total, 1);
}
