-- Schema version 1 of the PostgreSQL backend: the palace data model of
-- SPEC §2, the same tables and semantics as the SQLite backend's schema
-- version 6, in PostgreSQL's types (timestamptz, jsonb, bytea, pgvector's
-- vector, tsvector).
--
-- Every text column compares byte by byte (COLLATE "C"), as SQLite does,
-- whatever the database's locale: ids, names and places sort the same on
-- both backends, and key order is index order.
--
-- Tenancy is in the keys: every table's key starts with workspace_id, and
-- every reference between tables names the workspace too, so no row can
-- point into another tenant.
--
-- Derived structures, all rebuildable from `drawers` (`doctor`):
--   lexemes/lex_len  the lexical index (tsvector, GIN), written with the row;
--   room_counts, hall_counts  visible drawers per place, kept by triggers;
--   palace_counters  the palace revision and the lexical statistics;
--   drawer_tombstones  deletions for change feeds;
--   entity_mentions  which drawer names which entity;
--   the HNSW indexes, one per embedding model (created when the model's
--   first vector is stored, see `vectors.rs`).

CREATE EXTENSION IF NOT EXISTS vector;

-- The words of a drawer: English stemming without stop-word removal (a
-- query of stop words still matches, as with SQLite's porter tokenizer).
CREATE TEXT SEARCH DICTIONARY mempalace_stem (TEMPLATE = snowball, LANGUAGE = english);
CREATE TEXT SEARCH CONFIGURATION mempalace (COPY = english);
ALTER TEXT SEARCH CONFIGURATION mempalace
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH mempalace_stem;

-- Tokens in a lexical vector (positions of every lexeme): BM25's document length.
CREATE FUNCTION mempalace_token_count(v tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0)::integer FROM unnest(v) AS u $$;

CREATE TABLE palace_meta (
    key   text COLLATE "C" PRIMARY KEY,
    value text COLLATE "C" NOT NULL
);

-- One row. `rev` grows with every change a derived index cares about; the
-- row lock each writing transaction takes to bump it also orders those
-- transactions, so revisions become visible in order (a change feed read
-- "after r" never misses a later-committed lower revision).
CREATE TABLE palace_counters (
    id              integer PRIMARY KEY CHECK (id = 1),
    rev             bigint NOT NULL,
    lexical_docs    bigint NOT NULL,
    lexical_tokens  bigint NOT NULL
);
INSERT INTO palace_counters (id, rev, lexical_docs, lexical_tokens) VALUES (1, 0, 0, 0);

CREATE TABLE schema_migrations (
    version    integer PRIMARY KEY,
    applied_at timestamptz NOT NULL
);

CREATE TABLE workspaces (
    id         text COLLATE "C" PRIMARY KEY,
    created_at timestamptz NOT NULL
);

CREATE TABLE drawers (
    seq                 bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    workspace_id        text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id                  text COLLATE "C" NOT NULL,
    wing                text COLLATE "C" NOT NULL,
    room                text COLLATE "C" NOT NULL,
    hall                text COLLATE "C",
    content             text COLLATE "C" NOT NULL,
    content_hash        text COLLATE "C" NOT NULL,
    importance          double precision NOT NULL DEFAULT 3.0 CHECK (importance BETWEEN 0 AND 5),
    memory_type         text COLLATE "C" CHECK (memory_type IN
                            ('decision', 'preference', 'milestone', 'problem', 'emotional', 'fact', 'task')),
    pipeline_tier       text COLLATE "C" NOT NULL DEFAULT 'llm' CHECK (pipeline_tier IN ('heuristic', 'centroid', 'llm')),
    state               text COLLATE "C" NOT NULL DEFAULT 'raw' CHECK (state IN ('raw', 'processed', 'merged', 'failed')),
    summary             text COLLATE "C",
    source_file         text COLLATE "C",
    added_by            text COLLATE "C" NOT NULL,
    added_by_agent      text COLLATE "C",
    owner_user_id       text COLLATE "C",
    filed_at            timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    last_accessed_at    timestamptz,
    access_count        bigint NOT NULL DEFAULT 0,
    superseded_by       text COLLATE "C",
    cluster_id          text COLLATE "C",
    retry_count         integer NOT NULL DEFAULT 0,
    entity_count        integer NOT NULL DEFAULT 0,
    triple_count        integer NOT NULL DEFAULT 0,
    confidence          double precision NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
    decay_rate          double precision NOT NULL DEFAULT 0.01,
    status              text COLLATE "C" NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'superseded', 'invalidated')),
    status_reason       text COLLATE "C",
    session_id          text COLLATE "C",
    context             jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(context) = 'object'),
    perception_type     text COLLATE "C" CHECK (perception_type IN
                            ('visual', 'tactile', 'auditory', 'proprioceptive', 'procedural')),
    perception_data     bytea,
    perception_metadata text COLLATE "C",
    source_mtime        double precision,
    chunk_index         integer,
    line_start          integer,
    line_end            integer,
    content_date        text COLLATE "C",
    entities            jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(entities) = 'array'),
    embedding_model     text COLLATE "C",
    embedding           vector,
    -- Derived: the lexical index entry (written by the store from the
    -- content, CJK pre-segmented) and its token count.
    lexemes             tsvector,
    lex_len             integer NOT NULL DEFAULT 0,
    rev                 bigint NOT NULL DEFAULT 0,
    -- Cold-path claims: which worker holds the drawer, until when.
    claimed_by          text COLLATE "C",
    claimed_until       timestamptz,
    PRIMARY KEY (workspace_id, id)
) WITH (fillfactor = 80);
-- Free space in every page lets access tracking and claims update a row in
-- place (HOT), without new entries in the GIN and HNSW indexes.

CREATE INDEX drawers_place ON drawers (workspace_id, wing, room);
CREATE INDEX drawers_importance ON drawers (workspace_id, importance DESC, filed_at DESC)
    WHERE status = 'active' AND owner_user_id IS NULL;
CREATE INDEX drawers_content_hash ON drawers (workspace_id, content_hash);
CREATE INDEX drawers_source_file ON drawers (workspace_id, source_file) WHERE source_file IS NOT NULL;
CREATE INDEX drawers_raw ON drawers (workspace_id, filed_at) WHERE state = 'raw';
CREATE INDEX drawers_session ON drawers (workspace_id, session_id) WHERE session_id IS NOT NULL;
CREATE INDEX drawers_filed_at ON drawers (workspace_id, filed_at);
CREATE INDEX drawers_embedding_model ON drawers (workspace_id, embedding_model, content_hash);
CREATE INDEX drawers_rev ON drawers (workspace_id, rev);
CREATE INDEX drawers_lexemes ON drawers USING gin (lexemes);

CREATE TABLE drawer_tags (
    workspace_id text COLLATE "C" NOT NULL,
    drawer_id    text COLLATE "C" NOT NULL,
    tag          text COLLATE "C" NOT NULL,
    source       text COLLATE "C" NOT NULL CHECK (source IN ('auto', 'user')),
    PRIMARY KEY (workspace_id, drawer_id, tag),
    FOREIGN KEY (workspace_id, drawer_id) REFERENCES drawers (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX drawer_tags_tag ON drawer_tags (workspace_id, tag);

CREATE TABLE drawer_tombstones (
    workspace_id text COLLATE "C" NOT NULL,
    id           text COLLATE "C" NOT NULL,
    rev          bigint NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
CREATE INDEX drawer_tombstones_rev ON drawer_tombstones (workspace_id, rev);

CREATE TABLE room_counts (
    workspace_id text COLLATE "C" NOT NULL,
    wing         text COLLATE "C" NOT NULL,
    room         text COLLATE "C" NOT NULL,
    drawers      bigint NOT NULL,
    PRIMARY KEY (workspace_id, wing, room)
);

CREATE TABLE hall_counts (
    workspace_id text COLLATE "C" NOT NULL,
    wing         text COLLATE "C" NOT NULL,
    room         text COLLATE "C" NOT NULL,
    hall         text COLLATE "C" NOT NULL,
    drawers      bigint NOT NULL,
    PRIMARY KEY (workspace_id, wing, room, hall)
);

-- The next palace revision (locks the counter row until commit).
CREATE FUNCTION mempalace_next_rev() RETURNS bigint LANGUAGE sql AS $$
    UPDATE palace_counters SET rev = rev + 1 WHERE id = 1 RETURNING rev
$$;

CREATE FUNCTION mempalace_count_place(ws text, w text, r text, h text, delta bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO room_counts AS c (workspace_id, wing, room, drawers) VALUES (ws, w, r, delta)
        ON CONFLICT (workspace_id, wing, room) DO UPDATE SET drawers = c.drawers + delta;
    DELETE FROM room_counts WHERE workspace_id = ws AND wing = w AND room = r AND drawers <= 0;
    IF h IS NOT NULL THEN
        INSERT INTO hall_counts AS c (workspace_id, wing, room, hall, drawers) VALUES (ws, w, r, h, delta)
            ON CONFLICT (workspace_id, wing, room, hall) DO UPDATE SET drawers = c.drawers + delta;
        DELETE FROM hall_counts WHERE workspace_id = ws AND wing = w AND room = r AND hall = h AND drawers <= 0;
    END IF;
END $$;

-- Revisions and token counts, before the row is written.
CREATE FUNCTION mempalace_drawers_before() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.lex_len := coalesce(mempalace_token_count(NEW.lexemes), 0);
        NEW.rev := mempalace_next_rev();
        RETURN NEW;
    END IF;
    IF NEW.lexemes IS DISTINCT FROM OLD.lexemes THEN
        NEW.lex_len := coalesce(mempalace_token_count(NEW.lexemes), 0);
    END IF;
    IF NEW.content IS DISTINCT FROM OLD.content OR NEW.wing IS DISTINCT FROM OLD.wing
        OR NEW.room IS DISTINCT FROM OLD.room OR NEW.hall IS DISTINCT FROM OLD.hall
        OR NEW.status IS DISTINCT FROM OLD.status OR NEW.embedding IS DISTINCT FROM OLD.embedding
        OR NEW.embedding_model IS DISTINCT FROM OLD.embedding_model
        OR NEW.importance IS DISTINCT FROM OLD.importance OR NEW.memory_type IS DISTINCT FROM OLD.memory_type
        OR NEW.confidence IS DISTINCT FROM OLD.confidence OR NEW.owner_user_id IS DISTINCT FROM OLD.owner_user_id
        OR NEW.superseded_by IS DISTINCT FROM OLD.superseded_by THEN
        NEW.rev := mempalace_next_rev();
    END IF;
    RETURN NEW;
END $$;

-- Counts, tombstones and statistics, after the row is written (an insert
-- that met an existing key fires only the BEFORE trigger, so nothing here
-- counts a row twice).
CREATE FUNCTION mempalace_drawers_after() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE palace_counters SET lexical_docs = lexical_docs + (NEW.lexemes IS NOT NULL)::int,
                                   lexical_tokens = lexical_tokens + NEW.lex_len WHERE id = 1;
        DELETE FROM drawer_tombstones WHERE workspace_id = NEW.workspace_id AND id = NEW.id;
        IF NEW.status = 'active' THEN
            PERFORM mempalace_count_place(NEW.workspace_id, NEW.wing, NEW.room, NEW.hall, 1);
        END IF;
        RETURN NULL;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO drawer_tombstones (workspace_id, id, rev) VALUES (OLD.workspace_id, OLD.id, mempalace_next_rev())
            ON CONFLICT (workspace_id, id) DO UPDATE SET rev = excluded.rev;
        UPDATE palace_counters SET lexical_docs = lexical_docs - (OLD.lexemes IS NOT NULL)::int,
                                   lexical_tokens = lexical_tokens - OLD.lex_len WHERE id = 1;
        IF OLD.status = 'active' THEN
            PERFORM mempalace_count_place(OLD.workspace_id, OLD.wing, OLD.room, OLD.hall, -1);
        END IF;
        RETURN NULL;
    END IF;
    IF NEW.lexemes IS DISTINCT FROM OLD.lexemes THEN
        UPDATE palace_counters SET
            lexical_docs = lexical_docs + (NEW.lexemes IS NOT NULL)::int - (OLD.lexemes IS NOT NULL)::int,
            lexical_tokens = lexical_tokens + NEW.lex_len - OLD.lex_len WHERE id = 1;
    END IF;
    IF OLD.status = 'active' AND (NEW.status <> 'active' OR NEW.wing <> OLD.wing OR NEW.room <> OLD.room
                                  OR NEW.hall IS DISTINCT FROM OLD.hall) THEN
        PERFORM mempalace_count_place(OLD.workspace_id, OLD.wing, OLD.room, OLD.hall, -1);
        IF NEW.status = 'active' THEN
            PERFORM mempalace_count_place(NEW.workspace_id, NEW.wing, NEW.room, NEW.hall, 1);
        END IF;
    ELSIF OLD.status <> 'active' AND NEW.status = 'active' THEN
        PERFORM mempalace_count_place(NEW.workspace_id, NEW.wing, NEW.room, NEW.hall, 1);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER drawers_before BEFORE INSERT OR UPDATE ON drawers
    FOR EACH ROW EXECUTE FUNCTION mempalace_drawers_before();
CREATE TRIGGER drawers_after AFTER INSERT OR UPDATE OR DELETE ON drawers
    FOR EACH ROW EXECUTE FUNCTION mempalace_drawers_after();

CREATE TABLE identities (
    workspace_id text COLLATE "C" PRIMARY KEY REFERENCES workspaces (id),
    text         text COLLATE "C" NOT NULL,
    updated_at   timestamptz NOT NULL
);

CREATE TABLE entities (
    workspace_id    text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id              text COLLATE "C" NOT NULL,
    name            text COLLATE "C" NOT NULL,
    entity_type     text COLLATE "C" NOT NULL DEFAULT 'unknown',
    properties      jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(properties) = 'object'),
    embedding_model text COLLATE "C",
    embedding       vector,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE TABLE triples (
    workspace_id     text COLLATE "C" NOT NULL,
    id               text COLLATE "C" NOT NULL,
    subject          text COLLATE "C" NOT NULL,
    predicate        text COLLATE "C" NOT NULL,
    object           text COLLATE "C" NOT NULL,
    valid_from       timestamptz,
    valid_to         timestamptz,
    confidence       double precision NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
    source_drawer_id text COLLATE "C",
    source           text COLLATE "C",
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, id),
    FOREIGN KEY (workspace_id, subject) REFERENCES entities (workspace_id, id),
    FOREIGN KEY (workspace_id, object) REFERENCES entities (workspace_id, id),
    CHECK (valid_to IS NULL OR valid_from IS NULL OR valid_from <= valid_to)
);
CREATE INDEX triples_subject ON triples (workspace_id, subject);
CREATE INDEX triples_object ON triples (workspace_id, object);
CREATE INDEX triples_predicate ON triples (workspace_id, predicate);
CREATE INDEX triples_source_drawer ON triples (workspace_id, source_drawer_id) WHERE source_drawer_id IS NOT NULL;
CREATE INDEX triples_open ON triples (workspace_id, subject, predicate, object) WHERE valid_to IS NULL;

CREATE TABLE entity_mentions (
    workspace_id text COLLATE "C" NOT NULL,
    entity_id    text COLLATE "C" NOT NULL,
    drawer_id    text COLLATE "C" NOT NULL,
    PRIMARY KEY (workspace_id, entity_id, drawer_id),
    FOREIGN KEY (workspace_id, drawer_id) REFERENCES drawers (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX entity_mentions_drawer ON entity_mentions (workspace_id, drawer_id);

CREATE TABLE sessions (
    workspace_id  text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id            text COLLATE "C" NOT NULL,
    agent         text COLLATE "C",
    user_id       text COLLATE "C",
    context       jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(context) = 'object'),
    status        text COLLATE "C" NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'ended')),
    outcome_score double precision,
    session_count integer NOT NULL DEFAULT 1,
    started_at    timestamptz NOT NULL,
    ended_at      timestamptz,
    PRIMARY KEY (workspace_id, id)
);

CREATE TABLE episodic_summaries (
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id           text COLLATE "C" NOT NULL,
    session_id   text COLLATE "C" NOT NULL,
    source_id    text COLLATE "C",
    agent        text COLLATE "C",
    user_id      text COLLATE "C",
    summary      text COLLATE "C" NOT NULL,
    l0_abstract  text COLLATE "C" NOT NULL,
    key_topics   jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(key_topics) = 'array'),
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz,
    promoted_at  timestamptz,
    PRIMARY KEY (workspace_id, id)
);
CREATE UNIQUE INDEX episodic_source ON episodic_summaries (workspace_id, source_id) WHERE source_id IS NOT NULL;
CREATE INDEX episodic_session ON episodic_summaries (workspace_id, session_id);

CREATE TABLE tunnels (
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id           text COLLATE "C" NOT NULL,
    wing_a       text COLLATE "C" NOT NULL,
    room_a       text COLLATE "C" NOT NULL,
    wing_b       text COLLATE "C" NOT NULL,
    room_b       text COLLATE "C" NOT NULL,
    label        text COLLATE "C",
    created_by   text COLLATE "C",
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE TABLE centroids (
    workspace_id    text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    memory_type     text COLLATE "C" NOT NULL,
    embedding_model text COLLATE "C" NOT NULL,
    vector          vector NOT NULL,
    sample_count    integer NOT NULL,
    computed_at     timestamptz NOT NULL,
    source_hash     text COLLATE "C" NOT NULL,
    PRIMARY KEY (workspace_id, memory_type)
);

CREATE TABLE embedding_cache (
    workspace_id text COLLATE "C" NOT NULL,
    model        text COLLATE "C" NOT NULL,
    content_hash text COLLATE "C" NOT NULL,
    vector       vector NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, model, content_hash)
);

CREATE TABLE source_cursors (
    workspace_id text COLLATE "C" NOT NULL,
    source       text COLLATE "C" NOT NULL,
    cursor       text COLLATE "C" NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, source)
);

-- Periodic jobs: one row per (job, tick) that ran, so a tick's job runs
-- once however many processes reach it (see `jobs.rs`).
CREATE TABLE job_ticks (
    job        text COLLATE "C" NOT NULL,
    tick       bigint NOT NULL,
    holder     text COLLATE "C" NOT NULL,
    started_at timestamptz NOT NULL,
    PRIMARY KEY (job, tick)
);
