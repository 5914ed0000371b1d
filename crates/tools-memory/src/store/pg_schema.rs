//! The PostgreSQL layout of [`PgStore`](super::PgStore) and its migrations.
//!
//! `tool_core::pg::PgPool::migrate` keeps the version (store `memory` in `toolshed_migrations`)
//! and applies [`MIGRATIONS`] once, under an advisory lock, so replicas starting together do not
//! race. Every object lives in the pool's schema.

/// Version 1.
///
/// `memories` holds one row per key, as in SQLite. Full-text search runs on the generated
/// column `tsv` (GIN index): key and content, each folded by `toolshed_fold` the way SQLite's
/// `unicode61 remove_diacritics 2` tokenizer sees text — decomposed (NFD), combining marks
/// dropped, lower-cased, every run of characters other than letters and digits made one space —
/// then parsed with the built-in `simple` configuration (no stemming, no stop words). So `café`
/// matches `cafe`, `garden-1` is the two words `garden` and `1`, and punctuation never reaches
/// the parser. `unaccent` is not used: it is an extension, which a plain database user may not be
/// allowed to create, and its function is not immutable, so a generated column cannot call it.
/// `doc_len` counts the words, for BM25's length normalisation.
///
/// `memory_stats` keeps BM25's corpus statistics (rows and words) in 16 shards, maintained by
/// the trigger, so a search reads 16 small rows instead of scanning the table, and concurrent
/// writers rarely touch the same shard row.
///
/// `memory_vectors` holds at most one unit-length `real[]` vector per memory, dropped by the
/// trigger when the content changes; `embedding_queue` lists the memories that still need one;
/// `embedding_cache` maps SHA-256(model, NUL, input) to a vector. `kv` is the scratchpad. Keys
/// use `COLLATE "C"`, so they sort and compare in byte order on every server, whatever the
/// database's locale.
///
/// The trigger function fixes its `search_path` to the schema it was created in, so a change
/// made from a session with another `search_path` (an operator's psql) keeps the statistics,
/// the vectors and the queue in step too.
const V1: &str = r#"
CREATE FUNCTION toolshed_fold(t text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT btrim(regexp_replace(
        lower(regexp_replace(normalize(t, NFD), '[\u0300-\u036f]+', '', 'g')),
        '[^[:alnum:]]+', ' ', 'g')) $$;

CREATE FUNCTION toolshed_word_count(folded text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT CASE WHEN folded = '' THEN 0
                      ELSE length(folded) - length(replace(folded, ' ', '')) + 1 END $$;

CREATE TABLE memories (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key        text COLLATE "C" NOT NULL UNIQUE,
    content    text NOT NULL,
    category   text NOT NULL CHECK (category IN ('core', 'daily', 'conversation', 'custom')),
    session_id text COLLATE "C",
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    tsv        tsvector GENERATED ALWAYS AS (
                   to_tsvector('simple'::regconfig,
                               toolshed_fold(key) || ' ' || toolshed_fold(content))) STORED,
    doc_len    integer GENERATED ALWAYS AS (
                   toolshed_word_count(toolshed_fold(key))
                   + toolshed_word_count(toolshed_fold(content))) STORED
);
CREATE INDEX memories_by_time     ON memories (updated_at, id);
CREATE INDEX memories_by_session  ON memories (session_id, updated_at);
CREATE INDEX memories_by_category ON memories (category, updated_at);
CREATE INDEX memories_by_words    ON memories USING gin (tsv);

CREATE TABLE memory_stats (
    shard  smallint PRIMARY KEY,
    docs   bigint NOT NULL,
    tokens bigint NOT NULL
);
INSERT INTO memory_stats (shard, docs, tokens) SELECT s, 0, 0 FROM generate_series(0, 15) AS s;

CREATE TABLE memory_vectors (
    memory_id bigint PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
    model     text NOT NULL,
    dim       integer NOT NULL CHECK (dim > 0),
    vector    real[] NOT NULL CHECK (array_ndims(vector) = 1 AND cardinality(vector) = dim
                                     AND array_position(vector, NULL) IS NULL)
);
CREATE INDEX memory_vectors_by_model ON memory_vectors (model, dim);

CREATE TABLE embedding_queue (
    memory_id bigint PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE
);

CREATE TABLE embedding_cache (
    hash    bytea PRIMARY KEY CHECK (length(hash) = 32),
    model   text NOT NULL,
    dim     integer NOT NULL CHECK (dim > 0),
    vector  real[] NOT NULL CHECK (array_ndims(vector) = 1 AND cardinality(vector) = dim
                                   AND array_position(vector, NULL) IS NULL),
    used_at bigint NOT NULL
);
CREATE INDEX embedding_cache_by_use ON embedding_cache (used_at);

CREATE TABLE kv (
    key        text COLLATE "C" PRIMARY KEY,
    value      text NOT NULL,
    updated_at bigint NOT NULL
);

CREATE FUNCTION toolshed_memories_changed() RETURNS trigger
    LANGUAGE plpgsql SET search_path FROM CURRENT
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE memory_stats SET docs = docs + 1, tokens = tokens + NEW.doc_len
            WHERE shard = NEW.id % 16;
        INSERT INTO embedding_queue (memory_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE memory_stats SET docs = docs - 1, tokens = tokens - OLD.doc_len
            WHERE shard = OLD.id % 16;
    ELSIF OLD.key IS DISTINCT FROM NEW.key OR OLD.content IS DISTINCT FROM NEW.content THEN
        UPDATE memory_stats SET tokens = tokens + NEW.doc_len - OLD.doc_len
            WHERE shard = NEW.id % 16;
        DELETE FROM memory_vectors WHERE memory_id = NEW.id;
        INSERT INTO embedding_queue (memory_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER memories_changed AFTER INSERT OR DELETE OR UPDATE OF key, content ON memories
    FOR EACH ROW EXECUTE FUNCTION toolshed_memories_changed();
"#;

/// Every migration, in order.
pub(crate) const MIGRATIONS: &[&str] = &[V1];

/// The name the migrations are recorded under.
pub(crate) const STORE: &str = "memory";
