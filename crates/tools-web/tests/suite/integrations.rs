//! pushover and composio against loopback servers that answer as the real APIs document and
//! record what they were sent: requests, answers, refusals surfaced, missing credentials, and
//! the argument checks with their benign twins.

use std::sync::Arc;

use serde_json::{Value, json};
use tool_core::{Access, ErrorKind, ToolError, ToolOutput};
use tools_web::{ComposioConfig, Config, PushoverConfig, StaticSecrets};

use super::search::{Api, json_reply};
use super::{Fixture, net, policy};

const TOKEN: &str = "azGDORePK8gMaC0QOYAMyEEuzJnyUi";
const USER: &str = "uQiRzpo4DXghDmr9QzzfQu27cmVRsG";
const COMPOSIO_KEY: &str = "ak_composio_0123456789";

fn pushover_fixture(api: &Api, secrets: StaticSecrets) -> Fixture {
    Fixture::with(
        Config::new()
            .with_net(net())
            .with_secrets(Arc::new(secrets))
            .with_pushover(PushoverConfig::new().with_base_url(api.url())),
        policy(),
    )
}

fn keys() -> StaticSecrets {
    StaticSecrets::new()
        .with("PUSHOVER_TOKEN", TOKEN)
        .with("PUSHOVER_USER_KEY", USER)
}

fn sent_ok() -> Vec<(&'static str, &'static str, super::search::Reply)> {
    vec![(
        "POST",
        "/1/messages.json",
        json_reply(
            200,
            json!({"status": 1, "request": "647d2300-702c-4b38-8b2f-d56326ae460b"}),
        ),
    )]
}

fn field<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn no_secret(out: &ToolOutput, secrets: &[&str]) {
    let all = format!(
        "{}{}",
        out.joined_text(),
        out.structured.clone().unwrap_or_default()
    );
    for s in secrets {
        assert!(!all.contains(s), "a credential leaked:\n{all}");
    }
}

// ---------------------------------------------------------------------------------------------
// pushover

#[tokio::test]
async fn pushover_posts_the_documented_form_and_reports_the_request_id() {
    let api = Api::start(sent_ok()).await;
    let fx = pushover_fixture(&api, keys());
    let out = fx
        .ok(
            "pushover",
            r#"{"message": "Backup finished: 3 files & 2 dirs", "title": "Backups", "priority": 1, "sound": "pushover"}"#,
        )
        .await;
    let seen = api.only();
    assert_eq!(seen.method, "POST");
    assert_eq!(
        seen.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        seen.form(),
        vec![
            ("token".to_owned(), TOKEN.to_owned()),
            ("user".to_owned(), USER.to_owned()),
            (
                "message".to_owned(),
                "Backup finished: 3 files & 2 dirs".to_owned()
            ),
            ("title".to_owned(), "Backups".to_owned()),
            ("priority".to_owned(), "1".to_owned()),
            ("sound".to_owned(), "pushover".to_owned()),
        ]
    );
    assert_eq!(
        out.joined_text(),
        "Sent the notification to Pushover. Request id: 647d2300-702c-4b38-8b2f-d56326ae460b."
    );
    let s = out.structured.clone().unwrap();
    assert_eq!(s["sent"], true);
    assert_eq!(s["priority"], 1);
    assert_eq!(s["request"], "647d2300-702c-4b38-8b2f-d56326ae460b");
    no_secret(&out, &[TOKEN, USER]);
}

#[tokio::test]
async fn pushover_emergency_carries_retry_and_expire_and_returns_the_receipt() {
    let api = Api::start(vec![(
        "POST",
        "/1/messages.json",
        json_reply(
            200,
            json!({"status": 1, "request": "r-2", "receipt": "rLqVuqTRh62UzxtmqiaLzQmVcPgiCy"}),
        ),
    )])
    .await;
    let fx = pushover_fixture(&api, keys());
    let out = fx
        .ok("pushover", r#"{"message": "Server down", "priority": 2}"#)
        .await;
    let form = api.seen()[0].form();
    assert_eq!(field(&form, "priority"), Some("2"));
    assert_eq!(field(&form, "retry"), Some("60"));
    assert_eq!(field(&form, "expire"), Some("3600"));
    let text = out.joined_text();
    assert!(text.contains("as an emergency"), "{text}");
    assert!(
        text.contains("Receipt: rLqVuqTRh62UzxtmqiaLzQmVcPgiCy."),
        "{text}"
    );
    fx.ok(
        "pushover",
        r#"{"message": "Server down", "priority": 2, "retry": 30, "expire": 10800}"#,
    )
    .await;
    let form = api.seen()[1].form();
    assert_eq!(field(&form, "retry"), Some("30"));
    assert_eq!(field(&form, "expire"), Some("10800"));
}

#[tokio::test]
async fn pushover_surfaces_the_apis_errors() {
    let api = Api::start(vec![(
        "POST",
        "/1/messages.json",
        json_reply(
            400,
            json!({"user": "invalid", "errors": ["user identifier is not a valid user, group, or subscribed user key"], "status": 0, "request": "5042853c"}),
        ),
    )])
    .await;
    let fx = pushover_fixture(&api, keys());
    let err = fx.err("pushover", r#"{"message": "hello"}"#).await;
    assert_eq!(err.kind(), ErrorKind::Failed);
    assert_eq!(
        err.to_string(),
        "Pushover refused the notification (HTTP 400: user identifier is not a valid user, group, \
         or subscribed user key); check the credentials in PUSHOVER_TOKEN and PUSHOVER_USER_KEY."
    );
    // An error that repeats a credential does not show it.
    let api = Api::start(vec![(
        "POST",
        "/1/messages.json",
        json_reply(
            400,
            json!({"errors": [format!("message cannot be blank for token {TOKEN}")], "status": 0}),
        ),
    )])
    .await;
    let fx = pushover_fixture(&api, keys());
    let err = fx
        .err("pushover", r#"{"message": "hello"}"#)
        .await
        .to_string();
    assert!(
        err.contains("message cannot be blank for token [redacted]"),
        "{err}"
    );
    assert!(!err.contains(TOKEN), "{err}");
}

#[tokio::test]
async fn pushover_without_credentials_names_both_variables_and_sends_nothing() {
    let api = Api::start(sent_ok()).await;
    for (secrets, missing) in [
        (
            StaticSecrets::new(),
            "PUSHOVER_TOKEN and PUSHOVER_USER_KEY not set. Ask the user to set both",
        ),
        (
            StaticSecrets::new().with("PUSHOVER_TOKEN", TOKEN),
            "PUSHOVER_USER_KEY not set. Ask the user to set it",
        ),
    ] {
        let fx = pushover_fixture(&api, secrets);
        let err = fx.err("pushover", r#"{"message": "hello"}"#).await;
        let text = err.to_string();
        assert!(
            text.starts_with(
                "Pushover needs the application's API token in PUSHOVER_TOKEN and the user (or group) key in PUSHOVER_USER_KEY; "
            ),
            "{text}"
        );
        assert!(text.contains(missing), "{text}");
    }
    // Renamed variables are the ones named.
    let fx = Fixture::with(
        Config::new()
            .with_net(net())
            .with_secrets(Arc::new(keys()))
            .with_pushover(
                PushoverConfig::new()
                    .with_base_url(api.url())
                    .with_token_env("APP_TOKEN")
                    .with_user_env("APP_USER"),
            ),
        policy(),
    );
    let err = fx
        .err("pushover", r#"{"message": "hello"}"#)
        .await
        .to_string();
    assert!(
        err.contains("in APP_TOKEN and the user (or group) key in APP_USER"),
        "{err}"
    );
    assert!(api.seen().is_empty());
}

#[tokio::test]
async fn pushover_declares_its_host() {
    let api = Api::start(sent_ok()).await;
    let fx = Fixture::with(
        Config::new()
            .with_net(net())
            .with_secrets(Arc::new(keys()))
            .with_pushover(PushoverConfig::new().with_base_url(api.url_as("site.test"))),
        policy(),
    );
    let prepared = fx
        .stack
        .registry()
        .prepare("pushover", json!({"message": "m"}), &fx.ctx)
        .unwrap();
    assert_eq!(
        prepared.accesses,
        vec![Access::Network {
            host: "site.test".into()
        }]
    );
    let spec = fx.stack.registry().spec("pushover").unwrap();
    assert!(!spec.annotations.read_only);
    assert!(spec.annotations.open_world);
}

/// Each refused argument beside a benign twin that is sent.
#[tokio::test]
async fn pushover_hostile_arguments_are_refused_and_their_twins_sent() {
    let api = Api::start(sent_ok()).await;
    let fx = pushover_fixture(&api, keys());
    let table: Vec<(Value, &str, Value)> = vec![
        (
            json!({"message": "m", "sound": "../x"}),
            "/sound",
            json!({"message": "m", "sound": "pushover"}),
        ),
        (
            json!({"message": "m", "sound": "Siren"}),
            "/sound",
            json!({"message": "m", "sound": "siren"}),
        ),
        (
            json!({"message": "m", "sound": "a b"}),
            "/sound",
            json!({"message": "m", "sound": "none"}),
        ),
        (
            json!({"message": "m", "sound": ""}),
            "/sound",
            json!({"message": "m", "sound": "my_sound-2"}),
        ),
        (
            json!({"message": "m", "sound": "s".repeat(33)}),
            "/sound",
            json!({"message": "m", "sound": "s".repeat(32)}),
        ),
        (json!({"message": ""}), "/message", json!({"message": "m"})),
        (
            json!({"message": "   "}),
            "/message",
            json!({"message": " m "}),
        ),
        (
            json!({"message": "é".repeat(1025)}),
            "/message",
            json!({"message": "é".repeat(1024)}),
        ),
        (
            json!({"message": "m", "title": "t".repeat(251)}),
            "/title",
            json!({"message": "m", "title": "t".repeat(250)}),
        ),
        (
            json!({"message": "m", "priority": 3}),
            "/priority",
            json!({"message": "m", "priority": 2}),
        ),
        (
            json!({"message": "m", "priority": -3}),
            "/priority",
            json!({"message": "m", "priority": -2}),
        ),
        (
            json!({"message": "m", "priority": 2, "retry": 29}),
            "/retry",
            json!({"message": "m", "priority": 2, "retry": 30}),
        ),
        (
            json!({"message": "m", "priority": 2, "expire": 10801}),
            "/expire",
            json!({"message": "m", "priority": 2, "expire": 10800}),
        ),
        (
            json!({"message": "m", "priority": 1, "retry": 60}),
            "/retry",
            json!({"message": "m", "priority": 1}),
        ),
        (
            json!({"message": "m", "token": "other"}),
            "",
            json!({"message": "m"}),
        ),
    ];
    for (bad, path, good) in table {
        let err = fx.err("pushover", &bad.to_string()).await;
        match &err {
            ToolError::InvalidArgs { path: p, .. } => assert_eq!(p, path, "{bad}: {err}"),
            other => panic!("{bad} gave {other:?}"),
        }
        let before = api.seen().len();
        fx.ok("pushover", &good.to_string()).await;
        assert_eq!(api.seen().len(), before + 1, "{good}");
    }
    // The twins went out as given.
    let last_sounds: Vec<String> = api
        .seen()
        .iter()
        .filter_map(|s| field(&s.form(), "sound").map(str::to_owned))
        .collect();
    assert_eq!(
        last_sounds,
        ["pushover", "siren", "none", "my_sound-2", &"s".repeat(32)]
    );
}

// ---------------------------------------------------------------------------------------------
// composio

fn composio_fixture(api: &Api, secrets: StaticSecrets) -> Fixture {
    Fixture::with(
        Config::new()
            .with_net(net())
            .with_secrets(Arc::new(secrets))
            .with_composio(
                ComposioConfig::new()
                    .with_base_url(api.url())
                    .with_user_id("agent-7"),
            ),
        policy(),
    )
}

fn composio_key() -> StaticSecrets {
    StaticSecrets::new().with("COMPOSIO_API_KEY", COMPOSIO_KEY)
}

fn github_tools() -> Value {
    json!({
        "items": [
            {
                "slug": "GITHUB_STAR_A_REPOSITORY_FOR_THE_AUTHENTICATED_USER",
                "name": "Star a repository",
                "description": "Stars a repository for the authenticated user.",
                "toolkit": {"slug": "github", "name": "GitHub"},
                "input_parameters": {"owner": {"type": "string"}, "repo": {"type": "string"}},
                "version": "20260101_00"
            },
            {
                "slug": "GITHUB_CREATE_AN_ISSUE",
                "name": "Create an issue",
                "description": "Creates an issue\nin a repository.",
                "version": "20260101_00"
            }
        ],
        "next_cursor": null,
        "total_pages": 1
    })
}

#[tokio::test]
async fn composio_list_shows_an_apps_tools() {
    let api = Api::start(vec![(
        "GET",
        "/api/v3/tools",
        json_reply(200, github_tools()),
    )])
    .await;
    let fx = composio_fixture(&api, composio_key());
    let out = fx
        .ok("composio", r#"{"action": "list", "app": "github"}"#)
        .await;
    let seen = api.only();
    assert_eq!(seen.header("x-api-key"), Some(COMPOSIO_KEY));
    assert_eq!(seen.param("toolkit_slug"), Some("github"));
    assert_eq!(seen.param("toolkit_versions"), Some("latest"));
    assert_eq!(seen.param("limit"), Some("200"));
    assert_eq!(
        out.joined_text(),
        "2 tools of `github` (run one with action execute, action_name and params):\n\
         \n- GITHUB_STAR_A_REPOSITORY_FOR_THE_AUTHENTICATED_USER — Star a repository: Stars a repository for the authenticated user.\
         \n- GITHUB_CREATE_AN_ISSUE — Create an issue: Creates an issue in a repository."
    );
    let s = out.structured.clone().unwrap();
    assert_eq!(s["tools"][1]["slug"], "GITHUB_CREATE_AN_ISSUE");
    no_secret(&out, &[COMPOSIO_KEY]);
}

#[tokio::test]
async fn composio_execute_runs_the_latest_version_for_the_configured_user() {
    let api = Api::start(vec![
        (
            "GET",
            "/api/v3/tools/GITHUB_STAR_REPO",
            json_reply(200, json!({"slug": "GITHUB_STAR_REPO", "name": "Star", "version": "20260211_00", "available_versions": ["00000000_00", "20260211_00"]})),
        ),
        (
            "POST",
            "/api/v3/tools/execute/GITHUB_STAR_REPO",
            json_reply(200, json!({"data": {"starred": true, "repo": "rust-lang/rust"}, "error": null, "successful": true, "log_id": "log_abc123"})),
        ),
    ])
    .await;
    let fx = composio_fixture(&api, composio_key());
    let out = fx
        .ok(
            "composio",
            r#"{"action": "execute", "action_name": "GITHUB_STAR_REPO", "params": {"owner": "rust-lang", "repo": "rust"}}"#,
        )
        .await;
    let seen = api.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].param("toolkit_versions"), Some("latest"));
    assert_eq!(seen[1].method, "POST");
    assert_eq!(seen[1].header("x-api-key"), Some(COMPOSIO_KEY));
    assert_eq!(
        seen[1].json(),
        json!({"arguments": {"owner": "rust-lang", "repo": "rust"}, "user_id": "agent-7", "version": "20260211_00"})
    );
    assert_eq!(
        out.joined_text(),
        "GITHUB_STAR_REPO ran successfully. Result:\n{\n  \"repo\": \"rust-lang/rust\",\n  \"starred\": true\n}"
    );
    let s = out.structured.clone().unwrap();
    assert_eq!(
        s["data"],
        json!({"starred": true, "repo": "rust-lang/rust"})
    );
    assert_eq!(s["log_id"], "log_abc123");
    assert_eq!(s["version"], "20260211_00");
}

#[tokio::test]
async fn composio_execute_failures_say_what_to_do() {
    let api = Api::start(vec![
        ("GET", "/api/v3/tools/GITHUB_STAR_REPO", json_reply(200, json!({"version": "20260211_00"}))),
        (
            "POST",
            "/api/v3/tools/execute/GITHUB_STAR_REPO",
            json_reply(200, json!({"data": {}, "error": "No connected account found for user agent-7", "successful": false})),
        ),
        (
            "GET",
            "/api/v3/tools/NO_SUCH_TOOL",
            json_reply(404, json!({"error": {"message": "Tool NO_SUCH_TOOL not found", "code": 404, "status": 404}})),
        ),
    ])
    .await;
    let fx = composio_fixture(&api, composio_key());
    let err = fx
        .err(
            "composio",
            r#"{"action": "execute", "action_name": "GITHUB_STAR_REPO"}"#,
        )
        .await;
    assert_eq!(
        err.to_string(),
        "Composio ran GITHUB_STAR_REPO, and it failed: No connected account found for user agent-7. \
         Fix the params (action list describes the tool), or, if the app is not connected for this \
         user, call composio with action connect."
    );
    // Without params, the arguments are an empty object.
    assert_eq!(api.seen()[1].json()["arguments"], json!({}));
    let err = fx
        .err(
            "composio",
            r#"{"action": "execute", "action_name": "NO_SUCH_TOOL"}"#,
        )
        .await;
    assert_eq!(
        err.to_string(),
        "Composio has no tool `NO_SUCH_TOOL`; call composio with action list and the app's slug to see the tool names."
    );
    assert_eq!(api.seen().len(), 3, "the unknown tool was not executed");
}

#[tokio::test]
async fn composio_connect_returns_the_link_for_the_user() {
    let api = Api::start(vec![
        (
            "GET",
            "/api/v3/auth_configs",
            json_reply(200, json!({"items": [
                {"id": "ac_old", "status": "DISABLED", "toolkit": {"slug": "github"}},
                {"id": "ac_live", "status": "ENABLED", "toolkit": {"slug": "github"}, "auth_scheme": "OAUTH2"}
            ]})),
        ),
        (
            "POST",
            "/api/v3/connected_accounts/link",
            json_reply(201, json!({
                "link_token": "lt_1",
                "redirect_url": "https://connect.composio.dev/link/lk_abc",
                "expires_at": "2026-12-01T12:00:00Z",
                "connected_account_id": "ca_123"
            })),
        ),
    ])
    .await;
    let fx = composio_fixture(&api, composio_key());
    let out = fx
        .ok("composio", r#"{"action": "connect", "app": "github"}"#)
        .await;
    let seen = api.seen();
    assert_eq!(seen[0].param("toolkit_slug"), Some("github"));
    assert_eq!(
        seen[1].json(),
        json!({"auth_config_id": "ac_live", "user_id": "agent-7"})
    );
    assert_eq!(
        out.joined_text(),
        "Ask the user to open this link and sign in to github to connect it:\n\
         https://connect.composio.dev/link/lk_abc\n\
         The link expires at 2026-12-01T12:00:00Z.\n\
         Once they have, the app's tools can run with action execute."
    );
    let s = out.structured.clone().unwrap();
    assert_eq!(s["connected_account_id"], "ca_123");
    assert_eq!(
        s["redirect_url"],
        "https://connect.composio.dev/link/lk_abc"
    );
}

#[tokio::test]
async fn composio_connect_without_an_auth_config_says_where_to_make_one() {
    let api = Api::start(vec![(
        "GET",
        "/api/v3/auth_configs",
        json_reply(200, json!({"items": []})),
    )])
    .await;
    let fx = composio_fixture(&api, composio_key());
    let err = fx
        .err("composio", r#"{"action": "connect", "app": "notion"}"#)
        .await;
    assert_eq!(
        err.to_string(),
        "The Composio project has no enabled auth config for `notion`; ask the user to create one \
         in the Composio dashboard (Auth Configs, app notion), then call connect again."
    );
    assert_eq!(api.seen().len(), 1);
}

#[tokio::test]
async fn composio_refusals_are_surfaced_without_the_key() {
    let api = Api::start(vec![(
        "GET",
        "/api/v3/tools",
        json_reply(
            401,
            json!({"error": {"message": format!("Invalid API key {COMPOSIO_KEY}"), "code": 401, "slug": "unauthorized", "status": 401, "suggested_fix": "Use a project API key"}}),
        ),
    )])
    .await;
    let fx = composio_fixture(&api, composio_key());
    let err = fx
        .err("composio", r#"{"action": "list", "app": "github"}"#)
        .await;
    assert_eq!(
        err.to_string(),
        "Composio refused the request (HTTP 401: Invalid API key [redacted] (suggested fix: Use a \
         project API key)); check the API key in COMPOSIO_API_KEY."
    );
}

#[tokio::test]
async fn composio_without_a_key_names_the_variable_and_sends_nothing() {
    let api = Api::start(vec![(
        "GET",
        "/api/v3/tools",
        json_reply(200, github_tools()),
    )])
    .await;
    let fx = composio_fixture(&api, StaticSecrets::new());
    let err = fx
        .err("composio", r#"{"action": "list", "app": "github"}"#)
        .await;
    assert_eq!(
        err.to_string(),
        "Composio needs the project's API key in COMPOSIO_API_KEY; ask the user to set it (from the Composio dashboard), then try again."
    );
    assert!(api.seen().is_empty());
    let spec = fx.stack.registry().spec("composio").unwrap();
    assert!(!spec.annotations.read_only);
    assert!(spec.annotations.open_world);
}

/// Each refused argument beside a benign twin that reaches the API.
#[tokio::test]
async fn composio_hostile_arguments_are_refused_and_their_twins_sent() {
    let api = Api::start(vec![
        ("GET", "/api/v3/tools", json_reply(200, github_tools())),
        (
            "GET",
            "/api/v3/tools/GITHUB_STAR_REPO",
            json_reply(200, json!({"version": "20260211_00"})),
        ),
        (
            "POST",
            "/api/v3/tools/execute/GITHUB_STAR_REPO",
            json_reply(200, json!({"data": {"ok": true}, "successful": true})),
        ),
    ])
    .await;
    let fx = composio_fixture(&api, composio_key());
    let big = "x".repeat(65 * 1024);
    let fits = "x".repeat(60 * 1024);
    let table: Vec<(Value, &str, Value)> = vec![
        (
            json!({"action": "list", "app": "a/../b"}),
            "/app",
            json!({"action": "list", "app": "github"}),
        ),
        (
            json!({"action": "list", "app": "git hub"}),
            "/app",
            json!({"action": "list", "app": "google-drive"}),
        ),
        (
            json!({"action": "list", "app": "github?x=1"}),
            "/app",
            json!({"action": "list", "app": "github_2"}),
        ),
        (
            json!({"action": "list", "app": ""}),
            "/app",
            json!({"action": "list", "app": "GitHub"}),
        ),
        (
            json!({"action": "list"}),
            "/app",
            json!({"action": "list", "app": "github"}),
        ),
        (
            json!({"action": "execute", "action_name": "a/../b"}),
            "/action_name",
            json!({"action": "execute", "action_name": "GITHUB_STAR_REPO"}),
        ),
        (
            json!({"action": "execute", "action_name": "GITHUB_STAR_REPO%2F..%2Fx"}),
            "/action_name",
            json!({"action": "execute", "action_name": "GITHUB_STAR_REPO"}),
        ),
        (
            json!({"action": "execute", "action_name": "A".repeat(129)}),
            "/action_name",
            json!({"action": "execute", "action_name": "GITHUB_STAR_REPO"}),
        ),
        (
            json!({"action": "execute"}),
            "/action_name",
            json!({"action": "execute", "action_name": "GITHUB_STAR_REPO"}),
        ),
        (
            json!({"action": "execute", "action_name": "GITHUB_STAR_REPO", "params": {"body": big}}),
            "/params",
            json!({"action": "execute", "action_name": "GITHUB_STAR_REPO", "params": {"body": fits}}),
        ),
        (
            json!({"action": "execute", "action_name": "GITHUB_STAR_REPO", "params": ["owner"]}),
            "/params",
            json!({"action": "execute", "action_name": "GITHUB_STAR_REPO", "params": {"owner": "x"}}),
        ),
        (
            json!({"action": "list", "app": "github", "params": {"owner": "x"}}),
            "/params",
            json!({"action": "list", "app": "github"}),
        ),
        (
            json!({"action": "delete", "app": "github"}),
            "/action",
            json!({"action": "list", "app": "github"}),
        ),
    ];
    for (bad, path, good) in table {
        let err = fx.err("composio", &bad.to_string()).await;
        match &err {
            ToolError::InvalidArgs { path: p, .. } => assert_eq!(p, path, "{bad}: {err}"),
            other => panic!("{bad} gave {other:?}"),
        }
        let before = api.seen().len();
        fx.ok("composio", &good.to_string()).await;
        assert!(api.seen().len() > before, "{good}");
    }
    // The A×128 slug is the longest accepted.
    let long = "A".repeat(128);
    let prepared = fx.stack.registry().prepare(
        "composio",
        json!({"action": "execute", "action_name": long}),
        &fx.ctx,
    );
    assert!(prepared.is_ok());
    // Every path the API saw stayed under /api/v3.
    for seen in api.seen() {
        assert!(seen.path.starts_with("/api/v3/tools"), "{}", seen.path);
        assert!(!seen.path.contains(".."), "{}", seen.path);
    }
}
