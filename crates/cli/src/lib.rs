//! The composition root of Toolshed: builds the registry from every tool family, the policy and
//! limits from configuration, and runs calls through the layer stack.

pub mod config;

use anyhow::{Result, bail};
use tool_core::{Alias, PROFILES, Registry};

/// Every tool this build includes, under canonical names, with default settings.
pub fn registry() -> Result<Registry> {
    registry_with(&config::Config::default())
}

/// Every tool this build includes, under canonical names, set up from `config`.
pub fn registry_with(config: &config::Config) -> Result<Registry> {
    let mut registry = Registry::new();
    registry.register_all(tools_fs::tools(&tools_fs::Config::default()))?;
    registry.register_all(tools_git::tools(&tools_git::Config::default()))?;
    registry.register_all(tools_shell::tools(&config.shell_config()))?;
    Ok(registry)
}

/// Every seed-compatible alias this build knows.
pub fn aliases() -> Vec<Alias> {
    [tools_fs::ALIASES, tools_git::ALIASES, tools_shell::ALIASES].concat()
}

/// The registry a profile exposes (`None`: canonical names).
pub fn registry_for(config: &config::Config, profile: Option<&str>) -> Result<Registry> {
    let base = registry_with(config)?;
    match profile {
        None => Ok(base),
        Some(p) if PROFILES.contains(&p) => Ok(base.with_profile(p, &aliases())?),
        Some(p) => bail!(
            "unknown profile `{p}`; the profiles are: {}",
            PROFILES.join(", ")
        ),
    }
}
