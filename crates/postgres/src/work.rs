//! Background work shared by many processes.
//!
//! Cold-path claims: `SELECT … FOR UPDATE SKIP LOCKED` picks raw drawers
//! that no live claim holds and that no other transaction is claiming at
//! this moment, and marks them with the worker and a deadline, in one
//! transaction. Concurrent claimers therefore split the work instead of
//! queueing on each other, and never receive the same drawer. Completion
//! checks the holder, so a worker whose claim expired and was taken over
//! cannot overwrite the new holder's outcome.
//!
//! Periodic jobs (seed 4): every process computes the same wall-clock
//! ticks; at a tick each calls [`try_start_job`], which takes a session
//! advisory lock for the job (`pg_try_advisory_lock`, keyed by schema and
//! job name) on a dedicated connection and records `(job, tick)` in
//! `job_ticks`. Only the process that gets the lock and inserts the row
//! runs the job; the lock stays held on that connection until
//! [`release_job`] (so a long run is never overlapped by the next tick's),
//! and PostgreSQL drops it by itself if the process dies. The `(job, tick)`
//! key makes "once per tick" hold even when a fast run has already released
//! the lock before a slower process reaches the same tick.

use deadpool_postgres::Transaction;
use mempalace_core::session::EpisodicSummary;
use mempalace_core::{Drawer, DrawerId, Timestamp, WorkspaceId};
use mempalace_store::{JobRun, PipelineCounts, PruneCandidate, SessionActivity, StoreError, StoreResult};
use serde_json::Value;

use crate::error::Context;
use crate::records::attach_tags;
use crate::row::{drawer_columns_of, drawer_from_row, drawer_id, limit, vocab};

pub(crate) async fn decay_importance(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    filed_before: &Timestamp,
    idle_since: &Timestamp,
    factor: f64,
    floor: f64,
) -> StoreResult<usize> {
    let changed = tx
        .execute(
            "UPDATE drawers SET importance = greatest(importance * $4, $5) WHERE workspace_id = $1 \
             AND status = 'active' AND filed_at < $2 AND (last_accessed_at IS NULL OR last_accessed_at < $3) \
             AND importance > $5",
            &[&workspace.as_str(), filed_before, idle_since, &factor, &floor],
        )
        .await
        .ctx("decaying importance")?;
    Ok(usize::try_from(changed).unwrap_or(usize::MAX))
}

pub(crate) async fn session_activity(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    idle_before: &Timestamp,
    except_wing: Option<&str>,
) -> StoreResult<Vec<SessionActivity>> {
    let rows = tx
        .query(
            "SELECT session_id, count(*), min(filed_at), max(filed_at), max(owner_user_id), max(added_by_agent), \
             max(updated_at) \
             FROM drawers WHERE workspace_id = $1 AND session_id IS NOT NULL AND status = 'active' \
             AND ($3::text IS NULL OR wing <> $3) GROUP BY session_id HAVING max(filed_at) < $2 \
             ORDER BY max(filed_at), session_id",
            &[&workspace.as_str(), idle_before, &except_wing],
        )
        .await
        .ctx("reading session activity")?;
    Ok(rows
        .into_iter()
        .map(|row| SessionActivity {
            session_id: row.get(0),
            drawers: u64::try_from(row.get::<_, i64>(1)).unwrap_or(0),
            first_filed_at: row.get(2),
            last_filed_at: row.get(3),
            owner_user_id: row.get(4),
            agent: row.get(5),
            last_updated_at: row.get(6),
        })
        .collect())
}

pub(crate) async fn prune_candidates(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    below: f64,
    max_accesses: u64,
    filed_before: &Timestamp,
    keep: u64,
) -> StoreResult<Vec<PruneCandidate>> {
    let c = "finding drawers to prune";
    let active: i64 = tx
        .query_one(
            "SELECT coalesce(sum(drawers), 0)::bigint FROM room_counts WHERE workspace_id = $1",
            &[&workspace.as_str()],
        )
        .await
        .ctx(c)?
        .get(0);
    let room = u64::try_from(active).unwrap_or(0).saturating_sub(keep);
    if room == 0 {
        return Ok(Vec::new());
    }
    let rows = tx
        .query(
            "SELECT id, importance, access_count FROM drawers WHERE workspace_id = $1 AND status = 'active' \
             AND importance < $2 AND access_count < $3 AND filed_at < $4 ORDER BY importance, filed_at, id LIMIT $5",
            &[
                &workspace.as_str(),
                &below,
                &i64::try_from(max_accesses).unwrap_or(i64::MAX),
                filed_before,
                &i64::try_from(room).unwrap_or(i64::MAX),
            ],
        )
        .await
        .ctx(c)?;
    rows.into_iter()
        .map(|row| {
            Ok(PruneCandidate {
                id: drawer_id(row.get(0))?,
                importance: row.get(1),
                access_count: u64::try_from(row.get::<_, i64>(2)).unwrap_or(0),
            })
        })
        .collect()
}

pub(crate) async fn save_episodic_summary(tx: &Transaction<'_>, summary: &EpisodicSummary) -> StoreResult<()> {
    crate::records::write_episodic_summary(tx, summary, true).await.map(|_| ())
}

pub(crate) async fn mark_episodes_promoted(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    ids: &[String],
    at: &Timestamp,
) -> StoreResult<usize> {
    let changed = tx
        .execute(
            "UPDATE episodic_summaries SET promoted_at = $3 \
             WHERE workspace_id = $1 AND id = ANY($2) AND promoted_at IS NULL",
            &[&workspace.as_str(), &ids, at],
        )
        .await
        .ctx("marking episodes promoted")?;
    Ok(usize::try_from(changed).unwrap_or(usize::MAX))
}

pub(crate) async fn expire_episodic_summaries(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    now: &Timestamp,
) -> StoreResult<usize> {
    let removed = tx
        .execute(
            "DELETE FROM episodic_summaries WHERE workspace_id = $1 AND expires_at < $2",
            &[&workspace.as_str(), now],
        )
        .await
        .ctx("expiring episodic summaries")?;
    Ok(usize::try_from(removed).unwrap_or(usize::MAX))
}

const JOB_LOCK_KEY: &str = "hashtext(current_schema() || '/mempalace/job/' || $1)";

pub(crate) async fn claim_raw_drawers(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    worker: &str,
    count: usize,
    now: &Timestamp,
    until: &Timestamp,
) -> StoreResult<Vec<Drawer>> {
    let sql = format!(
        "WITH picked AS ( \
             SELECT workspace_id, id FROM drawers \
             WHERE workspace_id = $1 AND state = 'raw' AND (claimed_until IS NULL OR claimed_until < $2) \
             ORDER BY filed_at, id LIMIT $3 FOR UPDATE SKIP LOCKED) \
         UPDATE drawers d SET claimed_by = $4, claimed_until = $5 FROM picked \
         WHERE d.workspace_id = picked.workspace_id AND d.id = picked.id \
         RETURNING {}",
        drawer_columns_of("d")
    );
    let stmt = tx.prepare_cached(&sql).await.ctx("claiming raw drawers")?;
    let rows = tx
        .query(&stmt, &[&workspace.as_str(), now, &limit(count), &worker, until])
        .await
        .ctx("claiming raw drawers")?;
    let mut drawers = rows.iter().map(|row| drawer_from_row(row, 0)).collect::<StoreResult<Vec<_>>>()?;
    drawers.sort_by(|a, b| a.filed_at.cmp(&b.filed_at).then_with(|| a.id.cmp(&b.id)));
    attach_tags(tx, workspace, &mut drawers).await?;
    Ok(drawers)
}

pub(crate) async fn complete_claims(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    worker: &str,
    drawers: &[Drawer],
) -> StoreResult<Vec<DrawerId>> {
    let c = "completing claims";
    let stmt = tx
        .prepare_cached(
            "UPDATE drawers SET state = $3, pipeline_tier = $4, memory_type = $5, importance = $6, \
             confidence = $7, summary = $8, entities = $9, entity_count = $10, triple_count = $11, \
             retry_count = $12, updated_at = $13, hall = $15, cluster_id = $16, claimed_by = NULL, \
             claimed_until = NULL WHERE workspace_id = $1 AND id = $2 AND claimed_by = $14",
        )
        .await
        .ctx(c)?;
    let forget =
        tx.prepare_cached("DELETE FROM entity_mentions WHERE workspace_id = $1 AND drawer_id = $2").await.ctx(c)?;
    let mut done = Vec::new();
    for drawer in drawers {
        if drawer.workspace_id != *workspace {
            return Err(StoreError::invalid(format!("drawer {} is not in workspace {workspace}", drawer.id)));
        }
        let entities = Value::Array(drawer.entities.iter().cloned().map(Value::String).collect());
        let changed = tx
            .execute(
                &stmt,
                &[
                    &workspace.as_str(),
                    &drawer.id.as_str(),
                    &drawer.state.as_str(),
                    &drawer.pipeline_tier.as_str(),
                    &drawer.memory_type.map(|t| t.as_str()),
                    &drawer.importance.get(),
                    &drawer.confidence.get(),
                    &drawer.summary,
                    &entities,
                    &i32::try_from(drawer.entity_count).unwrap_or(i32::MAX),
                    &i32::try_from(drawer.triple_count).unwrap_or(i32::MAX),
                    &i32::try_from(drawer.retry_count).unwrap_or(i32::MAX),
                    &drawer.updated_at,
                    &worker,
                    &drawer.hall.as_ref().map(|h| h.as_str()),
                    &drawer.cluster_id.as_ref().map(|c| c.as_str()),
                ],
            )
            .await
            .ctx(c)?;
        if changed == 0 {
            continue;
        }
        tx.execute(&forget, &[&workspace.as_str(), &drawer.id.as_str()]).await.ctx(c)?;
        crate::kg::write_mentions(tx, workspace, &drawer.id, &drawer.entities).await?;
        done.push(drawer.id.clone());
    }
    Ok(done)
}

/// Takes the job's advisory lock on `client` and records the tick; true
/// when this caller runs the tick's job (the lock then stays held on
/// `client`). Otherwise nothing is held.
pub(crate) async fn try_start_job(
    client: &deadpool_postgres::Object,
    job: &str,
    tick: i64,
    holder: &str,
    now: &Timestamp,
) -> StoreResult<bool> {
    let locked: bool = client
        .query_one(&format!("SELECT pg_try_advisory_lock({JOB_LOCK_KEY})"), &[&job])
        .await
        .ctx("locking a job")?
        .get(0);
    if !locked {
        return Ok(false);
    }
    let inserted = client
        .execute(
            "INSERT INTO job_ticks (job, tick, holder, started_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
            &[&job, &tick, &holder, now],
        )
        .await;
    match inserted {
        Ok(1) => Ok(true),
        Ok(_) => {
            unlock(client, job).await;
            Ok(false)
        }
        Err(error) => {
            unlock(client, job).await;
            Err(crate::error::map("recording a job tick", error))
        }
    }
}

async fn unlock(client: &deadpool_postgres::Object, job: &str) -> bool {
    match client.query_one(&format!("SELECT pg_advisory_unlock({JOB_LOCK_KEY})"), &[&job]).await {
        Ok(row) => row.get(0),
        Err(error) => {
            tracing::warn!(job, error = %crate::error::describe(&error), "releasing a job lock failed");
            false
        }
    }
}

/// Releases a job's lock and returns the connection to the pool; a
/// connection that cannot release it is closed instead (which releases it).
pub(crate) async fn release_job(client: deadpool_postgres::Object, job: &str) {
    if !unlock(&client, job).await {
        drop(deadpool_postgres::Object::take(client));
    }
}

/// Marks `holder`'s unfinished runs of `job` finished (any connection:
/// the advisory lock is released separately).
pub(crate) async fn mark_finished(client: &deadpool_postgres::Object, job: &str, holder: &str) -> StoreResult<()> {
    client
        .execute(
            "UPDATE job_ticks SET finished = true WHERE job = $1 AND holder = $2 AND NOT finished",
            &[&job, &holder],
        )
        .await
        .ctx("finishing a job")?;
    Ok(())
}

/// The cold path's counts: an index-only grouped scan of
/// `drawers_pipeline`, the raw drawers' rows for live claims, the
/// room-count aggregate for memories, and the latest tick per job.
pub(crate) async fn pipeline_counts(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    now: &Timestamp,
) -> StoreResult<PipelineCounts> {
    let c = "counting the cold path";
    let mut counts = PipelineCounts::default();
    let rows = tx
        .query(
            "SELECT state, pipeline_tier, status, count(*) FROM drawers WHERE workspace_id = $1 \
             GROUP BY state, pipeline_tier, status",
            &[&workspace.as_str()],
        )
        .await
        .ctx(c)?;
    for row in rows {
        let count: i64 = row.get(3);
        counts.add_group(
            vocab(row.get(0), "drawer state")?,
            vocab(row.get(1), "pipeline tier")?,
            vocab(row.get(2), "drawer status")?,
            u64::try_from(count).unwrap_or(0),
        );
    }
    let claimed: i64 = tx
        .query_one(
            "SELECT count(*) FROM drawers WHERE workspace_id = $1 AND state = 'raw' AND claimed_until >= $2",
            &[&workspace.as_str(), now],
        )
        .await
        .ctx(c)?
        .get(0);
    counts.claimed = u64::try_from(claimed).unwrap_or(0);
    let memories: i64 = tx
        .query_one(
            "SELECT coalesce(sum(drawers), 0)::bigint FROM room_counts WHERE workspace_id = $1 AND wing = 'memories'",
            &[&workspace.as_str()],
        )
        .await
        .ctx(c)?
        .get(0);
    counts.memories = u64::try_from(memories).unwrap_or(0);
    // A skip scan of the primary key (job, tick): one probe per job name
    // and one for its highest tick (DISTINCT ON sorts every row: 142 ms at
    // 100,000 ticks, against 0.2 ms).
    let rows = tx
        .query(
            "WITH RECURSIVE jobs (job) AS ( \
                 SELECT min(job) FROM job_ticks \
                 UNION ALL SELECT (SELECT min(t.job) FROM job_ticks t WHERE t.job > jobs.job) FROM jobs \
                 WHERE jobs.job IS NOT NULL) \
             SELECT last.job, last.tick, last.holder, last.started_at, last.finished FROM jobs, LATERAL ( \
                 SELECT job, tick, holder, started_at, finished FROM job_ticks t WHERE t.job = jobs.job \
                 ORDER BY tick DESC LIMIT 1) last \
             ORDER BY last.job",
            &[],
        )
        .await
        .ctx(c)?;
    counts.last_runs = rows
        .iter()
        .map(|row| JobRun {
            job: row.get(0),
            tick: row.get(1),
            holder: row.get(2),
            started_at: row.get(3),
            finished: row.get(4),
        })
        .collect();
    Ok(counts)
}
