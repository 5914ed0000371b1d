//! Hybrid recall against a real embedding server on loopback: related wording found only with
//! vectors, clean fallback to keywords when the provider fails in any way, the circuit breaker,
//! the embedding cache, and catching up on memories stored while the provider was down — on
//! every backend, each with a server of its own (the tests count its requests).

use std::time::Duration;

use serde_json::{Value, json};
use tools_memory::{Config, EmbeddingConfig};

use super::{Behaviour, EmbedServer, Fixture, backend_names, embedding, keys};

const MODEL: &str = "hash-64";

/// Hybrid memory on `backend` with the embedding configuration adjusted by `adjust`.
fn hybrid(
    backend: &str,
    server: &EmbedServer,
    adjust: impl FnOnce(EmbeddingConfig) -> EmbeddingConfig,
) -> Fixture {
    let embedding = adjust(EmbeddingConfig::new(server.base_url(), MODEL));
    Fixture::on(backend, move |c| c.with_embedding(embedding))
}

/// Memories about cars, cats and invoices; only one of them says "automobile".
const SEED: &[(&str, &str)] = &[
    ("parking", "My red car is parked in the garage."),
    ("insurance", "The automobile insurance was renewed in May."),
    ("pet", "The cat sleeps on the sofa all afternoon."),
    ("invoices", "Invoices are due on Friday."),
];

/// The keys of `docs` whose server embedding has a positive cosine with the query's: what the
/// vector side can find (the server hashes words into 64 buckets, so unrelated words may share
/// one).
fn similar(query: &str, docs: &[(&str, &str)]) -> Vec<String> {
    let q = embedding(query);
    docs.iter()
        .filter(|(_, content)| {
            let d = embedding(content);
            q.iter().zip(&d).map(|(a, b)| a * b).sum::<f32>() > 0.0
        })
        .map(|(key, _)| key.to_string())
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

async fn seed(f: &Fixture) {
    for &(key, content) in SEED {
        let out = f.store(key, content, "").await;
        assert_eq!(
            out.structured.as_ref().unwrap()["embedding"],
            "stored",
            "{}",
            out.joined_text()
        );
    }
}

fn vectors(f: &Fixture) -> i64 {
    f.count("SELECT count(*) FROM memory_vectors")
}

fn memory<'a>(recall: &'a Value, key: &str) -> &'a Value {
    recall["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == key)
        .unwrap_or_else(|| panic!("{key} not in {recall}"))
}

#[tokio::test]
async fn related_wording_is_found_only_in_hybrid_mode() {
    for backend in backend_names() {
        let server = EmbedServer::start().await;
        let f = hybrid(backend, &server, |e| e.with_api_key_env("CARGO_PKG_NAME"));
        seed(&f).await;
        assert_eq!(server.requests(), 4);
        assert_eq!(vectors(&f), 4);
        assert!(
            server
                .auth_headers()
                .iter()
                .all(|h| h.as_deref() == Some("Bearer tools-memory")),
            "{:?}",
            server.auth_headers()
        );

        // Keyword search alone (the same file without embeddings) knows only the literal word.
        let keyword_only = f.stack_with(|c| c);
        let plain = keyword_only
            .call_json(
                "memory_recall",
                r#"{"query":"automobile"}"#,
                f.ctx.for_call(),
            )
            .await
            .unwrap()
            .structured
            .unwrap();
        assert_eq!(keys(&plain), ["insurance"]);

        let found = f.recall(json!({"query": "automobile"})).await;
        assert_eq!(found["mode"], "hybrid");
        assert_eq!(found["note"], Value::Null);
        // Both lists hold `insurance`, so fusion puts it first; `parking` shares no word with the
        // query and comes from the vector list alone, with whatever else the vectors find.
        let vector_side = similar("automobile", SEED);
        assert!(vector_side.contains(&"parking".to_string()));
        assert_eq!(keys(&found)[0], "insurance");
        assert_eq!(sorted(keys(&found)), sorted(vector_side));
        let parking = memory(&found, "parking");
        assert_eq!(parking["keyword_rank"], Value::Null);
        assert!(parking["vector_rank"].is_u64());
        let insurance = memory(&found, "insurance");
        assert_eq!(insurance["keyword_rank"], 1);
        let fused = 1.0 / (tools_memory::RRF_K + 1.0)
            + 1.0 / (tools_memory::RRF_K + insurance["vector_rank"].as_f64().unwrap());
        assert!((insurance["score"].as_f64().unwrap() - fused).abs() < 1e-12);
        let text = f.text("memory_recall", r#"{"query":"automobile"}"#).await;
        assert!(
            text.contains("(hybrid keyword and semantic search)"),
            "{text}"
        );
        // One request per recall: the query. Nothing was pending.
        assert_eq!(server.requests(), 6);
        assert_eq!(server.inputs().last().unwrap(), &["automobile".to_string()]);

        // Filters apply to the vector side too, inside the query.
        f.store("van", "A vehicle for the move.", r#""session_id":"s2""#)
            .await;
        let scoped = f
            .recall(json!({"query": "sedan", "session_id": "s2"}))
            .await;
        assert_eq!(keys(&scoped), ["van"]);

        // New content replaces the vector: a memory about a dog is found by "puppy".
        let dog_text = "The dog naps after the walk.";
        f.store("pet", dog_text, "").await;
        let dog = f.recall(json!({"query": "puppy"})).await;
        assert_eq!(keys(&dog)[0], "pet");
        assert!(
            similar(
                "puppy",
                &[("pet", "The cat sleeps on the sofa all afternoon.")]
            )
            .is_empty()
        );
        assert_eq!(vectors(&f), 5);
    }
}

#[tokio::test]
async fn every_kind_of_provider_failure_falls_back_to_keywords_with_a_note() {
    for backend in backend_names() {
        let mut server = EmbedServer::start().await;
        // A high threshold keeps the breaker out of this test.
        let f = hybrid(backend, &server, |e| {
            e.with_breaker(100, Duration::from_secs(30))
                .with_timeout(Duration::from_millis(300))
        });
        seed(&f).await;
        for (behaviour, note) in [
            (Behaviour::Fail, "answered HTTP 500"),
            (Behaviour::Malformed, "sent a malformed response"),
            (
                Behaviour::WrongDimension,
                "sent 32-dimensional vectors where 64 were expected",
            ),
            (Behaviour::Slow, "did not answer within 0.3 s"),
        ] {
            server.set(behaviour);
            let got = f.recall(json!({"query": "automobile"})).await;
            assert_eq!(got["mode"], "keyword", "{behaviour:?}");
            assert_eq!(keys(&got), ["insurance"], "{behaviour:?}");
            let got_note = got["note"].as_str().unwrap();
            assert!(got_note.starts_with("keyword search only: the embedding provider"));
            assert!(got_note.contains(note), "{behaviour:?}: {got_note}");
            let text = f.text("memory_recall", r#"{"query":"automobile"}"#).await;
            assert!(text.contains("\nNote: keyword search only"), "{text}");
            // A store still succeeds, and says the embedding comes later.
            let out = f
                .store(&format!("during-{behaviour:?}"), "stored while failing", "")
                .await;
            assert_eq!(out.structured.as_ref().unwrap()["embedding"], "pending");
            assert!(
                out.joined_text()
                    .contains("Note: stored without an embedding for now"),
                "{}",
                out.joined_text()
            );
        }
        // The provider is gone altogether.
        server.set(Behaviour::Embed);
        server.shut_down().await;
        let got = f.recall(json!({"query": "automobile"})).await;
        assert_eq!(keys(&got), ["insurance"]);
        assert!(
            got["note"]
                .as_str()
                .unwrap()
                .contains("could not be reached"),
            "{got}"
        );
    }
}

#[tokio::test]
async fn the_circuit_breaker_leaves_a_dead_provider_alone_then_tries_again() {
    for backend in backend_names() {
        let server = EmbedServer::start().await;
        let f = hybrid(backend, &server, |e| {
            e.with_breaker(3, Duration::from_secs(2))
        });
        seed(&f).await;
        let before = server.requests();
        server.set(Behaviour::Fail);
        for _ in 0..3 {
            let got = f.recall(json!({"query": "automobile"})).await;
            assert!(got["note"].as_str().unwrap().contains("HTTP 500"), "{got}");
        }
        assert_eq!(server.requests(), before + 3);
        // Open: no more requests, and the note says why.
        for _ in 0..5 {
            let got = f.recall(json!({"query": "automobile"})).await;
            assert_eq!(keys(&got), ["insurance"]);
            let note = got["note"].as_str().unwrap();
            assert!(
                note.contains("failed 3 times in a row and is left alone for another"),
                "{note}"
            );
        }
        let out = f
            .store("while-open", "a car note while the breaker is open", "")
            .await;
        assert_eq!(out.structured.as_ref().unwrap()["embedding"], "pending");
        assert_eq!(server.requests(), before + 3);

        // After the cooldown one trial goes through; the provider works again, so the breaker
        // closes, the recall is hybrid and the memory stored meanwhile gets its vector.
        server.set(Behaviour::Embed);
        tokio::time::sleep(Duration::from_millis(2200)).await;
        let got = f.recall(json!({"query": "automobile"})).await;
        assert_eq!(got["mode"], "hybrid", "{got}");
        assert!(keys(&got).contains(&"while-open".to_string()), "{got}");
        assert_eq!(
            server.requests(),
            before + 5,
            "the query, then the backfill"
        );
        assert_eq!(vectors(&f), 5);
    }
}

#[tokio::test]
async fn identical_text_is_embedded_once() {
    for backend in backend_names() {
        let server = EmbedServer::start().await;
        let f = hybrid(backend, &server, |e| e);
        let text = "The staging server lives at rack 12.";
        f.store("a", text, "").await;
        assert_eq!(server.requests(), 1);
        for (key, extra) in [("b", ""), ("a", ""), ("c", r#""category":"daily""#)] {
            let out = f.store(key, text, extra).await;
            assert_eq!(out.structured.as_ref().unwrap()["embedding"], "stored");
        }
        f.ok("memory_forget", r#"{"key":"a"}"#).await;
        f.store("d", text, "").await;
        assert_eq!(
            server.requests(),
            1,
            "every later store came from the cache"
        );
        assert_eq!(vectors(&f), 3);
        assert_eq!(f.count("SELECT count(*) FROM embedding_cache"), 1);
    }
}

#[tokio::test]
async fn memories_stored_while_the_provider_was_down_are_embedded_later_in_bounded_batches() {
    for backend in backend_names() {
        let server = EmbedServer::start().await;
        server.set(Behaviour::Fail);
        let f = hybrid(backend, &server, |e| {
            e.with_breaker(100, Duration::from_secs(30))
                .with_backfill_batch(2)
        });
        let docs = [
            ("parking", "My red car is parked in the garage."),
            ("pet", "The cat sleeps on the sofa all afternoon."),
            ("garage", "The garage door code is 4711 for the car."),
        ];
        for (key, content) in docs {
            let out = f.store(key, content, "").await;
            assert_eq!(out.structured.as_ref().unwrap()["embedding"], "pending");
        }
        assert_eq!(vectors(&f), 0);
        server.set(Behaviour::Embed);
        let seen = server.requests();

        let got = f.recall(json!({"query": "automobile"})).await;
        assert_eq!(got["mode"], "hybrid");
        let inputs = server.inputs();
        assert_eq!(inputs[seen], ["automobile"]);
        // Newest first, two at a time.
        assert_eq!(
            inputs[seen + 1],
            [
                "The garage door code is 4711 for the car.",
                "The cat sleeps on the sofa all afternoon."
            ]
        );
        assert_eq!(vectors(&f), 2);
        // Only the two embedded memories can come from the vector side ("automobile" is no word
        // of any memory, so there are no keyword hits).
        assert_eq!(
            sorted(keys(&got)),
            sorted(similar("automobile", &docs[1..]))
        );
        assert!(keys(&got).contains(&"garage".to_string()));

        let got = f.recall(json!({"query": "automobile"})).await;
        assert_eq!(
            server.inputs()[seen + 3],
            ["My red car is parked in the garage."]
        );
        assert_eq!(vectors(&f), 3);
        assert_eq!(sorted(keys(&got)), sorted(similar("automobile", &docs)));
        assert!(keys(&got).contains(&"parking".to_string()));

        // Another model on the same file re-embeds what the first model embedded.
        let other = f.stack_with(|c: Config| {
            c.with_embedding(
                EmbeddingConfig::new(server.base_url(), "other-model").with_backfill_batch(10),
            )
        });
        let before = server.requests();
        other
            .call_json(
                "memory_recall",
                r#"{"query":"automobile"}"#,
                f.ctx.for_call(),
            )
            .await
            .unwrap();
        assert_eq!(server.requests(), before + 2);
        assert_eq!(server.inputs().last().unwrap().len(), 3);
        assert_eq!(
            f.column("SELECT DISTINCT model FROM memory_vectors"),
            ["other-model"]
        );
    }
}

#[tokio::test]
async fn a_missing_key_variable_is_a_note_not_a_failure() {
    for backend in backend_names() {
        let server = EmbedServer::start().await;
        let f = hybrid(backend, &server, |e| {
            e.with_api_key_env("TOOLSHED_TEST_SURELY_UNSET_7F3A")
        });
        let out = f.store("k", "a car", "").await;
        assert!(
            out.joined_text()
                .contains("the embedding provider has no key: the environment variable TOOLSHED_TEST_SURELY_UNSET_7F3A is not set"),
            "{}",
            out.joined_text()
        );
        let got = f.recall(json!({"query": "car"})).await;
        assert_eq!(keys(&got), ["k"]);
        assert_eq!(server.requests(), 0);
    }
}

#[tokio::test]
async fn decay_applies_to_the_vector_side_too_but_not_to_core() {
    for backend in backend_names() {
        let server = EmbedServer::start().await;
        let embedding = EmbeddingConfig::new(server.base_url(), MODEL);
        let f = Fixture::on(backend, move |c| {
            c.with_embedding(embedding).with_decay_half_life_days(7.0)
        });
        // Identical text, so identical similarity; only age and category tell them apart.
        for (key, category) in [
            ("old-car", "daily"),
            ("old-core-car", "core"),
            ("new-car", "daily"),
        ] {
            f.store(
                key,
                "My car is blue.",
                &format!(r#""category":"{category}""#),
            )
            .await;
        }
        let backdated = f.execute(
            "UPDATE memories SET updated_at = updated_at - 2592000000 WHERE key LIKE 'old-%'",
        );
        assert_eq!(backdated, 2);
        let got = f.recall(json!({"query": "automobile"})).await;
        assert_eq!(got["mode"], "hybrid");
        assert_eq!(keys(&got), ["old-core-car", "new-car", "old-car"]);
        for m in got["memories"].as_array().unwrap() {
            assert_eq!(m["keyword_rank"], Value::Null, "{m}");
        }
    }
}
