//! PostgreSQL-only scenarios: volumes sharing one schema, and replicas (separate pools on one
//! schema, as separate processes would have) racing on the same files. The cases PostgreSQL
//! shares with the other backends run from `vfs.rs`. Each test needs `TOOLSHED_TEST_PG` and
//! passes without doing anything when it is unset.

use std::sync::Barrier;

use serde_json::json;
use tool_core::pg::{PgPool, test_pool};
use tool_core::{ErrorKind, Workspace};
use tools_fs::pg_workspace;

use super::vfs::{call, content, context, off, replica, stack};

/// A fresh schema, dropped (best effort) when the test ends, however it ends.
struct Db(PgPool);

impl Db {
    fn new(label: &str) -> Option<Db> {
        test_pool(label).map(Db)
    }

    fn pool(&self) -> PgPool {
        self.0.clone()
    }

    fn scalar(&self, sql: &str) -> i64 {
        off(|| self.0.get().unwrap().query_one(sql, &[]).unwrap().get(0))
    }

    /// Inodes no entry names, entries whose parent is gone, chunks whose inode is gone, and
    /// files whose chunks do not add up to their size: what a lost race would leave behind.
    fn damage(&self) -> i64 {
        self.scalar(
            "SELECT (SELECT count(*) FROM vfs_inodes i
                     WHERE NOT EXISTS (SELECT 1 FROM vfs_volumes v WHERE v.root = i.id)
                       AND NOT EXISTS (SELECT 1 FROM vfs_dentries d WHERE d.inode = i.id))
                  + (SELECT count(*) FROM vfs_dentries d
                     WHERE NOT EXISTS (SELECT 1 FROM vfs_inodes i WHERE i.id = d.parent))
                  + (SELECT count(*) FROM vfs_chunks c
                     WHERE NOT EXISTS (SELECT 1 FROM vfs_inodes i WHERE i.id = c.inode))
                  + (SELECT count(*) FROM vfs_inodes i WHERE i.kind = 'file' AND i.size <>
                         (SELECT coalesce(sum(octet_length(c.data)), 0) FROM vfs_chunks c
                          WHERE c.inode = i.id))
                  + (SELECT count(*) FROM vfs_chunks c JOIN vfs_inodes i ON i.id = c.inode
                     WHERE octet_length(c.data) <> 4096 AND (c.idx + 1) * 4096 < i.size)",
        )
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.0.drop_schema();
    }
}

#[tokio::test]
async fn two_volumes_in_one_schema_are_isolated() {
    let Some(db) = Db::new("vfs_volumes") else {
        return;
    };
    let alpha = context(pg_workspace(db.pool(), "alpha").unwrap());
    let beta = context(pg_workspace(db.pool(), "beta").unwrap());
    let s = stack(true);
    // Per-workspace state kept elsewhere (cron jobs) tells the volumes apart by this name.
    let identity = |c: &tool_core::ToolContext| c.workspace.backend().identity().unwrap();
    assert_ne!(identity(&alpha), identity(&beta));
    assert!(identity(&alpha).ends_with("/alpha"), "{}", identity(&alpha));

    call(
        &s,
        &alpha,
        "file_write",
        &json!({"path": "notes/plan.md", "content": "alpha's plan\n"}),
    )
    .await
    .unwrap();
    let missing = call(&s, &beta, "file_read", &json!({"path": "notes/plan.md"})).await;
    assert_eq!(missing.unwrap_err().kind(), ErrorKind::NotFound);
    let listing = call(&s, &beta, "list_dir", &json!({"recursive": true}))
        .await
        .unwrap()
        .joined_text();
    assert!(!listing.contains("notes"), "{listing}");

    // The same names in the other volume are a different file.
    call(
        &s,
        &beta,
        "file_write",
        &json!({"path": "notes/plan.md", "content": "beta's plan\n"}),
    )
    .await
    .unwrap();
    assert_eq!(
        content(&alpha.workspace, "notes/plan.md"),
        b"alpha's plan\n"
    );
    assert_eq!(content(&beta.workspace, "notes/plan.md"), b"beta's plan\n");
    let grep = call(&s, &beta, "grep", &json!({"pattern": "alpha"}))
        .await
        .unwrap()
        .joined_text();
    assert!(!grep.contains("plan.md"), "{grep}");

    // Deleting a tree in one volume leaves the other's alone.
    call(
        &s,
        &alpha,
        "delete_file",
        &json!({"path": "notes", "recursive": true}),
    )
    .await
    .unwrap();
    let gone = call(&s, &alpha, "file_read", &json!({"path": "notes/plan.md"})).await;
    assert_eq!(gone.unwrap_err().kind(), ErrorKind::NotFound);
    // Seen through another pool, as another process would.
    let beta_again = context(pg_workspace(replica(&db.0), "beta").unwrap());
    assert_eq!(
        content(&beta_again.workspace, "notes/plan.md"),
        b"beta's plan\n"
    );
    assert_eq!(db.damage(), 0);
}

/// Two workspaces on one volume through two pools, as two replicas would have.
fn replicas(db: &Db) -> [Workspace; 2] {
    [
        pg_workspace(db.pool(), "main").unwrap(),
        pg_workspace(replica(&db.0), "main").unwrap(),
    ]
}

#[test]
fn two_replicas_racing_to_create_one_file_make_one_file() {
    let Some(db) = Db::new("vfs_race_create") else {
        return;
    };
    let workspaces = replicas(&db);
    const WRITERS: usize = 8;
    for round in 0..10 {
        let path = format!("r{round}/deep/same.txt");
        let candidates: Vec<Vec<u8>> = (0..WRITERS)
            .map(|w| format!("writer {w} ").repeat(500 + w * 300).into_bytes())
            .collect();
        let start = Barrier::new(WRITERS);
        std::thread::scope(|s| {
            for (w, data) in candidates.iter().enumerate() {
                let (ws, path, start) = (&workspaces[w % 2], &path, &start);
                s.spawn(move || {
                    let p = ws.resolve(path).unwrap();
                    start.wait();
                    // Creates the parents and the file, or replaces what another made first.
                    ws.write_atomic(&p, data).unwrap();
                });
            }
        });
        for ws in &workspaces {
            let dir = ws.resolve(&format!("r{round}/deep")).unwrap();
            let names: Vec<_> = ws
                .read_dir(&dir)
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .collect();
            assert_eq!(names, ["same.txt"], "round {round}");
            let got = ws
                .read_to_end(&ws.resolve(&path).unwrap(), 1 << 20)
                .unwrap();
            assert!(
                candidates.contains(&got),
                "round {round}: the file is not one writer's whole content ({} bytes)",
                got.len()
            );
        }
    }
    assert_eq!(
        db.scalar("SELECT count(*) FROM vfs_dentries WHERE name = 'same.txt'"),
        10
    );
    assert_eq!(
        db.scalar("SELECT count(*) FROM vfs_dentries WHERE name = 'deep'"),
        10
    );
    assert_eq!(db.damage(), 0);
}

#[test]
fn concurrent_appends_from_two_replicas_lose_nothing() {
    let Some(db) = Db::new("vfs_race_append") else {
        return;
    };
    let workspaces = replicas(&db);
    const THREADS: usize = 4;
    const APPENDS: usize = 50;
    // Lines of different lengths, so the appends end at every kind of place in a chunk.
    let line = |t: usize, j: usize| {
        format!(
            "thread {t} line {j:03} {}\n",
            "x".repeat(20 + (t * 97 + j * 31) % 180)
        )
    };
    let start = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (ws, start, line) = (&workspaces[t % 2], &start, &line);
            s.spawn(move || {
                // The first appends race to create the file and its directory.
                let p = ws.resolve("logs/shared.log").unwrap();
                start.wait();
                for j in 0..APPENDS {
                    ws.append(&p, line(t, j).as_bytes()).unwrap();
                }
            });
        }
    });
    let ws = &workspaces[0];
    let log = ws
        .read_to_end(&ws.resolve("logs/shared.log").unwrap(), 1 << 20)
        .unwrap();
    let log = String::from_utf8(log).unwrap();
    let mut got: Vec<&str> = log.split_inclusive('\n').collect();
    let mut want: Vec<String> = (0..THREADS)
        .flat_map(|t| (0..APPENDS).map(move |j| (t, j)))
        .map(|(t, j)| line(t, j))
        .collect();
    assert_eq!(got.len(), THREADS * APPENDS, "lines lost or split");
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
    // Each thread's lines are in its own order.
    for t in 0..THREADS {
        let mine: Vec<&str> = log
            .split_inclusive('\n')
            .filter(|l| l.starts_with(&format!("thread {t} ")))
            .collect();
        let ordered: Vec<String> = (0..APPENDS).map(|j| line(t, j)).collect();
        assert_eq!(mine, ordered, "thread {t}");
    }
    assert_eq!(db.damage(), 0);
}

#[test]
fn a_reader_racing_a_writer_of_large_files_sees_one_version_or_the_changed_error() {
    let Some(db) = Db::new("vfs_race_read") else {
        return;
    };
    let [reader_ws, writer_ws] = replicas(&db);
    // Two versions of 300 KiB (75 chunks, several reader windows) that differ in every line.
    let version = |c: char| format!("{}\n", c.to_string().repeat(63)).repeat(4800);
    let (a, b) = (version('A'), version('B'));
    let path = reader_ws.resolve("flip.txt").unwrap();
    reader_ws.write_atomic(&path, a.as_bytes()).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (mut whole, mut changed) = (0, 0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let p = writer_ws.resolve("flip.txt").unwrap();
            for i in 0..40 {
                let next = if i % 2 == 0 { &b } else { &a };
                writer_ws.write_atomic(&p, next.as_bytes()).unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        while !done.load(std::sync::atomic::Ordering::SeqCst) || whole < 10 {
            match reader_ws.read_to_end(&path, 1 << 20) {
                Ok(bytes) => {
                    assert!(
                        bytes == a.as_bytes() || bytes == b.as_bytes(),
                        "a reader saw a mix of two versions ({} bytes)",
                        bytes.len()
                    );
                    whole += 1;
                }
                Err(e) => {
                    assert_eq!(
                        e.to_string(),
                        "Cannot read flip.txt: the file changed while it was being read; read it again.",
                    );
                    changed += 1;
                }
            }
        }
    });
    assert!(whole >= 10, "{whole} whole reads, {changed} interrupted");
    assert_eq!(db.damage(), 0);
}
