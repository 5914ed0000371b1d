//! Tavily search.
//!
//! `POST {base}/search` with `{"query", "max_results"}` and `Authorization: Bearer <key>`; the
//! answer holds `results[]` with `title`, `url` and `content`. Documented at
//! <https://docs.tavily.com/api-reference/endpoint/search>.

use reqwest::header;
use serde::Deserialize;
use serde_json::json;

use super::{Answer, Query, RawHit, endpoint, json, key, post_json, with_header};
use crate::net::Request;

pub(super) fn request(base: &str, query: &Query<'_>) -> Result<Request, String> {
    let url = endpoint(base, "/search")?;
    let body = json!({ "query": query.text, "max_results": query.count });
    with_header(
        post_json(url, &body, query)?,
        header::AUTHORIZATION,
        &format!("Bearer {}", key(query)?),
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
    content: Option<String>,
}

pub(super) fn parse(body: &[u8]) -> Result<Answer, String> {
    let response: Response = json(body)?;
    Ok(Answer {
        hits: response
            .results
            .into_iter()
            .map(|i| RawHit {
                title: i.title.unwrap_or_default(),
                url: i.url.unwrap_or_default(),
                snippet: i.content.unwrap_or_default(),
            })
            .collect(),
        summary: None,
    })
}
