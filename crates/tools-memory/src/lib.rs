//! The memory family: long-term memory an agent keeps across sessions (`memory_store`,
//! `memory_recall`, `memory_list`, `memory_forget`) and a plain key-value scratchpad
//! (`remember`, `recall`, `list_keys`).
//!
//! # Stores
//!
//! The tools talk to two small, synchronous, object-safe traits, [`MemoryStore`] and
//! [`KvStore`], called inside [`tool_core::blocking`]. [`SqliteStore`] implements both over one
//! SQLite file ([`Config::database`]): WAL, a 5 s busy timeout, every change one `BEGIN
//! IMMEDIATE` transaction, the layout versioned with `PRAGMA user_version` and migrated on
//! open. The file is opened lazily, on the first call, so building the tools (for a registry or
//! a schema snapshot) creates nothing. Another backend plugs in through [`tools_with_stores`].
//!
//! # PostgreSQL (feature `postgres`)
//!
//! `PgStore` implements both traits on a PostgreSQL schema (13 or newer, UTF8), through
//! tool-core's pool (`tool_core::pg::PgPool`), for deployments that run several Toolshed
//! processes, on several hosts, against one database; [`tools_with_stores`] gives the tools
//! over it. `PgStore::open` creates or migrates the tables once, under an advisory lock. Every write is
//! one statement, so replicas storing the same key at once leave one row, and exactly one of
//! them reports it as new. The behaviour is SQLite's, with these differences:
//!
//! - Full-text search is a generated `tsvector` column with a GIN index, parsed with the
//!   `simple` configuration after folding the text the way FTS5's `unicode61
//!   remove_diacritics 2` tokenizer sees it (NFD, combining marks dropped, lower case,
//!   everything but letters and digits a word break), without the `unaccent` extension, which a
//!   plain database user may not be able to create. A term that FTS5 and PostgreSQL's parser
//!   cut differently (`1e5x` is one word to FTS5, two to PostgreSQL) can match differently,
//!   and a phrase may span the end of the key and the start of the content.
//! - Every term becomes `phraseto_tsquery('simple', …)` of its folded text, bound as a
//!   parameter: tsquery operators (`&`, `|`, `!`, `<->`, `:*`, parentheses, quotes) in a term
//!   are words or word breaks, never syntax.
//! - Ranking is BM25 with FTS5's formula and constants, computed in SQL: term frequencies from
//!   `ts_rank_cd` with unit weights (which counts occurrences), document frequencies counted on
//!   the index, corpus sizes kept by a trigger. Scores therefore equal SQLite's for the same
//!   memories, not just their order, apart from the tokenizer differences above and a
//!   tsvector's limits (positions stop at 16,383 and 256 per word, so a word repeated more
//!   than 256 times in one memory counts 256 times).
//! - Vectors are `real[]` columns and the cosine is computed in SQL (in double precision),
//!   filters, threshold and limit included. `pgvector` and its indexes are future work: the
//!   extension is not packaged everywhere (not for Debian 12), so the scan is exact and linear
//!   like SQLite's.
//! - Keys compare and sort bytewise (`COLLATE "C"`), and a key, value or session id with a NUL
//!   byte (which the tools refuse anyway) cannot be stored.
//! - A lock or statement timeout, a deadlock or a serialisation failure is
//!   [`StoreError::Busy`]; an unreachable server or exhausted pool is
//!   [`StoreError::Unavailable`], with tool-core's sentence.
//!
//! # Recall
//!
//! Keyword search is SQLite FTS5 with BM25 ranking over key and content, kept in step with the
//! table by triggers. A query is split into words and every word is bound as a quoted FTS5
//! string literal, so FTS syntax (`OR`, `NEAR(…)`, `col:`, `*`, `^`, quotes) and SQL
//! metacharacters are searched for as text, never interpreted; any word may match, and
//! memories holding more of the words, and rarer ones, rank higher. Common English words
//! (`the`, `of`, `what`…) are left out of a query, unless it has nothing else, in which case
//! its words are searched as one phrase ([`query_terms`]). Category and session filters sit
//! inside the ranking query, before the limit. A query with no words to search for (empty, or
//! only punctuation and symbols such as `*`) is answered with the most recent memories (the
//! same filters, then the limit) and a note that says so.
//!
//! With an [`EmbeddingConfig`], recall is hybrid: the content of every memory is embedded
//! through an OpenAI-compatible `POST {base_url}/embeddings` at store time and kept as a
//! unit-length `f32` blob beside it (an embedding cache keyed by SHA-256 of model and text
//! avoids embedding the same text twice); a recall embeds the query, ranks by BM25 and by
//! cosine similarity (both with the same filters inside the query) and fuses the two lists
//! with reciprocal-rank fusion (k = 60). When the provider fails — no connection, a timeout, a
//! non-2xx answer, malformed JSON, vectors of the wrong dimension — recall falls back to
//! keyword search and says so in a note; it never fails for that. A circuit breaker leaves a
//! failing provider alone (by default for 30 s after 3 consecutive failures), and memories
//! stored meanwhile are embedded later, a bounded batch per call.
//!
//! With [`Config::decay_half_life_days`], a memory's ranking score halves with every half-life
//! since it was last stored; memories of category `core` never decay.
//!
//! # Internal keys
//!
//! Keys starting with `_` are internal (see [`is_internal_key`]): bookkeeping a host or agent
//! keeps beside the model's memories. `memory_list`, `memory_recall` and `list_keys` skip them
//! unless `include_internal` is set (for `list_keys`, a prefix starting with `_` also shows
//! them); calls that name an exact key work on them like on any other.
//!
//! # The snowball guard
//!
//! `memory_recall` and `memory_list` print each memory in a `<recalled_memory …>` block.
//! `memory_store` and `remember` refuse content holding such a block, with a sentence telling
//! the model to store only the new fact: agents that stored their own recall output found it in
//! every later recall, and their prompts grew without bound.
//!
//! Memories are untrusted text, so the same refusal is what keeps one from ending its frame
//! early (`</recalled_memory>` followed by text that speaks as the system). The tag is found
//! however it is spelled — full width, other case, zero-width, bidi and other invisible
//! characters, soft hyphens, combining marks, compatibility letters, white space inside — by
//! [`tool_core::frame`], in content, values, keys and session ids alike. Every display (the
//! frames, key listings, `recall`) replaces a tag that reached the store some other way (an
//! older version, another program) with `[recalled_memory tag removed]`; the structured
//! output keeps the stored text as it is.
//!
//! # Policy
//!
//! Every tool declares [`tool_core::Access::State`]: store `memory` for the `memory_*` tools and
//! `kv` for the scratchpad, `write` for store, forget and remember. The database file and the
//! embedding endpoint come from the operator's configuration, never from arguments, so they are
//! not declared as path or network accesses. A recall may write derived data (vectors of
//! memories still waiting for one); it never changes a memory.
//!
//! # Example
//!
//! Keyword memory in an in-memory SQLite database (no embedding provider, so no network):
//!
//! ```
//! use std::sync::Arc;
//! use tool_core::{Limits, Policy, Registry, Stack, ToolContext, Workspace};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let mut registry = Registry::new();
//! registry.register_all(tools_memory::tools(&tools_memory::Config::new(":memory:")))?;
//! let stack = Stack::new(registry);
//! let ctx = ToolContext::new(
//!     Workspace::local(dir.path())?,
//!     Arc::new(Policy::full()),
//!     Arc::new(Limits::default()),
//! );
//!
//! stack
//!     .call_json(
//!         "memory_store",
//!         r#"{"key": "editor", "content": "The user prefers Helix as their editor."}"#,
//!         ctx.for_call(),
//!     )
//!     .await?;
//! let recalled = stack
//!     .call_json("memory_recall", r#"{"query": "which editor"}"#, ctx.for_call())
//!     .await?;
//! assert!(recalled.joined_text().contains("Helix"));
//! # Ok(())
//! # }
//! ```

mod config;
mod embed;
mod engine;
mod list_keys;
mod memory_forget;
mod memory_list;
mod memory_recall;
mod memory_store;
mod recall;
mod remember;
mod store;
mod text;

use std::sync::Arc;

use tool_core::{Alias, DynTool, typed};

pub use config::{Config, EmbeddingConfig};
pub use engine::RRF_K;
pub use list_keys::{ListKeys, ListKeysArgs, MAX_KEYS_LISTED};
pub use memory_forget::{MemoryForget, MemoryForgetArgs};
pub use memory_list::{DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, MemoryList, MemoryListArgs};
pub use memory_recall::{DEFAULT_RECALL_LIMIT, MAX_RECALL_LIMIT, MemoryRecall, MemoryRecallArgs};
pub use memory_store::{MemoryStoreArgs, MemoryStoreTool};
pub use recall::{Recall, RecallArgs};
pub use remember::{KV_STORE, Remember, RememberArgs};
#[cfg(feature = "postgres")]
pub use store::PgStore;
pub use store::{
    Category, Decay, Filter, Hit, KeyListing, KvEntry, KvStore, Listing, Memory, MemoryStore,
    Millis, NewMemory, Pending, Replaced, SqliteStore, StoreError, Upserted, is_internal_key,
};
pub use text::{
    FRAME_TAG, MAX_CONTENT_BYTES, MAX_KEY_BYTES, MAX_QUERY_BYTES, MAX_SESSION_BYTES, MAX_TERMS,
    query_terms,
};

/// Every tool of this crate, sharing one [`SqliteStore`] on [`Config::database`] (opened on the
/// first call, not here).
pub fn tools(config: &Config) -> Vec<Arc<dyn DynTool>> {
    let store = Arc::new(SqliteStore::new(config.database.clone()));
    tools_with_stores(config, Arc::clone(&store) as Arc<dyn MemoryStore>, store)
}

/// Every tool of this crate over the given stores ([`Config::database`] is not used).
pub fn tools_with_stores(
    config: &Config,
    memory: Arc<dyn MemoryStore>,
    kv: Arc<dyn KvStore>,
) -> Vec<Arc<dyn DynTool>> {
    let engine = Arc::new(engine::Engine::new(config, memory, kv));
    vec![
        typed(MemoryStoreTool::new(Arc::clone(&engine))),
        typed(MemoryRecall::new(Arc::clone(&engine))),
        typed(MemoryList::new(Arc::clone(&engine))),
        typed(MemoryForget::new(Arc::clone(&engine))),
        typed(Remember::new(Arc::clone(&engine))),
        typed(Recall::new(Arc::clone(&engine))),
        typed(ListKeys::new(engine)),
    ]
}

/// Seed-compatible names of this crate's tools (see TOOLS.md, "Seed-compatible names"). The
/// canonical names are the seeds' own: NullClaw's `memory_*` and pig's `remember`, `recall`
/// and `list_keys`, with the same argument names.
pub const ALIASES: &[Alias] = &[
    Alias {
        profile: "nullclaw",
        name: "memory_store",
        target: "memory_store",
        renames: &[],
    },
    Alias {
        profile: "nullclaw",
        name: "memory_recall",
        target: "memory_recall",
        renames: &[],
    },
    Alias {
        profile: "nullclaw",
        name: "memory_list",
        target: "memory_list",
        renames: &[],
    },
    Alias {
        profile: "nullclaw",
        name: "memory_forget",
        target: "memory_forget",
        renames: &[],
    },
    Alias {
        profile: "pig",
        name: "remember",
        target: "remember",
        renames: &[],
    },
    Alias {
        profile: "pig",
        name: "recall",
        target: "recall",
        renames: &[],
    },
    Alias {
        profile: "pig",
        name: "list_keys",
        target: "list_keys",
        renames: &[],
    },
];
