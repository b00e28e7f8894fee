-- Schema version 6: background work shared by several processes.
--
-- Cold-path claims: a worker marks the raw drawers it takes (`claimed_by`)
-- until a deadline (`claimed_until`); a claim whose deadline passed may be
-- taken by another worker, and only the holder of a live claim can
-- complete it. Periodic jobs: `job_ticks` records each (job, tick) that
-- ran, so a tick's job runs once however many processes reach it;
-- `job_locks` keeps one running instance per job at a time (with a lease,
-- so a crashed holder does not block the job forever).

ALTER TABLE drawers ADD COLUMN claimed_by TEXT;
ALTER TABLE drawers ADD COLUMN claimed_until TEXT;

CREATE TABLE job_ticks (
    job        TEXT NOT NULL,
    tick       INTEGER NOT NULL,
    holder     TEXT NOT NULL,
    started_at TEXT NOT NULL,
    PRIMARY KEY (job, tick)
) WITHOUT ROWID;

CREATE TABLE job_locks (
    job         TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    expires_at  TEXT NOT NULL
) WITHOUT ROWID;
