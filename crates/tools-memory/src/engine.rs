//! What the memory tools share: the stores, the embedder and the retrieval pipeline
//! (keyword search, vector search, reciprocal-rank fusion, backfill).

use std::collections::HashMap;
use std::sync::Arc;

use tool_core::{ToolContext, ToolError, blocking};

use crate::config::Config;
use crate::embed::Embedder;
use crate::store::{
    Decay, Filter, Hit, KvStore, Memory, MemoryStore, NewMemory, Pending, Upserted,
};
use crate::text::now_ms;

/// The constant of reciprocal-rank fusion: a result at rank `r` (1-based) of a list adds
/// `1 / (RRF_K + r)` to its score.
pub const RRF_K: f64 = 60.0;

/// How many candidates each retriever contributes to the fusion, for a given limit.
fn pool(limit: usize) -> usize {
    (limit * 4).clamp(20, 200).max(limit)
}

#[derive(Debug)]
pub(crate) struct Engine {
    pub(crate) memory: Arc<dyn MemoryStore>,
    pub(crate) kv: Arc<dyn KvStore>,
    embedder: Option<Embedder>,
    half_life_days: Option<f64>,
}

/// How a recall was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Keyword,
    Hybrid,
}

impl Mode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Keyword => "keyword",
            Mode::Hybrid => "hybrid",
        }
    }
}

/// One recalled memory.
#[derive(Debug, Clone)]
pub(crate) struct Recalled {
    pub(crate) memory: Memory,
    /// The BM25 relevance in keyword mode, the fused score in hybrid mode (decay included).
    pub(crate) score: f64,
    /// 1-based rank in the keyword list, if it was there.
    pub(crate) keyword_rank: Option<usize>,
    /// 1-based rank in the vector list, if it was there.
    pub(crate) vector_rank: Option<usize>,
}

#[derive(Debug)]
pub(crate) struct RecallResult {
    pub(crate) memories: Vec<Recalled>,
    pub(crate) mode: Mode,
    /// Why the recall was keyword-only although embeddings are configured.
    pub(crate) note: Option<String>,
}

/// What happened to embeddings during a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Embedding {
    /// No provider is configured.
    Off,
    /// The stored memory has its vector.
    Stored,
    /// The provider failed; the memory waits for a later call. The reason is a short phrase.
    Pending(String),
}

/// The outcome of one round of catching up on missing embeddings.
#[derive(Debug, Default)]
struct Backfill {
    /// The memories that got a vector.
    embedded: Vec<i64>,
    /// Why the provider could not be used, if it could not.
    failure: Option<String>,
}

impl Engine {
    pub(crate) fn new(
        config: &Config,
        memory: Arc<dyn MemoryStore>,
        kv: Arc<dyn KvStore>,
    ) -> Engine {
        if config.decay_half_life_days.is_some() && config.half_life_days().is_none() {
            tracing::warn!(
                value = ?config.decay_half_life_days,
                "memory decay half-life is not a positive number; decay is off"
            );
        }
        Engine {
            memory,
            kv,
            embedder: config.embedding.clone().map(Embedder::new),
            half_life_days: config.half_life_days(),
        }
    }

    fn decay(&self, now_ms: i64) -> Option<Decay> {
        self.half_life_days.map(|half_life_days| Decay {
            half_life_days,
            now_ms,
        })
    }

    /// Stores a memory, then embeds it (and catches up on others) when a provider is configured.
    pub(crate) async fn store(
        &self,
        ctx: &ToolContext,
        new: NewMemory,
    ) -> Result<(Upserted, Embedding), ToolError> {
        let store = Arc::clone(&self.memory);
        let content = self.embedder.as_ref().map(|_| new.content.clone());
        let upserted = blocking(ctx, move || Ok(store.upsert(&new, now_ms())?)).await?;
        let (Some(embedder), Some(content)) = (&self.embedder, content) else {
            return Ok((upserted, Embedding::Off));
        };
        // The stored memory goes first (from the cache when its text was embedded before), then
        // older memories still waiting.
        let first = Pending {
            id: upserted.id,
            content,
        };
        let backfill = self.backfill(ctx, embedder, Some(first)).await?;
        let embedding = if backfill.embedded.contains(&upserted.id) {
            Embedding::Stored
        } else {
            Embedding::Pending(
                backfill
                    .failure
                    .unwrap_or_else(|| "did not get to it in this call".to_string()),
            )
        };
        Ok((upserted, embedding))
    }

    /// Embeds `first` (a memory just stored) and up to `backfill_batch` memories that have no
    /// vector yet: from the cache where possible, the rest in one request.
    async fn backfill(
        &self,
        ctx: &ToolContext,
        embedder: &Embedder,
        first: Option<Pending>,
    ) -> Result<Backfill, ToolError> {
        let batch = embedder.config().backfill_batch;
        let store = Arc::clone(&self.memory);
        let model = embedder.model().to_string();
        // Work out the inputs and their cache keys here, so the blocking task owns plain data.
        let inputs_of = |pending: &[Pending]| -> Vec<(String, [u8; 32])> {
            pending
                .iter()
                .map(|p| {
                    let input = embedder.input(&p.content).to_string();
                    let key = embedder.cache_key(&input);
                    (input, key)
                })
                .collect()
        };
        let mut pending: Vec<Pending> = first.into_iter().collect();
        if batch > 0 {
            let store = Arc::clone(&store);
            let model = model.clone();
            let first_id = pending.first().map(|p| p.id);
            // One more than the batch, in case `first` is among them.
            let waiting = blocking(
                ctx,
                move || Ok(store.pending_embeddings(&model, batch + 1)?),
            )
            .await?;
            pending.extend(
                waiting
                    .into_iter()
                    .filter(|p| Some(p.id) != first_id)
                    .take(batch),
            );
        }
        if pending.is_empty() {
            return Ok(Backfill::default());
        }
        let keyed = inputs_of(&pending);
        let want_dim = embedder.config().dimensions;
        let (mut embedded, misses, stored_dim) = {
            let store = Arc::clone(&store);
            let model = model.clone();
            blocking(ctx, move || {
                let mut embedded = Vec::new();
                let mut misses = Vec::new();
                for (p, (input, key)) in pending.into_iter().zip(keyed) {
                    match store.cached_embedding(&key)? {
                        Some(v) if want_dim.is_none_or(|d| d == v.len()) => {
                            if store.set_embedding(p.id, &p.content, &model, &v)? {
                                embedded.push(p.id);
                            }
                        }
                        _ => misses.push((p, input, key)),
                    }
                }
                let stored_dim = store.embedding_dimension(&model)?;
                Ok((embedded, misses, stored_dim))
            })
            .await?
        };
        if misses.is_empty() {
            return Ok(Backfill {
                embedded,
                failure: None,
            });
        }
        if let Err(reason) = embedder.admit() {
            return Ok(Backfill {
                embedded,
                failure: Some(reason),
            });
        }
        let inputs: Vec<&str> = misses.iter().map(|(_, input, _)| input.as_str()).collect();
        let vectors = match embedder
            .embed(&ctx.cancel, &inputs, want_dim.or(stored_dim))
            .await
        {
            Ok(v) => v,
            Err(reason) => {
                return Ok(Backfill {
                    embedded,
                    failure: Some(reason),
                });
            }
        };
        let done = blocking(ctx, move || {
            let now = now_ms();
            let mut done = Vec::new();
            for ((p, _, key), v) in misses.into_iter().zip(vectors) {
                store.cache_embedding(&key, &model, &v, now)?;
                if store.set_embedding(p.id, &p.content, &model, &v)? {
                    done.push(p.id);
                }
            }
            Ok(done)
        })
        .await?;
        embedded.extend(done);
        Ok(Backfill {
            embedded,
            failure: None,
        })
    }

    /// The query's vector, or why there is none.
    async fn query_vector(
        &self,
        ctx: &ToolContext,
        embedder: &Embedder,
        query: &str,
    ) -> Result<Result<Vec<f32>, String>, ToolError> {
        if let Err(reason) = embedder.admit() {
            return Ok(Err(reason));
        }
        let want = match embedder.config().dimensions {
            Some(d) => Some(d),
            None => {
                let store = Arc::clone(&self.memory);
                let model = embedder.model().to_string();
                blocking(ctx, move || Ok(store.embedding_dimension(&model)?)).await?
            }
        };
        let input = embedder.input(query);
        Ok(embedder
            .embed(&ctx.cancel, &[input], want)
            .await
            .map(|mut v| v.pop().unwrap_or_default()))
    }

    /// Keyword search, or hybrid search when a provider is configured and answers.
    pub(crate) async fn recall(
        &self,
        ctx: &ToolContext,
        query: &str,
        terms: Vec<String>,
        filter: Filter,
        limit: usize,
    ) -> Result<RecallResult, ToolError> {
        let decay = self.decay(now_ms());
        let Some(embedder) = &self.embedder else {
            let store = Arc::clone(&self.memory);
            let hits = blocking(ctx, move || {
                Ok(store.keyword_search(&terms, &filter, limit, decay)?)
            })
            .await?;
            return Ok(RecallResult {
                memories: hits
                    .into_iter()
                    .enumerate()
                    .map(|(i, h)| Recalled {
                        memory: h.memory,
                        score: h.score,
                        keyword_rank: Some(i + 1),
                        vector_rank: None,
                    })
                    .collect(),
                mode: Mode::Keyword,
                note: None,
            });
        };

        let pool = pool(limit);
        let keyword = {
            let store = Arc::clone(&self.memory);
            let filter = filter.clone();
            blocking(ctx, move || {
                Ok(store.keyword_search(&terms, &filter, pool, decay)?)
            })
            .await?
        };
        match self.query_vector(ctx, embedder, query).await? {
            Ok(vector) => {
                // Catch up on memories stored while the provider was down, so they can be found.
                let backfill = self.backfill(ctx, embedder, None).await?;
                if let Some(reason) = backfill.failure {
                    tracing::warn!(%reason, "memories still wait for embeddings");
                }
                let store = Arc::clone(&self.memory);
                let model = embedder.model().to_string();
                let min = embedder.config().min_similarity;
                let semantic = blocking(ctx, move || {
                    Ok(store.vector_search(&model, &vector, &filter, pool, decay, min)?)
                })
                .await?;
                Ok(RecallResult {
                    memories: fuse(keyword, semantic, limit),
                    mode: Mode::Hybrid,
                    note: None,
                })
            }
            Err(reason) => Ok(RecallResult {
                memories: keyword
                    .into_iter()
                    .take(limit)
                    .enumerate()
                    .map(|(i, h)| Recalled {
                        memory: h.memory,
                        score: h.score,
                        keyword_rank: Some(i + 1),
                        vector_rank: None,
                    })
                    .collect(),
                mode: Mode::Keyword,
                note: Some(format!(
                    "keyword search only: the embedding provider {reason}"
                )),
            }),
        }
    }
}

/// Reciprocal-rank fusion of two ranked lists: each memory scores `Σ 1 / (RRF_K + rank)` over
/// the lists it appears in; ties go to the better single rank, then the smaller id.
pub(crate) fn fuse(keyword: Vec<Hit>, vector: Vec<Hit>, limit: usize) -> Vec<Recalled> {
    let mut by_id: HashMap<i64, Recalled> = HashMap::new();
    for (list, is_keyword) in [(keyword, true), (vector, false)] {
        for (i, hit) in list.into_iter().enumerate() {
            let rank = i + 1;
            let entry = by_id.entry(hit.memory.id).or_insert_with(|| Recalled {
                memory: hit.memory,
                score: 0.0,
                keyword_rank: None,
                vector_rank: None,
            });
            entry.score += 1.0 / (RRF_K + rank as f64);
            if is_keyword {
                entry.keyword_rank = Some(rank);
            } else {
                entry.vector_rank = Some(rank);
            }
        }
    }
    let mut fused: Vec<Recalled> = by_id.into_values().collect();
    let best = |r: &Recalled| {
        r.keyword_rank
            .unwrap_or(usize::MAX)
            .min(r.vector_rank.unwrap_or(usize::MAX))
    };
    fused.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(best(a).cmp(&best(b)))
            .then(a.memory.id.cmp(&b.memory.id))
    });
    fused.truncate(limit);
    fused
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Category;

    fn hit(id: i64) -> Hit {
        Hit {
            memory: Memory {
                id,
                key: format!("k{id}"),
                content: String::new(),
                bytes: 0,
                category: Category::Core,
                session_id: None,
                created_at: 0,
                updated_at: 0,
            },
            score: 0.0,
        }
    }

    #[test]
    fn fusion_rewards_agreement_and_keeps_ranks() {
        let fused = fuse(vec![hit(1), hit(2), hit(3)], vec![hit(3), hit(4)], 10);
        let ids: Vec<i64> = fused.iter().map(|r| r.memory.id).collect();
        // 3 is in both lists; 1 leads the keyword list; 2 and 4 are second in one list each
        // and tie, so the smaller id goes first.
        assert_eq!(ids, [3, 1, 2, 4]);
        let three = &fused[0];
        assert_eq!((three.keyword_rank, three.vector_rank), (Some(3), Some(1)));
        let want = 1.0 / (RRF_K + 3.0) + 1.0 / (RRF_K + 1.0);
        assert!((three.score - want).abs() < 1e-12);
        assert_eq!(fuse(vec![hit(1), hit(2)], vec![], 1).len(), 1);
    }
}
