use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::composio::ComposioConfig;
use crate::net::{Net, NetConfig};
use crate::page::PageCache;
use crate::pushover::PushoverConfig;
use crate::search::SearchConfig;

/// Where API keys come from: the environment by default ([`EnvSecrets`]); a fixed table
/// ([`StaticSecrets`]) for tests and embedders that keep keys elsewhere. Keys are read when a
/// call needs them, never stored in output or logs.
pub trait Secrets: Send + Sync + fmt::Debug {
    /// The value of the variable `name`, if set and not blank.
    fn get(&self, name: &str) -> Option<String>;
}

/// Keys from environment variables.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnvSecrets;

impl Secrets for EnvSecrets {
    fn get(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    }
}

/// Keys from a fixed table.
#[derive(Debug, Clone, Default)]
pub struct StaticSecrets(HashMap<String, String>);

impl StaticSecrets {
    /// An empty table.
    pub fn new() -> Self {
        StaticSecrets::default()
    }

    /// Adds `name` = `value`.
    pub fn with(mut self, name: &str, value: &str) -> Self {
        self.0.insert(name.to_owned(), value.to_owned());
        self
    }
}

impl Secrets for StaticSecrets {
    fn get(&self, name: &str) -> Option<String> {
        self.0.get(name).filter(|v| !v.trim().is_empty()).cloned()
    }
}

/// Configuration of the web tools. Every limit has a default; the composition root changes
/// what its configuration file says.
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) net: NetConfig,
    pub(crate) max_response_bytes: usize,
    pub(crate) max_page_bytes: usize,
    pub(crate) page_timeout: Duration,
    pub(crate) jina_reader: Option<JinaReader>,
    pub(crate) browser_command: Vec<OsString>,
    pub(crate) secrets: Arc<dyn Secrets>,
    pub(crate) search: SearchConfig,
    pub(crate) pushover: PushoverConfig,
    pub(crate) composio: ComposioConfig,
}

/// Fetch pages through Jina Reader (`GET {base_url}/{page url}`) instead of converting them
/// here, when the key variable is set.
#[derive(Debug, Clone)]
pub struct JinaReader {
    pub(crate) base_url: String,
    pub(crate) api_key_env: String,
}

impl JinaReader {
    /// Jina Reader at `https://r.jina.ai` with the key in `JINA_API_KEY`.
    pub fn new() -> Self {
        JinaReader {
            base_url: "https://r.jina.ai".into(),
            api_key_env: "JINA_API_KEY".into(),
        }
    }

    /// Another endpoint (a self-hosted reader, a test server).
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// Another variable for the key.
    pub fn with_api_key_env(mut self, var: impl Into<String>) -> Self {
        self.api_key_env = var.into();
        self
    }
}

impl Default for JinaReader {
    fn default() -> Self {
        JinaReader::new()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            net: NetConfig::default(),
            max_response_bytes: 1024 * 1024,
            max_page_bytes: 5 * 1024 * 1024,
            page_timeout: Duration::from_secs(30),
            jina_reader: None,
            browser_command: vec!["setsid".into(), "-f".into(), "xdg-open".into()],
            secrets: Arc::new(EnvSecrets),
            search: SearchConfig::default(),
            pushover: PushoverConfig::default(),
            composio: ComposioConfig::default(),
        }
    }
}

impl Config {
    /// The defaults: system DNS, https only (unless the policy allows http), 1 MiB bodies for
    /// http_request, 5 MiB pages for web_fetch, 30 s per page, 5 redirects.
    pub fn new() -> Self {
        Config::default()
    }

    /// How the tools reach the network (resolver, test exemptions, redirects, certificates).
    pub fn with_net(mut self, net: NetConfig) -> Self {
        self.net = net;
        self
    }

    /// The largest body http_request keeps (bytes, after decompression).
    pub fn with_max_response_bytes(mut self, n: usize) -> Self {
        self.max_response_bytes = n.max(1);
        self
    }

    /// The largest page web_fetch and browser download (bytes, after decompression).
    pub fn with_max_page_bytes(mut self, n: usize) -> Self {
        self.max_page_bytes = n.max(1);
        self
    }

    /// How long web_fetch and browser wait for a page.
    pub fn with_page_timeout(mut self, timeout: Duration) -> Self {
        self.page_timeout = timeout;
        self
    }

    /// Converts pages through Jina Reader when its key variable is set.
    pub fn with_jina_reader(mut self, reader: JinaReader) -> Self {
        self.jina_reader = Some(reader);
        self
    }

    /// Where API keys come from (the environment by default).
    pub fn with_secrets(mut self, secrets: Arc<dyn Secrets>) -> Self {
        self.secrets = secrets;
        self
    }

    /// Which providers web_search uses, in what order, and where they are.
    pub fn with_search(mut self, search: SearchConfig) -> Self {
        self.search = search;
        self
    }

    /// Where pushover sends notifications and which variables hold its credentials.
    pub fn with_pushover(mut self, pushover: PushoverConfig) -> Self {
        self.pushover = pushover;
        self
    }

    /// Where composio reaches Composio, the key's variable and the user id.
    pub fn with_composio(mut self, composio: ComposioConfig) -> Self {
        self.composio = composio;
        self
    }

    /// The program (and leading arguments) browser_open runs with the URL as last argument.
    /// The default, `setsid -f xdg-open`, detaches the browser so it outlives the call.
    pub fn with_browser_command(mut self, command: Vec<OsString>) -> Self {
        if !command.is_empty() {
            self.browser_command = command;
        }
        self
    }
}

/// What the tools of one `tools()` call share: the HTTP client (and its connection pool) and a
/// small cache of fetched pages, so that paging through a long page fetches it once.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) net: Net,
    pub(crate) max_response_bytes: usize,
    pub(crate) max_page_bytes: usize,
    pub(crate) page_timeout: Duration,
    pub(crate) jina_reader: Option<JinaReader>,
    pub(crate) browser_command: Vec<OsString>,
    pub(crate) secrets: Arc<dyn Secrets>,
    pub(crate) pages: PageCache,
    pub(crate) search: SearchConfig,
    pub(crate) pushover: PushoverConfig,
    pub(crate) composio: ComposioConfig,
}

impl Shared {
    pub(crate) fn new(config: &Config) -> Arc<Shared> {
        Arc::new(Shared {
            net: Net::new(config.net.clone()),
            max_response_bytes: config.max_response_bytes,
            max_page_bytes: config.max_page_bytes,
            page_timeout: config.page_timeout,
            jina_reader: config.jina_reader.clone(),
            browser_command: config.browser_command.clone(),
            secrets: Arc::clone(&config.secrets),
            pages: PageCache::default(),
            search: config.search.clone(),
            pushover: config.pushover.clone(),
            composio: config.composio.clone(),
        })
    }
}
