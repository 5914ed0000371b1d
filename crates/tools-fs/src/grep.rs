use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::truncate::{cut_line, floor_char_boundary};
use tool_core::workspace::FileKind;
use tool_core::{
    Access, Annotations, CancellationToken, Tool, ToolContext, ToolError, ToolOutput, Workspace,
    blocking,
};

use crate::walk::{self, GlobFilter, Problems, WalkedFile};

/// What `grep` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Matching lines as `path:line:text` (context lines as `path-line-text`).
    #[default]
    Content,
    /// Only the paths of files with at least one match.
    FilesWithMatches,
    /// `path:N`, the number of matching lines per file.
    Count,
}

/// Arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// A regular expression (Rust/ripgrep syntax, e.g. `fn\s+main`, `(?i)todo`), or literal
    /// text with `fixed_strings`. A pattern starting with `-` is just a pattern.
    pub pattern: String,
    /// A file or directory to search, relative to the workspace root. Default: the root.
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files matching this glob: `*.rs` matches names at any depth, `src/**/*.ts`
    /// matches paths relative to `path`.
    #[serde(default)]
    pub include: Option<String>,
    /// Treat `pattern` as literal text, not a regular expression.
    #[serde(default)]
    pub fixed_strings: bool,
    /// Match regardless of case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Lines of context to show before and after each match (content mode). Default 0.
    #[schemars(range(min = 0, max = 10))]
    pub context: Option<u32>,
    /// `content` (default), `files_with_matches` or `count`.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// The most results to return: matching lines in content mode, files otherwise. Default 100.
    #[schemars(range(min = 1, max = 1000000))]
    pub max_results: Option<u32>,
}

/// `grep`: ripgrep's search engine, in-process.
#[derive(Debug, Clone, Copy, Default)]
pub struct Grep;

const DEFAULT_MAX_RESULTS: u32 = 100;
const MAX_CONTEXT: u32 = 10;
/// Matched and context lines are cut to this many characters.
const MAX_LINE_CHARS: usize = 500;
/// The compiled program may not exceed this, so a hostile pattern cannot eat memory.
const REGEX_SIZE_LIMIT: usize = 10 * 1024 * 1024;
/// The lazy DFA's cache per thread.
const REGEX_DFA_SIZE_LIMIT: usize = 10 * 1024 * 1024;
/// The most heap one search may use for its line buffer: a file with a longer line is skipped
/// (reported) rather than read whole into memory.
const SEARCH_HEAP_LIMIT: usize = 64 * 1024 * 1024;
/// Files searched ahead of the first unfinished one. Results are emitted in path order, so this
/// bounds what waits in memory when one early file is slow.
const WINDOW: usize = 1024;
/// The most search threads.
const MAX_THREADS: usize = 12;

#[async_trait]
impl Tool for Grep {
    const NAME: &'static str = "grep";
    type Args = GrepArgs;

    fn description(&self) -> String {
        "Search file contents with a regular expression (ripgrep's engine and syntax). Prints \
         `path:line:text` per matching line, sorted by path; `context` adds surrounding lines as \
         `path-line-text`. `output_mode` `files_with_matches` lists only paths, `count` prints \
         `path:N`. Narrow with `path` (a directory or one file) and `include` (a glob such as \
         `*.rs`). Like ripgrep, skips binary, hidden and .gitignore'd files and `.git`, and does \
         not follow symbolic links. Lines are cut at 500 characters; the search stops at \
         `max_results` (default 100) with a notice. To find files by name, use find_files."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        Ok(vec![Access::Read(crate::walk::base(
            &ctx.workspace,
            args.path.as_deref(),
        )?)])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let base = crate::walk::base(&ctx.workspace, args.path.as_deref())?;
        let context = args.context.unwrap_or(0);
        if context > MAX_CONTEXT {
            return Err(ToolError::invalid(
                "/context",
                format!("context must be between 0 and {MAX_CONTEXT} lines"),
            ));
        }
        let include = args
            .include
            .as_deref()
            .map(|g| GlobFilter::new(g, "/include"))
            .transpose()?;
        let ws = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        let policy = ctx.policy.clone();
        blocking(ctx, move || {
            // Compiling a large pattern takes a while: do it off the async runtime too.
            let job = Job {
                matcher: build_matcher(&args)?,
                mode: args.output_mode,
                context: context as usize,
                max: args.max_results.unwrap_or(DEFAULT_MAX_RESULTS).max(1) as usize,
            };
            let meta = ws.metadata(&base)?;
            let (files, walk_problems) = match meta.kind {
                // A file named explicitly is searched even if hidden, ignored or not matching
                // `include`, as ripgrep does.
                FileKind::File => {
                    let rel = base.file_name().unwrap_or_default().to_string();
                    (vec![WalkedFile { path: base.clone(), rel }], Problems::default())
                }
                FileKind::Dir => {
                    let keep = |rel: &str| include.as_ref().is_none_or(|g| g.matches(rel));
                    let gate = walk::ReadGate {
                        policy: &policy,
                        tool: "grep",
                    };
                    let mut walk = walk::files_under(&ws, gate, &base, &keep, &cancel)?;
                    walk::drop_unreadable(&mut walk, &policy, "grep");
                    (walk.files, walk.problems)
                }
                _ => {
                    return Err(ToolError::Failed(format!(
                        "{base} is not a regular file or directory; give a file or directory as `path`."
                    )));
                }
            };
            let results = search_all(&ws, &files, &job, &cancel)?;
            Ok(render(&args, &base, &job, &files, results, walk_problems))
        })
        .await
    }
}

/// Compiles the pattern with the memory limits and the line terminator that keeps every match on
/// one line (which also lets the searcher skip non-matching text quickly).
fn build_matcher(args: &GrepArgs) -> Result<RegexMatcher, ToolError> {
    RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive)
        .fixed_strings(args.fixed_strings)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| {
            let message = e.to_string();
            if message.contains("size limit") {
                return ToolError::invalid(
                    "/pattern",
                    format!(
                        "the pattern compiles to a program larger than the {} MiB limit (usually a large repetition count such as `x{{10000}}`); use a smaller count or a simpler pattern",
                        REGEX_SIZE_LIMIT / (1024 * 1024)
                    ),
                );
            }
            let hint = if args.fixed_strings {
                "a fixed string cannot contain a line break; search for one line at a time"
            } else {
                "fix the expression (ripgrep's Rust regex syntax: escape `( ) [ ] { } . * + ? | \\ ^ $` with `\\`), or pass fixed_strings=true to search for the text literally"
            };
            ToolError::invalid(
                "/pattern",
                format!("the pattern does not compile: {}; {hint}", regex_error(&message)),
            )
        })
}

/// The regex crate's parse errors span several lines (the pattern, a caret, then `error: ...`);
/// keep the `error:` sentence, or the first line when there is none.
fn regex_error(message: &str) -> String {
    let line = message
        .lines()
        .find_map(|l| l.trim().strip_prefix("error:"))
        .or_else(|| message.lines().find(|l| !l.trim().is_empty()))
        .unwrap_or("unknown error")
        .trim();
    let cut = floor_char_boundary(line, 300);
    line[..cut].to_string()
}

/// The settled parts of a search, shared by every worker.
struct Job {
    matcher: RegexMatcher,
    mode: OutputMode,
    context: usize,
    max: usize,
}

impl Job {
    fn searcher(&self) -> Searcher {
        let context = if self.mode == OutputMode::Content {
            self.context
        } else {
            0
        };
        SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .before_context(context)
            .after_context(context)
            .heap_limit(Some(SEARCH_HEAP_LIMIT))
            .build()
    }
}

/// One printed line of a file's result.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    Match(u64, String),
    Context(u64, String),
    /// A gap between non-adjacent context groups (`--`).
    Break,
}

/// What searching one file produced.
#[derive(Debug, Default)]
struct FileResult {
    /// Matching lines seen (in content mode, at most `max`).
    matches: u64,
    /// Lines to print (content mode).
    lines: Vec<Line>,
    /// The file had more matching lines than `max` (content mode).
    more: bool,
    /// The file is binary (a NUL byte): skipped.
    binary: bool,
    /// The file could not be read: skipped.
    error: Option<String>,
}

impl FileResult {
    /// What the file counts against `max_results`.
    fn units(&self, mode: OutputMode) -> usize {
        if self.binary || self.error.is_some() {
            return 0;
        }
        match mode {
            OutputMode::Content => self.matches as usize,
            OutputMode::FilesWithMatches | OutputMode::Count => usize::from(self.matches > 0),
        }
    }
}

/// The sink one file's search writes into.
struct Collect<'a> {
    mode: OutputMode,
    max: u64,
    cancel: &'a CancellationToken,
    out: FileResult,
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.cancel.is_cancelled() {
            return Ok(false);
        }
        match self.mode {
            OutputMode::FilesWithMatches => {
                self.out.matches = 1;
                Ok(false)
            }
            OutputMode::Count => {
                self.out.matches += 1;
                Ok(true)
            }
            OutputMode::Content => {
                if self.out.matches >= self.max {
                    self.out.more = true;
                    return Ok(false);
                }
                self.out.matches += 1;
                let n = m.line_number().unwrap_or(0);
                self.out.lines.push(Line::Match(n, render_line(m.bytes())));
                Ok(true)
            }
        }
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.mode == OutputMode::Content && *c.kind() != SinkContextKind::Other {
            let n = c.line_number().unwrap_or(0);
            self.out
                .lines
                .push(Line::Context(n, render_line(c.bytes())));
        }
        Ok(!self.cancel.is_cancelled())
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.mode == OutputMode::Content {
            self.out.lines.push(Line::Break);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.out.binary = true;
        Ok(false)
    }
}

/// One line without its terminator, lossily decoded and cut to [`MAX_LINE_CHARS`] characters.
/// Only a bounded prefix of a huge line is decoded.
fn render_line(bytes: &[u8]) -> String {
    let mut body = bytes;
    if let Some(b) = body.strip_suffix(b"\n") {
        body = b;
    }
    if let Some(b) = body.strip_suffix(b"\r") {
        body = b;
    }
    let prefix_cap = MAX_LINE_CHARS * 4 + 4;
    if body.len() <= prefix_cap {
        return cut_line(&String::from_utf8_lossy(body), MAX_LINE_CHARS).into_owned();
    }
    let head = String::from_utf8_lossy(&body[..prefix_cap]);
    let idx = head
        .char_indices()
        .nth(MAX_LINE_CHARS)
        .map_or(head.len(), |(i, _)| i);
    format!(
        "{}… [line cut: {} more bytes]",
        &head[..idx],
        body.len().saturating_sub(idx)
    )
}

/// Searches one file, opened through the workspace (never by its real path).
fn search_file(
    ws: &Workspace,
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    job: &Job,
    file: &WalkedFile,
    cancel: &CancellationToken,
) -> FileResult {
    let reader = match ws.open_read(&file.path) {
        Ok((reader, _meta)) => reader,
        Err(e) => {
            return FileResult {
                error: Some(e.to_string()),
                ..FileResult::default()
            };
        }
    };
    let mut sink = Collect {
        mode: job.mode,
        max: job.max as u64,
        cancel,
        out: FileResult::default(),
    };
    if let Err(e) = searcher.search_reader(matcher, reader, &mut sink) {
        let mut out = sink.out;
        out.error = Some(if e.to_string().contains("allocation limit") {
            format!(
                "it has a line longer than {} MiB",
                SEARCH_HEAP_LIMIT / (1024 * 1024)
            )
        } else {
            e.to_string()
        });
        return out;
    }
    sink.out
}

/// Results in path order, up to the point where enough were found.
struct Ordered {
    slots: Vec<Option<FileResult>>,
    /// Every slot before this one is filled.
    done: usize,
    /// Units (see [`FileResult::units`]) in the filled prefix.
    units: usize,
    /// Workers waiting for `done` to move (so the others only wake them when needed: every
    /// `notify_all` is a system call).
    waiters: usize,
}

/// Searches `files` on several threads and returns the results of the first files, in order, up
/// to and including the one where more than `max_results` units (or a file with more) were
/// found. Files after that point are not searched (or their results are dropped), so the output
/// is the same on every run.
fn search_all(
    ws: &Workspace,
    files: &[WalkedFile],
    job: &Job,
    cancel: &CancellationToken,
) -> Result<Vec<FileResult>, ToolError> {
    let n = files.len();
    let state = Mutex::new(Ordered {
        slots: (0..n).map(|_| None).collect(),
        done: 0,
        units: 0,
        waiters: 0,
    });
    let advanced = Condvar::new();
    // A lock-free copy of `Ordered::done`, so the window check costs no lock in the common case.
    let done_hint = AtomicUsize::new(0);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_THREADS)
        .min(n.max(1));

    let worker = || {
        let mut searcher = job.searcher();
        // A clone per thread gets its own regex cache pool, so threads do not contend for one.
        let matcher = job.matcher.clone();
        loop {
            if stop.load(Ordering::Relaxed) || cancel.is_cancelled() {
                return;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                return;
            }
            // Stay within WINDOW files of the first unfinished one.
            if i >= done_hint.load(Ordering::Acquire) + WINDOW {
                let Ok(mut st) = state.lock() else { return };
                st.waiters += 1;
                while i >= st.done + WINDOW {
                    if stop.load(Ordering::Relaxed) || cancel.is_cancelled() {
                        break;
                    }
                    st = match advanced.wait_timeout(st, Duration::from_millis(50)) {
                        Ok((st, _)) => st,
                        Err(_) => return,
                    };
                }
                st.waiters -= 1;
                if stop.load(Ordering::Relaxed) || cancel.is_cancelled() {
                    return;
                }
            }
            let result = search_file(ws, &mut searcher, &matcher, job, &files[i], cancel);
            let Ok(mut st) = state.lock() else { return };
            st.slots[i] = Some(result);
            let before = st.done;
            while st.done < n {
                let idx = st.done;
                let Some(r) = st.slots[idx].as_ref() else {
                    break;
                };
                let units = r.units(job.mode);
                let more = r.more;
                st.units += units;
                st.done += 1;
                if st.units > job.max || more {
                    stop.store(true, Ordering::Relaxed);
                    break;
                }
            }
            if st.done != before {
                done_hint.store(st.done, Ordering::Release);
                if st.waiters > 0 {
                    advanced.notify_all();
                }
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(worker);
        }
        worker();
    });
    if cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let st = state
        .into_inner()
        .map_err(|_| ToolError::internal("a grep worker panicked"))?;
    let done = st.done;
    Ok(st.slots.into_iter().take(done).flatten().collect())
}

/// Turns the ordered results into the model's text and the structured summary.
fn render(
    args: &GrepArgs,
    base: &tool_core::WsPath,
    job: &Job,
    files: &[WalkedFile],
    results: Vec<FileResult>,
    walk_problems: Problems,
) -> ToolOutput {
    let searched_all = results.len() == files.len();
    let mut text = String::new();
    let mut shown_units = 0usize;
    let mut shown_matches = 0u64;
    let mut shown_files = 0usize;
    let mut truncated = !searched_all;
    let mut binary = 0usize;
    let mut problems = walk_problems;

    'files: for (file, result) in files.iter().zip(results) {
        if result.binary {
            binary += 1;
            continue;
        }
        if let Some(e) = &result.error {
            problems.add(format!("{}: {e}", file.path));
            continue;
        }
        if result.matches == 0 {
            continue;
        }
        if shown_units >= job.max {
            truncated = true;
            break;
        }
        let path = file.path.to_string();
        match job.mode {
            OutputMode::FilesWithMatches => {
                text.push_str(&path);
                text.push('\n');
                shown_units += 1;
                shown_files += 1;
                shown_matches += 1;
            }
            OutputMode::Count => {
                text.push_str(&format!("{path}:{}\n", result.matches));
                shown_units += 1;
                shown_files += 1;
                shown_matches += result.matches;
            }
            OutputMode::Content => {
                if job.context > 0 && shown_files > 0 {
                    text.push_str("--\n");
                }
                shown_files += 1;
                // After the last allowed match, keep at most `context` lines of its after-context.
                let mut trailing: Option<usize> = None;
                for line in &result.lines {
                    match line {
                        Line::Match(n, t) => {
                            if shown_units >= job.max {
                                truncated = true;
                                break 'files;
                            }
                            text.push_str(&format!("{path}:{n}:{t}\n"));
                            shown_units += 1;
                            shown_matches += 1;
                            if shown_units >= job.max {
                                trailing = Some(0);
                            }
                        }
                        Line::Context(n, t) => {
                            if let Some(k) = trailing.as_mut() {
                                if *k >= job.context {
                                    continue;
                                }
                                *k += 1;
                            }
                            text.push_str(&format!("{path}-{n}-{t}\n"));
                        }
                        Line::Break => {
                            if trailing.is_some() {
                                continue;
                            }
                            text.push_str("--\n");
                        }
                    }
                }
                if result.more {
                    truncated = true;
                }
            }
        }
    }

    let unit = match job.mode {
        OutputMode::Content => "matching lines",
        OutputMode::FilesWithMatches | OutputMode::Count => "files",
    };
    if shown_units == 0 {
        let scope = match &args.include {
            Some(g) => format!("{base} (files matching `{g}`)"),
            None => base.to_string(),
        };
        text.push_str(&format!(
            "No matches for `{}` in {scope}. Hidden, ignored and binary files are skipped.\n",
            args.pattern
        ));
        if binary > 0 {
            text.push_str(&format!("[{binary} binary file(s) were skipped.]\n"));
        }
    }
    if truncated {
        text.push_str(&format!(
            "[Stopped at max_results={} {unit}; there are more. Narrow the search with a more specific pattern, an `include` glob or a smaller `path`, or raise max_results.]\n",
            job.max
        ));
    }
    if let Some(notice) = problems.notice("files") {
        text.push_str(&notice);
        text.push('\n');
    }
    ToolOutput::text(text).with_structured(json!({
        "matches": shown_matches,
        "files": shown_files,
        "truncated": truncated,
        "binary_files_skipped": binary,
        "unreadable_files": problems.count,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: serde_json::Value) -> GrepArgs {
        serde_json::from_value(v).unwrap()
    }

    fn search_bytes(pattern: &str, mode: OutputMode, context: usize, hay: &[u8]) -> FileResult {
        let a = args(json!({ "pattern": pattern }));
        let job = Job {
            matcher: build_matcher(&a).unwrap(),
            mode,
            context,
            max: 3,
        };
        let cancel = CancellationToken::new();
        let mut sink = Collect {
            mode,
            max: job.max as u64,
            cancel: &cancel,
            out: FileResult::default(),
        };
        job.searcher()
            .search_reader(&job.matcher, hay, &mut sink)
            .unwrap();
        sink.out
    }

    #[test]
    fn collects_matches_with_line_numbers_and_context() {
        let r = search_bytes("b", OutputMode::Content, 1, b"a\nb\nc\nd\ne\nb\n");
        assert_eq!(
            r.lines,
            vec![
                Line::Context(1, "a".into()),
                Line::Match(2, "b".into()),
                Line::Context(3, "c".into()),
                Line::Break,
                Line::Context(5, "e".into()),
                Line::Match(6, "b".into()),
            ]
        );
        assert_eq!(r.matches, 2);
        assert!(!r.more && !r.binary);
    }

    #[test]
    fn stops_a_file_after_max_and_notes_more() {
        let r = search_bytes("x", OutputMode::Content, 0, b"x\nx\nx\nx\nx\n");
        assert_eq!(r.matches, 3);
        assert!(r.more);
        let c = search_bytes("x", OutputMode::Count, 0, b"x\nx\nx\nx\nx\n");
        assert_eq!(c.matches, 5, "count mode counts every line");
        let f = search_bytes("x", OutputMode::FilesWithMatches, 0, b"x\nx\n");
        assert_eq!(f.matches, 1);
    }

    #[test]
    fn binary_data_is_flagged() {
        let r = search_bytes("x", OutputMode::Content, 0, b"x\n\x00\x01x\n");
        assert!(r.binary);
    }

    #[test]
    fn crlf_is_stripped_and_long_lines_are_cut() {
        let r = search_bytes("a", OutputMode::Content, 0, b"a b\r\n");
        assert_eq!(r.lines, vec![Line::Match(1, "a b".into())]);
        let long = "é".repeat(5000);
        let cut = render_line(long.as_bytes());
        assert!(cut.starts_with(&"é".repeat(MAX_LINE_CHARS)));
        assert!(cut.contains(&format!("{} more bytes", 10000 - 2 * MAX_LINE_CHARS)));
        let short = render_line("é".repeat(600).as_bytes());
        assert!(short.contains("200 more bytes"), "{short}");
    }

    /// (pattern, fixed_strings, None if it compiles or Some(fragment of the error)) — the
    /// builder's errors become one-line InvalidArgs at /pattern.
    #[test]
    fn patterns_compile_or_are_invalid_args() {
        let cases = [
            ("fn\\s+main", false, None),
            ("-e", false, None),
            ("--files", false, None),
            ("(a*)*b", false, None),
            ("(unclosed", false, Some("unclosed group")),
            ("a{100000}{100000}", false, Some("10 MiB limit")),
            ("a\nb", false, Some("does not compile")),
            ("(unclosed", true, None),
            ("a.b*", true, None),
        ];
        for (pattern, fixed, want) in cases {
            let a = args(json!({ "pattern": pattern, "fixed_strings": fixed }));
            match (build_matcher(&a), want) {
                (Ok(_), None) => {}
                (Err(ToolError::InvalidArgs { path, message }), Some(want)) => {
                    assert_eq!(path, "/pattern");
                    assert!(message.contains(want), "{pattern:?}: {message}");
                    assert!(!message.contains('\n'), "{message}");
                    assert!(!message.contains("(?:"), "{message}");
                }
                (other, _) => panic!("{pattern:?}: unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn fixed_strings_match_literally() {
        let a = args(json!({ "pattern": "a.b", "fixed_strings": true }));
        let job = Job {
            matcher: build_matcher(&a).unwrap(),
            mode: OutputMode::Content,
            context: 0,
            max: 10,
        };
        let cancel = CancellationToken::new();
        let mut sink = Collect {
            mode: job.mode,
            max: 10,
            cancel: &cancel,
            out: FileResult::default(),
        };
        job.searcher()
            .search_reader(&job.matcher, &b"axb\na.b\n"[..], &mut sink)
            .unwrap();
        assert_eq!(sink.out.lines, vec![Line::Match(2, "a.b".into())]);
    }
}
