//! Untrusted HTML as a tree whose depth, and the work of building it, are bounded.
//!
//! Two costs grow with how deep a page nests, and both are bounded here, in this order:
//!
//! - Building the tree. html5ever's tree builder checks its stack of open elements on every tag
//!   (the "in scope" checks), so `<div>` repeated n times costs n² steps: a 1.2 MB page of
//!   200,000 `<div>` ran for more than ten minutes, on a blocking thread that a timed-out call
//!   cannot stop. Misnested markup (`<b><div></b>`, `<div><table></div></table>`) makes the
//!   builder's stack deeper than the tags say, so counting tags is not enough. [`renest`]
//!   therefore runs html5ever's tokenizer alone (linear in the input) and writes the tokens
//!   back as HTML that is strictly well-nested, with its own stack of open elements capped at
//!   [`MAX_OPEN`]; the tree builder then only ever sees a stream whose open elements it can
//!   mirror, and its stack stays within a small multiple of the cap (the tests hold it to
//!   `2 × MAX_OPEN + 4`), so every scope check is bounded.
//! - Reading the tree. html5ever builds without recursion, but everything that reads the tree
//!   afterwards (htmd's Markdown writer, the result-page readers) recurses once per level.
//!   [`parse`] cuts the tree at [`MAX_DEPTH`] levels before anyone walks it: an element at the
//!   limit keeps the text of everything below it, in document order, as one text child. The
//!   structure below the cut is lost; the words are not. Nothing here recurses.
//! - Writing Markdown. htmd merges adjacent alike inline elements (`<b>a</b><b>b</b>`) as it
//!   writes, in time quadratic in a run of them; [`merge_alike_inline_siblings`] merges them
//!   first, in one pass, so that it finds none. htmd pads a table with headers to its widest
//!   row and cells, which makes a wide header row over many rows quadratic in size;
//!   [`unpad_wide_tables`] writes such a table without its headers.
//! - Building options. rcdom looks through a whole `<select>` at each `</option>` in it; every
//!   `<select>` is written [`SELECT_MULTIPLE`], for which it looks at nothing.
//!
//! Before the tokenizer, each tag is cut to [`MAX_ATTRS`] attributes (see [`feed`]): the
//! tokenizer checks every attribute of a tag against those before it, quadratic in one tag.
//!
//! All of this runs on a blocking thread, which a timed-out call cannot stop: [`parse`] looks
//! at a [`Stop`] flag as it goes, and the caller sets it when it stops waiting.
//!
//! The size of the input is bounded before it gets here: bodies are read to the network
//! layer's byte cap.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Doctype, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::{LocalName, TokenizerResult};
use markup5ever_rcdom::{Node, NodeData};

/// The deepest level kept (real pages stay well under 40; the limit leaves room for the
/// readers' recursion on a 2 MiB thread stack, in debug builds too).
pub(crate) const MAX_DEPTH: usize = 128;

/// The most formatting elements waiting to be opened again (real pages have one to three).
const MAX_PENDING: usize = 32;

/// The most attributes read of one tag; the rest of the tag is dropped before the tokenizer
/// sees it. html5ever's tokenizer checks each attribute against every one before it, so one
/// tag with 25,000 attributes took 4.6 s (and the tree builder would read it again); at 256,
/// that check costs at most 256 comparisons per attribute, linear in the page. Real tags have
/// a few dozen at most. The length of a tag is not capped: with the count capped its cost is
/// linear in its length, and long values are real (`data:` images).
pub(crate) const MAX_ATTRS: usize = 256;

/// Written into every `<select>` start tag that lacks it. At each `</option>` (and [`renest`]
/// writes one for every option it closes) the tree builder asks rcdom for the "enabled
/// `<selectedcontent>`" of the option's `<select>`, and rcdom (0.38) looks for it through the
/// whole subtree of the `<select>`, all of it every time (its check looks at the `<select>`'s
/// name instead of each node's): quadratic in the options of one `<select>`. `<select>` and
/// `<option>x` repeated 32,000 times took 15 seconds to build. rcdom returns at once for a
/// `<select multiple>`, which has no selected content to fill; the converter skips `<select>`
/// and everything in it, and the result-page readers do not read forms, so nothing any reader
/// writes changes.
const SELECT_MULTIPLE: &str = " multiple";

/// The most elements [`renest`] keeps open at once. Above [`MAX_DEPTH`], so that a page that
/// hits it is also cut (and says so); far above what real pages nest (under 40).
pub(crate) const MAX_OPEN: usize = 256;

/// The document tree of `html`, cut at [`MAX_DEPTH`], and whether anything was cut (or
/// dropped for nesting deeper than [`MAX_OPEN`]).
///
/// Stops early, with [`Stopped`], once `stop` is set: it is looked at between tags while
/// re-nesting, every [`BUILD_CHUNK`] bytes while building, and once more before cutting.
pub(crate) fn parse(html: &str, stop: &Stop) -> Result<(Rc<Node>, bool), Stopped> {
    let renested = renest_with(html, Limits::default(), stop)?;
    let tree = build(&renested.html, stop)?;
    stop.check()?;
    let cut = cut_at(&tree, MAX_DEPTH);
    Ok((tree, cut || renested.dropped))
}

/// How much of the re-nested page the tree builder reads between two looks at the stop flag.
const BUILD_CHUNK: usize = 64 * 1024;

/// html5ever's tree of `html`, built as htmd builds it (`HtmlToMarkdown::html_to_tree`, with
/// scripting enabled as htmd's default), but fed in chunks so that `stop` is looked at.
fn build(html: &str, stop: &Stop) -> Result<Rc<Node>, Stopped> {
    use html5ever::tendril::TendrilSink;
    let mut parser = html5ever::parse_document(
        markup5ever_rcdom::RcDom::default(),
        html5ever::ParseOpts::default(),
    );
    let mut from = 0;
    while from < html.len() {
        stop.check()?;
        let mut to = (from + BUILD_CHUNK).min(html.len());
        while !html.is_char_boundary(to) {
            to += 1;
        }
        parser.process(StrTendril::from_slice(&html[from..to]));
        from = to;
    }
    stop.check()?;
    Ok(parser.finish().document)
}

/// Set when nobody waits for a conversion any more (its call timed out or was cancelled), so
/// that the blocking thread it runs on stops soon instead of reading the page to its end.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stop(Arc<StopFlags>);

#[derive(Debug, Default)]
struct StopFlags {
    set: AtomicBool,
    /// Whether a conversion saw `set` and stopped.
    seen: AtomicBool,
}

impl Stop {
    pub(crate) fn set(&self) {
        self.0.set.store(true, Ordering::Relaxed);
    }

    /// A guard that sets the flag when it is dropped: held by the caller that waits, it stops
    /// the conversion when that caller is dropped (a timeout drops the call's future).
    pub(crate) fn when_dropped(&self) -> SetOnDrop {
        SetOnDrop(self.clone())
    }

    /// [`Stopped`] once the flag is set.
    pub(crate) fn check(&self) -> Result<(), Stopped> {
        if self.0.set.load(Ordering::Relaxed) {
            self.0.seen.store(true, Ordering::Relaxed);
            return Err(Stopped);
        }
        Ok(())
    }

    /// Whether a conversion saw the flag set and stopped.
    #[cfg(test)]
    pub(crate) fn seen(&self) -> bool {
        self.0.seen.load(Ordering::Relaxed)
    }
}

/// Sets its [`Stop`] when dropped.
#[derive(Debug)]
pub(crate) struct SetOnDrop(Stop);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.set();
    }
}

/// A conversion stopped because its [`Stop`] was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stopped;

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "the page's conversion was stopped because its call was cancelled or timed out; \
             call again to convert it",
        )
    }
}

/// HTML re-written by [`renest`].
#[derive(Debug)]
pub(crate) struct Renested {
    /// Well-nested HTML: every end tag closes the innermost open element, and at most
    /// `max_open` elements (plus one raw-text element such as `<script>`) are open at once.
    pub(crate) html: String,
    /// Whether start tags were dropped because `max_open` elements were open.
    pub(crate) dropped: bool,
}

/// `html` as the same tokens, re-written so that the tree builder's stack cannot outgrow the
/// stream's: html5ever's tokenizer (switched into raw text after `<script>`, `<style>`,
/// `<textarea>` and the rest, as the tree builder would switch it) feeds a stack of open
/// elements capped at `max_open`.
///
/// - A start tag while `max_open` elements are open is dropped; its text is kept.
/// - An end tag closes its element and every element opened inside it (their end tags are
///   written, innermost first); an end tag of nothing open, or of an element the tree builder
///   would not close from here (past a table or a `<div>`, as its scope rules say), is dropped.
/// - The tree builder's common implied end tags are written out: a block closes an open `<p>`,
///   `<li>` closes the previous item, `<td>` the previous cell, `<option>` the previous option,
///   and so on, so that ordinary pages with unclosed paragraphs or list items do not fill the
///   stack.
/// - `</b>` with a block open inside the `<b>` is dropped (the tree builder keeps the block
///   open, bold inside); formatting elements closed only because an element around them closed
///   are opened again before the next text, as the tree builder reconstructs them (at most
///   three alike, 32 at a time, and no more bytes in all than the page has).
/// - Void elements never open; inside `<svg>` or `<math>`, where a self-closing tag or an
///   `<input>` does open an element, they are written as a start tag and its end tag.
/// - Comments are dropped; the doctype is kept (it decides quirks mode); text, raw text
///   included, and attribute values are escaped again (`<xmp>`, `<plaintext>` and `<noembed>`
///   are written as `<span>` so that their text reads the same).
///
/// Linear in the length of `html`, times at most `max_open` per tag; the output is at most
/// a few times the input (escaping, end tags, and the reopening budget).
///
/// Of each tag, at most [`MAX_ATTRS`] attributes are read (see [`feed`]).
#[cfg(test)]
pub(crate) fn renest(html: &str, max_open: usize) -> Renested {
    let limits = Limits {
        open: max_open,
        ..Limits::default()
    };
    renest_with(html, limits, &Stop::default()).expect("nothing sets the flag")
}

/// The bounds of [`renest_with`]; by default [`MAX_OPEN`] and [`MAX_ATTRS`].
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// The most elements open at once.
    open: usize,
    /// The most attributes of a tag the tokenizer is given (see [`feed`]).
    read_attrs: usize,
    /// The most attributes of a tag written (the tests tell the two apart).
    written_attrs: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            open: MAX_OPEN,
            read_attrs: MAX_ATTRS,
            written_attrs: MAX_ATTRS,
        }
    }
}

/// [`renest`] within `limits`, stopping once `stop` is set.
fn renest_with(html: &str, limits: Limits, stop: &Stop) -> Result<Renested, Stopped> {
    let sink = Renester {
        state: RefCell::new(State {
            out: String::with_capacity(html.len() + html.len() / 8),
            open: Vec::new(),
            foreign: 0,
            counts: HashMap::new(),
            pending: Vec::new(),
            reopen_budget: html.len(),
            dropped: false,
            max_open: limits.open,
            max_attrs: limits.written_attrs,
            switched: None,
        }),
    };
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    feed(&tokenizer, html, limits.read_attrs, stop)?;
    tokenizer.end();
    let state = tokenizer.sink.state.into_inner();
    Ok(Renested {
        html: state.out,
        dropped: state.dropped,
    })
}

/// Feeds `html` to `tokenizer`, every tag cut to its first `max_attrs` attributes.
///
/// A byte scanner walks the page as html5ever's tokenizer does (text, comments, bogus
/// comments and doctypes, start and end tags with quoted and unquoted attribute values) and
/// feeds it on in pieces; a tag with more than `max_attrs` attributes is fed up to the first
/// attribute over, then closed (` >`, or ` />` when it was self-closing), the rest of it
/// skipped. Where the tokenizer reads raw text is for the sink to say (after `<script>`,
/// `<style>` and the rest, but not, say, after `<style/>` in `<svg>`): each start tag is fed
/// as soon as it is read, and the scanner asks the sink before it reads on; it then finds
/// where that text ends as the tokenizer's raw text states do (with the script states'
/// `<!--` and `<script>` escapes). CDATA sections are bogus comments here: the sink does not
/// say it is in foreign content, so the tokenizer reads them so too. Pages whose tags stay
/// within the cap are fed unchanged.
///
/// Linear in `html`; `stop` is looked at before each piece.
fn feed(
    tokenizer: &Tokenizer<Renester>,
    html: &str,
    max_attrs: usize,
    stop: &Stop,
) -> Result<(), Stopped> {
    let input = BufferQueue::default();
    let push = |piece: &str| {
        if !piece.is_empty() {
            input.push_back(StrTendril::from_slice(piece));
            // The sink never asks to pause for a script, so one feed reads everything.
            while !matches!(tokenizer.feed(&input), TokenizerResult::Done) {}
        }
    };
    let b = html.as_bytes();
    // `html[fed..]` is what the tokenizer has not been given yet; the scanner is at `at`.
    let mut fed = 0;
    let mut at = 0;
    loop {
        stop.check()?;
        let switched = tokenizer.sink.state.borrow_mut().switched.take();
        if let Some((raw, name)) = switched {
            let end = match raw {
                Raw::Plaintext => None,
                Raw::Data(RawKind::ScriptData) => script_end(b, at),
                Raw::Data(_) => raw_text_end(b, at, name.as_bytes()),
            };
            match end {
                Some(lt) => at = lt,
                None => break,
            }
        }
        let Some(lt) = b[at..].iter().position(|&c| c == b'<').map(|k| at + k) else {
            break;
        };
        let next = b.get(lt + 1).copied();
        let start_tag = next.is_some_and(|c| c.is_ascii_alphabetic());
        let end_tag = next == Some(b'/') && b.get(lt + 2).is_some_and(u8::is_ascii_alphabetic);
        if start_tag || end_tag {
            let tag = scan_tag(b, lt + if start_tag { 1 } else { 2 }, max_attrs);
            if let Some(cut) = tag.cut {
                push(&html[fed..cut]);
                if tag.closed {
                    push(if tag.self_closing { " />" } else { " >" });
                }
                fed = tag.end;
            }
            at = tag.end;
            if start_tag {
                // The sink decides here whether what follows is raw text.
                push(&html[fed..at]);
                fed = at;
            }
            continue;
        }
        at = match next {
            Some(b'!') if b[lt + 2..].starts_with(b"--") => comment_end(b, lt + 4),
            // A doctype or a bogus comment (CDATA included) ends at the first `>`.
            Some(b'!' | b'?') => after_gt(b, lt + 2),
            Some(b'/') => match b.get(lt + 2) {
                // `</>` is dropped; `</` and anything else opens a bogus comment.
                Some(b'>') => lt + 3,
                Some(_) => after_gt(b, lt + 2),
                None => b.len(),
            },
            // `<` and anything else is text.
            _ => lt + 1,
        };
    }
    push(&html[fed..]);
    Ok(())
}

/// Just after the first `>` at or after `from`, or the end.
fn after_gt(b: &[u8], from: usize) -> usize {
    b[from.min(b.len())..]
        .iter()
        .position(|&c| c == b'>')
        .map_or(b.len(), |k| from + k + 1)
}

/// Just after the comment whose text starts at `from` (after its `<!--`), as the tokenizer's
/// comment states end it: at `-->` or `--!>`, or right away at `>` or `->`; or the end.
fn comment_end(b: &[u8], from: usize) -> usize {
    let rest = &b[from.min(b.len())..];
    if rest.starts_with(b">") {
        return from + 1;
    }
    if rest.starts_with(b"->") {
        return from + 2;
    }
    let mut i = from;
    while let Some(k) = b[i..].windows(2).position(|w| w == b"--") {
        let mut m = i + k + 2;
        while b.get(m) == Some(&b'-') {
            m += 1;
        }
        if b.get(m) == Some(&b'>') {
            return m + 1;
        }
        if b[m..].starts_with(b"!>") {
            return m + 2;
        }
        i = m;
    }
    b.len()
}

/// Where the raw text (RAWTEXT or RCDATA) of the element `name` that starts at `from` ends:
/// the `<` of the first `</name` followed by a space, `/` or `>` (any case).
fn raw_text_end(b: &[u8], from: usize, name: &[u8]) -> Option<usize> {
    let mut i = from;
    while let Some(k) = b[i..].windows(2).position(|w| w == b"</") {
        let lt = i + k;
        if ends_raw_text(b, lt, name) {
            return Some(lt);
        }
        i = lt + 1;
    }
    None
}

/// Whether `b[lt..]` is `</name` (any case) followed by a space, `/` or `>`.
fn ends_raw_text(b: &[u8], lt: usize, name: &[u8]) -> bool {
    let after = lt + 2 + name.len();
    b.get(lt..lt + 2) == Some(b"</")
        && b.get(lt + 2..after)
            .is_some_and(|n| n.eq_ignore_ascii_case(name))
        && matches!(
            b.get(after),
            Some(b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>')
        )
}

/// Whether `b[at..]` starts with `script` (any case) followed by a space, `/` or `>`: what
/// the script states' double escape looks for after `<` and `</`.
fn script_word(b: &[u8], at: usize) -> bool {
    b.get(at..at + 6)
        .is_some_and(|n| n.eq_ignore_ascii_case(b"script"))
        && matches!(
            b.get(at + 6),
            Some(b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>')
        )
}

/// Where the script text that starts at `from` ends: the `<` of its `</script`, as the
/// tokenizer's script data states find it. After `<!--` the text is escaped, and there a
/// `<script` (then a space, `/` or `>`) escapes it twice: a `</script` then only undoes that;
/// `-->` ends either escape.
fn script_end(b: &[u8], from: usize) -> Option<usize> {
    #[derive(Clone, Copy, PartialEq)]
    enum S {
        Data,
        Escaped,
        Double,
    }
    let mut state = S::Data;
    // Dashes just read in an escape (two or more, and a `>` ends it).
    let mut dashes = 0;
    let mut i = from;
    while i < b.len() {
        let c = b[i];
        match (state, c) {
            (S::Data, b'<') => {
                if ends_raw_text(b, i, b"script") {
                    return Some(i);
                }
                if b[i + 1..].starts_with(b"!--") {
                    state = S::Escaped;
                    dashes = 2;
                    i += 4;
                    continue;
                }
            }
            (S::Data, _) => {}
            (_, b'-') => dashes += 1,
            (_, b'>') if dashes >= 2 => {
                state = S::Data;
                dashes = 0;
            }
            (S::Escaped, b'<') => {
                dashes = 0;
                if ends_raw_text(b, i, b"script") {
                    return Some(i);
                }
                if script_word(b, i + 1) {
                    state = S::Double;
                    i += 8;
                    continue;
                }
            }
            (S::Double, b'<') => {
                dashes = 0;
                if b.get(i + 1) == Some(&b'/') && script_word(b, i + 2) {
                    state = S::Escaped;
                    i += 9;
                    continue;
                }
            }
            _ => dashes = 0,
        }
        i += 1;
    }
    None
}

/// Where a tag that [`scan_tag`] read ends, and where it was cut.
struct ScannedTag {
    /// Just after its `>` (or the end of the page, where the tokenizer drops the tag).
    end: usize,
    /// The first byte of its first attribute over the cap.
    cut: Option<usize>,
    /// Whether it ended with `>` (at the end of the page, the tokenizer drops it).
    closed: bool,
    /// Whether it ended with `/>`.
    self_closing: bool,
}

/// Reads the tag whose name starts at `from` as the tokenizer's tag states do (a quoted value
/// may hold `>`), counting the attributes it starts.
fn scan_tag(b: &[u8], from: usize, max_attrs: usize) -> ScannedTag {
    #[derive(Clone, Copy, PartialEq)]
    enum S {
        Name,
        BeforeName,
        AttrName,
        AfterName,
        BeforeValue,
        Quoted(u8),
        Unquoted,
        AfterQuoted,
        SelfClosing,
    }
    let mut state = S::Name;
    let mut attrs = 0usize;
    let mut cut = None;
    let mut i = from;
    let mut closed = false;
    while i < b.len() {
        let c = b[i];
        // The tokenizer reads `\r` as `\n`.
        let space = matches!(c, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ');
        state = match state {
            S::Name if space => S::BeforeName,
            S::Name if c == b'/' => S::SelfClosing,
            S::Name | S::AttrName | S::Unquoted | S::AfterQuoted | S::AfterName if c == b'>' => {
                closed = true;
                break;
            }
            S::Name => S::Name,
            S::BeforeName if space => S::BeforeName,
            // Reconsumed in the after-name state.
            S::BeforeName if c == b'/' || c == b'>' => {
                state = S::AfterName;
                continue;
            }
            // A new attribute (`=` here starts its name).
            S::BeforeName => {
                attrs += 1;
                if attrs > max_attrs && cut.is_none() {
                    cut = Some(i);
                }
                S::AttrName
            }
            S::AttrName if space || c == b'/' => {
                state = S::AfterName;
                continue;
            }
            S::AttrName | S::AfterName if c == b'=' => S::BeforeValue,
            S::AttrName => S::AttrName,
            S::AfterName if space => S::AfterName,
            S::AfterName if c == b'/' => S::SelfClosing,
            S::AfterName => {
                state = S::BeforeName;
                continue;
            }
            S::BeforeValue if space => S::BeforeValue,
            S::BeforeValue if c == b'"' || c == b'\'' => S::Quoted(c),
            S::BeforeValue if c == b'>' => {
                closed = true;
                break;
            }
            S::BeforeValue => S::Unquoted,
            S::Quoted(q) => {
                match b[i..].iter().position(|&d| d == q) {
                    Some(k) => i += k,
                    None => i = b.len(),
                }
                S::AfterQuoted
            }
            S::Unquoted if space => S::BeforeName,
            S::Unquoted => S::Unquoted,
            S::AfterQuoted if space => S::BeforeName,
            S::AfterQuoted if c == b'/' => S::SelfClosing,
            S::AfterQuoted | S::SelfClosing => {
                if state == S::SelfClosing && c == b'>' {
                    closed = true;
                    break;
                }
                state = S::BeforeName;
                continue;
            }
        };
        i += 1;
    }
    ScannedTag {
        end: if closed { i + 1 } else { b.len() },
        cut,
        closed,
        self_closing: closed && state == S::SelfClosing,
    }
}

struct Renester {
    state: RefCell<State>,
}

struct State {
    out: String,
    open: Vec<Open>,
    /// `<svg>` and `<math>` elements on `open`: while any is open, tags are treated as the
    /// tree builder treats foreign content (a self-closing tag closes itself, and so on).
    foreign: usize,
    /// How many elements of each name are on `open`, so that looking for one that is not
    /// open costs nothing.
    counts: HashMap<String, usize>,
    /// Formatting elements to open again before the next text or start tag (see `reopen`).
    pending: Vec<Tag>,
    /// Bytes that `reopen` may still write.
    reopen_budget: usize,
    dropped: bool,
    max_open: usize,
    /// The most attributes of a tag written.
    max_attrs: usize,
    /// The raw text the tokenizer was switched into after the last start tag, for [`feed`].
    switched: Option<(Raw, LocalName)>,
}

struct Open {
    name: LocalName,
    /// Content read as raw text (`<script>`, `<style>`, ...).
    raw: bool,
    /// The start tag of a formatting element (`<b>`, `<a href>`, ...), to open it again
    /// after an element it was in closes, as the tree builder does.
    reopen: Option<Box<Tag>>,
    /// The name written, when not the element's own.
    written: Option<&'static str>,
    /// What the element is to the scope rules ([`SPECIAL`], [`STOPS_DEFAULT`], ...), worked
    /// out once when it opens.
    kind: u8,
}

/// How far back an open element is looked for: the tree builder's scopes.
#[derive(Clone, Copy)]
enum Scope {
    /// Stops at `<table>`, cells, `<caption>`, `<template>`, `<object>`, `<marquee>`, `<applet>`.
    Default,
    /// [`Scope::Default`] and `<button>` (for `<p>`).
    Button,
    /// [`Scope::Default`] and lists (for `<li>`).
    ListItem,
    /// Stops only at `<table>` and `<template>` (for table parts).
    Table,
    /// Stops at any special element (for end tags of ordinary elements, like `</span>`).
    Special,
    /// Never stops (inside `<svg>` and `<math>`).
    Anywhere,
}

impl TokenSink for Renester {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut state = self.state.borrow_mut();
        match token {
            Token::TagToken(tag) => match tag.kind {
                TagKind::StartTag => {
                    let next = state.start(&tag);
                    state.switched = match next {
                        TokenSinkResult::RawData(kind) => Some((Raw::Data(kind), tag.name)),
                        TokenSinkResult::Plaintext => Some((Raw::Plaintext, tag.name)),
                        _ => None,
                    };
                    return next;
                }
                TagKind::EndTag => state.end(&tag.name),
            },
            Token::CharacterTokens(text) => state.text(&text),
            Token::DoctypeToken(doctype) => state.doctype(&doctype),
            // Comments carry nothing a reader sees; a NUL in text is dropped by the tree
            // builder too; parse errors and the end need nothing written.
            Token::CommentToken(_)
            | Token::NullCharacterToken
            | Token::ParseError(_)
            | Token::EOFToken => {}
        }
        TokenSinkResult::Continue
    }
}

impl State {
    /// A start tag; what the tokenizer reads next.
    fn start(&mut self, tag: &Tag) -> TokenSinkResult<()> {
        let name = &*tag.name;
        let raw = raw_kind(name);
        let foreign = self.foreign > 0;
        if foreign {
            if is_void(name) {
                self.write_start(name, tag);
                // `<br>`, `<img>` and the like leave foreign content and are void there too;
                // `<input>` and the rest open an element in foreign content.
                if !leaves_foreign_content(name) {
                    self.write_end(name);
                }
                return TokenSinkResult::Continue;
            }
            if tag.self_closing {
                self.write_start(name, tag);
                self.write_end(name);
                return TokenSinkResult::Continue;
            }
        } else {
            self.imply_end_tags(name);
            if matches!(name, "html" | "body") && self.find(Scope::Anywhere, &[name]).is_some() {
                // A second `<html>` or `<body>` only adds attributes to the first.
                return TokenSinkResult::Continue;
            }
            if reconstructs(name) {
                self.reopen();
            }
            if is_void(name) {
                self.write_start(name, tag);
                return TokenSinkResult::Continue;
            }
            if matches!(name, "svg" | "math") && tag.self_closing {
                self.write_start(name, tag);
                self.write_end(name);
                return TokenSinkResult::Continue;
            }
        }
        self.open_element(tag, raw.is_some());
        match raw {
            None => TokenSinkResult::Continue,
            Some(Raw::Data(kind)) => TokenSinkResult::RawData(kind),
            Some(Raw::Plaintext) => TokenSinkResult::Plaintext,
        }
    }

    /// Writes `tag` and pushes it, unless `max_open` elements are open. Raw-text elements hold
    /// only text, so one may open beyond the cap without nesting anything deeper (its text
    /// would otherwise spill into the page).
    fn open_element(&mut self, tag: &Tag, raw: bool) {
        let name = &*tag.name;
        if !raw && self.open.len() >= self.max_open {
            self.dropped = true;
            return;
        }
        // Written escaped (see `text`), the content of these would show its references; as
        // `<span>` it is the same words, read as text.
        let written = if matches!(name, "xmp" | "plaintext" | "noembed") {
            "span"
        } else {
            name
        };
        self.write_start(written, tag);
        if matches!(name, "svg" | "math") {
            self.foreign += 1;
        }
        match self.counts.get_mut(name) {
            Some(count) => *count += 1,
            None => {
                self.counts.insert(name.to_owned(), 1);
            }
        }
        let formatting = self.foreign == 0 && is_formatting(name);
        self.open.push(Open {
            name: tag.name.clone(),
            kind: kind_of(name),
            raw,
            reopen: formatting.then(|| Box::new(tag.clone())),
            written: (written != name).then_some("span"),
        });
    }

    /// Opens again the formatting elements that closed only because an element they were in
    /// closed (`<b>` in `<p>` at the next `<p>`, `<i>` at a misnested `</b>`), where the tree
    /// builder would reconstruct them: before text and before most start tags.
    ///
    /// What is written this way comes out of a budget the size of the page: a page that closes
    /// and reopens formatting elements (with long attributes) at every step would otherwise
    /// make the output many times its own size. Past the budget, nothing is reopened.
    fn reopen(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        for tag in std::mem::take(&mut self.pending) {
            let size = tag.name.len()
                + tag
                    .attrs
                    .iter()
                    .take(self.max_attrs)
                    .map(|a| a.name.local.len() + a.value.len() + 4)
                    .sum::<usize>()
                + 2;
            if size > self.reopen_budget {
                self.reopen_budget = 0;
                return;
            }
            self.reopen_budget -= size;
            self.open_element(&tag, false);
        }
    }

    /// The end tags the tree builder would imply before the start tag `name` (outside foreign
    /// content), written out.
    fn imply_end_tags(&mut self, name: &str) {
        match name {
            "li" => {
                self.close_item(&["li"]);
                self.close_p();
            }
            "dd" | "dt" => {
                self.close_item(&["dd", "dt"]);
                self.close_p();
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.close_p();
                if self.open.last().is_some_and(|e| is_heading(&e.name)) {
                    self.close_from(self.open.len() - 1);
                }
            }
            "button" | "nobr" | "a" => self.close_in(Scope::Default, &[name]),
            "td" | "th" => self.close_in(Scope::Table, &["td", "th"]),
            "tr" => {
                self.close_in(Scope::Table, &["td", "th"]);
                self.close_in(Scope::Table, &["tr"]);
            }
            "tbody" | "thead" | "tfoot" => {
                self.close_in(Scope::Table, &["td", "th"]);
                self.close_in(Scope::Table, &["tr"]);
                self.close_in(Scope::Table, &["tbody", "thead", "tfoot"]);
            }
            // `<table>` directly inside a table (not in a cell) ends that table.
            "table" => {
                if let Some(i) = self.find(Scope::Anywhere, &["table", "td", "th", "caption"])
                    && &*self.open[i].name == "table"
                {
                    self.close_from(i);
                }
            }
            "option" => self.close_current("option"),
            "optgroup" => {
                self.close_current("option");
                self.close_current("optgroup");
            }
            "body" => self.close_current("head"),
            _ if closes_p(name) => self.close_p(),
            _ => {}
        }
    }

    /// An end tag: closes its element and everything inside it, or is dropped.
    fn end(&mut self, name: &LocalName) {
        let name = &**name;
        if self.foreign == 0 {
            // `</i>` for an `<i>` waiting to be opened again: it stays closed.
            if let Some(at) = self.pending.iter().rposition(|t| &*t.name == name) {
                self.pending.remove(at);
                return;
            }
            match name {
                // The tree builder does not close anything for these; what follows is read
                // as part of the body.
                "html" | "body" => return,
                // `</br>` is read as `<br>`.
                "br" => {
                    self.out.push_str("<br>");
                    return;
                }
                // `</p>` with no paragraph open makes an empty one.
                "p" if self.find(Scope::Button, &["p"]).is_none() => {
                    self.out.push_str("<p></p>");
                    return;
                }
                _ => {}
            }
        }
        let scope = if self.foreign > 0 {
            Scope::Anywhere
        } else {
            match name {
                "p" => Scope::Button,
                "li" => Scope::ListItem,
                "td" | "th" | "tr" | "tbody" | "thead" | "tfoot" | "table" | "caption"
                | "colgroup" => Scope::Table,
                _ if is_formatting(name) || is_special(name) => Scope::Default,
                _ => Scope::Special,
            }
        };
        let found = if self.foreign == 0 && is_heading(name) {
            self.find(scope, &HEADINGS)
        } else {
            self.find(scope, &[name])
        };
        let Some(i) = found else { return };
        // `</b>` with a block open inside the `<b>`: the tree builder keeps the block open
        // (and the bold inside it), as deep as before, so the end tag changes nothing here.
        if self.foreign == 0
            && is_formatting(name)
            && self.open[i + 1..].iter().any(|e| e.kind & SPECIAL != 0)
        {
            return;
        }
        self.close_from(i);
    }

    /// Text, escaped, also inside raw-text elements: the tree builder ignores `<script>` or
    /// `<noscript>` in some places (inside `<colgroup>` in a `<template>`, for one), and then
    /// reads what follows as markup, so raw text written as it came would be a way to nest
    /// without limit. Where the tree builder does read raw text, the references show as they
    /// are (`&lt;`); that text is in scripts, styles and other parts the converter skips.
    fn text(&mut self, text: &str) {
        if self.foreign == 0 && !self.open.last().is_some_and(|e| e.raw) {
            self.reopen();
        }
        escape_into(&mut self.out, text, false);
    }

    /// The doctype decides quirks mode, which changes how tables and paragraphs nest; it is
    /// written back with the same name and identifiers.
    fn doctype(&mut self, doctype: &Doctype) {
        let name = doctype.name.as_deref().filter(|_| !doctype.force_quirks);
        let Some(name) = name else {
            // No name (or a broken doctype) forces quirks mode; so does this.
            self.out.push_str("<!DOCTYPE>");
            return;
        };
        self.out.push_str("<!DOCTYPE ");
        self.out.push_str(name);
        match (&doctype.public_id, &doctype.system_id) {
            (Some(public), system) => {
                self.out.push_str(" PUBLIC ");
                push_quoted(&mut self.out, public);
                if let Some(system) = system {
                    self.out.push(' ');
                    push_quoted(&mut self.out, system);
                }
            }
            (None, Some(system)) => {
                self.out.push_str(" SYSTEM ");
                push_quoted(&mut self.out, system);
            }
            (None, None) => {}
        }
        self.out.push('>');
    }

    /// The innermost open element named one of `names`, looking no further back than `scope`.
    /// At most one step per open element, and none when no such element is open.
    fn find(&self, scope: Scope, names: &[&str]) -> Option<usize> {
        if names
            .iter()
            .all(|n| self.counts.get(*n).is_none_or(|c| *c == 0))
        {
            return None;
        }
        let stop = match scope {
            Scope::Default => STOPS_DEFAULT,
            Scope::Button => STOPS_DEFAULT | BUTTON,
            Scope::ListItem => STOPS_DEFAULT | LIST,
            Scope::Table => STOPS_TABLE,
            Scope::Special => SPECIAL,
            Scope::Anywhere => 0,
        };
        for (i, e) in self.open.iter().enumerate().rev() {
            if names.contains(&&*e.name) {
                return Some(i);
            }
            if e.kind & stop != 0 {
                return None;
            }
        }
        None
    }

    fn close_in(&mut self, scope: Scope, names: &[&str]) {
        if let Some(i) = self.find(scope, names) {
            self.close_from(i);
        }
    }

    fn close_p(&mut self) {
        self.close_in(Scope::Button, &["p"]);
    }

    fn close_current(&mut self, name: &str) {
        if self.open.last().is_some_and(|e| &*e.name == name) {
            self.close_from(self.open.len() - 1);
        }
    }

    /// Before `<li>` (or `<dd>`, `<dt>`): the previous item closes, unless a special element
    /// other than `<address>`, `<div>` or `<p>` is open inside it.
    fn close_item(&mut self, items: &[&str]) {
        let item = self.find(Scope::Anywhere, items);
        if let Some(i) = item
            && !self.open[i + 1..]
                .iter()
                .any(|e| e.kind & SPECIAL != 0 && !matches!(&*e.name, "address" | "div" | "p"))
        {
            self.close_from(i);
        }
    }

    /// Closes the open elements from index `i` up, innermost first.
    /// The formatting elements closed above `i` are opened again later (see `reopen`),
    /// unless a cell, caption, template or object closes too: the tree builder forgets
    /// formatting at those.
    fn close_from(&mut self, i: usize) {
        let mut reopen = Vec::new();
        while self.open.len() > i {
            let Some(e) = self.open.pop() else { break };
            if matches!(&*e.name, "svg" | "math") {
                self.foreign -= 1;
            }
            if let Some(c) = self.counts.get_mut(&*e.name) {
                *c -= 1;
            }
            self.write_end(e.written.unwrap_or(&e.name));
            if matches!(
                &*e.name,
                "td" | "th" | "caption" | "template" | "applet" | "marquee" | "object"
            ) {
                reopen.clear();
                self.pending.clear();
            } else if self.open.len() > i
                && let Some(tag) = e.reopen
            {
                reopen.push(*tag);
            }
        }
        reopen.reverse();
        for tag in reopen {
            // At most three alike, as the tree builder keeps ("Noah's Ark"): a run of
            // `<b><div></b>` closed again does not come back as hundreds of `<b>`.
            let alike: Vec<usize> = (0..self.pending.len())
                .filter(|&k| self.pending[k].equiv_modulo_attr_order(&tag))
                .collect();
            if alike.len() >= 3 {
                self.pending.remove(alike[0]);
            }
            self.pending.push(tag);
        }
        self.pending.truncate(MAX_PENDING);
    }

    fn write_start(&mut self, name: &str, tag: &Tag) {
        self.out.push('<');
        self.out.push_str(name);
        if name == "select"
            && !tag
                .attrs
                .iter()
                .take(self.max_attrs)
                .any(|a| &*a.name.local == "multiple")
        {
            // See [`SELECT_MULTIPLE`]. First, so that it is the first attribute looked at.
            self.out.push_str(SELECT_MULTIPLE);
        }
        for attr in tag.attrs.iter().take(self.max_attrs) {
            self.out.push(' ');
            self.out.push_str(&attr.name.local);
            self.out.push_str("=\"");
            escape_into(&mut self.out, &attr.value, true);
            self.out.push('"');
        }
        self.out.push('>');
    }

    fn write_end(&mut self, name: &str) {
        self.out.push_str("</");
        self.out.push_str(name);
        self.out.push('>');
    }
}

#[derive(Clone, Copy)]
enum Raw {
    Data(RawKind),
    Plaintext,
}

/// The elements after whose start tag the tree builder switches the tokenizer out of markup.
fn raw_kind(name: &str) -> Option<Raw> {
    Some(match name {
        "script" => Raw::Data(RawKind::ScriptData),
        "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => {
            Raw::Data(RawKind::Rawtext)
        }
        "title" | "textarea" => Raw::Data(RawKind::Rcdata),
        "plaintext" => Raw::Plaintext,
        _ => return None,
    })
}

/// Elements the tree builder never keeps open in HTML content.
fn is_void(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "base"
            | "basefont"
            | "bgsound"
            | "br"
            | "col"
            | "embed"
            | "frame"
            | "hr"
            | "image"
            | "img"
            | "input"
            | "keygen"
            | "link"
            | "meta"
            | "param"
            | "source"
            | "track"
            | "wbr"
    )
}

/// Void elements that end foreign content (the rest open an element inside `<svg>`).
fn leaves_foreign_content(name: &str) -> bool {
    matches!(name, "br" | "embed" | "hr" | "img" | "meta")
}

fn is_heading(name: &str) -> bool {
    matches!(name, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
}

fn is_formatting(name: &str) -> bool {
    matches!(
        name,
        "a" | "b"
            | "big"
            | "code"
            | "em"
            | "font"
            | "i"
            | "nobr"
            | "s"
            | "small"
            | "strike"
            | "strong"
            | "tt"
            | "u"
    )
}

/// Start tags before which the tree builder reconstructs formatting elements: all but most
/// special elements.
fn reconstructs(name: &str) -> bool {
    !is_special(name)
        || matches!(
            name,
            "applet"
                | "area"
                | "br"
                | "button"
                | "embed"
                | "img"
                | "input"
                | "keygen"
                | "marquee"
                | "object"
                | "select"
                | "wbr"
                | "xmp"
        )
}

/// Start tags that close an open `<p>` first.
fn closes_p(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "center"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "header"
            | "hgroup"
            | "main"
            | "menu"
            | "nav"
            | "ol"
            | "p"
            | "search"
            | "section"
            | "summary"
            | "ul"
            | "pre"
            | "listing"
            | "form"
            | "plaintext"
            | "xmp"
            | "hr"
    )
}

/// The HTML standard's special elements (HTML namespace).
fn is_special(name: &str) -> bool {
    is_heading(name)
        || matches!(
            name,
            "address"
                | "applet"
                | "area"
                | "article"
                | "aside"
                | "base"
                | "basefont"
                | "bgsound"
                | "blockquote"
                | "body"
                | "br"
                | "button"
                | "caption"
                | "center"
                | "col"
                | "colgroup"
                | "dd"
                | "details"
                | "dialog"
                | "dir"
                | "div"
                | "dl"
                | "dt"
                | "embed"
                | "fieldset"
                | "figcaption"
                | "figure"
                | "footer"
                | "form"
                | "frame"
                | "frameset"
                | "head"
                | "header"
                | "hgroup"
                | "hr"
                | "html"
                | "iframe"
                | "img"
                | "input"
                | "keygen"
                | "li"
                | "link"
                | "listing"
                | "main"
                | "marquee"
                | "menu"
                | "meta"
                | "nav"
                | "noembed"
                | "noframes"
                | "noscript"
                | "object"
                | "ol"
                | "p"
                | "param"
                | "plaintext"
                | "pre"
                | "script"
                | "search"
                | "section"
                | "select"
                | "source"
                | "style"
                | "summary"
                | "table"
                | "tbody"
                | "td"
                | "template"
                | "textarea"
                | "tfoot"
                | "th"
                | "thead"
                | "title"
                | "tr"
                | "track"
                | "ul"
                | "wbr"
                | "xmp"
        )
}

const HEADINGS: [&str; 6] = ["h1", "h2", "h3", "h4", "h5", "h6"];

/// One of the HTML standard's special elements.
const SPECIAL: u8 = 1;
/// Ends the default scope: `<table>`, cells, `<caption>`, `<template>`, `<html>`, `<object>`,
/// `<marquee>`, `<applet>`.
const STOPS_DEFAULT: u8 = 2;
/// Ends the table scope: `<table>`, `<template>`, `<html>`.
const STOPS_TABLE: u8 = 4;
const BUTTON: u8 = 8;
/// `<ol>` or `<ul>`, which end the list item scope.
const LIST: u8 = 16;

fn kind_of(name: &str) -> u8 {
    let mut kind = 0;
    if is_special(name) {
        kind |= SPECIAL;
    }
    if matches!(
        name,
        "applet" | "caption" | "html" | "table" | "td" | "th" | "marquee" | "object" | "template"
    ) {
        kind |= STOPS_DEFAULT;
    }
    if matches!(name, "html" | "table" | "template") {
        kind |= STOPS_TABLE;
    }
    if name == "button" {
        kind |= BUTTON;
    }
    if matches!(name, "ol" | "ul") {
        kind |= LIST;
    }
    kind
}

/// `text` with `&`, `<` and `>` (and `"` in an attribute value) as character references.
fn escape_into(out: &mut String, text: &str, attribute: bool) {
    let mut from = 0;
    for (i, b) in text.bytes().enumerate() {
        let reference = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' if attribute => "&quot;",
            _ => continue,
        };
        out.push_str(&text[from..i]);
        out.push_str(reference);
        from = i + 1;
    }
    out.push_str(&text[from..]);
}

/// A doctype identifier in quotes it does not contain (the tokenizer ends an identifier at
/// its own quote, so at most one kind occurs).
fn push_quoted(out: &mut String, id: &str) {
    let quote = if id.contains('"') { '\'' } else { '"' };
    out.push(quote);
    out.push_str(id);
    out.push(quote);
}

/// Replaces the children of every element `max` levels below `root` with one text node of
/// their text; whether any was replaced.
fn cut_at(root: &Rc<Node>, max: usize) -> bool {
    let mut cut = false;
    let mut pending: Vec<(Rc<Node>, usize)> = vec![(Rc::clone(root), 0)];
    while let Some((node, depth)) = pending.pop() {
        if depth >= max {
            let deeper = node
                .children
                .borrow()
                .iter()
                .any(|c| matches!(c.data, NodeData::Element { .. }));
            if deeper {
                let text = text_below(&node);
                let leaf = Node::new(NodeData::Text {
                    contents: RefCell::new(text.into()),
                });
                leaf.parent.set(Some(Rc::downgrade(&node)));
                // The old subtree is dropped here; rcdom drops nodes without recursion.
                *node.children.borrow_mut() = vec![leaf];
                cut = true;
            }
            continue;
        }
        for child in node.children.borrow().iter() {
            pending.push((Rc::clone(child), depth + 1));
        }
    }
    cut
}

/// Merges every run of adjacent alike inline siblings into its first element, exactly as
/// htmd's Markdown writer does before it writes a node's children, so that the writer finds
/// nothing left to merge.
///
/// htmd merges two adjacent elements when both hold one text node and neither is a block
/// element or a link, their names are the same (or `<i>`/`<em>`, `<b>`/`<strong>`) and so are
/// their attributes; but it does so by removing each merged node from the middle of the list
/// of children and copying the text merged so far, which is quadratic in the run:
/// `<nobr>x` repeated 400,000 times (each `<nobr>` closes the one before, so they are
/// siblings) or `<span>x</span>` repeated took 12 to 14 seconds to write. Here each run is
/// merged in one pass, its text built once: linear in the tree.
pub(crate) fn merge_alike_inline_siblings(root: &Rc<Node>) {
    let mut pending = vec![Rc::clone(root)];
    while let Some(node) = pending.pop() {
        let mut children = node.children.borrow_mut();
        if children.len() > 1 {
            let mut kept: Vec<Rc<Node>> = Vec::with_capacity(children.len());
            let mut text: Option<String> = None;
            for child in children.drain(..) {
                if let Some(first) = kept.last()
                    && let Some(more) = alike_text(first, &child)
                {
                    text.get_or_insert_with(|| single_text(first).unwrap_or_default())
                        .push_str(&more);
                    continue;
                }
                if let (Some(first), Some(text)) = (kept.last(), text.take()) {
                    set_single_text(first, text);
                }
                kept.push(child);
            }
            if let (Some(first), Some(text)) = (kept.last(), text.take()) {
                set_single_text(first, text);
            }
            *children = kept;
        }
        pending.extend(children.iter().cloned());
    }
}

/// The text of `next` when htmd would merge it into `first` (its `can_combine`, htmd 0.5).
fn alike_text(first: &Node, next: &Node) -> Option<String> {
    let (
        NodeData::Element {
            name: name1,
            attrs: attrs1,
            template_contents: template1,
            mathml_annotation_xml_integration_point: mathml1,
        },
        NodeData::Element {
            name: name2,
            attrs: attrs2,
            template_contents: template2,
            mathml_annotation_xml_integration_point: mathml2,
        },
    ) = (&first.data, &next.data)
    else {
        return None;
    };
    let (local1, local2) = (&*name1.local, &*name2.local);
    let names_alike = name1 == name2
        || matches!(
            (local1, local2),
            ("i", "em") | ("em", "i") | ("b", "strong") | ("strong", "b")
        );
    if is_markdown_block(local1)
        || local1 == "a"
        || !names_alike
        || !has_single_text(first)
        || template1.borrow().is_some()
        || template2.borrow().is_some()
        || mathml1 != mathml2
        || *attrs1.borrow() != *attrs2.borrow()
    {
        return None;
    }
    single_text(next)
}

fn has_single_text(node: &Node) -> bool {
    matches!(&**node.children.borrow(), [only] if matches!(only.data, NodeData::Text { .. }))
}

/// The text of `node` when its only child is a text node.
fn single_text(node: &Node) -> Option<String> {
    let children = node.children.borrow();
    match &**children {
        [only] => match &only.data {
            NodeData::Text { contents } => Some(contents.borrow().to_string()),
            _ => None,
        },
        _ => None,
    }
}

fn set_single_text(node: &Node, text: String) {
    if let [only] = &**node.children.borrow()
        && let NodeData::Text { contents } = &only.data
    {
        *contents.borrow_mut() = text.into();
    }
}

/// How much larger than its cells (see [`unpad_wide_tables`]) a table's padded Markdown may
/// be, times, plus [`PAD_ALLOWANCE`] bytes.
const PAD_FACTOR: usize = 8;

/// See [`PAD_FACTOR`].
const PAD_ALLOWANCE: usize = 16 * 1024;

/// Turns the header cells of each table whose Markdown would be far larger than its cells into
/// plain cells, so that htmd writes it as it writes any table without headers (a paragraph per
/// cell) instead of as a Markdown table.
///
/// htmd writes a table that has headers (`<th>` or `<thead>`) as pipe rows, every row with as
/// many cells as the widest row and every cell padded to the widest cell of its column: a
/// header row of n cells over n rows of one cell is n² cells (`<table><tr>`, `<th>h` 1,000
/// times, `<tr><td>y` 1,000 times: 11 KB in, 4 MB out), and one long cell over many short
/// rows is its length times theirs. Here the size of that padded table is reckoned from the
/// tree (each cell's text and links, as an estimate of its Markdown) in one pass over the
/// tree; above [`PAD_FACTOR`] times its unpadded cells plus [`PAD_ALLOWANCE`], `<th>` becomes
/// `<td>` and `<thead>` `<tbody>` (nested tables are judged by themselves). htmd handles those
/// alike except for the headers. Real tables are padded far less: they are written as before.
pub(crate) fn unpad_wide_tables(root: &Rc<Node>) {
    // Every node in document order; then each one's estimated Markdown size, children first.
    let mut order = Vec::new();
    let mut pending = vec![Rc::clone(root)];
    while let Some(node) = pending.pop() {
        pending.extend(node.children.borrow().iter().rev().cloned());
        order.push(node);
    }
    let mut size: HashMap<*const Node, usize> = HashMap::with_capacity(order.len());
    for node in order.iter().rev() {
        let own = match &node.data {
            NodeData::Text { contents } => contents.borrow().chars().count(),
            NodeData::Element { attrs, .. } => {
                4 + attrs
                    .borrow()
                    .iter()
                    .filter(|a| matches!(&*a.name.local, "href" | "src"))
                    .map(|a| a.value.len())
                    .sum::<usize>()
            }
            _ => 0,
        };
        let below: usize = node
            .children
            .borrow()
            .iter()
            .map(|c| size.get(&Rc::as_ptr(c)).copied().unwrap_or(0))
            .sum();
        size.insert(Rc::as_ptr(node), own + below);
    }
    let mut pending = vec![(Rc::clone(root), false)];
    while let Some((node, in_cell)) = pending.pop() {
        let name = element_name(&node);
        if name == Some("table") && !in_cell && pads_too_much(&node, &size) {
            plain_cells(&node);
        }
        let in_cell = in_cell || matches!(name, Some("td" | "th"));
        pending.extend(
            node.children
                .borrow()
                .iter()
                .map(|c| (Rc::clone(c), in_cell)),
        );
    }
}

fn element_name(node: &Node) -> Option<&str> {
    match &node.data {
        NodeData::Element { name, .. } => Some(&name.local),
        _ => None,
    }
}

/// Whether htmd's pipe table of `table` (its rows: `<tr>` children of it and of its
/// `<thead>`, `<tbody>` and `<tfoot>`) would be more than [`PAD_FACTOR`] times its cells plus
/// [`PAD_ALLOWANCE`]. Linear in the rows and cells of `table`.
fn pads_too_much(table: &Node, size: &HashMap<*const Node, usize>) -> bool {
    let mut widths: Vec<usize> = Vec::new();
    let (mut rows, mut cells) = (0usize, 0usize);
    let mut row = |tr: &Node| {
        rows += 1;
        let mut column = 0;
        for cell in tr.children.borrow().iter() {
            if matches!(element_name(cell), Some("td" | "th")) {
                let width = size.get(&Rc::as_ptr(cell)).copied().unwrap_or(0);
                cells = cells.saturating_add(width + 3);
                match widths.get_mut(column) {
                    Some(w) => *w = (*w).max(width),
                    None => widths.push(width),
                }
                column += 1;
            }
        }
    };
    for child in table.children.borrow().iter() {
        match element_name(child) {
            Some("tr") => row(child),
            Some("thead" | "tbody" | "tfoot") => {
                for tr in child.children.borrow().iter() {
                    if element_name(tr) == Some("tr") {
                        row(tr);
                    }
                }
            }
            _ => {}
        }
    }
    let line: usize = widths.iter().map(|w| w + 3).sum();
    let padded = line.saturating_mul(rows + 1);
    padded
        > cells
            .saturating_mul(PAD_FACTOR)
            .saturating_add(PAD_ALLOWANCE)
}

/// Renames each `<th>` below `table` to `<td>` and each `<thead>` to `<tbody>`, except in
/// nested tables.
fn plain_cells(table: &Rc<Node>) {
    let mut pending = vec![Rc::clone(table)];
    while let Some(node) = pending.pop() {
        let mut children = node.children.borrow_mut();
        for child in children.iter_mut() {
            let plain = match element_name(child) {
                Some("th") => Some(html5ever::local_name!("td")),
                Some("thead") => Some(html5ever::local_name!("tbody")),
                _ => None,
            };
            if let Some(plain) = plain {
                *child = renamed(child, plain);
            }
            if element_name(child) != Some("table") {
                pending.push(Rc::clone(child));
            }
        }
    }
}

/// A copy of the element `node` named `local`, holding its children, in its place.
fn renamed(node: &Rc<Node>, local: LocalName) -> Rc<Node> {
    let NodeData::Element {
        name,
        attrs,
        template_contents,
        mathml_annotation_xml_integration_point,
    } = &node.data
    else {
        return Rc::clone(node);
    };
    let copy = Node::new(NodeData::Element {
        name: html5ever::QualName::new(name.prefix.clone(), name.ns.clone(), local),
        attrs: RefCell::new(attrs.borrow().clone()),
        template_contents: RefCell::new(template_contents.borrow().clone()),
        mathml_annotation_xml_integration_point: *mathml_annotation_xml_integration_point,
    });
    let children = std::mem::take(&mut *node.children.borrow_mut());
    for child in &children {
        child.parent.set(Some(Rc::downgrade(&copy)));
    }
    *copy.children.borrow_mut() = children;
    copy.parent.set(node.parent.take());
    copy
}

/// htmd's block elements (the CommonMark HTML blocks), which it never merges.
fn is_markdown_block(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "base"
            | "basefont"
            | "blockquote"
            | "body"
            | "caption"
            | "center"
            | "col"
            | "colgroup"
            | "dd"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "frame"
            | "frameset"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "head"
            | "header"
            | "hr"
            | "html"
            | "iframe"
            | "legend"
            | "li"
            | "link"
            | "main"
            | "menu"
            | "menuitem"
            | "nav"
            | "noframes"
            | "ol"
            | "optgroup"
            | "option"
            | "p"
            | "param"
            | "pre"
            | "script"
            | "search"
            | "section"
            | "style"
            | "summary"
            | "table"
            | "tbody"
            | "td"
            | "textarea"
            | "tfoot"
            | "th"
            | "thead"
            | "title"
            | "tr"
            | "track"
            | "ul"
    )
}

/// The text of every node below `node`, in document order, without scripts and styles; text
/// from separate nodes is kept apart by a space.
fn text_below(node: &Rc<Node>) -> String {
    let mut out = String::new();
    let mut pending: Vec<Rc<Node>> = node.children.borrow().iter().rev().cloned().collect();
    while let Some(n) = pending.pop() {
        match &n.data {
            NodeData::Text { contents } => {
                let t = contents.borrow();
                if !out.is_empty()
                    && !out.ends_with(char::is_whitespace)
                    && !t.starts_with(char::is_whitespace)
                {
                    out.push(' ');
                }
                out.push_str(&t);
            }
            NodeData::Element { name, .. } if matches!(&*name.local, "script" | "style") => {}
            _ => pending.extend(n.children.borrow().iter().rev().cloned()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `html` as [`renest`] writes it: the deepest nesting, and the end tags that did not
    /// close the innermost open element (none, for a well-nested stream).
    fn nesting(html: &str) -> (usize, Vec<String>) {
        struct Check {
            open: RefCell<Vec<String>>,
            deepest: RefCell<usize>,
            last_void: RefCell<Option<String>>,
            misnested: RefCell<Vec<String>>,
        }
        impl TokenSink for Check {
            type Handle = ();
            fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
                let last_void = self.last_void.borrow_mut().take();
                let Token::TagToken(tag) = token else {
                    return TokenSinkResult::Continue;
                };
                let name = tag.name.to_string();
                let mut open = self.open.borrow_mut();
                match tag.kind {
                    TagKind::StartTag if is_void(&name) => {
                        *self.last_void.borrow_mut() = Some(name);
                    }
                    TagKind::StartTag => {
                        open.push(name.clone());
                        let mut deepest = self.deepest.borrow_mut();
                        *deepest = (*deepest).max(open.len());
                        match raw_kind(&name) {
                            Some(Raw::Data(kind)) => return TokenSinkResult::RawData(kind),
                            Some(Raw::Plaintext) => return TokenSinkResult::Plaintext,
                            None => {}
                        }
                    }
                    // A void element written as a start tag and its end tag.
                    TagKind::EndTag if last_void.as_deref() == Some(&*name) => {}
                    TagKind::EndTag if open.last() == Some(&name) => {
                        open.pop();
                    }
                    TagKind::EndTag => self.misnested.borrow_mut().push(name),
                }
                TokenSinkResult::Continue
            }
        }
        let check = Check {
            open: RefCell::new(Vec::new()),
            deepest: RefCell::new(0),
            last_void: RefCell::new(None),
            misnested: RefCell::new(Vec::new()),
        };
        let tokenizer = Tokenizer::new(check, TokenizerOpts::default());
        let input = BufferQueue::default();
        input.push_back(StrTendril::from_slice(html));
        while !matches!(tokenizer.feed(&input), TokenizerResult::Done) {}
        tokenizer.end();
        let check = tokenizer.sink;
        (check.deepest.into_inner(), check.misnested.into_inner())
    }

    /// Random tag soup (misnesting, tables, formatting elements with distinct attributes,
    /// foreign content, raw text, stray end tags), re-nested under a cap of 8: always
    /// well-nested within the cap, and html5ever's tree of it within `2 × 8 + 4` levels.
    #[test]
    fn random_tag_soup_stays_within_the_cap() {
        const TAGS: &[&str] = &[
            "div",
            "p",
            "span",
            "b",
            "i",
            "a",
            "li",
            "ul",
            "ol",
            "dd",
            "dt",
            "dl",
            "table",
            "tr",
            "td",
            "th",
            "tbody",
            "caption",
            "colgroup",
            "col",
            "form",
            "button",
            "select",
            "option",
            "optgroup",
            "svg",
            "math",
            "foreignObject",
            "desc",
            "title",
            "g",
            "mi",
            "mtext",
            "annotation-xml",
            "input",
            "img",
            "br",
            "hr",
            "image",
            "template",
            "object",
            "marquee",
            "nobr",
            "h1",
            "h2",
            "pre",
            "script",
            "style",
            "textarea",
            "xmp",
            "noscript",
            "iframe",
            "font",
            "body",
            "html",
            "head",
            "frameset",
            "frame",
            "ruby",
            "rt",
            "rp",
            "center",
            "address",
            "listing",
            "applet",
            "plaintext",
            "em",
            "strong",
            "u",
            "s",
            "code",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % below as u64) as usize
        };
        let converter = htmd::HtmlToMarkdown::new();
        for case in 0..400 {
            let mut html = String::new();
            for _ in 0..300 {
                let tag = TAGS[next(TAGS.len())];
                // `<plaintext>` ends all markup; keep it rare so the rest gets exercised.
                if tag == "plaintext" && next(20) != 0 {
                    continue;
                }
                match next(10) {
                    0..=4 => {
                        html.push_str(&format!("<{tag}"));
                        if next(2) == 0 {
                            html.push_str(&format!(" x=\"{}\"", next(1000)));
                        }
                        if tag == "font" && next(2) == 0 {
                            html.push_str(" color=red");
                        }
                        html.push_str(if next(8) == 0 { "/>" } else { ">" });
                    }
                    5..=7 => html.push_str(&format!("</{tag}>")),
                    8 => html.push_str("t<i>&amp;</b>"),
                    _ => html.push_str("<!-- c -->x"),
                }
            }
            let renested = renest(&html, 8);
            let (deepest, misnested) = nesting(&renested.html);
            assert!(misnested.is_empty(), "case {case}: {misnested:?}\n{html}");
            assert!(deepest <= 9, "case {case}: {deepest}\n{html}");
            let built = depth(&converter.html_to_tree(&renested.html).unwrap());
            assert!(
                built <= 2 * 8 + 4,
                "case {case}: {built}\n{html}\n{}",
                renested.html
            );
        }
    }

    /// Formatting elements with long attributes, closed and reopened at every paragraph: the
    /// output stays within a few times the page (the tree builder alone would have copied the
    /// attributes into every paragraph), beside a twin whose bold is reopened as usual.
    #[test]
    fn reopening_is_bounded_by_the_page() {
        let attrs: String = (0..20)
            .map(|k| format!("<b x=\"{k}{}\">", "v".repeat(5_000)))
            .collect();
        let html = format!("<p>{attrs}{}", "<p>x".repeat(100_000));
        let renested = renest(&html, MAX_OPEN);
        assert!(
            renested.html.len() < 4 * html.len(),
            "{}",
            renested.html.len()
        );
        let twin = renest("<p><b>bold<p>still bold", MAX_OPEN);
        assert_eq!(twin.html, "<p><b>bold</b></p><p><b>still bold");
    }

    /// Every page shape an outside attacker served, and a few more, 2,000 times over (far past
    /// the cap; the depths do not grow with more): within the same bounds.
    #[test]
    fn the_attackers_page_shapes_stay_within_the_cap() {
        let shapes: &[(&str, &str)] = &[
            ("", "<div>"),
            ("", "<div></span>"),
            ("", "<div/>"),
            ("", "<b><i>"),
            ("", "<a href=x>"),
            ("", "<table><tr><td>"),
            ("<svg>", "<g>"),
            ("<math>", "<mrow>"),
            ("", "<template>"),
            ("", "<ul><li>"),
            ("", "<font>"),
            ("", "<p><b>"),
            ("", "<nobr>"),
            ("<select>", "<optgroup>"),
            ("", "<blockquote>"),
            ("", "<pre>"),
            ("", "<dl><dd>"),
            ("", "<DIV>"),
            ("", "<div x=\">\">"),
            ("<!-- -->", "<div><!--></div>-->"),
            ("", "<x-a>"),
            ("", "<h1><h2>"),
            ("", "<em><strong>"),
            ("", "<q>"),
            ("", "<code>"),
            ("", "<li>"),
            ("", "<frameset>"),
            ("", "<button><div>"),
            ("", "<object>"),
            ("", "<svg><foreignObject>"),
            ("", "<noscript><div>"),
            ("<svg><![CDATA[<div>", "<g>"),
            ("", "<div\0>"),
            ("", "<div\t>"),
            ("", "<div></div x>"),
            ("<svg>", "<input>"),
            ("", "<template><colgroup><noscript>"),
            ("", "<b x=1><p>"),
        ];
        let converter = htmd::HtmlToMarkdown::new();
        for (head, unit) in shapes {
            let html = format!("<html><body>{head}{}deep words", unit.repeat(2_000));
            let renested = renest(&html, MAX_OPEN);
            let (deepest, misnested) = nesting(&renested.html);
            assert!(misnested.is_empty(), "{unit}: {misnested:?}");
            assert!(deepest <= MAX_OPEN + 1, "{unit}: {deepest}");
            let built = depth(&converter.html_to_tree(&renested.html).unwrap());
            assert!(built <= 2 * MAX_OPEN + 4, "{unit}: {built}");
        }
    }

    /// (attack, benign twin): each attack, re-nested, is well-nested and at most `MAX_OPEN`
    /// (+1 raw-text element) deep, and html5ever's tree of it at most `2 × MAX_OPEN + 4` deep,
    /// so that the tree builder's scope checks cost at most that per tag; it is cut, and its
    /// words are kept. The twin is left whole. The work is bounded by these depths, not timed;
    /// 5,000 repeats are far past the cap (the web_fetch tests serve the full-size pages).
    #[test]
    fn attacks_are_renested_within_the_cap_beside_benign_twins() {
        let n = |s: &str, k: usize| format!("<html><body>{}deep words", s.repeat(k));
        let rows: Vec<(&str, String, String)> = vec![
            ("div", n("<div>", 5_000), n("<div>", 20)),
            ("ul li", n("<ul><li>", 5_000), n("<ul><li>", 10)),
            ("b div /b", n("<b><div></b>", 5_000), n("<b><div></b>", 10)),
            ("div /span", n("<div></span>", 5_000), n("<div></span>", 10)),
            (
                "div table /div /table",
                n("<div><table></div></table>", 5_000),
                n("<div><table></div></table>", 10),
            ),
            (
                "table tr td",
                n("<table><tr><td>", 5_000),
                n("<table><tr><td>", 10),
            ),
        ];
        let converter = htmd::HtmlToMarkdown::new();
        for (label, attack, twin) in rows {
            for (html, is_attack) in [(attack, true), (twin, false)] {
                let renested = renest(&html, MAX_OPEN);
                let (deepest, misnested) = nesting(&renested.html);
                assert!(misnested.is_empty(), "{label}: {misnested:?}");
                assert!(deepest <= MAX_OPEN + 1, "{label}: {deepest}");
                assert_eq!(renested.dropped, is_attack, "{label}");
                let tree = converter.html_to_tree(&renested.html).unwrap();
                let built = depth(&tree);
                assert!(built <= 2 * MAX_OPEN + 4, "{label}: {built}");
                let (tree, cut) = parse(&html, &Stop::default()).unwrap();
                assert_eq!(cut, is_attack, "{label}");
                assert!(
                    converter.tree_to_markdown(&tree).contains("deep words"),
                    "{label}"
                );
            }
        }
    }

    /// Whether any two adjacent siblings are left that htmd's writer would merge (each merge
    /// it does costs a removal from the middle of the list: quadratic in a run).
    fn alike_pairs_left(root: &Rc<Node>) -> usize {
        let mut pairs = 0;
        let mut pending = vec![Rc::clone(root)];
        while let Some(n) = pending.pop() {
            let children = n.children.borrow();
            pairs += children
                .windows(2)
                .filter(|w| alike_text(&w[0], &w[1]).is_some())
                .count();
            pending.extend(children.iter().cloned());
        }
        pairs
    }

    /// (attack, benign twin): runs of alike inline siblings (`<nobr>x` closes the `<nobr>`
    /// before it, so 400,000 of them are siblings; the other formatting elements, spans and
    /// misnested pairs likewise) are merged before htmd writes them, leaving it nothing to
    /// merge; every `x` is kept. The twin converts exactly as htmd alone converts it.
    #[test]
    fn runs_of_alike_inline_siblings_are_merged_beside_benign_twins() {
        // (label, unit, a word of its Markdown, whether htmd would merge a run of it)
        let rows: &[(&str, &str, &str, bool)] = &[
            ("nobr", "<nobr>x", "x", true),
            ("nobr /nobr", "<nobr>x</nobr>", "x", true),
            ("span", "<span>x</span>", "x", true),
            ("b", "<b>x</b>", "**xx", true),
            ("b strong", "<b>x</b><strong>x</strong>", "**xx", true),
            ("i em", "<i>x</i><em>x</em>", "*xx", true),
            ("code", "<code>x</code>", "`xx", true),
            ("font", "<font color=red>x</font>", "x", true),
            // Unalike neighbours and links are never merged; `<b>x` nests, and is cut;
            // misnested `<b><i></b></i>` leaves no run of alike siblings.
            ("b i /b /i", "<b><i></b></i>x", "x", false),
            ("u s", "<u>x</u><s>x</s>", "x", false),
            ("a", "<a>x", "x", false),
            ("a href", "<a href=/x>x</a>", "[x](/x)", false),
            ("b x", "<b>x", "x", false),
        ];
        let converter = htmd::HtmlToMarkdown::new();
        for (label, unit, word, merged) in rows {
            for count in [5_000, 10] {
                let html = format!("<html><body><p>{}</p><p>end words", unit.repeat(count));
                let (tree, _) = parse(&html, &Stop::default()).unwrap();
                let (unmerged, _) = parse(&html, &Stop::default()).unwrap();
                merge_alike_inline_siblings(&tree);
                assert_eq!(alike_pairs_left(&tree), 0, "{label} x{count}");
                let markdown = converter.tree_to_markdown(&tree);
                assert!(markdown.contains(word), "{label} x{count}");
                assert!(markdown.contains("end words"), "{label} x{count}");
                assert_eq!(alike_pairs_left(&unmerged) > 0, *merged, "{label} x{count}");
                if count == 10 {
                    assert_eq!(
                        markdown,
                        converter.tree_to_markdown(&unmerged),
                        "{label} x{count}"
                    );
                }
            }
        }
    }

    /// The `<select>` elements below `root`, and how many of them are `multiple`.
    fn selects(root: &Rc<Node>) -> (usize, usize) {
        let (mut all, mut multiple) = (0, 0);
        let mut pending = vec![Rc::clone(root)];
        while let Some(node) = pending.pop() {
            if let NodeData::Element { name, attrs, .. } = &node.data
                && &*name.local == "select"
            {
                all += 1;
                if attrs.borrow().iter().any(|a| &*a.name.local == "multiple") {
                    multiple += 1;
                }
            }
            pending.extend(node.children.borrow().iter().cloned());
        }
        (all, multiple)
    }

    /// (attack, benign twin): at each `</option>` (the page's, or the one [`renest`] writes
    /// when the next `<option>` closes the last) rcdom looked through the whole `<select>`,
    /// quadratic in its options; every `<select>` reaches the tree builder `multiple`, for
    /// which rcdom looks at nothing. The words around are kept; the twin converts exactly as
    /// htmd alone converts it (the converter skips `<select>`; `<datalist>` options are
    /// written).
    #[test]
    fn selects_are_built_multiple_beside_benign_twins() {
        // (label, the page around the run, the unit repeated, whether the options are written)
        let rows: &[(&str, &str, &str, bool)] = &[
            ("select option", "<select>{}</select>", "<option>x", false),
            (
                "select option /option",
                "<select>{}</select>",
                "<option>x</option>",
                false,
            ),
            (
                "select optgroup",
                "<select>{}</select>",
                "<optgroup label=g><option>x",
                false,
            ),
            (
                "select selectedcontent",
                "<select><button><selectedcontent></selectedcontent></button>{}</select>",
                "<option selected>x</option>",
                false,
            ),
            (
                "select multiple",
                "<select name=s multiple>{}</select>",
                "<option>x",
                false,
            ),
            (
                "select in div",
                "<div><select>{}</select></div>",
                "<option value=v>x",
                false,
            ),
            (
                "svg select",
                "<svg><select><foreignObject>{}</foreignObject></select></svg>",
                "<option>x</option>",
                false,
            ),
            ("datalist", "<datalist>{}</datalist>", "<option>x", true),
        ];
        let converter = crate::page::converter();
        for (label, around, unit, written) in rows {
            for count in [5_000, 10] {
                let html = format!(
                    "<html><body><p>before</p>{}<p>after words</p>",
                    around.replace("{}", &unit.repeat(count))
                );
                let renested = renest(&html, MAX_OPEN).html;
                assert_eq!(
                    renested.matches("<select").count()
                        - renested.matches("<selectedcontent").count(),
                    renested.matches("<select multiple").count()
                        + usize::from(label.contains("multiple")),
                    "{label} x{count}"
                );
                let (tree, _) = parse(&html, &Stop::default()).unwrap();
                let (all, multiple) = selects(&tree);
                assert!(all > 0 || *written, "{label} x{count}");
                assert_eq!(all, multiple, "{label} x{count}");
                let (markdown, _) = crate::page::to_markdown(&html, &Stop::default()).unwrap();
                assert!(markdown.starts_with("before"), "{label} x{count}");
                assert!(markdown.ends_with("after words"), "{label} x{count}");
                assert_eq!(markdown.contains('x'), *written, "{label} x{count}");
                if count == 10 {
                    let alone = converter.convert(&html).unwrap();
                    assert_eq!(markdown, crate::page::tidy(&alone), "{label} x{count}");
                }
            }
        }
    }

    /// (attack, benign twin): htmd pads a table with headers to its widest row and widest
    /// cells, so a long header row over many short rows, or one long cell over many short
    /// rows, comes out the product of the two. Such a table is written as htmd writes it
    /// without headers (each `<th>` a `<td>`, each `<thead>` a `<tbody>`), every word kept and
    /// its size linear in the page; the twin, and real tables however long, are written as
    /// htmd alone writes them, as pipe tables.
    #[test]
    fn tables_padded_past_their_cells_lose_their_headers_beside_benign_twins() {
        let plain = |html: &str| {
            html.replace("<th>", "<td>")
                .replace("<thead>", "<tbody>")
                .replace("</thead>", "</tbody>")
        };
        // (label, attack, benign twin)
        let rows: Vec<(&str, String, String)> = vec![
            (
                "header row over rows of one cell",
                format!(
                    "<table><tr>{}{}</table>",
                    "<th>h".repeat(300),
                    "<tr><td>y".repeat(300)
                ),
                format!(
                    "<table><tr>{}{}</table>",
                    "<th>h".repeat(3),
                    "<tr><td>y".repeat(3)
                ),
            ),
            (
                "a long cell over short rows",
                format!(
                    "<table><tr><th>h<tr><td>{}{}</table>",
                    "x".repeat(20_000),
                    "<tr><td>y".repeat(300)
                ),
                format!(
                    "<table><tr><th>h<tr><td>{}{}</table>",
                    "x".repeat(20),
                    "<tr><td>y".repeat(3)
                ),
            ),
            (
                "a long link over short rows, in a thead",
                format!(
                    "<table><thead><tr><th>h</thead><tr><td><a href=/{}>l</a>{}</table>",
                    "u".repeat(20_000),
                    "<tr><td>y".repeat(300)
                ),
                format!(
                    "<table><thead><tr><th>h</thead><tr><td><a href=/{}>l</a>{}</table>",
                    "u".repeat(20),
                    "<tr><td>y".repeat(3)
                ),
            ),
        ];
        let converter = crate::page::converter();
        let convert = |html: &str| crate::page::tidy(&converter.convert(html).unwrap());
        for (label, attack, twin) in &rows {
            let html = format!("<html><body><p>before</p>{attack}<p>after words</p>");
            let (markdown, _) = crate::page::to_markdown(&html, &Stop::default()).unwrap();
            assert_eq!(markdown, convert(&plain(&html)), "{label}");
            assert!(!markdown.contains('|'), "{label}");
            assert!(
                markdown.len() < 2 * html.len(),
                "{label}: {}",
                markdown.len()
            );
            assert!(markdown.contains("\n\nh\n\n"), "{label}");
            assert!(markdown.ends_with("y\n\nafter words"), "{label}");
            let html = format!("<html><body><p>before</p>{twin}<p>after words</p>");
            let (markdown, _) = crate::page::to_markdown(&html, &Stop::default()).unwrap();
            assert_eq!(markdown, convert(&html), "{label} (twin)");
            assert!(markdown.contains("| h "), "{label} (twin)");
        }
        // Real tables, long or wide, keep their headers.
        let real = [
            format!(
                "<table><thead><tr><th>h</thead>{}</table>",
                "<tr><td>y".repeat(5_000)
            ),
            format!(
                "<table><tr><th>Name<th>Value{}</table>",
                "<tr><td>name<td>a value of some words".repeat(2_000)
            ),
            format!(
                "<table><tr>{}{}</table>",
                "<th>column".repeat(40),
                format!("<tr>{}", "<td>a cell".repeat(40)).repeat(200)
            ),
            format!(
                "<table><tr><th>h<tr><td>{}{}</table>",
                "a longer cell ".repeat(20),
                "<tr><td>y".repeat(40)
            ),
        ];
        for (k, table) in real.iter().enumerate() {
            let html = format!("<html><body>{table}");
            let (markdown, _) = crate::page::to_markdown(&html, &Stop::default()).unwrap();
            assert_eq!(markdown, convert(&html), "real table {k}");
            assert!(markdown.starts_with("| "), "real table {k}");
        }
    }

    /// Random inline soup (alike and unalike neighbours, attributes, nested and empty
    /// elements, text between): the Markdown of the merged tree is the Markdown htmd writes of
    /// the tree as built, merging by itself.
    #[test]
    fn merging_alike_siblings_writes_what_htmd_writes() {
        const UNITS: &[&str] = &[
            "<i>a</i>",
            "<em>b</em>",
            "<b>c</b>",
            "<strong>d</strong>",
            "<span>e</span>",
            "<span class=k>f</span>",
            "<nobr>g",
            "<a href=/h>h</a>",
            "<a>i</a>",
            "<code>j</code>",
            "<i><b>k</b></i>",
            "<i></i>",
            "<i>l<b>m</b></i>",
            "<div>n</div>",
            "<p>o",
            "<li>p</li>",
            "<td>q",
            " ",
            "r",
            "<br>",
            "<template>s</template>",
            "<math><mi>t</mi></math>",
            "<svg><title>u</title></svg>",
            "<u>v</u>",
            "<i> w </i>",
            "<b>*x*</b>",
            "<pre><code>y</code><code>z</code></pre>",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % below as u64) as usize
        };
        let converter = htmd::HtmlToMarkdown::new();
        for case in 0..300 {
            let mut html = String::from("<html><body>");
            for _ in 0..60 {
                let unit = UNITS[next(UNITS.len())];
                // Runs of the same unit, as the attacks have them.
                for _ in 0..1 + next(4) {
                    html.push_str(unit);
                }
            }
            let (tree, _) = parse(&html, &Stop::default()).unwrap();
            let expected = converter.tree_to_markdown(&tree);
            let (tree, _) = parse(&html, &Stop::default()).unwrap();
            merge_alike_inline_siblings(&tree);
            assert_eq!(alike_pairs_left(&tree), 0, "case {case}: {html}");
            assert_eq!(
                converter.tree_to_markdown(&tree),
                expected,
                "case {case}: {html}"
            );
        }
    }

    /// [`renest_with`] reading at most `read` attributes of a tag and writing at most `written`.
    fn renest_attrs(html: &str, read: usize, written: usize) -> String {
        let limits = Limits {
            open: MAX_OPEN,
            read_attrs: read,
            written_attrs: written,
        };
        renest_with(html, limits, &Stop::default()).unwrap().html
    }

    /// (attack, benign twin): a tag with 3,000 attributes (far past the cap; reading them all,
    /// for the comparison, is the quadratic work itself, so not 25,000 here) reaches the
    /// tokenizer with [`MAX_ATTRS`] (it is re-nested writing all it was given, and that is
    /// [`MAX_ATTRS`]), and reads as if only those had been there; what follows is kept. The twin, with
    /// twenty, is fed unchanged. So are tags with many attributes where they are not tags: in
    /// comments, scripts and other raw text (which keeps every word).
    #[test]
    fn tags_are_read_to_the_attribute_cap_beside_benign_twins() {
        let value = "v".repeat(200);
        let attrs = |n: usize, f: &dyn Fn(usize) -> String| -> String { (0..n).map(f).collect() };
        type Unit = fn(usize, &str) -> String;
        let rows: &[(&str, &str, Unit, &str)] = &[
            (
                "unquoted",
                "<div",
                |k, v| format!(" a{k}={v}"),
                ">after</div>",
            ),
            (
                "double >",
                "<div",
                |k, _| format!(" a{k}=\">\""),
                ">after</div>",
            ),
            ("single \" >", "<p", |k, _| format!(" a{k}='\">'"), ">after"),
            (
                "no spaces",
                "<div ",
                |k, _| format!("a{k}=\"x\""),
                ">after</div>",
            ),
            ("slashes", "<div", |k, _| format!("/a{k}"), ">after</div>"),
            ("bare", "<span", |k, _| format!(" a{k}"), ">after</span>"),
            (
                "self-closing",
                "<svg><g",
                |k, _| format!(" a{k}=x"),
                "/>after</svg>",
            ),
            (
                "end tag",
                "<div>after</div",
                |k, _| format!(" a{k}=x"),
                ">next",
            ),
        ];
        for (label, open, unit, close) in rows {
            for (n, is_attack) in [(3_000, true), (20, false)] {
                let all = attrs(n, &|k| unit(k, &value));
                let html = format!("<html><body>{open}{all}{close} words");
                let out = renest_attrs(&html, MAX_ATTRS, usize::MAX);
                let reference = renest_attrs(&html, usize::MAX, MAX_ATTRS);
                assert_eq!(out, reference, "{label} {n}");
                assert!(
                    out.contains("after") && out.contains("words"),
                    "{label} {n}"
                );
                if *label != "end tag" {
                    let written = out.matches("=\"").count();
                    assert_eq!(written, n.min(MAX_ATTRS), "{label} {n}");
                }
                if !is_attack {
                    assert_eq!(out, renest_attrs(&html, usize::MAX, usize::MAX), "{label}");
                }
            }
        }
        // A tag the page ends inside is dropped, as the tokenizer drops it.
        let unclosed = format!("words<div{}", attrs(3_000, &|k| format!(" a{k}")));
        assert_eq!(renest_attrs(&unclosed, MAX_ATTRS, usize::MAX), "words");
        // Not tags: every word is kept (comments are dropped whole, so only what follows).
        let many = attrs(1_000, &|k| format!(" a{k}=\">\""));
        let comment = format!("<!-- <div{many}> --><!-- a -- b --!>words");
        let out = renest_attrs(&comment, MAX_ATTRS, usize::MAX);
        assert_eq!(out, renest_attrs(&comment, usize::MAX, usize::MAX));
        assert_eq!(out, "words");
        for (label, html) in [
            (
                "script",
                format!("<script>s = '<div{many}>';</script>words"),
            ),
            ("xmp", format!("<xmp><div{many}></xmp>words")),
            ("textarea", format!("<textarea><div{many}></textarea>words")),
            (
                "escaped script",
                format!("<script><!--<script>a</script><b{many}>--></script>words"),
            ),
        ] {
            let out = renest_attrs(&html, MAX_ATTRS, usize::MAX);
            assert_eq!(out, renest_attrs(&html, usize::MAX, usize::MAX), "{label}");
            assert!(out.contains("a999") && out.contains("words"), "{label}");
        }
    }

    /// Random pages of tags with up to 300 attributes in every context (quoted values with `>`
    /// and quotes, comments in all their odd forms, bogus comments, CDATA, doctypes, scripts
    /// with `<!--` and `<script>` escapes, raw text, foreign content, self-closing and end
    /// tags, stray `<`): read to the cap (writing all that the tokenizer was given), each is
    /// what reading everything and writing to the cap gives. So the scanner cuts tags exactly
    /// where the tokenizer has them, and misses none.
    #[test]
    fn the_attribute_cap_cuts_where_the_tokenizer_reads_tags() {
        const NAMES: &[&str] = &[
            "div",
            "b",
            "i",
            "p",
            "span",
            "a",
            "table",
            "td",
            "svg",
            "math",
            "g",
            "script",
            "style",
            "title",
            "textarea",
            "xmp",
            "noscript",
            "iframe",
            "noembed",
            "noframes",
            "SCRIPT",
            "Style",
            "plaintext",
            "template",
            "select",
            "option",
        ];
        const BITS: &[&str] = &[
            "text",
            " a < b ",
            "x &amp; y",
            "1 > 0",
            "<",
            "< div",
            "<1",
            "&lt;",
            "\n",
            "\r\n",
            "<!-- c -->",
            "<!-->",
            "<!--->",
            "<!---->",
            "<!-- a --!>",
            "<!-- a --!x -->",
            "<!--<!-->",
            "<!-- -- >",
            "<!-- <div a=\">\" -->",
            "<!x a=\">",
            "<?php a=\"> ?>",
            "</ x a=\">",
            "</>",
            "</",
            "<![CDATA[ <b a=\">\" ]]>",
            "<!DOCTYPE html>",
            "<!--",
            "-->",
            "--",
            "<script>",
            "</script>",
            "</scriptx>",
            "</script >",
            "<script ",
            "\"",
            "'",
            "</style>",
            "</title>",
            "</textarea>",
            "</xmp>",
            "</noscript>",
            "-->",
            "<!--<script>",
            "</SCRIPT/>",
            "=",
            "/>",
        ];
        let mut seed: u64 = 0xd1b5_4a32_d192_ed03;
        let mut next = move |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % below as u64) as usize
        };
        for case in 0..200 {
            let mut html = String::new();
            for _ in 0..40 {
                if next(3) == 0 {
                    html.push_str(BITS[next(BITS.len())]);
                    continue;
                }
                let name = NAMES[next(NAMES.len())];
                // `<plaintext>` ends all markup; keep it rare.
                if name == "plaintext" && next(10) != 0 {
                    continue;
                }
                let end = next(5) == 0;
                html.push_str(if end { "</" } else { "<" });
                html.push_str(name);
                // A distinct first attribute, so that tags alike to the cap are alike.
                html.push_str(&format!(" n=\"{}\"", next(1_000_000)));
                let count = match next(4) {
                    0 => 0,
                    1 => next(5),
                    _ => 250 + next(50),
                };
                // After an unquoted value, only a space ends it: `/` would be part of it, and
                // ` = "x"` would make attributes named `=` (twice: one would be dropped).
                let mut unquoted = false;
                for k in 0..count {
                    let sep = match next(8) {
                        _ if unquoted => " ",
                        0 => "\n",
                        1 => "/",
                        2 => " / ",
                        _ => " ",
                    };
                    let value = match next(6) {
                        0 => String::new(),
                        1 => format!("=u{k}"),
                        2 => format!("=\"v>{k}'<\""),
                        3 => format!("='w>{k}\"'"),
                        4 => format!(" = \"s{k}\""),
                        _ => format!("=\"{k}\""),
                    };
                    unquoted = value.starts_with("=u");
                    html.push_str(&format!("{sep}a{k}{value}"));
                }
                html.push_str(match next(6) {
                    0 => "/>",
                    1 => " >",
                    _ => ">",
                });
            }
            let out = renest_attrs(&html, MAX_ATTRS, usize::MAX);
            let reference = renest_attrs(&html, usize::MAX, MAX_ATTRS);
            if out != reference {
                let at = out
                    .bytes()
                    .zip(reference.bytes())
                    .position(|(x, y)| x != y)
                    .unwrap_or(out.len().min(reference.len()));
                let around =
                    |t: &str| t[at.saturating_sub(300)..(at + 100).min(t.len())].to_owned();
                panic!(
                    "case {case} at {at}:\n{}\n---- reference:\n{}",
                    around(&out),
                    around(&reference)
                );
            }
        }
    }

    /// A conversion whose flag is already set stops at its first look, with an error that
    /// says why; the same page with the flag clear converts. (Where it looks is counted by the
    /// flag being seen, not timed.)
    #[test]
    fn a_set_stop_flag_stops_the_parse() {
        let html = format!(
            "<html><body>{}deep words",
            "<p>para <b>bold</b> ".repeat(50_000)
        );
        let stop = Stop::default();
        stop.set();
        assert_eq!(parse(&html, &stop).err(), Some(Stopped));
        assert!(stop.seen());
        assert!(Stopped.to_string().contains("call again"));
        assert!(renest_with(&html, Limits::default(), &stop).is_err());
        assert!(build("<p>x", &stop).is_err());
        let clear = Stop::default();
        let (tree, cut) = parse(&html, &clear).unwrap();
        assert!(!cut && !clear.seen());
        assert!(
            htmd::HtmlToMarkdown::new()
                .tree_to_markdown(&tree)
                .contains("deep words")
        );
        // The guard sets the flag when it is dropped.
        let guarded = Stop::default();
        drop(guarded.when_dropped());
        assert!(parse("<p>x", &guarded).is_err());
    }

    fn depth(root: &Rc<Node>) -> usize {
        let mut deepest = 0;
        let mut pending = vec![(Rc::clone(root), 0)];
        while let Some((n, d)) = pending.pop() {
            deepest = deepest.max(d);
            for c in n.children.borrow().iter() {
                pending.push((Rc::clone(c), d + 1));
            }
        }
        deepest
    }

    /// (page, cut, text that must survive): each bomb beside an ordinary page of the same
    /// words that is left as it is.
    #[test]
    fn nesting_bombs_are_cut_and_their_words_kept() {
        let divs = |n: usize| format!("{}deep words{}", "<div>".repeat(n), "</div>".repeat(n));
        let unclosed = |tag: &str, n: usize| format!("{}deep words", format!("<{tag}>").repeat(n));
        // `</b>` after a block keeps the block open and nests the next one deeper.
        let misnested = format!("{}deep words", "<b><div></b>".repeat(3000));
        let rows: Vec<(String, bool)> = vec![
            (divs(5000), true),
            (divs(20), false),
            (unclosed("div", 5000), true),
            (unclosed("span", 5000), true),
            (unclosed("b", 5000), true),
            (unclosed("p", 5000), false),
            (misnested, true),
            ("<ul><li>deep words</li></ul>".into(), false),
        ];
        let converter = htmd::HtmlToMarkdown::new();
        for (html, cut) in rows {
            let (tree, was_cut) = parse(&html, &Stop::default()).unwrap();
            let label = &html[..html.len().min(40)];
            assert_eq!(was_cut, cut, "{label}");
            assert!(depth(&tree) <= MAX_DEPTH + 1, "{label}: {}", depth(&tree));
            assert!(
                converter.tree_to_markdown(&tree).contains("deep words"),
                "{label}"
            );
        }
    }
}

#[cfg(test)]
mod measure {
    /// Not a test: times each phase of the conversion of each attack page, for
    /// `cargo test --release -p tools-web measure_attacks -- --ignored --nocapture`.
    #[test]
    #[ignore = "measures by hand; run in release"]
    #[allow(clippy::print_stdout, reason = "it reports what it measured")]
    fn measure_attacks() {
        let value = "v".repeat(200);
        let attrs: String = (0..25_000).map(|k| format!(" a{k}={value}")).collect();
        let pages: Vec<(&str, String)> = vec![
            ("nobr x400k", "<nobr>x".repeat(400_000)),
            ("b x400k", "<b>x".repeat(400_000)),
            ("a x400k", "<a>x".repeat(400_000)),
            ("font x400k", "<font>x".repeat(400_000)),
            ("b i /b /i x100k", "<b><i></b></i>x".repeat(100_000)),
            ("span /span x400k", "<span>x</span>".repeat(400_000)),
            ("nobr /nobr x400k", "<nobr>x</nobr>".repeat(400_000)),
            ("div 25k attrs", format!("<div{attrs}>x</div>")),
            ("div x200k", "<div>".repeat(200_000)),
            ("li x400k", format!("<ul>{}", "<li>x".repeat(400_000))),
            ("p x400k", "<p>x".repeat(400_000)),
            ("i em x200k", "<i>x</i><em>x</em>".repeat(200_000)),
        ];
        let n: usize = std::env::var("MEASURE_N")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(16_000);
        let only = std::env::var("MEASURE_ONLY").ok();
        let mut pages = pages;
        for k in [n, 2 * n] {
            let shapes: Vec<(&str, String)> = vec![
                (
                    "select option",
                    format!("<html><body><select>{}", "<option>x".repeat(k)),
                ),
                (
                    "datalist option",
                    format!("<datalist>{}", "<option>x".repeat(k)),
                ),
                ("option bare", "<option>x".repeat(k)),
                (
                    "optgroup option",
                    format!("<select>{}", "<optgroup><option>x".repeat(k)),
                ),
                ("optgroup bare", "<optgroup>x".repeat(k)),
                ("ol li", format!("<ol>{}", "<li>x".repeat(k))),
                ("dl dt dd", format!("<dl>{}", "<dt>x<dd>y".repeat(k))),
                ("tr td", format!("<table><tr>{}", "<td>x".repeat(k))),
                ("table tr td", format!("<table>{}", "<tr><td>x".repeat(k))),
                ("ruby rt", format!("<ruby>{}", "x<rt>y".repeat(k))),
                ("label", "<label>x".repeat(k)),
                ("label /label", "<label>x</label>".repeat(k)),
                ("button", "<button>x".repeat(k)),
                ("textarea", format!("<textarea>{}", "x\n".repeat(k))),
                ("br", format!("x{}", "<br>".repeat(k))),
                ("br x", "<br>x".repeat(k)),
                ("img", "<img src=a>".repeat(k)),
                ("img x", "<img src=a alt=b>x".repeat(k)),
                ("input", "<input>".repeat(k)),
                ("p p", "<p>x</p>".repeat(k)),
                ("div /div", "<div>x</div>".repeat(k)),
                ("h1", "<h1>x</h1>".repeat(k)),
                ("a href", "<a href=u>x</a>".repeat(k)),
                ("code", "<code>x</code>".repeat(k)),
                ("pre", "<pre>x</pre>".repeat(k)),
                ("blockquote", "<blockquote>x</blockquote>".repeat(k)),
                ("hr", "<hr>".repeat(k)),
                (
                    "summary",
                    "<details><summary>x</summary></details>".repeat(k),
                ),
                (
                    "table th row, td rows /16",
                    format!(
                        "<table><tr>{}{}",
                        "<th>h".repeat(k / 16),
                        "<tr><td>y".repeat(k / 16)
                    ),
                ),
                (
                    "table wide cell, td rows /16",
                    format!(
                        "<table><tr><th>h<tr><td>{}{}",
                        "x".repeat(k / 2),
                        "<tr><td>y".repeat(k / 16)
                    ),
                ),
                (
                    "nest ul li",
                    format!("{}{}", "<ul><li>".repeat(120), "x ".repeat(k * 8)),
                ),
                (
                    "nest blockquote",
                    format!("{}{}", "<blockquote>".repeat(120), "x ".repeat(k * 8)),
                ),
                (
                    "nest ol li",
                    format!("{}{}", "<ol><li>".repeat(120), "x<br>".repeat(k)),
                ),
                (
                    "table thead, td rows",
                    format!("<table><thead><tr><th>h</thead>{}", "<tr><td>y".repeat(k)),
                ),
            ];
            for (label, html) in shapes {
                if only.as_deref().is_some_and(|o| !label.contains(o)) {
                    continue;
                }
                pages.push((Box::leak(format!("{label} x{k}").into_boxed_str()), html));
            }
        }
        if only.is_some() {
            pages.retain(|(label, _)| label.contains(only.as_deref().unwrap_or_default()));
        }
        let converter = crate::page::converter();
        for (label, html) in pages {
            let at = std::time::Instant::now();
            let renested = super::renest(&html, super::MAX_OPEN);
            let renest = at.elapsed();
            if std::env::var_os("MEASURE_BEFORE").is_some() {
                // As the tree builder read the page before `SELECT_MULTIPLE`.
                let unmarked = renested
                    .html
                    .replace(&format!("<select{}", super::SELECT_MULTIPLE), "<select");
                let at = std::time::Instant::now();
                let tree = converter.html_to_tree(&unmarked).unwrap();
                let build = at.elapsed();
                super::merge_alike_inline_siblings(&tree);
                let at = std::time::Instant::now();
                let md = converter.tree_to_markdown(&tree);
                println!(
                    "{label} (before): build {build:?}, markdown {:?} ({} out)",
                    at.elapsed(),
                    md.len()
                );
            }
            let at = std::time::Instant::now();
            let tree = converter.html_to_tree(&renested.html).unwrap();
            let build = at.elapsed();
            let at = std::time::Instant::now();
            let cut = super::cut_at(&tree, super::MAX_DEPTH);
            super::merge_alike_inline_siblings(&tree);
            super::unpad_wide_tables(&tree);
            let merge = at.elapsed();
            let at = std::time::Instant::now();
            let md = converter.tree_to_markdown(&tree);
            let write = at.elapsed();
            let at = std::time::Instant::now();
            let whole = crate::page::to_markdown(&html, &super::Stop::default()).unwrap();
            let whole_time = at.elapsed();
            println!(
                "{label}: {} bytes in, {} renested, {} out, cut {cut}: renest {renest:?}, build {build:?}, \
                 cut+merge {merge:?}, markdown {write:?}; page::to_markdown {whole_time:?} ({} out)",
                html.len(),
                renested.html.len(),
                md.len(),
                whole.0.len(),
            );
        }
    }
}
