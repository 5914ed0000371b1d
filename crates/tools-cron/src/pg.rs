//! The PostgreSQL [`CronStore`] (feature `postgres`): jobs, leases and run history shared by
//! every daemon and server that points at one database.
//!
//! Exactly once across replicas: [`CronStore::claim_due`] selects the due jobs with
//! `FOR UPDATE SKIP LOCKED` and, in the same transaction, inserts the run (unique per job and
//! occurrence) and advances the job's next run. A second daemon claiming at the same moment
//! skips the rows the first holds; one that reads them after the first commits sees the new
//! next run (PostgreSQL re-checks the condition on the updated row), so no occurrence is leased
//! twice, and the unique key would refuse it if it were. A daemon that dies mid-run stops
//! renewing its lease; the first daemon to look after the lease ends marks the run `abandoned`
//! in one `UPDATE … RETURNING`, so it is reported once and never re-run silently.
//!
//! Adding a job counts the workspace's jobs under an advisory transaction lock on the
//! workspace, so two servers adding at once cannot pass `max_jobs` together.

use std::fmt;

use tool_core::ToolError;
use tool_core::pg::postgres::{self, Row, Transaction};
use tool_core::pg::{PgConn, PgPool};

use crate::store::{
    Claim, CronStore, Due, JOB_COLUMNS, Job, JobRow, NewJob, NextFn, RUN_COLUMNS, Run, RunStatus,
    due_occurrence, not_found, schedule_columns,
};

/// Version 1 of the layout: the SQLite store's, in PostgreSQL types.
const V1: &str = "
CREATE TABLE cron_jobs (
    id bigserial PRIMARY KEY,
    workspace text NOT NULL,
    name text,
    expression text,
    timezone text NOT NULL DEFAULT 'UTC',
    once_at bigint,
    kind text NOT NULL CHECK (kind IN ('command', 'prompt')),
    action text NOT NULL,
    paused boolean NOT NULL DEFAULT false,
    created_at bigint NOT NULL,
    next_run bigint,
    last_run bigint,
    CHECK ((expression IS NULL) <> (once_at IS NULL))
);
CREATE INDEX cron_jobs_due ON cron_jobs (workspace, paused, next_run);
CREATE TABLE cron_runs (
    id bigserial PRIMARY KEY,
    job_id bigint NOT NULL REFERENCES cron_jobs (id) ON DELETE CASCADE,
    scheduled_for bigint,
    trigger text NOT NULL,
    owner text NOT NULL,
    lease_until bigint NOT NULL,
    started_at bigint NOT NULL,
    finished_at bigint,
    status text NOT NULL,
    exit_code integer,
    output text NOT NULL DEFAULT '',
    missed bigint NOT NULL DEFAULT 0,
    UNIQUE (job_id, scheduled_for)
);
CREATE INDEX cron_runs_job ON cron_runs (job_id, id);
CREATE INDEX cron_runs_running ON cron_runs (status, lease_until);
";

/// Jobs, leases and history in a PostgreSQL schema (tables `cron_jobs`, `cron_runs`).
#[derive(Clone)]
pub struct PgCronStore {
    pool: PgPool,
}

impl fmt::Debug for PgCronStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgCronStore({:?})", self.pool)
    }
}

fn db_err(e: postgres::Error) -> ToolError {
    ToolError::internal(e)
}

fn job_from_row(r: &Row) -> Job {
    JobRow {
        id: r.get(0),
        workspace: r.get(1),
        name: r.get(2),
        expression: r.get(3),
        timezone: r.get(4),
        once_at: r.get(5),
        kind: r.get(6),
        action: r.get(7),
        paused: r.get(8),
        created_at: r.get(9),
        next_run: r.get(10),
        last_run: r.get(11),
    }
    .into()
}

fn run_from_row(r: &Row) -> Run {
    let status: String = r.get(7);
    Run {
        id: r.get(0),
        job_id: r.get(1),
        scheduled_for: r.get(2),
        trigger: r.get(3),
        owner: r.get(4),
        started_at: r.get(5),
        finished_at: r.get(6),
        status: RunStatus::parse(&status),
        exit_code: r.get(8),
        output: r.get(9),
        missed: r.get(10),
    }
}

impl PgCronStore {
    /// Uses `pool`'s schema, creating or migrating the tables (store name `cron`). Blocking.
    pub fn open(pool: PgPool) -> Result<PgCronStore, ToolError> {
        pool.migrate("cron", &[V1])?;
        Ok(PgCronStore { pool })
    }

    fn conn(&self) -> Result<PgConn, ToolError> {
        Ok(self.pool.get()?)
    }
}

fn lock_workspace(tx: &mut Transaction<'_>, workspace: &str) -> Result<(), ToolError> {
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1))",
        &[&format!("toolshed:cron:{workspace}")],
    )
    .map_err(db_err)?;
    Ok(())
}

impl CronStore for PgCronStore {
    fn add(&self, job: &NewJob, max_jobs: usize) -> Result<Job, ToolError> {
        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(db_err)?;
        lock_workspace(&mut tx, &job.workspace)?;
        let count: i64 = tx
            .query_one(
                "SELECT count(*) FROM cron_jobs WHERE workspace = $1",
                &[&job.workspace],
            )
            .map_err(db_err)?
            .get(0);
        if count as usize >= max_jobs {
            return Err(ToolError::Failed(format!(
                "This workspace already has {count} scheduled jobs, the most allowed (cron.max_jobs = {max_jobs}); remove one with cron_remove before adding another."
            )));
        }
        let (expression, timezone, once_at) = schedule_columns(&job.schedule);
        let id: i64 = tx
            .query_one(
                "INSERT INTO cron_jobs (workspace, name, expression, timezone, once_at, kind, action, created_at, next_run)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
                &[
                    &job.workspace,
                    &job.name,
                    &expression,
                    &timezone,
                    &once_at,
                    &job.action.kind(),
                    &job.action.text(),
                    &job.created_at,
                    &job.next_run,
                ],
            )
            .map_err(db_err)?
            .get(0);
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
        Ok(self
            .conn()?
            .query_opt(
                &format!("SELECT {JOB_COLUMNS} FROM cron_jobs WHERE workspace = $1 AND id = $2"),
                &[&workspace, &id],
            )
            .map_err(db_err)?
            .as_ref()
            .map(job_from_row))
    }

    fn list(&self, workspace: &str) -> Result<Vec<Job>, ToolError> {
        Ok(self
            .conn()?
            .query(
                &format!("SELECT {JOB_COLUMNS} FROM cron_jobs WHERE workspace = $1 ORDER BY id"),
                &[&workspace],
            )
            .map_err(db_err)?
            .iter()
            .map(job_from_row)
            .collect())
    }

    fn update(&self, job: &Job) -> Result<(), ToolError> {
        let (expression, timezone, once_at) = schedule_columns(&job.schedule);
        let changed = self
            .conn()?
            .execute(
                "UPDATE cron_jobs SET name = $3, expression = $4, timezone = $5, once_at = $6,
                     kind = $7, action = $8, paused = $9, next_run = $10
                 WHERE workspace = $1 AND id = $2",
                &[
                    &job.workspace,
                    &job.id,
                    &job.name,
                    &expression,
                    &timezone,
                    &once_at,
                    &job.action.kind(),
                    &job.action.text(),
                    &job.paused,
                    &job.next_run,
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
                "DELETE FROM cron_jobs WHERE workspace = $1 AND id = $2",
                &[&workspace, &id],
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
        let mut tx = conn.transaction().map_err(db_err)?;
        // Rows another daemon is claiming right now are skipped, not waited for: that daemon
        // advances their next run, and a re-check after its commit would exclude them anyway.
        let due: Vec<Job> = tx
            .query(
                &format!(
                    "SELECT {JOB_COLUMNS} FROM cron_jobs
                     WHERE workspace = $1 AND NOT paused AND next_run IS NOT NULL AND next_run <= $2
                     ORDER BY next_run, id
                     FOR UPDATE SKIP LOCKED"
                ),
                &[&workspace, &now],
            )
            .map_err(db_err)?
            .iter()
            .map(job_from_row)
            .collect();
        let mut claims = Vec::with_capacity(due.len());
        for job in due {
            let Some(first) = job.next_run else { continue };
            // The same catch-up policy as the SQLite store.
            let Due {
                latest,
                missed,
                following,
                trigger,
            } = due_occurrence(&job, first, now, next);
            let inserted = tx
                .query_opt(
                    "INSERT INTO cron_runs (job_id, scheduled_for, trigger, owner, lease_until, started_at, status, missed)
                     VALUES ($1, $2, $3, $4, $5, $6, 'running', $7)
                     ON CONFLICT (job_id, scheduled_for) DO NOTHING
                     RETURNING id",
                    &[&job.id, &latest, &trigger, &owner, &lease_until, &now, &missed],
                )
                .map_err(db_err)?;
            tx.execute(
                "UPDATE cron_jobs SET next_run = $2, last_run = $3 WHERE id = $1",
                &[&job.id, &following, &latest],
            )
            .map_err(db_err)?;
            if let Some(row) = inserted {
                claims.push(Claim {
                    run_id: row.get(0),
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
        Ok(self
            .conn()?
            .query_one(
                "INSERT INTO cron_runs (job_id, scheduled_for, trigger, owner, lease_until, started_at, status)
                 VALUES ($1, NULL, 'manual', $2, $3, $4, 'running') RETURNING id",
                &[&job.id, &owner, &lease_until, &now],
            )
            .map_err(db_err)?
            .get(0))
    }

    fn renew(&self, run_id: i64, owner: &str, lease_until: i64) -> Result<bool, ToolError> {
        let changed = self
            .conn()?
            .execute(
                "UPDATE cron_runs SET lease_until = $3
                 WHERE id = $1 AND owner = $2 AND status = 'running'",
                &[&run_id, &owner, &lease_until],
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
                "UPDATE cron_runs SET finished_at = $3, status = $4, exit_code = $5, output = $6
                 WHERE id = $1 AND owner = $2 AND status = 'running'",
                &[
                    &run_id,
                    &owner,
                    &finished_at,
                    &status.as_str(),
                    &exit_code,
                    &output,
                ],
            )
            .map_err(db_err)?;
        Ok(changed == 1)
    }

    fn expire_leases(&self, workspace: &str, now: i64) -> Result<Vec<Run>, ToolError> {
        // One statement: the row lock it takes means a run is reported by exactly one daemon.
        Ok(self
            .conn()?
            .query(
                &format!(
                    "UPDATE cron_runs SET status = 'abandoned', finished_at = $2,
                         output = output || '[the daemon `' || owner
                             || '` stopped before this run finished; its lease expired and the run was not repeated]'
                     WHERE status = 'running' AND lease_until < $2
                       AND job_id IN (SELECT id FROM cron_jobs WHERE workspace = $1)
                     RETURNING {RUN_COLUMNS}"
                ),
                &[&workspace, &now],
            )
            .map_err(db_err)?
            .iter()
            .map(run_from_row)
            .collect())
    }

    fn runs(&self, job_id: i64, limit: usize) -> Result<Vec<Run>, ToolError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        Ok(self
            .conn()?
            .query(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM cron_runs WHERE job_id = $1 ORDER BY id DESC LIMIT $2"
                ),
                &[&job_id, &limit],
            )
            .map_err(db_err)?
            .iter()
            .map(run_from_row)
            .collect())
    }

    fn next_due(&self, workspace: &str) -> Result<Option<i64>, ToolError> {
        Ok(self
            .conn()?
            .query_one(
                "SELECT min(next_run) FROM cron_jobs WHERE workspace = $1 AND NOT paused",
                &[&workspace],
            )
            .map_err(db_err)?
            .get(0))
    }
}
