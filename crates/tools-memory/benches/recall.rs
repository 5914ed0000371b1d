//! Memory speed: `memory_recall` latency (p50, p99) at 10,000 and 100,000 memories in keyword
//! mode, and `memory_store` throughput. Run with `cargo bench -p tools-memory` (or
//! `cargo xtask bench memory`).
//!
//! Every call goes through the real stack (strict JSON parse, schema validation, policy,
//! timeout, truncation) into a real SQLite file in a temp dir, exactly as a model's call would.
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

use serde_json::json;
use tool_core::{Limits, Policy, Registry, Stack, ToolContext, Workspace};
use tools_memory::Config;

/// Memory counts measured, in the order they are reached (the database grows between them).
const SCALES: [usize; 2] = [10_000, 100_000];
/// Recalls timed per scale (after a warm-up of `WARMUP`).
const QUERIES: usize = 2_000;
const WARMUP: usize = 200;
const VOCABULARY: usize = 30_000;

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
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let dir = tempfile::tempdir().expect("a temp dir");
    // `TOOLSHED_MEMORY_BENCH_DB=path` keeps the database for a closer look (it must not exist).
    let db = std::env::var_os("TOOLSHED_MEMORY_BENCH_DB")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.path().join("memory.db"));
    let mut registry = Registry::new();
    registry
        .register_all(tools_memory::tools(&Config::new(&db)))
        .expect("the memory tools register");
    let bench = Bench {
        stack: Stack::new(registry),
        ctx: ToolContext::new(
            Workspace::local(dir.path()).expect("a workspace"),
            Arc::new(Policy::supervised()),
            Arc::new(Limits::default()),
        ),
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime"),
    };

    let mut rng = Rng(0x05ee_d0f7_0015);
    let corpus = Corpus::new(&mut rng);
    let mut stored = 0usize;
    let mut store_time = Duration::ZERO;
    let mut rows = Vec::new();
    for scale in SCALES {
        eprintln!("memory bench: storing up to {scale} memories");
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

        eprintln!("memory bench: {QUERIES} recalls at {scale} memories");
        let queries: Vec<String> = (0..QUERIES + WARMUP)
            .map(|_| json!({"query": corpus.query(&mut rng), "limit": 5}).to_string())
            .collect();
        if let Some(path) = std::env::var_os("TOOLSHED_MEMORY_BENCH_DB") {
            let mut list = PathBuf::from(path).into_os_string();
            list.push(format!(".queries-{scale}"));
            let _ = std::fs::write(&list, queries.join("\n"));
        }
        let mut times = Vec::with_capacity(QUERIES);
        let mut results = 0usize;
        for (i, q) in queries.iter().enumerate() {
            let started = Instant::now();
            let out = bench.call("memory_recall", q);
            let took = started.elapsed();
            if i >= WARMUP {
                times.push(took);
                results += out
                    .structured
                    .as_ref()
                    .map_or(0, |s| s["memories"].as_array().map_or(0, Vec::len));
            }
        }
        times.sort_unstable();
        rows.push(RecallRow {
            memories: scale,
            p50: percentile(&times, 0.50),
            p99: percentile(&times, 0.99),
            mean: times.iter().sum::<Duration>() / times.len() as u32,
            mean_results: results as f64 / times.len() as f64,
        });
    }
    let per_second = stored as f64 / store_time.as_secs_f64();
    let db_bytes = std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0);

    let mut table = String::new();
    let _ = writeln!(
        table,
        "| memories | recall p50 | recall p99 | recall mean | results per recall |"
    );
    let _ = writeln!(table, "|---:|---:|---:|---:|---:|");
    for r in &rows {
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
    let _ = writeln!(
        table,
        "\nmemory_store: {stored} memories in {:.1} s = {per_second:.0} memories/s (one transaction each); database {:.1} MiB",
        store_time.as_secs_f64(),
        db_bytes as f64 / 1024.0 / 1024.0
    );
    println!("{table}");

    let report = json!({
        "bench": "memory",
        "mode": "keyword",
        "queries_per_scale": QUERIES,
        "recall": rows.iter().map(|r| json!({
            "memories": r.memories,
            "p50_ms": ms(r.p50),
            "p99_ms": ms(r.p99),
            "mean_ms": ms(r.mean),
            "mean_results": r.mean_results,
        })).collect::<Vec<_>>(),
        "store": {
            "memories": stored,
            "seconds": store_time.as_secs_f64(),
            "memories_per_second": per_second,
        },
        "database_bytes": db_bytes,
    });
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
