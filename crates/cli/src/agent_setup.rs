//! Building the agent loop from configuration: shared by `toolshed run`/`chat` and by
//! scheduled prompt jobs.

use anyhow::{Result, bail};
use toolshed_agent::provider::{ApiKey, ProviderConfig, ProviderKind};
use toolshed_agent::{AgentSpec, RunSettings, ToolFilter};

use crate::config::Config;

/// The model used when none is configured.
pub fn default_model(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi => "gpt-4.1-mini",
        ProviderKind::Anthropic => "claude-sonnet-4-5",
        ProviderKind::Gemini => "gemini-2.5-flash",
    }
}

/// The provider configuration from flags, `[agent]` and the environment; an error that names
/// the variable to set when there is no key.
pub fn provider_config(
    config: &Config,
    provider: Option<&str>,
    base_url: Option<&str>,
) -> Result<ProviderConfig> {
    let a = &config.agent;
    let kind: ProviderKind = provider
        .or(a.provider.as_deref())
        .unwrap_or("openai")
        .parse()
        .map_err(|e: String| anyhow::anyhow!("{e}"))?;
    let mut p = ProviderConfig::new(kind);
    if let Some(url) = base_url.or(a.base_url.as_deref()) {
        p.base_url = url.trim_end_matches('/').to_owned();
    }
    if let Some(var) = &a.api_key_env {
        p.api_key_env = var.clone();
    }
    p.api_key = std::env::var(&p.api_key_env)
        .ok()
        .filter(|k| !k.trim().is_empty())
        .map(ApiKey::new);
    let custom_endpoint = p.base_url != kind.default_base_url();
    if p.api_key.is_none() && !custom_endpoint {
        bail!(
            "no API key for {kind}: set {} (or name another variable with `api_key_env` in [agent]), or pass --base-url for a server that needs none, such as Ollama at http://127.0.0.1:11434/v1",
            p.api_key_env
        );
    }
    if let Some(s) = a.timeout_secs {
        p.timeout = std::time::Duration::from_secs(s.max(1));
    }
    if let Some(n) = a.max_retries {
        p.max_retries = n;
    }
    Ok(p)
}

/// The named agents of the configuration.
pub fn agents(config: &Config) -> Vec<AgentSpec> {
    config
        .agents
        .iter()
        .map(|(name, a)| {
            let base = AgentSpec::default_agent();
            AgentSpec {
                name: name.clone(),
                system_prompt: a.system_prompt.clone().unwrap_or(base.system_prompt),
                tools: a.tools.clone().map(ToolFilter).unwrap_or(base.tools),
                model: a.model.clone(),
                max_iterations: a
                    .max_iterations
                    .or(config.agent.max_iterations)
                    .unwrap_or(base.max_iterations),
            }
        })
        .collect()
}

/// The loop's settings from `[agent]`.
pub fn settings(config: &Config, no_stream: bool) -> RunSettings {
    let a = &config.agent;
    let mut s = RunSettings::default();
    if let Some(n) = a.max_tokens {
        s.max_tokens = n;
    }
    s.temperature = a.temperature;
    s.stream = !no_stream && a.stream.unwrap_or(true);
    s
}
