//! Exa search.
//!
//! `POST {base}/search` with `{"query", "numResults", "contents": {"highlights": true}}` and the
//! key in `x-api-key`; the answer holds `results[]` with `title`, `url` and, as asked,
//! `highlights[]` (query-relevant sentences); `text` and `summary` are read when present.
//! Documented at <https://exa.ai/docs/reference/search> (the OpenAPI example "Simple search
//! with contents").

use reqwest::header::HeaderName;
use serde::Deserialize;
use serde_json::json;

use super::{Answer, Query, RawHit, endpoint, json, key, post_json, with_header};
use crate::net::Request;

pub(super) fn request(base: &str, query: &Query<'_>) -> Result<Request, String> {
    let url = endpoint(base, "/search")?;
    let body = json!({
        "query": query.text,
        "numResults": query.count,
        "contents": { "highlights": true },
    });
    with_header(
        post_json(url, &body, query)?,
        HeaderName::from_static("x-api-key"),
        key(query)?,
    )
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    results: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    highlights: Option<Vec<String>>,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

pub(super) fn parse(body: &[u8]) -> Result<Answer, String> {
    let response: Response = json(body)?;
    Ok(Answer {
        hits: response
            .results
            .into_iter()
            .map(|i| {
                let highlights = i.highlights.unwrap_or_default().join(" … ");
                let snippet = [Some(highlights), i.summary, i.text]
                    .into_iter()
                    .flatten()
                    .find(|s| !s.trim().is_empty())
                    .unwrap_or_default();
                RawHit {
                    title: i.title.unwrap_or_default(),
                    url: i.url.unwrap_or_default(),
                    snippet,
                }
            })
            .collect(),
        summary: None,
    })
}
