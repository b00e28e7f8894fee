-- Schema version 8: place keys, and a place index of each model's vectors.
--
-- A search restricted to a few wings or rooms scans their drawers
-- exactly, and the heap holds a wing's drawers wherever they were filed:
-- 5,000 drawers of one wing of an interleaved palace sat on 4,964 pages,
-- and visiting them cost as much as searching the whole palace through
-- HNSW. A B-tree that holds each active drawer's vector under a key of
-- its place lets the scan read a wing's vectors from a few index pages
-- in place order, without visiting the heap (an index-only scan, on the
-- pages autovacuum has marked all-visible).
--
-- The keys are 64-bit hashes, not the names: an index entry is at most
-- 2,704 bytes and names may be 128 characters. They are stored generated
-- columns, because PostgreSQL scans an index without the heap only when
-- every column a query names is in it, and an expression key names the
-- columns it is computed from. The wing's key covers its workspace; the
-- owner's key is NULL for a shared drawer, so a viewer's own drawers come
-- from the same scan. A search checks the names of what it found (a
-- collision costs a candidate, never a wrong result).
--
-- Adding the columns rewrites the table once (an exclusive lock while it
-- runs). The place index of each model of at most 600 dimensions (wider
-- vectors do not fit an entry) is made by `vectors::create_index`, with
-- the model's HNSW index; for the models already stored, `schema::migrate`
-- makes them after the migrations (`vectors::create_missing_indexes`).

-- The wing's key, defined once: the column below stores it and a search
-- computes the keys of the wings it names with it.
CREATE OR REPLACE FUNCTION mempalace_wing_key(workspace text, wing text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT hashtextextended(workspace || E'\x1f' || wing, 0) $$;

ALTER TABLE drawers
    ADD COLUMN IF NOT EXISTS wing_key bigint GENERATED ALWAYS AS (mempalace_wing_key(workspace_id, wing)) STORED,
    ADD COLUMN IF NOT EXISTS room_key bigint GENERATED ALWAYS AS (hashtextextended(room, 0)) STORED,
    ADD COLUMN IF NOT EXISTS owner_key bigint GENERATED ALWAYS AS (hashtextextended(owner_user_id, 0)) STORED;
