//! Perplexity Sonar (chat completions with web search).
//!
//! `POST {base}/chat/completions` with `{"model": "sonar", "messages": [{"role": "user",
//! "content": query}]}` and `Authorization: Bearer <key>`; the answer carries the sources in
//! `search_results[]` (`title`, `url`, `snippet`) and, in older answers, only `citations[]`
//! (URLs), and the written answer in `choices[0].message.content`. Documented at
//! <https://docs.perplexity.ai/api-reference/chat-completions-post>.

use reqwest::header;
use serde::Deserialize;
use serde_json::json;

use super::{Answer, Query, RawHit, clean_summary, endpoint, json, key, post_json, with_header};
use crate::net::Request;

pub(super) fn request(base: &str, query: &Query<'_>) -> Result<Request, String> {
    let url = endpoint(base, "/chat/completions")?;
    let body = json!({
        "model": "sonar",
        "messages": [{ "role": "user", "content": query.text }],
    });
    with_header(
        post_json(url, &body, query)?,
        header::AUTHORIZATION,
        &format!("Bearer {}", key(query)?),
    )
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    citations: Option<Vec<String>>,
    #[serde(default)]
    search_results: Option<Vec<Source>>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<Message>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct Source {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    snippet: Option<String>,
}

pub(super) fn parse(body: &[u8]) -> Result<Answer, String> {
    let response: Response = json(body)?;
    let summary = response
        .choices
        .into_iter()
        .next()
        .and_then(|c| c.message)
        .and_then(|m| m.content)
        .and_then(|c| clean_summary(&c));
    let sources = response.search_results.unwrap_or_default();
    let hits = if sources.is_empty() {
        response
            .citations
            .unwrap_or_default()
            .into_iter()
            .map(|url| RawHit {
                title: String::new(),
                url,
                snippet: String::new(),
            })
            .collect()
    } else {
        sources
            .into_iter()
            .map(|s| RawHit {
                title: s.title.unwrap_or_default(),
                url: s.url.unwrap_or_default(),
                snippet: s.snippet.unwrap_or_default(),
            })
            .collect()
    };
    Ok(Answer { hits, summary })
}
