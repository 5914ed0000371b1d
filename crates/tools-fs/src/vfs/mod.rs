//! A virtual filesystem in one SQLite file: the second [`Backend`] of a [`Workspace`].
//!
//! Layout (see `schema.rs`): `inodes` (kind, mode, size, mtime, nlink), `dentries` (parent,
//! name → inode; the root directory is inode 1) and `chunks` (inode, idx → at most 4 KiB of
//! data; every chunk but the last of a file is exactly 4 KiB), plus `meta` with the schema
//! version. The database runs in WAL mode with a 5 s busy timeout, so several handles and
//! processes can share one file: readers never wait for writers, writers wait for each other.
//!
//! Every change is one write transaction (`BEGIN IMMEDIATE`): `write_atomic` replaces all chunks
//! of an inode, or creates the inode and its directory entry, in one transaction, so a reader
//! sees the old content or the new, never a mix; `append` rewrites the last chunk and adds new
//! ones; `remove_dir` deletes a whole subtree at once. Reads go through [`ChunkReader`], which
//! fetches one chunk per query inside a read snapshot of its own (see its documentation).
//!
//! There are no symbolic links, special files or hard links, so nothing can lead outside the
//! workspace; names are still checked here (no `/`, no NUL, not `.` or `..`, at most 255 bytes)
//! even though [`Workspace::resolve`] already did. Errors carry the same `errno` values as the
//! local backend (ENOENT, ENOTDIR, EISDIR, ENOTEMPTY), so `tool_core::workspace::fs_error` gives
//! the model the same sentences on either backend.
//!
//! With the `postgres` feature, `PgFs` (module `pg`) is the same filesystem on PostgreSQL,
//! for workspaces that several processes or hosts share. It uses the chunk size, name checks,
//! kinds and errno values defined here; its module documentation says how it keeps writes
//! atomic and reads consistent without SQLite's single writer and snapshots.

#[cfg(feature = "postgres")]
mod pg;
mod reader;
mod schema;
// Test fixtures build real files directly.
#[allow(clippy::disallowed_methods)]
#[cfg(test)]
mod tests;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use tool_core::Workspace;
use tool_core::workspace::{
    Backend, DirEntry, FileKind, FsRefusal, Metadata, ReadSeek, Root, WsPath,
};

#[cfg(feature = "postgres")]
pub use pg::{PgFs, pg_workspace};
use reader::ChunkReader;

/// The size of every chunk but a file's last.
pub(crate) const CHUNK: usize = 4096;
/// The root directory's inode.
pub(crate) const ROOT_INODE: i64 = 1;
/// How many idle read connections are kept for the next `open_read`.
const IDLE_READERS: usize = 4;

const FILE_MODE: u32 = 0o644;
const DIR_MODE: u32 = 0o755;

// Linux errno values, which `fs_error` in tool-core turns into sentences.
const ENOENT: i32 = 2;
const ENOTDIR: i32 = 20;
const EISDIR: i32 = 21;
const ENAMETOOLONG: i32 = 36;
const ENOTEMPTY: i32 = 39;

/// A workspace stored in one SQLite database file.
///
/// Cheap to share: `Workspace` holds it behind an `Arc`. Two `SqliteFs` on the same file (in one
/// process or several) see each other's changes as soon as they are committed.
pub struct SqliteFs {
    inner: Arc<Inner>,
}

/// What a [`SqliteFs`] and its open readers share.
pub(crate) struct Inner {
    path: PathBuf,
    /// The connection every write goes through (one writer per handle at a time).
    conn: Mutex<Connection>,
    /// Idle connections for reads (metadata, listings, open files), each with no transaction
    /// open, so reads never queue behind a writer waiting for the database lock.
    readers: Mutex<Vec<Connection>>,
}

/// Opens (creating it if missing) the SQLite workspace at `path` and returns a [`Workspace`] over
/// it whose single, writable root is the virtual `/`.
pub fn sqlite_workspace(path: &Path) -> io::Result<Workspace> {
    let fs = SqliteFs::open(path)?;
    Ok(Workspace::with_backend(
        vec![Root {
            path: "/".into(),
            writable: true,
        }],
        Arc::new(fs),
    ))
}

impl SqliteFs {
    /// Opens the database at `path`, creating the file, the tables and the root directory when it
    /// does not exist yet. Refuses SQLite files of other programs and of newer schema versions.
    pub fn open(path: &Path) -> io::Result<SqliteFs> {
        if path.as_os_str().is_empty() || path.as_os_str() == ":memory:" {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a SQLite workspace needs a file name (an in-memory database cannot be shared with readers)",
            ));
        }
        let mut conn = schema::connect(path, true)?;
        schema::init(&mut conn, path)?;
        Ok(SqliteFs {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                conn: Mutex::new(conn),
                readers: Mutex::new(Vec::new()),
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` in a write transaction: committed if `f` succeeds, rolled back otherwise.
    fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> io::Result<T>) -> io::Result<T> {
        let mut conn = self.inner.lock();
        // IMMEDIATE takes the write lock up front (waiting up to the busy timeout), so a
        // transaction never fails half-way when it upgrades from reading to writing.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .sql()?;
        let out = f(&tx)?;
        tx.commit().sql()?;
        Ok(out)
    }

    /// Runs `f` in a read transaction on a pooled read connection, so a lookup and what follows
    /// see one snapshot, and reads never wait behind a writer that is waiting for the lock.
    fn read<T>(&self, f: impl FnOnce(&Connection) -> io::Result<T>) -> io::Result<T> {
        let conn = self.inner.take_reader()?;
        let out = conn.execute_batch("BEGIN").sql().and_then(|()| f(&conn));
        self.inner.give_back_reader(conn);
        out
    }

    /// Opens a file for lazy, snapshot-consistent reading (see [`ChunkReader`]).
    fn open_chunks(&self, path: &WsPath) -> io::Result<(ChunkReader, Metadata)> {
        let comps = components(path)?;
        let conn = self.inner.take_reader()?;
        // The snapshot starts with the first query after BEGIN and lasts until the reader is
        // dropped, so the size read here and every chunk read later belong together.
        let opened = conn.execute_batch("BEGIN").sql().and_then(|()| {
            let node = lookup(&conn, &comps)?;
            if node.kind != Kind::File {
                return Err(FsRefusal::NotRegular("directory").into());
            }
            Ok((node.id, inode_meta(&conn, node.id)?))
        });
        match opened {
            Ok((id, meta)) => {
                let reader = ChunkReader::new(conn, Arc::clone(&self.inner), id, meta.len);
                Ok((reader, meta))
            }
            Err(e) => {
                self.inner.give_back_reader(conn);
                Err(e)
            }
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic mid-transaction rolled the transaction back when it unwound, so the
        // connection is still consistent.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An idle read connection, or a new one.
    fn take_reader(&self) -> io::Result<Connection> {
        let idle = self
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match idle {
            Some(conn) => Ok(conn),
            None => {
                let conn = schema::connect(&self.path, false)?;
                conn.pragma_update(None, "query_only", true).sql()?;
                Ok(conn)
            }
        }
    }

    /// Ends the reader's transaction and keeps the connection if it is clean.
    pub(crate) fn give_back_reader(&self, conn: Connection) {
        if !conn.is_autocommit() {
            let _ = conn.execute_batch("COMMIT");
        }
        if conn.is_autocommit() {
            let mut idle = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
            if idle.len() < IDLE_READERS {
                idle.push(conn);
            }
        }
    }
}

impl fmt::Debug for SqliteFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteFs")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

/// Turns rusqlite results into `io::Result`s.
pub(crate) trait SqlResult<T> {
    fn sql(self) -> io::Result<T>;
}

impl<T> SqlResult<T> for rusqlite::Result<T> {
    fn sql(self) -> io::Result<T> {
        self.map_err(sql_error)
    }
}

fn sql_error(e: rusqlite::Error) -> io::Error {
    use rusqlite::ErrorCode;
    let code = match &e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.code),
        _ => None,
    };
    match code {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => io::Error::new(
            io::ErrorKind::ResourceBusy,
            format!(
                "the workspace database stayed locked by another writer for {} s; try again",
                schema::BUSY_TIMEOUT.as_secs()
            ),
        ),
        Some(ErrorCode::DiskFull) => io::Error::new(
            io::ErrorKind::StorageFull,
            "the disk holding the workspace database is full",
        ),
        Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("the workspace database cannot be written: {e}"),
        ),
        Some(ErrorCode::TooBig) => io::Error::new(
            io::ErrorKind::FileTooLarge,
            "the data is too large for the workspace database",
        ),
        _ => io::Error::other(format!("the workspace database failed: {e}")),
    }
}

/// An error for data that breaks the layout's invariants.
pub(crate) fn damaged(what: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("the workspace database is damaged ({what})"),
    )
}

fn errno(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

/// Seconds since the epoch.
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Checks one path component, as the kernel would (plus the refusals `WsPath` already made).
pub(crate) fn check_name(name: &str) -> io::Result<()> {
    if name.len() > 255 {
        return Err(errno(ENAMETOOLONG));
    }
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a valid file name"),
        ));
    }
    Ok(())
}

/// The checked components of `path`; empty for the root.
fn components(path: &WsPath) -> io::Result<Vec<&str>> {
    // The virtual filesystem has one root; any other index cannot come from its workspace.
    if path.root() != 0 {
        return Err(FsRefusal::Escapes.into());
    }
    if path.is_root() {
        return Ok(Vec::new());
    }
    path.rel()
        .split('/')
        .map(|c| check_name(c).map(|()| c))
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
}

impl Kind {
    fn parse(s: &str) -> io::Result<Kind> {
        match s {
            "file" => Ok(Kind::File),
            "dir" => Ok(Kind::Dir),
            other => Err(damaged(format!("unknown inode kind {other:?}"))),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Dir => "dir",
        }
    }

    fn file_kind(self) -> FileKind {
        match self {
            Kind::File => FileKind::File,
            Kind::Dir => FileKind::Dir,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Node {
    id: i64,
    kind: Kind,
}

const ROOT: Node = Node {
    id: ROOT_INODE,
    kind: Kind::Dir,
};

/// The entry `name` in directory `parent`.
fn child(conn: &Connection, parent: i64, name: &str) -> io::Result<Option<Node>> {
    let found: Option<(i64, String)> = conn
        .prepare_cached(
            "SELECT d.inode, i.kind FROM dentries d JOIN inodes i ON i.id = d.inode
             WHERE d.parent = ?1 AND d.name = ?2",
        )
        .sql()?
        .query_row(params![parent, name], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .sql()?;
    found
        .map(|(id, kind)| {
            Ok(Node {
                id,
                kind: Kind::parse(&kind)?,
            })
        })
        .transpose()
}

/// Walks `comps` from the root: a missing component is ENOENT, a file in the middle ENOTDIR.
fn lookup(conn: &Connection, comps: &[&str]) -> io::Result<Node> {
    let mut node = ROOT;
    for name in comps {
        if node.kind != Kind::Dir {
            return Err(errno(ENOTDIR));
        }
        node = child(conn, node.id, name)?.ok_or_else(|| errno(ENOENT))?;
    }
    Ok(node)
}

/// The directory holding the last component, and that component.
fn lookup_parent<'a>(conn: &Connection, comps: &[&'a str]) -> io::Result<(i64, &'a str)> {
    let (name, dirs) = comps.split_last().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the root directory has no parent",
        )
    })?;
    let parent = lookup(conn, dirs)?;
    if parent.kind != Kind::Dir {
        return Err(errno(ENOTDIR));
    }
    Ok((parent.id, name))
}

fn inode_meta(conn: &Connection, id: i64) -> io::Result<Metadata> {
    let (kind, mode, size, mtime, nlink): (String, u32, i64, i64, i64) = conn
        .prepare_cached("SELECT kind, mode, size, mtime, nlink FROM inodes WHERE id = ?1")
        .sql()?
        .query_row([id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .optional()
        .sql()?
        .ok_or_else(|| damaged(format!("inode {id} has a directory entry but no row")))?;
    Ok(Metadata {
        kind: Kind::parse(&kind)?.file_kind(),
        len: u64::try_from(size).map_err(|_| damaged(format!("inode {id} has size {size}")))?,
        mode,
        nlink: u64::try_from(nlink).unwrap_or(0),
        modified: mtime,
    })
}

fn new_inode(tx: &Transaction<'_>, kind: Kind, size: usize, now: i64) -> io::Result<i64> {
    let (mode, nlink) = match kind {
        Kind::File => (FILE_MODE, 1),
        Kind::Dir => (DIR_MODE, 2),
    };
    tx.prepare_cached(
        "INSERT INTO inodes(kind, mode, size, mtime, nlink) VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .sql()?
    .execute(params![kind.as_str(), mode, size as i64, now, nlink])
    .sql()?;
    Ok(tx.last_insert_rowid())
}

/// Adds the entry `name` → `inode` to `parent` and updates the parent as POSIX does (mtime; a
/// subdirectory's `..` counts as a link of the parent).
fn link(tx: &Transaction<'_>, parent: i64, name: &str, node: Node, now: i64) -> io::Result<()> {
    tx.prepare_cached("INSERT INTO dentries(parent, name, inode) VALUES (?1, ?2, ?3)")
        .sql()?
        .execute(params![parent, name, node.id])
        .sql()?;
    touch_parent(tx, parent, if node.kind == Kind::Dir { 1 } else { 0 }, now)
}

fn touch_parent(tx: &Transaction<'_>, parent: i64, links: i64, now: i64) -> io::Result<()> {
    tx.prepare_cached("UPDATE inodes SET mtime = ?2, nlink = nlink + ?3 WHERE id = ?1")
        .sql()?
        .execute(params![parent, now, links])
        .sql()?;
    Ok(())
}

/// Stores `data` as chunks `first..` of `inode`.
fn put_chunks(tx: &Transaction<'_>, inode: i64, first: i64, data: &[u8]) -> io::Result<()> {
    let mut stmt = tx
        .prepare_cached("INSERT INTO chunks(inode, idx, data) VALUES (?1, ?2, ?3)")
        .sql()?;
    for (i, chunk) in data.chunks(CHUNK).enumerate() {
        stmt.execute(params![inode, first + i as i64, chunk])
            .sql()?;
    }
    Ok(())
}

/// A new file `name` in `parent` holding `data`.
fn create_file(tx: &Transaction<'_>, parent: i64, name: &str, data: &[u8]) -> io::Result<()> {
    let now = now();
    let id = new_inode(tx, Kind::File, data.len(), now)?;
    put_chunks(tx, id, 0, data)?;
    link(
        tx,
        parent,
        name,
        Node {
            id,
            kind: Kind::File,
        },
        now,
    )
}

/// Deletes the entry `name` of `parent` and the inodes `ids` with their chunks and entries.
fn unlink(
    tx: &Transaction<'_>,
    parent: i64,
    name: &str,
    node: Node,
    ids: &[i64],
) -> io::Result<()> {
    tx.prepare_cached("DELETE FROM dentries WHERE parent = ?1 AND name = ?2")
        .sql()?
        .execute(params![parent, name])
        .sql()?;
    let mut chunks = tx
        .prepare_cached("DELETE FROM chunks WHERE inode = ?1")
        .sql()?;
    let mut entries = tx
        .prepare_cached("DELETE FROM dentries WHERE parent = ?1")
        .sql()?;
    let mut inodes = tx
        .prepare_cached("DELETE FROM inodes WHERE id = ?1")
        .sql()?;
    for id in ids {
        chunks.execute([id]).sql()?;
        entries.execute([id]).sql()?;
        inodes.execute([id]).sql()?;
    }
    touch_parent(
        tx,
        parent,
        if node.kind == Kind::Dir { -1 } else { 0 },
        now(),
    )
}

impl Backend for SqliteFs {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn identity(&self) -> Option<String> {
        Some(format!("sqlite:{}", self.inner.path.display()))
    }

    fn local_dir(&self, _root: usize) -> Option<&Path> {
        None
    }

    fn metadata(&self, path: &WsPath) -> io::Result<Metadata> {
        let comps = components(path)?;
        self.read(|tx| {
            let node = lookup(tx, &comps)?;
            inode_meta(tx, node.id)
        })
    }

    fn open_read(&self, path: &WsPath) -> io::Result<(Box<dyn ReadSeek>, Metadata)> {
        let (reader, meta) = self.open_chunks(path)?;
        Ok((Box::new(reader), meta))
    }

    fn read_dir(&self, path: &WsPath) -> io::Result<Vec<DirEntry>> {
        let comps = components(path)?;
        self.read(|tx| {
            let node = lookup(tx, &comps)?;
            if node.kind != Kind::Dir {
                return Err(errno(ENOTDIR));
            }
            let mut stmt = tx
                .prepare_cached(
                    "SELECT d.name, i.kind FROM dentries d JOIN inodes i ON i.id = d.inode
                     WHERE d.parent = ?1 ORDER BY d.name",
                )
                .sql()?;
            let rows = stmt
                .query_map([node.id], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })
                .sql()?;
            let mut out = Vec::new();
            for row in rows {
                let (name, kind) = row.sql()?;
                out.push(DirEntry {
                    name,
                    kind: Kind::parse(&kind)?.file_kind(),
                });
            }
            Ok(out)
        })
    }

    fn write_atomic(&self, path: &WsPath, data: &[u8]) -> io::Result<()> {
        let comps = components(path)?;
        self.write(|tx| {
            let (parent, name) = lookup_parent(tx, &comps)?;
            match child(tx, parent, name)? {
                Some(Node {
                    kind: Kind::Dir, ..
                }) => Err(errno(EISDIR)),
                Some(Node {
                    id,
                    kind: Kind::File,
                }) => {
                    // Same inode, so mode and identity are kept; all chunks change at once.
                    tx.prepare_cached("DELETE FROM chunks WHERE inode = ?1")
                        .sql()?
                        .execute([id])
                        .sql()?;
                    put_chunks(tx, id, 0, data)?;
                    tx.prepare_cached("UPDATE inodes SET size = ?2, mtime = ?3 WHERE id = ?1")
                        .sql()?
                        .execute(params![id, data.len() as i64, now()])
                        .sql()?;
                    Ok(())
                }
                None => create_file(tx, parent, name, data),
            }
        })
    }

    fn append(&self, path: &WsPath, data: &[u8]) -> io::Result<()> {
        let comps = components(path)?;
        self.write(|tx| {
            let (parent, name) = lookup_parent(tx, &comps)?;
            let id = match child(tx, parent, name)? {
                Some(Node {
                    kind: Kind::Dir, ..
                }) => return Err(errno(EISDIR)),
                Some(Node { id, .. }) => id,
                None => return create_file(tx, parent, name, data),
            };
            let size = inode_meta(tx, id)?.len;
            let mut rest = data;
            let mut next = (size / CHUNK as u64) as i64;
            let tail = (size % CHUNK as u64) as usize;
            if tail != 0 && !rest.is_empty() {
                // Fill the partial last chunk first, so every chunk but the last stays full.
                let mut last: Vec<u8> = tx
                    .prepare_cached("SELECT data FROM chunks WHERE inode = ?1 AND idx = ?2")
                    .sql()?
                    .query_row(params![id, next], |r| r.get(0))
                    .optional()
                    .sql()?
                    .ok_or_else(|| damaged(format!("chunk {next} of inode {id} is missing")))?;
                if last.len() != tail {
                    return Err(damaged(format!(
                        "chunk {next} of inode {id} has {} bytes where {tail} were expected",
                        last.len()
                    )));
                }
                let take = (CHUNK - tail).min(rest.len());
                last.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
                tx.prepare_cached("UPDATE chunks SET data = ?3 WHERE inode = ?1 AND idx = ?2")
                    .sql()?
                    .execute(params![id, next, last])
                    .sql()?;
                next += 1;
            }
            put_chunks(tx, id, next, rest)?;
            tx.prepare_cached("UPDATE inodes SET size = size + ?2, mtime = ?3 WHERE id = ?1")
                .sql()?
                .execute(params![id, data.len() as i64, now()])
                .sql()?;
            Ok(())
        })
    }

    fn create_dir_all(&self, path: &WsPath) -> io::Result<()> {
        let comps = components(path)?;
        if comps.is_empty() {
            return Ok(());
        }
        self.write(|tx| {
            let mut node = ROOT;
            for name in &comps {
                // A file in the way, in the middle or at the end, is ENOTDIR, as on disk.
                if node.kind != Kind::Dir {
                    return Err(errno(ENOTDIR));
                }
                node = match child(tx, node.id, name)? {
                    Some(found) => found,
                    None => {
                        let now = now();
                        let created = Node {
                            id: new_inode(tx, Kind::Dir, 0, now)?,
                            kind: Kind::Dir,
                        };
                        link(tx, node.id, name, created, now)?;
                        created
                    }
                };
            }
            if node.kind != Kind::Dir {
                return Err(errno(ENOTDIR));
            }
            Ok(())
        })
    }

    fn remove_file(&self, path: &WsPath) -> io::Result<()> {
        let comps = components(path)?;
        self.write(|tx| {
            let (parent, name) = lookup_parent(tx, &comps)?;
            let node = child(tx, parent, name)?.ok_or_else(|| errno(ENOENT))?;
            if node.kind == Kind::Dir {
                return Err(errno(EISDIR));
            }
            unlink(tx, parent, name, node, &[node.id])
        })
    }

    fn remove_dir(&self, path: &WsPath, recursive: bool) -> io::Result<()> {
        let comps = components(path)?;
        self.write(|tx| {
            let (parent, name) = lookup_parent(tx, &comps)?;
            let node = child(tx, parent, name)?.ok_or_else(|| errno(ENOENT))?;
            if node.kind != Kind::Dir {
                return Err(errno(ENOTDIR));
            }
            let ids: Vec<i64> = if recursive {
                // Every inode of the subtree. UNION (not UNION ALL) ends even if a damaged
                // database had a cycle of entries.
                let mut stmt = tx
                    .prepare_cached(
                        "WITH RECURSIVE sub(id) AS (
                             SELECT ?1
                             UNION
                             SELECT d.inode FROM dentries d JOIN sub ON d.parent = sub.id
                         )
                         SELECT id FROM sub",
                    )
                    .sql()?;
                let rows = stmt.query_map([node.id], |r| r.get(0)).sql()?;
                let ids = rows.collect::<rusqlite::Result<Vec<i64>>>().sql()?;
                if ids.contains(&ROOT_INODE) {
                    return Err(damaged(
                        "the root directory is inside a subdirectory".into(),
                    ));
                }
                ids
            } else {
                let has_entries: bool = tx
                    .prepare_cached("SELECT EXISTS(SELECT 1 FROM dentries WHERE parent = ?1)")
                    .sql()?
                    .query_row([node.id], |r| r.get(0))
                    .sql()?;
                if has_entries {
                    return Err(errno(ENOTEMPTY));
                }
                vec![node.id]
            };
            unlink(tx, parent, name, node, &ids)
        })
    }
}
