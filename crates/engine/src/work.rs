//! Background work that every process on a palace shares (SPEC §6, seed
//! 0's cold path, seed 4's scheduling).
//!
//! **process** — the cold path without an LLM: a worker claims a batch of
//! raw drawers (the store guarantees no two live claims on one drawer,
//! across processes), gives each a memory type when it has none
//! (heuristic classifier), extracts entities and facts when none were
//! extracted at ingestion (mined and raw drawers), and completes the claim
//! as `processed` (tier `heuristic`). A failure puts the drawer back as
//! raw with one more retry, and after [`MAX_RETRIES`] marks it `failed`.
//! Any number of processes may run it at once: claims split the work.
//!
//! **Periodic jobs** run once per wall-clock tick across all processes:
//! ticks are counted from the Unix epoch in whole periods, so every
//! process computes the same tick at the same moment whenever it started,
//! and [`Palace::run_periodic`] lets exactly one of them run each tick's
//! job (the store's job lock). `maintain` (daily) decays the importance of
//! old, idle drawers and expires episodic summaries past their TTL.

use std::time::Duration;

use mempalace_core::classify::classify;
use mempalace_core::extract::KnownNames;
use mempalace_core::{Drawer, DrawerId, DrawerState, PipelineTier, Timestamp};

use crate::error::EngineResult;
use crate::palace::Palace;

/// Raw drawers claimed per batch.
pub const PROCESS_BATCH: usize = 64;
/// How long a claim lasts; a worker that dies loses its claims after this.
pub const CLAIM_LEASE: Duration = Duration::from_secs(300);
/// Attempts before a drawer is marked `failed`.
pub const MAX_RETRIES: u32 = 3;
/// Decay factor per `maintain` run (seed 0: about a two-month half-life).
pub const DECAY_FACTOR: f64 = 0.98;
/// Importance never decays below this.
pub const DECAY_FLOOR: f64 = 0.3;
/// Only drawers filed longer ago than this decay.
pub const DECAY_AGE: Duration = Duration::from_secs(30 * 86_400);
/// …and not accessed within this.
pub const DECAY_IDLE: Duration = Duration::from_secs(7 * 86_400);

/// A job run on wall-clock-aligned ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeriodicJob {
    /// Its name (the lock and tick key).
    pub name: &'static str,
    /// Its period.
    pub every: Duration,
}

/// The cold path, every minute (every process takes part through claims).
pub const PROCESS: PeriodicJob = PeriodicJob { name: "process", every: Duration::from_secs(60) };
/// Decay and TTL, daily at midnight UTC (one process per day).
pub const MAINTAIN: PeriodicJob = PeriodicJob { name: "maintain", every: Duration::from_secs(86_400) };

/// The tick `at` falls in: whole periods since the Unix epoch.
pub fn tick_of(at: Timestamp, every: Duration) -> i64 {
    let period = i64::try_from(every.as_millis()).unwrap_or(i64::MAX).max(1);
    at.timestamp_millis().div_euclid(period)
}

/// When tick `tick` starts.
pub fn tick_start(tick: i64, every: Duration) -> Timestamp {
    let period = i64::try_from(every.as_millis()).unwrap_or(i64::MAX).max(1);
    Timestamp::from_timestamp_millis(tick.saturating_mul(period)).unwrap_or(Timestamp::MAX_UTC)
}

/// What one `process` pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessReport {
    /// Drawers claimed.
    pub claimed: usize,
    /// Drawers processed and completed by this worker.
    pub processed: Vec<DrawerId>,
    /// Drawers put back as raw after a failure (another retry to come).
    pub retried: usize,
    /// Drawers marked failed after their last retry.
    pub failed: usize,
    /// Claims that expired and went to another worker before completion.
    pub lost: usize,
}

impl ProcessReport {
    fn absorb(&mut self, other: ProcessReport) {
        self.claimed += other.claimed;
        self.processed.extend(other.processed);
        self.retried += other.retried;
        self.failed += other.failed;
        self.lost += other.lost;
    }
}

/// What one `maintain` run did in a workspace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaintainReport {
    /// Drawers whose importance decayed.
    pub decayed: usize,
    /// Episodic summaries removed at the end of their TTL.
    pub expired: usize,
}

impl Palace {
    /// One batch of the cold path in this workspace (see the module doc).
    pub fn process_batch(&self, worker: &str, limit: usize) -> EngineResult<ProcessReport> {
        let now = self.now();
        let until = now + chrono::TimeDelta::from_std(CLAIM_LEASE).unwrap_or(chrono::TimeDelta::MAX);
        let claimed = self.store().claim_raw_drawers(self.workspace(), worker, limit, now, until)?;
        let mut report = ProcessReport { claimed: claimed.len(), ..ProcessReport::default() };
        if claimed.is_empty() {
            return Ok(report);
        }
        let known = KnownNames::new(self.store().entity_names(self.workspace())?);
        let mut outcomes: Vec<(Drawer, DrawerState)> = Vec::with_capacity(claimed.len());
        for mut drawer in claimed {
            let state = match self.process_one(&mut drawer, &known) {
                Ok(()) => DrawerState::Processed,
                Err(error) => {
                    drawer.retry_count += 1;
                    tracing::warn!(%error, drawer = %drawer.id, retry = drawer.retry_count, "processing a drawer failed");
                    if drawer.retry_count >= MAX_RETRIES { DrawerState::Failed } else { DrawerState::Raw }
                }
            };
            drawer.state = state;
            drawer.updated_at = now;
            outcomes.push((drawer, state));
        }
        let drawers: Vec<Drawer> = outcomes.iter().map(|(d, _)| d.clone()).collect();
        let completed: std::collections::HashSet<DrawerId> =
            self.store().complete_claims(self.workspace(), worker, &drawers)?.into_iter().collect();
        for (drawer, state) in outcomes {
            if !completed.contains(&drawer.id) {
                report.lost += 1;
                continue;
            }
            match state {
                DrawerState::Processed => report.processed.push(drawer.id),
                DrawerState::Failed => report.failed += 1,
                _ => report.retried += 1,
            }
        }
        Ok(report)
    }

    /// Processes raw drawers in every workspace of the palace until none is
    /// left unclaimed.
    pub fn process_all(&self, worker: &str) -> EngineResult<ProcessReport> {
        let mut total = ProcessReport::default();
        for workspace in self.store().workspaces()? {
            let palace = self.for_workspace(workspace);
            loop {
                let report = palace.process_batch(worker, PROCESS_BATCH)?;
                let done = report.claimed == 0;
                total.absorb(report);
                if done {
                    break;
                }
            }
        }
        Ok(total)
    }

    fn process_one(&self, drawer: &mut Drawer, known: &KnownNames) -> EngineResult<()> {
        if drawer.memory_type.is_none() {
            drawer.memory_type = Some(classify(drawer.content.as_str()).memory_type);
        }
        drawer.pipeline_tier = PipelineTier::Heuristic;
        if drawer.entities.is_empty() {
            let extraction = self.extract_for(drawer, known);
            self.record_extraction(drawer, &extraction)?;
        }
        Ok(())
    }

    /// Decay and TTL in every workspace (see [`MAINTAIN`]).
    pub fn maintain_all(&self) -> EngineResult<MaintainReport> {
        let now = self.now();
        let ago = |d: Duration| now - chrono::TimeDelta::from_std(d).unwrap_or(chrono::TimeDelta::MAX);
        let mut report = MaintainReport::default();
        for workspace in self.store().workspaces()? {
            report.decayed += self.store().decay_importance(
                &workspace,
                ago(DECAY_AGE),
                ago(DECAY_IDLE),
                DECAY_FACTOR,
                DECAY_FLOOR,
            )?;
            report.expired += self.store().expire_episodic_summaries(&workspace, now)?;
        }
        Ok(report)
    }

    /// Runs `work` as `job`'s run for the current tick when this process
    /// wins it: `Ok(None)` when another process runs or ran this tick.
    /// The job's lock is released however `work` ends.
    pub fn run_periodic<T>(
        &self,
        job: &PeriodicJob,
        holder: &str,
        work: impl FnOnce(&Palace) -> EngineResult<T>,
    ) -> EngineResult<Option<T>> {
        let now = self.now();
        let tick = tick_of(now, job.every);
        // The lease outlives any sane run; it only matters when the holder dies.
        let lease = job.every.max(Duration::from_secs(600));
        if !self.store().try_start_job(job.name, tick, holder, lease, now)? {
            return Ok(None);
        }
        tracing::info!(job = job.name, tick, holder, "periodic job started");
        let outcome = work(self);
        if let Err(error) = self.store().finish_job(job.name, holder) {
            tracing::warn!(%error, job = job.name, "releasing the job lock failed (it expires by itself)");
        }
        outcome.map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_aligned_to_the_wall_clock() {
        let at = |text: &str| chrono::DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&chrono::Utc);
        let minute = Duration::from_secs(60);
        assert_eq!(tick_of(at("2026-11-23T10:00:00Z"), minute), tick_of(at("2026-11-23T10:00:59.999Z"), minute));
        assert_eq!(tick_of(at("2026-11-23T10:01:00Z"), minute), tick_of(at("2026-11-23T10:00:00Z"), minute) + 1);
        let tick = tick_of(at("2026-11-23T10:00:30Z"), minute);
        assert_eq!(tick_start(tick, minute), at("2026-11-23T10:00:00Z"));
        let day = Duration::from_secs(86_400);
        assert_eq!(tick_start(tick_of(at("2026-11-23T17:45:00Z"), day), day), at("2026-11-23T00:00:00Z"));
        assert_eq!(tick_of(at("1969-12-31T23:59:59Z"), minute), -1, "before the epoch, ticks still floor");
    }
}
