//! [`SqliteStore`]: both store traits over one SQLite file (see `schema.rs` for the layout).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, named_params, params};

use super::open::{backend, connect};
use super::schema::migrate;
use super::{
    Category, Decay, Filter, Hit, KeyListing, KvEntry, KvStore, Listing, Memory, MemoryStore,
    Millis, NewMemory, Pending, Replaced, StoreError, Upserted, decay_factor,
};

/// Cached embeddings kept at most; the oldest go first.
const CACHE_CAPACITY: usize = 100_000;
/// The cache is pruned after every this many inserts.
const CACHE_PRUNE_EVERY: u32 = 256;

/// Long-term memory and the key-value scratchpad in one SQLite file.
///
/// Opening is lazy: [`SqliteStore::new`] only records the path, and the first operation creates
/// the directory, the file and the tables. A failed open is retried by the next operation. One
/// connection serves the handle behind a mutex; several handles or processes on the same file
/// share it through WAL (readers never wait for writers) and a 5 s busy timeout (writers queue),
/// and every change is one `BEGIN IMMEDIATE` transaction, so concurrent writers lose nothing.
pub struct SqliteStore {
    path: PathBuf,
    conn: Mutex<Option<Connection>>,
    /// The model whose stale vectors (from other models) have been queued for re-embedding.
    requeued_for: Mutex<Option<String>>,
    cache_inserts: AtomicU32,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// A store on the file at `path`, opened on first use.
    pub fn new(path: impl Into<PathBuf>) -> SqliteStore {
        SqliteStore {
            path: path.into(),
            conn: Mutex::new(None),
            requeued_for: Mutex::new(None),
            cache_inserts: AtomicU32::new(0),
        }
    }

    /// A store on the file at `path`, opened (and created or migrated) now.
    pub fn open(path: impl Into<PathBuf>) -> Result<SqliteStore, StoreError> {
        let store = SqliteStore::new(path);
        store.with(|_| Ok(()))?;
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the connection, opening it first if this is the first use.
    fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        // A panic inside `f` rolled back its transaction while unwinding, so the connection is
        // still consistent.
        let mut guard: MutexGuard<'_, Option<Connection>> =
            self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        if guard.is_none() {
            let mut conn = connect(&self.path)?;
            migrate(&mut conn, &self.path)?;
            register_functions(&conn)?;
            *guard = Some(conn);
        }
        let conn = guard.as_mut().ok_or_else(|| {
            StoreError::Backend("the memory connection vanished after opening".into())
        })?;
        f(conn)
    }

    /// Queues, once per model, every memory whose vector came from another model.
    fn requeue_other_models(&self, conn: &Connection, model: &str) -> Result<(), StoreError> {
        let mut done = self
            .requeued_for
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if done.as_deref() == Some(model) {
            return Ok(());
        }
        conn.execute(
            "INSERT OR IGNORE INTO embedding_queue(memory_id)
             SELECT memory_id FROM memory_vectors WHERE model <> ?1",
            [model],
        )
        .map_err(backend)?;
        *done = Some(model.to_string());
        Ok(())
    }
}

/// `toolshed_decay(category, updated_at, now_ms, half_life_days)`: the decay factor of
/// [`Decay::factor`], so the ranking query orders by decayed relevance without a candidate pool.
fn register_functions(conn: &Connection) -> Result<(), StoreError> {
    conn.create_scalar_function(
        "toolshed_decay",
        4,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let category = match ctx.get_raw(0) {
                ValueRef::Text(t) => std::str::from_utf8(t)
                    .ok()
                    .and_then(Category::parse)
                    .unwrap_or(Category::Custom),
                _ => Category::Custom,
            };
            let updated_at: i64 = ctx.get(1)?;
            let now_ms: i64 = ctx.get(2)?;
            let half_life_days: f64 = ctx.get(3)?;
            Ok(decay_factor(category, updated_at, now_ms, half_life_days))
        },
    )
    .map_err(backend)
}

/// The FTS5 expression for `terms`: each term a string literal (double quotes doubled, control
/// characters made spaces), joined with OR. Inside a string literal FTS5 sees only text, so
/// `AND`, `NEAR(…)`, `col:`, `*`, `^`, parentheses and quotes are searched for as words.
/// `None` when no term has anything left.
pub(crate) fn fts_expression(terms: &[String]) -> Option<String> {
    let quoted: Vec<String> = terms
        .iter()
        .map(|t| {
            let clean: String = t
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            clean.trim().replace('"', "\"\"")
        })
        .filter(|t| t.chars().any(char::is_alphanumeric))
        .map(|t| format!("\"{t}\""))
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

/// The smallest string greater than every string that starts with `prefix`, if there is one:
/// the prefix with its last character that can be incremented, incremented, and the rest cut.
/// UTF-8 byte order is code-point order, so `key >= prefix AND key < successor` is exactly
/// "starts with `prefix`" and can use the primary-key index.
pub(crate) fn prefix_successor(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let mut next = last as u32 + 1;
        if (0xD800..=0xDFFF).contains(&next) {
            next = 0xE000;
        }
        if let Some(c) = char::from_u32(next) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

const MEMORY_COLUMNS: &str = "m.id, m.key, m.content, length(CAST(m.content AS BLOB)), m.category, \
     m.session_id, m.created_at, m.updated_at";

fn memory_from_row(row: &Row<'_>) -> rusqlite::Result<Memory> {
    let category: String = row.get(4)?;
    Ok(Memory {
        id: row.get(0)?,
        key: row.get(1)?,
        content: row.get(2)?,
        bytes: row.get::<_, i64>(3)?.max(0) as usize,
        category: Category::parse(&category).unwrap_or(Category::Custom),
        session_id: row.get(5)?,
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
    })
}

fn encode_vector(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode_vector(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The dot product of a unit query with a stored unit vector (their cosine similarity).
fn dot(query: &[f32], stored: &[u8]) -> f32 {
    query
        .iter()
        .zip(stored.chunks_exact(4))
        .map(|(q, c)| q * f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .sum()
}

/// The filter's SQL, over the alias `m` of `memories`, with the parameters `:category`,
/// `:session` and `:internal` (include internal keys).
const FILTER_SQL: &str = "(:category IS NULL OR m.category = :category)
    AND (:session IS NULL OR m.session_id = :session)
    AND (:internal OR substr(m.key, 1, 1) <> '_')";

fn category_param(filter: &Filter) -> Option<&'static str> {
    filter.category.map(Category::as_str)
}

fn fetch_memory(conn: &Connection, id: i64) -> Result<Option<Memory>, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.id = ?1"
    ))
    .map_err(backend)?
    .query_row([id], memory_from_row)
    .optional()
    .map_err(backend)
}

fn limit_param(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// Extra rows [`rank_then_filter`] ranks beyond the limit, for the internal keys it drops.
const FILTER_SLACK: usize = 16;

/// The best `limit` matches by BM25 among the best `limit + FILTER_SLACK` of the whole index,
/// after the filter. `None` when too few of those pass the filter while more matches exist; then
/// only [`filter_then_rank`] is exact.
fn rank_then_filter(
    conn: &Connection,
    expression: &str,
    filter: &Filter,
    limit: usize,
) -> Result<Option<Vec<Hit>>, StoreError> {
    let sql = format!(
        "SELECT {MEMORY_COLUMNS}, r.score, {FILTER_SQL} AS keep FROM (
             SELECT rowid AS id, bm25(memories_fts) AS score FROM memories_fts
             WHERE memories_fts MATCH :terms
             ORDER BY score, rowid
             LIMIT :pool
         ) r JOIN memories m ON m.id = r.id
         ORDER BY r.score, m.id"
    );
    let pool = limit.saturating_add(FILTER_SLACK);
    let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
    let mut rows = stmt
        .query(named_params! {
            ":terms": expression,
            ":category": category_param(filter),
            ":session": filter.session_id,
            ":internal": filter.include_internal,
            ":pool": limit_param(pool),
        })
        .map_err(backend)?;
    let mut ranked = 0;
    let mut hits = Vec::new();
    while let Some(row) = rows.next().map_err(backend)? {
        ranked += 1;
        let keep: bool = row.get(9).map_err(backend)?;
        if keep && hits.len() < limit {
            let score: f64 = row.get(8).map_err(backend)?;
            hits.push(Hit {
                memory: memory_from_row(row).map_err(backend)?,
                score: -score,
            });
        }
    }
    Ok((hits.len() == limit || ranked < pool).then_some(hits))
}

/// The best `limit` matches by BM25 (times the decay factor, with `decay`) among those that pass
/// the filter: every match is joined with its row.
fn filter_then_rank(
    conn: &Connection,
    expression: &str,
    filter: &Filter,
    limit: usize,
    decay: Option<Decay>,
) -> Result<Vec<Hit>, StoreError> {
    // bm25() is negative, lower is better; a decay factor in (0, 1] pulls old memories towards
    // zero, that is, down the ranking.
    let score = if decay.is_some() {
        "bm25(memories_fts) * toolshed_decay(m.category, m.updated_at, :now, :half_life)"
    } else {
        "bm25(memories_fts)"
    };
    // The inner query ranks ids only; the outer one fetches the text of the few it keeps.
    let sql = format!(
        "SELECT {MEMORY_COLUMNS}, r.score FROM (
             SELECT memories_fts.rowid AS id, {score} AS score
             FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
             WHERE memories_fts MATCH :terms AND {FILTER_SQL}
             ORDER BY score, m.id
             LIMIT :limit
         ) r JOIN memories m ON m.id = r.id
         ORDER BY r.score, m.id"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
    let mut rows = match decay {
        Some(d) => stmt.query(named_params! {
            ":terms": expression,
            ":category": category_param(filter),
            ":session": filter.session_id,
            ":internal": filter.include_internal,
            ":limit": limit_param(limit),
            ":now": d.now_ms,
            ":half_life": d.half_life_days,
        }),
        None => stmt.query(named_params! {
            ":terms": expression,
            ":category": category_param(filter),
            ":session": filter.session_id,
            ":internal": filter.include_internal,
            ":limit": limit_param(limit),
        }),
    }
    .map_err(backend)?;
    let mut hits = Vec::new();
    while let Some(row) = rows.next().map_err(backend)? {
        let score: f64 = row.get(8).map_err(backend)?;
        hits.push(Hit {
            memory: memory_from_row(row).map_err(backend)?,
            score: -score,
        });
    }
    Ok(hits)
}

impl MemoryStore for SqliteStore {
    fn upsert(&self, memory: &NewMemory, now_ms: Millis) -> Result<Upserted, StoreError> {
        self.with(|conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)?;
            let previous: Option<(i64, bool)> = tx
                .prepare_cached(
                    "SELECT length(CAST(content AS BLOB)), content = ?2 FROM memories WHERE key = ?1",
                )
                .map_err(backend)?
                .query_row(params![memory.key, memory.content], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .map_err(backend)?;
            let id: i64 = tx
                .prepare_cached(
                    "INSERT INTO memories(key, content, category, session_id, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?5)
                     ON CONFLICT(key) DO UPDATE SET
                         content = excluded.content,
                         category = excluded.category,
                         session_id = excluded.session_id,
                         updated_at = excluded.updated_at
                     RETURNING id",
                )
                .map_err(backend)?
                .query_row(
                    params![
                        memory.key,
                        memory.content,
                        memory.category.as_str(),
                        memory.session_id,
                        now_ms
                    ],
                    |r| r.get(0),
                )
                .map_err(backend)?;
            tx.commit().map_err(backend)?;
            Ok(Upserted {
                id,
                replaced: previous.map(|(bytes, same)| Replaced {
                    previous_bytes: bytes.max(0) as usize,
                    same_content: same,
                }),
            })
        })
    }

    fn keyword_search(
        &self,
        terms: &[String],
        filter: &Filter,
        limit: usize,
        decay: Option<Decay>,
    ) -> Result<Vec<Hit>, StoreError> {
        let Some(expression) = fts_expression(terms) else {
            return Ok(Vec::new());
        };
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.with(|conn| {
            // Without decay or a category or session filter, only internal keys are filtered
            // out, and they are few: ranking the index alone and filtering the first few rows
            // is much cheaper than joining every match, and exact whenever enough rows pass.
            if decay.is_none()
                && filter.category.is_none()
                && filter.session_id.is_none()
                && let Some(hits) = rank_then_filter(conn, &expression, filter, limit)?
            {
                return Ok(hits);
            }
            filter_then_rank(conn, &expression, filter, limit, decay)
        })
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
        if query.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let threshold = min_similarity.max(0.0);
        let sql = format!(
            "SELECT m.id, m.category, m.updated_at, v.vector
             FROM memory_vectors v JOIN memories m ON m.id = v.memory_id
             WHERE v.model = :model AND v.dim = :dim AND {FILTER_SQL}"
        );
        self.with(|conn| {
            let mut scored: Vec<(f64, f64, i64)> = Vec::new();
            {
                let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
                let mut rows = stmt
                    .query(named_params! {
                        ":model": model,
                        ":dim": query.len() as i64,
                        ":category": category_param(filter),
                        ":session": filter.session_id,
                        ":internal": filter.include_internal,
                    })
                    .map_err(backend)?;
                while let Some(row) = rows.next().map_err(backend)? {
                    let ValueRef::Blob(blob) = row.get_ref(3).map_err(backend)? else {
                        continue;
                    };
                    let cosine = dot(query, blob);
                    // NaN (a damaged vector) fails this test too.
                    if cosine.partial_cmp(&threshold) != Some(std::cmp::Ordering::Greater) {
                        continue;
                    }
                    let id: i64 = row.get(0).map_err(backend)?;
                    let factor = match decay {
                        Some(d) => {
                            let category: String = row.get(1).map_err(backend)?;
                            let updated_at: i64 = row.get(2).map_err(backend)?;
                            d.factor(
                                Category::parse(&category).unwrap_or(Category::Custom),
                                updated_at,
                            )
                        }
                        None => 1.0,
                    };
                    scored.push((f64::from(cosine) * factor, f64::from(cosine), id));
                }
            }
            let better =
                |a: &(f64, f64, i64), b: &(f64, f64, i64)| b.0.total_cmp(&a.0).then(a.2.cmp(&b.2));
            if scored.len() > limit {
                scored.select_nth_unstable_by(limit - 1, better);
                scored.truncate(limit);
            }
            scored.sort_by(better);
            let mut hits = Vec::with_capacity(scored.len());
            for (score, _, id) in scored {
                if let Some(memory) = fetch_memory(conn, id)? {
                    hits.push(Hit { memory, score });
                }
            }
            Ok(hits)
        })
    }

    fn list(
        &self,
        filter: &Filter,
        limit: usize,
        with_content: bool,
    ) -> Result<Listing, StoreError> {
        let columns = MEMORY_COLUMNS.replace(
            "m.content,",
            if with_content {
                "m.content,"
            } else {
                "'' AS content,"
            },
        );
        let sql = format!(
            "SELECT {columns} FROM memories m WHERE {FILTER_SQL}
             ORDER BY m.updated_at DESC, m.id DESC LIMIT :limit"
        );
        let count_sql = format!("SELECT count(*) FROM memories m WHERE {FILTER_SQL}");
        self.with(|conn| {
            let memories = conn
                .prepare_cached(&sql)
                .map_err(backend)?
                .query_map(
                    named_params! {
                        ":category": category_param(filter),
                        ":session": filter.session_id,
                        ":internal": filter.include_internal,
                        ":limit": limit_param(limit),
                    },
                    memory_from_row,
                )
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)?;
            let total: i64 = conn
                .prepare_cached(&count_sql)
                .map_err(backend)?
                .query_row(
                    named_params! {
                        ":category": category_param(filter),
                        ":session": filter.session_id,
                        ":internal": filter.include_internal,
                    },
                    |r| r.get(0),
                )
                .map_err(backend)?;
            Ok(Listing {
                memories,
                total: total.max(0) as u64,
            })
        })
    }

    fn forget(&self, key: &str) -> Result<Option<Memory>, StoreError> {
        self.with(|conn| {
            conn.prepare_cached(
                "DELETE FROM memories WHERE key = ?1
                 RETURNING id, key, content, length(CAST(content AS BLOB)), category, session_id,
                           created_at, updated_at",
            )
            .map_err(backend)?
            .query_row([key], memory_from_row)
            .optional()
            .map_err(backend)
        })
    }

    fn pending_embeddings(&self, model: &str, limit: usize) -> Result<Vec<Pending>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.with(|conn| {
            self.requeue_other_models(conn, model)?;
            // Newest ids first: those are the memories most likely to be asked about.
            conn.prepare_cached(
                "SELECT q.memory_id, m.content FROM embedding_queue q
                 JOIN memories m ON m.id = q.memory_id
                 ORDER BY q.memory_id DESC LIMIT ?1",
            )
            .map_err(backend)?
            .query_map([limit_param(limit)], |r| {
                Ok(Pending {
                    id: r.get(0)?,
                    content: r.get(1)?,
                })
            })
            .map_err(backend)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(backend)
        })
    }

    fn set_embedding(
        &self,
        id: i64,
        content: &str,
        model: &str,
        vector: &[f32],
    ) -> Result<bool, StoreError> {
        if vector.is_empty() {
            return Ok(false);
        }
        let blob = encode_vector(vector);
        self.with(|conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)?;
            let stored = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO memory_vectors(memory_id, model, dim, vector)
                     SELECT id, ?3, ?4, ?5 FROM memories WHERE id = ?1 AND content = ?2",
                )
                .map_err(backend)?
                .execute(params![id, content, model, vector.len() as i64, blob])
                .map_err(backend)?;
            if stored > 0 {
                tx.prepare_cached("DELETE FROM embedding_queue WHERE memory_id = ?1")
                    .map_err(backend)?
                    .execute([id])
                    .map_err(backend)?;
            }
            tx.commit().map_err(backend)?;
            Ok(stored > 0)
        })
    }

    fn embedding_dimension(&self, model: &str) -> Result<Option<usize>, StoreError> {
        self.with(|conn| {
            conn.prepare_cached("SELECT dim FROM memory_vectors WHERE model = ?1 LIMIT 1")
                .map_err(backend)?
                .query_row([model], |r| r.get::<_, i64>(0))
                .optional()
                .map(|d| d.map(|d| d.max(0) as usize))
                .map_err(backend)
        })
    }

    fn cached_embedding(&self, hash: &[u8; 32]) -> Result<Option<Vec<f32>>, StoreError> {
        self.with(|conn| {
            conn.prepare_cached("SELECT vector FROM embedding_cache WHERE hash = ?1")
                .map_err(backend)?
                .query_row([&hash[..]], |r| {
                    Ok(match r.get_ref(0)? {
                        ValueRef::Blob(b) => decode_vector(b),
                        _ => Vec::new(),
                    })
                })
                .optional()
                .map(|v| v.filter(|v| !v.is_empty()))
                .map_err(backend)
        })
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
        let blob = encode_vector(vector);
        let prune = self.cache_inserts.fetch_add(1, Ordering::Relaxed) % CACHE_PRUNE_EVERY
            == CACHE_PRUNE_EVERY - 1;
        self.with(|conn| {
            conn.prepare_cached(
                "INSERT OR REPLACE INTO embedding_cache(hash, model, dim, vector, used_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .map_err(backend)?
            .execute(params![&hash[..], model, vector.len() as i64, blob, now_ms])
            .map_err(backend)?;
            if prune {
                conn.execute(
                    "DELETE FROM embedding_cache WHERE rowid IN (
                         SELECT rowid FROM embedding_cache ORDER BY used_at DESC
                         LIMIT -1 OFFSET ?1)",
                    [CACHE_CAPACITY as i64],
                )
                .map_err(backend)?;
            }
            Ok(())
        })
    }
}

impl KvStore for SqliteStore {
    fn set(&self, key: &str, value: &str, now_ms: Millis) -> Result<bool, StoreError> {
        self.with(|conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)?;
            let existed = tx
                .prepare_cached("SELECT 1 FROM kv WHERE key = ?1")
                .map_err(backend)?
                .exists([key])
                .map_err(backend)?;
            tx.prepare_cached(
                "INSERT INTO kv(key, value, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            )
            .map_err(backend)?
            .execute(params![key, value, now_ms])
            .map_err(backend)?;
            tx.commit().map_err(backend)?;
            Ok(existed)
        })
    }

    fn get(&self, key: &str) -> Result<Option<KvEntry>, StoreError> {
        self.with(|conn| {
            conn.prepare_cached("SELECT key, value, updated_at FROM kv WHERE key = ?1")
                .map_err(backend)?
                .query_row([key], |r| {
                    Ok(KvEntry {
                        key: r.get(0)?,
                        value: r.get(1)?,
                        updated_at: r.get(2)?,
                    })
                })
                .optional()
                .map_err(backend)
        })
    }

    fn keys(
        &self,
        prefix: &str,
        include_internal: bool,
        limit: usize,
    ) -> Result<KeyListing, StoreError> {
        let upper = prefix_successor(prefix);
        const WHERE: &str = "key >= ?1 AND (?2 IS NULL OR key < ?2)
             AND (?3 OR substr(key, 1, 1) <> '_')";
        self.with(|conn| {
            let keys = conn
                .prepare_cached(&format!(
                    "SELECT key FROM kv WHERE {WHERE} ORDER BY key LIMIT ?4"
                ))
                .map_err(backend)?
                .query_map(
                    params![prefix, upper, include_internal, limit_param(limit)],
                    |r| r.get(0),
                )
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<String>>>()
                .map_err(backend)?;
            let total: i64 = conn
                .prepare_cached(&format!("SELECT count(*) FROM kv WHERE {WHERE}"))
                .map_err(backend)?
                .query_row(params![prefix, upper, include_internal], |r| r.get(0))
                .map_err(backend)?;
            Ok(KeyListing {
                keys,
                total: total.max(0) as u64,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_become_quoted_string_literals() {
        let t = |v: &[&str]| fts_expression(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(t(&["a", "b"]).unwrap(), r#""a" OR "b""#);
        assert_eq!(t(&["say \"hi\""]).unwrap(), r#""say ""hi""""#);
        assert_eq!(t(&["x\0y"]).unwrap(), r#""x y""#);
        assert_eq!(t(&["*", "^", "\""]), None);
        assert_eq!(t(&[]), None);
    }

    #[test]
    fn prefix_successors_bound_exactly_the_prefixed_strings() {
        assert_eq!(prefix_successor("ab").as_deref(), Some("ac"));
        assert_eq!(prefix_successor("a%").as_deref(), Some("a&"));
        assert_eq!(prefix_successor(""), None);
        assert_eq!(prefix_successor("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_successor("\u{10FFFF}"), None);
        assert_eq!(prefix_successor("x\u{D7FF}").as_deref(), Some("x\u{E000}"));
    }

    #[test]
    fn decay_halves_per_half_life_and_spares_core() {
        let d = Decay {
            half_life_days: 10.0,
            now_ms: 100 * DAY,
        };
        assert!((d.factor(Category::Daily, 90 * DAY) - 0.5).abs() < 1e-12);
        assert!((d.factor(Category::Daily, 80 * DAY) - 0.25).abs() < 1e-12);
        assert_eq!(d.factor(Category::Core, 0), 1.0);
        assert_eq!(d.factor(Category::Daily, 200 * DAY), 1.0);
    }

    const DAY: i64 = 86_400_000;

    fn memory(key: &str, content: &str) -> NewMemory {
        NewMemory {
            key: key.into(),
            content: content.into(),
            category: Category::Core,
            session_id: None,
        }
    }

    fn search(s: &SqliteStore, word: &str) -> Vec<String> {
        s.keyword_search(&[word.to_string()], &Filter::default(), 10, None)
            .unwrap()
            .into_iter()
            .map(|h| h.memory.key)
            .collect()
    }

    #[test]
    fn upserts_keep_the_index_and_the_embedding_queue_in_step() {
        let s = SqliteStore::new(":memory:");
        let first = s.upsert(&memory("k", "apples"), 1).unwrap();
        assert_eq!(first.replaced, None);
        assert!(s.set_embedding(first.id, "apples", "m", &[1.0]).unwrap());
        assert!(s.pending_embeddings("m", 10).unwrap().is_empty());
        // The same content keeps the vector; new content drops it and queues the memory.
        let same = s.upsert(&memory("k", "apples"), 2).unwrap();
        assert!(same.replaced.unwrap().same_content);
        assert!(s.pending_embeddings("m", 10).unwrap().is_empty());
        let changed = s.upsert(&memory("k", "pears"), 3).unwrap();
        assert_eq!(changed.id, first.id);
        assert_eq!(
            changed.replaced,
            Some(Replaced {
                previous_bytes: 6,
                same_content: false
            })
        );
        assert_eq!(search(&s, "apples"), Vec::<String>::new());
        assert_eq!(search(&s, "pears"), ["k"]);
        let pending = s.pending_embeddings("m", 10).unwrap();
        assert_eq!(
            pending,
            [Pending {
                id: first.id,
                content: "pears".into()
            }]
        );
        // A vector for content that has since changed is not stored.
        assert!(!s.set_embedding(first.id, "apples", "m", &[1.0]).unwrap());
        assert!(s.set_embedding(first.id, "pears", "m", &[1.0]).unwrap());
        assert_eq!(s.embedding_dimension("m").unwrap(), Some(1));
        assert_eq!(s.forget("k").unwrap().unwrap().content, "pears");
        assert_eq!(search(&s, "pears"), Vec::<String>::new());
        assert_eq!(s.forget("k").unwrap(), None);
    }
}
