use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use tool_core::process::{self, ProcessSpec};
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};
use url::Url;

use crate::config::Shared;
use crate::net;

/// Arguments of `browser_open`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrowserOpenArgs {
    /// The https:// URL to show the user, on a host of the allow list.
    pub url: String,
}

/// `browser_open`: show a page in the user's desktop browser.
#[derive(Debug, Clone)]
pub struct BrowserOpen {
    shared: Arc<Shared>,
}

impl BrowserOpen {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        BrowserOpen { shared }
    }
}

/// The checks of a URL for the desktop browser: the network checks, plus https and the allow
/// list whatever the autonomy level (the browser carries the user's cookies and sessions).
pub(crate) fn check_open(shared: &Shared, ctx: &ToolContext, raw: &str) -> Result<Url, ToolError> {
    let url = net::check_url(raw, &ctx.policy, shared.net.config(), "/url")?;
    if url.scheme() != "https" {
        return Err(ToolError::Denied(format!(
            "the desktop browser only opens https:// URLs; use https://{}",
            url.as_str().trim_start_matches("http://")
        )));
    }
    let host = net::host_name(&url);
    if !ctx.policy.host_allowed(&host) {
        return Err(ToolError::Denied(format!(
            "{host} is not on the host allow list (policy.allowed_hosts), and the desktop browser only opens listed hosts; ask the user to add it"
        )));
    }
    Ok(url)
}

/// Opens `url` with the configured browser command.
pub(crate) async fn open(
    shared: &Shared,
    ctx: &ToolContext,
    url: &Url,
) -> Result<ToolOutput, ToolError> {
    shared.net.check_resolves(url).await?;
    let (program, lead) = shared
        .browser_command
        .split_first()
        .ok_or_else(|| ToolError::Failed("No browser command is configured.".into()))?;
    let cwd = ctx
        .workspace
        .local_root()
        .map_or_else(|| std::path::PathBuf::from("/"), |p| p.to_path_buf());
    let mut spec = ProcessSpec::new(program.clone(), cwd);
    for arg in lead {
        spec = spec.arg(arg.clone());
    }
    spec = spec.arg(url.as_str());
    spec.timeout = Duration::from_secs(15);
    spec.max_output_bytes = 4096;
    // A desktop browser needs to find the user's session.
    spec.env_allow.extend(
        [
            "DISPLAY",
            "WAYLAND_DISPLAY",
            "XDG_RUNTIME_DIR",
            "XDG_CURRENT_DESKTOP",
            "XDG_SESSION_TYPE",
            "DBUS_SESSION_BUS_ADDRESS",
            "BROWSER",
        ]
        .map(String::from),
    );
    let out = process::run(spec, ctx).await.map_err(|e| match e {
        ToolError::Failed(m) => ToolError::Failed(format!(
            "{m} browser_open needs a desktop session with xdg-open (Debian package xdg-utils)."
        )),
        other => other,
    })?;
    if out.timed_out {
        return Err(ToolError::Timeout(
            "The browser command did not return within 15 s; check the desktop session.".into(),
        ));
    }
    if !out.success() {
        return Err(ToolError::Failed(format!(
            "The browser command failed (exit code {}): {}. Is there a desktop session with a default browser?",
            out.exit_code.map_or("none".into(), |c| c.to_string()),
            out.output.trim()
        )));
    }
    Ok(
        ToolOutput::text(format!("Opened {url} in the desktop browser."))
            .with_structured(json!({ "url": url.as_str() })),
    )
}

#[async_trait]
impl Tool for BrowserOpen {
    const NAME: &'static str = "browser_open";
    type Args = BrowserOpenArgs;

    fn description(&self) -> String {
        "Open an https:// page in the user's desktop browser for them to see (the host must be \
         on the allow list). To read a page yourself, use web_fetch."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::ADDITIVE.open_world(true)
    }

    /// `browser` does the same job (`open`, `read`), and its rules hold here too.
    const SAME_JOB: &'static [&'static str] = &["browser"];

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        let url = check_open(&self.shared, ctx, &args.url)?;
        Ok(vec![Access::Network {
            host: net::host_name(&url),
        }])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let url = check_open(&self.shared, ctx, &args.url)?;
        open(&self.shared, ctx, &url).await
    }
}
