//! DuckDuckGo's HTML results page (no key, no API).
//!
//! `GET {base}/html/?q=…` answers a plain HTML page. Each result is an element with the class
//! `result`; its link is `a.result__a` (the title), and its text `.result__snippet`. Links
//! usually go through DuckDuckGo's redirector, `//duckduckgo.com/l/?uddg=<percent-encoded
//! target>&rut=…`, which is decoded to the target here. Ads (`result--ad`, links to
//! `duckduckgo.com/y.js`) are skipped. The page is parsed with html5ever (through htmd), a
//! real HTML parser, so markup and entities are read the way a browser reads them.
//!
//! When DuckDuckGo suspects a robot it answers 202 with a challenge page instead of results;
//! anything but 200 counts as a failure so that the caller says so instead of reporting no
//! results.

use std::rc::Rc;

use markup5ever_rcdom::{Node, NodeData};
use reqwest::header::{self, HeaderValue};
use url::Url;

use super::{Answer, Query, RawHit, endpoint, get};
use crate::net::Request;

pub(super) fn request(base: &str, query: &Query<'_>) -> Result<Request, String> {
    let mut url = endpoint(base, "/html/")?;
    url.query_pairs_mut().append_pair("q", query.text);
    let mut request = get(url, query);
    request
        .headers
        .insert(header::ACCEPT, HeaderValue::from_static("text/html"));
    Ok(request)
}

pub(super) fn parse(body: &[u8]) -> Result<Answer, String> {
    let html = String::from_utf8_lossy(body);
    // Nothing stops this parse early: the flag is never set.
    let (tree, _) = crate::dom::parse(&html, &crate::dom::Stop::default())
        .map_err(|e| format!("the page could not be parsed ({e})"))?;
    let mut hits = Vec::new();
    walk(&tree, false, &mut hits);
    Ok(Answer {
        hits,
        summary: None,
    })
}

/// Collects results in document order: a `result__a` link starts a result, the next
/// `result__snippet` before the following link is its text.
fn walk(node: &Rc<Node>, in_ad: bool, hits: &mut Vec<RawHit>) {
    let mut in_ad = in_ad;
    if let NodeData::Element { attrs, .. } = &node.data {
        let classes: Vec<String> = attrs
            .borrow()
            .iter()
            .filter(|a| &*a.name.local == "class")
            .flat_map(|a| {
                a.value
                    .split_ascii_whitespace()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect();
        let has = |c: &str| classes.iter().any(|k| k == c);
        if has("result--ad") || has("result--ad--small") {
            in_ad = true;
        }
        if !in_ad && has("result__a") {
            let href = attrs
                .borrow()
                .iter()
                .find(|a| &*a.name.local == "href")
                .map(|a| a.value.to_string())
                .unwrap_or_default();
            if let Some(url) = target(&href) {
                hits.push(RawHit {
                    title: text(node),
                    url,
                    snippet: String::new(),
                });
            }
            return;
        }
        if !in_ad && has("result__snippet") {
            if let Some(last) = hits.last_mut()
                && last.snippet.is_empty()
            {
                last.snippet = text(node);
            }
            return;
        }
    }
    for child in node.children.borrow().iter() {
        walk(child, in_ad, hits);
    }
}

/// The result's real address: the `uddg` parameter of a redirector link, or the link itself.
/// Links that stay on DuckDuckGo (ads, internal pages) give nothing.
fn target(href: &str) -> Option<String> {
    let base = Url::parse("https://html.duckduckgo.com/html/").ok()?;
    let url = base.join(href.trim()).ok()?;
    let on_ddg = url
        .host_str()
        .is_some_and(|h| h == "duckduckgo.com" || h.ends_with(".duckduckgo.com"));
    if !on_ddg {
        return Some(url.to_string());
    }
    if url.path() == "/l/" {
        return url
            .query_pairs()
            .find(|(k, _)| k == "uddg")
            .map(|(_, v)| v.into_owned());
    }
    None
}

/// The text inside `node`, as the reader sees it (whitespace is collapsed later).
fn text(node: &Rc<Node>) -> String {
    let mut out = String::new();
    collect_text(node, &mut out);
    out
}

fn collect_text(node: &Rc<Node>, out: &mut String) {
    match &node.data {
        NodeData::Text { contents } => out.push_str(&contents.borrow()),
        NodeData::Element { name, .. } if matches!(&*name.local, "script" | "style") => {}
        _ => {
            for child in node.children.borrow().iter() {
                collect_text(child, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirector_links_are_decoded_and_ads_skipped() {
        let page = br##"<html><body>
          <div class="result results_links result--ad">
            <h2 class="result__title"><a class="result__a" href="https://duckduckgo.com/y.js?ad_domain=x.example&u3=1">Ad</a></h2>
            <a class="result__snippet" href="#">Buy now</a>
          </div>
          <div class="result results_links results_links_deep web-result">
            <h2 class="result__title">
              <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust-lang.org%2Flearn%3Fa%3D1%26b%3D2&amp;rut=abc">The <b>Rust</b> Book</a>
            </h2>
            <a class="result__snippet" href="//duckduckgo.com/l/?uddg=x">Learn <b>Rust</b> &amp; more</a>
          </div>
          <div class="result"><h2><a class="result__a" href="https://direct.example/page">Direct</a></h2></div>
        </body></html>"##;
        let answer = parse(page).unwrap();
        assert_eq!(
            answer.hits,
            vec![
                RawHit {
                    title: "The Rust Book".into(),
                    url: "https://www.rust-lang.org/learn?a=1&b=2".into(),
                    snippet: "Learn Rust & more".into(),
                },
                RawHit {
                    title: "Direct".into(),
                    url: "https://direct.example/page".into(),
                    snippet: String::new(),
                },
            ]
        );
    }

    /// Results behind 20,000 stray end tags and 20,000 misnested `<b><div></b>` closed again
    /// are the same results as without them: the page is re-nested before it is parsed.
    #[test]
    fn results_behind_misnested_markup_are_found() {
        let results = r#"<div class="result"><h2><a class="result__a" href="https://a.example/">A</a></h2>
            <a class="result__snippet" href="x">About A</a></div>"#;
        let plain = format!("<html><body>{results}</body></html>");
        let noisy = format!(
            "<html><body>{}{}{}{results}</body></html>",
            "</span></i></li>".repeat(20_000),
            "<b><div></b>".repeat(20_000),
            "</div>".repeat(20_000),
        );
        let want = parse(plain.as_bytes()).unwrap().hits;
        assert_eq!(want.len(), 1);
        assert_eq!(parse(noisy.as_bytes()).unwrap().hits, want);
    }

    #[test]
    fn a_page_without_results_gives_none() {
        assert!(
            parse(b"<html><body>No results.</body></html>")
                .unwrap()
                .hits
                .is_empty()
        );
        assert!(parse(b"").unwrap().hits.is_empty());
    }
}
