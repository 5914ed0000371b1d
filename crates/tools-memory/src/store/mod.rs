//! The storage behind the memory tools: two small, synchronous, object-safe traits, their
//! SQLite implementation and (feature `postgres`) their PostgreSQL one.
//!
//! The tools call these inside [`tool_core::blocking`], so an implementation may block (on a
//! database lock, on the network for a server database). Everything a model typed reaches an
//! implementation as plain values — terms, keys, filters — never as query syntax; each backend
//! turns them into its own parameterised queries. Time is always passed in (`now_ms`, [`Decay`]),
//! so a backend never reads the clock and tests can be exact.

mod open;
#[cfg(feature = "postgres")]
mod pg;
#[cfg(feature = "postgres")]
mod pg_schema;
mod schema;
mod sqlite;

use std::fmt;

use serde::{Deserialize, Serialize};
use tool_core::schemars::{self, JsonSchema};

#[cfg(feature = "postgres")]
pub use pg::PgStore;
pub use sqlite::SqliteStore;

/// Milliseconds since the Unix epoch, UTC.
pub type Millis = i64;

/// What kind of memory an entry is. Only `core` is exempt from time decay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Lasting facts and preferences (never decays).
    #[default]
    Core,
    /// Notes about today's work.
    Daily,
    /// Things said in a conversation.
    Conversation,
    /// Anything else.
    Custom,
}

impl Category {
    /// The name stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Core => "core",
            Category::Daily => "daily",
            Category::Conversation => "conversation",
            Category::Custom => "custom",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Category> {
        match s {
            "core" => Some(Category::Core),
            "daily" => Some(Category::Daily),
            "conversation" => Some(Category::Conversation),
            "custom" => Some(Category::Custom),
            _ => None,
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether `key` is internal: it starts with `_`. Internal keys hold bookkeeping of the host or
/// agent (`_profile`, `_last_summary`); listings and searches skip them unless asked to include
/// them, while calls that name the exact key (store, forget, recall) work on them as on any key.
pub fn is_internal_key(key: &str) -> bool {
    key.starts_with('_')
}

/// A memory as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Memory {
    /// The backend's id (stable while the key exists).
    pub id: i64,
    /// The unique key.
    pub key: String,
    /// The text (empty when a listing was asked not to include it).
    pub content: String,
    /// The length of the text in bytes (also when `content` was left out).
    pub bytes: usize,
    /// The category.
    pub category: Category,
    /// The session it belongs to, if any.
    pub session_id: Option<String>,
    /// When the key was first stored.
    pub created_at: Millis,
    /// When it was last stored.
    pub updated_at: Millis,
}

/// A memory to store under its key (replacing whatever the key held).
#[derive(Debug, Clone, PartialEq)]
pub struct NewMemory {
    /// The unique key.
    pub key: String,
    /// The text.
    pub content: String,
    /// The category.
    pub category: Category,
    /// The session it belongs to, if any.
    pub session_id: Option<String>,
}

/// What an upsert did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upserted {
    /// The memory's id.
    pub id: i64,
    /// `None` when the key was new; otherwise whether the content was the same as before.
    pub replaced: Option<Replaced>,
}

/// What a replaced memory held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replaced {
    /// The previous content's length in bytes.
    pub previous_bytes: usize,
    /// Whether the content did not change.
    pub same_content: bool,
}

/// Which memories a search or listing considers. Applied inside the query, before any limit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only this category.
    pub category: Option<Category>,
    /// Only this session.
    pub session_id: Option<String>,
    /// Also memories with internal keys (see [`is_internal_key`]).
    pub include_internal: bool,
}

/// Time decay of ranking scores: a memory's score is multiplied by
/// `0.5 ^ (age / half-life)`, where the age counts from its last store; `core` memories are
/// exempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decay {
    /// The half-life in days (positive).
    pub half_life_days: f64,
    /// The time ages are measured at.
    pub now_ms: Millis,
}

impl Decay {
    /// The factor for a memory of `category` last stored at `updated_at`.
    pub fn factor(&self, category: Category, updated_at: Millis) -> f64 {
        decay_factor(category, updated_at, self.now_ms, self.half_life_days)
    }
}

pub(crate) const DAY_MS: f64 = 86_400_000.0;

pub(crate) fn decay_factor(
    category: Category,
    updated_at: Millis,
    now_ms: Millis,
    half_life_days: f64,
) -> f64 {
    if category == Category::Core || !(half_life_days.is_finite() && half_life_days > 0.0) {
        return 1.0;
    }
    // A memory stamped in the future (a clock step) counts as fresh, never as more than fresh.
    let age_days = (now_ms.saturating_sub(updated_at)).max(0) as f64 / DAY_MS;
    (-std::f64::consts::LN_2 * age_days / half_life_days).exp()
}

/// A search result: the memory and its score (higher is better; decay included).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// The memory.
    pub memory: Memory,
    /// For keyword search, the BM25 relevance (the negated FTS5 `bm25()`, so higher is better);
    /// for vector search, the cosine similarity. Either multiplied by the decay factor.
    pub score: f64,
}

/// A page of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// The memories, newest first.
    pub memories: Vec<Memory>,
    /// How many memories match the filter in all.
    pub total: u64,
}

/// A memory waiting for its embedding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The memory's id.
    pub id: i64,
    /// Its content, to embed.
    pub content: String,
}

/// An entry of the key-value store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KvEntry {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
    /// When it was last set.
    pub updated_at: Millis,
}

/// A page of keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyListing {
    /// Keys in byte order.
    pub keys: Vec<String>,
    /// How many keys match in all.
    pub total: u64,
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store cannot be used (the database cannot be created or opened, is another program's,
    /// or is of a newer version). The message is a sentence an operator can act on.
    #[error("{0}")]
    Unavailable(String),
    /// Another writer held the database for longer than the busy timeout.
    #[error(
        "The memory database stayed locked by another writer for too long; try the call again."
    )]
    Busy,
    /// Anything else from the backend (logged, never shown to a model).
    #[error("memory store backend error: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
}

impl From<StoreError> for tool_core::ToolError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(m) => tool_core::ToolError::Failed(m),
            StoreError::Busy => tool_core::ToolError::Failed(StoreError::Busy.to_string()),
            StoreError::Backend(source) => tool_core::ToolError::Internal(source),
        }
    }
}

/// Long-term memory: keyed entries with full-text search, optional vectors and listings.
///
/// Synchronous and object-safe; the tools call it inside [`tool_core::blocking`].
/// [`SqliteStore`] implements it, and with the feature `postgres` so does `PgStore`.
pub trait MemoryStore: Send + Sync + fmt::Debug {
    /// Stores `memory` under its key, replacing what the key held (content, category and
    /// session), and keeps the full-text index in step. A changed content drops the key's vector
    /// and queues it for embedding.
    fn upsert(&self, memory: &NewMemory, now_ms: Millis) -> Result<Upserted, StoreError>;

    /// The best `limit` memories for `terms` by BM25 (any term may match; more and rarer terms
    /// rank higher), within `filter`, with `decay` applied to the ranking. `terms` are plain
    /// words or phrases: the backend quotes them, so nothing in them is query syntax.
    fn keyword_search(
        &self,
        terms: &[String],
        filter: &Filter,
        limit: usize,
        decay: Option<Decay>,
    ) -> Result<Vec<Hit>, StoreError>;

    /// The best `limit` memories by cosine similarity to `query` (unit length) among those with a
    /// vector from `model` of the same dimension, within `filter`, above `min_similarity`, with
    /// `decay` applied to the ranking.
    fn vector_search(
        &self,
        model: &str,
        query: &[f32],
        filter: &Filter,
        limit: usize,
        decay: Option<Decay>,
        min_similarity: f32,
    ) -> Result<Vec<Hit>, StoreError>;

    /// The newest `limit` memories within `filter`, and how many match in all.
    fn list(
        &self,
        filter: &Filter,
        limit: usize,
        with_content: bool,
    ) -> Result<Listing, StoreError>;

    /// Deletes exactly `key` (no pattern) and returns what it held, or `None` if it did not exist.
    fn forget(&self, key: &str) -> Result<Option<Memory>, StoreError>;

    /// Up to `limit` memories without a vector from `model`, newest first.
    fn pending_embeddings(&self, model: &str, limit: usize) -> Result<Vec<Pending>, StoreError>;

    /// Stores the vector of memory `id` from `model`, if its content is still `content` (a newer
    /// store may have replaced it meanwhile). Returns whether it was stored.
    fn set_embedding(
        &self,
        id: i64,
        content: &str,
        model: &str,
        vector: &[f32],
    ) -> Result<bool, StoreError>;

    /// The dimension of the vectors already stored for `model`, if any.
    fn embedding_dimension(&self, model: &str) -> Result<Option<usize>, StoreError>;

    /// A cached embedding by `hash` (SHA-256 of the model name, a NUL and the input).
    fn cached_embedding(&self, hash: &[u8; 32]) -> Result<Option<Vec<f32>>, StoreError>;

    /// Caches an embedding under `hash`.
    fn cache_embedding(
        &self,
        hash: &[u8; 32],
        model: &str,
        vector: &[f32],
        now_ms: Millis,
    ) -> Result<(), StoreError>;
}

/// The key-value scratchpad (`remember`, `recall`, `list_keys`).
pub trait KvStore: Send + Sync + fmt::Debug {
    /// Sets `key` to `value`; returns whether a value was replaced.
    fn set(&self, key: &str, value: &str, now_ms: Millis) -> Result<bool, StoreError>;

    /// The entry of `key`, if any.
    fn get(&self, key: &str) -> Result<Option<KvEntry>, StoreError>;

    /// Up to `limit` keys that start with `prefix` (compared literally: `%`, `_` and every other
    /// character are data), in byte order, and how many match in all. Internal keys (see
    /// [`is_internal_key`]) only with `include_internal`.
    fn keys(
        &self,
        prefix: &str,
        include_internal: bool,
        limit: usize,
    ) -> Result<KeyListing, StoreError>;
}
