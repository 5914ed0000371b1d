//! The scheduling family: `cron_add`, `cron_list`, `cron_remove`, `cron_update`, `cron_run`,
//! `cron_runs` and NullClaw's `schedule`, plus the [`Daemon`] behind `toolshed cron daemon`.
//!
//! Jobs and their run history live in SQLite ([`SqliteCronStore`]: WAL, busy timeout, ids from
//! `AUTOINCREMENT` so they never repeat) behind the [`CronStore`] trait. This crate never runs a
//! command itself: the composition root passes a [`tool_core::JobRunner`] that runs commands
//! through the `shell` tool — its parser, policy and sandbox — so a schedule can never do what
//! the same command typed into `shell` could not. The policy judges a job's command when the
//! job is added (the call that adds it carries the command's accesses, so a denied command is
//! refused and an asked-about one is asked about then) and again before every run (a refusal is
//! recorded as a `denied` run).
//!
//! Expressions: five crontab fields, six or seven with seconds first (the `cron` crate's form),
//! or `@hourly`/`@daily`/`@weekly`/`@monthly`/`@yearly`; day-of-week numbers follow crontab in
//! every form (0 or 7 = Sunday); a day matches when day-of-month OR day-of-week matches if both
//! are restricted; any IANA time zone. One-shots take a delay (`30s`, `10m`, `2h`, `1d`).
//! Schedules that fire more often than [`Config::min_interval`] are refused, and each workspace
//! holds at most [`Config::max_jobs`] jobs.
//!
//! # Features
//!
//! - `postgres`: `PgCronStore`, jobs, leases and history in PostgreSQL for daemons on several
//!   hosts (pass it with [`Config::with_store`]); occurrences are claimed with
//!   `FOR UPDATE SKIP LOCKED`, so each runs exactly once across daemons.
//!
//! ```
//! let e = tools_cron::CronExpr::parse("0 9 * * 1-5", Some("Europe/Berlin")).unwrap();
//! let monday = chrono::DateTime::parse_from_rfc3339("2026-11-30T00:00:00Z").unwrap();
//! let next = e.next_after(monday.to_utc()).unwrap();
//! assert_eq!(next.to_rfc3339(), "2026-11-30T08:00:00+00:00"); // 09:00 in Berlin
//! ```

mod add;
mod core;
mod daemon;
mod expr;
mod list;
#[cfg(feature = "postgres")]
mod pg;
mod remove;
mod run;
mod runs;
mod schedule;
mod store;
mod update;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tool_core::{Alias, DynTool, JobRunner, typed};

pub use add::{CronAdd, CronAddArgs};
pub use core::next_occurrence;
pub use daemon::{Clock, Daemon, FinishedRun, SystemClock, TickReport};
pub use expr::{CronExpr, parse_delay};
pub use list::{CronList, CronListArgs};
#[cfg(feature = "postgres")]
pub use pg::PgCronStore;
pub use remove::{CronRemove, CronRemoveArgs};
pub use run::{CronRun, CronRunArgs};
pub use runs::{CronRuns, CronRunsArgs};
pub use schedule::{Schedule, ScheduleAction, ScheduleArgs};
pub use store::{
    Claim, CronStore, Job, JobSchedule, NewJob, NextFn, Run, RunStatus, SqliteCronStore,
};
pub use update::{CronUpdate, CronUpdateArgs};

/// Settings of the scheduling tools and the daemon.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The SQLite database of jobs and runs (created on first use).
    pub database: PathBuf,
    /// Another store to use instead of the SQLite file (a server database, or a test's).
    pub store: Option<Arc<dyn CronStore>>,
    /// Runs the jobs' commands and prompts.
    pub runner: Arc<dyn JobRunner>,
    /// The shortest gap allowed between two occurrences of a recurring job (60 s).
    pub min_interval: Duration,
    /// The most jobs one workspace may hold (100).
    pub max_jobs: usize,
    /// Bytes of output kept per run, head and tail (16 KiB).
    pub max_output_bytes: usize,
}

impl Config {
    /// The defaults, with jobs in `database`, run by `runner`.
    pub fn new(database: impl Into<PathBuf>, runner: Arc<dyn JobRunner>) -> Config {
        Config {
            database: database.into(),
            store: None,
            runner,
            min_interval: Duration::from_secs(60),
            max_jobs: 100,
            max_output_bytes: 16 * 1024,
        }
    }

    /// The same settings with another minimum interval.
    pub fn with_min_interval(mut self, d: Duration) -> Config {
        self.min_interval = d;
        self
    }

    /// The same settings with another job cap per workspace.
    pub fn with_max_jobs(mut self, n: usize) -> Config {
        self.max_jobs = n;
        self
    }

    /// The same settings over another store.
    pub fn with_store(mut self, store: Arc<dyn CronStore>) -> Config {
        self.store = Some(store);
        self
    }
}

/// Every tool of this crate, sharing one store (opened on first use) and one runner.
pub fn tools(config: &Config) -> Vec<Arc<dyn DynTool>> {
    let cron = Arc::new(core::Cron::new(config));
    vec![
        typed(CronAdd(Arc::clone(&cron))),
        typed(CronList(Arc::clone(&cron))),
        typed(CronRemove(Arc::clone(&cron))),
        typed(CronUpdate(Arc::clone(&cron))),
        typed(CronRun(Arc::clone(&cron))),
        typed(CronRuns(Arc::clone(&cron))),
        typed(Schedule(cron)),
    ]
}

/// Seed-compatible names of this crate's tools (NullClaw's names are ours).
pub const ALIASES: &[Alias] = &[
    identity("cron_add"),
    identity("cron_list"),
    identity("cron_remove"),
    identity("cron_update"),
    identity("cron_run"),
    identity("cron_runs"),
    identity("schedule"),
];

const fn identity(name: &'static str) -> Alias {
    Alias {
        profile: "nullclaw",
        name,
        target: name,
        renames: &[],
    }
}
