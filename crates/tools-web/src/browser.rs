use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};

use crate::browser_open::{check_open, open};
use crate::config::Shared;
use crate::net;
use crate::page;
use crate::web_fetch::{DEFAULT_MAX_CHARS, page_access, render};

/// What `browser` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BrowserAction {
    /// Show the page in the user's desktop browser (https and the host allow list required).
    Open,
    /// Read the page's text (as Markdown).
    Read,
}

/// Arguments of `browser`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrowserArgs {
    /// `open` shows the page to the user; `read` returns its text.
    pub action: BrowserAction,
    /// The page's full URL.
    pub url: String,
    /// For `read`: the character to start at, as the previous answer says (default 0).
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub start_index: Option<u64>,
}

/// `browser`: NullClaw's browser tool, open or read a page.
#[derive(Debug, Clone)]
pub struct Browser {
    shared: Arc<Shared>,
}

impl Browser {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Browser { shared }
    }
}

#[async_trait]
impl Tool for Browser {
    const NAME: &'static str = "browser";
    type Args = BrowserArgs;

    fn description(&self) -> String {
        "Open a page in the user's desktop browser (action open: https and allow-listed hosts \
         only) or read its text as Markdown (action read, in parts like web_fetch)."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::ADDITIVE.open_world(true)
    }

    const SAME_JOB: &'static [&'static str] = &["browser_open", "web_fetch"];

    /// `open` does `browser_open`'s job and `read` does `web_fetch`'s: their rules hold too.
    fn same_as(&self, args: &Self::Args) -> &'static [&'static str] {
        match args.action {
            BrowserAction::Open => &["browser_open"],
            BrowserAction::Read => &["web_fetch"],
        }
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        match args.action {
            BrowserAction::Open => {
                let url = check_open(&self.shared, ctx, &args.url)?;
                Ok(vec![Access::Network {
                    host: net::host_name(&url),
                }])
            }
            BrowserAction::Read => page_access(&self.shared, ctx, &args.url, false),
        }
    }

    fn timeout(&self, _args: &Self::Args) -> Option<Duration> {
        Some(self.shared.page_timeout + Duration::from_secs(10))
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        match args.action {
            BrowserAction::Open => {
                if args.start_index.is_some() {
                    return Err(ToolError::InvalidArgs {
                        path: "/start_index".into(),
                        message: "start_index is for action read; leave it out for open".into(),
                    });
                }
                let url = check_open(&self.shared, ctx, &args.url)?;
                open(&self.shared, ctx, &url).await
            }
            BrowserAction::Read => {
                let url = net::check_url(&args.url, &ctx.policy, self.shared.net.config(), "/url")?;
                let page = page::load(&self.shared, ctx, url, false).await?;
                let start = usize::try_from(args.start_index.unwrap_or(0)).unwrap_or(usize::MAX);
                render(&page, start, DEFAULT_MAX_CHARS as usize, Self::NAME)
            }
        }
    }
}
