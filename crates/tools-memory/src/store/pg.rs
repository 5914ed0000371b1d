//! [`PgStore`]: both store traits on PostgreSQL (feature `postgres`; `pg_schema.rs` has the
//! layout).
//!
//! Every statement goes through `query_typed` (one round trip, parameters typed here, nothing
//! prepared on the server), and every value — terms, keys, prefixes, filters, vectors — is a
//! bound parameter. The only text spliced into SQL is what this file writes itself: column lists
//! and numbered placeholders (`$1`, `$2`…).

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};

use tool_core::pg::postgres::error::SqlState;
use tool_core::pg::postgres::types::{ToSql, Type};
use tool_core::pg::postgres::{self, Row};
use tool_core::pg::{PgConn, PgError, PgPool, off_runtime};

use super::pg_schema::{MIGRATIONS, STORE};
use super::sqlite::prefix_successor;
use super::{
    Category, Decay, Filter, Hit, KeyListing, KvEntry, KvStore, Listing, Memory, MemoryStore,
    Millis, NewMemory, Pending, Replaced, StoreError, Upserted,
};

/// Cached embeddings kept at most; the oldest go first.
const CACHE_CAPACITY: i64 = 100_000;
/// The cache is pruned after every this many inserts (per handle).
const CACHE_PRUNE_EVERY: u32 = 256;
/// How often an upsert is tried again when another writer created the key between the
/// statement's snapshot and its insert (each retry sees that writer's row).
const UPSERT_ATTEMPTS: usize = 16;
/// The oldest server with everything the layout uses (`normalize`, generated columns).
const MIN_SERVER_VERSION: i32 = 130_000;

/// Long-term memory and the key-value scratchpad in a PostgreSQL schema, for deployments that
/// run several Toolshed processes (on several hosts) against one database.
///
/// [`PgStore::open`] migrates the schema of the pool (once, under an advisory lock, however
/// many replicas start together); every operation then takes a connection from the pool for one
/// statement. Writes are single statements, so concurrent writers — in this process or in
/// others — never lose an update: a key stored by several replicas at once ends up as one row,
/// and exactly one of them reports it as new.
///
/// Keyword search is BM25 with FTS5's formula and constants (k1 = 1.2, b = 0.75, IDF clamped to
/// 1e-6 where a term is in most rows) over a `tsvector` column, so scores and orderings match
/// [`SqliteStore`](super::SqliteStore)'s for the same memories. See the crate documentation for
/// how the backends differ.
///
/// # Example
///
/// ```no_run
/// use std::sync::Arc;
/// use tool_core::pg::{PgConfig, PgPool};
/// use tools_memory::{Config, KvStore, MemoryStore, PgStore};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let pool = PgPool::connect(&PgConfig::new("postgres://toolshed@127.0.0.1/toolshed"))?;
/// let store = Arc::new(PgStore::open(pool)?);
/// let tools = tools_memory::tools_with_stores(
///     &Config::new(""),
///     Arc::clone(&store) as Arc<dyn MemoryStore>,
///     store as Arc<dyn KvStore>,
/// );
/// assert_eq!(tools.len(), 7);
/// # Ok(())
/// # }
/// ```
pub struct PgStore {
    pool: PgPool,
    /// The model whose stale vectors (from other models) have been queued for re-embedding.
    requeued_for: Mutex<Option<String>>,
    cache_inserts: AtomicU32,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore")
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// A store on `pool`'s schema: checks the server (UTF8 encoding, PostgreSQL 13 or newer)
    /// and creates or migrates the tables. Blocking (it may be called inside a tokio runtime).
    pub fn open(pool: PgPool) -> Result<PgStore, StoreError> {
        off_runtime(|| {
            check_server(&pool)?;
            pool.migrate(STORE, MIGRATIONS).map_err(|e| match e {
                PgError::Query(q) if !q.is_closed() && q.as_db_error().is_some() => {
                    StoreError::Unavailable(format!(
                        "The memory tables in PostgreSQL schema {} could not be created or upgraded ({}); ask the operator to grant the Toolshed user CREATE on that schema, or to point the memory store at another schema.",
                        pool.schema(),
                        q.as_db_error().map(|d| d.message()).unwrap_or_default()
                    ))
                }
                other => pool_error(other),
            })
        })?;
        Ok(PgStore {
            pool,
            requeued_for: Mutex::new(None),
            cache_inserts: AtomicU32::new(0),
        })
    }

    /// The pool the store uses.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    fn conn(&self) -> Result<PgConn, StoreError> {
        self.pool.get().map_err(pool_error)
    }

    /// Queues, once per model and handle, every memory whose vector came from another model.
    fn requeue_other_models(&self, conn: &mut PgConn, model: &str) -> Result<(), StoreError> {
        let mut done = self
            .requeued_for
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if done.as_deref() == Some(model) {
            return Ok(());
        }
        // In id order, so two replicas requeueing at once take the queue rows in the same order
        // and cannot deadlock.
        conn.query_typed(
            "INSERT INTO embedding_queue (memory_id)
             SELECT memory_id FROM memory_vectors WHERE model <> $1 ORDER BY memory_id
             ON CONFLICT DO NOTHING",
            &[(&model, Type::TEXT)],
        )
        .map_err(query_error)?;
        *done = Some(model.to_string());
        Ok(())
    }
}

/// Refuses a server the layout cannot live on, with a sentence saying what to change.
fn check_server(pool: &PgPool) -> Result<(), StoreError> {
    let mut conn = pool.get().map_err(pool_error)?;
    let row = conn
        .query_one(
            "SELECT current_setting('server_encoding'), current_setting('server_version_num')::integer",
            &[],
        )
        .map_err(query_error)?;
    let encoding: String = row.get(0);
    let version: i32 = row.get(1);
    if !encoding.eq_ignore_ascii_case("UTF8") {
        return Err(StoreError::Unavailable(format!(
            "The PostgreSQL database at {} uses the {encoding} encoding, but Toolshed memory needs UTF8 (its full-text search folds Unicode text); ask the operator to create the database with ENCODING 'UTF8' and point the memory store at it.",
            pool.target()
        )));
    }
    if version < MIN_SERVER_VERSION {
        return Err(StoreError::Unavailable(format!(
            "The PostgreSQL server at {} is version {}.{}, but Toolshed memory needs PostgreSQL 13 or newer; ask the operator to upgrade the server.",
            pool.target(),
            version / 10_000,
            version % 10_000
        )));
    }
    Ok(())
}

/// A pool failure as a store error: the pool's sentences are kept.
fn pool_error(e: PgError) -> StoreError {
    match e {
        PgError::Unavailable(m) => StoreError::Unavailable(m),
        PgError::Query(e) => query_error(e),
        other => StoreError::Backend(Box::new(other)),
    }
}

/// A failed statement as a store error: lock and statement timeouts, deadlocks and
/// serialisation failures are [`StoreError::Busy`] (trying again helps), a lost connection is
/// [`StoreError::Unavailable`], anything else [`StoreError::Backend`].
fn query_error(e: postgres::Error) -> StoreError {
    const BUSY: [SqlState; 4] = [
        SqlState::LOCK_NOT_AVAILABLE,
        SqlState::QUERY_CANCELED,
        SqlState::T_R_DEADLOCK_DETECTED,
        SqlState::T_R_SERIALIZATION_FAILURE,
    ];
    if e.code().is_some_and(|c| BUSY.contains(c)) {
        return StoreError::Busy;
    }
    if e.is_closed() {
        return StoreError::Unavailable(format!(
            "The connection to the PostgreSQL memory database was lost ({e}); try the call again, and if it keeps failing ask the user to check that the database server is running."
        ));
    }
    StoreError::Backend(Box::new(e))
}

/// PostgreSQL text cannot hold NUL; a key or session id with one can never be stored, so a
/// lookup of one finds nothing, and a write of one is refused (the tools refuse NUL earlier).
fn has_nul(s: &str) -> bool {
    s.contains('\0')
}

fn nul_refused(what: &str) -> StoreError {
    StoreError::Backend(
        format!("the {what} contains a NUL byte, which PostgreSQL text cannot hold").into(),
    )
}

/// The terms worth searching for: control characters made spaces (NUL among them), and terms
/// without a letter or digit dropped, as for SQLite's FTS5 literals.
fn clean_terms(terms: &[String]) -> Vec<String> {
    terms
        .iter()
        .map(|t| {
            t.chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect::<String>()
                .trim()
                .to_string()
        })
        .filter(|t| t.chars().any(char::is_alphanumeric))
        .collect()
}

const MEMORY_COLUMNS: &str = "m.id, m.key, m.content, octet_length(m.content), m.category, \
     m.session_id, m.created_at, m.updated_at";

fn memory_from_row(row: &Row) -> Result<Memory, StoreError> {
    let category: String = row.try_get(4).map_err(query_error)?;
    Ok(Memory {
        id: row.try_get(0).map_err(query_error)?,
        key: row.try_get(1).map_err(query_error)?,
        content: row.try_get(2).map_err(query_error)?,
        bytes: row.try_get::<_, i32>(3).map_err(query_error)?.max(0) as usize,
        category: Category::parse(&category).unwrap_or(Category::Custom),
        session_id: row.try_get(5).map_err(query_error)?,
        created_at: row.try_get(6).map_err(query_error)?,
        updated_at: row.try_get(7).map_err(query_error)?,
    })
}

fn hits_from_rows(rows: &[Row]) -> Result<Vec<Hit>, StoreError> {
    rows.iter()
        .map(|row| {
            Ok(Hit {
                memory: memory_from_row(row)?,
                score: row.try_get(8).map_err(query_error)?,
            })
        })
        .collect()
}

/// The filter's SQL over the alias `m` of `memories`, with its three parameters from `$first`:
/// category, session and whether to include internal keys.
fn filter_sql(first: usize) -> String {
    let (c, s, i) = (first, first + 1, first + 2);
    format!(
        "(${c}::text IS NULL OR m.category = ${c}::text)
         AND (${s}::text IS NULL OR m.session_id = ${s}::text)
         AND (${i}::boolean OR NOT starts_with(m.key, '_'))"
    )
}

/// The decay factor of [`Decay::factor`] in SQL, over the alias `m`, with the parameters
/// `$now` (bigint) and `$half_life` (double precision; NULL means no decay). The same
/// operations in the same order as `decay_factor`, so the factors agree to the last bit.
fn decay_sql(now: usize, half_life: usize) -> String {
    format!(
        "(CASE WHEN ${half_life}::float8 IS NULL OR m.category = 'core' THEN 1.0::float8
          ELSE exp(-{ln2:?}::float8
                   * (greatest(${now}::int8::float8 - m.updated_at::float8, 0.0::float8)
                      / {day:?}::float8)
                   / ${half_life}::float8)
          END)",
        ln2 = std::f64::consts::LN_2,
        day = super::DAY_MS,
    )
}

/// The decay parameters: `(now, half-life)`, the half-life NULL when decay is off or unusable
/// (as `decay_factor` treats a half-life that is not a positive, finite number).
fn decay_params(decay: Option<Decay>) -> (Option<i64>, Option<f64>) {
    match decay {
        Some(d) if d.half_life_days.is_finite() && d.half_life_days > 0.0 => {
            (Some(d.now_ms), Some(d.half_life_days))
        }
        _ => (None, None),
    }
}

fn limit_param(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// The keyword search for `n` terms (`$1`…`$n`), then category, session, internal (`$n+1`…
/// `$n+3`), the limit (`$n+4`), now and the half-life (`$n+5`, `$n+6`).
///
/// Each term becomes `phraseto_tsquery('simple', toolshed_fold(term))`: the term is folded like
/// the indexed text and parsed as plain words (a phrase when it holds several), so tsquery
/// operators in it (`&`, `|`, `!`, `<->`, `:*`, parentheses, quotes) are never syntax. The
/// terms are OR-ed for the GIN index. Each matching memory scores FTS5's BM25: per term,
/// `idf × f × (k1 + 1) / (f + k1 × (1 − b + b × len / avglen))`, where `f` is the term's
/// frequency in the memory — `ts_rank_cd` with every weight 1 and no normalisation counts
/// exactly the term's (or phrase's) occurrences — `len` its word count, and the corpus sizes
/// come from `memory_stats`; the document frequency behind each IDF is counted on the index.
/// The filters sit in the WHERE clause, the decay factor multiplies the score, and the limit
/// applies to the decayed order.
fn keyword_sql(n: usize) -> String {
    let q_columns: Vec<String> = (1..=n)
        .map(|i| {
            format!("phraseto_tsquery('simple'::regconfig, toolshed_fold(${i}::text)) AS q{i}")
        })
        .collect();
    let idf_columns: Vec<String> = (1..=n)
        .map(|i| {
            format!(
                "(SELECT CASE WHEN x.idf <= 0.0::float8 THEN 1e-6::float8 ELSE x.idf END
                  FROM (SELECT ln(greatest(s.n - h.hits + 0.5::float8, 0.5::float8)
                                  / (h.hits + 0.5::float8)) AS idf
                        FROM (SELECT count(*)::float8 AS hits FROM memories
                              WHERE tsv @@ q.q{i}) h) x) AS idf{i}"
            )
        })
        .collect();
    let score_terms: Vec<String> = (1..=n)
        .map(|i| {
            format!(
                "CASE WHEN m.tsv @@ q.q{i} THEN coalesce(
                     w.idf{i} * 2.2::float8
                     / (1.0::float8 + 1.2::float8
                        * (0.25::float8 + 0.75::float8 * m.doc_len::float8 / s.avgdl)
                        / nullif(ts_rank_cd('{{1,1,1,1}}'::real[], m.tsv, q.q{i})::float8, 0.0)),
                     0.0::float8)
                 ELSE 0.0::float8 END"
            )
        })
        .collect();
    let any: Vec<String> = (1..=n).map(|i| format!("q{i}")).collect();
    format!(
        "WITH q AS MATERIALIZED (SELECT {q_columns}),
         s AS MATERIALIZED (
             SELECT greatest(sum(docs), 0)::float8 AS n,
                    CASE WHEN sum(docs) > 0 AND sum(tokens) > 0
                         THEN sum(tokens)::float8 / sum(docs)::float8 ELSE 1.0::float8 END AS avgdl
             FROM memory_stats),
         w AS MATERIALIZED (SELECT {idf_columns} FROM q, s)
         SELECT {MEMORY_COLUMNS}, r.score FROM (
             SELECT m.id, ({score_terms}) * {decay} AS score
             FROM memories m, q, s, w
             WHERE m.tsv @@ (SELECT {any} FROM q) AND {filter}
             ORDER BY score DESC, m.id
             LIMIT ${limit}
         ) r JOIN memories m ON m.id = r.id
         ORDER BY r.score DESC, m.id",
        q_columns = q_columns.join(", "),
        idf_columns = idf_columns.join(", "),
        score_terms = score_terms.join(" + "),
        any = any.join(" || "),
        decay = decay_sql(n + 5, n + 6),
        filter = filter_sql(n + 1),
        limit = n + 4,
    )
}

/// The vector search: model `$1`, dimension `$2`, query `$3`, threshold `$4`, the filter
/// (`$5`…`$7`), the limit `$8`, now and the half-life (`$9`, `$10`). The cosine is the dot
/// product of two unit vectors, summed in double precision; NaN (a damaged vector) never
/// passes the threshold.
fn vector_sql() -> String {
    format!(
        "SELECT {MEMORY_COLUMNS}, r.score FROM (
             SELECT m.id, c.cosine * {decay} AS score
             FROM memory_vectors v
             JOIN memories m ON m.id = v.memory_id
             CROSS JOIN LATERAL (
                 SELECT sum(a::float8 * b::float8) AS cosine
                 FROM unnest(v.vector, $3::real[]) AS t(a, b)) c
             WHERE v.model = $1 AND v.dim = $2 AND {filter}
               AND c.cosine > $4::float8 AND c.cosine <> 'NaN'::float8
             ORDER BY score DESC, m.id
             LIMIT $8
         ) r JOIN memories m ON m.id = r.id
         ORDER BY r.score DESC, m.id",
        decay = decay_sql(9, 10),
        filter = filter_sql(5),
    )
}

/// Stores a memory in one statement. `old` locks the key's row if it exists (waiting for a
/// writer that holds it, then reading its newest version), `changed` replaces it and reports
/// what it held, `added` inserts the key when there was none. When another writer inserts the
/// key after this statement's snapshot, `added` does nothing and no row comes back: the caller
/// runs the statement again, which then sees and replaces that row.
const UPSERT: &str = "
    WITH old AS (
        SELECT id, octet_length(content) AS bytes, content = $2 AS same
        FROM memories WHERE key = $1
        FOR NO KEY UPDATE
    ),
    changed AS (
        UPDATE memories m
        SET content = $2, category = $3, session_id = $4, updated_at = $5
        FROM old WHERE m.id = old.id
        RETURNING m.id, old.bytes, old.same
    ),
    added AS (
        INSERT INTO memories (key, content, category, session_id, created_at, updated_at)
        SELECT $1, $2, $3, $4, $5, $5 WHERE NOT EXISTS (SELECT 1 FROM old)
        ON CONFLICT (key) DO NOTHING
        RETURNING id
    )
    SELECT id, bytes, same FROM changed
    UNION ALL
    SELECT id, NULL::integer, NULL::boolean FROM added";

/// Stores a vector if the memory still holds `content`. The memory's row is locked first, as
/// an upsert locks it, so a vector can never land beside content newer than its own.
const SET_EMBEDDING: &str = "
    WITH target AS (
        SELECT id FROM memories WHERE id = $1 AND content = $2 FOR NO KEY UPDATE
    ),
    stored AS (
        INSERT INTO memory_vectors (memory_id, model, dim, vector)
        SELECT id, $3, $4, $5 FROM target
        ON CONFLICT (memory_id) DO UPDATE
            SET model = excluded.model, dim = excluded.dim, vector = excluded.vector
        RETURNING memory_id
    ),
    dequeued AS (
        DELETE FROM embedding_queue WHERE memory_id IN (SELECT memory_id FROM stored)
    )
    SELECT count(*) FROM stored";

impl MemoryStore for PgStore {
    fn upsert(&self, memory: &NewMemory, now_ms: Millis) -> Result<Upserted, StoreError> {
        if has_nul(&memory.key) {
            return Err(nul_refused("key"));
        }
        if has_nul(&memory.content) {
            return Err(nul_refused("content"));
        }
        if memory.session_id.as_deref().is_some_and(has_nul) {
            return Err(nul_refused("session id"));
        }
        let category = memory.category.as_str();
        let session = memory.session_id.as_deref();
        let params: [(&(dyn ToSql + Sync), Type); 5] = [
            (&memory.key, Type::TEXT),
            (&memory.content, Type::TEXT),
            (&category, Type::TEXT),
            (&session, Type::TEXT),
            (&now_ms, Type::INT8),
        ];
        let mut conn = self.conn()?;
        for _ in 0..UPSERT_ATTEMPTS {
            let Some(row) = conn.query_typed_opt(UPSERT, &params).map_err(query_error)? else {
                continue;
            };
            let id: i64 = row.try_get(0).map_err(query_error)?;
            let bytes: Option<i32> = row.try_get(1).map_err(query_error)?;
            let same: Option<bool> = row.try_get(2).map_err(query_error)?;
            return Ok(Upserted {
                id,
                replaced: bytes.map(|b| Replaced {
                    previous_bytes: b.max(0) as usize,
                    same_content: same.unwrap_or(false),
                }),
            });
        }
        // Another writer created and deleted the key again and again: give up for now.
        Err(StoreError::Busy)
    }

    fn keyword_search(
        &self,
        terms: &[String],
        filter: &Filter,
        limit: usize,
        decay: Option<Decay>,
    ) -> Result<Vec<Hit>, StoreError> {
        let terms = clean_terms(terms);
        if terms.is_empty() || limit == 0 || filter.session_id.as_deref().is_some_and(has_nul) {
            return Ok(Vec::new());
        }
        let category = filter.category.map(Category::as_str);
        let session = filter.session_id.as_deref();
        let limit = limit_param(limit);
        let (now, half_life) = decay_params(decay);
        let mut params: Vec<(&(dyn ToSql + Sync), Type)> = terms
            .iter()
            .map(|t| (t as &(dyn ToSql + Sync), Type::TEXT))
            .collect();
        params.extend([
            (&category as &(dyn ToSql + Sync), Type::TEXT),
            (&session, Type::TEXT),
            (&filter.include_internal, Type::BOOL),
            (&limit, Type::INT8),
            (&now, Type::INT8),
            (&half_life, Type::FLOAT8),
        ]);
        let rows = self
            .conn()?
            .query_typed(&keyword_sql(terms.len()), &params)
            .map_err(query_error)?;
        hits_from_rows(&rows)
    }

    fn vector_search(
        &self,
        model: &str,
        query: &[f32],
        filter: &Filter,
        limit: usize,
        decay: Option<Decay>,
        min_similarity: f32,
    ) -> Result<Vec<Hit>, StoreError> {
        if query.is_empty() || limit == 0 || filter.session_id.as_deref().is_some_and(has_nul) {
            return Ok(Vec::new());
        }
        let Ok(dim) = i32::try_from(query.len()) else {
            return Ok(Vec::new());
        };
        let threshold = f64::from(min_similarity.max(0.0));
        let category = filter.category.map(Category::as_str);
        let session = filter.session_id.as_deref();
        let limit = limit_param(limit);
        let (now, half_life) = decay_params(decay);
        let rows = self
            .conn()?
            .query_typed(
                &vector_sql(),
                &[
                    (&model, Type::TEXT),
                    (&dim, Type::INT4),
                    (&query, Type::FLOAT4_ARRAY),
                    (&threshold, Type::FLOAT8),
                    (&category, Type::TEXT),
                    (&session, Type::TEXT),
                    (&filter.include_internal, Type::BOOL),
                    (&limit, Type::INT8),
                    (&now, Type::INT8),
                    (&half_life, Type::FLOAT8),
                ],
            )
            .map_err(query_error)?;
        hits_from_rows(&rows)
    }

    fn list(
        &self,
        filter: &Filter,
        limit: usize,
        with_content: bool,
    ) -> Result<Listing, StoreError> {
        if filter.session_id.as_deref().is_some_and(has_nul) {
            return Ok(Listing {
                memories: Vec::new(),
                total: 0,
            });
        }
        let columns = if with_content {
            MEMORY_COLUMNS.to_string()
        } else {
            MEMORY_COLUMNS.replace("m.content,", "'' AS content,")
        };
        let where_ = filter_sql(1);
        let category = filter.category.map(Category::as_str);
        let session = filter.session_id.as_deref();
        let limit = limit_param(limit);
        let mut conn = self.conn()?;
        let rows = conn
            .query_typed(
                &format!(
                    "SELECT {columns} FROM memories m WHERE {where_}
                     ORDER BY m.updated_at DESC, m.id DESC LIMIT $4"
                ),
                &[
                    (&category, Type::TEXT),
                    (&session, Type::TEXT),
                    (&filter.include_internal, Type::BOOL),
                    (&limit, Type::INT8),
                ],
            )
            .map_err(query_error)?;
        let memories = rows
            .iter()
            .map(memory_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        let total: i64 = conn
            .query_typed_one(
                &format!("SELECT count(*) FROM memories m WHERE {where_}"),
                &[
                    (&category, Type::TEXT),
                    (&session, Type::TEXT),
                    (&filter.include_internal, Type::BOOL),
                ],
            )
            .and_then(|r| r.try_get(0))
            .map_err(query_error)?;
        Ok(Listing {
            memories,
            total: total.max(0) as u64,
        })
    }

    fn forget(&self, key: &str) -> Result<Option<Memory>, StoreError> {
        if has_nul(key) {
            return Ok(None);
        }
        self.conn()?
            .query_typed_opt(
                &format!("DELETE FROM memories AS m WHERE m.key = $1 RETURNING {MEMORY_COLUMNS}"),
                &[(&key, Type::TEXT)],
            )
            .map_err(query_error)?
            .map(|row| memory_from_row(&row))
            .transpose()
    }

    fn pending_embeddings(&self, model: &str, limit: usize) -> Result<Vec<Pending>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut conn = self.conn()?;
        self.requeue_other_models(&mut conn, model)?;
        let limit = limit_param(limit);
        // Newest ids first: those are the memories most likely to be asked about.
        conn.query_typed(
            "SELECT q.memory_id, m.content FROM embedding_queue q
             JOIN memories m ON m.id = q.memory_id
             ORDER BY q.memory_id DESC LIMIT $1",
            &[(&limit, Type::INT8)],
        )
        .map_err(query_error)?
        .iter()
        .map(|r| {
            Ok(Pending {
                id: r.try_get(0).map_err(query_error)?,
                content: r.try_get(1).map_err(query_error)?,
            })
        })
        .collect()
    }

    fn set_embedding(
        &self,
        id: i64,
        content: &str,
        model: &str,
        vector: &[f32],
    ) -> Result<bool, StoreError> {
        if vector.is_empty() || has_nul(content) {
            return Ok(false);
        }
        let dim = i32::try_from(vector.len())
            .map_err(|_| StoreError::Backend("an embedding has too many dimensions".into()))?;
        let stored: i64 = self
            .conn()?
            .query_typed_one(
                SET_EMBEDDING,
                &[
                    (&id, Type::INT8),
                    (&content, Type::TEXT),
                    (&model, Type::TEXT),
                    (&dim, Type::INT4),
                    (&vector, Type::FLOAT4_ARRAY),
                ],
            )
            .and_then(|r| r.try_get(0))
            .map_err(query_error)?;
        Ok(stored > 0)
    }

    fn embedding_dimension(&self, model: &str) -> Result<Option<usize>, StoreError> {
        self.conn()?
            .query_typed_opt(
                "SELECT dim FROM memory_vectors WHERE model = $1 LIMIT 1",
                &[(&model, Type::TEXT)],
            )
            .map_err(query_error)?
            .map(|r| r.try_get::<_, i32>(0).map(|d| d.max(0) as usize))
            .transpose()
            .map_err(query_error)
    }

    fn cached_embedding(&self, hash: &[u8; 32]) -> Result<Option<Vec<f32>>, StoreError> {
        let hash = &hash[..];
        self.conn()?
            .query_typed_opt(
                "SELECT vector FROM embedding_cache WHERE hash = $1",
                &[(&hash, Type::BYTEA)],
            )
            .map_err(query_error)?
            .map(|r| r.try_get::<_, Vec<f32>>(0))
            .transpose()
            .map(|v| v.filter(|v| !v.is_empty()))
            .map_err(query_error)
    }

    fn cache_embedding(
        &self,
        hash: &[u8; 32],
        model: &str,
        vector: &[f32],
        now_ms: Millis,
    ) -> Result<(), StoreError> {
        if vector.is_empty() {
            return Ok(());
        }
        let dim = i32::try_from(vector.len())
            .map_err(|_| StoreError::Backend("an embedding has too many dimensions".into()))?;
        let hash = &hash[..];
        let prune = self.cache_inserts.fetch_add(1, Ordering::Relaxed) % CACHE_PRUNE_EVERY
            == CACHE_PRUNE_EVERY - 1;
        let mut conn = self.conn()?;
        conn.query_typed(
            "INSERT INTO embedding_cache (hash, model, dim, vector, used_at)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (hash) DO UPDATE SET model = excluded.model, dim = excluded.dim,
                 vector = excluded.vector, used_at = excluded.used_at",
            &[
                (&hash, Type::BYTEA),
                (&model, Type::TEXT),
                (&dim, Type::INT4),
                (&vector, Type::FLOAT4_ARRAY),
                (&now_ms, Type::INT8),
            ],
        )
        .map_err(query_error)?;
        if prune {
            conn.query_typed(
                "DELETE FROM embedding_cache WHERE hash IN (
                     SELECT hash FROM embedding_cache ORDER BY used_at DESC, hash OFFSET $1)",
                &[(&CACHE_CAPACITY, Type::INT8)],
            )
            .map_err(query_error)?;
        }
        Ok(())
    }
}

impl KvStore for PgStore {
    fn set(&self, key: &str, value: &str, now_ms: Millis) -> Result<bool, StoreError> {
        if has_nul(key) {
            return Err(nul_refused("key"));
        }
        if has_nul(value) {
            return Err(nul_refused("value"));
        }
        // A row that the statement inserted has no deleting transaction (xmax 0); one it
        // updated has this transaction's id there.
        let inserted: bool = self
            .conn()?
            .query_typed_one(
                "INSERT INTO kv (key, value, updated_at) VALUES ($1, $2, $3)
                 ON CONFLICT (key) DO UPDATE
                     SET value = excluded.value, updated_at = excluded.updated_at
                 RETURNING (xmax = 0)",
                &[
                    (&key, Type::TEXT),
                    (&value, Type::TEXT),
                    (&now_ms, Type::INT8),
                ],
            )
            .and_then(|r| r.try_get(0))
            .map_err(query_error)?;
        Ok(!inserted)
    }

    fn get(&self, key: &str) -> Result<Option<KvEntry>, StoreError> {
        if has_nul(key) {
            return Ok(None);
        }
        self.conn()?
            .query_typed_opt(
                "SELECT key, value, updated_at FROM kv WHERE key = $1",
                &[(&key, Type::TEXT)],
            )
            .map_err(query_error)?
            .map(|r| {
                Ok(KvEntry {
                    key: r.try_get(0).map_err(query_error)?,
                    value: r.try_get(1).map_err(query_error)?,
                    updated_at: r.try_get(2).map_err(query_error)?,
                })
            })
            .transpose()
    }

    fn keys(
        &self,
        prefix: &str,
        include_internal: bool,
        limit: usize,
    ) -> Result<KeyListing, StoreError> {
        if has_nul(prefix) {
            return Ok(KeyListing {
                keys: Vec::new(),
                total: 0,
            });
        }
        // `key` sorts bytewise (COLLATE "C"), so [prefix, successor) is exactly the keys that
        // start with the prefix, every character of it data, and the primary key serves it.
        let upper = prefix_successor(prefix);
        const WHERE: &str = "key >= $1 AND ($2::text IS NULL OR key < $2::text)
             AND ($3::boolean OR NOT starts_with(key, '_'))";
        let limit = limit_param(limit);
        let mut conn = self.conn()?;
        let keys = conn
            .query_typed(
                &format!("SELECT key FROM kv WHERE {WHERE} ORDER BY key LIMIT $4"),
                &[
                    (&prefix, Type::TEXT),
                    (&upper, Type::TEXT),
                    (&include_internal, Type::BOOL),
                    (&limit, Type::INT8),
                ],
            )
            .map_err(query_error)?
            .iter()
            .map(|r| r.try_get(0).map_err(query_error))
            .collect::<Result<Vec<String>, _>>()?;
        let total: i64 = conn
            .query_typed_one(
                &format!("SELECT count(*) FROM kv WHERE {WHERE}"),
                &[
                    (&prefix, Type::TEXT),
                    (&upper, Type::TEXT),
                    (&include_internal, Type::BOOL),
                ],
            )
            .and_then(|r| r.try_get(0))
            .map_err(query_error)?;
        Ok(KeyListing {
            keys,
            total: total.max(0) as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_lose_control_characters_and_empty_ones_are_dropped() {
        let t = |v: &[&str]| clean_terms(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(t(&["a & b", "x\0y", "!!", " ", "<->"]), ["a & b", "x y"]);
        assert!(t(&[]).is_empty());
    }

    #[test]
    fn generated_sql_numbers_its_parameters_in_order() {
        let sql = keyword_sql(3);
        for p in [
            "$1::text",
            "$3::text",
            "$4::text",
            "$6::boolean",
            "LIMIT $7",
            "$8::int8",
            "$9::float8",
        ] {
            assert!(sql.contains(p), "{p} missing in {sql}");
        }
        assert!(!sql.contains("$10"), "{sql}");
        assert!(sql.contains("(SELECT q1 || q2 || q3 FROM q)"), "{sql}");
        let sql = vector_sql();
        assert!(
            sql.contains("$9::int8") && sql.contains("$10::float8"),
            "{sql}"
        );
    }

    #[test]
    fn the_sql_decay_constants_are_the_rust_ones() {
        let sql = decay_sql(1, 2);
        assert!(sql.contains("-0.6931471805599453::float8"), "{sql}");
        assert!(sql.contains("86400000.0::float8"), "{sql}");
    }
}
