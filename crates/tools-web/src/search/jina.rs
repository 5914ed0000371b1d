//! Jina Search (s.jina.ai).
//!
//! `GET {base}/?q=…` with `Authorization: Bearer <key>`, `Accept: application/json` (for the
//! JSON answer rather than text) and `X-Respond-With: no-content` (titles, URLs and
//! descriptions only, without fetching every page); the answer is
//! `{"code", "status", "data": [{"title", "url", "description", "content"}]}`. Documented in
//! Jina's API guide (<https://docs.jina.ai>, "s.reader API") and <https://jina.ai/reader/>.

use reqwest::header::{self, HeaderName, HeaderValue};
use serde::Deserialize;

use super::{Answer, Query, RawHit, endpoint, get, json, key, with_header};
use crate::net::Request;

pub(super) fn request(base: &str, query: &Query<'_>) -> Result<Request, String> {
    let mut url = endpoint(base, "/")?;
    url.query_pairs_mut().append_pair("q", query.text);
    let mut request = get(url, query);
    request
        .headers
        .insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    request.headers.insert(
        HeaderName::from_static("x-respond-with"),
        HeaderValue::from_static("no-content"),
    );
    with_header(
        request,
        header::AUTHORIZATION,
        &format!("Bearer {}", key(query)?),
    )
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    data: Option<Vec<Item>>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    content: Option<String>,
}

pub(super) fn parse(body: &[u8]) -> Result<Answer, String> {
    let response: Response = json(body)?;
    Ok(Answer {
        hits: response
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|i| RawHit {
                title: i.title.unwrap_or_default(),
                url: i.url.unwrap_or_default(),
                snippet: [i.description, i.content]
                    .into_iter()
                    .flatten()
                    .find(|s| !s.trim().is_empty())
                    .unwrap_or_default(),
            })
            .collect(),
        summary: None,
    })
}
