-- Schema version 8: the cold path's counts in `status`.
--
-- `drawers_pipeline` covers the grouped count of drawers per (state,
-- pipeline tier, status) and the count of raw drawers under a live claim,
-- so `status` reads one index instead of every drawer row (with their
-- content and vectors): on 200,000 drawers of 800 characters, 0.4–0.7 s as
-- a table scan with a temporary B-tree, 0.04 s over this index.
--
-- `job_ticks.finished`: whether the run's holder ended it (`finish_job`),
-- so `status` can tell a finished run from one still running or whose
-- holder died. Runs recorded before this version count as finished unless
-- their holder still holds the job's lock.

CREATE INDEX drawers_pipeline ON drawers (workspace_id, state, pipeline_tier, status, claimed_until);

ALTER TABLE job_ticks ADD COLUMN finished INTEGER NOT NULL DEFAULT 0 CHECK (finished IN (0, 1));
UPDATE job_ticks SET finished = 1
    WHERE NOT EXISTS (SELECT 1 FROM job_locks l WHERE l.job = job_ticks.job AND l.holder = job_ticks.holder);
