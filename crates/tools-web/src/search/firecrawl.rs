//! Firecrawl search (API v2).
//!
//! `POST {base}/v2/search` with `{"query", "limit"}` and `Authorization: Bearer <key>`, without
//! `scrapeOptions` (search results only, no page scraping); the v2 answer is
//! `{"success", "data": {"web": [{"title", "url", "description"}]}}`. The v1 shape, `data` as
//! the list itself, is read too (self-hosted instances behind a configured base URL may still
//! answer it). Documented at <https://docs.firecrawl.dev/features/search> and
//! <https://docs.firecrawl.dev/agent-source-of-truth/curl.md>.

use reqwest::header;
use serde::Deserialize;
use serde_json::json;

use super::{Answer, Query, RawHit, endpoint, json, key, post_json, with_header};
use crate::net::Request;

pub(super) fn request(base: &str, query: &Query<'_>) -> Result<Request, String> {
    let url = endpoint(base, "/v2/search")?;
    let body = json!({ "query": query.text, "limit": query.count });
    with_header(
        post_json(url, &body, query)?,
        header::AUTHORIZATION,
        &format!("Bearer {}", key(query)?),
    )
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    success: Option<bool>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    data: Option<Data>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Data {
    V2 {
        #[serde(default)]
        web: Vec<Item>,
    },
    V1(Vec<Item>),
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

pub(super) fn parse(body: &[u8]) -> Result<Answer, String> {
    let response: Response = json(body)?;
    if response.success == Some(false) {
        return Err(format!(
            "it reported a failure ({})",
            response.error.as_deref().unwrap_or("no reason given")
        ));
    }
    let items = match response.data {
        Some(Data::V2 { web }) => web,
        Some(Data::V1(items)) => items,
        None => Vec::new(),
    };
    Ok(Answer {
        hits: items
            .into_iter()
            .map(|i| RawHit {
                title: i.title.unwrap_or_default(),
                url: i.url.unwrap_or_default(),
                snippet: i.description.unwrap_or_default(),
            })
            .collect(),
        summary: None,
    })
}
