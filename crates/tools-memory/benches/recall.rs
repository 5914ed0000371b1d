//! Memory speed: `memory_recall` latency (p50, p99) at 10,000 and 100,000 memories in keyword
//! mode, and `memory_store` throughput. Run with `cargo bench -p tools-memory` (or
//! `cargo xtask bench memory`).
//!
//! Every call goes through the real stack (strict JSON parse, schema validation, policy,
//! timeout, truncation) into a real SQLite file in a temp dir, exactly as a model's call would.
//!
//! With the feature `postgres` and `TOOLSHED_BENCH_PG` set to a PostgreSQL URL (`cargo xtask
//! bench memory --backend postgres` does both), the same memories and queries then go to a
//! `PgStore` in a fresh schema of that database (dropped afterwards; `VACUUM ANALYZE` runs after
//! each load, as autovacuum would soon after a bulk load: it keeps the planner's statistics and
//! the visibility map that lets the index counts of BM25's document frequencies skip the
//! table), and the report puts both backends side by side. The PostgreSQL run also counts the
//! recalls whose results (keys, in order) equal SQLite's.
//!
//! The memories are English-like text from a fixed seed: about half function words (which
//! recall ignores in queries), the rest drawn from a 30,000-word vocabulary with a Zipf–Mandelbrot
//! distribution, so a few words are common and most are rare, as in real notes. Queries are two
//! to four words drawn the same way (function words included), so some match thousands of
//! memories and some only a few. The table is printed and written to `target/bench/memory.json`.

// A harness-less benchmark reports on stdout; that is its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]
// The report goes to a file under target/, which is no workspace file.
#![allow(clippy::disallowed_methods)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_core::{DynTool, Limits, Policy, Registry, Stack, ToolContext, Workspace};
use tools_memory::Config;

/// Memory counts measured, in the order they are reached (the database grows between them).
const SCALES: [usize; 2] = [10_000, 100_000];
/// Recalls timed per scale (after a warm-up of `WARMUP`).
const QUERIES: usize = 2_000;
const WARMUP: usize = 200;
const VOCABULARY: usize = 30_000;
/// The seed of the memories and queries (the same for every backend).
const SEED: u64 = 0x05ee_d0f7_0015;
/// The URL of the PostgreSQL database to bench as well.
const PG_VAR: &str = "TOOLSHED_BENCH_PG";

/// splitmix64: small, fast and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const FUNCTION_WORDS: &[&str] = &[
    "the", "of", "and", "to", "a", "in", "is", "it", "that", "for", "was", "on", "with", "as",
    "at", "by", "this", "from", "we", "they", "be", "or", "are", "have", "but", "not", "when",
    "which", "there", "their", "will", "about", "into", "after", "before", "should", "our",
];

const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ren", "sta", "vel", "tor", "an", "dis", "per", "gra", "min", "ex", "pro",
    "lin", "ma", "tes", "cor", "ban", "fi", "ul", "sen", "ro", "dal", "nu", "qui", "har", "bel",
    "os", "tri", "pen", "ga", "zo", "mer", "chi", "lu",
];

/// Text generator: a vocabulary of invented words and a Zipf–Mandelbrot sampler over it.
struct Corpus {
    words: Vec<String>,
    cumulative: Vec<f64>,
}

impl Corpus {
    fn new(rng: &mut Rng) -> Corpus {
        let mut seen = std::collections::HashSet::new();
        let mut words = Vec::with_capacity(VOCABULARY);
        while words.len() < VOCABULARY {
            let n = 2 + rng.below(3);
            let w: String = (0..n)
                .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
                .collect();
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        // p(rank r) ∝ 1 / (r + 100)^1.05: a flat head and a long tail, like content words.
        let mut total = 0.0;
        let cumulative = (0..VOCABULARY)
            .map(|r| {
                total += 1.0 / (r as f64 + 100.0).powf(1.05);
                total
            })
            .collect();
        Corpus { words, cumulative }
    }

    fn content_word(&self, rng: &mut Rng) -> &str {
        let x = rng.unit() * self.cumulative[VOCABULARY - 1];
        let i = self.cumulative.partition_point(|&c| c < x);
        &self.words[i.min(VOCABULARY - 1)]
    }

    fn word(&self, rng: &mut Rng) -> &str {
        if rng.below(100) < 45 {
            FUNCTION_WORDS[rng.below(FUNCTION_WORDS.len())]
        } else {
            self.content_word(rng)
        }
    }

    /// One memory: 12 to 40 words in sentences.
    fn memory(&self, rng: &mut Rng) -> String {
        let n = 12 + rng.below(29);
        let mut out = String::new();
        for i in 0..n {
            let w = self.word(rng);
            if i == 0 || out.ends_with(". ") {
                let mut c = w.chars();
                if let Some(first) = c.next() {
                    out.extend(first.to_uppercase());
                    out.push_str(c.as_str());
                }
            } else {
                out.push_str(w);
            }
            out.push_str(if rng.below(9) == 0 { ". " } else { " " });
        }
        out.truncate(out.trim_end().len());
        if !out.ends_with('.') {
            out.push('.');
        }
        out
    }

    /// One query: 2 to 4 words.
    fn query(&self, rng: &mut Rng) -> String {
        let n = 2 + rng.below(3);
        (0..n)
            .map(|_| self.word(rng).to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

const CATEGORIES: [&str; 4] = ["core", "daily", "conversation", "custom"];

struct Bench {
    stack: Stack,
    ctx: ToolContext,
    runtime: tokio::runtime::Runtime,
}

impl Bench {
    fn new(tools: Vec<Arc<dyn DynTool>>, workspace: &Path) -> Bench {
        let mut registry = Registry::new();
        registry
            .register_all(tools)
            .expect("the memory tools register");
        Bench {
            stack: Stack::new(registry),
            ctx: ToolContext::new(
                Workspace::local(workspace).expect("a workspace"),
                Arc::new(Policy::supervised()),
                Arc::new(Limits::default()),
            ),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime"),
        }
    }

    fn call(&self, tool: &str, args: &str) -> tool_core::ToolOutput {
        self.runtime
            .block_on(self.stack.call_json(tool, args, self.ctx.for_call()))
            .unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
    }
}

struct RecallRow {
    memories: usize,
    p50: Duration,
    p99: Duration,
    mean: Duration,
    mean_results: f64,
    /// The keys each timed recall returned, in order.
    results: Vec<Vec<String>>,
}

/// One backend's measurements.
struct Run {
    rows: Vec<RecallRow>,
    stored: usize,
    store_time: Duration,
}

impl Run {
    fn per_second(&self) -> f64 {
        self.stored as f64 / self.store_time.as_secs_f64()
    }

    fn json(&self, database_bytes: u64) -> Value {
        json!({
            "recall": self.rows.iter().map(|r| json!({
                "memories": r.memories,
                "p50_ms": ms(r.p50),
                "p99_ms": ms(r.p99),
                "mean_ms": ms(r.mean),
                "mean_results": r.mean_results,
            })).collect::<Vec<_>>(),
            "store": {
                "memories": self.stored,
                "seconds": self.store_time.as_secs_f64(),
                "memories_per_second": self.per_second(),
            },
            "database_bytes": database_bytes,
        })
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Stores memories up to each scale and times recalls at each, through `bench`. `after_load`
/// runs after each load (PostgreSQL's `VACUUM ANALYZE`); `keep_queries` writes the queries beside the
/// database for a closer look.
fn measure(label: &str, bench: &Bench, after_load: &dyn Fn(), keep_queries: Option<&Path>) -> Run {
    let mut rng = Rng(SEED);
    let corpus = Corpus::new(&mut rng);
    let mut stored = 0usize;
    let mut store_time = Duration::ZERO;
    let mut rows = Vec::new();
    for scale in SCALES {
        eprintln!("memory bench ({label}): storing up to {scale} memories");
        let started = Instant::now();
        while stored < scale {
            let args = json!({
                "key": format!("note-{stored:06}"),
                "content": corpus.memory(&mut rng),
                "category": CATEGORIES[rng.below(4)],
                "session_id": format!("session-{}", rng.below(500)),
            })
            .to_string();
            bench.call("memory_store", &args);
            stored += 1;
        }
        store_time += started.elapsed();
        after_load();

        eprintln!("memory bench ({label}): {QUERIES} recalls at {scale} memories");
        let queries: Vec<String> = (0..QUERIES + WARMUP)
            .map(|_| json!({"query": corpus.query(&mut rng), "limit": 5}).to_string())
            .collect();
        if let Some(path) = keep_queries {
            let mut list = path.as_os_str().to_owned();
            list.push(format!(".queries-{scale}"));
            let _ = std::fs::write(&list, queries.join("\n"));
        }
        let mut times = Vec::with_capacity(QUERIES);
        let mut results = Vec::with_capacity(QUERIES);
        for (i, q) in queries.iter().enumerate() {
            let started = Instant::now();
            let out = bench.call("memory_recall", q);
            let took = started.elapsed();
            if i >= WARMUP {
                times.push(took);
                results.push(
                    out.structured
                        .as_ref()
                        .and_then(|s| s["memories"].as_array())
                        .map(|a| {
                            a.iter()
                                .map(|m| m["key"].as_str().unwrap_or_default().to_string())
                                .collect()
                        })
                        .unwrap_or_default(),
                );
            }
        }
        times.sort_unstable();
        rows.push(RecallRow {
            memories: scale,
            p50: percentile(&times, 0.50),
            p99: percentile(&times, 0.99),
            mean: times.iter().sum::<Duration>() / times.len() as u32,
            mean_results: results.iter().map(Vec::len).sum::<usize>() as f64 / results.len() as f64,
            results,
        });
    }
    Run {
        rows,
        stored,
        store_time,
    }
}

/// The SQLite measurements: a file in a temp dir (or at `TOOLSHED_MEMORY_BENCH_DB`, which must
/// not exist, to keep it for a closer look).
fn sqlite() -> (Run, u64) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let kept = std::env::var_os("TOOLSHED_MEMORY_BENCH_DB").map(PathBuf::from);
    let db = kept.clone().unwrap_or_else(|| dir.path().join("memory.db"));
    let bench = Bench::new(tools_memory::tools(&Config::new(&db)), dir.path());
    let run = measure("SQLite", &bench, &|| {}, kept.as_deref());
    let bytes = std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0);
    (run, bytes)
}

/// What the PostgreSQL half gives: its measurements, the database's size and the server.
struct PgRun {
    run: Run,
    bytes: u64,
    server: String,
}

#[cfg(feature = "postgres")]
fn postgres(url: &str) -> Result<PgRun, String> {
    use tool_core::pg::{PgConfig, PgPool};
    use tools_memory::{KvStore, MemoryStore, PgStore};

    /// Drops the bench schema at the end, also after a panic.
    struct Schema(PgPool);
    impl Drop for Schema {
        fn drop(&mut self) {
            if let Err(e) = self.0.drop_schema() {
                eprintln!(
                    "memory bench: could not drop schema {}: {e}",
                    self.0.schema()
                );
            }
        }
    }

    let schema = format!("bench_memory_{}", std::process::id());
    let pool =
        PgPool::connect(&PgConfig::new(url).with_schema(schema)).map_err(|e| e.to_string())?;
    let guard = Schema(pool.clone());
    let store = Arc::new(PgStore::open(pool.clone()).map_err(|e| e.to_string())?);
    let dir = tempfile::tempdir().expect("a temp dir");
    let bench = Bench::new(
        tools_memory::tools_with_stores(
            &Config::new(""),
            Arc::clone(&store) as Arc<dyn MemoryStore>,
            store as Arc<dyn KvStore>,
        ),
        dir.path(),
    );
    let query = |sql: &str| -> Result<Vec<tool_core::pg::postgres::Row>, String> {
        pool.get()
            .map_err(|e| e.to_string())?
            .query(sql, &[])
            .map_err(|e| e.to_string())
    };
    let server: String = query("SELECT current_setting('server_version')")?
        .first()
        .map(|r| r.get(0))
        .unwrap_or_default();
    let analyze = || {
        if let Err(e) = query("VACUUM ANALYZE memories") {
            eprintln!("memory bench: VACUUM ANALYZE failed: {e}");
        }
    };
    let run = measure("PostgreSQL", &bench, &analyze, None);
    let bytes: i64 = query(&format!(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = '{}' AND c.relkind = 'r'",
        pool.schema()
    ))?
    .first()
    .map(|r| r.get(0))
    .unwrap_or_default();
    drop(bench);
    drop(guard);
    Ok(PgRun {
        run,
        bytes: bytes.max(0) as u64,
        server: format!("PostgreSQL {server}"),
    })
}

#[cfg(not(feature = "postgres"))]
fn postgres(_url: &str) -> Result<PgRun, String> {
    Err(format!(
        "{PG_VAR} is set, but this bench was built without the `postgres` feature; run \
         `cargo xtask bench memory --backend postgres` (or `cargo bench -p tools-memory \
         --features postgres`)"
    ))
}

fn main() {
    let (sqlite, sqlite_bytes) = sqlite();
    let pg = std::env::var(PG_VAR)
        .ok()
        .filter(|u| !u.trim().is_empty())
        .map(|url| postgres(&url));

    let mut table = String::new();
    match &pg {
        Some(Ok(pg)) => {
            let _ = writeln!(
                table,
                "| memories | recall p50 SQLite | recall p50 PostgreSQL | recall p99 SQLite | \
                 recall p99 PostgreSQL | recall mean SQLite | recall mean PostgreSQL | \
                 results per recall | same results |"
            );
            let _ = writeln!(table, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for (s, p) in sqlite.rows.iter().zip(&pg.run.rows) {
                let same = s
                    .results
                    .iter()
                    .zip(&p.results)
                    .filter(|(a, b)| a == b)
                    .count();
                let _ = writeln!(
                    table,
                    "| {} | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms | \
                     {:.2} / {:.2} | {same} of {} |",
                    s.memories,
                    ms(s.p50),
                    ms(p.p50),
                    ms(s.p99),
                    ms(p.p99),
                    ms(s.mean),
                    ms(p.mean),
                    s.mean_results,
                    p.mean_results,
                    s.results.len(),
                );
            }
        }
        _ => {
            let _ = writeln!(
                table,
                "| memories | recall p50 | recall p99 | recall mean | results per recall |"
            );
            let _ = writeln!(table, "|---:|---:|---:|---:|---:|");
            for r in &sqlite.rows {
                let _ = writeln!(
                    table,
                    "| {} | {:.3} ms | {:.3} ms | {:.3} ms | {:.2} |",
                    r.memories,
                    ms(r.p50),
                    ms(r.p99),
                    ms(r.mean),
                    r.mean_results
                );
            }
        }
    }
    let _ = writeln!(
        table,
        "\nmemory_store, SQLite: {} memories in {:.1} s = {:.0} memories/s (one transaction each); database {:.1} MiB",
        sqlite.stored,
        sqlite.store_time.as_secs_f64(),
        sqlite.per_second(),
        sqlite_bytes as f64 / 1024.0 / 1024.0
    );
    if let Some(Ok(pg)) = &pg {
        let _ = writeln!(
            table,
            "memory_store, {}: {} memories in {:.1} s = {:.0} memories/s (one statement each); tables and indexes {:.1} MiB",
            pg.server,
            pg.run.stored,
            pg.run.store_time.as_secs_f64(),
            pg.run.per_second(),
            pg.bytes as f64 / 1024.0 / 1024.0
        );
    }
    println!("{table}");

    // SQLite's results stay at the top level (the report reads them there); PostgreSQL's go
    // in a section of their own.
    let mut report = json!({
        "bench": "memory",
        "mode": "keyword",
        "queries_per_scale": QUERIES,
    });
    if let (Some(out), Value::Object(fields)) = (report.as_object_mut(), sqlite.json(sqlite_bytes))
    {
        out.extend(fields);
    }
    if let Some(Ok(pg)) = &pg {
        let mut section = pg.run.json(pg.bytes);
        section["server"] = json!(pg.server);
        section["same_results"] = json!(
            sqlite
                .rows
                .iter()
                .zip(&pg.run.rows)
                .map(|(s, p)| json!({
                    "memories": s.memories,
                    "recalls": s.results.len(),
                    "same": s.results.iter().zip(&p.results).filter(|(a, b)| a == b).count(),
                }))
                .collect::<Vec<_>>()
        );
        report["postgres"] = section;
    }
    let out_dir = target_dir().join("bench");
    let out = out_dir.join("memory.json");
    match std::fs::create_dir_all(&out_dir).and_then(|()| {
        std::fs::write(
            &out,
            serde_json::to_string_pretty(&report).unwrap_or_default() + "\n",
        )
    }) {
        Ok(()) => println!("written to {}", out.display()),
        Err(e) => eprintln!("memory bench: could not write {}: {e}", out.display()),
    }
    if let Some(Err(e)) = pg {
        eprintln!("memory bench: the PostgreSQL half did not run: {e}");
        // Asked for explicitly (the feature is on), a failure fails the bench; without the
        // feature the variable is only noted, so `bench all` with it set still passes.
        if cfg!(feature = "postgres") {
            std::process::exit(1);
        }
    }
}

fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
            std::fs::canonicalize(&target).unwrap_or(target)
        }
    }
}
