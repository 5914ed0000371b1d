//! A recording runner, a hand-driven clock and a stack over the cron tools.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use tool_core::{
    Access, JobAction, JobRunner, Limits, Policy, Registry, Risk, RunReport, Stack, ToolContext,
    ToolError, Workspace,
};
use tools_cron::{Clock, Config};

/// Runs nothing real: records each action and answers by its first word — `echo TEXT` succeeds
/// with TEXT, `fail` exits 3, `hang` waits until cancelled. Classifies `rm` as high risk, the
/// rest as low, the way the shell tool's analysis would for these simple commands.
#[derive(Debug, Default)]
pub(crate) struct RecordingRunner {
    pub(crate) calls: Mutex<Vec<String>>,
}

impl RecordingRunner {
    pub(crate) fn count(&self, text: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.as_str() == text)
            .count()
    }

    pub(crate) fn total(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
}

#[async_trait]
impl JobRunner for RecordingRunner {
    fn accesses(&self, _ctx: &ToolContext, action: &JobAction) -> Result<Vec<Access>, ToolError> {
        match action {
            JobAction::Command(c) => {
                let program = c.split_whitespace().next().unwrap_or_default().to_string();
                let risk = if program == "rm" {
                    Risk::High
                } else {
                    Risk::Low
                };
                Ok(vec![Access::Execute {
                    command: c.clone(),
                    programs: vec![program],
                    risk,
                }])
            }
            JobAction::Prompt(_) => Err(ToolError::Failed(
                "Prompt jobs need an agent, and none is configured; schedule a `command` instead."
                    .into(),
            )),
        }
    }

    async fn run(&self, ctx: ToolContext, action: &JobAction) -> Result<RunReport, ToolError> {
        let text = action.text().to_string();
        self.calls.lock().unwrap().push(text.clone());
        let accesses = self.accesses(&ctx, action)?;
        let verdict = ctx.policy.decide("shell", &accesses);
        if verdict.decision == tool_core::Decision::Deny {
            return Err(ToolError::Denied(format!(
                "The policy refused `shell`: {}",
                verdict.reason
            )));
        }
        match text.split_whitespace().next() {
            Some("echo") => Ok(RunReport {
                success: true,
                exit_code: Some(0),
                output: text.trim_start_matches("echo ").to_string(),
            }),
            Some("hang") => {
                ctx.cancel.cancelled().await;
                Err(ToolError::Cancelled)
            }
            _ => Ok(RunReport {
                success: false,
                exit_code: Some(3),
                output: "it failed".into(),
            }),
        }
    }
}

/// A clock the test moves.
#[derive(Debug)]
pub(crate) struct ManualClock(pub(crate) Mutex<DateTime<Utc>>);

impl ManualClock {
    pub(crate) fn at(t: DateTime<Utc>) -> Arc<ManualClock> {
        Arc::new(ManualClock(Mutex::new(t)))
    }

    pub(crate) fn set(&self, t: DateTime<Utc>) {
        *self.0.lock().unwrap() = t;
    }

    pub(crate) fn advance(&self, d: Duration) {
        *self.0.lock().unwrap() += d;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap()
    }
}

pub(crate) struct Fixture {
    pub(crate) _dir: tempfile::TempDir,
    pub(crate) db: PathBuf,
    pub(crate) runner: Arc<RecordingRunner>,
    pub(crate) stack: Stack,
    pub(crate) ctx: ToolContext,
}

pub(crate) fn fixture() -> Fixture {
    fixture_with(|c| c)
}

pub(crate) fn fixture_with(tune: impl FnOnce(Config) -> Config) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let db = dir.path().join("data").join("cron.db");
    let runner = Arc::new(RecordingRunner::default());
    let config = tune(Config::new(&db, runner.clone()));
    let mut registry = Registry::new();
    registry.register_all(tools_cron::tools(&config)).unwrap();
    let ctx = context(&ws, Policy::supervised());
    Fixture {
        _dir: dir,
        db,
        runner,
        stack: Stack::new(registry),
        ctx,
    }
}

pub(crate) fn context(ws: &Path, policy: Policy) -> ToolContext {
    ToolContext::new(
        Workspace::local(ws).unwrap(),
        Arc::new(policy),
        Arc::new(Limits::default()),
    )
}

impl Fixture {
    pub(crate) async fn call(
        &self,
        tool: &str,
        args: Value,
    ) -> Result<tool_core::ToolOutput, ToolError> {
        self.stack
            .call_json(tool, &args.to_string(), self.ctx.for_call())
            .await
    }

    pub(crate) async fn ok(&self, tool: &str, args: Value) -> Value {
        match self.call(tool, args.clone()).await {
            Ok(out) => out.structured.unwrap_or(Value::Null),
            Err(e) => panic!("{tool} {args} failed: {e}"),
        }
    }

    pub(crate) fn config(&self) -> Config {
        Config::new(&self.db, self.runner.clone())
    }

    pub(crate) fn daemon(&self, clock: Arc<ManualClock>) -> tools_cron::Daemon {
        tools_cron::Daemon::new(&self.config(), self.ctx.for_call()).with_clock(clock)
    }

    /// Runs per job id, from the database.
    pub(crate) fn runs_by_job(&self) -> BTreeMap<i64, Vec<tools_cron::Run>> {
        let store = tools_cron::SqliteCronStore::open(&self.db).unwrap();
        use tools_cron::CronStore;
        let ws = self.ctx.workspace.roots()[0].path.display().to_string();
        store
            .list(&ws)
            .unwrap()
            .into_iter()
            .map(|j| (j.id, store.runs(j.id, 100_000).unwrap()))
            .collect()
    }
}
