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
-- runs). New models get their place index with their HNSW index
-- (`vectors::create_index`); this creates it for the models already
-- stored, of at most 600 dimensions (wider vectors do not fit an entry).
-- The name is `drawers_place_vec_` and the first 16 hex digits of the
-- model name's SHA-256, as the HNSW index's.

-- The wing's key, defined once: the column below stores it and a search
-- computes the keys of the wings it names with it.
CREATE OR REPLACE FUNCTION mempalace_wing_key(workspace text, wing text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT hashtextextended(workspace || E'\x1f' || wing, 0) $$;

ALTER TABLE drawers
    ADD COLUMN IF NOT EXISTS wing_key bigint GENERATED ALWAYS AS (mempalace_wing_key(workspace_id, wing)) STORED,
    ADD COLUMN IF NOT EXISTS room_key bigint GENERATED ALWAYS AS (hashtextextended(room, 0)) STORED,
    ADD COLUMN IF NOT EXISTS owner_key bigint GENERATED ALWAYS AS (hashtextextended(owner_user_id, 0)) STORED;

-- The models are listed first: an index cannot be created on a table a
-- loop's query still has open.
DO $migration$
DECLARE
    models text[];
    model text;
BEGIN
    SELECT coalesce(array_agg(embedding_model), '{}') INTO models FROM (
        SELECT embedding_model FROM drawers
        WHERE embedding IS NOT NULL AND embedding_model IS NOT NULL
        GROUP BY embedding_model HAVING max(vector_dims(embedding)) <= 600
    ) narrow;
    FOREACH model IN ARRAY models LOOP
        EXECUTE format(
            'CREATE INDEX IF NOT EXISTS %I ON drawers (wing_key, room_key) INCLUDE (seq, owner_key, embedding) '
            'WHERE embedding_model = %L AND status = ''active''',
            'drawers_place_vec_' || substr(encode(sha256(convert_to(model, 'UTF8')), 'hex'), 1, 16),
            model);
    END LOOP;
END
$migration$;
