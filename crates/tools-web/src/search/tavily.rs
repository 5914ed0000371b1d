//! Tavily search.
//!
//! `POST {base}/search` with `{"query", "max_results"}` and `Authorization: Bearer <key>`; the
//! answer holds `results[]` with `title`, `url` and `content`. Documented at
//! <https://docs.tavily.com/api-reference/endpoint/search>.

use reqwest::header;
use serde_json::json;

use super::{Answer, Query, content_results, endpoint, key, post_json, with_header};
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

pub(super) fn parse(body: &[u8]) -> Result<Answer, String> {
    content_results(body)
}
