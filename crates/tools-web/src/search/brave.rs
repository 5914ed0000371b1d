//! Brave Search API, web search.
//!
//! `GET {base}/res/v1/web/search?q=…&count=…` with the key in `X-Subscription-Token`; the answer
//! (`WebSearchApiResponse`) holds the results in `web.results[]` with `title`, `url` and
//! `description` (which carries `<strong>` highlighting). Documented at
//! <https://api-dashboard.search.brave.com/api-reference/web/search/get> and
//! <https://api.search.brave.com/app/documentation/web-search/responses>.

use reqwest::header::{self, HeaderName, HeaderValue};
use serde::Deserialize;

use super::{Answer, Query, RawHit, endpoint, get, json, key, with_header};
use crate::net::Request;

pub(super) fn request(base: &str, query: &Query<'_>) -> Result<Request, String> {
    let mut url = endpoint(base, "/res/v1/web/search")?;
    url.query_pairs_mut()
        .append_pair("q", query.text)
        .append_pair("count", &query.count.to_string());
    let mut request = get(url, query);
    request
        .headers
        .insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    with_header(
        request,
        HeaderName::from_static("x-subscription-token"),
        key(query)?,
    )
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    web: Option<Web>,
}

#[derive(Deserialize)]
struct Web {
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
    description: Option<String>,
}

pub(super) fn parse(body: &[u8]) -> Result<Answer, String> {
    let response: Response = json(body)?;
    let hits = response
        .web
        .map(|w| w.results)
        .unwrap_or_default()
        .into_iter()
        .map(|i| RawHit {
            title: i.title.unwrap_or_default(),
            url: i.url.unwrap_or_default(),
            snippet: i.description.unwrap_or_default(),
        })
        .collect();
    Ok(Answer {
        hits,
        summary: None,
    })
}
