//! A file handle over the chunks of one inode: `Read + Seek`, one chunk in memory at a time.

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension};

use super::{CHUNK, Inner, SqlResult, damaged};

/// Reads a file lazily: each chunk is fetched by one query when the position reaches it, and
/// only the current chunk is kept.
///
/// Consistency: the reader owns a connection of its own (taken from a small pool) with a read
/// transaction open from the moment the file was looked up until the reader is dropped. Under
/// WAL that transaction is a snapshot, so every chunk comes from the same version of the file as
/// the size reported at open, even while other handles or processes replace or append to it; a
/// concurrent `write_atomic` is seen by the next `open_read`, never half by this one. The cost is
/// that a reader kept open for a long time stops checkpoints from shrinking the WAL past it.
pub(crate) struct ChunkReader {
    conn: Option<Connection>,
    pool: Arc<Inner>,
    inode: i64,
    size: u64,
    pos: u64,
    current: Option<(u64, Vec<u8>)>,
    #[cfg(test)]
    pub(crate) fetches: u64,
}

impl ChunkReader {
    /// `conn` must have the read transaction open in which `inode` and `size` were read.
    pub(crate) fn new(conn: Connection, pool: Arc<Inner>, inode: i64, size: u64) -> ChunkReader {
        ChunkReader {
            conn: Some(conn),
            pool,
            inode,
            size,
            pos: 0,
            current: None,
            #[cfg(test)]
            fetches: 0,
        }
    }

    /// The chunk `idx`, fetched unless it is the one already held.
    fn chunk(&mut self, idx: u64) -> io::Result<&[u8]> {
        if self.current.as_ref().is_none_or(|(i, _)| *i != idx) {
            let conn = self
                .conn
                .as_ref()
                .ok_or_else(|| io::Error::other("the file handle is closed"))?;
            let data: Vec<u8> = conn
                .prepare_cached("SELECT data FROM chunks WHERE inode = ?1 AND idx = ?2")
                .sql()?
                .query_row(rusqlite::params![self.inode, idx as i64], |r| r.get(0))
                .optional()
                .sql()?
                .ok_or_else(|| {
                    damaged(format!("chunk {idx} of inode {} is missing", self.inode))
                })?;
            let expected = (self.size - idx * CHUNK as u64).min(CHUNK as u64) as usize;
            if data.len() != expected {
                return Err(damaged(format!(
                    "chunk {idx} of inode {} has {} bytes where {expected} were expected",
                    self.inode,
                    data.len()
                )));
            }
            #[cfg(test)]
            {
                self.fetches += 1;
            }
            self.current = Some((idx, data));
        }
        Ok(self
            .current
            .as_ref()
            .map(|(_, d)| d.as_slice())
            .unwrap_or(&[]))
    }
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut filled = 0;
        while filled < buf.len() && self.pos < self.size {
            let idx = self.pos / CHUNK as u64;
            let off = (self.pos % CHUNK as u64) as usize;
            let data = match self.chunk(idx) {
                Ok(d) => d,
                // Hand over what was read; the error comes back on the next call.
                Err(_) if filled > 0 => break,
                Err(e) => return Err(e),
            };
            let take = (data.len() - off).min(buf.len() - filled);
            buf[filled..filled + take].copy_from_slice(&data[off..off + take]);
            filled += take;
            self.pos += take as u64;
        }
        Ok(filled)
    }
}

impl Seek for ChunkReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.pos = seek_target(self.pos, self.size, to)?;
        Ok(self.pos)
    }
}

/// Where a seek from `pos` in a file of `size` bytes lands (both virtual readers use it). Past
/// the end is allowed, as for a file on disk; before the start is an error.
pub(crate) fn seek_target(pos: u64, size: u64, to: SeekFrom) -> io::Result<u64> {
    let next = match to {
        SeekFrom::Start(n) => Some(n),
        SeekFrom::End(d) => size.checked_add_signed(d),
        SeekFrom::Current(d) => pos.checked_add_signed(d),
    };
    next.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "cannot seek before the start of the file",
        )
    })
}

impl Drop for ChunkReader {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.give_back_reader(conn);
        }
    }
}

impl fmt::Debug for ChunkReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChunkReader")
            .field("inode", &self.inode)
            .field("size", &self.size)
            .field("pos", &self.pos)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod seek_tests {
    use std::io::SeekFrom;

    use super::seek_target;

    #[test]
    fn seeks_land_where_a_file_on_disk_would_and_never_before_the_start() {
        // (position, size, seek, landing or None for the error)
        let cases = [
            (5, 10, SeekFrom::Start(3), Some(3)),
            (5, 10, SeekFrom::Start(20), Some(20)),
            (5, 10, SeekFrom::End(-10), Some(0)),
            (5, 10, SeekFrom::End(-11), None),
            (5, 10, SeekFrom::End(4), Some(14)),
            (5, 10, SeekFrom::Current(-5), Some(0)),
            (5, 10, SeekFrom::Current(-6), None),
            (u64::MAX, 10, SeekFrom::Current(1), None),
        ];
        for (pos, size, to, want) in cases {
            let got = seek_target(pos, size, to).ok();
            assert_eq!(got, want, "{pos} {size} {to:?}");
        }
    }
}
