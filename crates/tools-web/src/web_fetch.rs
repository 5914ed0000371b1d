use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};

use crate::config::Shared;
use crate::net;
use crate::page::{self, Page};

/// Arguments of `web_fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebFetchArgs {
    /// The page's full URL, such as `https://example.com/docs/intro`.
    pub url: String,
    /// The most characters to return (1 to 1,000,000, default 50,000).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000000))]
    pub max_chars: Option<u64>,
    /// The character to start at, for reading a long page in parts: the previous answer says
    /// which value to pass next (default 0).
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub start_index: Option<u64>,
    /// Return the body as the server sent it (decoded to text) instead of converting HTML to
    /// Markdown (default false).
    #[serde(default)]
    pub raw: Option<bool>,
}

/// `web_fetch`: a web page as Markdown, in parts.
#[derive(Debug, Clone)]
pub struct WebFetch {
    shared: Arc<Shared>,
}

impl WebFetch {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        WebFetch { shared }
    }
}

pub(crate) const DEFAULT_MAX_CHARS: u64 = 50_000;

pub(crate) fn check_window(max_chars: Option<u64>) -> Result<usize, ToolError> {
    let max = max_chars.unwrap_or(DEFAULT_MAX_CHARS);
    if !(1..=1_000_000).contains(&max) {
        return Err(ToolError::InvalidArgs {
            path: "/max_chars".into(),
            message: format!("{max} is out of range; give 1 to 1000000 characters"),
        });
    }
    Ok(max as usize)
}

/// Network accesses of a page load: the page's host, and Jina Reader's when it converts.
pub(crate) fn page_access(
    shared: &Shared,
    ctx: &ToolContext,
    url: &str,
    raw: bool,
) -> Result<Vec<Access>, ToolError> {
    let url = net::check_url(url, &ctx.policy, shared.net.config(), "/url")?;
    let mut accesses = vec![Access::Network {
        host: net::host_name(&url),
    }];
    if !raw
        && let Some(reader) = &shared.jina_reader
        && shared.secrets.get(&reader.api_key_env).is_some()
        && let Ok(base) = url::Url::parse(&reader.base_url)
    {
        accesses.push(Access::Network {
            host: net::host_name(&base),
        });
    }
    Ok(accesses)
}

/// The text shown for characters `start..start + max` of `page`.
pub(crate) fn render(
    page: &Page,
    start: usize,
    max: usize,
    tool: &str,
) -> Result<ToolOutput, ToolError> {
    if start > 0 && start >= page.chars {
        return Err(ToolError::InvalidArgs {
            path: "/start_index".into(),
            message: format!(
                "{start} is past the end: the page has {} characters; start below that",
                page.chars
            ),
        });
    }
    let (part, end) = page::slice(&page.text, start, max);
    let mut text = String::new();
    if let Some(title) = &page.title {
        text.push_str(&format!("Title: {title}\n"));
    }
    text.push_str(&format!("URL: {}\n", page.url));
    if !page.status.is_success() {
        text.push_str(&format!(
            "Status: HTTP {} {} (the server's error page follows)\n",
            page.status.as_u16(),
            page.status.canonical_reason().unwrap_or("")
        ));
    }
    if start > 0 || end < page.chars {
        text.push_str(&format!("Characters {start}–{end} of {}\n", page.chars));
    }
    text.push('\n');
    text.push_str(part);
    if end < page.chars {
        text.push_str(&format!(
            "\n\n[{} more characters. Call {tool} again with start_index={end} to read on.]",
            page.chars - end
        ));
    }
    for note in &page.notes {
        text.push('\n');
        text.push_str(note);
    }
    let structured = json!({
        "url": page.url.as_str(),
        "status": page.status.as_u16(),
        "title": page.title,
        "content_type": page.media_type,
        "start_index": start,
        "end_index": end,
        "total_chars": page.chars,
        "next_start_index": (end < page.chars).then_some(end),
    });
    Ok(ToolOutput::text(text).with_structured(structured))
}

#[async_trait]
impl Tool for WebFetch {
    const NAME: &'static str = "web_fetch";
    type Args = WebFetchArgs;

    fn description(&self) -> String {
        "Fetch a web page and read it as Markdown (HTML converted locally; text, JSON and XML \
         as they are), in parts of max_chars characters: the answer says which start_index \
         to pass to read on. Only public hosts, https unless the policy allows http. Set raw \
         for the body without conversion."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY.open_world(true)
    }

    /// `browser` does the same job (`open`, `read`), and its rules hold here too.
    const SAME_JOB: &'static [&'static str] = &["browser"];

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        check_window(args.max_chars)?;
        page_access(&self.shared, ctx, &args.url, args.raw.unwrap_or(false))
    }

    fn timeout(&self, _args: &Self::Args) -> Option<Duration> {
        Some(self.shared.page_timeout + Duration::from_secs(10))
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let max = check_window(args.max_chars)?;
        let raw = args.raw.unwrap_or(false);
        let url = net::check_url(&args.url, &ctx.policy, self.shared.net.config(), "/url")?;
        let page = page::load(&self.shared, ctx, url, raw).await?;
        let start = usize::try_from(args.start_index.unwrap_or(0)).unwrap_or(usize::MAX);
        render(&page, start, max, Self::NAME)
    }
}
