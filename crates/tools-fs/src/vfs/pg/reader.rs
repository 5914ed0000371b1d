//! A file handle over the chunks of one inode in PostgreSQL: `Read + Seek`, one window of
//! chunks in memory at a time, and no connection held between reads.

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom};

use tool_core::pg::PgPool;
use tool_core::pg::postgres::Client;
use tool_core::pg::postgres::types::Type;
use tool_core::workspace::Metadata;

use super::{CHUNK, Inode, WINDOW, damaged, pg_error, pool_error};
use crate::vfs::reader::seek_target;

/// Reads a file lazily: the window of [`WINDOW`] chunks holding the position is fetched by one
/// query (on a connection taken from the pool for that query only) when the position reaches
/// it, and only that window is kept.
///
/// Consistency: every fetch reads the inode's generation and size in the same statement as the
/// chunks, so they come from one snapshot. The generation must be the one seen at open, and the
/// size at least the size seen then (appends keep the generation and only add bytes after
/// it); otherwise the file was replaced or deleted since it was opened and the read fails with
/// [`changed`]. The reader serves the first `size` bytes of the version it opened, or that
/// error, never a mix of two versions.
pub(super) struct PgReader {
    pool: PgPool,
    volume: i64,
    inode: i64,
    size: u64,
    generation: i64,
    pos: u64,
    /// The bytes held: the file's bytes from `start` to `start + held.len()`.
    start: u64,
    held: Vec<u8>,
    #[cfg(test)]
    pub(super) fetches: u64,
}

/// The error of a read that found the file replaced or deleted since it was opened.
fn changed() -> io::Error {
    io::Error::other("the file changed while it was being read; read it again")
}

impl PgReader {
    /// Opens `node` (a file found by a lookup) and fetches its first window on `conn`, adopting
    /// the version that fetch sees (which is the lookup's, unless a write landed in between).
    pub(super) fn open(
        conn: &mut Client,
        pool: PgPool,
        volume: i64,
        node: &Inode,
    ) -> io::Result<(PgReader, Metadata)> {
        let mut reader = PgReader {
            pool,
            volume,
            inode: node.id,
            size: 0,
            generation: 0,
            pos: 0,
            start: 0,
            held: Vec::new(),
            #[cfg(test)]
            fetches: 0,
        };
        let fetched = reader.query(conn, 0)?;
        // A file deleted between the lookup and this fetch is simply not there.
        let Some(version) = fetched.version else {
            return Err(io::Error::from_raw_os_error(super::ENOENT));
        };
        reader.size = u64::try_from(version.size)
            .map_err(|_| damaged(format!("inode {} has size {}", node.id, version.size)))?;
        reader.generation = version.generation;
        reader.held = reader.assemble(0, fetched.chunks)?;
        let mut meta = node.metadata()?;
        meta.len = reader.size;
        meta.modified = version.mtime;
        Ok((reader, meta))
    }

    /// How many chunks the opened version has.
    fn chunk_count(&self) -> u64 {
        self.size.div_ceil(CHUNK as u64)
    }

    /// One statement: the inode's version and the chunks `first..first + WINDOW`.
    fn query(&mut self, conn: &mut Client, first: u64) -> io::Result<Fetched> {
        let first = first as i64;
        let end = first + WINDOW as i64;
        let rows = conn
            .query_typed(
                "SELECT i.size, i.generation, i.mtime, c.idx, c.data
                 FROM vfs_inodes i
                 LEFT JOIN vfs_chunks c ON c.inode = i.id AND c.idx >= $3 AND c.idx < $4
                 WHERE i.id = $1 AND i.volume = $2
                 ORDER BY c.idx",
                &[
                    (&self.inode, Type::INT8),
                    (&self.volume, Type::INT8),
                    (&first, Type::INT8),
                    (&end, Type::INT8),
                ],
            )
            .map_err(pg_error)?;
        #[cfg(test)]
        {
            self.fetches += 1;
        }
        let version = rows.first().map(|r| Version {
            size: r.get(0),
            generation: r.get(1),
            mtime: r.get(2),
        });
        let chunks = rows
            .into_iter()
            .filter_map(|r| {
                let idx: Option<i64> = r.get(3);
                idx.map(|i| (i, r.get::<_, Vec<u8>>(4)))
            })
            .collect();
        Ok(Fetched { version, chunks })
    }

    /// The bytes of the opened version from chunk `first` on (up to [`WINDOW`] chunks), checked
    /// against the layout: every chunk present, none shorter than the version needs.
    fn assemble(&self, first: u64, chunks: Vec<(i64, Vec<u8>)>) -> io::Result<Vec<u8>> {
        let end = (first + WINDOW).min(self.chunk_count());
        let mut out = Vec::with_capacity(((end.saturating_sub(first)) as usize) * CHUNK);
        let mut chunks = chunks.into_iter();
        for idx in first..end {
            let expected = (self.size - idx * CHUNK as u64).min(CHUNK as u64) as usize;
            let data = match chunks.next() {
                Some((i, data)) if i == idx as i64 => data,
                _ => {
                    return Err(damaged(format!(
                        "chunk {idx} of inode {} is missing",
                        self.inode
                    )));
                }
            };
            // An append since the open may have extended the last chunk; the bytes this
            // version knows are its prefix.
            let last_of_version = idx + 1 == self.chunk_count();
            if data.len() < expected || (data.len() > expected && !last_of_version) {
                return Err(damaged(format!(
                    "chunk {idx} of inode {} has {} bytes where {expected} were expected",
                    self.inode,
                    data.len()
                )));
            }
            out.extend_from_slice(&data[..expected]);
        }
        Ok(out)
    }

    /// Makes the window holding chunk `idx` the one held.
    fn fetch(&mut self, idx: u64) -> io::Result<()> {
        let mut conn = self.pool.get().map_err(pool_error)?;
        let fetched = self.query(&mut conn, idx)?;
        drop(conn);
        match fetched.version {
            Some(v) if v.generation == self.generation && v.size >= self.size as i64 => {}
            _ => return Err(changed()),
        }
        self.held = self.assemble(idx, fetched.chunks)?;
        self.start = idx * CHUNK as u64;
        Ok(())
    }
}

/// What one fetch saw of the inode.
struct Version {
    size: i64,
    generation: i64,
    mtime: i64,
}

struct Fetched {
    /// `None` when the inode is gone.
    version: Option<Version>,
    chunks: Vec<(i64, Vec<u8>)>,
}

impl Read for PgReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut filled = 0;
        while filled < buf.len() && self.pos < self.size {
            let held_end = self.start + self.held.len() as u64;
            if self.pos < self.start || self.pos >= held_end {
                match self.fetch(self.pos / CHUNK as u64) {
                    Ok(()) => {}
                    // Hand over what was read; the error comes back on the next call.
                    Err(_) if filled > 0 => break,
                    Err(e) => return Err(e),
                }
            }
            let off = (self.pos - self.start) as usize;
            let take = (self.held.len() - off).min(buf.len() - filled);
            buf[filled..filled + take].copy_from_slice(&self.held[off..off + take]);
            filled += take;
            self.pos += take as u64;
        }
        Ok(filled)
    }
}

impl Seek for PgReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.pos = seek_target(self.pos, self.size, to)?;
        Ok(self.pos)
    }
}

impl fmt::Debug for PgReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgReader")
            .field("inode", &self.inode)
            .field("size", &self.size)
            .field("generation", &self.generation)
            .field("pos", &self.pos)
            .finish_non_exhaustive()
    }
}
