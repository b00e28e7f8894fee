-- Schema version 3 of the PostgreSQL backend: the cold path's counts in
-- `status` (the SQLite backend's schema version 8).
--
-- `drawers_pipeline` lets the grouped count of drawers per (state,
-- pipeline tier, status) run as an index-only scan: on 150,000 drawers,
-- 131 ms as a parallel sequential scan of the table (50,000 pages), 39 ms
-- over this index (180 pages). `claimed_until` is left out on purpose: a
-- claim changes only `claimed_by` and `claimed_until`, which no index
-- names, so it stays a HOT update that adds no entry to the GIN and HNSW
-- indexes. Counting live claims reads the raw drawers' rows instead (the
-- backlog, not the palace).
--
-- `job_ticks.finished`: whether the run's holder ended it (`finish_job`).
-- Runs recorded before this version count as finished.

CREATE INDEX drawers_pipeline ON drawers (workspace_id, state, pipeline_tier, status);

ALTER TABLE job_ticks ADD COLUMN finished boolean NOT NULL DEFAULT false;
UPDATE job_ticks SET finished = true;
