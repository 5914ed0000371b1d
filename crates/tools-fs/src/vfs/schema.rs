//! The database layout of the virtual filesystem and the settings of every connection to it.

use std::io;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use super::{ROOT_INODE, SqlResult, now};

/// The layout version this code writes. A database with a higher version was made by a newer
/// Toolshed and is refused rather than misread.
pub(crate) const SCHEMA_VERSION: i64 = 1;

/// Marks the file as a Toolshed workspace in the SQLite header (`PRAGMA application_id`), so
/// `sqlite:` pointed at another program's database is refused instead of having tables added.
pub(crate) const APPLICATION_ID: i32 = 0x5453_4653; // "TSFS"

/// How long a statement waits for another connection's write lock before failing.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The tables. `chunks` keeps a rowid (4 KiB blobs are too large for a `WITHOUT ROWID` b-tree,
/// whose rows should stay small); `dentries` is small rows keyed by (parent, name), so it has none.
/// The foreign keys cascade as a backstop; the code deletes dentries and chunks explicitly.
const TABLES: &str = "
CREATE TABLE meta(
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE inodes(
    id    INTEGER PRIMARY KEY,
    kind  TEXT    NOT NULL CHECK (kind IN ('file', 'dir')),
    mode  INTEGER NOT NULL,
    size  INTEGER NOT NULL DEFAULT 0 CHECK (size >= 0),
    mtime INTEGER NOT NULL,
    nlink INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE dentries(
    parent INTEGER NOT NULL REFERENCES inodes(id) ON DELETE CASCADE,
    name   TEXT    NOT NULL CHECK (
        length(CAST(name AS BLOB)) BETWEEN 1 AND 255
        AND instr(name, '/') = 0
        AND name NOT IN ('.', '..')
    ),
    inode  INTEGER NOT NULL REFERENCES inodes(id) ON DELETE CASCADE,
    PRIMARY KEY (parent, name)
) WITHOUT ROWID;

CREATE INDEX dentries_by_inode ON dentries(inode);

CREATE TABLE chunks(
    inode INTEGER NOT NULL REFERENCES inodes(id) ON DELETE CASCADE,
    idx   INTEGER NOT NULL CHECK (idx >= 0),
    data  BLOB    NOT NULL,
    PRIMARY KEY (inode, idx)
);
";

/// Opens a connection to `path` with the settings every connection needs.
///
/// The path is never read as a `file:` URI, so `sqlite:file:x` names a file called `file:x`.
pub(crate) fn connect(path: &Path, create: bool) -> io::Result<Connection> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = Connection::open_with_flags(path, flags).sql()?;
    conn.busy_timeout(BUSY_TIMEOUT).sql()?;
    conn.pragma_update(None, "foreign_keys", true).sql()?;
    conn.pragma_update(None, "synchronous", "NORMAL").sql()?;
    // journal_mode is persistent, but asking again is cheap and a no-op once set.
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
        .sql()?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(io::Error::other(format!(
            "{} could not be switched to write-ahead logging (journal_mode is {mode}); put it on a local filesystem",
            path.display()
        )));
    }
    Ok(conn)
}

/// Creates the tables and the root directory in a new database, or checks an existing one.
/// Runs in one write transaction, so two processes opening a new file at once do not race.
pub(crate) fn init(conn: &mut Connection, path: &Path) -> io::Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .sql()?;
    let app: i32 = tx
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .sql()?;
    let tables: i64 = tx
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table'",
            [],
            |r| r.get(0),
        )
        .sql()?;
    if app == 0 && tables == 0 {
        tx.execute_batch(TABLES).sql()?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .sql()?;
        tx.execute(
            "INSERT INTO meta(key, value) VALUES ('schema_version', ?1)",
            [SCHEMA_VERSION.to_string()],
        )
        .sql()?;
        tx.execute(
            "INSERT INTO inodes(id, kind, mode, size, mtime, nlink) VALUES (?1, 'dir', ?2, 0, ?3, 2)",
            rusqlite::params![ROOT_INODE, 0o755, now()],
        )
        .sql()?;
    } else if app != APPLICATION_ID {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is an SQLite database of another program, not a Toolshed workspace; give a new file name",
                path.display()
            ),
        ));
    } else {
        let version: Option<String> = tx
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .sql()?;
        match version.as_deref().map(str::parse::<i64>) {
            Some(Ok(v)) if v == SCHEMA_VERSION => {}
            Some(Ok(v)) if v > SCHEMA_VERSION => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{} has workspace schema version {v}, newer than this Toolshed understands ({SCHEMA_VERSION}); upgrade Toolshed",
                        path.display()
                    ),
                ));
            }
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{} is a damaged Toolshed workspace (schema version {other:?})",
                        path.display()
                    ),
                ));
            }
        }
        let root: Option<String> = tx
            .query_row("SELECT kind FROM inodes WHERE id = ?1", [ROOT_INODE], |r| {
                r.get(0)
            })
            .optional()
            .sql()?;
        if root.as_deref() != Some("dir") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} is a damaged Toolshed workspace (no root directory)",
                    path.display()
                ),
            ));
        }
    }
    tx.commit().sql()
}
