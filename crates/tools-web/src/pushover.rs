//! `pushover`: a push notification through the Pushover message API.
//!
//! `POST {base}/1/messages.json`, form-encoded: `token` (the application's API token), `user`
//! (the user or group key), `message`, and optionally `title`, `priority`, `sound`, and for
//! priority 2 `retry` and `expire`. Success is `{"status":1,"request":"…"}` (plus `receipt` for
//! priority 2); a refusal is a 4xx with `{"status":0,"errors":["…"],"request":"…"}`.
//! Documented at <https://pushover.net/api>: messages up to 1024 characters, titles up to 250,
//! priorities -2 to 2, emergency retries at least 30 seconds apart for at most 10800 seconds.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::Method;
use reqwest::header::{self, HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput};
use url::Url;

use crate::config::Shared;
use crate::net::{self, Request};

/// Where `pushover` sends notifications and where its credentials come from.
#[derive(Debug, Clone)]
pub struct PushoverConfig {
    pub(crate) base_url: String,
    pub(crate) token_env: String,
    pub(crate) user_env: String,
    pub(crate) timeout: Duration,
}

impl Default for PushoverConfig {
    fn default() -> Self {
        PushoverConfig {
            base_url: "https://api.pushover.net".into(),
            token_env: "PUSHOVER_TOKEN".into(),
            user_env: "PUSHOVER_USER_KEY".into(),
            timeout: Duration::from_secs(20),
        }
    }
}

impl PushoverConfig {
    /// The public API at `https://api.pushover.net`, the application token in
    /// `PUSHOVER_TOKEN` and the user (or group) key in `PUSHOVER_USER_KEY`.
    pub fn new() -> Self {
        PushoverConfig::default()
    }

    /// Another endpoint (a proxy, a test server); `/1/messages.json` is appended.
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// Another variable for the application's API token.
    pub fn with_token_env(mut self, var: impl Into<String>) -> Self {
        self.token_env = var.into();
        self
    }

    /// Another variable for the user or group key.
    pub fn with_user_env(mut self, var: impl Into<String>) -> Self {
        self.user_env = var.into();
        self
    }

    /// How long the API may take to answer.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        if !timeout.is_zero() {
            self.timeout = timeout;
        }
        self
    }

    fn endpoint(&self) -> Result<Url, ToolError> {
        let raw = format!(
            "{}/1/messages.json",
            self.base_url.trim().trim_end_matches('/')
        );
        Url::parse(&raw).map_err(|e| {
            ToolError::Failed(format!(
                "The configured Pushover base URL `{}` is not a valid URL ({e}); fix the pushover configuration.",
                self.base_url
            ))
        })
    }
}

/// Arguments of `pushover`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushoverArgs {
    /// The notification's text (1 to 1024 characters).
    #[schemars(length(min = 1, max = 1024))]
    pub message: String,
    /// A title above the message (at most 250 characters); the application's name when left
    /// out.
    #[serde(default)]
    #[schemars(length(max = 250))]
    pub title: Option<String>,
    /// -2 no alert, -1 quiet, 0 normal (default), 1 high (bypasses quiet hours), 2 emergency
    /// (repeats until the user acknowledges it; see retry and expire).
    #[serde(default)]
    #[schemars(range(min = -2, max = 2))]
    pub priority: Option<i32>,
    /// The sound to play instead of the user's default, by name: `pushover`, `bike`, `bugle`,
    /// `cashregister`, `classical`, `cosmic`, `falling`, `gamelan`, `incoming`,
    /// `intermission`, `magic`, `mechanical`, `pianobar`, `siren`, `spacealarm`, `tugboat`,
    /// `alien`, `climb`, `persistent`, `echo`, `updown`, `vibrate`, `none`, or a custom
    /// sound's name.
    #[serde(default)]
    #[schemars(length(max = 32))]
    pub sound: Option<String>,
    /// Priority 2 only: seconds between repeats, 30 or more (default 60).
    #[serde(default)]
    #[schemars(range(min = 30))]
    pub retry: Option<u32>,
    /// Priority 2 only: seconds to keep repeating, 30 to 10800 (default 3600).
    #[serde(default)]
    #[schemars(range(min = 30, max = 10800))]
    pub expire: Option<u32>,
}

/// `pushover`: sends a push notification to the user's devices.
#[derive(Debug, Clone)]
pub struct Pushover {
    shared: Arc<Shared>,
}

impl Pushover {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Pushover { shared }
    }
}

const MAX_MESSAGE_CHARS: usize = 1024;
const MAX_TITLE_CHARS: usize = 250;
const MAX_SOUND_CHARS: usize = 32;
const DEFAULT_RETRY: u32 = 60;
const DEFAULT_EXPIRE: u32 = 3600;
const MAX_EXPIRE: u32 = 10800;

/// The form fields after the checks (credentials are added when sending).
#[derive(Debug)]
struct Checked {
    fields: Vec<(&'static str, String)>,
    priority: i32,
}

fn check(args: &PushoverArgs) -> Result<Checked, ToolError> {
    let invalid = |path: &str, message: String| ToolError::InvalidArgs {
        path: path.into(),
        message,
    };
    let message = args.message.trim();
    if message.is_empty() {
        return Err(invalid(
            "/message",
            "the message is empty; give the text to send".into(),
        ));
    }
    let chars = message.chars().count();
    if chars > MAX_MESSAGE_CHARS {
        return Err(invalid(
            "/message",
            format!(
                "the message is {chars} characters long; Pushover takes at most {MAX_MESSAGE_CHARS}, so shorten it"
            ),
        ));
    }
    let mut fields = vec![("message", message.to_owned())];
    if let Some(title) = &args.title {
        let title = title.trim();
        let chars = title.chars().count();
        if chars > MAX_TITLE_CHARS {
            return Err(invalid(
                "/title",
                format!(
                    "the title is {chars} characters long; Pushover takes at most {MAX_TITLE_CHARS}"
                ),
            ));
        }
        if !title.is_empty() {
            fields.push(("title", title.to_owned()));
        }
    }
    let priority = args.priority.unwrap_or(0);
    if !(-2..=2).contains(&priority) {
        return Err(invalid(
            "/priority",
            format!("{priority} is not a Pushover priority; give -2, -1, 0, 1 or 2"),
        ));
    }
    if args.priority.is_some() {
        fields.push(("priority", priority.to_string()));
    }
    if let Some(sound) = &args.sound {
        let ok = !sound.is_empty()
            && sound.len() <= MAX_SOUND_CHARS
            && sound
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if !ok {
            return Err(invalid(
                "/sound",
                format!(
                    "`{}` is not a sound name; give a lowercase name such as pushover, siren or none",
                    tool_core::truncate::cut_line(sound, 40)
                ),
            ));
        }
        fields.push(("sound", sound.clone()));
    }
    if priority == 2 {
        let retry = args.retry.unwrap_or(DEFAULT_RETRY);
        if retry < 30 {
            return Err(invalid(
                "/retry",
                format!("{retry} seconds is too short; Pushover repeats at most every 30 seconds"),
            ));
        }
        let expire = args.expire.unwrap_or(DEFAULT_EXPIRE);
        if !(30..=MAX_EXPIRE).contains(&expire) {
            return Err(invalid(
                "/expire",
                format!("{expire} seconds is out of range; give 30 to {MAX_EXPIRE} (3 hours)"),
            ));
        }
        fields.push(("retry", retry.to_string()));
        fields.push(("expire", expire.to_string()));
    } else if args.retry.is_some() || args.expire.is_some() {
        let path = if args.retry.is_some() {
            "/retry"
        } else {
            "/expire"
        };
        return Err(invalid(
            path,
            "retry and expire apply to emergency messages only; set priority 2 or leave them out"
                .into(),
        ));
    }
    Ok(Checked { fields, priority })
}

/// The application token and user key, or which variables to set.
fn credentials(shared: &Shared) -> Result<(String, String), ToolError> {
    let config = &shared.pushover;
    let token = shared.secrets.get(&config.token_env);
    let user = shared.secrets.get(&config.user_env);
    match (token, user) {
        (Some(t), Some(u)) => Ok((t, u)),
        (t, u) => {
            let mut missing = Vec::new();
            if t.is_none() {
                missing.push(config.token_env.as_str());
            }
            if u.is_none() {
                missing.push(config.user_env.as_str());
            }
            Err(ToolError::Failed(format!(
                "Pushover needs the application's API token in {} and the user (or group) key in {}; {} not set. Ask the user to set {}, then try again.",
                config.token_env,
                config.user_env,
                missing.join(" and "),
                if missing.len() == 1 { "it" } else { "both" }
            )))
        }
    }
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    status: Option<i64>,
    #[serde(default)]
    request: Option<String>,
    #[serde(default)]
    receipt: Option<String>,
    #[serde(default)]
    errors: Option<Vec<serde_json::Value>>,
}

impl Pushover {
    /// Why Pushover did not take the message, with what to do next.
    fn refusal(
        &self,
        status: reqwest::StatusCode,
        answer: Option<&Answer>,
        secrets: &[&str],
    ) -> ToolError {
        let errors: Vec<String> = answer
            .and_then(|a| a.errors.as_ref())
            .map(|errs| {
                errs.iter()
                    .map(|e| match e {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let said = if errors.is_empty() {
            format!("HTTP {}", status.as_u16())
        } else {
            format!("HTTP {}: {}", status.as_u16(), errors.join("; "))
        };
        let said = scrub(
            &crate::search::cap(&crate::search::collapse(&said), 500),
            secrets,
        );
        let next = match status.as_u16() {
            429 => "the application's monthly message limit is used up; try again next month or ask the user to raise it".to_owned(),
            s if s >= 500 => "Pushover had a problem on its side; try again in a few minutes".to_owned(),
            _ if errors.iter().any(|e| e.contains("token") || e.contains("user")) => format!(
                "check the credentials in {} and {}",
                self.shared.pushover.token_env, self.shared.pushover.user_env
            ),
            _ => "fix what it names and send again".to_owned(),
        };
        ToolError::Failed(format!(
            "Pushover refused the notification ({said}); {next}."
        ))
    }
}

/// Replaces the credentials in `text` (in case an error message repeats one).
fn scrub(text: &str, secrets: &[&str]) -> String {
    secrets
        .iter()
        .filter(|s| s.len() >= 6)
        .fold(text.to_owned(), |t, s| t.replace(s, "[redacted]"))
}

#[async_trait]
impl Tool for Pushover {
    const NAME: &'static str = "pushover";
    type Args = PushoverArgs;

    fn description(&self) -> String {
        "Send a push notification to the user's phone and desktop through Pushover. Use it to \
         tell the user something that needs their attention while they are away; priority 2 \
         repeats until they acknowledge it, so keep that for emergencies."
            .into()
    }

    fn annotations(&self) -> Annotations {
        Annotations::ADDITIVE.open_world(true)
    }

    fn access(&self, _ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        check(args)?;
        credentials(&self.shared)?;
        let url = self.shared.pushover.endpoint()?;
        Ok(vec![Access::Network {
            host: net::host_name(&url),
        }])
    }

    fn timeout(&self, _args: &Self::Args) -> Option<Duration> {
        Some(self.shared.pushover.timeout + Duration::from_secs(5))
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let checked = check(&args)?;
        let (token, user) = credentials(&self.shared)?;
        let url = self.shared.pushover.endpoint()?;
        let form = {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            form.append_pair("token", &token).append_pair("user", &user);
            for (name, value) in &checked.fields {
                form.append_pair(name, value);
            }
            form.finish()
        };
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        let request = Request {
            method: Method::POST,
            url,
            headers,
            body: Some(form.into_bytes()),
            timeout: self.shared.pushover.timeout,
            max_bytes: 64 * 1024,
        };
        let fetched = self.shared.net.send(ctx, request).await?;
        let secrets = [token.as_str(), user.as_str()];
        let answer: Option<Answer> = serde_json::from_slice(&fetched.body).ok();
        let status = fetched.status;
        let answer = match answer {
            Some(a) if status.is_success() && a.status == Some(1) => a,
            other => return Err(self.refusal(status, other.as_ref(), &secrets)),
        };
        let mut text = format!(
            "Sent the notification to Pushover{}.",
            if checked.priority == 2 {
                " as an emergency: it repeats until the user acknowledges it"
            } else {
                ""
            }
        );
        if let Some(r) = &answer.receipt {
            text.push_str(&format!(" Receipt: {r}."));
        }
        if let Some(r) = &answer.request {
            text.push_str(&format!(" Request id: {r}."));
        }
        Ok(ToolOutput::text(text).with_structured(json!({
            "sent": true,
            "priority": checked.priority,
            "request": answer.request,
            "receipt": answer.receipt,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: serde_json::Value) -> PushoverArgs {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn emergency_gets_retry_and_expire() {
        let c = check(&args(json!({"message": "Disk full", "priority": 2}))).unwrap();
        assert!(c.fields.contains(&("retry", "60".into())));
        assert!(c.fields.contains(&("expire", "3600".into())));
        let c = check(&args(
            json!({"message": "x", "priority": 2, "retry": 30, "expire": 10800}),
        ))
        .unwrap();
        assert!(c.fields.contains(&("retry", "30".into())));
        assert!(c.fields.contains(&("expire", "10800".into())));
    }

    #[test]
    fn normal_messages_send_only_what_was_given() {
        let c = check(&args(json!({"message": "  hi  "}))).unwrap();
        assert_eq!(c.fields, vec![("message", "hi".to_owned())]);
    }
}
