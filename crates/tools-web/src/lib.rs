//! The web family: `http_request`, `web_fetch`, `browser`, `browser_open`, `web_search`,
//! `pushover` and `composio`, behind one network policy that the model's arguments cannot turn
//! against the network the tools run in.
//!
//! # The network policy
//!
//! The policy's data lives in [`tool_core::Policy`] (`allowed_hosts`, `denied_hosts`,
//! `allow_http`); this crate enforces it through [`net`], which is tool-core's network layer
//! (`tool_core::net`, shared with every other crate that sends HTTP) re-exported:
//!
//! - One URL parser, the `url` crate that reqwest itself uses, reads the URL for the checks
//!   and for the request. `https://` only, unless the policy allows `http://`. URLs with user
//!   information (`https://allowed@evil`) are refused. Host names are compared lower-case,
//!   without trailing dots, internationalised names in punycode.
//! - Every address a host resolves to must be public: loopback, private, link-local (cloud
//!   metadata), CGNAT, unique-local, multicast, broadcast, documentation, benchmarking,
//!   reserved and unspecified ranges are refused, and so are IPv6 forms that embed such an IPv4
//!   address (mapped, compatible, NAT64, 6to4) and Teredo ([`net::addr::non_public`]). Address
//!   literals in any spelling the URL standard accepts (`2130706433`, `0x7f.1`, `0177.0.0.1`,
//!   `127.1`) are normalised by the parser and checked the same way.
//! - The check happens inside reqwest's resolver, so the connection goes to exactly the
//!   addresses that were checked: there is no second lookup for a rebinding DNS server to
//!   answer differently.
//! - Redirects are followed by hand (at most 5), each hop checked again; a hop to a host that
//!   is not on the allow list is not followed unless the policy is `full`, and credentials are
//!   dropped when a redirect changes origin. Environment proxies are ignored (a proxy would
//!   resolve names itself).
//! - Bodies are read chunk by chunk after decompression and cut at a cap (1 MiB for
//!   http_request, 5 MiB for pages), so a gzip bomb costs at most the cap; one deadline covers
//!   the whole exchange, so a server that sends a byte a second is cut off too. A cut body is
//!   returned with a note, not turned into an error.
//! - Header values that carry credentials (`Authorization`, cookies, anything named like a
//!   token, key or secret) are redacted in output; credential-like query values are redacted
//!   in logs.
//!
//! Tests against servers on this machine name the loopback addresses they use with
//! [`NetConfig::allow_loopback_for_tests`]; nothing else relaxes the address checks.
//!
//! Every tool declares [`tool_core::Access::Network`] for each host it will contact, so the
//! policy's allow list, deny list and approval rules apply before anything is sent.
//!
//! # Search and integrations
//!
//! `web_search` asks search APIs (Brave, Tavily, Exa, Perplexity, Firecrawl, Jina, a SearXNG
//! instance, DuckDuckGo's HTML page) through the same network layer, each request built as the
//! provider documents it and each answer normalised to title, URL and snippet. Without a
//! `provider` argument it walks a fallback chain ([`SearchConfig`]): every keyed provider whose
//! key is set, then SearXNG when an instance is configured, then DuckDuckGo, the next taking
//! over when one fails (connection error, non-2xx, rate limit, unreadable answer) and the
//! output naming the failures. `pushover` sends a notification and `composio` lists, runs and
//! connects third-party app tools. API keys come only from [`Secrets`] when a call needs them
//! and never appear in output, errors or logs; every host a call may try is declared to the
//! policy first.
//!
//! # Example
//!
//! The address check every resolved address goes through (no request is made here):
//!
//! ```
//! use std::net::IpAddr;
//! use tools_web::net::addr::non_public;
//!
//! let public: IpAddr = "1.1.1.1".parse().unwrap();
//! assert_eq!(non_public(public), None);
//! for refused in ["127.0.0.1", "10.1.2.3", "169.254.169.254", "::ffff:192.168.0.1", "fd00::1"] {
//!     let ip: IpAddr = refused.parse().unwrap();
//!     assert!(non_public(ip).is_some(), "{refused} must be refused");
//! }
//! ```

mod browser;
mod browser_open;
mod composio;
mod config;
mod dom;
mod http_request;
pub mod net;
mod page;
mod pushover;
mod search;
mod web_fetch;
mod web_search;

use std::sync::Arc;

use tool_core::{Alias, DynTool, typed};

pub use browser::{Browser, BrowserAction, BrowserArgs};
pub use browser_open::{BrowserOpen, BrowserOpenArgs};
pub use composio::{Composio, ComposioAction, ComposioArgs, ComposioConfig};
pub use config::{Config, EnvSecrets, JinaReader, Secrets, StaticSecrets};
pub use http_request::{HttpRequest, HttpRequestArgs};
pub use net::{Lookup, NetConfig, StaticLookup, SystemLookup};
pub use pushover::{Pushover, PushoverArgs, PushoverConfig};
pub use search::{Provider, SearchConfig};
pub use web_fetch::{WebFetch, WebFetchArgs};
pub use web_search::{WebSearch, WebSearchArgs};

/// The web tools, sharing one HTTP client and page cache.
pub fn tools(config: &Config) -> Vec<Arc<dyn DynTool>> {
    let shared = config::Shared::new(config);
    vec![
        typed(HttpRequest::new(Arc::clone(&shared))),
        typed(WebFetch::new(Arc::clone(&shared))),
        typed(Browser::new(Arc::clone(&shared))),
        typed(BrowserOpen::new(Arc::clone(&shared))),
        typed(WebSearch::new(Arc::clone(&shared))),
        typed(Pushover::new(Arc::clone(&shared))),
        typed(Composio::new(Arc::clone(&shared))),
    ]
}

/// Seed-compatible names: hrns calls web_fetch with `{url}` only, which is ours already.
pub const ALIASES: &[Alias] = &[];
