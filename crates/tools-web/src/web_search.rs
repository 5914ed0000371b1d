use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Policy, Tool, ToolContext, ToolError, ToolOutput};

use crate::config::Shared;
use crate::net::{self, Cut};
use crate::search::{self, Hit, Provider, Query};

/// Arguments of `web_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSearchArgs {
    /// What to search for, as you would type it into a search engine (at most 2000
    /// characters).
    #[schemars(length(min = 1, max = 2000))]
    pub query: String,
    /// How many results to return, 1 to 10 (default 5).
    #[serde(default)]
    #[schemars(range(min = 1, max = 10))]
    pub count: Option<u32>,
    /// Use only this provider, without falling back to others. Leave it out to use the
    /// configured providers in order, each one taking over when the one before fails.
    #[serde(default)]
    pub provider: Option<Provider>,
}

/// `web_search`: a web search through the configured providers, with fallback.
#[derive(Debug, Clone)]
pub struct WebSearch {
    shared: Arc<Shared>,
}

impl WebSearch {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        WebSearch { shared }
    }
}

const MAX_QUERY_CHARS: usize = 2000;
const DEFAULT_COUNT: u32 = 5;

/// The arguments after the checks.
struct Checked {
    /// Control characters (CR, LF, NUL, escapes) turned into spaces, whitespace collapsed: a
    /// search engine reads them as word breaks anyway, and no provider gets bytes it could
    /// misread in a header, a URL or a log line.
    query: String,
    count: usize,
}

fn check(args: &WebSearchArgs) -> Result<Checked, ToolError> {
    let invalid = |path: &str, message: String| ToolError::InvalidArgs {
        path: path.into(),
        message,
    };
    let chars = args.query.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(invalid(
            "/query",
            format!(
                "the query is {chars} characters long; keep it to {MAX_QUERY_CHARS} (a few keywords work best)"
            ),
        ));
    }
    let query = search::collapse(&args.query);
    if query.is_empty() {
        return Err(invalid(
            "/query",
            "the query is empty; give the words to search for".into(),
        ));
    }
    let count = args.count.unwrap_or(DEFAULT_COUNT);
    if !(1..=10).contains(&count) {
        return Err(invalid(
            "/count",
            format!("{count} is out of range; ask for 1 to 10 results"),
        ));
    }
    Ok(Checked {
        query,
        count: count as usize,
    })
}

/// A provider that can run: where it is and its key.
struct Planned {
    provider: Provider,
    base: String,
    key: Option<String>,
}

/// The providers a call will try, and those of the chain left out before it starts.
struct Plan {
    run: Vec<Planned>,
    skipped: Vec<(Provider, String)>,
    explicit: bool,
}

/// How one provider's attempt ended, when it gave no answer.
enum Miss {
    /// Stop everything (the call was cancelled).
    Stop(ToolError),
    /// Try the next provider; the reason, for the model.
    Failed(String),
}

impl WebSearch {
    /// `provider`'s endpoint and key, or why it cannot run (the variable to set).
    fn usable(&self, provider: Provider) -> Result<Planned, String> {
        let config = &self.shared.search;
        let env = config.key_env(provider);
        let configured = config.base_urls.get(&provider).cloned();
        let base = match provider {
            Provider::Searxng => configured
                .or_else(|| env.and_then(|v| self.shared.secrets.get(v)))
                .ok_or_else(|| {
                    format!(
                        "SearXNG needs the address of a SearXNG instance in {} or in \
                         web.search_urls.searxng in toolshed.toml",
                        env.unwrap_or("SEARXNG_URL")
                    )
                })?,
            _ => configured
                .or_else(|| provider.default_base_url().map(str::to_owned))
                .ok_or_else(|| format!("{provider} has no base URL configured"))?,
        };
        let key = if provider.needs_key() {
            let var = env.unwrap_or_default();
            Some(
                self.shared
                    .secrets
                    .get(var)
                    .ok_or_else(|| format!("{provider} needs an API key in {var}"))?,
            )
        } else {
            None
        };
        Ok(Planned {
            provider,
            base,
            key,
        })
    }

    /// What would make more providers of the chain available (the variables to set, the
    /// SearXNG setting), when some cannot run for want of them.
    fn setup_hint(&self) -> Option<String> {
        let config = &self.shared.search;
        let missing: Vec<Provider> = config
            .configured_chain()
            .into_iter()
            .filter(|p| self.usable(*p).is_err())
            .collect();
        let keyed: Vec<Provider> = missing.iter().copied().filter(|p| p.needs_key()).collect();
        let mut ways = Vec::new();
        if !keyed.is_empty() {
            let vars: Vec<&str> = keyed.iter().filter_map(|p| config.key_env(*p)).collect();
            let names: Vec<&str> = keyed.iter().map(|p| p.label()).collect();
            ways.push(format!(
                "set {} in the environment (the key of {})",
                or_list(&vars),
                or_list(&names)
            ));
        }
        if missing.contains(&Provider::Searxng) {
            ways.push(format!(
                "give the address of a SearXNG instance in {} or as web.search_urls.searxng in toolshed.toml",
                config.key_env(Provider::Searxng).unwrap_or("SEARXNG_URL")
            ));
        }
        (!ways.is_empty()).then(|| ways.join(", or "))
    }

    /// The providers that can run now, by name, for error messages.
    fn usable_names(&self, except: Option<Provider>) -> Vec<&'static str> {
        Provider::ALL
            .into_iter()
            .filter(|p| Some(*p) != except && self.usable(*p).is_ok())
            .map(Provider::name)
            .collect()
    }

    /// What a call will try. With `policy`, chain providers whose host the policy denies are
    /// left out (an explicitly named provider is kept, so that the policy says no itself).
    fn plan(&self, policy: Option<&Policy>, explicit: Option<Provider>) -> Result<Plan, ToolError> {
        if let Some(provider) = explicit {
            return match self.usable(provider) {
                Ok(planned) if host_of(&planned.base).is_none() => Err(ToolError::Failed(format!(
                    "The configured base URL of {provider} (`{}`) is not a valid http(s) URL; fix the web_search configuration, or use another provider.",
                    planned.base
                ))),
                Ok(planned) => Ok(Plan {
                    run: vec![planned],
                    skipped: Vec::new(),
                    explicit: true,
                }),
                Err(why) => {
                    let others = self.usable_names(Some(provider));
                    let next = if others.is_empty() {
                        "set it and try again".to_owned()
                    } else {
                        format!("set it, or use one of: {}", others.join(", "))
                    };
                    Err(ToolError::InvalidArgs {
                        path: "/provider".into(),
                        message: format!("{why}; {next}"),
                    })
                }
            };
        }
        let mut run = Vec::new();
        let mut skipped = Vec::new();
        let mut unusable = Vec::new();
        for provider in self.shared.search.configured_chain() {
            match self.usable(provider) {
                Ok(planned) => {
                    let host = host_of(&planned.base);
                    match (policy, host) {
                        (_, None) => skipped.push((
                            provider,
                            format!(
                                "its configured base URL `{}` is not a valid http(s) URL",
                                planned.base
                            ),
                        )),
                        (Some(policy), Some(host)) if policy.host_denied(&host) => skipped.push((
                            provider,
                            format!("its host {host} is on the denied host list"),
                        )),
                        _ => run.push(planned),
                    }
                }
                Err(why) => unusable.push(why),
            }
        }
        if run.is_empty() {
            let mut reasons: Vec<String> = unusable;
            reasons.extend(skipped.iter().map(|(p, why)| format!("{p}: {why}")));
            return Err(ToolError::Failed(format!(
                "No search provider can run: {}. Set one of the key variables, or configure a \
                 chain that includes duckduckgo, which needs no key.",
                if reasons.is_empty() {
                    "the configured chain is empty".to_owned()
                } else {
                    reasons.join("; ")
                }
            )));
        }
        Ok(Plan {
            run,
            skipped,
            explicit: false,
        })
    }

    /// Asks one provider.
    async fn attempt(
        &self,
        ctx: &ToolContext,
        planned: &Planned,
        query: &Query<'_>,
    ) -> Result<Outcome, Miss> {
        let provider = planned.provider;
        let request = search::request(provider, &planned.base, query).map_err(Miss::Failed)?;
        let fetched = match self.shared.net.send(ctx, request).await {
            Ok(f) => f,
            Err(ToolError::Cancelled) => return Err(Miss::Stop(ToolError::Cancelled)),
            Err(ToolError::Timeout(_)) => {
                return Err(Miss::Failed(format!(
                    "it did not answer within {} s",
                    query.timeout.as_secs()
                )));
            }
            Err(e) => {
                return Err(Miss::Failed(e.to_string().trim_end_matches('.').to_owned()));
            }
        };
        if let Some(u) = &fetched.unfollowed {
            return Err(Miss::Failed(format!(
                "it redirected to {}, which was not followed ({})",
                u.location, u.why
            )));
        }
        if !search::accepted(provider, fetched.status) {
            return Err(Miss::Failed(refusal(
                &self.shared,
                provider,
                fetched.status,
                &fetched.body,
            )));
        }
        // Parsing a results page (HTML for DuckDuckGo) is CPU work on up to the size cap: it
        // runs off the async workers.
        let body = fetched.body.clone();
        let parsed = tokio::task::spawn_blocking(move || search::parse(provider, &body))
            .await
            .unwrap_or_else(|e| Err(format!("reading the answer failed ({e})")));
        match parsed {
            Ok(answer) => Ok(Outcome {
                hits: search::normalise(answer.hits, query.count),
                summary: answer.summary,
            }),
            Err(why) => Err(Miss::Failed(match &fetched.cut {
                Some(Cut::Size(n)) => format!(
                    "its answer was longer than {n} bytes and was cut, so it could not be read"
                ),
                Some(cut) => format!("{why}; {}", cut.describe()),
                None => why,
            })),
        }
    }
}

/// `a`, `a or b`, `a, b or c`.
fn or_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// A provider's answer, cleaned.
struct Outcome {
    hits: Vec<Hit>,
    summary: Option<String>,
}

/// The host of a configured base URL, as the policy sees it.
fn host_of(base: &str) -> Option<String> {
    search::endpoint(base, "")
        .ok()
        .map(|u| net::host_name(&u))
        .filter(|h| !h.is_empty())
}

/// Why a provider's non-success answer is a failure, with what to do about it.
fn refusal(shared: &Shared, provider: Provider, status: StatusCode, body: &[u8]) -> String {
    let mut why = format!(
        "HTTP {} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    )
    .trim_end()
    .to_owned();
    if let Some(message) = search::error_message(body)
        && provider != Provider::Duckduckgo
    {
        why.push_str(&format!(": {message}"));
    }
    let var = shared.search.key_env(provider).unwrap_or_default();
    let hint = match (provider, status.as_u16()) {
        (Provider::Duckduckgo, 202) => {
            " (DuckDuckGo answered with a robot check instead of results)".to_owned()
        }
        (Provider::Searxng, 403) => {
            " (the instance may not allow the JSON format: add json to search.formats in its settings.yml)".to_owned()
        }
        (p, 401 | 403) if p.needs_key() => format!(" (the key in {var} was refused)"),
        (_, 429) => " (rate limited; try again later)".to_owned(),
        _ => String::new(),
    };
    why.push_str(&hint);
    why
}

/// Replaces `secret` in `text` (an API could echo the key back in an error).
fn scrub(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(s) if s.len() >= 6 => text.replace(s, "[redacted]"),
        _ => text.to_owned(),
    }
}

fn render(
    provider: Provider,
    query: &str,
    hits: &[Hit],
    summary: Option<&str>,
    failed: &[(Provider, String)],
) -> ToolOutput {
    let shown_query = search::cap(query, 200);
    let mut text = if hits.is_empty() {
        format!("No results for \"{shown_query}\" from {provider}.\n")
    } else {
        format!(
            "{} result{} for \"{shown_query}\" from {provider}:\n",
            hits.len(),
            if hits.len() == 1 { "" } else { "s" }
        )
    };
    for (i, hit) in hits.iter().enumerate() {
        text.push_str(&format!("\n{}. {}\n   {}\n", i + 1, hit.title, hit.url));
        if !hit.snippet.is_empty() {
            text.push_str(&format!("   {}\n", hit.snippet));
        }
    }
    if let Some(summary) = summary {
        text.push_str(&format!("\n{provider}'s answer:\n{summary}\n"));
    }
    if !failed.is_empty() {
        let list: Vec<String> = failed
            .iter()
            .map(|(p, why)| format!("{p} ({why})"))
            .collect();
        text.push_str(&format!(
            "\nTried before {provider}, without success: {}.\n",
            list.join("; ")
        ));
    }
    let structured = json!({
        "provider": provider.name(),
        "query": query,
        "results": hits.iter().map(|h| json!({
            "title": h.title,
            "url": h.url,
            "snippet": h.snippet,
        })).collect::<Vec<_>>(),
        "summary": summary,
        "failed": failed.iter().map(|(p, why)| json!({
            "provider": p.name(),
            "reason": why,
        })).collect::<Vec<_>>(),
    });
    ToolOutput::text(text).with_structured(structured)
}

#[async_trait]
impl Tool for WebSearch {
    const NAME: &'static str = "web_search";
    type Args = WebSearchArgs;

    fn description(&self) -> String {
        "Search the web and get a numbered list of results: title, URL and a short snippet. \
         The configured providers (Brave, Tavily, Exa, Perplexity, Firecrawl, Jina, SearXNG, \
         DuckDuckGo) are tried in order, the next taking over when one fails; name a provider \
         to use only that one. Use web_fetch to read a result's page."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY.open_world(true)
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        check(args)?;
        let plan = self.plan(Some(&ctx.policy), args.provider)?;
        let mut hosts: Vec<String> = Vec::new();
        for planned in &plan.run {
            if let Some(host) = host_of(&planned.base)
                && !hosts.contains(&host)
            {
                hosts.push(host);
            }
        }
        Ok(hosts
            .into_iter()
            .map(|host| Access::Network { host })
            .collect())
    }

    fn timeout(&self, args: &Self::Args) -> Option<Duration> {
        // Every provider of the chain may take its full time before the next is tried.
        let n = self
            .plan(None, args.provider)
            .map(|p| p.run.len())
            .unwrap_or(1);
        let each = self.shared.search.timeout;
        Some(each * u32::try_from(n).unwrap_or(u32::MAX) + Duration::from_secs(5))
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let checked = check(&args)?;
        let plan = self.plan(Some(&ctx.policy), args.provider)?;
        let mut failed = plan.skipped;
        for planned in &plan.run {
            let key = planned.key.as_deref();
            let query = Query {
                text: &checked.query,
                count: checked.count,
                key,
                timeout: self.shared.search.timeout,
            };
            match self.attempt(ctx, planned, &query).await {
                Ok(outcome) => {
                    return Ok(render(
                        planned.provider,
                        &checked.query,
                        &outcome.hits,
                        outcome.summary.as_deref(),
                        &failed,
                    ));
                }
                Err(Miss::Stop(e)) => return Err(e),
                Err(Miss::Failed(why)) => {
                    let why = scrub(&why, key);
                    tracing::debug!(provider = planned.provider.name(), reason = %why, "search provider failed");
                    failed.push((planned.provider, why));
                }
            }
        }
        if plan.explicit
            && let Some((provider, why)) = failed.last()
        {
            let others = self.usable_names(Some(*provider));
            return Err(ToolError::Failed(format!(
                "{provider} could not answer ({why}). Try again later{}.",
                if others.is_empty() {
                    String::new()
                } else {
                    format!(", or use another provider: {}", others.join(", "))
                }
            )));
        }
        let list: Vec<String> = failed
            .iter()
            .map(|(p, why)| format!("{p}: {why}"))
            .collect();
        let next = match self.setup_hint() {
            Some(hint) => format!("Try again later, or make another provider available: {hint}."),
            None => "Try again later, or configure another provider.".to_owned(),
        };
        Err(ToolError::Failed(format!(
            "Every search provider failed ({}). {next}",
            list.join("; ")
        )))
    }
}
