//! `composio`: the tools of third-party apps (GitHub, Gmail, Slack, …) through Composio's v3
//! REST API, with the project's key in the `x-api-key` header.
//!
//! - `list`: `GET {base}/api/v3/tools?toolkit_slug=<app>&toolkit_versions=latest&limit=…` →
//!   `{"items": [{"slug", "name", "description", "version", …}]}`.
//! - `execute`: `GET {base}/api/v3/tools/{tool_slug}?toolkit_versions=latest` for the tool's
//!   current `version` (the REST API otherwise runs the oldest version, `00000000_00`), then
//!   `POST {base}/api/v3/tools/execute/{tool_slug}` with `{"arguments", "user_id", "version"}`
//!   → `{"data", "error", "successful", "log_id"}`.
//! - `connect`: `GET {base}/api/v3/auth_configs?toolkit_slug=<app>` for the project's auth
//!   config of that app, then `POST {base}/api/v3/connected_accounts/link` with
//!   `{"auth_config_id", "user_id"}` → `{"redirect_url", "connected_account_id", "expires_at"}`:
//!   a hosted page where the user signs in to the app.
//!
//! Errors come as `{"error": {"message", "suggested_fix", …}}`. Documented at
//! <https://docs.composio.dev/reference/api-reference> (tools/getTools,
//! tools/getToolsByToolSlug, tools/postToolsExecuteByToolSlug, auth-configs/getAuthConfigs,
//! connected-accounts/postConnectedAccountsLink).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::Method;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};
use url::Url;

use crate::config::Shared;
use crate::net::{self, Fetched, Request};
use crate::search::{cap, collapse};

/// Where `composio` reaches Composio and on whose behalf.
#[derive(Debug, Clone)]
pub struct ComposioConfig {
    pub(crate) base_url: String,
    pub(crate) api_key_env: String,
    pub(crate) user_id: String,
    pub(crate) timeout: Duration,
}

impl Default for ComposioConfig {
    fn default() -> Self {
        ComposioConfig {
            base_url: "https://backend.composio.dev".into(),
            api_key_env: "COMPOSIO_API_KEY".into(),
            user_id: "default".into(),
            timeout: Duration::from_secs(60),
        }
    }
}

impl ComposioConfig {
    /// `https://backend.composio.dev`, the key in `COMPOSIO_API_KEY`, the user id `default`,
    /// 60 seconds per request.
    pub fn new() -> Self {
        ComposioConfig::default()
    }

    /// Another endpoint (a proxy, a test server); the `/api/v3/…` paths are appended.
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// Another variable for the project's API key.
    pub fn with_api_key_env(mut self, var: impl Into<String>) -> Self {
        self.api_key_env = var.into();
        self
    }

    /// The user id connected accounts belong to (Composio's `user_id`).
    pub fn with_user_id(mut self, user_id: impl Into<String>) -> Self {
        let id = user_id.into();
        if !id.trim().is_empty() {
            self.user_id = id;
        }
        self
    }

    /// How long one request may take (tools that act on slow services need longer).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        if !timeout.is_zero() {
            self.timeout = timeout;
        }
        self
    }
}

/// What `composio` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ComposioAction {
    /// List the tools of an app (give `app`).
    List,
    /// Run one tool (give `action_name` and its `params`).
    Execute,
    /// Get a link where the user connects their account of an app (give `app`).
    Connect,
}

/// Arguments of `composio`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ComposioArgs {
    /// `list` shows an app's tools, `execute` runs one, `connect` gives a link for the user to
    /// connect their account of an app.
    pub action: ComposioAction,
    /// The app (Composio toolkit) slug, such as `github`, `gmail` or `slack`: needed for list
    /// and connect.
    #[serde(default)]
    #[schemars(length(max = 128))]
    pub app: Option<String>,
    /// The tool to run, by the slug list shows, such as `GITHUB_STAR_A_REPOSITORY_FOR_THE_AUTHENTICATED_USER`:
    /// needed for execute.
    #[serde(default)]
    #[schemars(length(max = 128))]
    pub action_name: Option<String>,
    /// The tool's arguments as a JSON object, as its description in list says (execute only;
    /// at most 64 KiB).
    #[serde(default)]
    pub params: Option<Map<String, Value>>,
}

/// `composio`: lists, runs and connects third-party app tools through Composio.
#[derive(Debug, Clone)]
pub struct Composio {
    shared: Arc<Shared>,
}

impl Composio {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Composio { shared }
    }
}

const MAX_SLUG: usize = 128;
const MAX_PARAMS_BYTES: usize = 64 * 1024;
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;
/// The most tools `list` asks for and shows.
const LIST_LIMIT: usize = 200;
/// The most bytes of a tool's result shown as text (and kept in `structured`).
const MAX_RESULT_BYTES: usize = 32 * 1024;

/// The call after the checks.
enum Checked {
    List {
        app: String,
    },
    Execute {
        tool: String,
        params: Map<String, Value>,
    },
    Connect {
        app: String,
    },
}

fn slug<'a>(
    value: Option<&'a String>,
    path: &str,
    what: &str,
    action: &str,
) -> Result<&'a str, ToolError> {
    let invalid = |message: String| ToolError::InvalidArgs {
        path: path.into(),
        message,
    };
    let Some(value) = value else {
        return Err(invalid(format!("{action} needs {what}")));
    };
    let ok = !value.is_empty()
        && value.len() <= MAX_SLUG
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !ok {
        return Err(invalid(format!(
            "`{}` is not a slug: use only letters, digits, `_` and `-`, at most {MAX_SLUG} characters (such as github or GITHUB_STAR_A_REPOSITORY_FOR_THE_AUTHENTICATED_USER)",
            tool_core::truncate::cut_line(value, 60)
        )));
    }
    Ok(value)
}

fn check(args: &ComposioArgs) -> Result<Checked, ToolError> {
    if args.params.is_some() && args.action != ComposioAction::Execute {
        return Err(ToolError::InvalidArgs {
            path: "/params".into(),
            message: "params are for execute only; leave them out, or use action execute with action_name".into(),
        });
    }
    match args.action {
        ComposioAction::List => Ok(Checked::List {
            app: slug(
                args.app.as_ref(),
                "/app",
                "the app's slug in `app`, such as github",
                "list",
            )?
            .to_owned(),
        }),
        ComposioAction::Connect => Ok(Checked::Connect {
            app: slug(
                args.app.as_ref(),
                "/app",
                "the app's slug in `app`, such as github",
                "connect",
            )?
            .to_owned(),
        }),
        ComposioAction::Execute => {
            let tool = slug(
                args.action_name.as_ref(),
                "/action_name",
                "the tool's slug in `action_name` (action list shows them)",
                "execute",
            )?
            .to_owned();
            let params = args.params.clone().unwrap_or_default();
            let size = serde_json::to_vec(&params)
                .map(|v| v.len())
                .unwrap_or(usize::MAX);
            if size > MAX_PARAMS_BYTES {
                return Err(ToolError::InvalidArgs {
                    path: "/params".into(),
                    message: format!(
                        "the params are {size} bytes of JSON; at most {MAX_PARAMS_BYTES} are sent, so pass less (large content belongs in a file the tool can fetch)"
                    ),
                });
            }
            Ok(Checked::Execute { tool, params })
        }
    }
}

impl Composio {
    fn key(&self) -> Result<String, ToolError> {
        let var = &self.shared.composio.api_key_env;
        self.shared.secrets.get(var).ok_or_else(|| {
            ToolError::Failed(format!(
                "Composio needs the project's API key in {var}; ask the user to set it (from the Composio dashboard), then try again."
            ))
        })
    }

    fn url(&self, path: &str, query: &[(&str, &str)]) -> Result<Url, ToolError> {
        let base = &self.shared.composio.base_url;
        let mut url = Url::parse(&format!("{}{path}", base.trim().trim_end_matches('/')))
            .map_err(|e| {
                ToolError::Failed(format!(
                    "The configured Composio base URL `{base}` is not a valid URL ({e}); fix the composio configuration."
                ))
            })?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }

    /// Sends one request with the key; returns the JSON answer of a 2xx, or the refusal.
    async fn send(
        &self,
        ctx: &ToolContext,
        key: &str,
        method: Method,
        url: Url,
        body: Option<Value>,
    ) -> Result<Value, Refusal> {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        let body = match body {
            Some(v) => {
                headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                Some(serde_json::to_vec(&v).map_err(ToolError::internal)?)
            }
            None => None,
        };
        let request = Request {
            method,
            url,
            headers,
            body,
            timeout: self.shared.composio.timeout,
            max_bytes: MAX_ANSWER_BYTES,
        }
        .header(HeaderName::from_static("x-api-key"), key)?;
        let fetched = self.shared.net.send(ctx, request).await?;
        if !fetched.status.is_success() {
            return Err(Refusal {
                status: Some(fetched.status.as_u16()),
                error: self.refusal(&fetched, key),
            });
        }
        serde_json::from_slice(&fetched.body).map_err(|e| {
            Refusal::from(ToolError::Failed(format!(
                "Composio's answer was not the documented JSON ({e}){}; try again later.",
                match &fetched.cut {
                    Some(c) => format!(", because {}", c.describe()),
                    None => String::new(),
                }
            )))
        })
    }

    fn refusal(&self, fetched: &Fetched, key: &str) -> ToolError {
        let status = fetched.status.as_u16();
        let said = serde_json::from_slice::<Value>(&fetched.body)
            .ok()
            .and_then(|v| {
                let error = v.get("error")?;
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .or_else(|| error.as_str())?;
                let fix = error.get("suggested_fix").and_then(Value::as_str);
                Some(match fix {
                    Some(f) if !f.trim().is_empty() => format!("{message} (suggested fix: {f})"),
                    _ => message.to_owned(),
                })
            })
            .unwrap_or_default();
        let said = scrub(&cap(&collapse(&said), 500), key);
        let detail = if said.is_empty() {
            format!("HTTP {status}")
        } else {
            format!("HTTP {status}: {said}")
        };
        let next = match status {
            401 | 403 => format!("check the API key in {}", self.shared.composio.api_key_env),
            404 => "check the slug; action list shows an app's tools".to_owned(),
            429 => "try again in a minute".to_owned(),
            s if s >= 500 => "Composio had a problem on its side; try again later".to_owned(),
            _ => "fix what it names and try again".to_owned(),
        };
        ToolError::Failed(format!("Composio refused the request ({detail}); {next}."))
    }

    async fn list(&self, ctx: &ToolContext, key: &str, app: &str) -> Result<ToolOutput, ToolError> {
        let limit = LIST_LIMIT.to_string();
        let url = self.url(
            "/api/v3/tools",
            &[
                ("toolkit_slug", app),
                ("toolkit_versions", "latest"),
                ("limit", &limit),
            ],
        )?;
        let answer = self.send(ctx, key, Method::GET, url, None).await?;
        let items = answer
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let tools: Vec<Value> = items
            .iter()
            .take(LIST_LIMIT)
            .filter_map(|item| {
                let slug = item.get("slug").and_then(Value::as_str)?;
                let text = |name: &str, max: usize| {
                    cap(
                        &collapse(item.get(name).and_then(Value::as_str).unwrap_or("")),
                        max,
                    )
                };
                Some(json!({
                    "slug": cap(slug, MAX_SLUG),
                    "name": text("name", 120),
                    "description": text("description", 300),
                }))
            })
            .collect();
        let mut text = if tools.is_empty() {
            format!(
                "Composio has no tools for the app `{app}`. Check the app's slug (such as github, gmail, slack, notion)."
            )
        } else {
            format!(
                "{} tool{} of `{app}` (run one with action execute, action_name and params):\n",
                tools.len(),
                if tools.len() == 1 { "" } else { "s" }
            )
        };
        for t in &tools {
            let field = |n: &str| t.get(n).and_then(Value::as_str).unwrap_or("").to_owned();
            text.push_str(&format!("\n- {}", field("slug")));
            let name = field("name");
            if !name.is_empty() {
                text.push_str(&format!(" — {name}"));
            }
            let description = field("description");
            if !description.is_empty() {
                text.push_str(&format!(": {description}"));
            }
        }
        if answer.get("next_cursor").and_then(Value::as_str).is_some() && items.len() >= LIST_LIMIT
        {
            text.push_str(&format!("\n\nOnly the first {LIST_LIMIT} are shown."));
        }
        Ok(ToolOutput::text(text).with_structured(json!({
            "action": "list",
            "app": app,
            "tools": tools,
        })))
    }

    async fn execute(
        &self,
        ctx: &ToolContext,
        key: &str,
        tool: &str,
        params: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        let url = self.url(
            &format!("/api/v3/tools/{tool}"),
            &[("toolkit_versions", "latest")],
        )?;
        let info = self
            .send(ctx, key, Method::GET, url, None)
            .await
            .map_err(|r| match r.status {
                Some(404) => ToolError::Failed(format!(
                    "Composio has no tool `{tool}`; call composio with action list and the app's slug to see the tool names."
                )),
                _ => r.error,
            })?;
        let version = info
            .get("version")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let url = self.url(&format!("/api/v3/tools/execute/{tool}"), &[])?;
        let mut body = json!({
            "arguments": Value::Object(params),
            "user_id": self.shared.composio.user_id,
        });
        if let Some(v) = &version {
            body["version"] = json!(v);
        }
        let answer = self.send(ctx, key, Method::POST, url, Some(body)).await?;
        let successful = answer
            .get("successful")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let data = answer.get("data").cloned().unwrap_or(Value::Null);
        let log_id = answer
            .get("log_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if !successful {
            let error = answer
                .get("error")
                .and_then(Value::as_str)
                .map(|e| scrub(&cap(&collapse(e), 1000), key))
                .unwrap_or_else(|| "no reason given".into());
            return Err(ToolError::Failed(format!(
                "Composio ran {tool}, and it failed: {error}. Fix the params (action list describes the tool), or, if the app is not connected for this user, call composio with action connect."
            )));
        }
        let pretty = serde_json::to_string_pretty(&data).unwrap_or_default();
        let (shown, cut) = tool_core::truncate::head_tail_within(
            &pretty,
            MAX_RESULT_BYTES,
            "the result was too long to show in full; ask the tool for less (filters, a smaller page)",
        );
        let text = format!("{tool} ran successfully. Result:\n{shown}");
        let structured_data = if cut.is_some() { Value::Null } else { data };
        Ok(ToolOutput::text(text).with_structured(json!({
            "action": "execute",
            "tool": tool,
            "version": version,
            "successful": true,
            "data": structured_data,
            "data_cut": cut.is_some(),
            "log_id": log_id,
        })))
    }

    async fn connect(
        &self,
        ctx: &ToolContext,
        key: &str,
        app: &str,
    ) -> Result<ToolOutput, ToolError> {
        let url = self.url("/api/v3/auth_configs", &[("toolkit_slug", app)])?;
        let configs = self.send(ctx, key, Method::GET, url, None).await?;
        let items = configs
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let enabled = |c: &&Value| {
            c.get("status")
                .and_then(Value::as_str)
                .is_none_or(|s| s.eq_ignore_ascii_case("enabled"))
        };
        let Some(auth_config_id) = items
            .iter()
            .find(enabled)
            .and_then(|c| c.get("id"))
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return Err(ToolError::Failed(format!(
                "The Composio project has no enabled auth config for `{app}`; ask the user to create one in the Composio dashboard (Auth Configs, app {app}), then call connect again."
            )));
        };
        let url = self.url("/api/v3/connected_accounts/link", &[])?;
        let body = json!({
            "auth_config_id": auth_config_id,
            "user_id": self.shared.composio.user_id,
        });
        let link = self.send(ctx, key, Method::POST, url, Some(body)).await?;
        let Some(redirect) = link
            .get("redirect_url")
            .and_then(Value::as_str)
            .and_then(|u| Url::parse(u).ok())
            .filter(|u| matches!(u.scheme(), "https" | "http"))
        else {
            return Err(ToolError::Failed(
                "Composio's answer held no usable redirect_url; try connect again later.".into(),
            ));
        };
        let account = link
            .get("connected_account_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let expires = link
            .get("expires_at")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut text = format!(
            "Ask the user to open this link and sign in to {app} to connect it:\n{redirect}\n"
        );
        if let Some(e) = &expires {
            text.push_str(&format!("The link expires at {e}.\n"));
        }
        text.push_str("Once they have, the app's tools can run with action execute.");
        Ok(ToolOutput::text(text).with_structured(json!({
            "action": "connect",
            "app": app,
            "redirect_url": redirect.as_str(),
            "connected_account_id": account,
            "expires_at": expires,
        })))
    }
}

/// A request that got no usable answer: the HTTP status when there was one, and the error for
/// the model.
struct Refusal {
    status: Option<u16>,
    error: ToolError,
}

impl From<ToolError> for Refusal {
    fn from(error: ToolError) -> Self {
        Refusal {
            status: None,
            error,
        }
    }
}

impl From<Refusal> for ToolError {
    fn from(r: Refusal) -> Self {
        r.error
    }
}

/// Replaces the key in `text` (in case an error message repeats it).
fn scrub(text: &str, key: &str) -> String {
    if key.len() >= 6 {
        text.replace(key, "[redacted]")
    } else {
        text.to_owned()
    }
}

#[async_trait]
impl Tool for Composio {
    const NAME: &'static str = "composio";
    type Args = ComposioArgs;

    fn description(&self) -> String {
        "Use third-party apps (GitHub, Gmail, Slack, Notion and hundreds more) through \
         Composio: `list` shows an app's tools with what they do, `execute` runs one with its \
         params on the user's connected account, `connect` gives a link where the user connects \
         an account. Executed tools act for real (send mail, create issues)."
            .into()
    }

    fn annotations(&self) -> Annotations {
        // execute can change or delete things in the connected apps.
        Annotations::DESTRUCTIVE.open_world(true)
    }

    fn access(&self, _ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        check(args)?;
        self.key()?;
        let url = self.url("/api/v3/tools", &[])?;
        Ok(vec![Access::Network {
            host: net::host_name(&url),
        }])
    }

    fn timeout(&self, _args: &Self::Args) -> Option<Duration> {
        // Two requests for execute and connect.
        Some(self.shared.composio.timeout * 2 + Duration::from_secs(5))
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let checked = check(&args)?;
        let key = self.key()?;
        match checked {
            Checked::List { app } => self.list(ctx, &key, &app).await,
            Checked::Execute { tool, params } => self.execute(ctx, &key, &tool, params).await,
            Checked::Connect { app } => self.connect(ctx, &key, &app).await,
        }
    }
}
