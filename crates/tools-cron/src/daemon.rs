//! The scheduler behind `toolshed cron daemon`: claims due occurrences, runs them through the
//! [`tool_core::JobRunner`], and records the outcome.
//!
//! Exactly once: a run is leased in the database (in the same `BEGIN IMMEDIATE` transaction
//! that advances the job's next run) before it starts, so neither a restart nor a second daemon
//! on the same database can start the same occurrence again. A running lease is renewed every
//! 20 s; if its daemon dies, the lease lapses after a minute and the next tick of any daemon
//! marks the run `abandoned` — reported in `cron_runs`, never re-run silently.
//!
//! Catch-up: occurrences that fell due while no daemon ran are not lost and not replayed one by
//! one; the job runs once for the latest of them (trigger `catch_up`), and the run records how
//! many it covers.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::task::JoinSet;
use tool_core::{CancellationToken, ToolContext, ToolError};

use crate::Config;
use crate::core::{Cron, LEASE, next_occurrence, owner_id, workspace_key};
use crate::store::{Run, RunStatus};

/// Where the daemon gets the time from (tests drive it by hand).
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now.
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// What one tick did.
#[derive(Debug, Clone, Default)]
pub struct TickReport {
    /// Runs started, with how they ended.
    pub finished: Vec<FinishedRun>,
    /// Runs of dead daemons that were marked abandoned.
    pub abandoned: Vec<Run>,
}

/// A run the daemon started and saw end.
#[derive(Debug, Clone)]
pub struct FinishedRun {
    /// The job.
    pub job_id: i64,
    /// The run.
    pub run_id: i64,
    /// The occurrence (Unix time).
    pub scheduled_for: i64,
    /// How it ended.
    pub status: RunStatus,
    /// The exit code.
    pub exit_code: Option<i32>,
}

/// Runs the due jobs of one workspace.
#[derive(Debug, Clone)]
pub struct Daemon {
    cron: Arc<Cron>,
    ctx: ToolContext,
    workspace: String,
    owner: String,
    clock: Arc<dyn Clock>,
}

impl Daemon {
    /// A daemon for the workspace of `ctx`, whose policy and limits every run uses.
    pub fn new(config: &Config, ctx: ToolContext) -> Daemon {
        Daemon {
            cron: Arc::new(Cron::new(config)),
            workspace: workspace_key(&ctx),
            ctx,
            owner: owner_id("daemon"),
            clock: Arc::new(SystemClock),
        }
    }

    /// The same daemon on another clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Daemon {
        self.clock = clock;
        self
    }

    /// This daemon's lease owner id.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Claims everything due now, runs it (concurrently) and waits for the runs to end.
    pub async fn tick(&self) -> Result<TickReport, ToolError> {
        let abandoned = self.expire().await?;
        let mut set = JoinSet::new();
        self.start_due(&mut set).await?;
        let mut finished = Vec::new();
        while let Some(joined) = set.join_next().await {
            if let Ok(Some(run)) = joined {
                finished.push(run);
            }
        }
        finished.sort_by_key(|r| (r.scheduled_for, r.job_id));
        Ok(TickReport {
            finished,
            abandoned,
        })
    }

    /// Runs until `cancel` fires: claims due jobs as they fall due, never waiting more than
    /// `poll` between looks at the database (other processes may add jobs). Runs in flight when
    /// it stops are cancelled and recorded as such.
    pub async fn run(&self, cancel: CancellationToken, poll: Duration) -> Result<(), ToolError> {
        let mut running: JoinSet<Option<FinishedRun>> = JoinSet::new();
        loop {
            for run in self.expire().await? {
                tracing::warn!(run = run.id, job = run.job_id, owner = %run.owner, "a run's daemon died; marked abandoned");
            }
            let n = self.start_due(&mut running).await?;
            if n > 0 {
                tracing::info!(runs = n, "started due jobs");
            }
            while running.try_join_next().is_some() {}
            let store = self.cron.store()?;
            let ws = self.workspace.clone();
            let next = tokio::task::spawn_blocking(move || store.next_due(&ws))
                .await
                .map_err(|_| ToolError::internal("reading the next due time panicked"))??;
            let now = self.clock.now().timestamp();
            let wait = next
                .map(|n| Duration::from_secs(n.saturating_sub(now).max(0) as u64))
                .unwrap_or(poll)
                .min(poll)
                .max(Duration::from_millis(200));
            tokio::select! {
                () = cancel.cancelled() => break,
                () = tokio::time::sleep(wait) => {}
                Some(_) = running.join_next(), if !running.is_empty() => {}
            }
        }
        // Stop: the runs' contexts are children of the daemon's cancellation token.
        self.ctx.cancel.cancel();
        while running.join_next().await.is_some() {}
        Ok(())
    }

    async fn expire(&self) -> Result<Vec<Run>, ToolError> {
        let store = self.cron.store()?;
        let ws = self.workspace.clone();
        let now = self.clock.now().timestamp();
        tokio::task::spawn_blocking(move || store.expire_leases(&ws, now))
            .await
            .map_err(|_| ToolError::internal("expiring leases panicked"))?
    }

    /// Claims due runs and starts each in its own task in `set`; returns how many.
    async fn start_due(&self, set: &mut JoinSet<Option<FinishedRun>>) -> Result<usize, ToolError> {
        let store = self.cron.store()?;
        let ws = self.workspace.clone();
        let owner = self.owner.clone();
        let now = self.clock.now().timestamp();
        let lease_until = now + LEASE.as_secs() as i64;
        let claims = tokio::task::spawn_blocking(move || {
            store.claim_due(&ws, now, &owner, lease_until, &next_occurrence)
        })
        .await
        .map_err(|_| ToolError::internal("claiming due jobs panicked"))??;
        let n = claims.len();
        for claim in claims {
            let cron = Arc::clone(&self.cron);
            let ctx = self.ctx.for_call();
            let owner = self.owner.clone();
            let clock = Arc::clone(&self.clock);
            set.spawn(async move {
                let heartbeat = spawn_heartbeat(&cron, claim.run_id, &owner, &clock);
                let outcome = cron
                    .execute(
                        ctx,
                        &claim.job,
                        claim.run_id,
                        &owner,
                        claim.missed,
                        || clock.now().timestamp(),
                    )
                    .await;
                drop(heartbeat);
                match outcome {
                    Ok(o) => {
                        if !o.recorded {
                            tracing::warn!(run = o.run_id, "the run's lease had expired before it ended; its result was not recorded");
                        }
                        Some(FinishedRun {
                            job_id: claim.job.id,
                            run_id: o.run_id,
                            scheduled_for: claim.scheduled_for,
                            status: o.status,
                            exit_code: o.exit_code,
                        })
                    }
                    Err(e) => {
                        tracing::error!(run = claim.run_id, error = %e, "recording a run failed");
                        None
                    }
                }
            });
        }
        Ok(n)
    }
}

/// Stops the heartbeat when the run's future ends or is dropped (a crash of the task that ran
/// it must not leave a lease renewed forever).
#[derive(Debug)]
pub(crate) struct Heartbeat(tokio::task::JoinHandle<()>);

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Renews a run's lease every third of its length while it runs.
pub(crate) fn spawn_heartbeat(
    cron: &Arc<Cron>,
    run_id: i64,
    owner: &str,
    clock: &Arc<dyn Clock>,
) -> Heartbeat {
    let cron = Arc::clone(cron);
    let owner = owner.to_string();
    let clock = Arc::clone(clock);
    Heartbeat(tokio::spawn(async move {
        loop {
            tokio::time::sleep(LEASE / 3).await;
            let Ok(store) = cron.store() else { return };
            let until = clock.now().timestamp() + LEASE.as_secs() as i64;
            let owner = owner.clone();
            let renewed =
                tokio::task::spawn_blocking(move || store.renew(run_id, &owner, until)).await;
            if !matches!(renewed, Ok(Ok(true))) {
                return;
            }
        }
    }))
}
