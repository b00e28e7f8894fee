-- Schema version 2: embedding cache and the index that finds drawers
-- lacking a vector of the current model (re-embedding, backfill).
--
-- embedding_cache holds vectors of texts that are not (or no longer) stored
-- in a drawer, keyed by (workspace, model, content hash); vectors of stored
-- drawers are found in the drawers themselves. It is a cache: deleting it
-- loses nothing but time.

CREATE TABLE embedding_cache (
    workspace_id TEXT NOT NULL,
    model        TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector       BLOB NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (workspace_id, model, content_hash)
) WITHOUT ROWID;

CREATE INDEX drawers_embedding_model ON drawers (workspace_id, embedding_model, content_hash);
