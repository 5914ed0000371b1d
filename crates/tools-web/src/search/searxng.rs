//! A SearXNG instance's search API.
//!
//! `GET {base}/search?q=…&format=json` (no key); the answer holds `results[]` with `title`,
//! `url` and `content`. The instance must list `json` under `search.formats` in its
//! settings.yml, or it answers 403. Documented at <https://docs.searxng.org/dev/search_api.html>.

use reqwest::header::{self, HeaderValue};

use super::{Answer, Query, content_results, endpoint, get};
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

pub(super) fn parse(body: &[u8]) -> Result<Answer, String> {
    content_results(body)
}
