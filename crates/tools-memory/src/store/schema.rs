//! The database layout and its migrations.
//!
//! `PRAGMA user_version` holds the layout version; `MIGRATIONS[i]` takes a database from version
//! `i` to `i + 1`. A database of a newer version is refused rather than misread, and one made by
//! another program (a different `application_id`) is refused rather than given tables.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use super::StoreError;
use super::open::backend;

/// Marks the file as Toolshed memory in the SQLite header (`PRAGMA application_id`).
pub(crate) const APPLICATION_ID: i32 = 0x5453_4d4d; // "TSMM"

/// Version 1.
///
/// `memories` holds one row per key. `memories_fts` is an external-content FTS5 index over key
/// and content, kept in step by the triggers (insert, delete, and an update that changes the
/// text), so it can never disagree with the table. `memory_vectors` holds at most one unit-length
/// vector per memory (little-endian `f32`s), dropped by a trigger when the content changes;
/// `embedding_queue` lists the memories that still need one. `embedding_cache` maps
/// SHA-256(model, NUL, input) to a vector so identical text is embedded once. `kv` is the
/// scratchpad of `remember`, `recall` and `list_keys`.
///
/// The triggers queue with `INSERT … WHERE NOT EXISTS` rather than `INSERT OR IGNORE`, because a
/// trigger statement takes the conflict policy of the statement that fired it, and the upsert of
/// `memories` is no `OR IGNORE`.
const V1: &str = "
CREATE TABLE memories(
    id         INTEGER PRIMARY KEY,
    key        TEXT    NOT NULL UNIQUE,
    content    TEXT    NOT NULL,
    category   TEXT    NOT NULL CHECK (category IN ('core', 'daily', 'conversation', 'custom')),
    session_id TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX memories_by_time     ON memories(updated_at, id);
CREATE INDEX memories_by_session  ON memories(session_id, updated_at);
CREATE INDEX memories_by_category ON memories(category, updated_at);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    key, content,
    content = 'memories', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TABLE memory_vectors(
    memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    model     TEXT    NOT NULL,
    dim       INTEGER NOT NULL CHECK (dim > 0),
    vector    BLOB    NOT NULL CHECK (length(vector) = 4 * dim)
);
CREATE INDEX memory_vectors_by_model ON memory_vectors(model, dim);

CREATE TABLE embedding_queue(
    memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE
);

CREATE TABLE embedding_cache(
    hash    BLOB    PRIMARY KEY CHECK (length(hash) = 32),
    model   TEXT    NOT NULL,
    dim     INTEGER NOT NULL CHECK (dim > 0),
    vector  BLOB    NOT NULL CHECK (length(vector) = 4 * dim),
    used_at INTEGER NOT NULL
);
CREATE INDEX embedding_cache_by_use ON embedding_cache(used_at);

CREATE TABLE kv(
    key        TEXT    PRIMARY KEY,
    value      TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, key, content) VALUES (new.id, new.key, new.content);
    INSERT INTO embedding_queue(memory_id)
        SELECT new.id WHERE NOT EXISTS (SELECT 1 FROM embedding_queue WHERE memory_id = new.id);
END;

CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, content)
        VALUES ('delete', old.id, old.key, old.content);
END;

CREATE TRIGGER memories_au AFTER UPDATE OF key, content ON memories
WHEN old.key IS NOT new.key OR old.content IS NOT new.content BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, content)
        VALUES ('delete', old.id, old.key, old.content);
    INSERT INTO memories_fts(rowid, key, content) VALUES (new.id, new.key, new.content);
    DELETE FROM memory_vectors WHERE memory_id = new.id;
    INSERT INTO embedding_queue(memory_id)
        SELECT new.id WHERE NOT EXISTS (SELECT 1 FROM embedding_queue WHERE memory_id = new.id);
END;
";

/// Every migration, in order.
const MIGRATIONS: &[&str] = &[V1];

/// The layout version this code writes.
pub(crate) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Creates the layout in a new database, migrates an older one, or refuses one it cannot use.
/// Runs in one write transaction, so two processes opening a new file at once do not race.
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    let app: i32 = tx
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .map_err(backend)?;
    let version: i64 = tx
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(backend)?;
    let objects: i64 = tx
        .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
        .map_err(backend)?;
    if app == 0 && objects == 0 {
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(backend)?;
    } else if app != APPLICATION_ID {
        return Err(StoreError::Unavailable(format!(
            "{} is an SQLite database of another program, not Toolshed memory; ask the user to configure a new file for the memory database.",
            path.display()
        )));
    }
    if version > SCHEMA_VERSION {
        return Err(StoreError::Unavailable(format!(
            "The memory database {} has layout version {version}, newer than this Toolshed understands ({SCHEMA_VERSION}); ask the user to upgrade Toolshed.",
            path.display()
        )));
    }
    for sql in &MIGRATIONS[version.max(0) as usize..] {
        tx.execute_batch(sql).map_err(backend)?;
    }
    if version != SCHEMA_VERSION {
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(backend)?;
    }
    tx.commit().map_err(backend)
}
