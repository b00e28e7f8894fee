-- Schema version 1: the palace data model of SPEC §2.
--
-- Every table is keyed by workspace_id first, so no lookup can reach another
-- tenant's rows. `drawers` alone has a surrogate integer key (`seq`): it is
-- the stable rowid the lexical index and the vector index refer to (an
-- implicit rowid could be renumbered by VACUUM). Its logical key is
-- (workspace_id, id).

CREATE TABLE palace_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE schema_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL
);

CREATE TABLE workspaces (
    id         TEXT PRIMARY KEY,
    created_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE drawers (
    seq                 INTEGER PRIMARY KEY,
    workspace_id        TEXT NOT NULL REFERENCES workspaces (id),
    id                  TEXT NOT NULL,
    wing                TEXT NOT NULL,
    room                TEXT NOT NULL,
    hall                TEXT,
    content             TEXT NOT NULL,
    content_hash        TEXT NOT NULL,
    importance          REAL NOT NULL DEFAULT 3.0 CHECK (importance BETWEEN 0 AND 5),
    memory_type         TEXT CHECK (memory_type IN
                            ('decision', 'preference', 'milestone', 'problem', 'emotional', 'fact', 'task')),
    pipeline_tier       TEXT NOT NULL DEFAULT 'llm' CHECK (pipeline_tier IN ('heuristic', 'centroid', 'llm')),
    state               TEXT NOT NULL DEFAULT 'raw' CHECK (state IN ('raw', 'processed', 'merged', 'failed')),
    summary             TEXT,
    source_file         TEXT,
    added_by            TEXT NOT NULL,
    added_by_agent      TEXT,
    owner_user_id       TEXT,
    filed_at            TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    last_accessed_at    TEXT,
    access_count        INTEGER NOT NULL DEFAULT 0,
    superseded_by       TEXT,
    cluster_id          TEXT,
    retry_count         INTEGER NOT NULL DEFAULT 0,
    entity_count        INTEGER NOT NULL DEFAULT 0,
    triple_count        INTEGER NOT NULL DEFAULT 0,
    confidence          REAL NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
    decay_rate          REAL NOT NULL DEFAULT 0.01,
    status              TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'superseded', 'invalidated')),
    status_reason       TEXT,
    session_id          TEXT,
    context             TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(context)),
    perception_type     TEXT CHECK (perception_type IN
                            ('visual', 'tactile', 'auditory', 'proprioceptive', 'procedural')),
    perception_data     BLOB,
    perception_metadata TEXT,
    source_mtime        REAL,
    chunk_index         INTEGER,
    line_start          INTEGER,
    line_end            INTEGER,
    content_date        TEXT,
    entities            TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(entities)),
    -- Last, so the rest of the row is read without touching overflow pages.
    embedding_model     TEXT,
    embedding           BLOB,
    UNIQUE (workspace_id, id)
);

CREATE INDEX drawers_place ON drawers (workspace_id, wing, room);
CREATE INDEX drawers_importance ON drawers (workspace_id, importance DESC) WHERE status = 'active';
CREATE INDEX drawers_content_hash ON drawers (workspace_id, content_hash);
CREATE INDEX drawers_source_file ON drawers (workspace_id, source_file) WHERE source_file IS NOT NULL;
CREATE INDEX drawers_raw ON drawers (workspace_id, filed_at) WHERE state = 'raw';
CREATE INDEX drawers_session ON drawers (workspace_id, session_id) WHERE session_id IS NOT NULL;
CREATE INDEX drawers_filed_at ON drawers (workspace_id, filed_at);

CREATE TABLE drawer_tags (
    workspace_id TEXT NOT NULL,
    drawer_id    TEXT NOT NULL,
    tag          TEXT NOT NULL,
    source       TEXT NOT NULL CHECK (source IN ('auto', 'user')),
    PRIMARY KEY (workspace_id, drawer_id, tag),
    FOREIGN KEY (workspace_id, drawer_id) REFERENCES drawers (workspace_id, id) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE INDEX drawer_tags_tag ON drawer_tags (workspace_id, tag);

-- Derived: the lexical index. Contentless (the text lives in `drawers`), with
-- CJK pre-segmented by the writer; rowid = drawers.seq. Rebuildable.
CREATE VIRTUAL TABLE drawers_fts USING fts5 (
    body,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Derived: visible drawers per (workspace, wing, room), kept by triggers in
-- the writing transaction so status and taxonomy never scan `drawers`.
CREATE TABLE room_counts (
    workspace_id TEXT NOT NULL,
    wing         TEXT NOT NULL,
    room         TEXT NOT NULL,
    drawers      INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, wing, room)
) WITHOUT ROWID;

CREATE TRIGGER drawers_count_insert AFTER INSERT ON drawers
WHEN NEW.status = 'active'
BEGIN
    INSERT OR IGNORE INTO room_counts (workspace_id, wing, room, drawers)
        VALUES (NEW.workspace_id, NEW.wing, NEW.room, 0);
    UPDATE room_counts SET drawers = drawers + 1
        WHERE workspace_id = NEW.workspace_id AND wing = NEW.wing AND room = NEW.room;
END;

CREATE TRIGGER drawers_count_delete AFTER DELETE ON drawers
WHEN OLD.status = 'active'
BEGIN
    UPDATE room_counts SET drawers = drawers - 1
        WHERE workspace_id = OLD.workspace_id AND wing = OLD.wing AND room = OLD.room;
    DELETE FROM room_counts
        WHERE workspace_id = OLD.workspace_id AND wing = OLD.wing AND room = OLD.room AND drawers <= 0;
END;

CREATE TRIGGER drawers_count_update AFTER UPDATE OF wing, room, status ON drawers
WHEN (OLD.status = 'active') OR (NEW.status = 'active')
BEGIN
    UPDATE room_counts SET drawers = drawers - 1
        WHERE OLD.status = 'active'
          AND workspace_id = OLD.workspace_id AND wing = OLD.wing AND room = OLD.room;
    DELETE FROM room_counts
        WHERE OLD.status = 'active'
          AND workspace_id = OLD.workspace_id AND wing = OLD.wing AND room = OLD.room AND drawers <= 0;
    INSERT OR IGNORE INTO room_counts (workspace_id, wing, room, drawers)
        SELECT NEW.workspace_id, NEW.wing, NEW.room, 0 WHERE NEW.status = 'active';
    UPDATE room_counts SET drawers = drawers + 1
        WHERE NEW.status = 'active'
          AND workspace_id = NEW.workspace_id AND wing = NEW.wing AND room = NEW.room;
END;

CREATE TABLE identities (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces (id),
    text         TEXT NOT NULL,
    updated_at   TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE entities (
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id),
    id              TEXT NOT NULL,
    name            TEXT NOT NULL,
    entity_type     TEXT NOT NULL DEFAULT 'unknown',
    properties      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(properties)),
    embedding_model TEXT,
    embedding       BLOB,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (workspace_id, id)
) WITHOUT ROWID;

CREATE TABLE triples (
    workspace_id     TEXT NOT NULL,
    id               TEXT NOT NULL,
    subject          TEXT NOT NULL,
    predicate        TEXT NOT NULL,
    object           TEXT NOT NULL,
    valid_from       TEXT,
    valid_to         TEXT,
    confidence       REAL NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
    source_drawer_id TEXT,
    source           TEXT,
    created_at       TEXT NOT NULL,
    PRIMARY KEY (workspace_id, id),
    FOREIGN KEY (workspace_id, subject) REFERENCES entities (workspace_id, id),
    FOREIGN KEY (workspace_id, object) REFERENCES entities (workspace_id, id),
    CHECK (valid_to IS NULL OR valid_from IS NULL OR valid_from <= valid_to)
) WITHOUT ROWID;

CREATE INDEX triples_subject ON triples (workspace_id, subject);
CREATE INDEX triples_object ON triples (workspace_id, object);
CREATE INDEX triples_predicate ON triples (workspace_id, predicate);
CREATE INDEX triples_source_drawer ON triples (workspace_id, source_drawer_id) WHERE source_drawer_id IS NOT NULL;

CREATE TABLE sessions (
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id),
    id            TEXT NOT NULL,
    agent         TEXT,
    user_id       TEXT,
    context       TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(context)),
    status        TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'ended')),
    outcome_score REAL,
    session_count INTEGER NOT NULL DEFAULT 1,
    started_at    TEXT NOT NULL,
    ended_at      TEXT,
    PRIMARY KEY (workspace_id, id)
) WITHOUT ROWID;

CREATE TABLE episodic_summaries (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    id           TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    source_id    TEXT,
    agent        TEXT,
    user_id      TEXT,
    summary      TEXT NOT NULL,
    l0_abstract  TEXT NOT NULL,
    key_topics   TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(key_topics)),
    created_at   TEXT NOT NULL,
    expires_at   TEXT,
    promoted_at  TEXT,
    PRIMARY KEY (workspace_id, id)
) WITHOUT ROWID;

CREATE UNIQUE INDEX episodic_source ON episodic_summaries (workspace_id, source_id) WHERE source_id IS NOT NULL;
CREATE INDEX episodic_session ON episodic_summaries (workspace_id, session_id);

CREATE TABLE tunnels (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    id           TEXT NOT NULL,
    wing_a       TEXT NOT NULL,
    room_a       TEXT NOT NULL,
    wing_b       TEXT NOT NULL,
    room_b       TEXT NOT NULL,
    label        TEXT,
    created_by   TEXT,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (workspace_id, id)
) WITHOUT ROWID;

CREATE TABLE centroids (
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id),
    memory_type     TEXT NOT NULL,
    embedding_model TEXT NOT NULL,
    vector          BLOB NOT NULL,
    sample_count    INTEGER NOT NULL,
    computed_at     TEXT NOT NULL,
    source_hash     TEXT NOT NULL,
    PRIMARY KEY (workspace_id, memory_type)
) WITHOUT ROWID;
