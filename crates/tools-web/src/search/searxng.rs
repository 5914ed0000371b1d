//! A SearXNG instance's search API.
//!
//! `GET {base}/search?q=…&format=json` (no key); the answer holds `results[]` with `title`,
//! `url` and `content`. The instance must list `json` under `search.formats` in its
//! settings.yml, or it answers 403. Documented at <https://docs.searxng.org/dev/search_api.html>.

use reqwest::header::{self, HeaderValue};
use serde::Deserialize;

use super::{Answer, Query, RawHit, endpoint, get, json};
use crate::net::Request;

pub(super) fn request(base: &str, query: &Query<'_>) -> Result<Request, String> {
    let mut url = endpoint(base, "/search")?;
    url.query_pairs_mut()
        .append_pair("q", query.text)
        .append_pair("format", "json");
    let mut request = get(url, query);
    request
        .headers
        .insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    Ok(request)
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
