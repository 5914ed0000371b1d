//! Where jobs, leases and run history live: the [`CronStore`] trait and its SQLite
//! implementation (WAL, busy timeout, `BEGIN IMMEDIATE` for every claim).

// The store's own database is the operator's data directory, not a file in the workspace.
#![allow(clippy::disallowed_methods)]

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};
use tool_core::{JobAction, ToolError};

/// When a job fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobSchedule {
    /// A recurring expression in a time zone.
    Cron {
        /// The expression as the caller gave it.
        expression: String,
        /// The IANA time zone name.
        timezone: String,
    },
    /// Once, at a Unix time (seconds).
    Once {
        /// When.
        at: i64,
    },
}

/// A stored job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// Its id: never reused, even after removals.
    pub id: i64,
    /// The workspace it belongs to (its root path).
    pub workspace: String,
    /// A label.
    pub name: Option<String>,
    /// When it fires.
    pub schedule: JobSchedule,
    /// What it does.
    pub action: JobAction,
    /// Whether it is paused.
    pub paused: bool,
    /// Unix time it was added.
    pub created_at: i64,
    /// The next occurrence not yet claimed (Unix time); `None` once a one-shot has run.
    pub next_run: Option<i64>,
    /// The last occurrence that was claimed.
    pub last_run: Option<i64>,
}

/// A job before it has an id.
#[derive(Debug, Clone)]
pub struct NewJob {
    /// See [`Job::workspace`].
    pub workspace: String,
    /// See [`Job::name`].
    pub name: Option<String>,
    /// See [`Job::schedule`].
    pub schedule: JobSchedule,
    /// See [`Job::action`].
    pub action: JobAction,
    /// See [`Job::created_at`].
    pub created_at: i64,
    /// See [`Job::next_run`].
    pub next_run: Option<i64>,
}

/// How a run ended (or that it has not yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// Leased and running.
    Running,
    /// Exit code 0 (or the agent's final answer).
    Ok,
    /// It ran and failed (non-zero exit).
    Failed,
    /// The policy refused it when it was about to run.
    Denied,
    /// The runner reported an error (timeout, invalid command…).
    Error,
    /// The daemon stopped it on shutdown.
    Cancelled,
    /// Its daemon died mid-run and the lease expired; it is reported, never re-run silently.
    Abandoned,
}

impl RunStatus {
    /// The word stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::Denied => "denied",
            RunStatus::Error => "error",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Abandoned => "abandoned",
        }
    }

    pub(crate) fn parse(s: &str) -> RunStatus {
        match s {
            "running" => RunStatus::Running,
            "ok" => RunStatus::Ok,
            "failed" => RunStatus::Failed,
            "denied" => RunStatus::Denied,
            "cancelled" => RunStatus::Cancelled,
            "abandoned" => RunStatus::Abandoned,
            _ => RunStatus::Error,
        }
    }
}

/// One run of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// Its id.
    pub id: i64,
    /// The job.
    pub job_id: i64,
    /// The occurrence it is for (Unix time); `None` for a manual run.
    pub scheduled_for: Option<i64>,
    /// `schedule`, `catch_up` or `manual`.
    pub trigger: String,
    /// Which daemon (or process) ran it.
    pub owner: String,
    /// Unix time it started.
    pub started_at: i64,
    /// Unix time it ended.
    pub finished_at: Option<i64>,
    /// How it ended.
    pub status: RunStatus,
    /// The command's exit code.
    pub exit_code: Option<i32>,
    /// Its output, capped.
    pub output: String,
    /// Earlier occurrences skipped by a catch-up run.
    pub missed: i64,
}

/// A run leased to the caller: run the job, then call [`CronStore::finish`].
#[derive(Debug, Clone)]
pub struct Claim {
    /// The run's id.
    pub run_id: i64,
    /// The job as it was when claimed.
    pub job: Job,
    /// The occurrence.
    pub scheduled_for: i64,
    /// Earlier occurrences that were missed and are covered by this one run.
    pub missed: i64,
}

/// Computes a job's next occurrence strictly after a Unix time.
pub type NextFn<'a> = &'a dyn Fn(&Job, i64) -> Option<i64>;

/// What claiming a due job means, whichever store claims it.
pub(crate) struct Due {
    /// The occurrence the run is for: the latest one due.
    pub(crate) latest: i64,
    /// Earlier due occurrences it covers.
    pub(crate) missed: i64,
    /// The job's next run after the claim.
    pub(crate) following: Option<i64>,
    /// `schedule`, or `catch_up` when it covers missed occurrences.
    pub(crate) trigger: &'static str,
}

/// The catch-up policy: occurrences missed while no daemon ran collapse into one run for the
/// latest of them; the run records how many it covers.
pub(crate) fn due_occurrence(job: &Job, first: i64, now: i64, next: NextFn<'_>) -> Due {
    let mut latest = first;
    let mut missed = 0i64;
    while let Some(n) = next(job, latest).filter(|n| *n <= now) {
        latest = n;
        missed += 1;
        if missed >= 100_000 {
            break;
        }
    }
    let following = match job.schedule {
        JobSchedule::Once { .. } => None,
        JobSchedule::Cron { .. } => next(job, now.max(latest)),
    };
    Due {
        latest,
        missed,
        following,
        trigger: if missed > 0 { "catch_up" } else { "schedule" },
    }
}

/// Persistence of jobs, leases and history. Synchronous; call it from blocking tasks.
pub trait CronStore: Send + Sync + fmt::Debug {
    /// Adds a job unless `workspace` already has `max_jobs` jobs.
    fn add(&self, job: &NewJob, max_jobs: usize) -> Result<Job, ToolError>;
    /// One job of a workspace.
    fn get(&self, workspace: &str, id: i64) -> Result<Option<Job>, ToolError>;
    /// Every job of a workspace, oldest first.
    fn list(&self, workspace: &str) -> Result<Vec<Job>, ToolError>;
    /// Replaces a job's schedule, action, name, pause flag and next run.
    fn update(&self, job: &Job) -> Result<(), ToolError>;
    /// Removes a job and its history; false when there was none.
    fn remove(&self, workspace: &str, id: i64) -> Result<bool, ToolError>;
    /// Leases every due occurrence of `workspace` to `owner` in one transaction and advances
    /// each job's next run past `now`, so no other daemon can claim the same occurrence.
    fn claim_due(
        &self,
        workspace: &str,
        now: i64,
        owner: &str,
        lease_until: i64,
        next: NextFn<'_>,
    ) -> Result<Vec<Claim>, ToolError>;
    /// Records the start of a manual run.
    fn begin_manual(
        &self,
        job: &Job,
        now: i64,
        owner: &str,
        lease_until: i64,
    ) -> Result<i64, ToolError>;
    /// Extends a running lease; false if the run is no longer this owner's.
    fn renew(&self, run_id: i64, owner: &str, lease_until: i64) -> Result<bool, ToolError>;
    /// Records how a run ended; false if the run is no longer this owner's (its lease expired).
    fn finish(
        &self,
        run_id: i64,
        owner: &str,
        finished_at: i64,
        status: RunStatus,
        exit_code: Option<i32>,
        output: &str,
    ) -> Result<bool, ToolError>;
    /// Marks running runs of `workspace` whose lease ended before `now` as abandoned.
    fn expire_leases(&self, workspace: &str, now: i64) -> Result<Vec<Run>, ToolError>;
    /// The newest runs of a job.
    fn runs(&self, job_id: i64, limit: usize) -> Result<Vec<Run>, ToolError>;
    /// The earliest next run among the workspace's active jobs.
    fn next_due(&self, workspace: &str) -> Result<Option<i64>, ToolError>;
}

const SCHEMA_VERSION: i32 = 1;

/// The SQLite store: one connection, WAL, a busy timeout so several processes can share it.
pub struct SqliteCronStore {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl fmt::Debug for SqliteCronStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SqliteCronStore({})", self.path.display())
    }
}

fn db_err(e: rusqlite::Error) -> ToolError {
    ToolError::internal(e)
}

impl SqliteCronStore {
    /// Opens (creating if needed) the database at `path` and migrates it.
    pub fn open(path: &Path) -> Result<SqliteCronStore, ToolError> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        // Jobs hold command lines: the directory and file are the user's alone.
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| {
                    ToolError::Failed(format!(
                        "The cron database directory {} cannot be created ({e}); set data_dir in toolshed.toml to a writable directory.",
                        dir.display()
                    ))
                })?;
        }
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| {
                ToolError::Failed(format!(
                    "The cron database {} cannot be opened ({e}); set data_dir in toolshed.toml to a writable directory.",
                    path.display()
                ))
            })?;
        let conn = Connection::open(path).map_err(|e| {
            ToolError::Failed(format!(
                "The cron database {} cannot be opened ({e}); set data_dir in toolshed.toml to a writable directory.",
                path.display()
            ))
        })?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(db_err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(db_err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(db_err)?;
        migrate(&conn)?;
        Ok(SqliteCronStore {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> Result<MutexGuard<'_, Connection>, ToolError> {
        self.conn
            .lock()
            .map_err(|_| ToolError::internal("the cron database lock is poisoned"))
    }
}

fn migrate(conn: &Connection) -> Result<(), ToolError> {
    let version: i32 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(db_err)?;
    if version > SCHEMA_VERSION {
        return Err(ToolError::Failed(format!(
            "The cron database was written by a newer Toolshed (schema {version}, this one knows {SCHEMA_VERSION}); upgrade toolshed or point data_dir elsewhere."
        )));
    }
    if version < 1 {
        // AUTOINCREMENT: SQLite never hands out an id again, even after the highest row is
        // deleted, so a removed job's id cannot come back as someone else's job.
        conn.execute_batch(
            "BEGIN IMMEDIATE;
             CREATE TABLE IF NOT EXISTS jobs (
                 id INTEGER PRIMARY KEY AUTOINCREMENT,
                 workspace TEXT NOT NULL,
                 name TEXT,
                 expression TEXT,
                 timezone TEXT NOT NULL DEFAULT 'UTC',
                 once_at INTEGER,
                 kind TEXT NOT NULL CHECK (kind IN ('command', 'prompt')),
                 action TEXT NOT NULL,
                 paused INTEGER NOT NULL DEFAULT 0,
                 created_at INTEGER NOT NULL,
                 next_run INTEGER,
                 last_run INTEGER,
                 CHECK ((expression IS NULL) <> (once_at IS NULL))
             );
             CREATE INDEX IF NOT EXISTS jobs_due ON jobs (workspace, paused, next_run);
             CREATE TABLE IF NOT EXISTS runs (
                 id INTEGER PRIMARY KEY AUTOINCREMENT,
                 job_id INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
                 scheduled_for INTEGER,
                 trigger TEXT NOT NULL,
                 owner TEXT NOT NULL,
                 lease_until INTEGER NOT NULL,
                 started_at INTEGER NOT NULL,
                 finished_at INTEGER,
                 status TEXT NOT NULL,
                 exit_code INTEGER,
                 output TEXT NOT NULL DEFAULT '',
                 missed INTEGER NOT NULL DEFAULT 0,
                 UNIQUE (job_id, scheduled_for)
             );
             CREATE INDEX IF NOT EXISTS runs_job ON runs (job_id, id);
             CREATE INDEX IF NOT EXISTS runs_running ON runs (status, lease_until);
             PRAGMA user_version = 1;
             COMMIT;",
        )
        .map_err(db_err)?;
    }
    Ok(())
}

/// The columns of a job, in the order both stores select them.
pub(crate) const JOB_COLUMNS: &str = "id, workspace, name, expression, timezone, once_at, kind, action, paused, created_at, next_run, last_run";

/// A job as its columns hold it; both stores read rows into this.
pub(crate) struct JobRow {
    pub(crate) id: i64,
    pub(crate) workspace: String,
    pub(crate) name: Option<String>,
    pub(crate) expression: Option<String>,
    pub(crate) timezone: String,
    pub(crate) once_at: Option<i64>,
    pub(crate) kind: String,
    pub(crate) action: String,
    pub(crate) paused: bool,
    pub(crate) created_at: i64,
    pub(crate) next_run: Option<i64>,
    pub(crate) last_run: Option<i64>,
}

impl From<JobRow> for Job {
    fn from(r: JobRow) -> Job {
        Job {
            id: r.id,
            workspace: r.workspace,
            name: r.name,
            schedule: match (r.expression, r.once_at) {
                (Some(expression), _) => JobSchedule::Cron {
                    expression,
                    timezone: r.timezone,
                },
                (None, at) => JobSchedule::Once {
                    at: at.unwrap_or_default(),
                },
            },
            action: if r.kind == "prompt" {
                JobAction::Prompt(r.action)
            } else {
                JobAction::Command(r.action)
            },
            paused: r.paused,
            created_at: r.created_at,
            next_run: r.next_run,
            last_run: r.last_run,
        }
    }
}

fn job_from_row(r: &Row<'_>) -> rusqlite::Result<Job> {
    Ok(JobRow {
        id: r.get(0)?,
        workspace: r.get(1)?,
        name: r.get(2)?,
        expression: r.get(3)?,
        timezone: r.get(4)?,
        once_at: r.get(5)?,
        kind: r.get(6)?,
        action: r.get(7)?,
        paused: r.get::<_, i64>(8)? != 0,
        created_at: r.get(9)?,
        next_run: r.get(10)?,
        last_run: r.get(11)?,
    }
    .into())
}

/// The columns of a run, in the order both stores select them.
pub(crate) const RUN_COLUMNS: &str = "id, job_id, scheduled_for, trigger, owner, started_at, finished_at, status, exit_code, output, missed";

fn run_from_row(r: &Row<'_>) -> rusqlite::Result<Run> {
    Ok(Run {
        id: r.get(0)?,
        job_id: r.get(1)?,
        scheduled_for: r.get(2)?,
        trigger: r.get(3)?,
        owner: r.get(4)?,
        started_at: r.get(5)?,
        finished_at: r.get(6)?,
        status: RunStatus::parse(&r.get::<_, String>(7)?),
        exit_code: r.get(8)?,
        output: r.get(9)?,
        missed: r.get(10)?,
    })
}

/// The `expression`, `timezone` and `once_at` columns of a schedule.
pub(crate) fn schedule_columns(s: &JobSchedule) -> (Option<&str>, &str, Option<i64>) {
    match s {
        JobSchedule::Cron {
            expression,
            timezone,
        } => (Some(expression.as_str()), timezone.as_str(), None),
        JobSchedule::Once { at } => (None, "UTC", Some(*at)),
    }
}

impl CronStore for SqliteCronStore {
    fn add(&self, job: &NewJob, max_jobs: usize) -> Result<Job, ToolError> {
        let mut conn = self.conn()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        let count: i64 = tx
            .query_row(
                "SELECT count(*) FROM jobs WHERE workspace = ?1",
                [&job.workspace],
                |r| r.get(0),
            )
            .map_err(db_err)?;
        if count as usize >= max_jobs {
            return Err(ToolError::Failed(format!(
                "This workspace already has {count} scheduled jobs, the most allowed (cron.max_jobs = {max_jobs}); remove one with cron_remove before adding another."
            )));
        }
        let (expression, timezone, once_at) = schedule_columns(&job.schedule);
        tx.execute(
            "INSERT INTO jobs (workspace, name, expression, timezone, once_at, kind, action, created_at, next_run)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                job.workspace,
                job.name,
                expression,
                timezone,
                once_at,
                job.action.kind(),
                job.action.text(),
                job.created_at,
                job.next_run
            ],
        )
        .map_err(db_err)?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(db_err)?;
        Ok(Job {
            id,
            workspace: job.workspace.clone(),
            name: job.name.clone(),
            schedule: job.schedule.clone(),
            action: job.action.clone(),
            paused: false,
            created_at: job.created_at,
            next_run: job.next_run,
            last_run: None,
        })
    }

    fn get(&self, workspace: &str, id: i64) -> Result<Option<Job>, ToolError> {
        self.conn()?
            .query_row(
                &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE workspace = ?1 AND id = ?2"),
                params![workspace, id],
                job_from_row,
            )
            .optional()
            .map_err(db_err)
    }

    fn list(&self, workspace: &str) -> Result<Vec<Job>, ToolError> {
        let conn = self.conn()?;
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {JOB_COLUMNS} FROM jobs WHERE workspace = ?1 ORDER BY id"
            ))
            .map_err(db_err)?;
        stmt.query_map([workspace], job_from_row)
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)
    }

    fn update(&self, job: &Job) -> Result<(), ToolError> {
        let (expression, timezone, once_at) = schedule_columns(&job.schedule);
        let changed = self
            .conn()?
            .execute(
                "UPDATE jobs SET name = ?3, expression = ?4, timezone = ?5, once_at = ?6, kind = ?7,
                     action = ?8, paused = ?9, next_run = ?10
                 WHERE workspace = ?1 AND id = ?2",
                params![
                    job.workspace,
                    job.id,
                    job.name,
                    expression,
                    timezone,
                    once_at,
                    job.action.kind(),
                    job.action.text(),
                    job.paused as i64,
                    job.next_run
                ],
            )
            .map_err(db_err)?;
        if changed == 0 {
            return Err(not_found(job.id));
        }
        Ok(())
    }

    fn remove(&self, workspace: &str, id: i64) -> Result<bool, ToolError> {
        let changed = self
            .conn()?
            .execute(
                "DELETE FROM jobs WHERE workspace = ?1 AND id = ?2",
                params![workspace, id],
            )
            .map_err(db_err)?;
        Ok(changed > 0)
    }

    fn claim_due(
        &self,
        workspace: &str,
        now: i64,
        owner: &str,
        lease_until: i64,
        next: NextFn<'_>,
    ) -> Result<Vec<Claim>, ToolError> {
        let mut conn = self.conn()?;
        // IMMEDIATE takes the write lock first, so two daemons serialise here and the second
        // sees the first one's advanced next_run.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        let due: Vec<Job> = {
            let mut stmt = tx
                .prepare_cached(&format!(
                    "SELECT {JOB_COLUMNS} FROM jobs
                     WHERE workspace = ?1 AND paused = 0 AND next_run IS NOT NULL AND next_run <= ?2
                     ORDER BY next_run, id"
                ))
                .map_err(db_err)?;
            stmt.query_map(params![workspace, now], job_from_row)
                .map_err(db_err)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(db_err)?
        };
        let mut claims = Vec::with_capacity(due.len());
        for job in due {
            let Some(first) = job.next_run else { continue };
            let Due {
                latest,
                missed,
                following,
                trigger,
            } = due_occurrence(&job, first, now, next);
            let inserted = tx
                .execute(
                    "INSERT INTO runs (job_id, scheduled_for, trigger, owner, lease_until, started_at, status, missed)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7)
                     ON CONFLICT (job_id, scheduled_for) DO NOTHING",
                    params![job.id, latest, trigger, owner, lease_until, now, missed],
                )
                .map_err(db_err)?;
            tx.execute(
                "UPDATE jobs SET next_run = ?2, last_run = ?3 WHERE id = ?1",
                params![job.id, following, latest],
            )
            .map_err(db_err)?;
            if inserted == 1 {
                claims.push(Claim {
                    run_id: tx.last_insert_rowid(),
                    job,
                    scheduled_for: latest,
                    missed,
                });
            }
        }
        tx.commit().map_err(db_err)?;
        Ok(claims)
    }

    fn begin_manual(
        &self,
        job: &Job,
        now: i64,
        owner: &str,
        lease_until: i64,
    ) -> Result<i64, ToolError> {
        let conn = self.conn()?;
        conn.execute(
            "INSERT INTO runs (job_id, scheduled_for, trigger, owner, lease_until, started_at, status)
             VALUES (?1, NULL, 'manual', ?2, ?3, ?4, 'running')",
            params![job.id, owner, lease_until, now],
        )
        .map_err(db_err)?;
        Ok(conn.last_insert_rowid())
    }

    fn renew(&self, run_id: i64, owner: &str, lease_until: i64) -> Result<bool, ToolError> {
        let changed = self
            .conn()?
            .execute(
                "UPDATE runs SET lease_until = ?3 WHERE id = ?1 AND owner = ?2 AND status = 'running'",
                params![run_id, owner, lease_until],
            )
            .map_err(db_err)?;
        Ok(changed == 1)
    }

    fn finish(
        &self,
        run_id: i64,
        owner: &str,
        finished_at: i64,
        status: RunStatus,
        exit_code: Option<i32>,
        output: &str,
    ) -> Result<bool, ToolError> {
        let changed = self
            .conn()?
            .execute(
                "UPDATE runs SET finished_at = ?3, status = ?4, exit_code = ?5, output = ?6
                 WHERE id = ?1 AND owner = ?2 AND status = 'running'",
                params![
                    run_id,
                    owner,
                    finished_at,
                    status.as_str(),
                    exit_code,
                    output
                ],
            )
            .map_err(db_err)?;
        Ok(changed == 1)
    }

    fn expire_leases(&self, workspace: &str, now: i64) -> Result<Vec<Run>, ToolError> {
        let mut conn = self.conn()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        let expired: Vec<Run> = {
            let mut stmt = tx
                .prepare_cached(&format!(
                    "SELECT {RUN_COLUMNS} FROM runs
                     WHERE status = 'running' AND lease_until < ?2
                       AND job_id IN (SELECT id FROM jobs WHERE workspace = ?1)"
                ))
                .map_err(db_err)?;
            stmt.query_map(params![workspace, now], run_from_row)
                .map_err(db_err)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(db_err)?
        };
        for run in &expired {
            tx.execute(
                "UPDATE runs SET status = 'abandoned', finished_at = ?2,
                     output = output || ?3
                 WHERE id = ?1 AND status = 'running'",
                params![
                    run.id,
                    now,
                    format!(
                        "[the daemon `{}` stopped before this run finished; its lease expired and the run was not repeated]",
                        run.owner
                    )
                ],
            )
            .map_err(db_err)?;
        }
        tx.commit().map_err(db_err)?;
        Ok(expired
            .into_iter()
            .map(|mut r| {
                r.status = RunStatus::Abandoned;
                r.finished_at = Some(now);
                r
            })
            .collect())
    }

    fn runs(&self, job_id: i64, limit: usize) -> Result<Vec<Run>, ToolError> {
        let conn = self.conn()?;
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE job_id = ?1 ORDER BY id DESC LIMIT ?2"
            ))
            .map_err(db_err)?;
        stmt.query_map(params![job_id, limit as i64], run_from_row)
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)
    }

    fn next_due(&self, workspace: &str) -> Result<Option<i64>, ToolError> {
        self.conn()?
            .query_row(
                "SELECT min(next_run) FROM jobs WHERE workspace = ?1 AND paused = 0",
                [workspace],
                |r| r.get(0),
            )
            .map_err(db_err)
    }
}

pub(crate) fn not_found(id: i64) -> ToolError {
    ToolError::NotFound(format!(
        "There is no job {id} in this workspace; call cron_list to see the jobs and their ids."
    ))
}

/// Opens the store on first use, so that building the tools creates no file.
#[derive(Debug)]
pub(crate) struct LazyStore {
    path: PathBuf,
    store: Mutex<Option<Arc<dyn CronStore>>>,
}

impl LazyStore {
    pub(crate) fn new(path: PathBuf) -> LazyStore {
        LazyStore {
            path,
            store: Mutex::new(None),
        }
    }

    pub(crate) fn with_store(store: Arc<dyn CronStore>) -> LazyStore {
        LazyStore {
            path: PathBuf::new(),
            store: Mutex::new(Some(store)),
        }
    }

    /// The store, opened now if this is the first use. Blocking.
    pub(crate) fn get(&self) -> Result<Arc<dyn CronStore>, ToolError> {
        let mut slot = self
            .store
            .lock()
            .map_err(|_| ToolError::internal("the cron store lock is poisoned"))?;
        if let Some(s) = &*slot {
            return Ok(Arc::clone(s));
        }
        let store: Arc<dyn CronStore> = Arc::new(SqliteCronStore::open(&self.path)?);
        *slot = Some(Arc::clone(&store));
        Ok(store)
    }
}
