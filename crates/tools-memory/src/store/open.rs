//! Opening the memory database file.
//!
//! The database lives in Toolshed's data directory (or wherever the operator's configuration
//! puts it), not in the workspace, and its path never comes from a model: it is the store's own
//! file, like the CLI's config file. So this one module creates its directory and file directly
//! instead of going through `tool_core::Workspace`.

// The store's own data file and directory are not workspace files (see above).
#![allow(clippy::disallowed_methods)]

use std::fs::{DirBuilder, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::StoreError;

/// How long a statement waits for another connection's write lock before failing.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether `path` names an in-memory database.
pub(crate) fn is_in_memory(path: &Path) -> bool {
    path.as_os_str() == ":memory:"
}

/// Opens (creating it and its directory if missing) the database at `path` with the settings
/// every connection needs: WAL, a busy timeout, foreign keys, `synchronous = NORMAL`.
///
/// A new directory gets mode 0700 and a new file 0600, because memories are private; SQLite gives
/// its `-wal` and `-shm` files the mode of the database file.
pub(crate) fn connect(path: &Path) -> Result<Connection, StoreError> {
    if path.as_os_str().is_empty() {
        return Err(StoreError::Unavailable(
            "The memory database path is empty, so memory is unavailable; ask the user to set the memory database file in the configuration."
                .into(),
        ));
    }
    let in_memory = is_in_memory(path);
    if !in_memory {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|e| unavailable(path, "create the directory of", &e))?;
        }
        // Creating the file here (not through SQLite) sets its mode; an existing file is kept.
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| unavailable(path, "open", &e))?;
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| {
        StoreError::Unavailable(format!(
            "The memory database {} could not be opened ({e}); ask the user to check the configured path and its permissions.",
            path.display()
        ))
    })?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(backend)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(backend)?;
    if !in_memory {
        // journal_mode is persistent, but asking again is cheap and a no-op once set.
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(|e| {
                StoreError::Unavailable(format!(
                    "The memory database {} could not be read as SQLite ({e}); ask the user to point the memory configuration at a new file.",
                    path.display()
                ))
            })?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Unavailable(format!(
                "The memory database {} could not use write-ahead logging (journal mode {mode}); ask the user to put it on a local filesystem.",
                path.display()
            )));
        }
    }
    Ok(conn)
}

fn unavailable(path: &Path, what: &str, e: &io::Error) -> StoreError {
    StoreError::Unavailable(format!(
        "Toolshed could not {what} the memory database {} ({e}); ask the user to check the configured path and its permissions.",
        path.display()
    ))
}

pub(crate) fn backend(e: rusqlite::Error) -> StoreError {
    if let rusqlite::Error::SqliteFailure(f, _) = &e
        && matches!(
            f.code,
            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
        )
    {
        return StoreError::Busy;
    }
    StoreError::Backend(Box::new(e))
}
