//! What only the PostgreSQL filesystem has: volumes, reader windows, no connection held by open
//! readers, the migration record, and row locks under racing writers. The cases it shares with
//! SQLite run from `vfs/tests.rs`. Every test but the first needs `TOOLSHED_TEST_PG` and passes
//! without doing anything when it is unset.

use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

use tool_core::pg::{PgConfig, PgError, PgPool, test_pool};
use tool_core::workspace::Backend;

use super::super::tests::{pattern, read_all};
use super::*;

/// A fresh schema, dropped (best effort) when the test ends, however it ends.
struct Db(PgPool);

impl Db {
    fn new(label: &str) -> Option<Db> {
        test_pool(label).map(Db)
    }

    fn pool(&self) -> PgPool {
        self.0.clone()
    }

    /// A second pool on the same schema: what another replica would have.
    fn replica(&self) -> PgPool {
        let url = std::env::var(tool_core::pg::TEST_URL_VAR).unwrap();
        PgPool::connect(&PgConfig::new(url).with_schema(self.0.schema())).unwrap()
    }

    fn scalar(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> i64 {
        self.0.get().unwrap().query_one(sql, params).unwrap().get(0)
    }

    /// Inodes of the volume at `root` that no entry names, and entries whose parent is gone:
    /// what a lost race between writers would leave behind.
    fn orphans(&self, root: i64) -> i64 {
        self.scalar(
            "SELECT (SELECT count(*) FROM vfs_inodes i
                     WHERE i.volume = $1 AND i.id <> $1
                       AND NOT EXISTS (SELECT 1 FROM vfs_dentries d WHERE d.inode = i.id))
                  + (SELECT count(*) FROM vfs_dentries d
                     WHERE NOT EXISTS (SELECT 1 FROM vfs_inodes i WHERE i.id = d.parent))
                  + (SELECT count(*) FROM vfs_chunks c
                     WHERE NOT EXISTS (SELECT 1 FROM vfs_inodes i WHERE i.id = c.inode))",
            &[&root],
        )
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.0.drop_schema();
    }
}

fn ws_path(fs: &Arc<PgFs>, rel: &str) -> WsPath {
    super::super::tests::workspace_over(fs.clone())
        .resolve(rel)
        .unwrap()
}

#[test]
fn volume_names_outside_the_alphabet_are_refused_with_a_sentence() {
    let hostile = [
        "",
        "a/b",
        "../x",
        "nul\0byte",
        "with space",
        "ünïcödé",
        "semi;colon",
        "quote'd",
        "back\\slash",
        &"v".repeat(65),
    ];
    for name in hostile {
        let err = check_volume_name(name).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name:?}");
        assert!(
            err.to_string()
                .contains("is not a usable volume name; use 1 to 64 letters"),
            "{err}"
        );
    }
    // The benign twins.
    for name in [
        "a",
        "main",
        "team-a_1.v2",
        "..x",
        "A.B-C_D",
        &"v".repeat(64),
    ] {
        check_volume_name(name).unwrap();
    }
}

#[test]
fn an_unavailable_pool_keeps_its_sentence() {
    let err = pool_error(PgError::Unavailable(
        "No PostgreSQL connection became free in time; raise pool_size.".into(),
    ));
    assert_eq!(
        err.to_string(),
        "No PostgreSQL connection became free in time; raise pool_size."
    );
    assert!(!is_conflict(&err));
    assert!(is_conflict(&conflict("x")));
    assert!(conflict("x").to_string().ends_with("(x); try again"));
}

#[test]
fn opening_creates_the_layout_once_and_refuses_a_newer_one() {
    let Some(db) = Db::new("pg_layout") else {
        return;
    };
    // Four processes open one new volume at once: one volume, one root, no stray root left.
    let roots: Vec<i64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| PgFs::open(db.pool(), "shared").unwrap().root_inode()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(roots.iter().all(|r| *r == roots[0]), "{roots:?}");
    assert_eq!(db.scalar("SELECT count(*) FROM vfs_volumes", &[]), 1);
    assert_eq!(db.scalar("SELECT count(*) FROM vfs_inodes", &[]), 1);
    assert_eq!(
        db.scalar(
            "SELECT version::bigint FROM toolshed_migrations WHERE store = 'vfs'",
            &[]
        ),
        schema::MIGRATIONS.len() as i64
    );

    let fs = PgFs::open(db.pool(), "shared").unwrap();
    assert_eq!(fs.kind(), "postgres");
    assert_eq!(fs.volume(), "shared");
    assert!(format!("{fs:?}").contains("volume: \"shared\""));

    // A bad name is refused before the database is touched.
    let err = PgFs::open(db.pool(), "no/slash").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);

    db.0.get()
        .unwrap()
        .execute(
            "UPDATE toolshed_migrations SET version = 99 WHERE store = 'vfs'",
            &[],
        )
        .unwrap();
    let err = PgFs::open(db.pool(), "shared").unwrap_err().to_string();
    assert!(err.contains("newer Toolshed"), "{err}");
}

#[test]
fn the_reader_fetches_only_the_windows_it_reads() {
    let Some(db) = Db::new("pg_windows") else {
        return;
    };
    let fs = Arc::new(PgFs::open(db.pool(), "main").unwrap());
    let data = pattern(256 * CHUNK, 3); // 1 MiB
    fs.write_atomic(&ws_path(&fs, "big"), &data).unwrap();
    let (mut r, meta) = fs.open_reader(&ws_path(&fs, "big")).unwrap();
    assert_eq!(meta.len, data.len() as u64);
    assert_eq!(r.fetches, 1, "opening reads the first window");

    r.seek(SeekFrom::Start(600_000)).unwrap();
    let mut buf = [0u8; 10];
    r.read_exact(&mut buf).unwrap();
    assert_eq!(&buf[..], &data[600_000..600_010]);
    assert_eq!(r.fetches, 2);

    // The window holds the next chunks too; going back within it costs nothing.
    let mut buf = vec![0u8; 3 * CHUNK];
    r.read_exact(&mut buf).unwrap();
    assert_eq!(&buf[..], &data[600_010..600_010 + 3 * CHUNK]);
    r.seek(SeekFrom::Current(-5)).unwrap();
    r.read_exact(&mut [0u8; 5]).unwrap();
    assert_eq!(r.fetches, 2);

    // Seeking from the end and past the end.
    assert_eq!(r.seek(SeekFrom::End(-3)).unwrap(), data.len() as u64 - 3);
    let mut tail = Vec::new();
    r.read_to_end(&mut tail).unwrap();
    assert_eq!(tail, &data[data.len() - 3..]);
    assert_eq!(r.fetches, 3);
    r.seek(SeekFrom::End(100)).unwrap();
    assert_eq!(r.read(&mut [0u8; 8]).unwrap(), 0);
    assert_eq!(
        r.seek(SeekFrom::Current(-(data.len() as i64) - 1_000))
            .unwrap_err()
            .kind(),
        io::ErrorKind::InvalidInput
    );

    // A whole sequential read costs one query per window.
    let (mut r, _) = fs.open_reader(&ws_path(&fs, "big")).unwrap();
    let mut all = Vec::new();
    r.read_to_end(&mut all).unwrap();
    assert_eq!(all, data);
    assert_eq!(r.fetches, 256 / WINDOW);

    // A small file is read whole when it is opened.
    let small = pattern(WINDOW as usize * CHUNK, 4);
    fs.write_atomic(&ws_path(&fs, "small"), &small).unwrap();
    let (mut r, _) = fs.open_reader(&ws_path(&fs, "small")).unwrap();
    let mut all = Vec::new();
    r.read_to_end(&mut all).unwrap();
    assert_eq!((all == small, r.fetches), (true, 1));
}

#[test]
fn open_readers_hold_no_connection_between_reads() {
    let Some(db) = Db::new("pg_no_conn") else {
        return;
    };
    let fs = Arc::new(PgFs::open(db.pool(), "main").unwrap());
    let data = pattern(3 * WINDOW as usize * CHUNK, 5);
    fs.write_atomic(&ws_path(&fs, "f"), &data).unwrap();
    // Five times more open readers than the pool has connections, read in turns.
    let mut readers: Vec<_> = (0..20)
        .map(|_| fs.open_read(&ws_path(&fs, "f")).unwrap().0)
        .collect();
    let mut outs = vec![Vec::new(); readers.len()];
    let step = WINDOW as usize * CHUNK / 2;
    for _ in 0..(data.len() / step) {
        for (r, out) in readers.iter_mut().zip(&mut outs) {
            let mut buf = vec![0u8; step];
            r.read_exact(&mut buf).unwrap();
            out.extend(buf);
        }
    }
    assert!(outs.iter().all(|o| *o == data));
}

#[test]
fn a_forged_entry_into_another_volume_is_not_followed() {
    let Some(db) = Db::new("pg_forged") else {
        return;
    };
    let a = Arc::new(PgFs::open(db.pool(), "a").unwrap());
    let b = Arc::new(PgFs::open(db.pool(), "b").unwrap());
    b.create_dir_all(&ws_path(&b, "private")).unwrap();
    b.write_atomic(&ws_path(&b, "private/secret.txt"), b"b's secret")
        .unwrap();
    a.create_dir_all(&ws_path(&a, "d")).unwrap();
    // Damage: an entry of volume a that names volume b's root.
    let d = a.inode_of(&ws_path(&a, "d")).unwrap();
    db.0.get()
        .unwrap()
        .execute(
            "INSERT INTO vfs_dentries (parent, name, inode) VALUES ($1, 'leak', $2)",
            &[&d, &b.root_inode()],
        )
        .unwrap();

    for rel in ["d/leak", "d/leak/private", "d/leak/private/secret.txt"] {
        let err = a.metadata(&ws_path(&a, rel)).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(ENOENT), "{rel}: {err}");
    }
    assert!(a.read_dir(&ws_path(&a, "d")).unwrap().is_empty());
    // Removing the directory drops the forged entry and nothing of volume b.
    a.remove_dir(&ws_path(&a, "d"), true).unwrap();
    assert_eq!(
        read_all(&*b, &ws_path(&b, "private/secret.txt")),
        b"b's secret"
    );
    assert_eq!(db.orphans(a.root_inode()) + db.orphans(b.root_inode()), 0);
}

#[test]
fn racing_creators_and_removers_leave_no_orphans_or_duplicates() {
    let Some(db) = Db::new("pg_race_tree") else {
        return;
    };
    let one = Arc::new(PgFs::open(db.pool(), "main").unwrap());
    let two = Arc::new(PgFs::open(db.replica(), "main").unwrap());
    std::thread::scope(|s| {
        for (t, fs) in [&one, &two, &one, &two].into_iter().enumerate() {
            s.spawn(move || {
                for i in 0..30 {
                    let data = pattern(CHUNK + 7 * i, t as u8);
                    // Creating a tree others may be removing: each step may find a parent
                    // gone (ENOENT), never anything worse.
                    let step = |r: io::Result<()>| match r {
                        Ok(()) => {}
                        Err(e) if e.raw_os_error() == Some(ENOENT) => {}
                        Err(e) => panic!("thread {t}, round {i}: {e}"),
                    };
                    step(fs.create_dir_all(&ws_path(fs, "a/b/c")));
                    step(fs.write_atomic(&ws_path(fs, "a/b/c/f"), &data));
                    step(fs.append(&ws_path(fs, "a/b/log"), &data));
                    if i % 3 == t % 3 {
                        step(fs.remove_dir(&ws_path(fs, "a"), true));
                    }
                }
            });
        }
    });
    assert_eq!(db.orphans(one.root_inode()), 0);
    // Whatever survived is whole: one entry per name, and every file's chunks add up.
    assert_eq!(
        db.scalar(
            "SELECT count(*) FROM (SELECT parent, name FROM vfs_dentries
                                   GROUP BY parent, name HAVING count(*) > 1) dup",
            &[]
        ),
        0
    );
    assert_eq!(
        db.scalar(
            "SELECT count(*) FROM vfs_inodes i WHERE i.kind = 'file' AND i.size <>
                 (SELECT coalesce(sum(octet_length(c.data)), 0) FROM vfs_chunks c
                  WHERE c.inode = i.id)",
            &[]
        ),
        0
    );
    if let Ok(meta) = one.metadata(&ws_path(&one, "a/b/c/f")) {
        let content = read_all(&*one, &ws_path(&one, "a/b/c/f"));
        assert_eq!(content.len() as u64, meta.len);
    }
}
