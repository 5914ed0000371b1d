//! The settings of the memory tools. They come from the operator's configuration, never from a
//! model's arguments: the database file and the embedding endpoint are fixed for a registry.

use std::path::PathBuf;
use std::time::Duration;

/// Settings of the memory tools.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The SQLite database file. Its parent directory is created (mode 0700) and the file itself
    /// (mode 0600) on the first call of a memory tool, never when the tools are built.
    /// `:memory:` keeps everything in memory for the life of the registry.
    pub database: PathBuf,
    /// The embedding provider for hybrid recall; `None` means keyword search only.
    pub embedding: Option<EmbeddingConfig>,
    /// The half-life, in days, of a memory's weight in recall ranking: a memory last stored one
    /// half-life ago counts half as much as a fresh one. `None` (the default) means no decay.
    /// Memories of category `core` never decay. A value that is not a positive, finite number
    /// turns decay off.
    pub decay_half_life_days: Option<f64>,
}

impl Config {
    /// Memory in the SQLite file `database`, keyword search only, no decay.
    pub fn new(database: impl Into<PathBuf>) -> Config {
        Config {
            database: database.into(),
            embedding: None,
            decay_half_life_days: None,
        }
    }

    /// Turns on hybrid recall with this embedding provider.
    pub fn with_embedding(mut self, embedding: EmbeddingConfig) -> Config {
        self.embedding = Some(embedding);
        self
    }

    /// Turns on time decay with this half-life in days (see [`Config::decay_half_life_days`]).
    pub fn with_decay_half_life_days(mut self, days: f64) -> Config {
        self.decay_half_life_days = Some(days);
        self
    }

    /// The half-life in days when decay is on and the value is usable.
    pub(crate) fn half_life_days(&self) -> Option<f64> {
        self.decay_half_life_days
            .filter(|d| d.is_finite() && *d > 0.0)
    }
}

/// An OpenAI-compatible embedding endpoint (`POST {base_url}/embeddings` with
/// `{"model": …, "input": [...]}`), such as OpenAI, Ollama (`http://127.0.0.1:11434/v1`),
/// llama.cpp's server or vLLM.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EmbeddingConfig {
    /// The API base, without `/embeddings`: `https://api.openai.com/v1`,
    /// `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    /// The embedding model, e.g. `text-embedding-3-small` or `nomic-embed-text`.
    pub model: String,
    /// The name of the environment variable that holds the bearer token, if the endpoint needs
    /// one. The token itself never appears in the configuration.
    pub api_key_env: Option<String>,
    /// How long one request may take. Default 10 s.
    pub timeout: Duration,
    /// The dimension the model returns. When `None`, the first vector stored for the model fixes
    /// it; a response of another dimension counts as a failure either way.
    pub dimensions: Option<usize>,
    /// Text longer than this many characters is cut before it is embedded (keyword search still
    /// sees all of it), so one long memory cannot exceed the model's context. Default 8000.
    pub max_input_chars: usize,
    /// Memories embedded per call when catching up on ones stored while the provider was down
    /// or before embeddings were configured (besides the memory a store call embeds anyway).
    /// Default 16.
    pub backfill_batch: usize,
    /// Consecutive failures after which the provider is left alone for `breaker_cooldown`.
    /// Default 3.
    pub breaker_threshold: u32,
    /// How long the provider is left alone once the breaker opens. Default 30 s.
    pub breaker_cooldown: Duration,
    /// Vector matches whose cosine similarity is at or below this are not candidates. Default 0.
    pub min_similarity: f32,
}

impl EmbeddingConfig {
    /// The endpoint at `base_url` with `model` and the defaults above.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> EmbeddingConfig {
        EmbeddingConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            timeout: Duration::from_secs(10),
            dimensions: None,
            max_input_chars: 8000,
            backfill_batch: 16,
            breaker_threshold: 3,
            breaker_cooldown: Duration::from_secs(30),
            min_similarity: 0.0,
        }
    }

    /// Sends `Authorization: Bearer $NAME` with the value of the environment variable `name`.
    pub fn with_api_key_env(mut self, name: impl Into<String>) -> EmbeddingConfig {
        self.api_key_env = Some(name.into());
        self
    }

    /// Sets the per-request timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> EmbeddingConfig {
        self.timeout = timeout;
        self
    }

    /// Sets the expected dimension.
    pub fn with_dimensions(mut self, dimensions: usize) -> EmbeddingConfig {
        self.dimensions = Some(dimensions);
        self
    }

    /// Sets the longest text embedded, in characters (at least 1).
    pub fn with_max_input_chars(mut self, chars: usize) -> EmbeddingConfig {
        self.max_input_chars = chars.max(1);
        self
    }

    /// Sets how many pending memories are embedded per call (0 turns catching up off).
    pub fn with_backfill_batch(mut self, batch: usize) -> EmbeddingConfig {
        self.backfill_batch = batch;
        self
    }

    /// Sets the circuit breaker: open after `threshold` consecutive failures (at least 1), for
    /// `cooldown`.
    pub fn with_breaker(mut self, threshold: u32, cooldown: Duration) -> EmbeddingConfig {
        self.breaker_threshold = threshold.max(1);
        self.breaker_cooldown = cooldown;
        self
    }

    /// Sets the similarity a vector match must exceed.
    pub fn with_min_similarity(mut self, min: f32) -> EmbeddingConfig {
        self.min_similarity = min;
        self
    }
}
