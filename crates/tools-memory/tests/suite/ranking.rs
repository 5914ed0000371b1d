//! Ranking: BM25 as FTS5 computes it (checked against an independent implementation of its
//! formula over the same data), filters applied before the limit, and time decay — on every
//! backend, with the same expected scores: PostgreSQL computes FTS5's formula too.

use std::collections::{HashMap, HashSet};

use serde_json::json;

use super::{fixtures, fixtures_with, keys};

/// FTS5's tokens for ASCII text: runs of letters and digits, lower-cased.
fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// FTS5's `bm25()` (k1 = 1.2, b = 0.75, every column weight 1), negated so higher is better,
/// for documents `(key, content)` and single-word query terms joined by OR.
fn reference_bm25(docs: &[(&str, &str)], terms: &[&str]) -> Vec<f64> {
    let rows: Vec<Vec<String>> = docs
        .iter()
        .map(|(k, c)| {
            let mut t = tokens(k);
            t.extend(tokens(c));
            t
        })
        .collect();
    let n = rows.len() as f64;
    let avgdl = rows.iter().map(Vec::len).sum::<usize>() as f64 / n;
    let idf: HashMap<&str, f64> = terms
        .iter()
        .map(|t| {
            let hits = rows.iter().filter(|r| r.iter().any(|w| w == t)).count() as f64;
            let idf = ((n - hits + 0.5) / (hits + 0.5)).ln();
            (*t, if idf <= 0.0 { 1e-6 } else { idf })
        })
        .collect();
    rows.iter()
        .map(|r| {
            let dl = r.len() as f64;
            terms
                .iter()
                .map(|t| {
                    let f = r.iter().filter(|w| w == t).count() as f64;
                    idf[t] * (f * 2.2) / (f + 1.2 * (1.0 - 0.75 + 0.75 * dl / avgdl))
                })
                .sum()
        })
        .collect()
}

#[tokio::test]
async fn bm25_ranks_more_and_rarer_terms_first_exactly_as_computed() {
    for f in fixtures() {
        let docs: &[(&str, &str)] = &[
            ("garden-1", "tomatoes grow well in the sunny garden bed"),
            (
                "garden-2",
                "basil and tomatoes share the garden, basil repels pests",
            ),
            (
                "kitchen-1",
                "the kitchen smells of basil pesto and fresh tomatoes",
            ),
            ("kitchen-2", "saffron is the rarest spice in the kitchen"),
            ("market-1", "tomatoes tomatoes tomatoes at the market today"),
            ("market-2", "saffron and basil from the market stall"),
            ("notes-1", "remember to water the garden every evening"),
            ("notes-2", "pests ate the lettuce; try netting"),
            ("notes-3", "buy compost for the garden beds"),
            (
                "long-1",
                "a very long note that mentions tomatoes once among many other words about weather \
                 clouds rain wind sun frost and the changing seasons of the year",
            ),
        ];
        for (key, content) in docs {
            f.store(key, content, "").await;
        }
        for query in [
            "tomatoes",
            "basil saffron",
            "tomatoes basil pests",
            "garden saffron",
        ] {
            let terms: Vec<&str> = query.split(' ').collect();
            let want_scores = reference_bm25(docs, &terms);
            let matching: HashSet<usize> = (0..docs.len())
                .filter(|&i| {
                    let t = tokens(&format!("{} {}", docs[i].0, docs[i].1));
                    terms.iter().any(|q| t.iter().any(|w| w == q))
                })
                .collect();
            let mut want: Vec<usize> = matching.iter().copied().collect();
            // Ties go to the earlier-stored memory (the smaller id).
            want.sort_by(|&a, &b| want_scores[b].total_cmp(&want_scores[a]).then(a.cmp(&b)));
            let got = f.recall(json!({"query": query, "limit": 100})).await;
            let want_keys: Vec<&str> = want.iter().map(|&i| docs[i].0).collect();
            assert_eq!(keys(&got), want_keys, "order for {query:?}");
            for (m, &i) in got["memories"].as_array().unwrap().iter().zip(&want) {
                let score = m["score"].as_f64().unwrap();
                assert!(
                    (score - want_scores[i]).abs() < 1e-9 * want_scores[i].abs().max(1.0),
                    "{query:?} {}: {score} vs {}",
                    docs[i].0,
                    want_scores[i]
                );
            }
        }
        // The property itself, on the reference: three repetitions beat one mention in a long
        // note, and both rare terms beat one common one.
        let s = reference_bm25(docs, &["tomatoes"]);
        assert!(s[4] > s[9]);
        let s = reference_bm25(docs, &["basil", "saffron"]);
        assert!(s[5] > s[1] && s[5] > s[3]);
    }
}

#[tokio::test]
async fn filters_apply_before_the_limit() {
    for f in fixtures() {
        // 50 memories in session A match far better than the 3 in session B.
        for i in 0..50 {
            f.store(
                &format!("a{i:02}"),
                "alpha alpha alpha alpha beta",
                r#""session_id":"A","category":"daily""#,
            )
            .await;
        }
        for i in 0..3 {
            f.store(
                &format!("b{i}"),
                &format!("alpha once, among many other words in a longer note number {i}"),
                r#""session_id":"B","category":"conversation""#,
            )
            .await;
        }
        let all = f.recall(json!({"query": "alpha", "limit": 3})).await;
        assert!(keys(&all).iter().all(|k| k.starts_with('a')));
        let b = f
            .recall(json!({"query": "alpha", "session_id": "B", "limit": 3}))
            .await;
        assert_eq!(keys(&b), ["b0", "b1", "b2"]);
        let conv = f
            .recall(json!({"query": "alpha", "category": "conversation", "limit": 3}))
            .await;
        assert_eq!(keys(&conv), ["b0", "b1", "b2"]);
        let none = f
            .recall(json!({"query": "alpha", "session_id": "B", "category": "daily"}))
            .await;
        assert!(keys(&none).is_empty());
        let listed = f.ok("memory_list", r#"{"session_id":"B","limit":2}"#).await;
        let listed = listed.structured.unwrap();
        assert_eq!(keys(&listed), ["b2", "b1"]);
        assert_eq!(listed["total"], 3);
        let listed = f
            .ok("memory_list", r#"{"category":"daily","limit":1000}"#)
            .await;
        assert_eq!(listed.structured.unwrap()["total"], 50);

        // Internal memories that match better than everything else do not crowd out the rest.
        for i in 0..40 {
            f.store(&format!("_i{i:02}"), "omega omega omega omega", "")
                .await;
        }
        for i in 0..3 {
            f.store(
                &format!("o{i}"),
                &format!("omega once in a longer note with other words, number {i}"),
                "",
            )
            .await;
        }
        let public = f.recall(json!({"query": "omega", "limit": 3})).await;
        assert_eq!(keys(&public), ["o0", "o1", "o2"]);
        let internal = f
            .recall(json!({"query": "omega", "limit": 3, "include_internal": true}))
            .await;
        assert_eq!(keys(&internal), ["_i00", "_i01", "_i02"]);
    }
}

const DAY_MS: i64 = 86_400_000;

#[tokio::test]
async fn decay_lowers_old_memories_but_never_core_ones() {
    let half_life = 7.0;
    for f in fixtures_with(|c| c.with_decay_half_life_days(half_life)) {
        // The old ones match better (more mentions), so without decay they lead.
        f.store(
            "old-daily",
            "standup standup standup notes",
            r#""category":"daily""#,
        )
        .await;
        f.store(
            "old-core",
            "standup standup standup rules",
            r#""category":"core""#,
        )
        .await;
        f.store(
            "new-daily",
            "standup notes from this morning",
            r#""category":"daily""#,
        )
        .await;
        // Other memories, so that "standup" is not in most rows (whose IDF FTS5 clamps to ~0).
        for (i, filler) in ["lunch menu", "parking rules", "printer jam", "holiday plan"]
            .iter()
            .enumerate()
        {
            f.store(&format!("filler-{i}"), filler, "").await;
        }
        let age = 30 * DAY_MS;
        let backdated = f.execute(&format!(
            "UPDATE memories SET updated_at = updated_at - {age} WHERE key LIKE 'old-%'"
        ));
        assert_eq!(backdated, 2);

        let plain = f.stack_with(|c| c);
        let undecayed = plain
            .call_json("memory_recall", r#"{"query":"standup"}"#, f.ctx.for_call())
            .await
            .unwrap()
            .structured
            .unwrap();
        assert_eq!(keys(&undecayed), ["old-daily", "old-core", "new-daily"]);

        let decayed = f.recall(json!({"query": "standup"})).await;
        assert_eq!(keys(&decayed), ["old-core", "new-daily", "old-daily"]);
        let score = |v: &serde_json::Value, key: &str| {
            v["memories"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["key"] == key)
                .unwrap()["score"]
                .as_f64()
                .unwrap()
        };
        // Core keeps its full score; the old daily one lost 0.5^(30 / 7) of it (plus the few
        // milliseconds the test took, far below the tolerance).
        assert!((score(&decayed, "old-core") - score(&undecayed, "old-core")).abs() < 1e-12);
        let ratio = score(&decayed, "old-daily") / score(&undecayed, "old-daily");
        let want = 0.5f64.powf(30.0 / half_life);
        assert!((ratio - want).abs() < 1e-6, "{ratio} vs {want}");
    }
}
