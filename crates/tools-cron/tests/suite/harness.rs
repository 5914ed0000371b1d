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
use tools_cron::{Clock, Config, CronStore};

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
                    why: String::new(),
                    commands: vec![c.clone()],
                    opaque: Vec::new(),
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

/// Where a fixture keeps its jobs.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// A SQLite file in the fixture's temp dir.
    Sqlite,
    /// A fresh schema of the test PostgreSQL database (`TOOLSHED_TEST_PG`).
    #[cfg(feature = "postgres")]
    Postgres(tool_core::pg::PgPool),
}

impl Backend {
    /// The PostgreSQL backend, when a test database is configured.
    #[cfg(feature = "postgres")]
    pub(crate) fn postgres(label: &str) -> Option<Backend> {
        tool_core::pg::test_pool(label).map(Backend::Postgres)
    }
}

pub(crate) struct Fixture {
    pub(crate) _dir: tempfile::TempDir,
    pub(crate) db: PathBuf,
    pub(crate) backend: Backend,
    pub(crate) runner: Arc<RecordingRunner>,
    pub(crate) stack: Stack,
    pub(crate) ctx: ToolContext,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        #[cfg(feature = "postgres")]
        if let Backend::Postgres(pool) = &self.backend {
            let _ = pool.drop_schema();
        }
    }
}

pub(crate) fn fixture() -> Fixture {
    fixture_with(|c| c)
}

pub(crate) fn fixture_with(tune: impl FnOnce(Config) -> Config) -> Fixture {
    fixture_on(Backend::Sqlite, tune)
}

pub(crate) fn fixture_on(backend: Backend, tune: impl FnOnce(Config) -> Config) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let db = dir.path().join("data").join("cron.db");
    let runner = Arc::new(RecordingRunner::default());
    let mut f = Fixture {
        _dir: dir,
        db,
        backend,
        runner,
        stack: Stack::new(Registry::new()),
        ctx: context(&ws, Policy::supervised()),
    };
    let config = tune(f.config());
    let mut registry = Registry::new();
    registry.register_all(tools_cron::tools(&config)).unwrap();
    f.stack = Stack::new(registry);
    f
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

    /// A new handle on the fixture's store: for PostgreSQL, a pool of its own, as another
    /// replica would have.
    pub(crate) fn store(&self) -> Arc<dyn CronStore> {
        match &self.backend {
            Backend::Sqlite => Arc::new(tools_cron::SqliteCronStore::open(&self.db).unwrap()),
            #[cfg(feature = "postgres")]
            Backend::Postgres(pool) => {
                let url = std::env::var(tool_core::pg::TEST_URL_VAR).unwrap();
                let config = tool_core::pg::PgConfig::new(url).with_schema(pool.schema());
                let pool = tool_core::pg::PgPool::connect(&config).unwrap();
                Arc::new(tools_cron::PgCronStore::open(pool).unwrap())
            }
        }
    }

    /// Settings over the fixture's store (SQLite: the file, opened on first use; PostgreSQL: a
    /// new pool, so every daemon made from it is a separate replica).
    pub(crate) fn config(&self) -> Config {
        let config = Config::new(&self.db, self.runner.clone());
        match self.backend {
            Backend::Sqlite => config,
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => config.with_store(self.store()),
        }
    }

    pub(crate) fn daemon(&self, clock: Arc<ManualClock>) -> tools_cron::Daemon {
        tools_cron::Daemon::new(&self.config(), self.ctx.for_call()).with_clock(clock)
    }

    /// Runs per job id, from the database.
    pub(crate) fn runs_by_job(&self) -> BTreeMap<i64, Vec<tools_cron::Run>> {
        let store = self.store();
        let ws = self.ctx.workspace.roots()[0].path.display().to_string();
        // The stores block; run them where blocking is allowed, as the tools do.
        off_runtime(move || {
            store
                .list(&ws)
                .unwrap()
                .into_iter()
                .map(|j| (j.id, store.runs(j.id, 100_000).unwrap()))
                .collect()
        })
    }
}

/// Runs blocking store calls on a thread of their own (the PostgreSQL client refuses to block
/// inside the test's runtime); the store is dropped there too.
pub(crate) fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| s.spawn(f).join().unwrap())
}
