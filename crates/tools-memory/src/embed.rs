//! The embedding client: an OpenAI-compatible `POST {base_url}/embeddings`, its checks, and a
//! circuit breaker.
//!
//! The request goes through [`tool_core::net::Endpoint`]: the configured host may be a local
//! server (Ollama on loopback), but no redirect to another origin is followed, a base URL with
//! user information is refused, no environment proxy is used and the body is capped.
//!
//! Every failure — no connection, a timeout, a non-2xx status, a body that is not the expected
//! JSON, vectors of the wrong count or dimension, non-finite or zero vectors — comes back as a
//! short reason the tools turn into a note; none of them fails a call. After
//! `breaker_threshold` consecutive failures the provider is left alone for `breaker_cooldown`;
//! the first call after that is a trial whose success closes the breaker and whose failure opens
//! it again at once.

use std::fmt;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Instant;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use tool_core::CancellationToken;
use tool_core::net::{Cut, Endpoint, Method, NetConfig, Request, header};

use crate::config::EmbeddingConfig;

/// The largest response body read, in bytes.
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;
/// The largest dimension accepted.
const MAX_DIMENSIONS: usize = 16_384;

pub(crate) struct Embedder {
    config: EmbeddingConfig,
    url: String,
    /// The endpoint and its client, set up on first use (a refused URL is a failure reason).
    endpoint: OnceLock<Result<Endpoint, String>>,
    breaker: Mutex<Breaker>,
}

impl fmt::Debug for Embedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Embedder")
            .field("url", &self.url)
            .field("model", &self.config.model)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Breaker {
    /// Failures since the last success.
    failures: u32,
    /// While set and in the future, the provider is not called.
    open_until: Option<Instant>,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl Embedder {
    pub(crate) fn new(config: EmbeddingConfig) -> Embedder {
        let url = format!("{}/embeddings", config.base_url.trim_end_matches('/'));
        Embedder {
            config,
            url,
            endpoint: OnceLock::new(),
            breaker: Mutex::new(Breaker::default()),
        }
    }

    pub(crate) fn config(&self) -> &EmbeddingConfig {
        &self.config
    }

    pub(crate) fn model(&self) -> &str {
        &self.config.model
    }

    /// The text actually embedded for `text`: at most `max_input_chars` characters.
    pub(crate) fn input<'a>(&self, text: &'a str) -> &'a str {
        match text.char_indices().nth(self.config.max_input_chars) {
            Some((at, _)) => &text[..at],
            None => text,
        }
    }

    /// The cache key of `input`: SHA-256 of the model name, a NUL byte and the input.
    pub(crate) fn cache_key(&self, input: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.config.model.as_bytes());
        h.update([0u8]);
        h.update(input.as_bytes());
        h.finalize().into()
    }

    fn breaker(&self) -> std::sync::MutexGuard<'_, Breaker> {
        self.breaker.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `Err(reason)` while the breaker is open.
    pub(crate) fn admit(&self) -> Result<(), String> {
        let b = self.breaker();
        match b.open_until {
            Some(until) if Instant::now() < until => {
                let left = until.saturating_duration_since(Instant::now());
                Err(format!(
                    "failed {} times in a row and is left alone for another {} s",
                    b.failures,
                    left.as_secs() + u64::from(left.subsec_nanos() > 0)
                ))
            }
            _ => Ok(()),
        }
    }

    fn record(&self, ok: bool) {
        let mut b = self.breaker();
        if ok {
            *b = Breaker::default();
        } else {
            b.failures = b.failures.saturating_add(1);
            if b.failures >= self.config.breaker_threshold {
                b.open_until = Some(Instant::now() + self.config.breaker_cooldown);
            }
        }
    }

    /// Embeds `inputs` in one request and returns one unit-length vector per input, in order.
    /// `expected_dim` is the dimension the vectors must have, when known. Records the outcome
    /// in the breaker; the caller checks [`Embedder::admit`] first.
    pub(crate) async fn embed(
        &self,
        cancel: &CancellationToken,
        inputs: &[&str],
        expected_dim: Option<usize>,
    ) -> Result<Vec<Vec<f32>>, String> {
        let result = self.request(cancel, inputs, expected_dim).await;
        // A cancelled call says nothing about the provider's health.
        if !cancel.is_cancelled() {
            self.record(result.is_ok());
        }
        if let Err(reason) = &result {
            tracing::warn!(url = %self.url, model = %self.config.model, %reason, "embedding request failed");
        }
        result
    }

    async fn request(
        &self,
        cancel: &CancellationToken,
        inputs: &[&str],
        expected_dim: Option<usize>,
    ) -> Result<Vec<Vec<f32>>, String> {
        if inputs.is_empty() {
            return Ok(Vec::new());
        }
        let endpoint = self
            .endpoint
            .get_or_init(|| {
                Endpoint::new("the embedding provider", &self.url, &NetConfig::default())
                    .map_err(|e| e.detail().to_owned())
            })
            .as_ref()
            .map_err(Clone::clone)?;
        let mut request = Request::new(
            Method::POST,
            endpoint.url().clone(),
            self.config.timeout,
            MAX_RESPONSE_BYTES,
        )
        .json(&serde_json::json!({
            "model": self.config.model,
            "input": inputs,
        }));
        if let Some(var) = &self.config.api_key_env {
            match std::env::var(var) {
                Ok(key) if !key.is_empty() => {
                    request = request
                        .header(header::AUTHORIZATION, &format!("Bearer {key}"))
                        .map_err(|_| {
                            format!("has a key in {var} that an HTTP header cannot carry (a line break?)")
                        })?;
                }
                _ => {
                    return Err(format!(
                        "has no key: the environment variable {var} is not set"
                    ));
                }
            }
        }
        // The detail reads on from "the embedding provider" in the tools' notes.
        let fetched = endpoint
            .send(cancel, request)
            .await
            .map_err(|e| e.detail().trim_end_matches('.').to_owned())?;
        if !fetched.status.is_success() {
            return Err(format!("answered HTTP {}", fetched.status.as_u16()));
        }
        if let Some(cut) = &fetched.cut {
            // Anything cut short is unusable as JSON: too long, or broken off.
            return Err(match cut {
                Cut::Size(_) => format!("sent more than {} MiB", MAX_RESPONSE_BYTES / 1024 / 1024),
                other => format!("sent an incomplete answer ({})", other.describe()),
            });
        }
        let parsed: Response = serde_json::from_slice(&fetched.body)
            .map_err(|e| format!("sent a malformed response ({e})"))?;
        check_vectors(parsed, inputs.len(), expected_dim)
    }

    /// How long the breaker stays open, for tests of this module.
    #[cfg(test)]
    fn open_for(&self) -> Option<std::time::Duration> {
        self.breaker()
            .open_until
            .map(|u| u.saturating_duration_since(Instant::now()))
    }
}

/// Orders the vectors by `index`, checks their count, dimension and values, and normalises them.
fn check_vectors(
    response: Response,
    count: usize,
    expected_dim: Option<usize>,
) -> Result<Vec<Vec<f32>>, String> {
    if response.data.len() != count {
        return Err(format!(
            "sent {} vectors for {count} inputs",
            response.data.len()
        ));
    }
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; count];
    for (i, datum) in response.data.into_iter().enumerate() {
        let at = datum.index.unwrap_or(i);
        match slots.get_mut(at) {
            Some(slot @ None) => *slot = Some(datum.embedding),
            _ => return Err(format!("sent a bad or repeated index {at}")),
        }
    }
    let vectors: Vec<Vec<f32>> = slots.into_iter().flatten().collect();
    let dim = vectors.first().map_or(0, Vec::len);
    if dim == 0 || dim > MAX_DIMENSIONS {
        return Err(format!("sent {dim}-dimensional vectors"));
    }
    if let Some(want) = expected_dim
        && want != dim
    {
        return Err(format!(
            "sent {dim}-dimensional vectors where {want} were expected"
        ));
    }
    vectors
        .into_iter()
        .map(|mut v| {
            if v.len() != dim {
                return Err(format!(
                    "sent vectors of different dimensions ({} and {dim})",
                    v.len()
                ));
            }
            let norm = v
                .iter()
                .map(|x| f64::from(*x) * f64::from(*x))
                .sum::<f64>()
                .sqrt();
            if !norm.is_finite() || norm == 0.0 {
                return Err("sent a zero or non-finite vector".to_string());
            }
            for x in &mut v {
                *x = (f64::from(*x) / norm) as f32;
            }
            Ok(v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(json: &str) -> Response {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn vectors_are_ordered_checked_and_normalised() {
        let v = check_vectors(
            response(r#"{"data":[{"index":1,"embedding":[0,2]},{"index":0,"embedding":[3,4]}]}"#),
            2,
            Some(2),
        )
        .unwrap();
        assert_eq!(v, vec![vec![0.6, 0.8], vec![0.0, 1.0]]);
        let bad = [
            (
                r#"{"data":[{"embedding":[1,2]}]}"#,
                2,
                None,
                "1 vectors for 2",
            ),
            (
                r#"{"data":[{"embedding":[1,2]}]}"#,
                1,
                Some(3),
                "where 3 were expected",
            ),
            (r#"{"data":[{"embedding":[]}]}"#, 1, None, "0-dimensional"),
            (r#"{"data":[{"embedding":[0,0]}]}"#, 1, None, "zero"),
            (
                r#"{"data":[{"embedding":[1]},{"embedding":[1,2]}]}"#,
                2,
                None,
                "different dimensions",
            ),
            (
                r#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}"#,
                2,
                None,
                "repeated index",
            ),
        ];
        for (json, count, dim, want) in bad {
            let e = check_vectors(response(json), count, dim).unwrap_err();
            assert!(e.contains(want), "{json}: {e}");
        }
    }

    #[test]
    fn the_breaker_opens_after_the_threshold_and_a_success_closes_it() {
        let e = Embedder::new(
            EmbeddingConfig::new("http://127.0.0.1:9", "m")
                .with_breaker(2, std::time::Duration::from_secs(60)),
        );
        assert!(e.admit().is_ok());
        e.record(false);
        assert!(e.admit().is_ok());
        e.record(false);
        assert!(e.admit().unwrap_err().contains("2 times"));
        assert!(e.open_for().unwrap() > std::time::Duration::from_secs(50));
        e.record(true);
        assert!(e.admit().is_ok());
    }

    #[test]
    fn inputs_are_cut_by_characters_and_keyed_by_model() {
        let e = Embedder::new(EmbeddingConfig::new("http://x", "m").with_max_input_chars(3));
        assert_eq!(e.input("äöüß"), "äöü");
        assert_eq!(e.input("ab"), "ab");
        let other = Embedder::new(EmbeddingConfig::new("http://x", "m2"));
        assert_ne!(e.cache_key("ab"), other.cache_key("ab"));
        assert_eq!(e.cache_key("ab"), e.cache_key("ab"));
    }
}
