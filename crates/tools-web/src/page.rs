//! Fetching a page and turning it into text: charset decoding, HTML to Markdown, a small cache,
//! and paging by characters.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use encoding_rs::{Encoding, UTF_8};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderName};
use tokio::time::Instant;
use tool_core::{ToolContext, ToolError};
use url::Url;

use crate::config::Shared;
use crate::dom::{Stop, Stopped};
use crate::net::{Fetched, Request};

/// A fetched page, as text.
#[derive(Debug)]
pub(crate) struct Page {
    pub(crate) url: Url,
    pub(crate) status: StatusCode,
    pub(crate) title: Option<String>,
    pub(crate) media_type: String,
    pub(crate) text: String,
    /// Characters in `text`.
    pub(crate) chars: usize,
    pub(crate) notes: Vec<String>,
}

const CACHE_ENTRIES: usize = 16;
const CACHE_TTL: Duration = Duration::from_secs(300);

/// The last few pages, by URL and mode, for five minutes.
#[derive(Debug, Default)]
pub(crate) struct PageCache {
    entries: Mutex<VecDeque<(String, Instant, Arc<Page>)>>,
}

impl PageCache {
    fn get(&self, key: &str) -> Option<Arc<Page>> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|(_, at, _)| at.elapsed() < CACHE_TTL);
        entries
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, _, p)| Arc::clone(p))
    }

    fn put(&self, key: String, page: Arc<Page>) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|(k, _, _)| *k != key);
        if entries.len() >= CACHE_ENTRIES {
            entries.pop_front();
        }
        entries.push_back((key, Instant::now(), page));
    }
}

/// Fetches `url` (through the cache) as readable text, or as the body itself when `raw`.
pub(crate) async fn load(
    shared: &Shared,
    ctx: &ToolContext,
    url: Url,
    raw: bool,
) -> Result<Arc<Page>, ToolError> {
    let key = format!("{}{url}", if raw { "raw " } else { "" });
    if let Some(page) = shared.pages.get(&key) {
        return Ok(page);
    }
    let page = Arc::new(fetch(shared, ctx, url, raw).await?);
    // Pages that were cut by time or a broken connection are not cached: a retry may do better.
    if page.status.is_success()
        && !page
            .notes
            .iter()
            .any(|n| n.contains("still sending") || n.contains("broke off"))
    {
        shared.pages.put(key, Arc::clone(&page));
    }
    Ok(page)
}

async fn fetch(shared: &Shared, ctx: &ToolContext, url: Url, raw: bool) -> Result<Page, ToolError> {
    if !raw
        && let Some(reader) = &shared.jina_reader
        && let Some(key) = shared.secrets.get(&reader.api_key_env)
    {
        return through_jina(shared, ctx, reader, &key, url).await;
    }
    let request = Request::get(url, shared.page_timeout, shared.max_page_bytes).header(
        ACCEPT,
        "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,*/*;q=0.5",
    )?;
    let fetched = shared.net.send(ctx, request).await?;
    if let Some(u) = &fetched.unfollowed {
        let message = format!(
            "{} redirects to {}, which was not followed: {}.",
            fetched.url, u.location, u.why
        );
        return Err(if u.by_policy {
            ToolError::Denied(message)
        } else {
            ToolError::Failed(message)
        });
    }
    let media = fetched.media_type().unwrap_or_default();
    let is_html = media.contains("html") || (media.is_empty() && looks_like_html(&fetched.body));
    let textual = is_html
        || media.is_empty()
        || media.starts_with("text/")
        || media.ends_with("json")
        || media.ends_with("xml")
        || media.ends_with("+json")
        || media == "application/javascript";
    if !textual {
        return Err(ToolError::Failed(format!(
            "{} is {media} ({} bytes), not a text page; use http_request to see its headers, or a tool made for that format.",
            fetched.url,
            fetched.body.len()
        )));
    }
    let decoded = decode(&fetched, is_html);
    let mut notes = Vec::new();
    if let Some(cut) = &fetched.cut {
        notes.push(format!("Note: {}.", cut.describe()));
    }
    if !fetched.redirects.is_empty() {
        notes.push(format!("Redirected to {}.", fetched.url));
    }
    let (title, text) = if is_html && !raw {
        let title = title_of(&decoded);
        let (markdown, cut) = convert(ctx, decoded, Stop::default()).await?;
        if cut {
            notes.push(format!(
                "Note: the page nests elements deeper than {} levels; below that depth its text is shown without its structure.",
                crate::dom::MAX_DEPTH
            ));
        }
        (title, markdown)
    } else {
        (None, decoded)
    };
    let chars = text.chars().count();
    Ok(Page {
        url: fetched.url,
        status: fetched.status,
        title,
        media_type: if media.is_empty() {
            "unknown".into()
        } else {
            media
        },
        text,
        chars,
        notes,
    })
}

async fn through_jina(
    shared: &Shared,
    ctx: &ToolContext,
    reader: &crate::config::JinaReader,
    key: &str,
    url: Url,
) -> Result<Page, ToolError> {
    let endpoint = format!("{}/{}", reader.base_url.trim_end_matches('/'), url);
    let endpoint = Url::parse(&endpoint).map_err(|e| {
        ToolError::Failed(format!(
            "The Jina Reader URL {endpoint} is not valid ({e}); fix web.jina_reader_url."
        ))
    })?;
    let request = Request::get(endpoint, shared.page_timeout, shared.max_page_bytes)
        .header(AUTHORIZATION, &format!("Bearer {key}"))?
        .header(ACCEPT, "text/plain")?
        .header(HeaderName::from_static("x-return-format"), "markdown")?;
    let fetched = shared.net.send(ctx, request).await?;
    if !fetched.status.is_success() {
        let why = String::from_utf8_lossy(&fetched.body);
        return Err(ToolError::Failed(format!(
            "Jina Reader answered HTTP {} for {url}: {}. Check {} or fetch without the reader.",
            fetched.status.as_u16(),
            tool_core::truncate::cut_line(why.trim(), 300),
            reader.api_key_env
        )));
    }
    let text = decode(&fetched, false);
    let chars = text.chars().count();
    let mut notes = vec!["Converted by Jina Reader.".to_owned()];
    if let Some(cut) = &fetched.cut {
        notes.push(format!("Note: {}.", cut.describe()));
    }
    Ok(Page {
        url,
        status: fetched.status,
        title: None,
        media_type: "text/markdown".into(),
        text,
        chars,
        notes,
    })
}

fn looks_like_html(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    head.contains("<html") || head.contains("<!doctype html")
}

/// Decodes the body: a byte-order mark first, then the Content-Type charset, then (for HTML)
/// a `<meta charset>` in the first kilobyte, else UTF-8 (invalid bytes become U+FFFD).
pub(crate) fn decode(fetched: &Fetched, is_html: bool) -> String {
    let body = &fetched.body;
    if let Some((encoding, bom)) = Encoding::for_bom(body) {
        return encoding
            .decode_without_bom_handling(&body[bom..])
            .0
            .into_owned();
    }
    let label = fetched
        .charset()
        .or_else(|| if is_html { meta_charset(body) } else { None });
    let encoding = label
        .and_then(|l| Encoding::for_label(l.as_bytes()))
        .unwrap_or(UTF_8);
    encoding.decode_without_bom_handling(body).0.into_owned()
}

fn meta_charset(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(1024)]).to_ascii_lowercase();
    let mut rest = head.as_str();
    while let Some(at) = rest.find("<meta") {
        rest = &rest[at + 5..];
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        if let Some(pos) = tag.find("charset=") {
            let value: String = tag[pos + 8..]
                .trim_start_matches(['"', '\''])
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
                .collect();
            if !value.is_empty() {
                return Some(value);
            }
        }
    }
    None
}

fn title_of(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open_end = start + lower[start..].find('>')? + 1;
    let end = open_end + lower[open_end..].find("</title")?;
    let title = unescape(html[open_end..end].trim());
    let title: String = title.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then_some(title)
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
}

/// [`to_markdown`] on a blocking thread, stopped (through `stop`) as soon as nobody waits for
/// it: when the call is cancelled, or when its future is dropped because the call timed out.
/// Without that, a page that takes long to convert would keep its thread busy to the end.
async fn convert(ctx: &ToolContext, html: String, stop: Stop) -> Result<(String, bool), ToolError> {
    let _stop_when_dropped = stop.when_dropped();
    tool_core::blocking(ctx, move || {
        to_markdown(&html, &stop).map_err(|_| ToolError::Cancelled)
    })
    .await
}

/// HTML to Markdown with htmd, without scripts, styles, navigation, side bars and other parts a
/// reader never reads; and whether the tree was cut at [`crate::dom::MAX_DEPTH`]. Stops with
/// [`Stopped`] once `stop` is set (see [`crate::dom::parse`]; htmd's writer, linear in the
/// tree, runs to its end once started).
pub(crate) fn to_markdown(html: &str, stop: &Stop) -> Result<(String, bool), Stopped> {
    let converter = converter();
    let (tree, cut) = crate::dom::parse(html, stop)?;
    crate::dom::merge_alike_inline_siblings(&tree);
    crate::dom::unpad_wide_tables(&tree);
    stop.check()?;
    let markdown = converter.tree_to_markdown(&tree);
    Ok((tidy(&markdown), cut))
}

pub(crate) fn converter() -> htmd::HtmlToMarkdown {
    htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "head", "nav", "aside", "script", "style", "noscript", "template", "svg", "canvas",
            "iframe", "object", "embed", "form", "button", "input", "select", "textarea",
        ])
        .build()
}

/// Collapses runs of blank lines and trailing spaces that layouts leave behind.
pub(crate) fn tidy(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank = 0;
    for line in markdown.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

/// Characters `start..start + max` of `text` (by `char`), and whether more follow.
pub(crate) fn slice(text: &str, start: usize, max: usize) -> (&str, usize) {
    let mut indices = text.char_indices().map(|(i, _)| i).chain([text.len()]);
    let from = indices.nth(start).unwrap_or(text.len());
    let to = text[from..]
        .char_indices()
        .map(|(i, _)| from + i)
        .chain([text.len()])
        .nth(max)
        .unwrap_or(text.len());
    let taken = text[from..to].chars().count();
    (&text[from..to], start + taken)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_by_characters() {
        let text = "héllo wörld";
        assert_eq!(slice(text, 0, 5), ("héllo", 5));
        assert_eq!(slice(text, 6, 100), ("wörld", 11));
        assert_eq!(slice(text, 11, 5), ("", 11));
        assert_eq!(slice(text, 1, 1), ("é", 2));
    }

    #[test]
    fn meta_charsets() {
        assert_eq!(
            meta_charset(b"<html><head><meta charset=\"ISO-8859-1\">").as_deref(),
            Some("iso-8859-1")
        );
        assert_eq!(
            meta_charset(
                b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1251\">"
            )
            .as_deref(),
            Some("windows-1251")
        );
        assert_eq!(meta_charset(b"<meta name=\"x\" content=\"y\">"), None);
    }

    /// Ordinary pages (and ordinary sloppiness: unclosed paragraphs, items and cells, a stray
    /// `</p>`, `</br>`, a misnested `</b>`, entities, `<pre>` code with `<`, scripts holding
    /// `</div>`) convert to the same Markdown as when html5ever read them whole, before re-nesting
    /// existed; each also keeps the words it must.
    #[test]
    fn ordinary_pages_convert_as_before_re_nesting() {
        let article = r##"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Ownership &amp; borrowing</title>
<link rel="stylesheet" href="/s.css"><style>pre > code { color: #333 } a[href^="http"]::after { content: "<" }</style>
<script>if (a < b && c > d) { document.write("</div></p>"); } var s = '<script>';</script>
</head><body class="post">
<header><nav><ul><li><a href="/">Home</a></li><li><a href="/blog">Blog</a></li></ul></nav></header>
<main><article>
<h1>Ownership &amp; borrowing in Rust</h1>
<p class="meta">Posted <time datetime="2026-11-02">2 Nov 2026</time> by <a href="/me">me</a> &mdash; 5&nbsp;min read</p>
<p>Rust&#8217;s <strong>ownership</strong> rules are checked at compile time; see <a href="https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html" title="The Book">the book</a>.</p>
<h2 id="rules">The rules</h2>
<ol><li>Each value has an <em>owner</em>.</li><li>There can only be one owner at a time.</li>
<li>When the owner goes out of scope, the value is <code>drop</code>ped.</li></ol>
<pre><code class="language-rust">fn main() {
    let v: Vec&lt;i32&gt; = vec![1, 2, 3];
    if v.len() < 4 && v[0] > 0 { println!("{:?}", &amp;v); }
}
</code></pre>
<h3>Borrowing</h3>
<ul><li>Shared: <code>&amp;T</code><ul><li>many at once</li></ul></li><li>Mutable: <code>&amp;mut T</code></li></ul>
<blockquote><p>Borrowing is like lending a book.</p></blockquote>
<table><thead><tr><th>Kind</th><th>Syntax</th><th>Count</th></tr></thead>
<tbody><tr><td>Shared</td><td><code>&amp;T</code></td><td>many</td></tr>
<tr><td>Mutable</td><td><code>&amp;mut T</code></td><td>one</td></tr></tbody></table>
<figure><img src="/diagram.png" alt="A diagram of &lt;borrows&gt;"><figcaption>Figure 1</figcaption></figure>
<p>Footnote<sup><a href="#fn1">1</a></sup>. Price: 5 &lt; 10 &amp;&amp; 3 &gt; 2 &copy; 2026.</p>
<hr><p>Comments <!-- not shown --> are closed.</p>
</article></main>
<aside><h2>Related</h2><ul><li><a href="/x">X</a></li></ul></aside>
<footer><p>&copy; 2026 Example &middot; <a href="/privacy">Privacy</a></p></footer>
<script src="/app.js"></script><noscript><img src="/pixel.gif"></noscript>
</body></html>"##;
        let sloppy = r##"<html><head><title>Old page</title></head>
<body bgcolor=white><center><h1>Welcome</h2></center>
<p>First paragraph<p>Second paragraph with <b>bold <i>and italic</b> text</i>.
<p>Third</p></p>
<div>line one</p>line two<br>line three</br>line four</div>
<ul><li>one<li>two<li>three</ul>
<dl><dt>Term<dd>Definition<dt>Other<dd>More</dl>
<table border=1><tr><td>a<td>b<tr><td>c<td>d</table>
<p>Text <a href="/a">link <a href="/b">second link</a> after.
<select><option>x<option>y</select>
<font face=arial size=2>small print</font> &amp c &lt; d &unknown; &#x41;&#66;
<p>A<table><tr><td>in table</td></tr></table>B
<xmp><b>shown as is</b></xmp>
<p>Last</body></html>
<p>after the end"##;
        let wiki = r##"<!DOCTYPE html><html><head><title>Test</title></head><body>
<div id="content"><div id="bodyContent"><div class="mw-parser-output">
<table class="infobox"><caption>Facts</caption><tbody><tr><th scope="row">Born</th><td>1815<br>London</td></tr></tbody></table>
<p><b>Ada Lovelace</b> (10 December 1815 &ndash; 27 November 1852) was an English <a href="/wiki/Mathematician">mathematician</a>.<sup class="reference"><a href="#cite_note-1">[1]</a></sup></p>
<div class="toc"><ul><li class="toclevel-1"><a href="#Life"><span class="tocnumber">1</span> <span class="toctext">Life</span></a></li></ul></div>
<h2><span class="mw-headline" id="Life">Life</span></h2>
<p>She wrote about the <i>Analytical Engine</i>: <q>it might act upon other things besides number</q>.</p>
<svg width="10" height="10"><circle cx="5" cy="5" r="4"/><title>dot</title></svg>
<math><mi>x</mi><mo>&lt;</mo><mn>2</mn></math>
<ol class="references"><li id="cite_note-1"><span class="reference-text">Toole, 1992.</span></li></ol>
</div></div></div></body></html>"##;
        let converter = converter();
        for (label, html, words) in [
            (
                "article",
                article,
                &["# Ownership & borrowing in Rust", "Vec<i32>", "[the book]"][..],
            ),
            (
                "sloppy",
                sloppy,
                &["Second paragraph", "line four", "after the end"][..],
            ),
            (
                "wiki",
                wiki,
                &["Ada Lovelace", "Analytical Engine", "Toole, 1992."][..],
            ),
        ] {
            let before = tidy(&converter.convert(html).unwrap());
            let (after, cut) = to_markdown(html, &Stop::default()).unwrap();
            assert!(!cut, "{label}");
            assert_eq!(after, before, "{label}");
            for w in words {
                assert!(after.contains(w), "{label}: {w} in {after}");
            }
            assert!(!after.contains("document.write"), "{label}: {after}");
        }
    }

    /// A conversion whose call times out stops: the timeout drops the call's future, its guard
    /// sets the flag, and the blocking thread sees it and gives up (observed through the flag,
    /// not timed: the wait below only bounds a failure). The page is big enough that it
    /// cannot be converted before the zero timeout fires; the same page, given the time,
    /// converts.
    #[tokio::test]
    async fn a_timed_out_conversion_stops() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(
            tool_core::Workspace::local(dir.path()).unwrap(),
            Arc::new(tool_core::Policy::supervised()),
            Arc::new(tool_core::Limits::default()),
        );
        let page = format!(
            "<html><body>{}<p>last words",
            "<p>para <b>bold</b> <a href=/x>link</a>\n".repeat(40_000)
        );
        let stop = Stop::default();
        let call = convert(&ctx, page.clone(), stop.clone());
        assert!(tokio::time::timeout(Duration::ZERO, call).await.is_err());
        let mut waited = 0;
        while !stop.seen() {
            assert!(waited < 600, "the conversion did not stop");
            tokio::time::sleep(Duration::from_millis(100)).await;
            waited += 1;
        }
        let stop = Stop::default();
        let (markdown, _) = convert(&ctx, page, stop.clone()).await.unwrap();
        assert!(markdown.contains("last words"));
        assert!(!stop.seen());
    }

    #[test]
    fn markdown_without_scripts() {
        let md = to_markdown(
            "<html><head><title>T</title><style>p{}</style></head><body><h1>Hello</h1>\
             <script>alert(1)</script><p>A <a href=\"https://x.example/\">link</a>.</p></body></html>",
            &Stop::default(),
        )
        .unwrap()
        .0;
        assert!(md.contains("# Hello"), "{md}");
        assert!(md.contains("[link](https://x.example/)"), "{md}");
        assert!(!md.contains("alert") && !md.contains("p{}"), "{md}");
        assert_eq!(
            title_of("<html><head><title> A &amp; B </title></head></html>").as_deref(),
            Some("A & B")
        );
    }
}
