//! Backend-level tests of the SQLite filesystem: layout, chunk boundaries, errno values,
//! snapshots, transactions and sharing one file. The tool-level conformance table that runs
//! against both backends is in `tests/suite/vfs.rs`.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tempfile::TempDir;
use tool_core::workspace::{Backend, FileKind, FsRefusal, Root};
use tool_core::{Workspace, WsPath};

use super::*;

struct Fixture {
    _dir: TempDir,
    db: PathBuf,
    fs: Arc<SqliteFs>,
    ws: Workspace,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.db");
    let (fs, ws) = open(&db);
    Fixture {
        _dir: dir,
        db,
        fs,
        ws,
    }
}

fn open(db: &Path) -> (Arc<SqliteFs>, Workspace) {
    let fs = Arc::new(SqliteFs::open(db).unwrap());
    let ws = Workspace::with_backend(
        vec![Root {
            path: "/".into(),
            writable: true,
        }],
        fs.clone(),
    );
    (fs, ws)
}

impl Fixture {
    fn p(&self, rel: &str) -> WsPath {
        self.ws.resolve(rel).unwrap()
    }

    fn read(&self, rel: &str) -> Vec<u8> {
        read_all(&self.fs, &self.p(rel))
    }

    /// One count of rows of `table` (a raw query through a separate connection).
    fn count(&self, sql: &str) -> i64 {
        let conn = rusqlite::Connection::open(&self.db).unwrap();
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    /// The lengths of the chunks of the file `rel`, in order.
    fn chunk_lengths(&self, rel: &str) -> Vec<usize> {
        let conn = self.fs.inner.lock();
        let id = lookup(&conn, &components(&self.p(rel)).unwrap())
            .unwrap()
            .id;
        let mut stmt = conn
            .prepare("SELECT idx, length(data) FROM chunks WHERE inode = ?1 ORDER BY idx")
            .unwrap();
        let rows = stmt
            .query_map([id], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)? as usize))
            })
            .unwrap();
        rows.enumerate()
            .map(|(i, r)| {
                let (idx, len) = r.unwrap();
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
}

fn read_all(fs: &SqliteFs, path: &WsPath) -> Vec<u8> {
    let (mut r, meta) = fs.open_read(path).unwrap();
    let mut out = Vec::new();
    r.read_to_end(&mut out).unwrap();
    assert_eq!(out.len() as u64, meta.len);
    out
}

/// Deterministic bytes that differ per position and per `seed`.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
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

#[test]
fn a_new_file_gets_the_layout_the_root_and_the_settings() {
    let f = fixture();
    assert_eq!(f.count("SELECT count(*) FROM inodes"), 1);
    assert_eq!(
        f.count("SELECT count(*) FROM inodes WHERE id = 1 AND kind = 'dir' AND nlink = 2"),
        1
    );
    assert_eq!(
        f.count("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'"),
        schema::SCHEMA_VERSION
    );
    let conn = f.fs.inner.lock();
    let pragma = |name: &str| -> String {
        conn.query_row(&format!("PRAGMA {name}"), [], |r| {
            r.get::<_, rusqlite::types::Value>(0)
        })
        .map(|v| format!("{v:?}"))
        .unwrap()
    };
    assert_eq!(pragma("journal_mode"), r#"Text("wal")"#);
    assert_eq!(pragma("foreign_keys"), "Integer(1)");
    assert_eq!(pragma("synchronous"), "Integer(1)"); // NORMAL
    assert_eq!(pragma("busy_timeout"), "Integer(5000)");
    assert_eq!(
        pragma("application_id"),
        format!("Integer({})", schema::APPLICATION_ID)
    );
    assert_eq!(f.fs.kind(), "sqlite");
    assert_eq!(f.fs.local_dir(0), None);
    assert_eq!(f.ws.local_root(), None);
}

#[test]
fn reopening_keeps_everything_and_does_not_reinitialise() {
    let f = fixture();
    f.fs.write_atomic(&f.p("a/b.txt"), b"kept")
        .expect_err("no parent yet");
    f.fs.create_dir_all(&f.p("a")).unwrap();
    f.fs.write_atomic(&f.p("a/b.txt"), b"kept").unwrap();
    drop(f.ws);
    drop(f.fs);
    let (fs, ws) = open(&f.db);
    assert_eq!(read_all(&fs, &ws.resolve("a/b.txt").unwrap()), b"kept");
    let conn = rusqlite::Connection::open(&f.db).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM meta", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
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
fn sizes_around_chunk_boundaries_round_trip() {
    let f = fixture();
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

#[test]
fn appends_and_replacements_match_a_model_byte_for_byte() {
    let f = fixture();
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

#[test]
fn the_reader_fetches_only_the_chunks_it_reads() {
    let f = fixture();
    let data = pattern(256 * CHUNK, 3); // 1 MiB
    f.fs.write_atomic(&f.p("big"), &data).unwrap();
    let (mut r, meta) = f.fs.open_chunks(&f.p("big")).unwrap();
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
fn an_open_reader_keeps_its_snapshot_while_the_file_is_replaced() {
    let f = fixture();
    let old = pattern(3 * CHUNK + 100, 1);
    let new = pattern(5 * CHUNK + 1, 2);
    f.fs.write_atomic(&f.p("f"), &old).unwrap();

    let (mut r, meta) = f.fs.open_read(&f.p("f")).unwrap();
    let mut first = vec![0u8; 10];
    r.read_exact(&mut first).unwrap();
    // Replaced and appended to while the reader is half-way through.
    f.fs.write_atomic(&f.p("f"), &new).unwrap();
    f.fs.append(&f.p("f"), b"more").unwrap();
    let mut rest = Vec::new();
    r.read_to_end(&mut rest).unwrap();
    first.extend(rest);
    assert_eq!(meta.len, old.len() as u64);
    assert_eq!(first, old, "the reader mixed versions");
    drop(r);

    let mut expected = new.clone();
    expected.extend_from_slice(b"more");
    assert_eq!(f.read("f"), expected);

    // Even a deleted file stays readable through a reader opened before.
    let (mut r, _) = f.fs.open_read(&f.p("f")).unwrap();
    f.fs.remove_file(&f.p("f")).unwrap();
    let mut all = Vec::new();
    r.read_to_end(&mut all).unwrap();
    assert_eq!(all, expected);
}

#[test]
fn readers_return_their_connections_to_a_bounded_pool() {
    let f = fixture();
    f.fs.write_atomic(&f.p("f"), b"x").unwrap();
    let readers: Vec<_> = (0..IDLE_READERS + 3)
        .map(|_| f.fs.open_read(&f.p("f")).unwrap())
        .collect();
    drop(readers);
    let idle = f.fs.inner.readers.lock().unwrap();
    assert_eq!(idle.len(), IDLE_READERS);
    assert!(
        idle.iter().all(|c| c.is_autocommit()),
        "a transaction leaked"
    );
    drop(idle);
    // A failed open gives its connection back too, with no transaction left open.
    f.fs.open_read(&f.p("missing")).map(|_| ()).unwrap_err();
    assert!(
        f.fs.inner
            .readers
            .lock()
            .unwrap()
            .iter()
            .all(|c| c.is_autocommit())
    );
}

#[test]
fn errors_carry_the_errno_of_the_local_backend_and_change_nothing() {
    let f = fixture();
    f.fs.create_dir_all(&f.p("d/sub")).unwrap();
    f.fs.write_atomic(&f.p("d/sub/x"), b"x").unwrap();
    f.fs.write_atomic(&f.p("file"), b"content").unwrap();
    let before = (
        f.count("SELECT count(*) FROM inodes"),
        f.count("SELECT count(*) FROM dentries"),
        f.count("SELECT count(*) FROM chunks"),
    );

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
        (
            f.count("SELECT count(*) FROM inodes"),
            f.count("SELECT count(*) FROM dentries"),
            f.count("SELECT count(*) FROM chunks"),
        ),
        "a failed operation changed the database"
    );
    assert_eq!(f.read("file"), b"content");
}

#[test]
fn names_are_checked_again_below_the_workspace() {
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
    let f = fixture();
    let conn = rusqlite::Connection::open(&f.db).unwrap();
    for bad in ["", ".", "..", "a/b"] {
        assert!(
            conn.execute(
                "INSERT INTO dentries(parent, name, inode) VALUES (1, ?1, 1)",
                [bad]
            )
            .is_err(),
            "{bad:?}"
        );
    }
}

#[test]
fn recursive_removal_deletes_the_whole_subtree_in_one_go() {
    let f = fixture();
    for rel in ["t/a/1", "t/a/2", "t/b/c/3", "t/4", "keep/5"] {
        let p = f.p(rel);
        f.fs.create_dir_all(&p.parent().unwrap()).unwrap();
        f.fs.write_atomic(&p, &pattern(2 * CHUNK + 1, 0)).unwrap();
    }
    f.fs.create_dir_all(&f.p("t/empty")).unwrap();
    assert_eq!(f.fs.metadata(&f.p(".")).unwrap().nlink, 4); // ., .., t/.., keep/..
    f.fs.remove_dir(&f.p("t"), true).unwrap();

    assert_eq!(f.count("SELECT count(*) FROM inodes"), 3); // root, keep, keep/5
    assert_eq!(f.count("SELECT count(*) FROM dentries"), 2);
    assert_eq!(f.count("SELECT count(*) FROM chunks"), 3);
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
    assert_eq!(f.count("SELECT count(*) FROM chunks"), 0);
    assert_eq!(f.count("SELECT count(*) FROM inodes"), 2);
}

#[test]
fn metadata_listing_and_identity() {
    let f = fixture();
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

    let entries = f.fs.read_dir(&f.p("d")).unwrap();
    let got: Vec<_> = entries.iter().map(|e| (e.name.as_str(), e.kind)).collect();
    assert_eq!(got, [("e", FileKind::Dir), ("f.txt", FileKind::File)]);
    assert!(f.fs.read_dir(&f.p("d/e")).unwrap().is_empty());

    // Replacing keeps the inode (and so its mode); appending too.
    let id = |f: &Fixture| lookup(&f.fs.inner.lock(), &["d", "f.txt"]).unwrap().id;
    let before = id(&f);
    f.fs.write_atomic(&f.p("d/f.txt"), b"bye").unwrap();
    f.fs.append(&f.p("d/f.txt"), b"!").unwrap();
    assert_eq!(id(&f), before);
    assert_eq!(f.read("d/f.txt"), b"bye!");
    // Appending creates a missing file.
    f.fs.append(&f.p("d/new"), b"").unwrap();
    assert_eq!(f.fs.metadata(&f.p("d/new")).unwrap().len, 0);
    assert_eq!(f.read("d/new"), b"");
}

#[test]
fn a_write_waits_for_another_writer_within_the_busy_timeout() {
    let f = fixture();
    let other = rusqlite::Connection::open(&f.db).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let fs = Arc::clone(&f.fs);
    let path = f.p("waited");
    let writer = std::thread::spawn(move || fs.write_atomic(&path, b"after the lock"));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!writer.is_finished(), "the write did not wait for the lock");
    // Readers are not blocked by the pending writer.
    assert_eq!(f.fs.read_dir(&f.p(".")).unwrap().len(), 0);
    other.execute_batch("COMMIT").unwrap();
    writer.join().unwrap().unwrap();
    assert_eq!(f.read("waited"), b"after the lock");
}

#[test]
fn two_handles_on_one_file_see_each_others_commits() {
    let f = fixture();
    let (fs2, ws2) = open(&f.db);
    f.fs.write_atomic(&f.p("shared.txt"), b"from one").unwrap();
    assert_eq!(
        read_all(&fs2, &ws2.resolve("shared.txt").unwrap()),
        b"from one"
    );
    fs2.append(&ws2.resolve("shared.txt").unwrap(), b", and two")
        .unwrap();
    assert_eq!(f.read("shared.txt"), b"from one, and two");

    // Many writers in parallel on two handles: every append lands exactly once.
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let (fs, path) = if i % 2 == 0 {
                (Arc::clone(&f.fs), f.p("log"))
            } else {
                (Arc::clone(&fs2), ws2.resolve("log").unwrap())
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

#[test]
fn paths_of_another_root_are_refused() {
    // A WsPath from a workspace with a second root cannot reach this single-root filesystem.
    let f = fixture();
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
