//! Backend-level tests of the virtual filesystems: layout, chunk boundaries, errno values,
//! consistent reads, transactions and sharing one store. Each case is a function over a
//! [`Fixture`] and runs twice, as `sqlite::<case>` (always) and `postgres::<case>` (when
//! `TOOLSHED_TEST_PG` names a database and the `postgres` feature is on). What only one backend
//! has (SQLite pragmas and read connections, PostgreSQL volumes and windows) is tested below the
//! table and in `pg/tests.rs`. The tool-level conformance table is in `tests/suite/vfs.rs`.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tempfile::TempDir;
use tool_core::workspace::{Backend, FileKind, FsRefusal, Root};
use tool_core::{Workspace, WsPath};

use super::*;

/// One store of one backend, with a backend and a workspace over it.
pub(super) struct Fixture {
    store: Store,
    fs: Arc<dyn Backend>,
    ws: Workspace,
}

enum Store {
    Sqlite {
        _dir: Arc<TempDir>,
        db: PathBuf,
        fs: Arc<SqliteFs>,
    },
    #[cfg(feature = "postgres")]
    Postgres {
        pool: tool_core::pg::PgPool,
        fs: Arc<PgFs>,
        /// Whether dropping this fixture drops the schema (the first handle does).
        owner: bool,
    },
}

pub(super) fn workspace_over(fs: Arc<dyn Backend>) -> Workspace {
    Workspace::with_backend(
        vec![Root {
            path: "/".into(),
            writable: true,
        }],
        fs,
    )
}

impl Fixture {
    fn sqlite() -> Fixture {
        let dir = Arc::new(tempfile::tempdir().unwrap());
        let db = dir.path().join("ws.db");
        Fixture::sqlite_at(dir, db)
    }

    fn sqlite_at(dir: Arc<TempDir>, db: PathBuf) -> Fixture {
        let fs = Arc::new(SqliteFs::open(&db).unwrap());
        Fixture {
            ws: workspace_over(fs.clone()),
            fs: fs.clone(),
            store: Store::Sqlite { _dir: dir, db, fs },
        }
    }

    /// A fresh schema with one volume, or `None` when no test database is configured.
    #[cfg(feature = "postgres")]
    fn postgres(label: &str) -> Option<Fixture> {
        let pool = tool_core::pg::test_pool(label)?;
        Some(Fixture::postgres_on(pool, true))
    }

    #[cfg(feature = "postgres")]
    fn postgres_on(pool: tool_core::pg::PgPool, owner: bool) -> Fixture {
        let fs = Arc::new(PgFs::open(pool.clone(), "main").unwrap());
        Fixture {
            ws: workspace_over(fs.clone()),
            fs: fs.clone(),
            store: Store::Postgres { pool, fs, owner },
        }
    }

    /// A second, independent handle on the same store: another connection to the SQLite file,
    /// or another pool on the same PostgreSQL schema (a second replica).
    fn reopen(&self) -> Fixture {
        match &self.store {
            Store::Sqlite { _dir, db, .. } => Fixture::sqlite_at(Arc::clone(_dir), db.clone()),
            #[cfg(feature = "postgres")]
            Store::Postgres { pool, .. } => {
                let url = std::env::var(tool_core::pg::TEST_URL_VAR).unwrap();
                let config = tool_core::pg::PgConfig::new(url).with_schema(pool.schema());
                let second = tool_core::pg::PgPool::connect(&config).unwrap();
                Fixture::postgres_on(second, false)
            }
        }
    }

    fn kind(&self) -> &'static str {
        self.fs.kind()
    }

    fn p(&self, rel: &str) -> WsPath {
        self.ws.resolve(rel).unwrap()
    }

    fn read(&self, rel: &str) -> Vec<u8> {
        read_all(&*self.fs, &self.p(rel))
    }

    /// The number of rows of `table` (of this volume, on PostgreSQL).
    fn count(&self, table: Table) -> i64 {
        match &self.store {
            Store::Sqlite { db, .. } => {
                let sql = match table {
                    Table::Inodes => "SELECT count(*) FROM inodes",
                    Table::Dentries => "SELECT count(*) FROM dentries",
                    Table::Chunks => "SELECT count(*) FROM chunks",
                };
                let conn = rusqlite::Connection::open(db).unwrap();
                conn.query_row(sql, [], |r| r.get(0)).unwrap()
            }
            #[cfg(feature = "postgres")]
            Store::Postgres { pool, fs, .. } => {
                let sql = match table {
                    Table::Inodes => "SELECT count(*) FROM vfs_inodes WHERE volume = $1",
                    Table::Dentries => {
                        "SELECT count(*) FROM vfs_dentries d JOIN vfs_inodes i ON i.id = d.inode
                         WHERE i.volume = $1"
                    }
                    Table::Chunks => {
                        "SELECT count(*) FROM vfs_chunks c JOIN vfs_inodes i ON i.id = c.inode
                         WHERE i.volume = $1"
                    }
                };
                let mut conn = pool.get().unwrap();
                conn.query_one(sql, &[&fs.root_inode()]).unwrap().get(0)
            }
        }
    }

    /// The three counts, to compare before and after.
    fn counts(&self) -> [i64; 3] {
        [Table::Inodes, Table::Dentries, Table::Chunks].map(|t| self.count(t))
    }

    /// The inode of `rel`.
    fn inode_id(&self, rel: &str) -> i64 {
        let path = self.p(rel);
        match &self.store {
            Store::Sqlite { fs, .. } => {
                lookup(&fs.inner.lock(), &components(&path).unwrap())
                    .unwrap()
                    .id
            }
            #[cfg(feature = "postgres")]
            Store::Postgres { fs, .. } => fs.inode_of(&path).unwrap(),
        }
    }

    /// The lengths of the chunks of the file `rel`, in order.
    fn chunk_lengths(&self, rel: &str) -> Vec<usize> {
        let id = self.inode_id(rel);
        let rows: Vec<(i64, usize)> = match &self.store {
            Store::Sqlite { fs, .. } => {
                let conn = fs.inner.lock();
                let mut stmt = conn
                    .prepare("SELECT idx, length(data) FROM chunks WHERE inode = ?1 ORDER BY idx")
                    .unwrap();
                stmt.query_map([id], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)? as usize))
                })
                .unwrap()
                .map(Result::unwrap)
                .collect()
            }
            #[cfg(feature = "postgres")]
            Store::Postgres { pool, .. } => pool
                .get()
                .unwrap()
                .query(
                    "SELECT idx, octet_length(data) FROM vfs_chunks WHERE inode = $1 ORDER BY idx",
                    &[&id],
                )
                .unwrap()
                .iter()
                .map(|r| (r.get::<_, i64>(0), r.get::<_, i32>(1) as usize))
                .collect(),
        };
        rows.into_iter()
            .enumerate()
            .map(|(i, (idx, len))| {
                assert_eq!(idx, i as i64, "chunk indexes must be dense");
                len
            })
            .collect()
    }

    /// Every chunk but the last is full, and the lengths add up to the size.
    fn assert_chunk_invariant(&self, rel: &str) {
        let lens = self.chunk_lengths(rel);
        let size = self.fs.metadata(&self.p(rel)).unwrap().len as usize;
        assert_eq!(lens.iter().sum::<usize>(), size, "{rel}: chunk sizes");
        assert_eq!(lens.len(), size.div_ceil(CHUNK), "{rel}: chunk count");
        if let Some((_, full)) = lens.split_last() {
            assert!(full.iter().all(|l| *l == CHUNK), "{rel}: {lens:?}");
        }
    }

    /// Holds what a writer creating a file in the root must wait for (SQLite's write lock, the
    /// root directory's row lock on PostgreSQL) until the returned function is called.
    fn hold_write_lock(&self) -> Box<dyn FnOnce()> {
        match &self.store {
            Store::Sqlite { db, .. } => {
                let other = rusqlite::Connection::open(db).unwrap();
                other.execute_batch("BEGIN IMMEDIATE").unwrap();
                Box::new(move || other.execute_batch("COMMIT").unwrap())
            }
            #[cfg(feature = "postgres")]
            Store::Postgres { pool, fs, .. } => {
                let mut conn = pool.get().unwrap();
                conn.batch_execute(&format!(
                    "BEGIN; SELECT 1 FROM vfs_inodes WHERE id = {} FOR UPDATE",
                    fs.root_inode()
                ))
                .unwrap();
                Box::new(move || conn.batch_execute("COMMIT").unwrap())
            }
        }
    }

    /// Inserts a root entry named `name` behind the backend's back; the database must refuse.
    fn forge_entry(&self, name: &str) -> Result<(), String> {
        match &self.store {
            Store::Sqlite { db, .. } => rusqlite::Connection::open(db)
                .unwrap()
                .execute(
                    "INSERT INTO dentries(parent, name, inode) VALUES (1, ?1, 1)",
                    [name],
                )
                .map(|_| ())
                .map_err(|e| e.to_string()),
            #[cfg(feature = "postgres")]
            Store::Postgres { pool, fs, .. } => {
                let root = fs.root_inode();
                let result = pool.get().unwrap().execute(
                    "INSERT INTO vfs_dentries(parent, name, inode) VALUES ($1, $2, $1)",
                    &[&root, &name],
                );
                match result {
                    Ok(_) => Ok(()),
                    Err(e) => {
                        assert_eq!(
                            e.code(),
                            Some(&tool_core::pg::postgres::error::SqlState::CHECK_VIOLATION),
                            "{name:?}: {e}"
                        );
                        Err(e.to_string())
                    }
                }
            }
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        #[cfg(feature = "postgres")]
        if let Store::Postgres {
            pool, owner: true, ..
        } = &self.store
        {
            // Best effort: a test database left behind is only clutter.
            let _ = pool.drop_schema();
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Table {
    Inodes,
    Dentries,
    Chunks,
}

pub(super) fn read_all(fs: &dyn Backend, path: &WsPath) -> Vec<u8> {
    let (mut r, meta) = fs.open_read(path).unwrap();
    let mut out = Vec::new();
    r.read_to_end(&mut out).unwrap();
    assert_eq!(out.len() as u64, meta.len);
    out
}

/// Deterministic bytes that differ per position and per `seed`.
pub(super) fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// A small xorshift generator, so the randomised tests are reproducible without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[track_caller]
fn assert_errno<T: std::fmt::Debug>(r: io::Result<T>, code: i32) {
    match r {
        Err(e) => assert_eq!(e.raw_os_error(), Some(code), "wrong error: {e}"),
        Ok(v) => panic!("expected errno {code}, got Ok({v:?})"),
    }
}

/// Runs each case on SQLite and, when a test database is configured, on PostgreSQL.
macro_rules! on_both_backends {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $case() {
                    super::$case(&super::Fixture::sqlite());
                }
            )*
        }

        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[test]
                fn $case() {
                    if let Some(f) = super::Fixture::postgres(stringify!($case)) {
                        super::$case(&f);
                    }
                }
            )*
        }
    };
}

on_both_backends!(
    a_new_store_holds_only_the_root_directory,
    reopening_keeps_everything_and_does_not_reinitialise,
    sizes_around_chunk_boundaries_round_trip,
    appends_and_replacements_match_a_model_byte_for_byte,
    an_open_reader_never_mixes_two_versions,
    errors_carry_the_errno_of_the_local_backend_and_change_nothing,
    names_are_checked_again_below_the_workspace,
    recursive_removal_deletes_the_whole_subtree_in_one_go,
    metadata_listing_and_identity,
    a_write_waits_for_another_writer_and_readers_do_not,
    two_handles_on_one_store_see_each_others_commits,
    paths_of_another_root_are_refused,
);

fn a_new_store_holds_only_the_root_directory(f: &Fixture) {
    assert_eq!(f.counts(), [1, 0, 0]);
    let root = f.fs.metadata(&f.p(".")).unwrap();
    assert_eq!(
        (root.kind, root.mode, root.nlink, root.len),
        (FileKind::Dir, 0o755, 2, 0)
    );
    assert!(f.fs.read_dir(&f.p(".")).unwrap().is_empty());
    assert!(["sqlite", "postgres"].contains(&f.kind()));
    assert_eq!(f.fs.local_dir(0), None);
    assert_eq!(f.ws.local_root(), None);
}

fn reopening_keeps_everything_and_does_not_reinitialise(f: &Fixture) {
    f.fs.write_atomic(&f.p("a/b.txt"), b"kept")
        .expect_err("no parent yet");
    f.fs.create_dir_all(&f.p("a")).unwrap();
    f.fs.write_atomic(&f.p("a/b.txt"), b"kept").unwrap();
    let before = f.counts();
    let again = f.reopen();
    assert_eq!(again.read("a/b.txt"), b"kept");
    assert_eq!(again.inode_id("a/b.txt"), f.inode_id("a/b.txt"));
    assert_eq!(again.counts(), before, "opening again added rows");
}

fn sizes_around_chunk_boundaries_round_trip(f: &Fixture) {
    for (i, len) in [
        0,
        1,
        CHUNK - 1,
        CHUNK,
        CHUNK + 1,
        2 * CHUNK - 1,
        2 * CHUNK,
        2 * CHUNK + 1,
        3 * CHUNK + 17,
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("f{len}");
        let data = pattern(len, i as u8);
        f.fs.write_atomic(&f.p(&name), &data).unwrap();
        assert_eq!(f.read(&name), data, "{len} bytes");
        assert_eq!(f.fs.metadata(&f.p(&name)).unwrap().len, len as u64);
        f.assert_chunk_invariant(&name);
        // Replacing with a different size leaves no stale chunk behind.
        let shorter = pattern(len / 2, 7);
        f.fs.write_atomic(&f.p(&name), &shorter).unwrap();
        assert_eq!(f.read(&name), shorter);
        f.assert_chunk_invariant(&name);
    }
}

fn appends_and_replacements_match_a_model_byte_for_byte(f: &Fixture) {
    let path = f.p("model.bin");
    let mut model: Vec<u8> = Vec::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for step in 0..150u32 {
        let len = match rng.below(4) {
            0 => 0,
            1 => rng.below(16) as usize,
            2 => CHUNK - 2 + rng.below(5) as usize,
            _ => rng.below(3 * CHUNK as u64) as usize,
        };
        let data = pattern(len, step as u8);
        if rng.below(5) == 0 {
            f.fs.write_atomic(&path, &data).unwrap();
            model = data;
        } else {
            f.fs.append(&path, &data).unwrap();
            model.extend_from_slice(&data);
        }
        assert_eq!(f.read("model.bin"), model, "step {step}");
        f.assert_chunk_invariant("model.bin");

        // Random seeks and short reads agree with the model too.
        let (mut r, _) = f.fs.open_read(&path).unwrap();
        for _ in 0..4 {
            let at = rng.below(model.len() as u64 + 10);
            let want = rng.below(2 * CHUNK as u64) as usize;
            r.seek(SeekFrom::Start(at)).unwrap();
            let mut got = Vec::new();
            (&mut r).take(want as u64).read_to_end(&mut got).unwrap();
            let lo = (at as usize).min(model.len());
            let hi = (lo + want).min(model.len());
            assert_eq!(got, &model[lo..hi], "step {step}: read {want} at {at}");
        }
    }
}

/// SQLite readers keep a snapshot; PostgreSQL readers fail with "the file changed while it
/// was being read" once they need bytes of a replaced version. Neither ever mixes versions, and
/// appends disturb neither.
fn an_open_reader_never_mixes_two_versions(f: &Fixture) {
    // Larger than a PostgreSQL reader's window, so the reader comes back for more.
    let old = pattern(40 * CHUNK + 100, 1);
    let new = pattern(45 * CHUNK + 1, 2);
    f.fs.write_atomic(&f.p("f"), &old).unwrap();

    let (mut r, meta) = f.fs.open_read(&f.p("f")).unwrap();
    assert_eq!(meta.len, old.len() as u64);
    let mut seen = vec![0u8; 10];
    r.read_exact(&mut seen).unwrap();
    // Replaced and appended to while the reader is part-way through.
    f.fs.write_atomic(&f.p("f"), &new).unwrap();
    f.fs.append(&f.p("f"), b"more").unwrap();
    let rest = r.read_to_end(&mut seen);
    assert_eq!(&seen[..], &old[..seen.len()], "the reader mixed versions");
    match f.kind() {
        "sqlite" => {
            rest.unwrap();
            assert_eq!(seen, old);
        }
        _ => {
            let err = rest.unwrap_err();
            assert_eq!(
                err.to_string(),
                "the file changed while it was being read; read it again"
            );
            assert!(seen.len() < old.len());
        }
    }
    drop(r);

    let mut expected = new.clone();
    expected.extend_from_slice(b"more");
    assert_eq!(f.read("f"), expected);

    // Appends leave the bytes a reader knows alone: it reads the file as it was when opened.
    let (mut r, meta) = f.fs.open_read(&f.p("f")).unwrap();
    assert_eq!(meta.len, expected.len() as u64);
    let mut head = vec![0u8; 100];
    r.read_exact(&mut head).unwrap();
    f.fs.append(&f.p("f"), &pattern(3 * CHUNK + 5, 9)).unwrap();
    r.read_to_end(&mut head).unwrap();
    assert_eq!(head, expected);
    drop(r);

    // A file deleted under an open reader: SQLite still reads its snapshot, PostgreSQL says so.
    let (mut r, _) = f.fs.open_read(&f.p("f")).unwrap();
    let whole = f.read("f");
    f.fs.remove_file(&f.p("f")).unwrap();
    let mut all = Vec::new();
    match (f.kind(), r.read_to_end(&mut all)) {
        ("sqlite", result) => {
            result.unwrap();
            assert_eq!(all, whole);
        }
        (_, Err(e)) => {
            assert!(
                e.to_string().contains("changed while it was being read"),
                "{e}"
            );
            assert_eq!(&all[..], &whole[..all.len()]);
        }
        (_, Ok(n)) => panic!("read {n} bytes of a deleted file"),
    }
}

fn errors_carry_the_errno_of_the_local_backend_and_change_nothing(f: &Fixture) {
    f.fs.create_dir_all(&f.p("d/sub")).unwrap();
    f.fs.write_atomic(&f.p("d/sub/x"), b"x").unwrap();
    f.fs.write_atomic(&f.p("file"), b"content").unwrap();
    let before = f.counts();

    let missing = f.fs.metadata(&f.p("nope")).unwrap_err();
    assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    assert_eq!(missing.raw_os_error(), Some(ENOENT));
    assert_errno(f.fs.open_read(&f.p("nope")).map(|_| ()), ENOENT);
    assert_errno(f.fs.remove_file(&f.p("nope")), ENOENT);
    assert_errno(f.fs.remove_dir(&f.p("nope"), true), ENOENT);
    assert_errno(f.fs.read_dir(&f.p("nope")), ENOENT);
    assert_errno(f.fs.write_atomic(&f.p("nope/x"), b""), ENOENT);
    assert_errno(f.fs.append(&f.p("nope/x"), b""), ENOENT);

    assert_errno(f.fs.metadata(&f.p("file/x")), ENOTDIR);
    assert_errno(f.fs.write_atomic(&f.p("file/x"), b""), ENOTDIR);
    assert_errno(f.fs.create_dir_all(&f.p("file/x")), ENOTDIR);
    assert_errno(f.fs.create_dir_all(&f.p("file")), ENOTDIR);
    assert_errno(f.fs.read_dir(&f.p("file")), ENOTDIR);
    assert_errno(f.fs.remove_dir(&f.p("file"), false), ENOTDIR);
    assert_errno(f.fs.remove_dir(&f.p("file"), true), ENOTDIR);

    assert_errno(f.fs.write_atomic(&f.p("d"), b""), EISDIR);
    assert_errno(f.fs.append(&f.p("d"), b""), EISDIR);
    assert_errno(f.fs.remove_file(&f.p("d")), EISDIR);

    assert_errno(f.fs.remove_dir(&f.p("d"), false), ENOTEMPTY);
    assert_errno(f.fs.remove_dir(&f.p("d/sub"), false), ENOTEMPTY);

    let long = "n".repeat(256);
    assert_errno(f.fs.write_atomic(&f.p(&long), b""), ENAMETOOLONG);
    assert_errno(
        f.fs.create_dir_all(&f.p(&format!("d/{long}"))),
        ENAMETOOLONG,
    );
    f.fs.write_atomic(&f.p(&"n".repeat(255)), b"ok").unwrap();
    f.fs.remove_file(&f.p(&"n".repeat(255))).unwrap();

    let dir_read = f.fs.open_read(&f.p("d")).map(|_| ()).unwrap_err();
    assert!(matches!(
        dir_read
            .get_ref()
            .and_then(|e| e.downcast_ref::<FsRefusal>()),
        Some(FsRefusal::NotRegular("directory"))
    ));

    assert_eq!(
        before,
        f.counts(),
        "a failed operation changed the database"
    );
    assert_eq!(f.read("file"), b"content");
}

fn names_are_checked_again_below_the_workspace(f: &Fixture) {
    for bad in ["", ".", "..", "a/b", "nul\0byte"] {
        assert_eq!(
            check_name(bad).unwrap_err().kind(),
            io::ErrorKind::InvalidInput,
            "{bad:?}"
        );
    }
    assert_eq!(
        check_name(&"é".repeat(128)).unwrap_err().raw_os_error(),
        Some(ENAMETOOLONG),
        "the limit is 255 bytes, not characters"
    );
    for good in ["a", ".hidden", "...", "with space", "ünïcödé", "a\\b"] {
        check_name(good).unwrap();
    }
    // The database refuses them as well, should another writer try.
    for bad in ["", ".", "..", "a/b", &"é".repeat(128)] {
        assert!(f.forge_entry(bad).is_err(), "{bad:?}");
    }
    assert_eq!(f.counts(), [1, 0, 0]);
}

fn recursive_removal_deletes_the_whole_subtree_in_one_go(f: &Fixture) {
    for rel in ["t/a/1", "t/a/2", "t/b/c/3", "t/4", "keep/5"] {
        let p = f.p(rel);
        f.fs.create_dir_all(&p.parent().unwrap()).unwrap();
        f.fs.write_atomic(&p, &pattern(2 * CHUNK + 1, 0)).unwrap();
    }
    f.fs.create_dir_all(&f.p("t/empty")).unwrap();
    assert_eq!(f.fs.metadata(&f.p(".")).unwrap().nlink, 4); // ., .., t/.., keep/..
    f.fs.remove_dir(&f.p("t"), true).unwrap();

    // Left: root, keep, keep/5; two entries; keep/5's three chunks.
    assert_eq!(f.counts(), [3, 2, 3]);
    assert_eq!(f.read("keep/5"), pattern(2 * CHUNK + 1, 0));
    assert_eq!(f.fs.metadata(&f.p(".")).unwrap().nlink, 3);
    let names: Vec<_> =
        f.fs.read_dir(&f.p("."))
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
    assert_eq!(names, ["keep"]);

    // An empty directory goes without recursive; a file goes with remove_file.
    f.fs.create_dir_all(&f.p("e")).unwrap();
    f.fs.remove_dir(&f.p("e"), false).unwrap();
    f.fs.remove_file(&f.p("keep/5")).unwrap();
    assert_eq!(f.count(Table::Chunks), 0);
    assert_eq!(f.count(Table::Inodes), 2);
}

fn metadata_listing_and_identity(f: &Fixture) {
    f.fs.create_dir_all(&f.p("d/e")).unwrap();
    f.fs.create_dir_all(&f.p("d/e")).unwrap(); // idempotent
    f.fs.create_dir_all(&f.p(".")).unwrap(); // the root exists
    f.fs.write_atomic(&f.p("d/f.txt"), b"hello").unwrap();

    let d = f.fs.metadata(&f.p("d")).unwrap();
    assert_eq!(
        (d.kind, d.mode, d.nlink, d.len),
        (FileKind::Dir, 0o755, 3, 0)
    );
    let file = f.fs.metadata(&f.p("d/f.txt")).unwrap();
    assert_eq!(
        (file.kind, file.mode, file.nlink, file.len),
        (FileKind::File, 0o644, 1, 5)
    );
    assert!((file.modified - now()).abs() < 60);

    let mut entries = f.fs.read_dir(&f.p("d")).unwrap();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let got: Vec<_> = entries.iter().map(|e| (e.name.as_str(), e.kind)).collect();
    assert_eq!(got, [("e", FileKind::Dir), ("f.txt", FileKind::File)]);
    assert!(f.fs.read_dir(&f.p("d/e")).unwrap().is_empty());

    // Replacing keeps the inode (and so its mode); appending too.
    let before = f.inode_id("d/f.txt");
    f.fs.write_atomic(&f.p("d/f.txt"), b"bye").unwrap();
    f.fs.append(&f.p("d/f.txt"), b"!").unwrap();
    assert_eq!(f.inode_id("d/f.txt"), before);
    assert_eq!(f.read("d/f.txt"), b"bye!");
    // Appending creates a missing file.
    f.fs.append(&f.p("d/new"), b"").unwrap();
    assert_eq!(f.fs.metadata(&f.p("d/new")).unwrap().len, 0);
    assert_eq!(f.read("d/new"), b"");
}

fn a_write_waits_for_another_writer_and_readers_do_not(f: &Fixture) {
    let release = f.hold_write_lock();
    let fs = Arc::clone(&f.fs);
    let path = f.p("waited");
    let writer = std::thread::spawn(move || fs.write_atomic(&path, b"after the lock"));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!writer.is_finished(), "the write did not wait for the lock");
    // Readers are not blocked by the pending writer.
    assert_eq!(f.fs.read_dir(&f.p(".")).unwrap().len(), 0);
    assert_eq!(f.fs.metadata(&f.p(".")).unwrap().kind, FileKind::Dir);
    release();
    writer.join().unwrap().unwrap();
    assert_eq!(f.read("waited"), b"after the lock");
}

fn two_handles_on_one_store_see_each_others_commits(f: &Fixture) {
    let g = f.reopen();
    f.fs.write_atomic(&f.p("shared.txt"), b"from one").unwrap();
    assert_eq!(g.read("shared.txt"), b"from one");
    g.fs.append(&g.p("shared.txt"), b", and two").unwrap();
    assert_eq!(f.read("shared.txt"), b"from one, and two");

    // Many writers in parallel on two handles: every append lands exactly once.
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let (fs, path) = if i % 2 == 0 {
                (Arc::clone(&f.fs), f.p("log"))
            } else {
                (Arc::clone(&g.fs), g.p("log"))
            };
            std::thread::spawn(move || {
                for j in 0..20 {
                    fs.append(&path, format!("{i}:{j}\n").as_bytes()).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let log = String::from_utf8(f.read("log")).unwrap();
    let mut lines: Vec<_> = log.lines().collect();
    lines.sort();
    let mut expected: Vec<String> = (0..8)
        .flat_map(|i| (0..20).map(move |j| format!("{i}:{j}")))
        .collect();
    expected.sort();
    assert_eq!(lines, expected);
    f.assert_chunk_invariant("log");
}

fn paths_of_another_root_are_refused(f: &Fixture) {
    // A WsPath from a workspace with a second root cannot reach this single-root filesystem.
    let dir = tempfile::tempdir().unwrap();
    let other =
        Workspace::local_with_roots(dir.path(), vec![(std::env::temp_dir(), true)]).unwrap();
    let foreign = other
        .resolve(&std::env::temp_dir().join("x").to_string_lossy())
        .unwrap();
    assert_eq!(foreign.root(), 1);
    let err = f.fs.metadata(&foreign).unwrap_err();
    assert!(matches!(
        err.get_ref().and_then(|e| e.downcast_ref::<FsRefusal>()),
        Some(FsRefusal::Escapes)
    ));
}

// SQLite only: the file, its settings and its read connections.

/// A SQLite fixture with the typed handle.
fn sqlite_fixture() -> (Fixture, Arc<SqliteFs>, PathBuf) {
    let f = Fixture::sqlite();
    let (fs, db) = match &f.store {
        Store::Sqlite { fs, db, .. } => (Arc::clone(fs), db.clone()),
        #[cfg(feature = "postgres")]
        Store::Postgres { .. } => unreachable!("Fixture::sqlite makes a SQLite store"),
    };
    (f, fs, db)
}

#[test]
fn a_new_sqlite_file_gets_the_layout_and_the_settings() {
    let (f, fs, _) = sqlite_fixture();
    assert_eq!(f.counts(), [1, 0, 0]);
    let conn = fs.inner.lock();
    let value = |sql: &str| -> String {
        conn.query_row(sql, [], |r| r.get::<_, rusqlite::types::Value>(0))
            .map(|v| format!("{v:?}"))
            .unwrap()
    };
    assert_eq!(
        value("SELECT count(*) FROM inodes WHERE id = 1 AND kind = 'dir' AND nlink = 2"),
        "Integer(1)"
    );
    assert_eq!(
        value("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'"),
        format!("Integer({})", schema::SCHEMA_VERSION)
    );
    assert_eq!(value("PRAGMA journal_mode"), r#"Text("wal")"#);
    assert_eq!(value("PRAGMA foreign_keys"), "Integer(1)");
    assert_eq!(value("PRAGMA synchronous"), "Integer(1)"); // NORMAL
    assert_eq!(value("PRAGMA busy_timeout"), "Integer(5000)");
    assert_eq!(
        value("PRAGMA application_id"),
        format!("Integer({})", schema::APPLICATION_ID)
    );
    assert_eq!(f.kind(), "sqlite");
}

#[test]
fn foreign_and_newer_databases_and_memory_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE notes(x TEXT); INSERT INTO notes VALUES ('mine');")
        .unwrap();
    let err = SqliteFs::open(&other).unwrap_err();
    assert!(err.to_string().contains("another program"), "{err}");
    // Nothing was added to it.
    let conn = rusqlite::Connection::open(&other).unwrap();
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tables, 1);

    let newer = dir.path().join("newer.db");
    drop(SqliteFs::open(&newer).unwrap());
    rusqlite::Connection::open(&newer)
        .unwrap()
        .execute(
            "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    let err = SqliteFs::open(&newer).unwrap_err();
    assert!(err.to_string().contains("newer"), "{err}");

    let not_sqlite = dir.path().join("text.db");
    std::fs::write(
        &not_sqlite,
        "this is not a database, just some text in a file",
    )
    .unwrap();
    assert!(SqliteFs::open(&not_sqlite).is_err());

    assert_eq!(
        SqliteFs::open(Path::new(":memory:")).unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    assert!(SqliteFs::open(&dir.path().join("missing/dir/ws.db")).is_err());
}

#[test]
fn the_sqlite_reader_fetches_only_the_chunks_it_reads() {
    let (f, fs, _) = sqlite_fixture();
    let data = pattern(256 * CHUNK, 3); // 1 MiB
    fs.write_atomic(&f.p("big"), &data).unwrap();
    let (mut r, meta) = fs.open_chunks(&f.p("big")).unwrap();
    assert_eq!(meta.len, data.len() as u64);
    assert_eq!(r.fetches, 0, "opening reads no data");

    r.seek(SeekFrom::Start(600_000)).unwrap();
    let mut buf = [0u8; 10];
    r.read_exact(&mut buf).unwrap();
    assert_eq!(&buf[..], &data[600_000..600_010]);
    assert_eq!(r.fetches, 1);

    // Crossing one boundary costs one more chunk; re-reading the held one costs none.
    let mut buf = vec![0u8; CHUNK];
    r.read_exact(&mut buf).unwrap();
    assert_eq!(&buf[..], &data[600_010..600_010 + CHUNK]);
    assert_eq!(r.fetches, 2);
    r.seek(SeekFrom::Current(-5)).unwrap();
    r.read_exact(&mut [0u8; 5]).unwrap();
    assert_eq!(r.fetches, 2);

    // Seeking from the end and past the end.
    assert_eq!(r.seek(SeekFrom::End(-3)).unwrap(), data.len() as u64 - 3);
    let mut tail = Vec::new();
    r.read_to_end(&mut tail).unwrap();
    assert_eq!(tail, &data[data.len() - 3..]);
    r.seek(SeekFrom::End(100)).unwrap();
    assert_eq!(r.read(&mut [0u8; 8]).unwrap(), 0);
    assert_eq!(
        r.seek(SeekFrom::Current(-(data.len() as i64) - 1_000))
            .unwrap_err()
            .kind(),
        io::ErrorKind::InvalidInput
    );
}

#[test]
fn sqlite_readers_return_their_connections_to_a_bounded_pool() {
    let (f, fs, _) = sqlite_fixture();
    fs.write_atomic(&f.p("f"), b"x").unwrap();
    let readers: Vec<_> = (0..IDLE_READERS + 3)
        .map(|_| fs.open_read(&f.p("f")).unwrap())
        .collect();
    drop(readers);
    let idle = fs.inner.readers.lock().unwrap();
    assert_eq!(idle.len(), IDLE_READERS);
    assert!(
        idle.iter().all(|c| c.is_autocommit()),
        "a transaction leaked"
    );
    drop(idle);
    // A failed open gives its connection back too, with no transaction left open.
    fs.open_read(&f.p("missing")).map(|_| ()).unwrap_err();
    assert!(
        fs.inner
            .readers
            .lock()
            .unwrap()
            .iter()
            .all(|c| c.is_autocommit())
    );
}
