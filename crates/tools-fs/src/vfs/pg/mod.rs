//! The virtual filesystem on PostgreSQL (feature `postgres`): the [`SqliteFs`](super::SqliteFs)
//! layout and semantics in a database that several Toolshed processes on several hosts share.
//!
//! # Layout
//!
//! Tables (see `schema.rs`, applied by [`PgPool::migrate`] as store `vfs`): `vfs_volumes` (name →
//! root inode), `vfs_inodes` (volume, kind, mode, size, mtime, nlink, generation),
//! `vfs_dentries` (parent, name → inode, unique per (parent, name)) and `vfs_chunks` (inode, idx
//! → at most 4 KiB; every chunk but a file's last is exactly 4 KiB). One schema holds any number
//! of volumes, each an independent workspace with its own root directory. Every query is scoped
//! to one volume: a path is resolved from the volume's root, and every inode it reaches must
//! carry the volume's root in `volume`, so even a damaged entry pointing into another volume is
//! not followed.
//!
//! # Writes
//!
//! Every change is one transaction, as on SQLite: `write_atomic` replaces all chunks of an inode
//! (or creates the inode and its entry), `append` extends the last chunk and adds new ones,
//! `create_dir_all` creates the missing directories, `remove_dir` deletes a whole subtree. Where
//! SQLite serialises writers with `BEGIN IMMEDIATE`, writers here take row locks
//! (`SELECT … FOR UPDATE`) on what they change, then check that it is still what they looked
//! up: adding or removing an entry locks the directory, changing a file's bytes locks the file,
//! and a recursive removal locks the directory and every inode below it. A writer whose lookup
//! went stale (the file was created, replaced or deleted by another process in between) rolls
//! back and starts again from the path, so two writers creating the same name make one inode:
//! the second one finds the first one's file and replaces or appends to it. Deadlocks,
//! serialisation failures and unique-key conflicts are retried the same way, a bounded number of
//! times.
//!
//! # Reads
//!
//! Metadata, listings and lookups are single statements, each consistent in itself. An open file
//! ([`PgReader`]) holds no connection: it fetches a window of chunks per query, taking a pooled
//! connection for that query only. Consistency comes from `vfs_inodes.generation`, which every
//! replacement of a file's bytes increases in the same transaction: each fetch reads the
//! generation and the chunks in one statement (one snapshot), and fails with "the file changed
//! while it was being read; read it again" when the generation is not the one seen at open or
//! the file is gone. Appends keep the generation, since they leave the bytes a reader knows
//! unchanged: a reader reads the file as it was at open, up to the size it saw then. So a
//! reader returns one version of the file, or that error, never a mix. Files of up to
//! [`WINDOW`] chunks are read whole when they are opened.
//!
//! # Blocking
//!
//! Every method blocks on the database: call them from blocking threads (the tools do, through
//! `tool_core::blocking`). [`PgFs::open`] may be called from async code.
//!
//! Not benchmarked yet: there is no `cargo xtask bench` case for this backend. Each operation
//! costs one pooled connection and a handful of round trips (one per statement; chunks are
//! written up to 256 per statement), which is what to measure first on a real network.

mod reader;
mod schema;
#[cfg(test)]
mod tests;

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tool_core::Workspace;
use tool_core::pg::postgres::types::{ToSql, Type};
use tool_core::pg::postgres::{self, GenericClient, Row, Transaction};
use tool_core::pg::{PgConn, PgError, PgPool};
use tool_core::workspace::{Backend, DirEntry, FsRefusal, Metadata, ReadSeek, Root, WsPath};

use super::{
    CHUNK, DIR_MODE, EISDIR, ENOENT, ENOTDIR, ENOTEMPTY, FILE_MODE, Kind, components, damaged,
    errno, now,
};
use reader::PgReader;

/// How many chunks a reader fetches per query (and reads whole at open): 64 KiB.
const WINDOW: u64 = 16;
/// How many chunks one `INSERT` writes.
const CHUNKS_PER_INSERT: usize = 256;
/// How many times a write starts again after a conflict with another writer.
const ATTEMPTS: u32 = 20;
/// The longest a volume name may be.
const VOLUME_NAME_MAX: usize = 64;

/// A workspace stored as one named volume in a PostgreSQL schema.
///
/// Cheap to share: `Workspace` holds it behind an `Arc`. Any number of `PgFs` (in one process or
/// on several hosts, through one pool or several) may open the same volume; each sees the
/// others' changes as soon as they are committed.
pub struct PgFs {
    pool: PgPool,
    volume: String,
    /// The volume's root inode, which also scopes every query to the volume.
    root: i64,
}

/// Opens (creating it if missing) the volume `volume` in the database of `pool` and returns a
/// [`Workspace`] over it whose single, writable root is the virtual `/`.
pub fn pg_workspace(pool: PgPool, volume: &str) -> io::Result<Workspace> {
    let fs = PgFs::open(pool, volume)?;
    Ok(Workspace::with_backend(
        vec![Root {
            path: "/".into(),
            writable: true,
        }],
        Arc::new(fs),
    ))
}

impl PgFs {
    /// Brings the tables of the pool's schema up to date, then opens the volume `volume`,
    /// creating it (an empty root directory) if it does not exist yet. Volume names are 1 to 64
    /// letters, digits, `.`, `_` and `-`. Blocking, but may be called from async code.
    pub fn open(pool: PgPool, volume: &str) -> io::Result<PgFs> {
        check_volume_name(volume)?;
        tool_core::pg::off_runtime(move || {
            pool.migrate(schema::STORE, schema::MIGRATIONS)
                .map_err(pool_error)?;
            let root = open_volume(&pool, volume)?;
            Ok(PgFs {
                pool,
                volume: volume.to_string(),
                root,
            })
        })
    }

    /// The volume's name.
    pub fn volume(&self) -> &str {
        &self.volume
    }

    /// The volume's root inode.
    #[cfg(test)]
    pub(in crate::vfs) fn root_inode(&self) -> i64 {
        self.root
    }

    /// The inode at `path`.
    #[cfg(test)]
    pub(in crate::vfs) fn inode_of(&self, path: &WsPath) -> io::Result<i64> {
        let comps = components(path)?;
        Ok(lookup(&mut *self.conn()?, self.root, &comps)?.id)
    }

    fn conn(&self) -> io::Result<PgConn> {
        self.pool.get().map_err(pool_error)
    }

    /// Runs `f` in a transaction: committed if `f` succeeds, rolled back otherwise, and run again
    /// from the start (after a short pause) when it conflicted with another writer.
    fn write<T>(&self, mut f: impl FnMut(&mut Transaction<'_>) -> io::Result<T>) -> io::Result<T> {
        let mut conn = self.conn()?;
        let mut last = None;
        for attempt in 0..ATTEMPTS {
            // The first retry is usually a lookup that went stale: run it again at once.
            if attempt > 1 {
                std::thread::sleep(backoff(attempt));
            }
            let mut tx = conn.transaction().map_err(pg_error)?;
            let result = f(&mut tx).and_then(|out| tx.commit().map_err(pg_error).map(|()| out));
            match result {
                Ok(out) => return Ok(out),
                Err(e) if is_conflict(&e) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        let detail = last
            .as_ref()
            .and_then(|e| e.get_ref())
            .and_then(|inner| inner.downcast_ref::<Conflict>())
            .map(|c| c.0.clone())
            .unwrap_or_default();
        Err(io::Error::new(
            io::ErrorKind::ResourceBusy,
            format!(
                "other writers kept changing the same files or directories at the same moment ({detail}); try again"
            ),
        ))
    }

    /// Opens a file for lazy, version-checked reading (see [`PgReader`]).
    fn open_reader(&self, path: &WsPath) -> io::Result<(PgReader, Metadata)> {
        let comps = components(path)?;
        let mut conn = self.conn()?;
        let node = lookup(&mut *conn, self.root, &comps)?;
        if node.kind != Kind::File {
            return Err(FsRefusal::NotRegular("directory").into());
        }
        PgReader::open(&mut conn, self.pool.clone(), self.root, &node)
    }
}

impl fmt::Debug for PgFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgFs")
            .field("pool", &self.pool)
            .field("volume", &self.volume)
            .field("root", &self.root)
            .finish()
    }
}

/// Refuses volume names that are not 1 to 64 of `[A-Za-z0-9._-]`.
fn check_volume_name(name: &str) -> io::Result<()> {
    let ok = (1..=VOLUME_NAME_MAX).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{name:?} is not a usable volume name; use 1 to {VOLUME_NAME_MAX} letters, digits, dots, dashes and underscores"
            ),
        ))
    }
}

/// The root inode of volume `name`, created with the volume if missing.
fn open_volume(pool: &PgPool, name: &str) -> io::Result<i64> {
    let mut conn = pool.get().map_err(pool_error)?;
    // Two processes creating the volume at once: one insert wins, the other rolls its root
    // back and finds the winner's on the next pass.
    for _ in 0..3 {
        let found = conn
            .query_typed_opt(
                "SELECT v.root, i.kind, i.volume FROM vfs_volumes v
                 LEFT JOIN vfs_inodes i ON i.id = v.root
                 WHERE v.name = $1",
                &[(&name, Type::TEXT)],
            )
            .map_err(pg_error)?;
        if let Some(row) = found {
            let root: i64 = row.get(0);
            let kind: Option<String> = row.get(1);
            let volume: Option<i64> = row.get(2);
            if kind.as_deref() != Some("dir") || volume != Some(root) {
                return Err(damaged(format!(
                    "the root directory of volume {name} is missing"
                )));
            }
            return Ok(root);
        }
        let mut tx = conn.transaction().map_err(pg_error)?;
        let root: i64 = tx
            .query_typed_one(
                "INSERT INTO vfs_inodes (id, volume, kind, mode, size, mtime, nlink)
                 SELECT n.id, n.id, 'dir', $1, 0, $2, 2
                 FROM (SELECT nextval(pg_get_serial_sequence('vfs_inodes', 'id')) AS id) n
                 RETURNING id",
                &[(&(DIR_MODE as i32), Type::INT4), (&now(), Type::INT8)],
            )
            .map_err(pg_error)?
            .get(0);
        let created = tx
            .query_typed_opt(
                "INSERT INTO vfs_volumes (name, root, created) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO NOTHING RETURNING root",
                &[
                    (&name, Type::TEXT),
                    (&root, Type::INT8),
                    (&now(), Type::INT8),
                ],
            )
            .map_err(pg_error)?;
        if created.is_some() {
            tx.commit().map_err(pg_error)?;
            return Ok(root);
        }
        drop(tx);
    }
    Err(io::Error::new(
        io::ErrorKind::ResourceBusy,
        format!(
            "the volume {name} could not be opened while other processes created it; try again"
        ),
    ))
}

// ---------------------------------------------------------------------------------------------
// Errors.

/// A write that conflicted with another writer's and should start again.
#[derive(Debug)]
struct Conflict(String);

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "another writer changed the same file or directory at the same moment ({}); try again",
            self.0
        )
    }
}

impl std::error::Error for Conflict {}

fn conflict(what: impl Into<String>) -> io::Error {
    io::Error::other(Conflict(what.into()))
}

fn is_conflict(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Conflict>())
}

/// Turns a pool error into an `io::Error` whose text is the pool's sentence.
fn pool_error(e: PgError) -> io::Error {
    match e {
        PgError::Unavailable(message) => io::Error::other(message),
        PgError::Query(e) => pg_error(e),
        other => io::Error::other(other.to_string()),
    }
}

/// Turns a query error into an `io::Error` with a sentence (and a retryable marker for
/// conflicts between writers).
fn pg_error(e: postgres::Error) -> io::Error {
    use postgres::error::SqlState;
    let detail = e
        .as_db_error()
        .map(|d| d.message().to_string())
        .unwrap_or_else(|| e.to_string());
    let Some(code) = e.code() else {
        if e.is_closed() {
            return io::Error::new(
                io::ErrorKind::ConnectionAborted,
                format!("the connection to the workspace database was lost ({detail}); try again"),
            );
        }
        return io::Error::other(format!("the workspace database failed: {detail}"));
    };
    if [
        SqlState::T_R_SERIALIZATION_FAILURE,
        SqlState::T_R_DEADLOCK_DETECTED,
        SqlState::UNIQUE_VIOLATION,
        SqlState::FOREIGN_KEY_VIOLATION,
    ]
    .contains(code)
    {
        return conflict(detail);
    }
    let (kind, message) = match *code {
        SqlState::QUERY_CANCELED => (
            io::ErrorKind::TimedOut,
            "the workspace database cancelled a statement that ran past its statement timeout; try again".to_string(),
        ),
        SqlState::LOCK_NOT_AVAILABLE => (
            io::ErrorKind::ResourceBusy,
            "another writer held a lock on the same file or directory past the lock timeout; try again".to_string(),
        ),
        SqlState::DISK_FULL => (
            io::ErrorKind::StorageFull,
            "the disk holding the workspace database is full".to_string(),
        ),
        SqlState::INSUFFICIENT_PRIVILEGE => (
            io::ErrorKind::PermissionDenied,
            format!("the workspace database cannot be written: {detail}"),
        ),
        SqlState::PROGRAM_LIMIT_EXCEEDED => (
            io::ErrorKind::FileTooLarge,
            "the data is too large for the workspace database".to_string(),
        ),
        _ => (
            io::ErrorKind::Other,
            format!("the workspace database failed: {detail}"),
        ),
    };
    io::Error::new(kind, message)
}

/// A short pause that grows with the attempt, with jitter so that racing writers spread out.
fn backoff(attempt: u32) -> Duration {
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::from(d.subsec_nanos()) % 1000)
        .unwrap_or(0);
    let base = 1u64 << attempt.min(5); // 2 ms .. 32 ms
    Duration::from_micros(base * 1000 + jitter * base)
}

// ---------------------------------------------------------------------------------------------
// Lookups.

/// One inode row.
#[derive(Debug, Clone)]
struct Inode {
    id: i64,
    kind: Kind,
    mode: i32,
    size: i64,
    mtime: i64,
    nlink: i64,
}

/// The columns [`Inode::from_row`] reads, in order.
const INODE_COLUMNS: &str = "i.id, i.kind, i.mode, i.size, i.mtime, i.nlink";

impl Inode {
    /// Reads [`INODE_COLUMNS`] starting at column `at`.
    fn from_row(row: &Row, at: usize) -> io::Result<Inode> {
        Ok(Inode {
            id: row.get(at),
            kind: Kind::parse(row.get(at + 1))?,
            mode: row.get(at + 2),
            size: row.get(at + 3),
            mtime: row.get(at + 4),
            nlink: row.get(at + 5),
        })
    }

    fn metadata(&self) -> io::Result<Metadata> {
        Ok(Metadata {
            kind: self.kind.file_kind(),
            len: u64::try_from(self.size)
                .map_err(|_| damaged(format!("inode {} has size {}", self.id, self.size)))?,
            mode: u32::try_from(self.mode).unwrap_or(0),
            nlink: u64::try_from(self.nlink).unwrap_or(0),
            modified: self.mtime,
        })
    }
}

/// Walks `comps` from the volume's root in one statement and returns the inodes reached: the
/// root, then one per component found, stopping at the first missing one or at a file.
fn walk(db: &mut impl GenericClient, root: i64, comps: &[&str]) -> io::Result<Vec<Inode>> {
    let sql = format!(
        "WITH RECURSIVE walk(depth, id, kind, mode, size, mtime, nlink) AS (
             SELECT 0, {INODE_COLUMNS} FROM vfs_inodes i WHERE i.id = $1 AND i.volume = $1
             UNION ALL
             SELECT w.depth + 1, {INODE_COLUMNS}
             FROM walk w
             JOIN vfs_dentries d ON d.parent = w.id AND d.name = ($2::text[])[w.depth + 1]
             JOIN vfs_inodes i ON i.id = d.inode AND i.volume = $1
             WHERE w.kind = 'dir' AND w.depth < cardinality($2::text[])
         )
         SELECT depth, id, kind, mode, size, mtime, nlink FROM walk ORDER BY depth"
    );
    let rows = db
        .query_typed(&sql, &[(&root, Type::INT8), (&comps, Type::TEXT_ARRAY)])
        .map_err(pg_error)?;
    if rows.is_empty() {
        return Err(damaged(
            "the root directory of the volume is missing".into(),
        ));
    }
    rows.iter().map(|r| Inode::from_row(r, 1)).collect()
}

/// The error for a walk that stopped at `last` before the end: a file in the way is ENOTDIR,
/// a missing entry ENOENT.
fn stopped_at(last: &Inode) -> io::Error {
    if last.kind == Kind::Dir {
        errno(ENOENT)
    } else {
        errno(ENOTDIR)
    }
}

/// The inode at `comps`.
fn lookup(db: &mut impl GenericClient, root: i64, comps: &[&str]) -> io::Result<Inode> {
    let mut nodes = walk(db, root, comps)?;
    if nodes.len() == comps.len() + 1 {
        return nodes.pop().ok_or_else(|| errno(ENOENT));
    }
    Err(nodes
        .last()
        .map(stopped_at)
        .unwrap_or_else(|| errno(ENOENT)))
}

/// The directory holding the last component of `comps`, that component, and its inode if any.
fn lookup_parent<'a>(
    db: &mut impl GenericClient,
    root: i64,
    comps: &[&'a str],
) -> io::Result<(Inode, &'a str, Option<Inode>)> {
    let Some((name, _)) = comps.split_last() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the root directory has no parent",
        ));
    };
    let mut nodes = walk(db, root, comps)?;
    let n = comps.len();
    if nodes.len() == n + 1 {
        let child = nodes.pop();
        let parent = nodes.pop().ok_or_else(|| errno(ENOENT))?;
        return Ok((parent, name, child));
    }
    let last = nodes.pop().ok_or_else(|| errno(ENOENT))?;
    if nodes.len() + 1 == n && last.kind == Kind::Dir {
        return Ok((last, name, None));
    }
    Err(stopped_at(&last))
}

// ---------------------------------------------------------------------------------------------
// Changes, each inside a write transaction.

/// Locks inode `id` for the rest of the transaction and returns its current row, or a conflict
/// when it was deleted since it was looked up.
fn lock(tx: &mut Transaction<'_>, root: i64, id: i64) -> io::Result<Inode> {
    let sql = format!(
        "SELECT {INODE_COLUMNS} FROM vfs_inodes i WHERE i.id = $1 AND i.volume = $2 FOR UPDATE"
    );
    let row = tx
        .query_typed_opt(&sql, &[(&id, Type::INT8), (&root, Type::INT8)])
        .map_err(pg_error)?
        .ok_or_else(|| conflict("it was deleted while this change was being made"))?;
    Inode::from_row(&row, 0)
}

/// Whether directory `parent` has an entry `name` (read after the directory was locked, so it
/// is the latest committed state).
fn has_entry(tx: &mut Transaction<'_>, parent: i64, name: &str) -> io::Result<bool> {
    let row = tx
        .query_typed_one(
            "SELECT EXISTS(SELECT 1 FROM vfs_dentries WHERE parent = $1 AND name = $2)",
            &[(&parent, Type::INT8), (&name, Type::TEXT)],
        )
        .map_err(pg_error)?;
    Ok(row.get(0))
}

fn new_inode(tx: &mut Transaction<'_>, root: i64, kind: Kind, size: usize) -> io::Result<i64> {
    let (mode, nlink) = match kind {
        Kind::File => (FILE_MODE, 1i64),
        Kind::Dir => (DIR_MODE, 2i64),
    };
    let size = size as i64;
    let row = tx
        .query_typed_one(
            "INSERT INTO vfs_inodes (volume, kind, mode, size, mtime, nlink)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            &[
                (&root, Type::INT8),
                (&kind.as_str(), Type::TEXT),
                (&(mode as i32), Type::INT4),
                (&size, Type::INT8),
                (&now(), Type::INT8),
                (&nlink, Type::INT8),
            ],
        )
        .map_err(pg_error)?;
    Ok(row.get(0))
}

/// Adds the entry `name` → `inode` to the (locked) directory `parent` and updates the parent as
/// POSIX does (mtime; a subdirectory's `..` counts as a link of the parent).
fn link(
    tx: &mut Transaction<'_>,
    parent: i64,
    name: &str,
    inode: i64,
    kind: Kind,
) -> io::Result<()> {
    tx.execute_typed(
        "INSERT INTO vfs_dentries (parent, name, inode) VALUES ($1, $2, $3)",
        &[
            (&parent, Type::INT8),
            (&name, Type::TEXT),
            (&inode, Type::INT8),
        ],
    )
    .map_err(pg_error)?;
    touch(tx, parent, if kind == Kind::Dir { 1 } else { 0 })
}

fn touch(tx: &mut Transaction<'_>, dir: i64, links: i64) -> io::Result<()> {
    tx.execute_typed(
        "UPDATE vfs_inodes SET mtime = $2, nlink = nlink + $3 WHERE id = $1",
        &[
            (&dir, Type::INT8),
            (&now(), Type::INT8),
            (&links, Type::INT8),
        ],
    )
    .map_err(pg_error)?;
    Ok(())
}

/// Stores `data` as chunks `first..` of `inode`, many chunks per statement.
fn put_chunks(tx: &mut Transaction<'_>, inode: i64, first: i64, data: &[u8]) -> io::Result<()> {
    let mut next = first;
    for batch in data.chunks(CHUNK * CHUNKS_PER_INSERT) {
        let chunks: Vec<&[u8]> = batch.chunks(CHUNK).collect();
        tx.execute_typed(
            "INSERT INTO vfs_chunks (inode, idx, data)
             SELECT $1, $2 + t.n - 1, t.data FROM unnest($3::bytea[]) WITH ORDINALITY AS t(data, n)",
            &[
                (&inode, Type::INT8),
                (&next, Type::INT8),
                (&chunks, Type::BYTEA_ARRAY),
            ],
        )
        .map_err(pg_error)?;
        next += chunks.len() as i64;
    }
    Ok(())
}

/// A new file `name` holding `data` in directory `parent`, which this locks first. Conflicts
/// when the name was taken since it was looked up, so the caller starts again and finds it.
fn create_file(
    tx: &mut Transaction<'_>,
    root: i64,
    parent: i64,
    name: &str,
    data: &[u8],
) -> io::Result<()> {
    lock(tx, root, parent)?;
    if has_entry(tx, parent, name)? {
        return Err(conflict("another writer created the same name"));
    }
    let id = new_inode(tx, root, Kind::File, data.len())?;
    put_chunks(tx, id, 0, data)?;
    link(tx, parent, name, id, Kind::File)
}

/// Every inode of the subtree at `top`, locked: collected, locked in id order (parents first),
/// and collected again until nothing changed in between. With every directory of the subtree
/// locked, no writer can add or remove entries in it until this transaction ends.
fn lock_subtree(tx: &mut Transaction<'_>, root: i64, top: i64) -> io::Result<Vec<i64>> {
    let mut locked: Vec<i64> = Vec::new();
    for _ in 0..8 {
        // UNION (not UNION ALL) ends even if a damaged database had a cycle of entries.
        let rows = tx
            .query_typed(
                "WITH RECURSIVE sub(id) AS (
                     SELECT id FROM vfs_inodes WHERE id = $1 AND volume = $2
                     UNION
                     SELECT d.inode FROM vfs_dentries d
                     JOIN sub ON d.parent = sub.id
                     JOIN vfs_inodes i ON i.id = d.inode AND i.volume = $2
                 )
                 SELECT id FROM sub ORDER BY id",
                &[(&top, Type::INT8), (&root, Type::INT8)],
            )
            .map_err(pg_error)?;
        let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
        if !ids.contains(&top) {
            return Err(conflict(
                "the directory was deleted while it was being removed",
            ));
        }
        if ids == locked {
            return Ok(ids);
        }
        let new: Vec<i64> = ids
            .iter()
            .copied()
            .filter(|id| locked.binary_search(id).is_err())
            .collect();
        tx.query_typed(
            "SELECT id FROM vfs_inodes WHERE id = ANY($1) AND volume = $2 ORDER BY id FOR UPDATE",
            &[(&new, Type::INT8_ARRAY), (&root, Type::INT8)],
        )
        .map_err(pg_error)?;
        locked.extend(new);
        locked.sort_unstable();
        // A locked inode that has been deleted meanwhile drops out of the next collection.
        locked.retain(|id| ids.binary_search(id).is_ok());
    }
    Err(conflict(
        "the directory kept changing while it was being removed",
    ))
}

/// The parameters of a statement, with their types.
type Params<'a> = &'a [(&'a (dyn ToSql + Sync), Type)];

/// Deletes the entry `name` of `parent` and the inodes `ids` with their chunks and entries.
fn unlink(
    tx: &mut Transaction<'_>,
    root: i64,
    parent: i64,
    name: &str,
    kind: Kind,
    ids: &[i64],
) -> io::Result<()> {
    let ids: Vec<i64> = ids.to_vec();
    let statements: [(&str, Params<'_>); 4] = [
        (
            "DELETE FROM vfs_dentries WHERE parent = $1 AND name = $2",
            &[(&parent, Type::INT8), (&name, Type::TEXT)],
        ),
        (
            "DELETE FROM vfs_chunks WHERE inode = ANY($1)",
            &[(&ids, Type::INT8_ARRAY)],
        ),
        (
            "DELETE FROM vfs_dentries WHERE parent = ANY($1)",
            &[(&ids, Type::INT8_ARRAY)],
        ),
        (
            "DELETE FROM vfs_inodes WHERE id = ANY($1) AND volume = $2",
            &[(&ids, Type::INT8_ARRAY), (&root, Type::INT8)],
        ),
    ];
    for (sql, params) in statements {
        tx.execute_typed(sql, params).map_err(pg_error)?;
    }
    touch(tx, parent, if kind == Kind::Dir { -1 } else { 0 })
}

impl Backend for PgFs {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn identity(&self) -> Option<String> {
        Some(format!("postgres:{}/{}", self.pool.schema(), self.volume))
    }

    fn local_dir(&self, _root: usize) -> Option<&Path> {
        None
    }

    fn metadata(&self, path: &WsPath) -> io::Result<Metadata> {
        let comps = components(path)?;
        lookup(&mut *self.conn()?, self.root, &comps)?.metadata()
    }

    fn open_read(&self, path: &WsPath) -> io::Result<(Box<dyn ReadSeek>, Metadata)> {
        let (reader, meta) = self.open_reader(path)?;
        Ok((Box::new(reader), meta))
    }

    fn read_dir(&self, path: &WsPath) -> io::Result<Vec<DirEntry>> {
        let comps = components(path)?;
        let mut conn = self.conn()?;
        let dir = lookup(&mut *conn, self.root, &comps)?;
        if dir.kind != Kind::Dir {
            return Err(errno(ENOTDIR));
        }
        let rows = conn
            .query_typed(
                "SELECT d.name, i.kind FROM vfs_dentries d
                 JOIN vfs_inodes i ON i.id = d.inode AND i.volume = $2
                 WHERE d.parent = $1 ORDER BY d.name COLLATE \"C\"",
                &[(&dir.id, Type::INT8), (&self.root, Type::INT8)],
            )
            .map_err(pg_error)?;
        rows.iter()
            .map(|r| {
                Ok(DirEntry {
                    name: r.get(0),
                    kind: Kind::parse(r.get(1))?.file_kind(),
                })
            })
            .collect()
    }

    fn write_atomic(&self, path: &WsPath, data: &[u8]) -> io::Result<()> {
        let comps = components(path)?;
        self.write(|tx| {
            let (parent, name, child) = lookup_parent(tx, self.root, &comps)?;
            match child {
                Some(node) if node.kind == Kind::Dir => Err(errno(EISDIR)),
                Some(node) => {
                    // Same inode, so mode and identity are kept; all chunks change at once, and
                    // the new generation tells open readers that their version is gone.
                    lock(tx, self.root, node.id)?;
                    tx.execute_typed(
                        "DELETE FROM vfs_chunks WHERE inode = $1",
                        &[(&node.id, Type::INT8)],
                    )
                    .map_err(pg_error)?;
                    put_chunks(tx, node.id, 0, data)?;
                    tx.execute_typed(
                        "UPDATE vfs_inodes SET size = $2, mtime = $3, generation = generation + 1
                         WHERE id = $1",
                        &[
                            (&node.id, Type::INT8),
                            (&(data.len() as i64), Type::INT8),
                            (&now(), Type::INT8),
                        ],
                    )
                    .map_err(pg_error)?;
                    Ok(())
                }
                None => create_file(tx, self.root, parent.id, name, data),
            }
        })
    }

    fn append(&self, path: &WsPath, data: &[u8]) -> io::Result<()> {
        let comps = components(path)?;
        self.write(|tx| {
            let (parent, name, child) = lookup_parent(tx, self.root, &comps)?;
            let node = match child {
                Some(node) if node.kind == Kind::Dir => return Err(errno(EISDIR)),
                Some(node) => node,
                None => return create_file(tx, self.root, parent.id, name, data),
            };
            // The size read under the lock is the one to extend: no other append can slip in.
            let size = lock(tx, self.root, node.id)?.metadata()?.len;
            let mut rest = data;
            let mut next = (size / CHUNK as u64) as i64;
            let tail = (size % CHUNK as u64) as usize;
            if tail != 0 && !rest.is_empty() {
                // Fill the partial last chunk first, so every chunk but the last stays full.
                let take = (CHUNK - tail).min(rest.len());
                let filled = &rest[..take];
                let row = tx
                    .query_typed_opt(
                        "UPDATE vfs_chunks SET data = data || $3 WHERE inode = $1 AND idx = $2
                         RETURNING octet_length(data)",
                        &[
                            (&node.id, Type::INT8),
                            (&next, Type::INT8),
                            (&filled, Type::BYTEA),
                        ],
                    )
                    .map_err(pg_error)?
                    .ok_or_else(|| {
                        damaged(format!("chunk {next} of inode {} is missing", node.id))
                    })?;
                let len: i32 = row.get(0);
                if len as usize != tail + take {
                    return Err(damaged(format!(
                        "chunk {next} of inode {} had {} bytes where {tail} were expected",
                        node.id,
                        len as usize - take
                    )));
                }
                rest = &rest[take..];
                next += 1;
            }
            put_chunks(tx, node.id, next, rest)?;
            tx.execute_typed(
                "UPDATE vfs_inodes SET size = size + $2, mtime = $3 WHERE id = $1",
                &[
                    (&node.id, Type::INT8),
                    (&(data.len() as i64), Type::INT8),
                    (&now(), Type::INT8),
                ],
            )
            .map_err(pg_error)?;
            Ok(())
        })
    }

    fn create_dir_all(&self, path: &WsPath) -> io::Result<()> {
        let comps = components(path)?;
        if comps.is_empty() {
            return Ok(());
        }
        self.write(|tx| {
            let nodes = walk(tx, self.root, &comps)?;
            let found = nodes.len() - 1;
            let last = nodes.last().ok_or_else(|| errno(ENOENT))?;
            // A file in the way, in the middle or at the end, is ENOTDIR, as on disk.
            if last.kind != Kind::Dir {
                return Err(errno(ENOTDIR));
            }
            if found == comps.len() {
                return Ok(());
            }
            lock(tx, self.root, last.id)?;
            if has_entry(tx, last.id, comps[found])? {
                return Err(conflict("another writer created the same directory"));
            }
            let mut parent = last.id;
            for name in &comps[found..] {
                let id = new_inode(tx, self.root, Kind::Dir, 0)?;
                link(tx, parent, name, id, Kind::Dir)?;
                parent = id;
            }
            Ok(())
        })
    }

    fn remove_file(&self, path: &WsPath) -> io::Result<()> {
        let comps = components(path)?;
        self.write(|tx| {
            let (parent, name, child) = lookup_parent(tx, self.root, &comps)?;
            let node = child.ok_or_else(|| errno(ENOENT))?;
            if node.kind == Kind::Dir {
                return Err(errno(EISDIR));
            }
            lock(tx, self.root, parent.id)?;
            lock(tx, self.root, node.id)?;
            unlink(tx, self.root, parent.id, name, Kind::File, &[node.id])
        })
    }

    fn remove_dir(&self, path: &WsPath, recursive: bool) -> io::Result<()> {
        let comps = components(path)?;
        self.write(|tx| {
            let (parent, name, child) = lookup_parent(tx, self.root, &comps)?;
            let node = child.ok_or_else(|| errno(ENOENT))?;
            if node.kind != Kind::Dir {
                return Err(errno(ENOTDIR));
            }
            lock(tx, self.root, parent.id)?;
            let ids = if recursive {
                let ids = lock_subtree(tx, self.root, node.id)?;
                if ids.contains(&self.root) {
                    return Err(damaged(
                        "the root directory is inside a subdirectory".into(),
                    ));
                }
                ids
            } else {
                lock(tx, self.root, node.id)?;
                let row = tx
                    .query_typed_one(
                        "SELECT EXISTS(SELECT 1 FROM vfs_dentries WHERE parent = $1)",
                        &[(&node.id, Type::INT8)],
                    )
                    .map_err(pg_error)?;
                if row.get::<_, bool>(0) {
                    return Err(errno(ENOTEMPTY));
                }
                vec![node.id]
            };
            unlink(tx, self.root, parent.id, name, Kind::Dir, &ids)
        })
    }
}
